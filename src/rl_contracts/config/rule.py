"""The rule record and how a check declares the rules it checks: :class:`Rule`, :func:`checks` and :class:`Check`.

Each rule is declared once, as a module constant named by its code, just above the function that checks it and
decorated ``@checks(RULE, ...)``; :mod:`rl_contracts.config.rules.registry` collects them (the rule table;
docs/development/config-core.md says how to add a rule).
"""

from __future__ import annotations

import re
import types
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Final, Literal, TypeVar

from ..errors import ConfigContractError
from .finding import Severity

__all__ = [
    "CHECK_ATTRIBUTE",
    "FAMILIES",
    "Check",
    "FixSafety",
    "Rule",
    "Severity",
    "checks",
    "collect_checks",
]

FixSafety = Literal["safe", "unsafe"]
"""How ``validate --fix`` rewrites a finding (:mod:`rl_contracts.config.fixes`): ``safe`` keeps the recipe's meaning, ``unsafe`` may change it."""

FAMILIES: Final[tuple[str, ...]] = ("V", "C", "R", "K", "P", "W", "N")
"""The code families in catalogue order (``V`` loading and schema, ``C`` cross-field, ``R`` reload refit, ``K``
unknown keys; ``P``, ``W``, ``N`` preflight's errors, warnings and rules needing an input beyond the recipe);
within a family, codes sort by number."""

_CODE = re.compile(r"([A-Z])([1-9][0-9]*)")
_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


@dataclass(frozen=True)
class Rule:
    """One stable finding code and what it means (frozen); ``ConfigContractError`` for a malformed code or name.

    ``code`` is a family letter and a number (``"P7"``), ``name`` kebab-case, ``reference`` where NeMo RL checks
    the same thing (or ``"never"``).  ``what_it_checks``, ``why_it_matters``, ``example`` (a failing fragment,
    merged over a passing recipe, with the ``PreflightOptions`` fields ``example_options``) and ``fix`` make up
    the page ``rl-contracts rule CODE`` prints.  ``fix_safety``: how an automatic fix rewrites (``None``: there
    is none).
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

    def __post_init__(self) -> None:
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


_Function = TypeVar("_Function", bound=Callable[..., object])

CHECK_ATTRIBUTE: Final = "__rl_contracts_check__"
"""The attribute :func:`checks` sets on a check function: its :class:`Check`."""


@dataclass(frozen=True)
class Check:
    """A check function and the rules it reports (frozen); ``entries``: the trainer scripts a preflight check
    runs for (``None``: the stage that owns the check calls it)."""

    rules: tuple[Rule, ...]
    function: Callable[..., object]
    entries: frozenset[str] | None = None

    @property
    def location(self) -> str:
        """Where the check lives: ``rl_contracts/config/rules/preflight/loss.py:check_loss_options``."""
        module = self.function.__module__.replace(".", "/")
        return f"{module}.py:{self.function.__qualname__}"


def checks(*rules: Rule, entries: Collection[str] | None = None) -> Callable[[_Function], _Function]:
    """Declare the decorated function the check of ``rules``, run by preflight for the ``entries`` given; the
    function is returned with its :data:`CHECK_ATTRIBUTE` set.  ``ConfigContractError`` when no rule is given."""
    if not rules or not all(isinstance(rule, Rule) for rule in rules):
        raise ConfigContractError("checks() needs one or more Rule records", path="rules", value=repr(rules))
    scripts = None if entries is None else frozenset(entries)

    def register(function: _Function) -> _Function:
        setattr(function, CHECK_ATTRIBUTE, Check(rules, function, scripts))
        return function

    return register


def collect_checks(*modules: types.ModuleType) -> tuple[Check, ...]:
    """The checks that ``modules`` define (not merely import), in the order given, then definition order."""
    found: list[Check] = []
    for module in modules:
        for value in vars(module).values():
            check = getattr(value, CHECK_ATTRIBUTE, None)
            if isinstance(check, Check) and check.function.__module__ == module.__name__:
                found.append(check)
    return tuple(found)
