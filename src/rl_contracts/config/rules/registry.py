"""The one registry of finding codes: every :class:`~.rule.Rule` record, in catalogue order, and the
``--select``/``--ignore`` filter over them.

Each issue that ``load_recipe`` or ``rl-contracts validate`` reports carries one code, as ruff's and mypy's do, so
users can select, ignore and search findings.  The records sit beside their checks (README's "Rules" section
lists them); this module collects them from the modules listed in :data:`RULE_MODULES`, so a new rule is one
record in the module that raises it (and, for a new module, one entry here).  ``rl-contracts rules``, ``rule
CODE``, README's table and ``--select``/``--ignore`` all read :data:`RULES`.

>>> rule_for("P19").name
'tensor-parallel-batch-sizes-differ'
"""

from __future__ import annotations

import types
from collections.abc import Iterable, Mapping
from typing import Final

from pydantic_core import ErrorDetails

from ..._messages import render
from ...checks import require_collection
from ...errors import ConfigContractError, ContractTypeError
from .._internal.violations import rule_code
from . import (
    loading,
    recipe_arithmetic,
    recipe_keys,
    recipe_schema,
    refit_support,
    refit_transport,
    section,
    unknown_keys,
)
from .preflight import cluster, generation, grpo, loss, policy, runtime, scripts
from .rule import FAMILIES, Rule

__all__ = [
    "FAMILIES",
    "RULES",
    "RULE_MODULES",
    "check_patterns",
    "code_of_error",
    "code_selected",
    "rule_for",
    "rules_in",
]

RULE_MODULES: Final[tuple[types.ModuleType, ...]] = (
    loading,
    section,
    refit_transport,
    refit_support,
    unknown_keys,
    recipe_schema,
    recipe_keys,
    recipe_arithmetic,
    policy,
    grpo,
    cluster,
    generation,
    scripts,
    runtime,
    loss,
)
"""The modules that declare rules; each lists its records in ``__all__``."""


def rules_in(module: types.ModuleType) -> tuple[Rule, ...]:
    """The :class:`Rule` records ``module`` declares (the names of its ``__all__`` bound to a record)."""
    found = (getattr(module, name) for name in getattr(module, "__all__", ()))
    return tuple(value for value in found if isinstance(value, Rule))


RULES: Final[tuple[Rule, ...]] = tuple(
    sorted((rule for module in RULE_MODULES for rule in rules_in(module)), key=lambda rule: rule.order)
)
"""Every rule, sorted by family (``V``, ``C``, ``R``, ``K``, ``P``, ``W``, ``N``) then number."""

_BY_CODE: Final[Mapping[str, Rule]] = types.MappingProxyType({rule.code: rule for rule in RULES})
_BY_PYDANTIC_TYPE: Final[Mapping[str, Rule]] = types.MappingProxyType(
    {error_type: rule for rule in RULES for error_type in rule.pydantic_types}
)


def rule_for(code: str) -> Rule | None:
    """The record of ``code`` (``"P7"``), or ``None`` for a code the registry does not have."""
    return _BY_CODE.get(code)


def code_of_error(error: ErrorDetails) -> str:
    """The code of one pydantic line error of the generation section: the rule a violation carries, else the rule
    that claims pydantic's error type (a range error is C2), else V3 (the schema)."""
    code = rule_code(error)
    if code is not None and code in _BY_CODE:
        return code
    claimed = _BY_PYDANTIC_TYPE.get(str(error["type"]))
    return claimed.code if claimed is not None else loading.V3.code


def _matches(code: str, patterns: Iterable[str]) -> bool:
    """Whether ``code`` equals a pattern or starts with it (``P`` selects every P-rule; ``P1`` only P1)."""
    return any(
        code == pattern or (code.startswith(pattern) and not pattern[-1:].isdigit()) for pattern in patterns
    )


def code_selected(code: str, *, select: Iterable[str] = (), ignore: Iterable[str] = ()) -> bool:
    """Whether a finding with ``code`` is reported under ``--select``/``--ignore``.

    A pattern is a whole code (``P7``) or a family prefix without digits (``P``, ``W``, ``C``).  An empty
    ``select`` selects everything; ``ignore`` wins over ``select``.  Divergence from ruff: ``P1`` selects only
    P1, not P10-P19, because these codes are not zero-padded.
    """
    selected = tuple(select)
    return (not selected or _matches(code, selected)) and not _matches(code, ignore)


_CODE_FAMILIES: Final[frozenset[str]] = frozenset(rule.code.rstrip("0123456789") for rule in RULES)


def check_patterns(patterns: object, argument: str) -> tuple[str, ...]:
    """``patterns`` as a tuple after checking each is a code of :data:`RULES` (``P7``) or a family that has codes
    (``P``): the one check of ``--select``/``--ignore`` and of ``load_recipe``'s ``select``/``ignore``.

    Fail closed: a mistyped ignore would hide the wrong findings, a mistyped select would select nothing.

    Raises:
        ContractTypeError: ``patterns`` is not a collection (a bare string included) of ``str``.
        ConfigContractError: a pattern is empty, or matches no code (``Q9``, ``p``, ``P99``); ``path`` is
            ``argument``, ``value`` the pattern.
    """
    items = require_collection(patterns, argument, "a collection of code strings such as ['P', 'W2']")
    checked: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise ContractTypeError.for_value(f"{argument}[i]", "a code string such as 'P7'", item)
        if item not in _BY_CODE and item not in _CODE_FAMILIES:
            shown = render(item)
            raise ConfigContractError(
                f"unknown code {shown}: expected codes or families listed by 'rl-contracts rules' (such as P7 or P)",
                path=argument,
                value=shown,
            )
        checked.append(item)
    return tuple(checked)
