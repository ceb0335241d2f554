"""Trainer glue and its property test: a policy-gradient step that checks training–inference agreement, then
corrects what is left of the mismatch with ICEPOP.

The step refuses a batch whose engine and learner logprobs disagree beyond the bounds (a refit that did not apply,
other sampling semantics, a shifted or misaligned batch), with a diagnosis, before any weight is computed.  Padding
may hold anything (NaN included): the mask decides.  Run with ``pytest`` or ``python``.
"""

import math

import torch
from hypothesis import given

from rl_contracts.errors import LogprobContractError, LogprobMismatchError
from rl_contracts.logprobs import (
    MismatchBounds,
    MismatchReport,
    check_logprob_agreement,
    truncated_importance_weights,
)
from rl_contracts.testing.strategies import (
    LogprobBatch,
    MalformedLogprobBatch,
    logprob_batches,
    malformed_logprob_batches,
)

BOUNDS = MismatchBounds(max_mult_prob_error=1.05, max_seq_mult_prob_error=1.1)
LOW, HIGH = 0.5, 2.0  # ICEPOP's band: tokens whose ratio falls outside carry no gradient


def icepop_step(
    generation_logprobs: torch.Tensor,
    learner_logprobs: torch.Tensor,
    mask: torch.Tensor,
    advantages: torch.Tensor,
) -> tuple[float, MismatchReport]:
    """The ICEPOP-weighted policy-gradient loss of one batch, after the agreement check; raises on disagreement."""
    report = check_logprob_agreement(generation_logprobs, learner_logprobs, mask, bounds=BOUNDS)
    correction = truncated_importance_weights(
        learner_logprobs, generation_logprobs, mask, kind="icepop", low=LOW, high=HIGH
    )
    counted = mask.bool()
    learner = torch.where(counted, learner_logprobs, 0.0)  # padding may be NaN: never multiply it
    loss = -(correction.weights * advantages * learner).sum() / max(report.tokens, 1)
    return float(loss), report


def _as_2d(batch: LogprobBatch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The batch as ``[B, T]`` tensors with a float mask (the strategy also draws ``[T]`` inputs and no mask)."""
    generation = batch.generation.reshape(-1, batch.generation.shape[-1])
    mask = torch.ones_like(generation) if batch.mask is None else batch.mask.float().reshape(generation.shape)
    return generation, batch.learner.reshape(generation.shape), mask


def _attempt(generation: object, learner: object, mask: object) -> tuple[float, MismatchReport] | Exception:
    """What the step returns, or the library error it raised."""
    try:
        return icepop_step(generation, learner, mask, torch.ones(1))  # type: ignore[arg-type]
    except (LogprobContractError, TypeError) as error:
        return error


@given(logprob_batches(max_abs_diff=0.04, min_counted=1, containers=("torch",), dtypes=("float32",)))
def test_agreeing_batches_train_with_every_token_kept(batch: LogprobBatch) -> None:
    """Within 0.04 nats every bound holds, no ratio leaves ICEPOP's band, and the loss is finite."""
    generation, learner, mask = _as_2d(batch)
    loss, report = icepop_step(generation, learner, mask, torch.ones_like(generation))
    assert math.isfinite(loss)
    assert report.outside_band == 0.0
    assert report.tokens == int(mask.sum())


@given(logprob_batches(max_abs_diff=3.0, min_counted=1, containers=("torch",), dtypes=("float32",)))
def test_disagreeing_batches_are_refused_with_a_cause(batch: LogprobBatch) -> None:
    """Far apart, the step either trains within the bounds or refuses the batch, naming one of the four causes."""
    outcome = _attempt(*_as_2d(batch))
    if isinstance(outcome, Exception):
        assert isinstance(outcome, LogprobMismatchError)
        assert outcome.likely_cause in ("shift", "uniform", "isolated", "numerics")
        assert outcome.exceeded
        assert set(outcome.exceeded) <= {
            "max_mult_prob_error",
            "max_seq_mult_prob_error",
            "max_abs_mean_diff",
        }
    else:
        loss, report = outcome
        assert math.isfinite(loss)
        assert report.mult_prob_error is not None
        assert report.mult_prob_error <= 1.05


@given(malformed_logprob_batches())
def test_malformed_batches_never_reach_the_loss(case: MalformedLogprobBatch) -> None:
    """A NaN or positive logprob at a counted token, a bad mask or mismatched shapes stop the step at the check."""
    outcome = _attempt(case.generation, case.learner, case.mask)
    assert isinstance(outcome, case.error), f"{case.malformation} was not refused"


if __name__ == "__main__":
    test_agreeing_batches_train_with_every_token_kept()
    test_disagreeing_batches_are_refused_with_a_cause()
    test_malformed_batches_never_reach_the_loss()
