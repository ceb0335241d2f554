"""The record of one rule: its stable code, name, summary, severity, reference site and documentation.

Each rule is declared once, as a module constant named by its code, in the module whose check raises it::

    P5 = Rule(
        "P5",
        "validation-sampling-needs-gym",
        summary="validation sampling that differs from training needs vLLM with NeMo-Gym",
        reference="algorithms/grpo.py:setup ~376-735 (S1)",
    )

:mod:`.registry` collects every record; the catalogue, ``--select``/``--ignore``, ``rl-contracts rules`` and
README's table read it.  Families, in catalogue order (:data:`FAMILIES`): ``V`` loading, resolution and schema;
``C`` the cross-field rules of ``VllmConfig``; ``R`` reload refit; ``K`` unknown keys; ``P``, ``W``, ``N``
preflight's cross-section rules (errors, warnings, and rules that need an input beyond the recipe).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

from ...errors import ConfigContractError

__all__ = ["FAMILIES", "FixSafety", "Rule", "Severity"]

Severity = Literal["error", "warning", "skipped"]
"""``skipped``: a rule that needs an input it was not given (the N-rules) is reported as a skipped note."""

FixSafety = Literal["safe", "unsafe"]
"""How ``validate --fix`` rewrites a finding (:mod:`rl_contracts.config.fixes`): ``safe`` keeps the recipe's meaning, ``unsafe`` may change it."""

FAMILIES: Final[tuple[str, ...]] = ("V", "C", "R", "K", "P", "W", "N")
"""The code families in catalogue order; within a family, codes sort by number."""

_CODE = re.compile(r"([A-Z])([1-9][0-9]*)")
_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


@dataclass(frozen=True)
class Rule:
    """One stable finding code and what it means (frozen).

    ``code`` is a family letter and a number (``"P7"``); ``name`` a kebab-case name (ruff-style,
    ``"batch-multiplier-needs-dynamic-sampling"``); ``summary`` one line; ``severity`` the severity its findings
    usually carry (a few rules report both); ``reference`` where NeMo RL (the reference) checks the same thing,
    or ``"never"``.  The documentation fields (``what_it_checks``, ``why_it_matters``, ``example``, a minimal
    failing recipe fragment, and ``fix``) make up the page ``rl-contracts rule CODE`` prints.
    ``example_options`` are the :class:`~rl_contracts.config.rules.preflight.PreflightOptions` fields the example
    needs (``vllm_version``, ``gpu_capability``, ``model_config``; ``rl-contracts validate``'s
    ``--vllm-version``, ``--gpu-capability``, ``--model-config``).  The example is merged over a recipe that
    passes every rule (``defaults:``) and yields exactly this code.
    ``pydantic_types`` are pydantic's own line-error types (beyond the ``config_rule_<code>`` types of its
    :class:`~rl_contracts.config._internal.violations.Violation`) that are findings of this rule, as the range
    errors are C2's.  ``fix_safety`` is for an automatic fix (None: there is none).

    Raises :class:`~rl_contracts.errors.ConfigContractError` at construction for a malformed code or name.
    """

    code: str
    name: str
    summary: str
    reference: str
    severity: Severity = "error"
    what_it_checks: str = ""
    why_it_matters: str = ""
    example: str = ""
    fix: str = ""
    example_options: Mapping[str, object] = field(default_factory=dict, compare=False)
    fix_safety: FixSafety | None = None
    pydantic_types: frozenset[str] = field(default=frozenset())

    def __post_init__(self) -> None:
        """Reject a code outside :data:`FAMILIES` or a name that is not kebab-case."""
        match = _CODE.fullmatch(self.code)
        if match is None or match.group(1) not in FAMILIES:
            raise ConfigContractError(
                f"rule code must be a family letter of {FAMILIES} and a number such as 'P7', got {self.code!r}",
                path="code",
                value=repr(self.code),
            )
        if _NAME.fullmatch(self.name) is None:
            raise ConfigContractError(
                f"rule name of {self.code} must be kebab-case such as 'unknown-key', got {self.name!r}",
                path="name",
                value=repr(self.name),
            )

    @property
    def family(self) -> str:
        """The family letter (``"P"`` for ``"P7"``)."""
        return self.code[0]

    @property
    def number(self) -> int:
        """The number within the family (``7`` for ``"P7"``)."""
        return int(self.code[1:])

    @property
    def order(self) -> tuple[int, int]:
        """The catalogue sort key: family (in :data:`FAMILIES` order), then number."""
        return FAMILIES.index(self.family), self.number

    @property
    def error_type(self) -> str:
        """The pydantic line-error type of this rule's violations (``"config_rule_c3"``)."""
        return f"config_rule_{self.code.lower()}"
