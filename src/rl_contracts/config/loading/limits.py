"""The bounds on the work a recipe may ask of the loader: file size, nesting depth, YAML nodes after alias
expansion, interpolation expansion, resolver results and the folder its ``defaults`` may reach.

Recipes reach ``rl-contracts validate`` from pull requests, forks included, so every bound here is checked before
the work it bounds is done (DESIGN.md, "Untrusted input").  :class:`Limits` holds them (the defaults are
README's "Limits" table); ``load_recipe(limits=...)`` takes other values, tests use small ones.  A recipe beyond a
limit is refused with rule V6 (declared in :mod:`.compose`), naming the limit and its value.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

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
    """The bounds of one load (frozen); every field a positive ``int``.

    - ``file_bytes``: the size of one recipe file (4 MiB; NeMo RL's recipes are under 20 KiB);
    - ``depth``: nesting of mappings and lists (32 levels; recipes use about 8, and OmegaConf overflows
      Python's stack near 75);
    - ``nodes``: YAML nodes (keys and values) of one file after alias expansion (100,000; a recipe of 20,000
      keys in 2,000 mappings holds about 42,000);
    - ``expansion``: characters the interpolated values of the document may expand to, in all (10,000,000);
    - ``references``: references OmegaConf may follow to resolve them, in all, counting each interpolation as
      what it expands to (10,000; OmegaConf takes about a millisecond per reference, NeMo RL's recipes use
      under 100);
    - ``resolver_chars``: the length of a string or list an ``add``/``mul``/``div``/``max`` call may return, and
      of all of them together in one load (1,000,000);
    - ``resolver_bits``: the magnitude of an integer such a call may return (256 bits).
    """

    file_bytes: int = 4 * 2**20
    depth: int = 32
    nodes: int = 100_000
    expansion: int = 10_000_000
    references: int = 10_000
    resolver_chars: int = 1_000_000
    resolver_bits: int = 256

    def __post_init__(self) -> None:
        """Reject a bound that is not a positive ``int``."""
        for name in (
            "file_bytes",
            "depth",
            "nodes",
            "expansion",
            "references",
            "resolver_chars",
            "resolver_bits",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ContractTypeError.for_value(f"limits.{name}", "a positive int", value)


DEFAULT_LIMITS = Limits()
"""The limits ``load_recipe`` applies unless given others (README's "Limits" table)."""


@dataclass
class Budget:
    """What the resolvers of one load may still produce: their limits and the characters they have returned."""

    limits: Limits
    resolver_chars_used: int = field(default=0)


_BUDGET: contextvars.ContextVar[Budget | None] = contextvars.ContextVar("rl_contracts_budget", default=None)


def active_budget() -> Budget:
    """The budget of the load in progress; a fresh one with :data:`DEFAULT_LIMITS` outside a load (a caller
    resolving its own OmegaConf document with the registered resolvers)."""
    budget = _BUDGET.get()
    return budget if budget is not None else Budget(DEFAULT_LIMITS)


@contextmanager
def budget_scope(limits: Limits) -> Iterator[Budget]:
    """Make a fresh :class:`Budget` with ``limits`` the active one while the block runs."""
    budget = Budget(limits)
    token = _BUDGET.set(budget)
    try:
        yield budget
    finally:
        _BUDGET.reset(token)
