"""Invariants of training–inference agreement (SPEC §9.6) over generated logprob batches and route pairs."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rl_contracts.errors import (
    ContractTypeError,
    LogprobContractError,
    LogprobMismatchError,
    RoutedExpertsError,
)
from rl_contracts.logprobs import (
    MismatchBounds,
    MismatchReport,
    check_logprob_agreement,
    importance_weights,
    logprob_mismatch,
    sequence_logprob_error_mask,
    truncated_importance_weights,
)
from rl_contracts.routed_experts import routing_agreement
from rl_contracts.testing import assert_contract_error
from rl_contracts.testing.strategies import (
    LOGPROB_MALFORMATIONS,
    LogprobBatch,
    MalformedLogprobBatch,
    RoutePair,
    logprob_batches,
    malformed_logprob_batches,
    route_pairs,
)

_INDICES = ("worst_sequence", "worst_token", "worst_generation_logprob", "worst_learner_logprob")


def _tensor(value: Any) -> torch.Tensor:
    """A batch input as a float64 ``[B, T]`` tensor (a copy)."""
    tensor = value if isinstance(value, torch.Tensor) else torch.from_numpy(np.array(value))
    tensor = tensor.to(torch.float64).clone()
    return tensor[None] if tensor.ndim == 1 else tensor


def _counted(batch: LogprobBatch) -> torch.Tensor:
    return torch.from_numpy(batch.counted.copy())


def _close(a: MismatchReport, b: MismatchReport, rel: float, skip: tuple[str, ...] = ()) -> None:
    """Every field of two reports equal, floats to ``rel`` relative (an absolute floor of 1e-12 for zeros)."""
    for name in MismatchReport.model_fields:
        if name in skip:
            continue
        x, y = getattr(a, name), getattr(b, name)
        if isinstance(x, float) and isinstance(y, float):
            assert x == pytest.approx(y, rel=rel, abs=1e-12), name
        else:
            assert x == y, name


@given(logprob_batches(max_abs_diff=0.0, min_counted=1))
def test_equal_inputs_give_the_identities(batch: LogprobBatch) -> None:
    """logprob_mismatch(x, x, m): mult_prob_error 1, every KL and the JS divergence 0, nothing outside the band,
    both ESS 1, for every valid x and m with n > 0."""
    report = logprob_mismatch(batch.generation, batch.generation, batch.mask)
    assert report.tokens > 0
    assert report.mult_prob_error == 1.0
    assert report.gen_kl == report.policy_kl == report.js_divergence == 0.0
    assert report.outside_band == 0.0
    assert report.token_ess == report.sequence_ess == 1.0


@given(logprob_batches(min_counted=1), st.sampled_from(["k1", "k2", "k3"]))
def test_every_report_keeps_its_bounds(batch: LogprobBatch, kl_type: Any) -> None:
    """mult_prob_error >= 1, KLs >= 0 (k2, k3), JS >= 0, 0 < token_ess <= 1, p50 <= p95 <= p99 <= max, sequence
    min <= mean <= max, and max |Δ| within the batch's agreement (up to its dtype's rounding)."""
    report = logprob_mismatch(batch.generation, batch.learner, batch.mask, kl_type=kl_type)
    assert report.mult_prob_error is not None
    assert report.mult_prob_error >= 1.0
    assert report.js_divergence is not None
    assert report.js_divergence >= 0.0
    if kl_type != "k1":
        assert report.gen_kl is not None
        assert report.policy_kl is not None
        assert report.gen_kl >= 0.0
        assert report.policy_kl >= 0.0
    assert report.token_ess is not None
    assert report.sequence_ess is not None
    assert 0.0 < report.token_ess <= 1.0
    assert 0.0 < report.sequence_ess <= 1.0
    quantiles = [report.abs_diff_p50, report.abs_diff_p95, report.abs_diff_p99, report.abs_diff_max]
    assert quantiles == sorted(quantiles)  # type: ignore[type-var]
    seq = [report.seq_mult_prob_error_min, report.seq_mult_prob_error_mean, report.seq_mult_prob_error_max]
    assert seq[0] is not None
    assert seq[1] is not None
    assert seq[2] is not None
    assert seq[0] <= seq[1] * (1 + 1e-12)
    assert seq[1] <= seq[2] * (1 + 1e-12)
    assert report.abs_diff_max is not None
    assert report.abs_diff_max <= batch.max_abs_diff + 1e-5


@given(logprob_batches(), st.data())
def test_values_at_uncounted_positions_change_nothing(batch: LogprobBatch, data: st.DataObject) -> None:
    """Replacing every uncounted value of g and l by NaN, ±inf or a positive value leaves the report unchanged."""
    g, lp = _tensor(batch.generation), _tensor(batch.learner)
    off = ~_counted(batch)
    junk = data.draw(st.sampled_from([math.nan, math.inf, -math.inf, 2.0]))
    g[off], lp[off] = junk, -junk if not math.isnan(junk) else junk
    mask = None if batch.mask is None else _counted(batch)
    expected = logprob_mismatch(_tensor(batch.generation), _tensor(batch.learner), mask)
    assert logprob_mismatch(g, lp, mask) == expected


@given(logprob_batches(min_counted=1), st.data())
def test_permuting_sequences_changes_only_where_the_worst_token_is(
    batch: LogprobBatch, data: st.DataObject
) -> None:
    """Permuting sequences leaves every figure (to float rounding of the sums) unchanged; the worst token moves with
    its sequence (the same |Δ| and values, at the permuted row)."""
    g, lp, counted = _tensor(batch.generation), _tensor(batch.learner), _counted(batch)
    order = data.draw(st.permutations(range(g.shape[0])))
    before = logprob_mismatch(g, lp, counted)
    after = logprob_mismatch(g[order], lp[order], counted[order])
    _close(after, before, rel=1e-9, skip=_INDICES)
    assert after.worst_sequence is not None
    assert after.worst_token is not None
    source = order[after.worst_sequence]
    assert (after.worst_generation_logprob, after.worst_learner_logprob) == (
        float(g[source, after.worst_token]),
        float(lp[source, after.worst_token]),
    )
    assert abs(after.worst_learner_logprob - after.worst_generation_logprob) == before.abs_diff_max  # type: ignore[operator]


@given(logprob_batches(dtypes=("float32",), junk_at_padding=False))
def test_float32_and_float64_inputs_of_the_same_values_agree(batch: LogprobBatch) -> None:
    """float32 inputs and float64 inputs holding the same values give the same report to 1e-6 relative."""
    g32, lp32 = _tensor(batch.generation).float(), _tensor(batch.learner).float()
    mask = None if batch.mask is None else _counted(batch)
    _close(logprob_mismatch(g32, lp32, mask), logprob_mismatch(g32.double(), lp32.double(), mask), rel=1e-6)


@given(malformed_logprob_batches())
def test_every_malformation_names_its_input_and_position(case: MalformedLogprobBatch) -> None:
    """Each malformation of §9.1 raises its class naming the input and, for a bad value, the first [b, t]; the same
    holds for the check, the importance weights and the sequence mask."""
    calls: list[Callable[[], object]] = [
        lambda: logprob_mismatch(case.generation, case.learner, case.mask),
        lambda: check_logprob_agreement(case.generation, case.learner, case.mask),
        lambda: importance_weights(case.learner, case.generation, case.mask),
        lambda: sequence_logprob_error_mask(case.generation, case.learner, case.mask, threshold=2.0),
    ]
    for call in calls:
        with pytest.raises(case.error) as info:
            call()
        error = info.value
        assert_contract_error(error)
        if isinstance(error, LogprobContractError):
            assert error.argument == case.argument
            if case.position is not None:
                assert (error.sequence_index, error.token_index) == case.position
        else:
            assert isinstance(error, ContractTypeError)
            assert error.argument == case.argument


@pytest.mark.parametrize("malformation", LOGPROB_MALFORMATIONS)
@settings(max_examples=10)
@given(data=st.data())
def test_each_malformation_is_generated(malformation: Any, data: st.DataObject) -> None:
    """Restricted to one malformation, the strategy yields it and logprob_mismatch rejects it."""
    case = data.draw(malformed_logprob_batches(malformations=[malformation]))
    assert case.malformation == malformation
    with pytest.raises(case.error):
        logprob_mismatch(case.generation, case.learner, case.mask)


@given(logprob_batches(min_counted=1))
def test_a_bound_above_every_figure_passes_and_one_below_fails(batch: LogprobBatch) -> None:
    """The check passes with max_abs_diff at the batch's own maximum and fails just below a positive maximum."""
    report = logprob_mismatch(batch.generation, batch.learner, batch.mask)
    assert report.abs_diff_max is not None
    bounds = MismatchBounds(
        max_mult_prob_error=None, max_abs_mean_diff=None, max_abs_diff=report.abs_diff_max
    )
    assert check_logprob_agreement(batch.generation, batch.learner, batch.mask, bounds=bounds) == report
    if report.abs_diff_max > 0:
        tighter = bounds.model_copy(update={"max_abs_diff": report.abs_diff_max / 2})
        with pytest.raises(LogprobMismatchError):
            check_logprob_agreement(batch.generation, batch.learner, batch.mask, bounds=tighter)


