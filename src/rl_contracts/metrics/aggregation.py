"""Summing the counter snapshots of every DP leader into one counter dictionary (SPEC §6.4).

The result is a :class:`FleetCounters`: the plain dict of SPEC §6.4, which also remembers the snapshots it summed,
each naming its engine (a worker dict or a snapshot without ``process`` is named by its position in the list), so
that the step functions take deltas per engine.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from .._internal.counter_values import check_sum
from .._internal.messages import render, shorten, type_name
from .._internal.worker_dicts import read_worker_dict
from ..checks import require_sequence
from ..errors import ContractTypeError, CounterSnapshotError
from .names import AggregatedCounters, WorkerCounters
from .snapshot import CounterSnapshot, EngineIdentity

__all__ = ["POSITION_PROCESS", "FleetCounters", "aggregate_spec_decode_counters"]

POSITION_PROCESS: Final[str] = "worker_metrics["
"""How the engine of a report without ``process`` is named: ``worker_metrics[<its index>]``, its position in the
aggregated list (``get_metrics()`` of DP leader ``i`` is element ``i``, before and after the step)."""


class FleetCounters(dict[str | tuple[str, int], float]):
    """Counters summed over a fleet of engines (a ``dict``, equal to the plain dict of its items), remembering the
    engine snapshots it was summed from.

    ``snapshots`` is the tuple of :class:`~rl_contracts.metrics.CounterSnapshot` reports, in order, each naming its
    engine (a worker dict as a snapshot named ``worker_metrics[i]``, read at the aggregation's instant); ``None``
    for a ``FleetCounters`` built by hand without them.  With snapshots on both sides,
    :func:`~rl_contracts.metrics.compute_engine_step_metrics` and
    :func:`~rl_contracts.metrics.compute_spec_decode_metrics` take the delta of each engine and sum those
    (:func:`~rl_contracts.metrics.per_engine_delta`).  ``dict(counters)`` or ``counters.copy()`` is a plain dict,
    for the reference's delta of the totals; a ``FleetCounters`` whose items were changed after aggregation is
    refused by the step functions rather than read two ways.  It pickles with its snapshots (Ray).
    """

    __slots__ = ("_snapshots",)

    def __init__(
        self,
        items: Iterable[tuple[str | tuple[str, int], float]] = (),
        snapshots: tuple[CounterSnapshot, ...] | None = None,
    ) -> None:
        super().__init__(items)
        self._snapshots = snapshots

    @property
    def snapshots(self) -> tuple[CounterSnapshot, ...] | None:
        """The engine snapshots summed, or ``None`` when built without them."""
        return self._snapshots

    def __reduce__(self) -> tuple[Any, ...]:
        return (FleetCounters, (list(self.items()), self._snapshots))


def aggregate_spec_decode_counters(
    worker_metrics: Sequence[CounterSnapshot | WorkerCounters],
) -> FleetCounters:
    """Aggregate vLLM engine counters from multiple workers into one counter dictionary.

    Each report is a :class:`~rl_contracts.metrics.CounterSnapshot` or a worker dict.  For each kept
    ``(name, value)`` pair (unkept pairs are skipped without looking at the value): a scalar is added to
    ``result[name]``; a vector (list or tuple) adds its element ``i`` to ``result[(name, i + 1)]``, so positions
    are 1-based.  Returns a new dict of floats with keys in first-seen order; ``[]`` gives ``{}``.

    The result is a :class:`FleetCounters` (a ``dict`` with these items) that keeps the snapshots, so that the step
    functions take deltas per engine: a report without an engine (a worker dict from ``get_metrics()``, or a
    snapshot built without ``process``) is the engine ``worker_metrics[i]``, named by its position ``i`` and read
    now, so pass the workers in the same order before and after the step.  Two snapshots of one engine (equal
    ``engine``, or one process whose series both carry the same ``engine`` label, e.g. two ``LLM`` objects in one
    process, which vLLM lets read one registry) are refused.

    Raises ``ContractTypeError`` when ``worker_metrics`` is not a sequence (or is a ``str``), a report is neither
    a snapshot nor a mapping, or a key is not a ``str``; ``CounterSnapshotError`` for a value that is not a finite
    number ``>= 0`` (bools included), a name that is a scalar in one report and a vector in another, a sum that
    overflows, or two snapshots of one engine.

    Divergence: the reference sums whatever it receives, including NaN, negative numbers and bools; and its step
    delta of the sums nets a restart on one engine against growth on another (see ``compute_engine_step_metrics``).

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
    _check_distinct_engines(reports)
    now = _instant()
    snapshots: list[CounterSnapshot] = []
    for index, report in enumerate(reports):
        where = f"worker_metrics[{index}]"
        values = _report_values(report, where)
        snapshots.append(_named(report, values, where, now))
        for name, value in values.items():
            _check_same_kind(vector_names, name, value, where)
            if isinstance(value, tuple):
                for position, number in enumerate(value, start=1):
                    result[(name, position)] = result.get((name, position), 0.0) + number
            else:
                result[name] = result.get(name, 0.0) + value
    for key, total in result.items():
        check_sum(key, total, "aggregated")
    return FleetCounters(result.items(), tuple(snapshots))


_last_instant = 0.0


def _instant() -> float:
    """``time.time()``, strictly later than the previous aggregation's in this process (a coarse clock may
    return one value twice), so that the later of two aggregations is always the later instant."""
    global _last_instant
    _last_instant = max(time.time(), _last_instant + 1e-6)
    return _last_instant


def _named(
    report: object, values: Mapping[str, float | tuple[float, ...]], where: str, now: float
) -> CounterSnapshot:
    """``report`` as a snapshot naming its engine: itself, or named by its position ``where`` and read ``now``."""
    if isinstance(report, CounterSnapshot) and report.engine is not None:
        return report
    taken_at = report.taken_at if isinstance(report, CounterSnapshot) else None
    return CounterSnapshot.model_construct(
        values=values,
        engine=EngineIdentity.model_construct(process=where, labels=()),
        taken_at=now if taken_at is None else taken_at,
    )


def _check_distinct_engines(reports: Sequence[object]) -> None:
    """Refuse two snapshots of one engine: equal identities, or one process's ``engine`` label in both."""
    seen: dict[tuple[str, object], int] = {}
    for index, report in enumerate(reports):
        engine = report.engine if isinstance(report, CounterSnapshot) else None
        if engine is None:
            continue
        for claim in engine.claims():
            first = seen.setdefault(claim, index)
            if first != index:
                raise _duplicate(first, index, engine)


def _duplicate(first: int, second: int, engine: EngineIdentity) -> CounterSnapshotError:
    return CounterSnapshotError(
        f"worker_metrics[{first}] and worker_metrics[{second}] are snapshots of the same engine "
        f"({engine.describe()}): one process's series are counted twice. Two vLLM engines in one process share "
        "its one Prometheus registry, which holds the last engine's series only (both report them as "
        'engine="0"), so their counters cannot be told apart: run one engine per process, or data-parallel '
        "engines in one LLM. Snapshots of engines in other processes whose metric objects were shipped here "
        "need the engine's own name: CounterSnapshot.from_vllm_metrics(metrics, process=<rank or actor name>)",
        key=engine.describe(),
    )


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
