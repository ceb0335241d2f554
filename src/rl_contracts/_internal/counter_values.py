"""Counter value checks shared by every metrics entry point, and the frozen mapping snapshots hold (private).

A counter value is a finite real number ``>= 0`` that is not a bool; a bad one raises
:class:`~rl_contracts.errors.CounterSnapshotError` naming where it was found, the (shortened) key and the value.
"""

from __future__ import annotations

import math
from collections.abc import ItemsView, Iterator, KeysView, Mapping, Sequence, ValuesView
from typing import Any

from ..checks import real_or_none
from ..errors import CounterSnapshotError
from ..metrics.names import MAX_SPEC_DECODE_POSITIONS
from .messages import render, shorten, type_name

__all__ = [
    "FrozenCounters",
    "check_positions",
    "check_sum",
    "counter_value",
    "counter_vector",
    "is_vector",
    "key_text",
]


def key_text(key: object) -> str:
    """A counter key as messages and ``.key`` show it: a ``str`` shortened to 200 characters, else its repr."""
    return shorten(key, 200) if isinstance(key, str) else render(key)


def counter_value(value: object, key: object, where: str) -> float:
    """Check one counter value (finite, ``>= 0``, a number but not a bool) and return it as a float.

    Raises ``CounterSnapshotError`` with ``.key`` and ``.value``; ``where`` starts the message.
    """
    number = real_or_none(value)
    if number is None:
        raise CounterSnapshotError(
            f"{where} counter '{key_text(key)}' must be an int or float (not bool), got {type_name(value)} "
            f"{render(value)}",
            key=key_text(key),
            value=render(value),
        )
    if not math.isfinite(number) or number < 0:
        raise CounterSnapshotError(
            f"{where} counter '{key_text(key)}' must be finite and >= 0, got {render(value)}; engine counters "
            "only grow, so the snapshot is corrupt or was not read from a counter",
            key=key_text(key),
            value=render(value),
        )
    return number + 0.0  # normalises -0.0


def counter_vector(value: Sequence[object], key: object, where: str) -> tuple[float, ...]:
    """Check every element of a per-position vector as :func:`counter_value`; the message adds the position.

    A vector longer than :data:`~rl_contracts.metrics.MAX_SPEC_DECODE_POSITIONS` is a ``CounterSnapshotError``.
    """
    check_positions(len(value), key, where)
    result = []
    for index, item in enumerate(value):
        try:
            result.append(counter_value(item, key, where))
        except CounterSnapshotError as err:
            raise CounterSnapshotError(
                f"{err.message} (at position {index})", key=err.key, value=err.value
            ) from None
    return tuple(result)


def check_positions(count: int, key: object, where: str) -> None:
    """Raise ``CounterSnapshotError`` when a vector of ``count`` positions exceeds the one documented bound."""
    if count > MAX_SPEC_DECODE_POSITIONS:
        raise CounterSnapshotError(
            f"{where} counter '{key_text(key)}' has {count} positions; a per-position vector holds at most "
            f"{MAX_SPEC_DECODE_POSITIONS} (positions 0 to {MAX_SPEC_DECODE_POSITIONS - 1}), whatever its source",
            key=key_text(key),
            value=str(count),
        )


def is_vector(value: object) -> bool:
    """Whether a counter value is a per-position vector (a list or a tuple)."""
    return isinstance(value, list | tuple)


def check_sum(key: object, total: float, where: str) -> None:
    """Raise ``CounterSnapshotError`` when a sum of valid counters overflowed to ``inf``."""
    if not math.isfinite(total):
        raise CounterSnapshotError(
            f"{where} counter '{key_text(key)}' overflows when summed ({render(total)}); the inputs are not "
            "engine counters",
            key=key_text(key),
            value=render(total),
        )


class FrozenCounters(Mapping[str, "float | tuple[float, ...]"]):
    """A read-only, hashable, picklable mapping of already validated counter values."""

    __slots__ = ("_data",)

    def __init__(self, data: dict[str, float | tuple[float, ...]]) -> None:
        self._data = data

    def __getitem__(self, key: str) -> float | tuple[float, ...]:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def items(self) -> ItemsView[str, float | tuple[float, ...]]:
        """The underlying dict's view (read-only through this mapping), at C speed."""
        return self._data.items()

    def keys(self) -> KeysView[str]:
        return self._data.keys()

    def values(self) -> ValuesView[float | tuple[float, ...]]:
        return self._data.values()

    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    def __hash__(self) -> int:
        return hash(frozenset(self._data.items()))

    def __repr__(self) -> str:
        return repr(self._data)

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenCounters, (dict(self._data),))