@given(logprob_batches(max_abs_diff=2.0))
def test_token_weights_are_the_ratio_on_counted_tokens_and_zero_elsewhere(batch: LogprobBatch) -> None:
    """importance_weights(level="token") is exp(l - g) on counted tokens and 0 elsewhere."""
    weights = importance_weights(batch.learner, batch.generation, batch.mask)
    g, lp, counted = _tensor(batch.generation), _tensor(batch.learner), _counted(batch)
    weights = weights[None] if weights.ndim == 1 else weights
    expected = torch.exp(lp - g)
    torch.testing.assert_close(weights[counted].double(), expected[counted], rtol=2e-3, atol=0.0)
    assert bool((weights[~counted] == 0).all())


@given(logprob_batches(max_abs_diff=1.0), st.floats(1.0, 3.0), st.floats(0.0, 1.0), st.booleans())
def test_tis_weights_lie_within_the_clamp(
    batch: LogprobBatch, high: float, low: float, with_low: bool
) -> None:
    """ "tis" weights lie in [low or 0, high] at counted tokens."""
    result = truncated_importance_weights(
        batch.learner, batch.generation, batch.mask, kind="tis", high=high, low=low if with_low else None
    )
    weights = result.weights[None] if result.weights.ndim == 1 else result.weights
    counted = weights[_counted(batch)]
    assert bool(((counted >= (low if with_low else 0.0)) & (counted <= high)).all())
    assert 0.0 <= result.out_of_bounds <= 1.0


