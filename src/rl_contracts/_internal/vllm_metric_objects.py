"""Snapshot values from the objects ``vllm.LLM.get_metrics()`` returns (SPEC §6.3)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..checks import describe_array, is_collection
from ..errors import ContractTypeError, CounterSnapshotError
from ..metrics.names import (
    COUNTER_KEY_SEP,
    FINISHED_REASON_LABEL,
    HISTOGRAM_COUNT_PART,
    HISTOGRAM_SUM_PART,
    is_kept,
)
from .counter_series import Accumulator, EnginePart, check_metric_name, series_key
from .counter_values import FrozenCounters, is_vector
from .messages import render, shorten, type_name

__all__ = ["read_vllm_metrics"]


def read_vllm_metrics(
    metrics: object,
) -> tuple[FrozenCounters, tuple[tuple[str, str], ...], tuple[EnginePart, ...]]:
    """Sum the kept metric objects of ``metrics`` by snapshot key (see ``CounterSnapshot.from_vllm_metrics``);
    also return the identity labels of the kept objects (sorted, distinct) and the sums per ``engine`` label
    (``()`` for objects of one engine)."""
    objects = _metric_objects(metrics)
    accumulator = Accumulator("vLLM metric")
    for index, metric in enumerate(objects):
        _add_metric(accumulator, metric, f"metrics[{index}]")
    return accumulator.result(), accumulator.identity_labels(), accumulator.engine_parts()


def _metric_objects(metrics: object) -> Iterable[object]:
    """``metrics`` when it is a collection of objects: not text, a mapping or a 0-d array."""
    if isinstance(metrics, Mapping) or not is_collection(metrics):
        raise ContractTypeError.for_value(
            "metrics",
            "an iterable of vLLM metric objects (from LLM.get_metrics())",
            metrics,
            actual=describe_array(metrics),
        )
    return metrics


def _add_metric(accumulator: Accumulator, metric: object, where: str) -> None:
    """Add one object: skipped unless its name is kept, else its vector, scalar or histogram parts.

    An unkept name is skipped whatever it holds, ``|`` or the empty name included (SPEC §6.3 step 1); only a
    name that is not a ``str``, or a kept name holding ``|`` (it would collide with a histogram part or an outcome
    key), is an error.
    """
    raw_name = getattr(metric, "name", None)
    if isinstance(raw_name, str) and not is_kept(raw_name):
        return
    name = check_metric_name(raw_name, where)
    labels = getattr(metric, "labels", None)
    key = _flat_key(name, labels, f"metric {where}")
    engine = accumulator.add_labels(labels, f"metric {where}", key) if isinstance(labels, Mapping) else None
    values = getattr(metric, "values", None)
    value = getattr(metric, "value", None)
    count, total = getattr(metric, "count", None), getattr(metric, "sum", None)
    if values is not None:
        if not is_vector(values):
            raise CounterSnapshotError(
                f"metric {where} '{shorten(key, 200)}' has values of type {type_name(values)}; a vLLM "
                "Vector holds a list of per-position counts",
                key=shorten(key, 200),
                value=render(values),
            )
        accumulator.add_vector(key, values, engine)
    elif value is not None:
        accumulator.add_scalar(key, value, engine)
    elif count is not None and total is not None:
        accumulator.add_scalar(key + COUNTER_KEY_SEP + HISTOGRAM_COUNT_PART, count, engine)
        accumulator.add_scalar(key + COUNTER_KEY_SEP + HISTOGRAM_SUM_PART, total, engine)
    else:
        raise CounterSnapshotError(
            f"metric {where} '{shorten(key, 200)}' ({type_name(metric)}) has none of 'values', 'value' "
            "or 'count' and 'sum'; expected a vLLM Counter, Gauge, Histogram or Vector",
            key=shorten(key, 200),
        )


def _flat_key(name: str, labels: object, where: str) -> str:
    """:func:`series_key` after checking that ``labels`` is a mapping whose ``finished_reason`` is a ``str``."""
    if not isinstance(labels, Mapping):
        raise CounterSnapshotError(
            f"{where} '{shorten(name, 200)}' must have labels as a mapping of label names to strings, got "
            f"{type_name(labels)}",
            key=shorten(name, 200),
            value=render(labels),
        )
    reason = labels.get(FINISHED_REASON_LABEL)
    if FINISHED_REASON_LABEL in labels and not isinstance(reason, str):
        raise CounterSnapshotError(
            f"{where} '{shorten(name, 200)}' has a {FINISHED_REASON_LABEL} label that is not a str: "
            f"{render(reason)}",
            key=shorten(name, 200),
            value=render(reason),
        )
    return series_key(name, labels)
