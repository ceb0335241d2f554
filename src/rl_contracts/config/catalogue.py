"""Every finding code in one ordered tuple: what ``rl-contracts rules``, the README table and ``--select``/
``--ignore`` read.

:data:`CODES` joins :data:`~rl_contracts.config.codes.BASE_CODES` (loading, schema, cross-field rules, reload
refit, typo and unknown keys), :data:`~rl_contracts.config.preflight.PREFLIGHT_CODES` (P1–P27, W1, N1–N7) and
:data:`~rl_contracts.config.codes.KEY_PLACEMENT_CODES` (P28, W2), sorted by family (``V``, ``C``, ``R``, ``K``,
``P``, ``W``, ``N``) then number.
"""

from __future__ import annotations

from .codes import BASE_CODES, FAMILIES, KEY_PLACEMENT_CODES, Code
from .preflight import PREFLIGHT_CODES

__all__ = ["CODES", "code_info"]


def _order(code: Code) -> tuple[int, int]:
    family, number = code.code[:1], code.code[1:]
    return FAMILIES.index(family), int(number)


CODES: tuple[Code, ...] = tuple(sorted((*BASE_CODES, *PREFLIGHT_CODES, *KEY_PLACEMENT_CODES), key=_order))
"""Every code, sorted by family then number; each code appears once."""

_BY_CODE = {code.code: code for code in CODES}


def code_info(code: str) -> Code | None:
    """The catalogue entry of ``code`` (``"P7"``), or ``None`` for a code the catalogue does not have."""
    return _BY_CODE.get(code)