@given(logprob_batches(max_abs_diff=1.0), st.floats(1.0, 3.0), st.floats(0.0, 1.0))
def test_icepop_weights_are_zero_or_the_raw_ratio_within_the_band(
    batch: LogprobBatch, high: float, low: float
) -> None:
    """ "icepop" weights are either 0 or the raw ratio exp(l - g), which then lies within [low, high]."""
    result = truncated_importance_weights(
        batch.learner, batch.generation, batch.mask, kind="icepop", high=high, low=low
    )
    raw = importance_weights(batch.learner, batch.generation, batch.mask)
    kept = result.weights != 0
    assert bool((result.weights[kept] == raw[kept]).all())
    assert bool(((raw[kept] >= low) & (raw[kept] <= high)).all())


@given(logprob_batches(max_abs_diff=0.5), st.floats(1.0, 1.5), st.floats(0.6, 1.0))
def test_seq_mask_tis_zeroes_exactly_the_sequences_outside_by_geometric_mean(
    batch: LogprobBatch, high: float, low: float
) -> None:
    """ "seq-mask-tis" keeps the raw ratios of sequences whose geometric-mean ratio is within [low, high] and zeroes
    exactly the others."""
    result = truncated_importance_weights(
        batch.learner, batch.generation, batch.mask, kind="seq-mask-tis", high=high, low=low
    )
    raw = importance_weights(batch.learner, batch.generation, batch.mask)
    raw = raw[None] if raw.ndim == 1 else raw
    weights = result.weights[None] if result.weights.ndim == 1 else result.weights
    g, lp, counted = _tensor(batch.generation), _tensor(batch.learner), _counted(batch)
    assert result.kept_sequences is not None
    for row in range(g.shape[0]):
        if not bool(counted[row].any()):
            assert bool(result.kept_sequences[row])
            continue
        geometric = math.exp(float((lp[row] - g[row])[counted[row]].mean()))
        if abs(geometric - low) < 1e-9 or abs(geometric - high) < 1e-9:
            continue  # on the boundary, float rounding decides
        inside = low <= geometric <= high
        assert bool(result.kept_sequences[row]) == inside
        assert torch.equal(weights[row], raw[row] if inside else torch.zeros_like(raw[row]))


