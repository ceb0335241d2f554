"""Per-engine step metrics on real vLLM engines (issue 24): two engines in one process, a restart, swapped snapshots.

- Two ``LLM`` objects in one process (the tier's session engines): vLLM keeps one Prometheus registry per process
  and the engine built last replaces the other's series, so both ``get_metrics()`` report the same counters as
  ``engine="0"``. Summing them undercounts what the two generates produced; aggregation refuses them.
- An engine rebuilt in its process between two snapshots (``restart_engine.py``, in a process of its own): its
  counters went backwards, so the step is a reset, never a plausible idle step.
- Start and end snapshots passed in the wrong order raise.

Expected values come from the outputs vLLM returned, never from the code under test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from vllm import SamplingParams

from rl_contracts.errors import CounterSnapshotError
from rl_contracts.metrics import (
    ENGINES_RESET_KEY,
    CounterSnapshot,
    aggregate_spec_decode_counters,
    compute_engine_step_metrics,
    compute_spec_decode_metrics,
    per_engine_delta,
    this_process,
)

pytestmark = pytest.mark.vllm

RESTART_SCRIPT = Path(__file__).with_name("restart_engine.py")
RESTART_TIMEOUT_S = 400


def _generate(llm: Any, prompts: list[str], max_tokens: int) -> tuple[int, int, int]:
    """Prompt tokens, generated tokens and requests of one greedy generate (``ignore_eos``)."""
    params = SamplingParams(max_tokens=max_tokens, temperature=0.0, ignore_eos=True)
    outputs = llm.generate(prompts, params, use_tqdm=False)
    prompt = sum(len(output.prompt_token_ids) for output in outputs)
    generated = sum(len(output.outputs[0].token_ids) for output in outputs)
    return prompt, generated, len(outputs)


def test_two_engines_in_one_process_are_refused_not_undercounted(moe_llm: Any, spec_llm: Any) -> None:
    """Both in-process engines report the registry of the one built last; the sum of their snapshots is not what
    the two generates produced, and aggregation refuses the pair as one engine read twice."""
    engines = (moe_llm, spec_llm)
    before = [CounterSnapshot.from_vllm_metrics(llm.get_metrics()) for llm in engines]
    produced = [_generate(moe_llm, ["the moe engine counts", "its own tokens", "here"], 6)]
    produced.append(_generate(spec_llm, ["the dense engine too"], 5))
    after = [CounterSnapshot.from_vllm_metrics(llm.get_metrics()) for llm in engines]

    assert after[0].values == after[1].values  # one registry: the same series from both engines
    assert after[0].engine == after[1].engine
    assert after[0].engine is not None
    assert after[0].engine.process == this_process()
    assert ("engine", "0") in after[0].engine.labels
    for snapshots in (before, after):
        with pytest.raises(CounterSnapshotError, match="same engine") as info:
            aggregate_spec_decode_counters(snapshots)
        assert "one Prometheus registry" in info.value.message

    # What summing them without identities (the reference's worker dicts) reports, against what was produced:
    summed = compute_engine_step_metrics(
        aggregate_spec_decode_counters([s.to_worker_dict() for s in before]),
        aggregate_spec_decode_counters([s.to_worker_dict() for s in after]),
    )
    true_generated = float(sum(generated for _, generated, _ in produced))
    true_requests = float(sum(requests for _, _, requests in produced))
    assert summed["vllm/generation_tokens"] == 2 * produced[1][1] != true_generated
    assert summed["vllm/generations_ok"] == 2 * produced[1][2] != true_requests


def test_swapped_snapshots_of_a_real_engine_raise(spec_llm: Any) -> None:
    """Snapshots around a real generate, passed end first, raise instead of reading as an idle step."""
    before = aggregate_spec_decode_counters([CounterSnapshot.from_vllm_metrics(spec_llm.get_metrics())])
    prompt, generated, requests = _generate(spec_llm, ["swap the snapshots", "and see"], 4)
    after = aggregate_spec_decode_counters([CounterSnapshot.from_vllm_metrics(spec_llm.get_metrics())])
    step = compute_engine_step_metrics(before, after)
    assert step["vllm/prompt_tokens"] == float(prompt)
    assert step["vllm/generation_tokens"] == float(generated)
    assert step["vllm/generations_ok"] == float(requests)
    assert ENGINES_RESET_KEY not in step
    for function in (compute_engine_step_metrics, compute_spec_decode_metrics):
        with pytest.raises(CounterSnapshotError, match="swapped"):
            function(after, before)
    legacy = compute_engine_step_metrics(dict(after), dict(before))
    assert legacy.get("vllm/generations_ok") == 0.0  # the fault of issue 24: a plausible idle step


@pytest.fixture(scope="module")
def restarted() -> dict[str, Any]:
    """The result line of ``restart_engine.py`` on the tiny dense model (an engine rebuilt between snapshots)."""
    completed = subprocess.run(
        [sys.executable, str(RESTART_SCRIPT), str(Path(os.environ["RL_CONTRACTS_VLLM_MODELS"]) / "dense")],
        capture_output=True,
        text=True,
        timeout=RESTART_TIMEOUT_S,
        env=dict(os.environ),
        check=False,
    )
    lines = [line for line in completed.stdout.splitlines() if line.startswith("RESULT ")]
    assert completed.returncode == 0, completed.stderr[-4000:]
    assert len(lines) == 1, completed.stdout[-4000:]
    result: dict[str, Any] = json.loads(lines[0].removeprefix("RESULT "))
    return result


def test_an_engine_restart_between_snapshots_is_a_reset(restarted: dict[str, Any]) -> None:
    """The rebuilt engine's counters went backwards: the step reports one reset and no token or outcome value,
    where the delta of totals reports a plausible idle step."""
    start = CounterSnapshot.model_validate(restarted["start"])
    end = CounterSnapshot.model_validate(restarted["end"])
    assert start.engine == end.engine  # the same process, the same labels: the same engine, restarted
    assert restarted["before_restart"] == [8, 8, 8]
    assert restarted["after_restart"] == [4]
    assert end.values["vllm:generation_tokens"] == 4.0
    assert start.values["vllm:generation_tokens"] == 24.0

    before, after = aggregate_spec_decode_counters([start]), aggregate_spec_decode_counters([end])
    assert compute_engine_step_metrics(before, after) == {ENGINES_RESET_KEY: 1.0}
    assert compute_spec_decode_metrics(before, after)[ENGINES_RESET_KEY] == 1.0
    [reset] = per_engine_delta(before, after).resets
    assert reset.engine == start.engine
    assert reset.start is not None
    assert reset.end is not None
    assert reset.end < reset.start
    legacy = compute_engine_step_metrics(dict(before), dict(after))
    assert "vllm/generation_tokens" not in legacy
