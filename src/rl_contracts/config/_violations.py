"""Rule violations of the config models and how they surface: inside one pydantic ``ValidationError``.

A :class:`Violation` says where (``loc``, relative to the generation section), which rule (its code, e.g.
``"C3"``), what and why.  :func:`raise_violations` turns a list of them into one ``ValidationError`` whose line
errors have ``type`` ``config_rule_<code>`` (``config_rule_<code>_missing`` for an absent key).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from pydantic import ValidationError
from pydantic_core import ErrorDetails, InitErrorDetails, PydanticCustomError

__all__ = ["MISSING", "Loc", "Missing", "Violation", "dotted", "raise_violations"]

Loc = tuple[str | int, ...]
"""A location relative to the generation section: mapping keys and list indices."""


class Missing:
    """The type of :data:`MISSING`, the offending value of a violation about an absent key."""

    def __repr__(self) -> str:
        return "<missing>"


MISSING: Final[Any] = Missing()
"""Marks an absent key as the offending value of a violation (``repr``: ``<missing>``)."""


@dataclass(frozen=True)
class Violation:
    """One rule violation: ``code`` (``"C1"``..``"C11"``, ``"R2"``..``"R8"``, ``"duplicate_key"``), ``loc``,
    ``message`` and the offending ``value`` (:data:`MISSING` for an absent key).

    ``nested`` holds the line errors of a nested validation (rule C9); they are reported below ``loc``.
    """

    code: str
    loc: Loc
    message: str
    value: object
    nested: tuple[ErrorDetails, ...] = ()


def dotted(loc: Loc) -> str:
    """``("stop_token_ids", 2)`` -> ``"stop_token_ids[2]"``; ``("vllm_cfg", "x")`` -> ``"vllm_cfg.x"``."""
    text = ""
    for item in loc:
        text += f"[{item}]" if isinstance(item, int) else (f".{item}" if text else str(item))
    return text


def raise_violations(title: str, violations: Sequence[Violation], container: object) -> None:
    """Raise one pydantic ``ValidationError`` carrying every violation with its ``loc`` (no-op when empty).

    The ``input`` of a line error is the offending value, or ``container`` for an absent key.
    """
    details: list[InitErrorDetails] = []
    for violation in violations:
        if violation.nested:
            details.extend(
                InitErrorDetails(
                    type=PydanticCustomError(error["type"], error["msg"]),
                    loc=(*violation.loc, *error["loc"]),
                    input=error["input"],
                )
                for error in violation.nested
            )
            continue
        missing = violation.value is MISSING
        rule_type = f"config_rule_{violation.code.lower()}" + ("_missing" if missing else "")
        details.append(
            InitErrorDetails(
                type=PydanticCustomError(rule_type, violation.message),
                loc=violation.loc,
                input=container if missing else violation.value,
            )
        )
    if details:
        raise ValidationError.from_exception_data(title, details)