@given(route_pairs())
def test_routes_agree_with_themselves_everywhere(pair: RoutePair) -> None:
    """routing_agreement(x, x) is 1 in agreement, exact_order_agreement and every layer (None without pairs)."""
    result = routing_agreement(pair.engine, pair.engine, mask=pair.mask)
    if result.pairs:
        assert result.agreement == result.exact_order_agreement == 1.0
        assert all(value in (1.0, None) for value in result.per_layer)
        assert result.first_disagreement is None
    else:
        assert result.agreement is None


@given(route_pairs(), st.data())
def test_permuting_the_k_slots_leaves_agreement_unchanged(pair: RoutePair, data: st.DataObject) -> None:
    """Permuting the K slots of one input leaves agreement (and every per-layer figure) unchanged."""
    learner = pair.learner
    order = data.draw(st.permutations(range(int(learner.shape[-1]))))
    before = routing_agreement(pair.engine, learner, mask=pair.mask)
    after = routing_agreement(pair.engine, learner[..., order], mask=pair.mask)
    assert (after.agreement, after.per_layer, after.pairs) == (
        before.agreement,
        before.per_layer,
        before.pairs,
    )


@given(route_pairs())
def test_agreement_counts_exactly_the_changed_rows(pair: RoutePair) -> None:
    """agreement is 1 - changed/pairs over counted non-sentinel pairs; the first disagreement is the first changed
    row in row-major order; permuted rows count against exact_order_agreement only."""
    result = routing_agreement(pair.engine, pair.learner, mask=pair.mask)
    layers = int(pair.learner.shape[-2])
    selected = {
        (b, t, layer) for b, t in zip(*np.nonzero(pair.counted), strict=True) for layer in range(layers)
    }
    counted = {key for key in selected if key not in pair.sentinel}
    changed = sorted(key for key in pair.changed if key in counted)
    permuted = {key for key in pair.permuted if key in counted}
    assert result.pairs == len(counted)
    assert result.sentinel_pairs == len(selected & pair.sentinel)
    if counted:
        assert result.agreement == pytest.approx(1 - len(changed) / len(counted))
        assert result.exact_order_agreement == pytest.approx(
            1 - (len(changed) + len(permuted)) / len(counted)
        )
    assert result.first_disagreement == (tuple(int(v) for v in changed[0]) if changed else None)


# --------------------------------------------------------------------------------------------------------------
# The bias bound and the truncated-support diagnosis (issue 30)


