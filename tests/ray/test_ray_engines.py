"""Data-parallel vLLM engines in Ray actors (SPEC §6.3, §6.6): counters gathered from every engine add up.

Two actors each run a real vLLM CPU engine on the tiny dense model (``RL_CONTRACTS_VLLM_MODELS``, built by the
tier). Each actor snapshots its own engine (``CounterSnapshot.from_vllm_metrics`` of ``get_metrics()``, named by the
actor's process); the driver aggregates before and after a generate, and the step metrics, taken per engine, must
equal the tokens and requests both engines produced. Keeping only one engine's report, as the reference's
last-wins collapse does, undercounts. Metric objects shipped to the driver carry no process: snapshots built there
must name the engine (``process=``), or they are refused as one engine read twice.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rl_contracts.errors import CounterSnapshotError
from rl_contracts.metrics import (
    ENGINES_RESET_KEY,
    CounterSnapshot,
    aggregate_spec_decode_counters,
    compute_engine_step_metrics,
    per_engine_delta,
)

pytestmark = pytest.mark.ray


class Engine:
    """One data-parallel vLLM engine (in-process ``LLM``) on the tiny dense model."""

    def __init__(self, model: str) -> None:
        from vllm import LLM

        self.llm = LLM(
            model=model,
            dtype="float32",
            enforce_eager=True,
            max_model_len=256,
            max_num_seqs=4,
            seed=0,
            disable_log_stats=False,
            distributed_executor_backend="uni",
        )

    def metrics(self) -> list[Any]:
        """``LLM.get_metrics()``: vLLM's own metric objects, shipped to the driver as they are."""
        metrics: list[Any] = self.llm.get_metrics()
        return metrics

    def snapshot(self) -> CounterSnapshot:
        """This engine's counters, snapshotted in the actor: the engine is named by this process."""
        return CounterSnapshot.from_vllm_metrics(self.llm.get_metrics())

    def generate(self, prompts: list[str], max_tokens: int) -> list[tuple[int, int, str]]:
        """Generate and return, per request, (prompt tokens, generated tokens, finish reason)."""
        from vllm import SamplingParams

        outputs = self.llm.generate(
            prompts, SamplingParams(max_tokens=max_tokens, temperature=0.0), use_tqdm=False
        )
        return [
            (
                len(output.prompt_token_ids),
                len(output.outputs[0].token_ids),
                str(output.outputs[0].finish_reason),
            )
            for output in outputs
        ]


PROMPTS = [
    ["data parallel engines each count", "their own tokens"],
    ["the learner sums", "every engine's counters", "before it logs"],
]
MAX_TOKENS = 7


@pytest.fixture(scope="module")
def engines(ray_cluster: Any) -> Iterator[list[Any]]:
    """Two ``Engine`` actors (one CPU each) on the tiny dense model."""
    models = os.environ.get("RL_CONTRACTS_VLLM_MODELS")
    if not models:
        pytest.fail("RL_CONTRACTS_VLLM_MODELS is not set; run the tier with `bash .ci/ray_tier`")
    model = Path(models) / "dense"
    assert (model / "config.json").is_file(), f"tiny dense model missing at {model}"
    remote = ray_cluster.remote(num_cpus=1)(Engine)
    actors = [remote.remote(str(model)) for _ in PROMPTS]
    yield actors
    for actor in actors:
        ray_cluster.kill(actor)


def snapshots(ray_cluster: Any, engines: list[Any]) -> list[CounterSnapshot]:
    """Each engine's snapshot, taken in its actor and shipped to the driver."""
    return list(ray_cluster.get([e.snapshot.remote() for e in engines]))


def shipped(ray_cluster: Any, engines: list[Any], *, named: bool) -> list[CounterSnapshot]:
    """``CounterSnapshot.from_vllm_metrics`` of each engine's metric objects, built on the driver; ``named`` passes
    each engine's rank as its process."""
    return [
        CounterSnapshot.from_vllm_metrics(metrics, process=f"rank{rank}" if named else None)
        for rank, metrics in enumerate(ray_cluster.get([e.metrics.remote() for e in engines]))
    ]


def test_dp_engine_counters_aggregate_to_what_both_produced(ray_cluster: Any, engines: list[Any]) -> None:
    """Step metrics over both engines equal the prompt and generated tokens and the requests of both generates."""
    before = snapshots(ray_cluster, engines)
    results = ray_cluster.get(
        [
            engine.generate.remote(prompts, MAX_TOKENS)
            for engine, prompts in zip(engines, PROMPTS, strict=True)
        ]
    )
    after = snapshots(ray_cluster, engines)

    assert len({snapshot.engine for snapshot in after}) == 2  # two actors, two processes
    assert all(
        snapshot.engine is not None and ("engine", "0") in snapshot.engine.labels for snapshot in after
    )
    requests = [request for result in results for request in result]
    prompt_tokens = sum(prompt for prompt, _, _ in requests)
    generated = sum(tokens for _, tokens, _ in requests)
    ok = sum(reason in ("stop", "length") for _, _, reason in requests)
    step = compute_engine_step_metrics(
        aggregate_spec_decode_counters(before), aggregate_spec_decode_counters(after)
    )
    assert step == pytest.approx(
        {
            "vllm/prompt_tokens": float(prompt_tokens),
            "vllm/generation_tokens": float(generated),
            "vllm/prompt_length_mean": prompt_tokens / len(requests),
            "vllm/generation_length_mean": generated / len(requests),
            "vllm/generations_ok": float(ok),
            "vllm/generations_failed": float(len(requests) - ok),
        },
        rel=1e-9,
    )

    last_only = compute_engine_step_metrics(
        aggregate_spec_decode_counters(before[-1:]), aggregate_spec_decode_counters(after[-1:])
    )
    last_prompt_tokens = sum(prompt for prompt, _, _ in results[-1])
    assert last_only["vllm/prompt_tokens"] == float(last_prompt_tokens) < step["vllm/prompt_tokens"]
    assert ENGINES_RESET_KEY not in step


def test_metric_objects_shipped_to_the_driver_need_the_engine_named(
    ray_cluster: Any, engines: list[Any]
) -> None:
    """Built on the driver, both engines' snapshots name the driver's process and engine 0: refused as one
    engine read twice; named by rank, they aggregate to the same counters as the actors' own snapshots."""
    with pytest.raises(CounterSnapshotError, match="same engine"):
        aggregate_spec_decode_counters(shipped(ray_cluster, engines, named=False))
    by_rank = aggregate_spec_decode_counters(shipped(ray_cluster, engines, named=True))
    in_actors = aggregate_spec_decode_counters(snapshots(ray_cluster, engines))
    assert by_rank == in_actors
    assert [engine.process for engine in per_engine_delta(by_rank, by_rank).engines] == ["rank0", "rank1"]
