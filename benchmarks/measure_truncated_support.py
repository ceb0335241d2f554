"""Measurements behind ``MismatchBounds.max_abs_mean_diff``: healthy bf16 noise against a truncated support.

Run ``python benchmarks/measure_truncated_support.py`` (``--vocab``, ``--rows``, ``--columns``, ``--seeds``).  Each
scenario draws a batch of next-token distributions (logits ``N(0, 1)`` times a per-position sharpness drawn from
``[4, 10]``: a mean entropy of about 1.5 nats, a top-20 mass of about 0.97, as RL policies sample), gives the
engine and the learner their own copy (each with Gaussian logit noise of the scenario's size; the engine's logits
rounded to bfloat16 before its softmax, the learner's softmax in float32), samples one token per position from the
engine's distribution (truncated by the scenario's top-p/top-k/min-p and renormalised over the kept support, as
vLLM's processed logprobs are), and compares the engine's processed logprob of the sampled token with the learner's
full-vocabulary log-softmax; both probabilities are rounded through bfloat16.  It prints, per scenario and over
``--seeds`` batches, the largest ``mult_prob_error`` and ``|mean_diff|``, the mean kept mass and what
``check_logprob_agreement`` with the default bounds says; then the healthy scenarios again on batches of 64 tokens
(the smallest batch a bias bound has to live with).

Not a test: it prints figures.  ``tests/test_logprobs.py`` asserts the two decisive cases (bf16 noise passes, a
kept mass of 0.95 fails with ``likely_cause == "truncated_support"``).
"""

from __future__ import annotations

import argparse
import math
from typing import NamedTuple

import torch

from rl_contracts.errors import LogprobMismatchError
from rl_contracts.logprobs import MismatchBounds, check_logprob_agreement, logprob_mismatch


class Scenario(NamedTuple):
    name: str
    logit_noise: float
    top_p: float = 1.0
    top_k: int = -1
    min_p: float = 0.0


SCENARIOS = (
    Scenario("bf16 rounding only", 0.0),
    Scenario("bf16 + logit noise 0.005", 0.005),
    Scenario("bf16 + logit noise 0.01", 0.01),
    Scenario("bf16 + logit noise 0.02", 0.02),
    Scenario("bf16 + logit noise 0.04", 0.04),
    Scenario("top_p 0.99 (+ noise 0.02)", 0.02, top_p=0.99),
    Scenario("top_p 0.98 (+ noise 0.02)", 0.02, top_p=0.98),
    Scenario("top_p 0.95 (+ noise 0.02)", 0.02, top_p=0.95),
    Scenario("top_p 0.9 (+ noise 0.02)", 0.02, top_p=0.9),
    Scenario("top_k 50 (+ noise 0.02)", 0.02, top_k=50),
    Scenario("top_k 20 (+ noise 0.02)", 0.02, top_k=20),
    Scenario("min_p 0.05 (+ noise 0.02)", 0.02, min_p=0.05),
)


def kept_support(logprobs: torch.Tensor, scenario: Scenario) -> torch.Tensor:
    """The tokens sampling keeps, per row: top-k, then the smallest top set of mass >= top-p, then min-p."""
    keep = torch.ones_like(logprobs, dtype=torch.bool)
    if scenario.top_k > 0:
        kth = logprobs.topk(scenario.top_k, dim=-1).values[:, -1:]
        keep &= logprobs >= kth
    if scenario.top_p < 1.0:
        ordered, order = logprobs.masked_fill(~keep, -math.inf).sort(dim=-1, descending=True)
        probabilities = ordered.exp()
        before = probabilities.cumsum(dim=-1) - probabilities
        keep &= torch.zeros_like(keep).scatter(-1, order, before < scenario.top_p)
    if scenario.min_p > 0.0:
        keep &= logprobs >= logprobs.max(dim=-1, keepdim=True).values + math.log(scenario.min_p)
    return keep


