"""Counter snapshots (SPEC §6.3, §6.4, §6.6) gathered from several Ray actors, as a DP trainer gathers them.

Each actor stands for one DP leader worker with its own counters; snapshots cross the object store as pydantic
models. The aggregate must equal the hand sum of the raw counters, and step metrics the hand-computed increments.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from rl_contracts.metrics import (
    ENGINES_RESET_KEY,
    CounterSnapshot,
    aggregate_spec_decode_counters,
    compute_engine_step_metrics,
    per_engine_delta,
)

pytestmark = pytest.mark.ray


class CounterWorker:
    """A DP worker's engine counters: reports a snapshot, and advances them as a step of generation would."""

    def __init__(self, counters: dict[str, Any]) -> None:
        self.counters = dict(counters)

    def snapshot(self, process: str | None = None) -> CounterSnapshot:
        """This worker's kept counters as a ``CounterSnapshot`` (unkept keys dropped), its engine named
        ``process`` when given."""
        return CounterSnapshot.from_worker_dict(self.counters, process=process)

    def advance(self, increments: dict[str, float]) -> None:
        """Add ``increments`` to the scalar counters."""
        for key, value in increments.items():
            self.counters[key] = self.counters.get(key, 0.0) + value


PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos"
WORKERS: list[dict[str, Any]] = [
    {
        "vllm:prompt_tokens": 100.0 * (i + 1),
        "vllm:generation_tokens": 40.0 + i,
        "vllm:spec_decode_num_drafts": 10.0 * i,
        PER_POS: [5.0 * (i + 1), float(i), 1.0][: 2 + i % 2],
        "vllm:request_success|finished_reason=stop": float(i),
        "vllm:num_requests_running": 3.0,  # a gauge: not kept
        "other_metric": 7.0,
    }
    for i in range(4)
]


@pytest.fixture(scope="module")
def workers(ray_cluster: Any) -> Iterator[list[Any]]:
    """Four ``CounterWorker`` actors, one per entry of ``WORKERS``."""
    remote = ray_cluster.remote(num_cpus=0)(CounterWorker)
    actors = [remote.remote(counters) for counters in WORKERS]
    yield actors
    for actor in actors:
        ray_cluster.kill(actor)


def hand_sum(reports: list[dict[str, Any]]) -> dict[Any, float]:
    """The aggregate computed by hand: kept scalars summed, vectors summed per 1-based position."""
    total: dict[Any, float] = {}
    for report in reports:
        for key, value in report.items():
            if key in ("vllm:num_requests_running", "other_metric"):
                continue
            if isinstance(value, list):
                for position, item in enumerate(value, start=1):
                    total[(key, position)] = total.get((key, position), 0.0) + item
            else:
                total[key] = total.get(key, 0.0) + value
    return total


def test_snapshots_from_actors_aggregate_to_the_hand_sum(ray_cluster: Any, workers: list[Any]) -> None:
    """Snapshots returned by four actors equal the local ones and aggregate to the hand sum of their counters."""
    snapshots = ray_cluster.get([worker.snapshot.remote() for worker in workers])
    assert all(type(snapshot) is CounterSnapshot for snapshot in snapshots)
    assert snapshots == [CounterSnapshot.from_worker_dict(counters) for counters in WORKERS]
    assert "other_metric" not in snapshots[0].values
    assert aggregate_spec_decode_counters(snapshots) == hand_sum(WORKERS)
    assert aggregate_spec_decode_counters([s.to_worker_dict() for s in snapshots]) == hand_sum(WORKERS)


def test_step_metrics_over_actors_count_every_worker(ray_cluster: Any, workers: list[Any]) -> None:
    """Advancing each actor by a known step gives step metrics equal to the sum of the increments."""
    start = aggregate_spec_decode_counters(ray_cluster.get([worker.snapshot.remote() for worker in workers]))
    increments = [
        {
            "vllm:prompt_tokens": 10.0 * (i + 1),
            "vllm:generation_tokens": 3.0,
            "vllm:request_success|finished_reason=stop": 1.0,
        }
        for i in range(len(workers))
    ]
    ray_cluster.get([worker.advance.remote(step) for worker, step in zip(workers, increments, strict=True)])
    end = aggregate_spec_decode_counters(ray_cluster.get([worker.snapshot.remote() for worker in workers]))
    step = compute_engine_step_metrics(start, end)
    assert step["vllm/prompt_tokens"] == sum(item["vllm:prompt_tokens"] for item in increments)
    assert step["vllm/generation_tokens"] == 3.0 * len(workers)
    assert step["vllm/generations_ok"] == float(len(workers))
    assert step["vllm/generations_failed"] == 0.0


def test_a_restarted_actor_is_a_reset_and_the_others_still_count(ray_cluster: Any) -> None:
    """Workers named by rank: one killed and started again with fresh counters between the snapshots is reported
    as a reset, while the other workers' increments are summed; the totals' delta would fold it in."""
    remote = ray_cluster.remote(num_cpus=0)(CounterWorker)
    actors = [remote.remote(counters) for counters in WORKERS]
    try:
        start = aggregate_spec_decode_counters(
            ray_cluster.get([actor.snapshot.remote(f"rank{i}") for i, actor in enumerate(actors)])
        )
        ray_cluster.get([actor.advance.remote({"vllm:generation_tokens": 5.0}) for actor in actors])
        ray_cluster.kill(actors[1])
        actors[1] = remote.remote({"vllm:generation_tokens": 30.0})  # restarted: its counters begin again
        end = aggregate_spec_decode_counters(
            ray_cluster.get([actor.snapshot.remote(f"rank{i}") for i, actor in enumerate(actors)])
        )
        assert start.snapshots is not None
        assert start.snapshots[0].taken_at is not None
        step = compute_engine_step_metrics(start, end)
        assert step["vllm/generation_tokens"] == 5.0 * (len(WORKERS) - 1)
        assert step[ENGINES_RESET_KEY] == 1.0
        [reset] = per_engine_delta(start, end).resets
        assert (reset.engine.process, reset.key, reset.start, reset.end) == (
            "rank1",
            "vllm:generation_tokens",
            41.0,
            30.0,
        )
        totals = compute_engine_step_metrics(dict(start), dict(end))
        assert totals["vllm/generation_tokens"] == 4.0  # 170 - 166: a plausible wrong number
    finally:
        for actor in actors:
            ray_cluster.kill(actor)
