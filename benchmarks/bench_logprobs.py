"""Speed and memory of the training–inference agreement figures and ICEPOP weights, against the reference's block.

Run ``python benchmarks/bench_logprobs.py`` (``--repeat N`` runs per block, ``--threads N`` torch threads).  Inputs:
vLLM's and the learner's logprobs of a ``[512, 4096]`` float32 batch on the CPU, differing by noise of 0.01 nats,
with NeMo RL's float32 ``token_mask * sample_mask`` (responses of random lengths, the rest padding).

Compared, in one run:

- ``logprob_mismatch`` (the full report of SPEC §9.2: 25 figures, quantiles by selection, float64 accumulation,
  the input checks of §9.1) against a hand-written torch computation of the reference's metric block
  (``token_mult_prob_error``, ``gen_kl_error``, ``policy_kl_error``, ``js_divergence_error``, as NeMo RL computes
  them in float32 with ``masked_mean``);
- ``truncated_importance_weights(kind="icepop")`` (with its checks and the overflow error) against the reference's
  ICEPOP weights (``exp``, ``nan_to_num``, the band, ``is_oob_ratio``).

Each time is the median over three rotating blocks of per-block medians.  Peak extra memory is measured in a fresh
subprocess per candidate: the high-water mark of the resident set (``VmHWM``) after one call, minus its value after
the inputs were built (in place, no temporaries) and the code path warmed on a small batch, with glibc's mmap
threshold fixed at 128 KiB (``FIXED_MMAP_THRESHOLD``) so that freed buffers are returned at once.

Goals: the full report <= 2.5x the reference block; the weights <= 1.5x the reference's; peak extra memory <= 4
input-sized float64 buffers (4 x 16.8 MB).
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import subprocess
import sys
from collections.abc import Callable

import torch
from timing import median_seconds

from rl_contracts.logprobs import logprob_mismatch, truncated_importance_weights

SHAPE = (512, 4096)
FIXED_MMAP_THRESHOLD = {"MALLOC_MMAP_THRESHOLD_": "131072"}
"""glibc setting of the memory subprocess: a fixed threshold keeps every large buffer in its own mapping, returned
on free, so the high-water mark counts live buffers only (glibc's dynamic threshold would keep freed 16.8 MB
buffers on the heap and count them again)."""
LOW, HIGH = 0.5, 2.0
_LOG2 = math.log(2.0)


def make_inputs(shape: tuple[int, int] = SHAPE) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(generation, learner, mask)`` built in place, so that building them leaves no memory peak behind."""
    generator = torch.Generator().manual_seed(0)
    rows, columns = shape
    generation = torch.empty(shape).uniform_(-8.0, 0.0, generator=generator)
    learner = generation.clone()
    for start in range(0, rows, 32):  # 0.01-nat noise, in small chunks
        chunk = learner[start : start + 32]
        chunk.add_(torch.randn(chunk.shape, generator=generator), alpha=0.01).clamp_(max=0.0)
    mask = torch.ones(shape)
    lengths = torch.randint(columns // 4, columns + 1, (rows,), generator=generator)
    for row, length in enumerate(lengths.tolist()):
        mask[row, length:] = 0.0
        generation[row, length:] = 0.0  # NeMo RL pads with 0
        learner[row, length:] = 0.0
    return generation, learner, mask


def _masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return (values * mask).sum() / mask.sum()


def _calculate_kl(logprobs: torch.Tensor, logprobs_reference: torch.Tensor) -> torch.Tensor:
    """NeMo RL's ``calculate_kl`` with ``kl_type="k3"`` and no clamping."""
    log_ratio = logprobs_reference - logprobs
    return torch.exp(log_ratio) - 1 - log_ratio


def reference_metrics(
    generation: torch.Tensor, learner: torch.Tensor, mask: torch.Tensor
) -> tuple[float, ...]:
    """The reference's mismatch metric block, written out: mult_prob_error, gen_kl, policy_kl, js_divergence."""
    lp_error = torch.abs(generation - learner)
    mult_prob_error = _masked_mean(torch.exp(lp_error * mask), mask)
    gen_kl = _masked_mean(_calculate_kl(generation, learner), mask)
    policy_kl = _masked_mean(_calculate_kl(learner, generation), mask)
    mixture = torch.logaddexp(learner, generation) - _LOG2
    js = _masked_mean(0.5 * _calculate_kl(mixture, learner) + 0.5 * _calculate_kl(mixture, generation), mask)
    return tuple(float(value) for value in (mult_prob_error, gen_kl, policy_kl, js))


def reference_icepop(
    learner: torch.Tensor, generation: torch.Tensor, mask: torch.Tensor
) -> tuple[torch.Tensor, float]:
    """The reference's ICEPOP weights and ``is_oob_ratio``."""
    weights = torch.exp(learner - generation)
    weights = torch.nan_to_num(weights, nan=0.0, posinf=0.0, neginf=0.0)
    kept = (weights >= LOW) & (weights <= HIGH)
    out_of_bounds = float(_masked_mean((~kept).float(), mask))
    return torch.where(kept, weights, torch.zeros_like(weights)), out_of_bounds


def candidates(
    generation: torch.Tensor, learner: torch.Tensor, mask: torch.Tensor
) -> dict[str, Callable[[], object]]:
    """The four calls the benchmark times, on one batch."""
    return {
        "reference metric block": lambda: reference_metrics(generation, learner, mask),
        "logprob_mismatch": lambda: logprob_mismatch(generation, learner, mask),
        "reference ICEPOP weights": lambda: reference_icepop(learner, generation, mask),
        "truncated_importance_weights": lambda: truncated_importance_weights(
            learner, generation, mask, kind="icepop", high=HIGH, low=LOW
        ),
    }


def block_medians(
    functions: dict[str, Callable[[], object]], repeat: int, rounds: int = 3
) -> dict[str, float]:
    """The median over ``rounds`` rotating blocks of each function's per-block median."""
    blocks: dict[str, list[float]] = {name: [] for name in functions}
    for _ in range(rounds):
        for name, function in functions.items():
            blocks[name].append(median_seconds(function, repeat))
    return {name: statistics.median(values) for name, values in blocks.items()}


def peak_extra_bytes(name: str) -> int:
    """Run this file with ``--memory NAME`` in a fresh interpreter and return the peak extra bytes it reports."""
    result = subprocess.run(
        [sys.executable, __file__, "--memory", name],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
        env={**os.environ, **FIXED_MMAP_THRESHOLD},
    )
    return int(result.stdout.strip().splitlines()[-1])


def _high_water_mark() -> int:
    """This process's peak resident set, ``VmHWM`` of ``/proc/self/status``, in bytes (Linux).

    Not ``ru_maxrss``: Linux carries the parent's peak into an exec'd child's ``ru_maxrss``, which would hide the
    child's own growth; ``VmHWM`` belongs to the child's fresh address space.
    """
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status: the memory figures need Linux")


def measure_memory(name: str) -> int:
    """In this process: the peak resident-set growth of one call of candidate ``name`` on a freshly built batch."""
    small = candidates(*make_inputs((8, 64)))
    small[name]()  # warm the code path (lazy imports, thread pools) on a tiny batch
    inputs = make_inputs()
    call = candidates(*inputs)[name]
    before = _high_water_mark()
    result = call()
    after = _high_water_mark()
    del result
    return after - before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="runs per block (default 7)")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's own choice)")
    parser.add_argument("--memory", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.memory:
        print(measure_memory(args.memory))
        return
    generation, learner, mask = make_inputs()
    functions = candidates(generation, learner, mask)
    report = logprob_mismatch(generation, learner, mask)
    expected = reference_metrics(generation, learner, mask)
    ours = (report.mult_prob_error, report.gen_kl, report.policy_kl, report.js_divergence)
    weights, reference_weights = (
        truncated_importance_weights(learner, generation, mask, kind="icepop", high=HIGH, low=LOW),
        reference_icepop(learner, generation, mask),
    )
    counted = mask.bool()
    print(
        f"machine: {platform.machine()}, {torch.get_num_threads()} torch threads, torch {torch.__version__}"
    )
    print(
        f"batch: {SHAPE[0]} x {SHAPE[1]} float32, {report.tokens} counted tokens ({report.tokens / mask.numel():.0%})"
    )
    print(
        "figures (ours vs the reference's float32 block): "
        + ", ".join(
            f"{name} {a:.9g} vs {b:.9g}"
            for name, a, b in zip(("mult", "gen_kl", "policy_kl", "js"), ours, expected, strict=True)
        )
    )
    same = bool(torch.equal(weights.weights[counted], reference_weights[0][counted]))
    print(
        f"ICEPOP weights equal the reference's at counted tokens: {same}; out_of_bounds {weights.out_of_bounds:.6g} vs {reference_weights[1]:.6g}"
    )
    times = block_medians(functions, args.repeat)
    print(f"\n{'case':32} {'time':>10}")
    for name, seconds in times.items():
        print(f"{name:32} {seconds * 1e3:8.1f} ms")
    report_ratio = times["logprob_mismatch"] / times["reference metric block"]
    weights_ratio = times["truncated_importance_weights"] / times["reference ICEPOP weights"]
    print(f"\nfull report / reference block: {report_ratio:.2f}x (goal <= 2.5x)")
    print(f"ICEPOP weights / reference weights: {weights_ratio:.2f}x (goal <= 1.5x)")
    buffer = SHAPE[0] * SHAPE[1] * 8
    print(
        f"\npeak extra memory (VmHWM growth of one call, fresh process; 1 float64 buffer = {buffer / 1e6:.1f} MB):"
    )
    for name in functions:
        extra = peak_extra_bytes(name)
        print(f"{name:32} {extra / 1e6:8.1f} MB = {extra / buffer:.2f} float64 buffers")
    print("goal: logprob_mismatch and truncated_importance_weights <= 4 float64 buffers")


if __name__ == "__main__":
    main()
