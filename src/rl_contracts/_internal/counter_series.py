"""From a source's series to snapshot values: the series key, and the sum over every other label (SPEC §6.3).

Both live sources (vLLM metric objects and Prometheus text) name a series by its metric name plus, when present,
its ``finished_reason`` label, and add up every series that shares a key: scalars add, vectors add element-wise.
The sums are also kept per value of the ``engine`` label, so that each engine's counters stay apart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from ..errors import CounterSnapshotError
from ..metrics.names import (
    COUNTER_KEY_SEP,
    ENGINE_LABEL,
    FINISHED_REASON_LABEL,
    NOT_IDENTITY_LABELS,
    encode_counter_key,
)
from .counter_values import FrozenCounters, check_sum, counter_value, counter_vector, key_text
from .messages import render, shorten, type_name

__all__ = ["Accumulator", "EnginePart", "check_metric_name", "identity_labels", "series_key"]


class EnginePart(NamedTuple):
    """The series of one ``engine`` label value (``None``: series without the label) of a source."""

    labels: tuple[tuple[str, str], ...]
    """The sorted, distinct identity labels of those series."""
    values: FrozenCounters
    """Their sums by snapshot key."""


def check_metric_name(name: object, where: str) -> str:
    """Return ``name`` when it is a non-empty ``str`` without ``|``, else raise ``CounterSnapshotError``."""
    if not isinstance(name, str) or not name or COUNTER_KEY_SEP in name:
        raise CounterSnapshotError(
            f"{where} name must be a non-empty str without '{COUNTER_KEY_SEP}', got {type_name(name)} "
            f"{render(name)}",
            key=key_text(name),
        )
    return name


def series_key(name: str, labels: Mapping[str, object]) -> str:
    """The snapshot key of a series: its name, plus ``|finished_reason=<reason>`` when that label is present."""
    if FINISHED_REASON_LABEL not in labels:
        return name
    return encode_counter_key(name, f"{FINISHED_REASON_LABEL}={labels[FINISHED_REASON_LABEL]}")


class Accumulator:
    """Sums scalars and per-position vectors by snapshot key, refusing a key that gets both kinds.

    Every value is checked as it is added; :meth:`result` checks the sums and returns them in first-seen order.
    The labels of every kept series are collected too (:meth:`add_labels`), for the snapshot's engine identity, and
    each value is also added to the part of its series' ``engine`` label (:meth:`engine_parts`).  ``where`` starts
    every message (``"vLLM metric"``, ``"Prometheus"``).
    """

    def __init__(self, where: str, *, split: bool = True) -> None:
        self.where = where
        self.scalars: dict[str, float] = {}
        self.vectors: dict[str, dict[int, float]] = {}
        self.order: dict[str, None] = {}
        self.labels: set[tuple[str, str]] = set()
        self.parts: dict[str | None, Accumulator] | None = {} if split else None

    def add_labels(self, labels: Mapping[Any, object], where: str, key: str) -> str | None:
        """Collect the identity labels of one kept series (``where`` and ``key`` name it in errors); return its
        ``engine`` label, the ``engine`` argument of the ``add_*`` calls for this series."""
        pairs = identity_labels(labels, where, key)
        self.labels.update(pairs)
        engine = dict(pairs).get(ENGINE_LABEL)
        if (part := self._part(engine)) is not None:
            part.labels.update(pairs)
        return engine

    def engine_parts(self) -> tuple[EnginePart, ...]:
        """The sums per ``engine`` label value, in first-seen order, when the series carry two or more values
        (else ``()``: the whole is one engine)."""
        if self.parts is None or len(self.parts) < 2:
            return ()
        return tuple(EnginePart(part.identity_labels(), part.result()) for part in self.parts.values())

    def _part(self, engine: str | None) -> Accumulator | None:
        """The accumulator of ``engine``'s series, made on first use; None when the series are not split."""
        if self.parts is None:
            return None
        part = self.parts.get(engine)
        if part is None:
            part = self.parts[engine] = Accumulator(self.where, split=False)
        return part

    def identity_labels(self) -> tuple[tuple[str, str], ...]:
        """The sorted, distinct identity labels of every series added."""
        return tuple(sorted(self.labels))

    def add_scalar(self, key: str, value: object, engine: str | None = None) -> None:
        """Add a scalar counter under ``key`` (and to the part of ``engine``)."""
        number = counter_value(value, key, self.where)
        self._claim(key, self.vectors)
        self.scalars[key] = self.scalars.get(key, 0.0) + number
        if (part := self._part(engine)) is not None:
            part.add_scalar(key, number)

    def add_position(self, key: str, position: int, value: object, engine: str | None = None) -> None:
        """Add one element (0-based ``position``) of the vector under ``key`` (and to the part of ``engine``)."""
        number = counter_value(value, key, self.where)
        self._claim(key, self.scalars)
        slots = self.vectors.setdefault(key, {})
        slots[position] = slots.get(position, 0.0) + number
        if (part := self._part(engine)) is not None:
            part.add_position(key, position, number)

    def add_vector(self, key: str, values: Sequence[object], engine: str | None = None) -> None:
        """Add a whole vector under ``key``, element-wise (the shorter one is padded with zeros)."""
        numbers = counter_vector(values, key, self.where)
        self._claim(key, self.scalars)
        slots = self.vectors.setdefault(key, {})
        for position, number in enumerate(numbers):
            slots[position] = slots.get(position, 0.0) + number
        if (part := self._part(engine)) is not None:
            part.add_vector(key, numbers)

    def result(self) -> FrozenCounters:
        """The summed values: scalars as floats, vectors as tuples whose missing positions are 0."""
        out: dict[str, float | tuple[float, ...]] = {}
        for key in self.order:
            if key in self.scalars:
                out[key] = self._checked_sum(key, self.scalars[key])
            else:
                slots = self.vectors[key]
                vector = [0.0] * max((position + 1 for position in slots), default=0)
                for position, total in slots.items():
                    vector[position] = self._checked_sum(key, total)
                out[key] = tuple(vector)
        return FrozenCounters(out)

    def _checked_sum(self, key: str, total: float) -> float:
        check_sum(key, total, self.where)
        return total

    def _claim(self, key: str, other: Mapping[str, object]) -> None:
        """Record ``key`` in first-seen order; ``other`` is the store of the other kind, which must not hold it."""
        if key in other:
            raise CounterSnapshotError(
                f"{self.where} counter '{shorten(key, 200)}' is reported both as a scalar and as a per-position "
                "vector; one series cannot be both",
                key=shorten(key, 200),
            )
        self.order.setdefault(key)


def identity_labels(labels: Mapping[Any, object], where: str, key: str) -> tuple[tuple[str, str], ...]:
    """The identity pairs of one series' labels (every label but ``finished_reason`` and ``position``).

    Raises ``CounterSnapshotError`` naming ``where`` and the series ``key`` for a label name or value that is not
    a ``str`` (vLLM's labels are strings; anything else cannot name an engine).
    """
    pairs = []
    for name, value in labels.items():
        if name in NOT_IDENTITY_LABELS:
            continue
        if not isinstance(name, str) or not isinstance(value, str):
            raise CounterSnapshotError(
                f"{where} '{shorten(key, 200)}' has a label {render(name)}={render(value)} that is not a str; "
                "the labels of a series name its engine and must be strings, as vLLM's are",
                key=shorten(key, 200),
                value=render(value),
            )
        pairs.append((name, value))
    return tuple(pairs)
