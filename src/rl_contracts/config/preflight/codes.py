"""The stable codes of the preflight rules, read from the one rule catalogue."""

from __future__ import annotations

from ..codes import Code
from .engine import ORDERED_RULES

__all__ = ["PREFLIGHT_CODES"]

PREFLIGHT_CODES: tuple[Code, ...] = tuple(
    Code(rule.code, rule.summary, rule.severity, rule.reference) for rule in ORDERED_RULES
)
"""P1-P27, W1, N1-N7 in code order, each with its one-line summary and where the reference checks it
(P28 and W2 belong to the key classification, :mod:`rl_contracts.config.codes`)."""
