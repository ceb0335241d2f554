"""Restart a real vLLM engine between two counter snapshots, in a process of its own (run by test_metrics_engines).

``python restart_engine.py MODEL_DIR`` builds an ``LLM`` on the tiny dense model, generates, snapshots its counters,
deletes it and builds a new one in the same process (the restart: vLLM's new stat logger replaces the registry's
series with fresh ones), generates a little, snapshots again, and prints one line ``RESULT {json}`` holding both
snapshots and what each generate produced. A process of its own, because building an engine replaces the counters
of every engine of the process, which the tier's session engines need.
"""

from __future__ import annotations

import gc
import json
import sys
from typing import Any

from vllm import LLM, SamplingParams

from rl_contracts.metrics import CounterSnapshot

ENGINE_ARGS: dict[str, Any] = {
    "dtype": "float32",
    "enforce_eager": True,
    "max_model_len": 256,
    "max_num_seqs": 4,
    "seed": 0,
    "disable_log_stats": False,
    "distributed_executor_backend": "uni",
}


def generate(llm: Any, prompts: list[str], max_tokens: int) -> list[int]:
    """Generated token counts of a greedy generate (``ignore_eos``: exactly ``max_tokens`` each)."""
    params = SamplingParams(max_tokens=max_tokens, temperature=0.0, ignore_eos=True)
    return [len(output.outputs[0].token_ids) for output in llm.generate(prompts, params, use_tqdm=False)]


def main(model: str) -> None:
    """Snapshot, restart, snapshot; print the result line."""
    llm = LLM(model=model, **ENGINE_ARGS)
    before_restart = generate(llm, ["warm up the counters", "count these tokens", "and these"], 8)
    start = CounterSnapshot.from_vllm_metrics(llm.get_metrics())
    del llm
    gc.collect()
    llm = LLM(model=model, **ENGINE_ARGS)
    after_restart = generate(llm, ["after the restart"], 4)
    end = CounterSnapshot.from_vllm_metrics(llm.get_metrics())
    result = {
        "start": start.model_dump(mode="json"),
        "end": end.model_dump(mode="json"),
        "before_restart": before_restart,
        "after_restart": after_restart,
    }
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