@given(logprob_batches(min_counted=1, max_abs_diff=0.3, junk_at_padding=False), st.floats(-2.0, 0.0))
def test_a_constant_learner_offset_moves_mean_diff_by_that_constant(
    batch: LogprobBatch, offset: float
) -> None:
    """Adding c <= 0 to every learner logprob changes mean_diff by exactly c (float rounding aside): the bias is
    signed and linear, which is what lets a shared log S stand out from noise."""
    before = logprob_mismatch(batch.generation, batch.learner, batch.mask)
    shifted = _tensor(batch.learner) + offset
    after = logprob_mismatch(
        _tensor(batch.generation), shifted, None if batch.mask is None else _counted(batch)
    )
    assert before.mean_diff is not None
    assert after.mean_diff == pytest.approx(before.mean_diff + offset, rel=1e-6, abs=1e-6)


@given(logprob_batches(min_counted=1, max_abs_diff=0.5), st.floats(0.0, 0.5))
def test_the_bias_bound_holds_exactly_when_the_absolute_mean_difference_is_within_it(
    batch: LogprobBatch, limit: float
) -> None:
    """With every other bound off, the check raises exactly when |mean_diff| > max_abs_mean_diff, naming it."""
    bounds = MismatchBounds(max_mult_prob_error=None, max_abs_mean_diff=limit)
    report = logprob_mismatch(batch.generation, batch.learner, batch.mask)
    assert report.mean_diff is not None
    if abs(report.mean_diff) > limit:
        with pytest.raises(LogprobMismatchError) as info:
            check_logprob_agreement(batch.generation, batch.learner, batch.mask, bounds=bounds)
        assert info.value.exceeded == ("max_abs_mean_diff",)
    else:
        assert check_logprob_agreement(batch.generation, batch.learner, batch.mask, bounds=bounds) == report


@given(
    logprob_batches(min_counted=1, max_abs_diff=0.0, junk_at_padding=False),
    st.floats(0.5, 0.97),
    st.sampled_from([{"top_p": 0.9}, {"top_k": 20}, {"min_p": 0.1}]),
)
def test_processed_logprobs_over_a_kept_mass_are_diagnosed_as_truncated_support(
    batch: LogprobBatch, kept: float, truncation: dict[str, float]
) -> None:
    """vLLM logprobs renormalised over a kept mass S (g = l - log S at every token) fail the default bounds; with
    truncation stated and processed logprobs the cause is "truncated_support" (unless a one-position shift fits
    better), and with raw logprobs it never is."""
    lp = _tensor(batch.learner).clamp_(max=math.log(kept))
    g = lp - math.log(kept)
    mask = None if batch.mask is None else _counted(batch)
    with pytest.raises(LogprobMismatchError) as info:
        check_logprob_agreement(g, lp, mask, sampling=truncation, logprobs_mode="processed_logprobs")
    assert "max_abs_mean_diff" in (info.value.exceeded or ())
    assert info.value.likely_cause in ("truncated_support", "shift")
    assert_contract_error(info.value)
    with pytest.raises(LogprobMismatchError) as raw:
        check_logprob_agreement(g, lp, mask, sampling=truncation, logprobs_mode="raw_logprobs")
    assert raw.value.likely_cause != "truncated_support"


@given(route_pairs(), st.data())
def test_a_repeated_expert_in_any_route_row_is_refused(pair: RoutePair, data: st.DataObject) -> None:
    """Copying one expert id over another slot of a non-sentinel row (K >= 2) of either input raises
    RoutedExpertsError naming that input and row: rows are sets of distinct experts."""
    engine = _routes(pair.engine)
    if engine.shape[-1] < 2:
        return
    rows = (engine != -1).all(dim=-1).nonzero().tolist()
    if not rows:
        return
    row: list[int] = data.draw(st.sampled_from(rows))
    engine[tuple([*row, 1])] = engine[tuple([*row, 0])]
    with pytest.raises(RoutedExpertsError, match=r"engine_routes\[.*names an expert twice"):
        routing_agreement(engine, _routes(pair.learner), mask=pair.mask)


def _routes(value: Any) -> torch.Tensor:
    """Routes of a pair as a new int64 tensor (the pair holds tensors or numpy arrays)."""
    return (value.clone() if isinstance(value, torch.Tensor) else torch.from_numpy(np.array(value))).to(
        torch.int64
    )
