"""The rollout hand-off and per-engine step metrics, each beside the unchecked code a trainer writes by hand.

Run from the repository root::

    python benchmarks/bench_rollouts.py [--rounds N]

Two pairs of cases, interleaved round by round so that machine noise hits them alike; each figure is the median:

- **rollout_batch**: one GRPO step's ``generate`` output, 64 prompts of 512 tokens with ``n=8`` choices of 1,024
  tokens (512 sequences, 524,288 sampled tokens, vLLM's ``logprobs=0`` mappings, one weight-version span each),
  checked and turned into the learner's tensors, against the **baseline**: the same tensors from a hand-written
  loop with no check (``torch.tensor`` per row, ``pad_sequence``, the sampled log-prob read by indexing);
- **per-engine delta**: ``compute_engine_step_metrics`` of two ``aggregate_spec_decode_counters`` results of 64
  named engine snapshots, against the **baseline**: the same call on plain dicts (the delta of the totals), 20
  calls per round, after the batch rounds.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import torch
from torch.nn.utils.rnn import pad_sequence

from rl_contracts.metrics import CounterSnapshot, aggregate_spec_decode_counters, compute_engine_step_metrics
from rl_contracts.rollouts import rollout_batch

__all__ = ["main"]

ROWS, CHOICES, PROMPT, GENERATED = 64, 8, 512, 1024
ENGINES = 64
CALLS = 20
"""Step-metric calls per round (each is about a millisecond)."""


def _generate_call() -> tuple[list[list[int]], list[SimpleNamespace]]:
    """The learner's prompts and stand-ins for the request outputs of one ``generate`` call."""
    prompts = [[(row * 31 + t) % 50_000 for t in range(PROMPT)] for row in range(ROWS)]
    outputs = []
    for row, prompt in enumerate(prompts):
        choices = []
        for index in range(CHOICES):
            tokens = [(row * 7 + index * 13 + t) % 50_000 for t in range(GENERATED)]
            logprobs = [
                {token: SimpleNamespace(logprob=-0.25 - (t % 7) / 10)} for t, token in enumerate(tokens)
            ]
            choices.append(
                SimpleNamespace(
                    index=index,
                    token_ids=tokens,
                    logprobs=logprobs,
                    finish_reason="length",
                    weight_versions=[("v8", 0, GENERATED)],
                )
            )
        outputs.append(SimpleNamespace(prompt_token_ids=list(prompt), outputs=choices, finished=True))
    return prompts, outputs


def baseline_batch(prompts: list[list[int]], outputs: list[SimpleNamespace]) -> tuple[torch.Tensor, ...]:
    """What a trainer writes without the library: the same tensors, no check at all."""
    ids, masks, logprobs = [], [], []
    for prompt, output in zip(prompts, outputs, strict=True):
        for completion in output.outputs:
            tokens = completion.token_ids
            ids.append(torch.tensor(prompt + tokens))
            masks.append(torch.tensor([0.0] * len(prompt) + [1.0] * len(tokens)))
            values = [entry[token].logprob for token, entry in zip(tokens, completion.logprobs, strict=True)]
            logprobs.append(torch.tensor([0.0] * len(prompt) + values, dtype=torch.float32))
    return (
        pad_sequence(ids, batch_first=True),
        pad_sequence(masks, batch_first=True),
        pad_sequence(logprobs, batch_first=True),
    )


def _fleet(step: int) -> list[CounterSnapshot]:
    return [
        CounterSnapshot.from_worker_dict(
            {
                "vllm:prompt_tokens": 1000.0 * (e + 1) + step * 100,
                "vllm:generation_tokens": 2000.0 * (e + 1) + step * 300,
                "vllm:request_success|finished_reason=stop": 10.0 * e + step,
                "vllm:request_prompt_tokens|sum": 1000.0 * (e + 1) + step * 100,
                "vllm:request_prompt_tokens|count": 10.0 * e + step,
                "vllm:spec_decode_num_accepted_tokens_per_pos": [5.0 * step, 3.0 * step],
            },
            process=f"dp{e}",
            taken_at=float(step),
        )
        for e in range(ENGINES)
    ]


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def _time(call: Callable[[], Any]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def _batch_times(rounds: int) -> tuple[list[float], list[float]]:
    """``rounds`` interleaved timings of ``rollout_batch`` and the baseline on one generate call."""
    prompts, outputs = _generate_call()
    checked: list[float] = []
    unchecked: list[float] = []
    for _ in range(rounds):
        checked.append(_time(lambda: rollout_batch(prompts, outputs, n=CHOICES, allowed_versions={"v8"})))
        unchecked.append(_time(lambda: baseline_batch(prompts, outputs)))
    return checked, unchecked


def main() -> None:
    """Run every case ``--rounds`` times, interleaved, and print the medians and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=7)
    rounds = parser.parse_args().rounds
    checked, unchecked = _batch_times(rounds)
    gc.collect()  # the half million stand-in objects are gone: collections inside the calls below stay cheap
    start, end = aggregate_spec_decode_counters(_fleet(1)), aggregate_spec_decode_counters(_fleet(2))
    plain_start, plain_end = dict(start), dict(end)
    per_engine: list[float] = []
    totals: list[float] = []
    for _ in range(rounds * CALLS):
        per_engine.append(_time(lambda: compute_engine_step_metrics(start, end)))
        totals.append(_time(lambda: compute_engine_step_metrics(plain_start, plain_end)))
    batch, base = _median_ms(checked), _median_ms(unchecked)
    print(f"rollout_batch, {ROWS} x n={CHOICES}, {PROMPT} + {GENERATED} tokens: {batch:.0f} ms")
    print(f"  unchecked hand-written tensors: {base:.0f} ms  (ratio {batch / base:.2f}x)")
    engines, plain = _median_ms(per_engine), _median_ms(totals)
    print(f"compute_engine_step_metrics per engine, {ENGINES} engines: {engines:.2f} ms")
    print(f"  delta of the totals (plain dicts): {plain:.2f} ms  (ratio {engines / plain:.1f}x)")


if __name__ == "__main__":
    main()
