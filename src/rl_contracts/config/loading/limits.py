"""The bounds on the work a recipe may ask of the loader, each checked before the work it bounds (V6, declared
in :mod:`.compose`); docs/security.md ("Limits") gives the defaults and why.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields

from ...errors import ContractTypeError

__all__ = [
    "DEFAULT_LIMITS",
    "Budget",
    "Limits",
    "active_budget",
    "budget_scope",
]


@dataclass(frozen=True)
class Limits:
    """The bounds of one load (frozen), every field a positive ``int`` (else ``ContractTypeError``): the size of
    one file, the nesting of mappings and lists, the YAML nodes of one file after alias expansion, the characters
    and references the document's interpolations expand to in all, and the length (each and in all) and integer
    bits of an ``add``/``mul``/``div``/``max`` result."""

    file_bytes: int = 4 * 2**20
    depth: int = 32
    nodes: int = 100_000
    expansion: int = 10_000_000
    references: int = 10_000
    resolver_chars: int = 1_000_000
    resolver_bits: int = 256

    def __post_init__(self) -> None:
        for bound in fields(self):
            value = getattr(self, bound.name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ContractTypeError.for_value(f"limits.{bound.name}", "a positive int", value)


DEFAULT_LIMITS = Limits()
"""The limits ``load_recipe`` applies unless given others (docs/security.md, "Limits")."""


@dataclass
class Budget:
    """What the resolvers of one load may still produce: their limits and the characters they have returned."""

    limits: Limits
    resolver_chars_used: int = field(default=0)


_BUDGET: contextvars.ContextVar[Budget | None] = contextvars.ContextVar("rl_contracts_budget", default=None)


def active_budget() -> Budget:
    """The budget of the load in progress; a fresh one with :data:`DEFAULT_LIMITS` outside a load."""
    return _BUDGET.get() or Budget(DEFAULT_LIMITS)


@contextmanager
def budget_scope(limits: Limits) -> Iterator[Budget]:
    """Make a fresh :class:`Budget` with ``limits`` the active one while the block runs."""
    budget = Budget(limits)
    token = _BUDGET.set(budget)
    try:
        yield budget
    finally:
        _BUDGET.reset(token)
