"""Summing the counter snapshots of every DP leader into one counter dictionary (SPEC §6.4)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .._messages import render, shorten, type_name
from ..checks import require_sequence
from ..errors import ContractTypeError, CounterSnapshotError
from ._values import check_sum
from ._worker_dicts import read_worker_dict
from .names import AggregatedCounters, WorkerCounters
from .snapshot import CounterSnapshot

__all__ = ["aggregate_spec_decode_counters"]


def aggregate_spec_decode_counters(
    worker_metrics: Sequence[CounterSnapshot | WorkerCounters],
) -> AggregatedCounters:
    """Aggregate vLLM engine counters from multiple workers into one counter dictionary.

    Each report is a :class:`~rl_contracts.metrics.CounterSnapshot` or a worker dict.  For each kept
    ``(name, value)`` pair (unkept pairs are skipped without looking at the value): a scalar is added to
    ``result[name]``; a vector (list or tuple) adds its element ``i`` to ``result[(name, i + 1)]``, so positions
    are 1-based.  Returns a new dict of floats with keys in first-seen order; ``[]`` gives ``{}``.

    Raises ``ContractTypeError`` when ``worker_metrics`` is not a sequence (or is a ``str``), a report is neither
    a snapshot nor a mapping, or a key is not a ``str``; ``CounterSnapshotError`` for a value that is not a finite
    number ``>= 0`` (bools included), a name that is a scalar in one report and a vector in another, or a sum that
    overflows.

    Divergence: the reference sums whatever it receives, including NaN, negative numbers and bools.

    >>> aggregate_spec_decode_counters([
    ...     {"vllm:spec_decode_num_drafts": 100, "vllm:spec_decode_num_accepted_tokens_per_pos": [50, 30]},
    ...     {"vllm:spec_decode_num_drafts": 50, "other_metric": 5},
    ... ])
    {'vllm:spec_decode_num_drafts': 150.0, ('vllm:spec_decode_num_accepted_tokens_per_pos', 1): 50.0, \
('vllm:spec_decode_num_accepted_tokens_per_pos', 2): 30.0}
    """
    reports = require_sequence(worker_metrics, "worker_metrics", "a list of worker counter snapshots")
    result: AggregatedCounters = {}
    vector_names: dict[str, bool] = {}
    for index, report in enumerate(reports):
        where = f"worker_metrics[{index}]"
        for name, value in _report_values(report, where).items():
            _check_same_kind(vector_names, name, value, where)
            if isinstance(value, tuple):
                for position, number in enumerate(value, start=1):
                    result[(name, position)] = result.get((name, position), 0.0) + number
            else:
                result[name] = result.get(name, 0.0) + value
    for key, total in result.items():
        check_sum(key, total, "aggregated")
    return result


def _report_values(report: object, where: str) -> Mapping[str, float | tuple[float, ...]]:
    """A report's checked kept values: a snapshot's as they are, a worker dict's read as the snapshot would."""
    if isinstance(report, CounterSnapshot):
        return report.values
    if isinstance(report, Mapping):
        return read_worker_dict(report, drop_unkept=True, where=where, argument="worker_metrics")
    raise ContractTypeError(
        f"{where} must be a CounterSnapshot or a mapping of counter names to values, got {type_name(report)}",
        argument="worker_metrics",
        expected="CounterSnapshot | Mapping[str, float | list[float]]",
        actual=type_name(report),
    )


def _check_same_kind(
    vector_names: dict[str, bool], name: str, value: float | tuple[float, ...], where: str
) -> None:
    """Record whether ``name`` is a vector; raise when an earlier report had it as the other kind."""
    is_vector = isinstance(value, tuple)
    if vector_names.setdefault(name, is_vector) != is_vector:
        raise CounterSnapshotError(
            f"{where} counter '{shorten(name, 200)}' is a {'vector' if is_vector else 'scalar'} here but a "
            f"{'scalar' if is_vector else 'vector'} in an earlier report; workers run different vLLM "
            "versions or the snapshot is corrupt",
            key=shorten(name, 200),
            value=render(value),
        )
