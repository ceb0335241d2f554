"""Snapshot values from Prometheus text exposition, classic or OpenMetrics (SPEC §6.3).

The page is parsed by ``prometheus_client`` (its OpenMetrics parser when the page ends with ``# EOF``, else its
text parser), imported only when a page is read.  Only ``vllm:`` families are read: counters by their ``_total``
samples, histograms by their ``_count`` and ``_sum`` samples; every other type is ignored, except the untyped
``<name>_total`` family that the text parser splits off a declared counter ``<name>`` (the OpenMetrics spelling of
a counter's samples), which is read as that counter.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Final

from ..checks import require_str
from ..errors import CounterSnapshotError
from ..metrics.names import (
    COUNTER_KEY_SEP,
    HISTOGRAM_COUNT_PART,
    HISTOGRAM_SUM_PART,
    MAX_SPEC_DECODE_POSITIONS,
    SPEC_DECODE_ACCEPTED_PER_POS,
    is_kept,
)
from .counter_series import Accumulator, EnginePart, check_metric_name, series_key
from .counter_values import FrozenCounters
from .messages import render, render_name, shorten

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

__all__ = ["read_prometheus_text"]

_MAX_POSITION_LABEL: Final = MAX_SPEC_DECODE_POSITIONS - 1
"""Largest ``position`` label accepted on a page: the one bound of every snapshot source, so a hostile page cannot
allocate a huge vector."""
_DECIMAL: Final = re.compile(r"[0-9]+")
_UNTYPED: Final = frozenset({"unknown", "untyped"})
"""The type of a family without ``# TYPE`` (``prometheus_client`` calls it ``unknown``; older releases
``untyped``)."""

_Parts = dict[str, "str | None"]
"""Sample name to the key part it feeds (``None``: the series itself)."""
_Identity = tuple[str, "str | None", tuple[tuple[str, str], ...]]
"""What one sample sets: family name, part, sorted labels; a page may set it once."""


def read_prometheus_text(
    text: object,
) -> tuple[FrozenCounters, tuple[str, ...], tuple[tuple[str, str], ...], tuple[EnginePart, ...]]:
    """Sum the kept samples of a page by snapshot key; also return the names of the page's ``vllm:`` families,
    the identity labels of the kept samples (sorted, distinct) and the sums per ``engine`` label (``()`` for a
    page of one engine).

    The names are in page order, every type counted, kept or not; the untyped half of a split counter is not a
    family of its own.  Raises as ``CounterSnapshot.from_prometheus_text``.
    """
    families = _parse(require_str(text, "text"))
    counters = {family.name for family in families if family.type == "counter"}
    accumulator = Accumulator("Prometheus")
    seen: set[_Identity] = set()
    names: list[str] = []
    for family in families:
        if not family.name.startswith("vllm:"):
            continue
        base = _split_counter(family, counters)
        if base is None:
            names.append(family.name)
        read = _parts(family, base)
        if read is not None and is_kept(check_metric_name(read[0], "Prometheus family")):
            _add_samples(accumulator, seen, family, *read)
    return accumulator.result(), tuple(names), accumulator.identity_labels(), accumulator.engine_parts()


def _parse(text: str) -> list[Metric]:
    """Every family of the page, or ``CounterSnapshotError`` "could not parse Prometheus text: {reason}"."""
    try:
        return list(_families(text))
    except (RecursionError, MemoryError):
        raise
    except Exception as err:  # the parsers raise ValueError, but also bare IndexError/TypeError on odd input
        reason = render_name(str(err) or type(err).__name__)
        raise CounterSnapshotError(f"could not parse Prometheus text: {reason}") from None


def _families(text: str) -> Iterable[Metric]:
    """The lazy family stream of the parser the page calls for: OpenMetrics when its last line is ``# EOF``."""
    if text.rstrip("\n").rpartition("\n")[2] == "# EOF":
        from prometheus_client.openmetrics import parser as openmetrics

        families: Iterable[Metric] = openmetrics.text_string_to_metric_families(text)  # type: ignore[no-untyped-call]
        return families
    from prometheus_client import parser

    return parser.text_string_to_metric_families(text)


def _split_counter(family: Metric, counters: set[str]) -> str | None:
    """The declared counter whose ``_total``/``_created`` samples the text parser split into this untyped family."""
    if family.type not in _UNTYPED:
        return None
    for suffix in ("_total", "_created"):
        base = family.name.removesuffix(suffix)
        if base != family.name and base in counters:
            return base
    return None


def _parts(family: Metric, split_from: str | None) -> tuple[str, _Parts] | None:
    """The metric name a family feeds and its samples that count, or ``None`` for a family that is ignored."""
    name = family.name
    if split_from is not None:
        return (split_from, {name: None}) if name == split_from + "_total" else None
    if family.type == "counter":
        return name, {name + "_total": None}
    if family.type == "histogram":
        return name, {name + "_count": HISTOGRAM_COUNT_PART, name + "_sum": HISTOGRAM_SUM_PART}
    return None


def _add_samples(
    accumulator: Accumulator, seen: set[_Identity], family: Metric, name: str, parts: _Parts
) -> None:
    """Add the samples of one kept family: a vector by ``position``, histogram parts, or the counter itself."""
    vector = name == SPEC_DECODE_ACCEPTED_PER_POS and family.type != "histogram"
    for sample in family.samples:
        if sample.native_histogram is not None:
            raise CounterSnapshotError(
                f"Prometheus histogram '{shorten(name, 200)}' is a native histogram; only classic histograms "
                "(_count and _sum samples) are read",
                key=shorten(name, 200),
            )
        if sample.name not in parts:
            continue
        part = parts[sample.name]
        _claim_once(
            seen, (name, part, tuple(sorted(sample.labels.items()))), sample.name, sample.labels, sample.value
        )
        key = series_key(name, sample.labels)
        engine = accumulator.add_labels(sample.labels, "Prometheus sample", key)
        if part is not None:
            accumulator.add_scalar(key + COUNTER_KEY_SEP + part, sample.value, engine)
        elif vector:
            accumulator.add_position(key, _position(sample.labels, key), sample.value, engine)
        else:
            accumulator.add_scalar(key, sample.value, engine)


def _claim_once(
    seen: set[_Identity], identity: _Identity, sample: str, labels: Mapping[str, str], value: float
) -> None:
    if identity in seen:
        raise CounterSnapshotError(
            f"could not parse Prometheus text: duplicate sample {render_name(sample)} with labels {render(labels)}",
            key=shorten(identity[0], 200),
            value=render(value),
        )
    seen.add(identity)


def _position(labels: Mapping[str, str], key: str) -> int:
    raw = labels.get("position")
    if raw is None or not _DECIMAL.fullmatch(raw) or int(raw) > _MAX_POSITION_LABEL:
        raise CounterSnapshotError(
            f"Prometheus counter '{shorten(key, 200)}' needs a 'position' label holding a decimal from 0 to "
            f"{_MAX_POSITION_LABEL}, got {render(raw)}",
            key=shorten(key, 200),
            value=render(raw),
        )
    return int(raw)
