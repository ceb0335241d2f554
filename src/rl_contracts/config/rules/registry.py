"""The rule table: every :class:`~rl_contracts.config.rule.Rule` with the function that checks it, in catalogue
order, and the ``--select``/``--ignore`` filter over their codes (docs/development/config-core.md).

>>> rule_for("P19").name
'tensor-parallel-batch-sizes-differ'
>>> [check.location for check in checks_of("P29")]
['rl_contracts/config/rules/preflight/loss.py:check_loss_options']
"""

from __future__ import annotations

import types
from collections.abc import Iterable, Mapping
from typing import Final

from ..._internal import config_base as base
from ..._internal.messages import render
from ...checks import require_str_collection
from ...errors import ConfigContractError
from ..loading import check_recipe, check_section, compose, resolve
from ..rule import FAMILIES, Check, Rule, collect_checks
from ..section import cross_field, refit_transport
from . import recipe_arithmetic, recipe_keys, recipe_schema, refit_support, unknown_keys
from .preflight.engine import PREFLIGHT_CHECKS

__all__ = [
    "CHECKS",
    "FAMILIES",
    "RULES",
    "check_patterns",
    "checks_of",
    "code_selected",
    "rule_for",
]

CHECKS: Final[tuple[Check, ...]] = (
    *collect_checks(
        base,
        cross_field,
        refit_transport,
        refit_support,
        unknown_keys,
        recipe_schema,
        recipe_keys,
        recipe_arithmetic,
        compose,
        resolve,
        check_section,
        check_recipe,
    ),
    *PREFLIGHT_CHECKS,
)
"""Every check, with the rules it reports."""


_CHECKS_OF: Final[Mapping[str, tuple[Check, ...]]] = types.MappingProxyType(
    {
        code: tuple(check for check in CHECKS if any(rule.code == code for rule in check.rules))
        for code in {rule.code for check in CHECKS for rule in check.rules}
    }
)

RULES: Final[tuple[Rule, ...]] = tuple(
    sorted(
        {rule.code: rule for check in CHECKS for rule in check.rules}.values(),
        key=lambda rule: rule.order,
    )
)
"""Every rule, sorted by family (``V``, ``C``, ``R``, ``K``, ``P``, ``W``, ``N``) then number."""

_BY_CODE: Final[Mapping[str, Rule]] = types.MappingProxyType({rule.code: rule for rule in RULES})


def checks_of(code: str) -> tuple[Check, ...]:
    """The checks that report ``code`` (usually one), or ``()`` for a code the table does not have."""
    return _CHECKS_OF.get(code, ())


def rule_for(code: str) -> Rule | None:
    """The record of ``code`` (``"P7"``), or ``None`` for a code the registry does not have."""
    return _BY_CODE.get(code)


def _matches(code: str, patterns: Iterable[str]) -> bool:
    return any(
        code == pattern or (code.startswith(pattern) and not pattern[-1:].isdigit()) for pattern in patterns
    )


def code_selected(code: str, *, select: Iterable[str] = (), ignore: Iterable[str] = ()) -> bool:
    """Whether a finding with ``code`` is reported under ``--select``/``--ignore``: a pattern is a whole code
    (``P1``, never P10-P19) or a family (``P``); an empty ``select`` selects everything; ``ignore`` wins."""
    selected = tuple(select)
    return (not selected or _matches(code, selected)) and not _matches(code, ignore)


_CODE_FAMILIES: Final[frozenset[str]] = frozenset(rule.code.rstrip("0123456789") for rule in RULES)


def check_patterns(patterns: object, argument: str) -> tuple[str, ...]:
    """``patterns`` as a tuple, each a code of :data:`RULES` (``P7``) or a family that has codes (``P``).

    Raises ``ContractTypeError`` for a non-collection (a bare string included) or a non-``str`` item, and
    ``ConfigContractError`` (``path`` ``argument``) for a pattern that matches no code (``Q9``, ``p``, ``P99``).
    """
    items = require_str_collection(patterns, argument, "a collection of code strings such as ['P', 'W2']")
    for item in items:
        if item not in _BY_CODE and item not in _CODE_FAMILIES:
            shown = render(item)
            raise ConfigContractError(
                f"unknown code {shown}: expected codes or families listed by 'rl-contracts rules' (such as P7 or P)",
                path=argument,
                value=shown,
            )
    return tuple(items)
