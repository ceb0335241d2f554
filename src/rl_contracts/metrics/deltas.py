"""Reading a step's counter delta by candidate names: the first present series, and histogram means (§6.5)."""

from __future__ import annotations

from collections.abc import Mapping

from .._messages import render, shorten, type_name
from ..errors import ContractTypeError, CounterSnapshotError
from ._values import as_number, require_str
from .keys import encode_counter_key
from .names import HISTOGRAM_COUNT_PART, HISTOGRAM_SUM_PART

__all__ = ["first_delta", "mean_from_histogram"]


def first_delta(
    delta: Mapping[str | tuple[str, int], float],
    candidates: tuple[str, ...] | list[str],
    part: str | None = None,
) -> float | None:
    """Return the delta for the first candidate name present, else ``None``.

    The key of a candidate is ``encode_counter_key(name, part)`` when ``part is not None`` (so ``part=""`` gives
    ``"name|"``), else ``name``.  A present ``0.0`` is returned.  Raises ``ContractTypeError`` when ``delta`` is
    not a mapping, ``candidates`` is not a tuple or list of ``str`` (a bare ``str`` included) or ``part`` is not a
    ``str`` or ``None``; ``CounterSnapshotError`` when a candidate is not a valid counter name, or the value found
    is not a number (a bool included).  Any number is returned as a float, negative (a legal delta), NaN and
    infinite values included: SPEC §6.5 returns ``delta[key]``, and the step functions never build such a delta.

    >>> first_delta({"vllm:request_prompt_tokens|sum": 0.0}, ("vllm:request_prompt_tokens",), "sum")
    0.0
    """
    if not isinstance(delta, Mapping):
        raise ContractTypeError.for_value("delta", "a mapping of counter keys to floats", delta)
    names = _candidate_names(candidates)
    if part is not None:
        require_str(part, "part")
    for name in names:
        key = name if part is None else encode_counter_key(name, part)
        if key in delta:
            return _number(key, delta[key])
    return None


def mean_from_histogram(
    delta: Mapping[str | tuple[str, int], float],
    candidates: tuple[str, ...] | list[str],
) -> float | None:
    """Mean of a histogram over the step, from its ``sum``/``count`` delta (exact: no bucket interpolation).

    Returns ``None`` when either part is absent or the count delta is ``<= 0``: the engine served no request in the
    step (e.g. a step spent in training), which is not a zero-length sequence.  Raises as :func:`first_delta`.
    """
    total = first_delta(delta, candidates, HISTOGRAM_SUM_PART)
    count = first_delta(delta, candidates, HISTOGRAM_COUNT_PART)
    if total is None or count is None or count <= 0:
        return None
    return total / count


def _candidate_names(candidates: object) -> tuple[str, ...]:
    if not isinstance(candidates, tuple | list):
        raise ContractTypeError(
            f"candidates must be a tuple of metric names, got {type_name(candidates)}"
            + ("; wrap a single name as (name,)" if isinstance(candidates, str) else ""),
            argument="candidates",
            expected="tuple[str, ...]",
            actual=type_name(candidates),
        )
    for name in candidates:
        require_str(name, "candidates[i]")
    return tuple(candidates)


def _number(key: str, value: object) -> float:
    number = as_number(value)
    if number is None:
        raise CounterSnapshotError(
            f"delta['{shorten(key, 200)}'] must be a number (not bool), got {type_name(value)} "
            f"{render(value)}",
            key=shorten(key, 200),
            value=render(value),
        )
    return number
