"""The log-probability vLLM reported for each sampled token of a completion output (SPEC §0.7, §5.1 step 5).

Shared by the chat attachment (:mod:`rl_contracts.chat`) and the rollout hand-off (:mod:`rl_contracts.rollouts`),
which word their errors differently: this module returns the values, or the first fault found, and raises nothing.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["LogprobFault", "sampled_token_logprobs"]


@dataclass(frozen=True)
class LogprobFault:
    """The first position whose sampled-token log-probability is unusable."""

    kind: Literal["missing", "not_a_number", "non_finite"]
    """``missing``: the position's mapping lacks the sampled token; ``not_a_number``: its ``logprob`` is no real
    number; ``non_finite``: it is NaN or ``+inf`` (``-inf``, a token of probability 0, is a value)."""
    position: int
    """The position in the generated tokens."""
    token_id: int
    """The sampled token at that position."""
    value: object
    """The ``logprob`` read (``None`` for ``missing``; the float for ``non_finite``)."""


def sampled_token_logprobs(generated: Sequence[int], entries: Sequence[Any]) -> list[float] | LogprobFault:
    """The ``logprob`` of the sampled token at every position, as floats, or the first :class:`LogprobFault`.

    ``entries[i]`` is vLLM's mapping from token id to ``Logprob`` at position ``i``; the caller has checked that
    ``len(entries) == len(generated)``.  Values are not floored (``-inf`` is returned as it is).  Mappings that are
    plain dicts are read in bulk (C-level loops); any other form, or any fault, takes the per-position path, which
    finds the first fault.
    """
    fast = _bulk(generated, entries)
    if fast is not None:
        return fast
    values: list[float] = []
    for position, (token_id, entry) in enumerate(zip(generated, entries, strict=True)):
        candidate = entry.get(token_id) if isinstance(entry, Mapping) else None
        if candidate is None:
            return LogprobFault("missing", position, token_id, None)
        raw = getattr(candidate, "logprob", None)
        try:
            value = float(raw)  # type: ignore[arg-type]
        except (TypeError, ValueError, OverflowError):
            return LogprobFault("not_a_number", position, token_id, raw)
        if math.isnan(value) or value == math.inf:
            return LogprobFault("non_finite", position, token_id, value)
        values.append(value)
    return values


def _bulk(generated: Sequence[int], entries: Sequence[Any]) -> list[float] | None:
    """Every value at C speed when each entry is a dict holding a sound log-prob, else ``None``."""
    if not set(map(type, entries)) <= {dict}:
        return None
    try:  # map stops at the shorter input; the caller has checked that the lengths are equal
        candidates = map(operator.getitem, entries, generated)
        values = list(map(float, map(operator.attrgetter("logprob"), candidates)))
    except (KeyError, AttributeError, TypeError, ValueError, OverflowError):
        return None
    if math.inf in values or any(map(math.isnan, values)):
        return None
    return values
