"""The rule record and how a check declares the rules it checks: :class:`Rule`, :func:`checks` and :class:`Check`.

Each rule is declared once, as a module constant named by its code, just above the function that checks it::

    P29 = Rule("P29", "loss-option-conflict", summary="...", reference="...", what_it_checks="...", ...)

    @checks(P29, entries=ALL_ENTRIES)
    def check_loss_options(context: Context) -> None: ...

:mod:`rl_contracts.config.rules.registry` (the rule table) imports the modules that declare rules and collects
every decorated check with its records; the catalogue, ``rl-contracts rule CODE``, ``rules --format json``,
SARIF's rules, ``--select``/``--ignore`` and the testing strategies read that table.  Families, in catalogue order
(:data:`FAMILIES`): ``V`` loading, resolution and schema; ``C`` the cross-field rules of ``VllmConfig``; ``R``
reload refit; ``K`` unknown keys; ``P``, ``W``, ``N`` preflight's cross-section rules (errors, warnings, and rules
that need an input beyond the recipe).
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
    ``fix_safety`` is for an automatic fix (None: there is none).

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


_Function = TypeVar("_Function", bound=Callable[..., object])

CHECK_ATTRIBUTE: Final = "__rl_contracts_check__"
"""The attribute :func:`checks` sets on a check function: its :class:`Check`."""


@dataclass(frozen=True)
class Check:
    """A check function and the rules it reports (frozen): the row of the rule table for each of ``rules``.

    ``entries`` are the trainer scripts a preflight check runs for (``None``: not a preflight check; the check is
    called by the stage that owns it: a section validator, the unknown-key walk, the loader).
    """

    rules: tuple[Rule, ...]
    function: Callable[..., object]
    entries: frozenset[str] | None = None

    @property
    def location(self) -> str:
        """Where the check lives: ``rl_contracts/config/rules/preflight/loss.py:check_loss_options``."""
        module = self.function.__module__.replace(".", "/")
        return f"{module}.py:{self.function.__qualname__}"


def checks(*rules: Rule, entries: Collection[str] | None = None) -> Callable[[_Function], _Function]:
    """Declare the decorated function the check of ``rules`` (each rule has exactly one check).

    ``entries``: the entrypoints (``"grpo"``, ``"grpo-gym"``, ``"grpo-sc"``) a preflight check runs for; the
    preflight engine calls the checks that have them with its ``Context``.  Returns the function unchanged but for
    the :data:`CHECK_ATTRIBUTE` the rule table reads.  Raises :class:`~rl_contracts.errors.ConfigContractError`
    when no rule is given.
    """
    if not rules or not all(isinstance(rule, Rule) for rule in rules):
        raise ConfigContractError("checks() needs one or more Rule records", path="rules", value=repr(rules))

    def register(function: _Function) -> _Function:
        setattr(
            function, CHECK_ATTRIBUTE, Check(rules, function, None if entries is None else frozenset(entries))
        )
        return function

    return register


def collect_checks(*modules: types.ModuleType) -> tuple[Check, ...]:
    """The checks that ``modules`` define (functions decorated with :func:`checks`), module by module in the order
    given and, within a module, in definition order; a check a module only imports is not its own."""
    found: list[Check] = []
    for module in modules:
        for value in vars(module).values():
            check = getattr(value, CHECK_ATTRIBUTE, None)
            if isinstance(check, Check) and check.function.__module__ == module.__name__:
                found.append(check)
    return tuple(found)