def bf16_probability(logprobs: torch.Tensor) -> torch.Tensor:
    """A log-probability whose probability is rounded through bfloat16."""
    return logprobs.exp().to(torch.bfloat16).to(torch.float32).log()


def simulate(
    scenario: Scenario, *, rows: int, columns: int, vocab: int, seed: int
) -> tuple[torch.Tensor, ...]:
    """``(vLLM processed logprobs, learner logprobs, kept mass)`` of one simulated ``[rows, columns]`` batch."""
    generator = torch.Generator().manual_seed(seed)
    n = rows * columns
    sharpness = torch.empty(n, 1).uniform_(4.0, 10.0, generator=generator)
    logits = torch.randn(n, vocab, generator=generator) * sharpness

    def copy() -> torch.Tensor:
        return logits + scenario.logit_noise * torch.randn(n, vocab, generator=generator)

    engine = copy().to(torch.bfloat16).to(torch.float32).log_softmax(dim=-1)
    learner = copy().log_softmax(dim=-1)
    keep = kept_support(engine, scenario)
    mass = engine.exp().mul(keep).sum(dim=-1)
    processed = engine.masked_fill(~keep, -math.inf).log_softmax(dim=-1)
    tokens = torch.multinomial(processed.exp(), 1, generator=generator)
    g = bf16_probability(processed.gather(-1, tokens)).view(rows, columns)
    lp = bf16_probability(learner.gather(-1, tokens)).view(rows, columns)
    return g, lp, mass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocab", type=int, default=4096)
    parser.add_argument("--rows", type=int, default=16)
    parser.add_argument("--columns", type=int, default=128)
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    bound = MismatchBounds().max_abs_mean_diff
    print(
        f"vocab {args.vocab}, {args.rows} x {args.columns} tokens per batch, {args.seeds} batches per scenario; "
        f"default bounds: max_mult_prob_error {MismatchBounds().max_mult_prob_error}, max_abs_mean_diff {bound}"
    )
    table(SCENARIOS, rows=args.rows, columns=args.columns, vocab=args.vocab, seeds=args.seeds)
    print(f"healthy scenarios on batches of 1 x 64 tokens, {4 * args.seeds} batches each:")
    healthy = tuple(
        scenario for scenario in SCENARIOS if not (scenario.top_p < 1 or scenario.top_k > 0 or scenario.min_p)
    )
    table(healthy, rows=1, columns=64, vocab=args.vocab, seeds=4 * args.seeds)


def table(scenarios: tuple[Scenario, ...], *, rows: int, columns: int, vocab: int, seeds: int) -> None:
    """One line per scenario: kept mass, the worst figures over ``seeds`` batches, the check's outcomes."""
    print(f"{'scenario':<28} {'kept mass':>9} {'max mult_prob_error':>20} {'max |mean_diff|':>16}  check")
    for scenario in scenarios:
        worst_mult, worst_bias, masses, outcomes = 0.0, 0.0, [], set()
        for seed in range(seeds):
            g, lp, mass = simulate(scenario, rows=rows, columns=columns, vocab=vocab, seed=seed)
            report = logprob_mismatch(g, lp)
            assert report.mult_prob_error is not None
            assert report.mean_diff is not None
            worst_mult = max(worst_mult, report.mult_prob_error)
            worst_bias = max(worst_bias, abs(report.mean_diff))
            masses.append(float(mass.mean()))
            try:
                check_logprob_agreement(
                    g,
                    lp,
                    sampling={"top_p": scenario.top_p, "top_k": scenario.top_k, "min_p": scenario.min_p},
                )
                outcomes.add("pass")
            except LogprobMismatchError as error:
                outcomes.add(f"fail ({error.likely_cause})")
        kept = sum(masses) / len(masses)
        print(
            f"{scenario.name:<28} {kept:>9.4f} {worst_mult:>20.4f} {worst_bias:>16.4f}  {', '.join(sorted(outcomes))}"
        )


if __name__ == "__main__":
    main()
