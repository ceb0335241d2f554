"""Rule violations of the config models and how they surface: inside one pydantic ``ValidationError``.

A :class:`Violation` says which rule (its :class:`~rl_contracts.config.rule.Rule` record), where (``loc``,
relative to the generation section), what and why.  :func:`raise_violations` turns a list of them into one
``ValidationError``: each line error has the rule's ``type`` (``config_rule_<code>``, ``..._missing`` for an
absent key, :attr:`Violation.error_type` when given) and carries the rule's code in its context under
:data:`RULE_CONTEXT_KEY`, which is how the loading stage gives each line error its code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from pydantic import ValidationError
from pydantic_core import ErrorDetails, InitErrorDetails, PydanticCustomError

from ..config.rule import Rule
from .config_absent import ABSENT
from .config_paths import Loc

__all__ = ["RULE_CONTEXT_KEY", "Violation", "raise_violations", "rule_code", "rule_error"]

RULE_CONTEXT_KEY: Final = "rl_contracts_rule"
"""The key of a line error's ``ctx`` that holds the code of the rule it violates."""


@dataclass(frozen=True)
class Violation:
    """One rule violation: the ``rule``, ``loc``, ``message`` and the offending ``value`` (:data:`ABSENT` for an
    absent key).

    ``nested`` holds the line errors of a nested validation (rule C9); they are reported below ``loc``, with their
    own types, as findings of ``rule``.  ``error_type`` replaces the rule's line-error type (a duplicated key is a
    V3 finding of type ``config_rule_duplicate_key``).
    """

    rule: Rule
    loc: Loc
    message: str
    value: object
    nested: tuple[ErrorDetails, ...] = ()
    error_type: str | None = None

    @property
    def code(self) -> str:
        """The code of the violated rule."""
        return self.rule.code


def rule_error(rule: Rule, message: str, *, error_type: str | None = None) -> PydanticCustomError:
    """A pydantic custom error of ``rule``: its type (or ``error_type``), ``message``, the code in its context."""
    return PydanticCustomError(
        error_type or f"config_rule_{rule.code.lower()}", message, {RULE_CONTEXT_KEY: rule.code}
    )


def rule_code(error: ErrorDetails) -> str | None:
    """The code a line error raised through this module carries, or None for pydantic's own errors."""
    context = error.get("ctx")
    code = context.get(RULE_CONTEXT_KEY) if isinstance(context, Mapping) else None
    return code if isinstance(code, str) else None


def raise_violations(title: str, violations: Sequence[Violation], container: object) -> None:
    """Raise one pydantic ``ValidationError`` carrying every violation with its ``loc`` (no-op when empty).

    The ``input`` of a line error is the offending value, or ``container`` for an absent key.
    """
    details: list[InitErrorDetails] = []
    for violation in violations:
        if violation.nested:
            details.extend(
                InitErrorDetails(
                    type=rule_error(violation.rule, error["msg"], error_type=error["type"]),
                    loc=(*violation.loc, *error["loc"]),
                    input=error["input"],
                )
                for error in violation.nested
            )
            continue
        missing = violation.value is ABSENT
        error_type = violation.error_type or (
            f"config_rule_{violation.rule.code.lower()}" + ("_missing" if missing else "")
        )
        details.append(
            InitErrorDetails(
                type=rule_error(violation.rule, violation.message, error_type=error_type),
                loc=violation.loc,
                input=container if missing else violation.value,
            )
        )
    if details:
        raise ValidationError.from_exception_data(title, details)
