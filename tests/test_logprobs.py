"""Training–inference agreement (SPEC §9.1–9.4): examples, every error case, and the reference's semantics."""

from __future__ import annotations

import math
import pickle
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch
from pydantic import ValidationError

from rl_contracts import logprobs
from rl_contracts.errors import (
    ContractTypeError,
    LogprobContractError,
    LogprobMismatchError,
    SamplingParamsError,
)
from rl_contracts.logprobs import (
    DEFAULT_MAX_ABS_MEAN_DIFF,
    MismatchBounds,
    MismatchReport,
    check_logprob_agreement,
    importance_weights,
    logprob_mismatch,
    sequence_logprob_error_mask,
    truncated_importance_weights,
)
from rl_contracts.testing import assert_contract_error
from rl_contracts.vllm_arguments import SamplingSettings

NAN, INF = math.nan, math.inf


def _batch(seed: int = 0, shape: tuple[int, int] = (5, 9), noise: float = 0.1) -> tuple[torch.Tensor, ...]:
    """Engine logprobs, learner logprobs within ``noise`` of them, and a 0/1 float mask with some zeros."""
    generator = torch.Generator().manual_seed(seed)
    g = -torch.rand(shape, generator=generator) * 4
    lp = (g + torch.randn(shape, generator=generator) * noise).clamp(max=0.0)
    mask = (torch.rand(shape, generator=generator) < 0.8).float()
    mask[:, 0] = 1.0
    return g, lp, mask


def _k1(x: torch.Tensor) -> torch.Tensor:
    return -x


def _k2(x: torch.Tensor) -> torch.Tensor:
    return x * x / 2


def _k3(x: torch.Tensor) -> torch.Tensor:
    return torch.exp(x) - 1 - x


def _expected(
    g: torch.Tensor, lp: torch.Tensor, mask: torch.Tensor, band: tuple[float, float] = (0.8, 1.25)
) -> dict[str, float]:
    """The figures of §9.2 computed the obvious way, over the counted tokens gathered in float64."""
    counted = mask.bool()
    gc, lc = g.double()[counted], lp.double()[counted]
    d = lc - gc
    mixture = torch.logaddexp(lc, gc) - math.log(2)
    r = torch.exp(d)
    per_sequence = [
        torch.exp((lp.double()[i] - g.double()[i])[counted[i]].abs()).mean()
        for i in range(g.shape[0])
        if counted[i].any()
    ]
    seq_sums = torch.tensor(
        [(lp.double()[i] - g.double()[i])[counted[i]].sum() for i in range(g.shape[0]) if counted[i].any()]
    )
    w = torch.exp(seq_sums)
    q = torch.quantile(d.abs(), torch.tensor([0.5, 0.95, 0.99], dtype=torch.float64))
    return {
        "mult_prob_error": float(torch.exp(d.abs()).mean()),
        "seq_mult_prob_error_max": float(max(per_sequence)),
        "seq_mult_prob_error_min": float(min(per_sequence)),
        "seq_mult_prob_error_mean": float(sum(per_sequence) / len(per_sequence)),
        "gen_kl": float(_k3(d).mean()),
        "policy_kl": float(_k3(-d).mean()),
        "js_divergence": float((0.5 * _k3(lc - mixture) + 0.5 * _k3(gc - mixture)).mean()),
        "abs_diff_p50": float(q[0]),
        "abs_diff_p95": float(q[1]),
        "abs_diff_p99": float(q[2]),
        "abs_diff_max": float(d.abs().max()),
        "mean_diff": float(d.mean()),
        "ratio_min": float(r.min()),
        "ratio_max": float(r.max()),
        "ratio_mean": float(r.mean()),
        "outside_band": float(((r < band[0]) | (r > band[1])).double().mean()),
        "token_ess": float(r.sum() ** 2 / (len(r) * (r**2).sum())),
        "sequence_ess": float(w.sum() ** 2 / (len(w) * (w**2).sum())),
    }


@pytest.mark.parametrize("seed", range(4))
def test_every_figure_has_the_reference_definition(seed: int) -> None:
    """Each figure of the report equals its §9.2 definition computed directly over the counted tokens."""
    g, lp, mask = _batch(seed)
    report = logprob_mismatch(g, lp, mask)
    for name, value in _expected(g, lp, mask).items():
        assert getattr(report, name) == pytest.approx(value, rel=1e-9, abs=1e-15), name
    assert report.tokens == int(mask.sum())
    assert report.sequences == g.shape[0]
    assert report.dropped_neg_inf == 0


def test_worst_token_is_the_first_largest_difference() -> None:
    """worst_* name the largest |Δ|, the first in row-major order on ties, with both values."""
    g = torch.tensor([[-1.0, -1.0, -1.0], [-2.0, -2.0, -2.0]])
    lp = torch.tensor([[-1.0, -1.5, -1.0], [-1.5, -2.0, -2.0]])
    report = logprob_mismatch(g, lp)
    assert (report.worst_sequence, report.worst_token) == (0, 1)
    assert (report.worst_generation_logprob, report.worst_learner_logprob) == (-1.0, -1.5)


def test_worst_token_skips_uncounted_positions_when_everything_agrees() -> None:
    """With every counted Δ zero, the worst token is the first counted one, not a masked-out position."""
    g = torch.tensor([[-1.0, -2.0, -3.0]])
    report = logprob_mismatch(g, g, torch.tensor([[0, 0, 1]]))
    assert (report.worst_sequence, report.worst_token) == (0, 2)


def test_equal_inputs_give_the_identities() -> None:
    """Equal logprobs: mult_prob_error 1, every KL 0, nothing outside the band, both ESS 1."""
    g, _, mask = _batch()
    report = logprob_mismatch(g, g.clone(), mask)
    assert report.mult_prob_error == 1.0
    assert report.gen_kl == report.policy_kl == report.js_divergence == 0.0
    assert report.outside_band == 0.0
    assert report.token_ess == report.sequence_ess == 1.0


@pytest.mark.parametrize("kl_type", ["k1", "k2", "k3"])
def test_kl_types_are_schulmans_estimators(kl_type: Any) -> None:
    """gen_kl is the mean of k(l - g), policy_kl of k(g - l), for each estimator; js always uses k3."""
    g, lp, mask = _batch(1)
    d = (lp.double() - g.double())[mask.bool()]
    k = {"k1": _k1, "k2": _k2, "k3": _k3}[kl_type]
    report = logprob_mismatch(g, lp, mask, kl_type=kl_type)
    assert report.kl_type == kl_type
    assert report.gen_kl == pytest.approx(float(k(d).mean()), rel=1e-9, abs=1e-15)
    assert report.policy_kl == pytest.approx(float(k(-d).mean()), rel=1e-9, abs=1e-15)
    assert report.js_divergence == logprob_mismatch(g, lp, mask).js_divergence


def test_band_sets_the_outside_fraction() -> None:
    """outside_band counts ratios below low or above high of the given band."""
    g = torch.zeros(1, 4) - 1.0
    lp = g + torch.tensor([[0.0, 0.3, -0.3, 0.05]])
    assert logprob_mismatch(g, lp, band=(0.9, 1.1)).outside_band == 0.5
    assert logprob_mismatch(g, lp, band=(0.5, 2.0)).outside_band == 0.0


def test_uncounted_positions_are_ignored_completely() -> None:
    """NaN, +inf and positive values at mask 0 change nothing."""
    g, lp, mask = _batch(2)
    junk_g, junk_l = g.clone(), lp.clone()
    off = mask == 0
    junk_g[off] = NAN
    junk_l[off] = INF
    assert logprob_mismatch(junk_g, junk_l, mask) == logprob_mismatch(g, lp, mask)


def test_no_counted_token_gives_no_statistics() -> None:
    """A batch without counted tokens reports n = 0 and None for every statistic."""
    g, lp, _ = _batch()
    report = logprob_mismatch(g, lp, torch.zeros_like(g))
    assert (report.tokens, report.sequences) == (0, 0)
    assert report.mult_prob_error is None
    assert report.worst_sequence is None
    assert logprob_mismatch(torch.zeros(0, 3), torch.zeros(0, 3)).tokens == 0
    assert logprob_mismatch(torch.zeros(2, 0), torch.zeros(2, 0)).sequences == 0


def test_neg_inf_drop_leaves_the_count() -> None:
    """neg_inf="drop": learner -inf tokens leave the count and are reported as dropped_neg_inf."""
    g, lp, mask = _batch(3)
    mask[:] = 1.0
    dropped = lp.clone()
    dropped[1, 2] = dropped[3, 4] = -INF
    report = logprob_mismatch(g, dropped, mask, neg_inf="drop")
    keep = mask.clone()
    keep[1, 2] = keep[3, 4] = 0
    assert report.dropped_neg_inf == 2
    assert report.tokens == int(mask.sum()) - 2
    assert report.mult_prob_error == pytest.approx(logprob_mismatch(g, lp, keep).mult_prob_error, rel=1e-12)


def test_one_dimensional_inputs_are_one_sequence() -> None:
    """[T] inputs read as B = 1."""
    g, lp, mask = _batch(shape=(1, 7))
    assert logprob_mismatch(g[0], lp[0], mask[0]) == logprob_mismatch(g, lp, mask)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_every_floating_dtype_is_accumulated_in_float64(dtype: torch.dtype) -> None:
    """Inputs of any floating dtype give the report of their values read in float64."""
    g, lp, mask = _batch(4)
    g, lp = g.to(dtype), lp.to(dtype)
    expected = logprob_mismatch(g.double(), lp.double(), mask)
    assert logprob_mismatch(g, lp, mask) == expected


def test_numpy_inputs_of_every_layout() -> None:
    """numpy arrays (read-only, big-endian, reversed) give the same report as tensors, without a warning."""
    g, lp, mask = _batch(5)
    expected = logprob_mismatch(g, lp, mask)
    read_only = g.numpy().copy()
    read_only.flags.writeable = False
    assert logprob_mismatch(read_only, lp.numpy(), mask.numpy()) == expected
    assert logprob_mismatch(g.numpy().astype(">f4"), lp.numpy(), mask.numpy().astype(bool)) == expected
    flipped = logprob_mismatch(g.numpy()[:, ::-1], lp.numpy()[:, ::-1], mask.numpy()[:, ::-1])
    assert flipped.mult_prob_error == pytest.approx(expected.mult_prob_error, rel=1e-12)


@pytest.mark.parametrize(
    "mask_dtype", [torch.bool, torch.uint8, torch.int64, torch.uint32, torch.float32, torch.float64]
)
def test_every_mask_dtype_holding_0_and_1(mask_dtype: torch.dtype) -> None:
    """Bool, integer and floating 0/1 masks count the same positions."""
    g, lp, mask = _batch(6)
    assert logprob_mismatch(g, lp, mask.to(mask_dtype)) == logprob_mismatch(g, lp, mask.bool())


def test_inputs_are_not_mutated() -> None:
    """No input changes, float64 ones included (where a conversion would alias)."""
    g, lp, mask = _batch(7)
    g, lp = g.double(), lp.double()
    before = (g.clone(), lp.clone(), mask.clone())
    logprob_mismatch(g, lp, mask)
    importance_weights(lp, g, mask)
    truncated_importance_weights(lp, g, mask, kind="tis", high=1.1)
    sequence_logprob_error_mask(g, lp, mask, threshold=1.1)
    for after, original in zip((g, lp, mask), before, strict=True):
        assert torch.equal(after, original)


def test_report_dumps_to_json_and_pickles() -> None:
    """A report round-trips through JSON (infinities as strings) and pickle."""
    g, lp, mask = _batch()
    report = logprob_mismatch(g, lp, mask)
    assert MismatchReport.model_validate_json(report.model_dump_json()) == report
    assert pickle.loads(pickle.dumps(report)) == report
    huge = logprob_mismatch(
        torch.tensor([[-800.0]], dtype=torch.float64), torch.tensor([[0.0]], dtype=torch.float64)
    )
    assert huge.mult_prob_error == INF
    assert MismatchReport.model_validate_json(huge.model_dump_json()) == huge


def test_extreme_differences_never_overflow_into_nan() -> None:
    """A difference of 800 nats gives infinite error figures but finite ESS and ratios computed in log space."""
    g = torch.tensor([[-800.0, -1.0]], dtype=torch.float64)
    lp = torch.tensor([[0.0, -1.0]], dtype=torch.float64)
    report = logprob_mismatch(g, lp)
    assert report.ratio_max == INF
    assert report.js_divergence == pytest.approx((800 / 2 - math.log(2)) / 2, rel=1e-12)
    assert report.token_ess == pytest.approx(0.5, rel=1e-12)
    assert report.sequence_ess == 1.0


def test_order_statistics_pick_the_ranked_values() -> None:
    """The CPU selection (one numpy partition) returns the values of the requested 0-based ranks."""
    values = torch.rand(1000, dtype=torch.float64)
    ranks = [3, 500, 950, 999]
    expected = sorted(values.tolist())
    assert logprobs._order_statistics(values.clone(), ranks) == [expected[r] for r in ranks]


# --------------------------------------------------------------------------------------------------------------
# Input errors (§9.1), table-driven

G, L, M = (t.clone() for t in _batch(8, shape=(3, 4)))


def _with(tensor: torch.Tensor, b: int, t: int, value: float) -> torch.Tensor:
    copy = tensor.clone()
    copy[b, t] = value
    return copy


INPUT_ERRORS: list[
    tuple[str, Callable[[], object], type[Exception], str | None, tuple[int, int] | None, str]
] = [
    (
        "list",
        lambda: logprob_mismatch([[-1.0]], L),  # type: ignore[arg-type]
        ContractTypeError,
        "generation_logprobs",
        None,
        "torch tensor",
    ),
    ("integer", lambda: logprob_mismatch(G, L.long()), ContractTypeError, "learner_logprobs", None, "int64"),
    (
        "complex",
        lambda: logprob_mismatch(G.to(torch.complex64), L),
        ContractTypeError,
        "generation_logprobs",
        None,
        "complex",
    ),
    (
        "numpy int",
        lambda: logprob_mismatch(G.numpy().astype(np.int32), L),
        ContractTypeError,
        "generation_logprobs",
        None,
        "int32",
    ),
    (
        "complex mask",
        lambda: logprob_mismatch(G, L, M.to(torch.complex64)),
        ContractTypeError,
        "mask",
        None,
        "complex",
    ),
    (
        "masked array",
        lambda: logprob_mismatch(np.ma.masked_array(G.numpy()), L),
        ContractTypeError,
        "generation_logprobs",
        None,
        "masked",
    ),
    (
        "sparse",
        lambda: logprob_mismatch(G.to_sparse(), L),
        ContractTypeError,
        "generation_logprobs",
        None,
        "layout",
    ),
    (
        "meta",
        lambda: logprob_mismatch(G.to("meta"), L),
        ContractTypeError,
        "generation_logprobs",
        None,
        "meta",
    ),
    (
        "3-D",
        lambda: logprob_mismatch(G[None], L[None]),
        LogprobContractError,
        "generation_logprobs",
        None,
        "3 dimensions",
    ),
    (
        "0-D",
        lambda: logprob_mismatch(G[0, 0], L[0, 0]),
        LogprobContractError,
        "generation_logprobs",
        None,
        "0 dimensions",
    ),
    (
        "shapes",
        lambda: logprob_mismatch(G, L[:, :-1]),
        LogprobContractError,
        "learner_logprobs",
        None,
        "same shape",
    ),
    ("mask shape", lambda: logprob_mismatch(G, L, M[:, :-1]), LogprobContractError, "mask", None, "shape"),
    (
        "mask value",
        lambda: logprob_mismatch(G, L, _with(M, 2, 1, 0.5)),
        LogprobContractError,
        "mask",
        (2, 1),
        "0.5",
    ),
    (
        "mask nan",
        lambda: logprob_mismatch(G, L, _with(M, 1, 3, NAN)),
        LogprobContractError,
        "mask",
        (1, 3),
        "nan",
    ),
    (
        "g nan",
        lambda: logprob_mismatch(_with(G, 1, 2, NAN), L),
        LogprobContractError,
        "generation_logprobs",
        (1, 2),
        "nan",
    ),
    (
        "g -inf",
        lambda: logprob_mismatch(_with(G, 2, 0, -INF), L),
        LogprobContractError,
        "generation_logprobs",
        (2, 0),
        "-inf",
    ),
    (
        "g +inf",
        lambda: logprob_mismatch(_with(G, 0, 3, INF), L),
        LogprobContractError,
        "generation_logprobs",
        (0, 3),
        "inf",
    ),
    (
        "g positive",
        lambda: logprob_mismatch(_with(G, 0, 1, 0.5), L),
        LogprobContractError,
        "generation_logprobs",
        (0, 1),
        "0.5",
    ),
    (
        "l nan",
        lambda: logprob_mismatch(G, _with(L, 2, 3, NAN)),
        LogprobContractError,
        "learner_logprobs",
        (2, 3),
        "nan",
    ),
    (
        "l +inf",
        lambda: logprob_mismatch(G, _with(L, 1, 1, INF)),
        LogprobContractError,
        "learner_logprobs",
        (1, 1),
        "inf",
    ),
    (
        "l positive",
        lambda: logprob_mismatch(G, _with(L, 1, 0, 0.25)),
        LogprobContractError,
        "learner_logprobs",
        (1, 0),
        "= 0.25:",
    ),
    (
        "l -inf",
        lambda: logprob_mismatch(G, _with(L, 0, 2, -INF)),
        LogprobContractError,
        "learner_logprobs",
        (0, 2),
        "top-k/top-p",
    ),
    (
        "1-D position",
        lambda: logprob_mismatch(G[1], _with(L, 1, 2, NAN)[1]),
        LogprobContractError,
        "learner_logprobs",
        (0, 2),
        "[2] = nan",
    ),
    ("kl_type", lambda: logprob_mismatch(G, L, kl_type="k4"), LogprobContractError, "kl_type", None, "'k4'"),  # type: ignore[arg-type]
    ("kl_type type", lambda: logprob_mismatch(G, L, kl_type=3), ContractTypeError, "kl_type", None, "int"),  # type: ignore[arg-type]
    (
        "band order",
        lambda: logprob_mismatch(G, L, band=(1.2, 0.8)),
        LogprobContractError,
        "band",
        None,
        "low <= 1",
    ),
    (
        "band nan",
        lambda: logprob_mismatch(G, L, band=(NAN, 1.2)),
        LogprobContractError,
        "band",
        None,
        "finite",
    ),
    ("band type", lambda: logprob_mismatch(G, L, band=0.8), ContractTypeError, "band", None, "pair"),  # type: ignore[arg-type]
    (
        "band bool",
        lambda: logprob_mismatch(G, L, band=(True, 2.0)),
        ContractTypeError,
        "band[0]",
        None,
        "bool",
    ),
    (
        "neg_inf",
        lambda: logprob_mismatch(G, L, neg_inf="keep"),  # type: ignore[arg-type]
        LogprobContractError,
        "neg_inf",
        None,
        "'keep'",
    ),
    (
        "tolerance",
        lambda: logprob_mismatch(G, L, positive_tolerance=-1.0),
        LogprobContractError,
        "positive_tolerance",
        None,
        ">= 0",
    ),
    (
        "tolerance type",
        lambda: logprob_mismatch(G, L, positive_tolerance="1"),  # type: ignore[arg-type]
        ContractTypeError,
        "positive_tolerance",
        None,
        "str",
    ),
]


@pytest.mark.parametrize(
    ("case", "call", "error", "argument", "position", "fragment"),
    INPUT_ERRORS,
    ids=[c[0] for c in INPUT_ERRORS],
)
def test_each_malformed_input_raises_naming_it(
    case: str,
    call: Callable[[], object],
    error: type[Exception],
    argument: str | None,
    position: tuple[int, int] | None,
    fragment: str,
) -> None:
    """Every malformation of §9.1 raises its class, names the argument and (for values) the first [b, t]."""
    del case
    with pytest.raises(error) as info:
        call()
    raised = info.value
    assert_contract_error(raised)
    assert fragment in str(raised)
    if isinstance(raised, LogprobContractError):
        assert raised.argument == argument
        if position is not None:
            assert (raised.sequence_index, raised.token_index) == position
    else:
        assert isinstance(raised, ContractTypeError)
        assert raised.argument == argument


def test_the_first_offending_position_in_row_major_order_is_named() -> None:
    """With several bad values, the error names the first one row-major, whichever input holds it."""
    g = _with(_with(G, 2, 0, NAN), 0, 3, 0.7)
    lp = _with(L, 1, 1, NAN)
    with pytest.raises(LogprobContractError) as info:
        logprob_mismatch(g, lp)
    assert (info.value.sequence_index, info.value.token_index, info.value.argument) == (
        0,
        3,
        "generation_logprobs",
    )
    assert info.value.generation_logprob == pytest.approx(0.7)


def test_a_tolerance_admits_float_noise_above_zero() -> None:
    """Logprobs up to positive_tolerance above 0 pass; above it they fail."""
    lp = _with(L, 0, 0, 5e-5)
    assert logprob_mismatch(G, lp).tokens == G.numel()
    with pytest.raises(LogprobContractError):
        logprob_mismatch(G, lp, positive_tolerance=1e-5)


# --------------------------------------------------------------------------------------------------------------
# The check (§9.3)


def test_agreeing_inputs_pass_and_return_the_report() -> None:
    """Within the bounds the check returns logprob_mismatch's report with the bounds' band."""
    g, lp, mask = _batch(noise=0.001)
    bounds = MismatchBounds(band=(0.5, 2.0))
    assert check_logprob_agreement(g, lp, mask, bounds=bounds) == logprob_mismatch(
        g, lp, mask, band=(0.5, 2.0)
    )
    assert (
        check_logprob_agreement(g, lp, torch.zeros_like(mask), bounds=MismatchBounds(max_abs_diff=0.0)).tokens
        == 0
    )


BOUND_CASES = [
    ("max_mult_prob_error", MismatchBounds(max_mult_prob_error=1.0001), "mult_prob_error"),
    (
        "max_seq_mult_prob_error",
        MismatchBounds(max_mult_prob_error=None, max_seq_mult_prob_error=1.0001),
        "seq_mult_prob_error_max",
    ),
    ("max_gen_kl", MismatchBounds(max_mult_prob_error=None, max_gen_kl=1e-9), "gen_kl"),
    ("max_abs_diff", MismatchBounds(max_mult_prob_error=None, max_abs_diff=1e-6), "abs_diff_max"),
    (
        "max_outside_band",
        MismatchBounds(max_mult_prob_error=None, max_outside_band=0.0, band=(0.999, 1.001)),
        "outside_band",
    ),
    ("min_token_ess", MismatchBounds(max_mult_prob_error=None, min_token_ess=1.0), "token_ess"),
]


@pytest.mark.parametrize(("bound", "bounds", "figure"), BOUND_CASES, ids=[c[0] for c in BOUND_CASES])
def test_each_bound_fails_alone_with_its_value_and_limit(
    bound: str, bounds: MismatchBounds, figure: str
) -> None:
    """Each bound, when exceeded, is named in ``exceeded`` and in the message with the figure and the limit."""
    g, lp, mask = _batch(noise=0.05)
    with pytest.raises(LogprobMismatchError) as info:
        check_logprob_agreement(g, lp, mask, bounds=bounds)
    error = info.value
    assert_contract_error(error)
    assert error.exceeded == (bound,)
    assert error.report == logprob_mismatch(g, lp, mask, band=bounds.band)
    assert f"{figure} " in str(error)
    assert f" {bound} " in str(error)
    assert f"over {error.report.tokens} counted tokens in 5 sequences" in str(error)


def test_the_message_names_the_worst_token_as_the_spec_quotes_it() -> None:
    """The worst token reads ``sequence 3, token 41: vLLM -0.021, learner -2.750``."""
    g = torch.full((4, 50), -0.5)
    lp = g.clone()
    g[3, 41], lp[3, 41] = -0.021, -2.75
    with pytest.raises(LogprobMismatchError) as info:
        check_logprob_agreement(g, lp)
    assert "worst token: sequence 3, token 41: vLLM -0.021, learner -2.750" in str(info.value)
    assert (info.value.sequence_index, info.value.token_index) == (3, 41)


def _uniform_offset(shape: tuple[int, int], offset: float) -> tuple[torch.Tensor, torch.Tensor]:
    g = -torch.rand(shape, generator=torch.Generator().manual_seed(1)) - 1.0
    return g, g - offset


def test_cause_uniform_when_every_sequence_disagrees() -> None:
    """Every sequence off by the same amount (other weights): cause "uniform", every sequence affected."""
    g, lp = _uniform_offset((10, 8), 0.2)
    with pytest.raises(LogprobMismatchError) as info:
        check_logprob_agreement(g, lp)
    assert info.value.likely_cause == "uniform"
    assert info.value.affected_sequences == tuple(range(10))
    assert "every sequence disagrees" in str(info.value)


def test_cause_isolated_when_one_sequence_in_ten_disagrees() -> None:
    """One sequence of twenty off: cause "isolated", naming it."""
    g, lp = _uniform_offset((20, 8), 0.0)
    lp = lp.clone()
    lp[7] -= 2.0
    with pytest.raises(LogprobMismatchError) as info:
        check_logprob_agreement(g, lp)
    assert info.value.likely_cause == "isolated"
    assert info.value.affected_sequences == (7,)
    assert "validate_rollout_prompt" in str(info.value)


def test_cause_numerics_when_half_the_sequences_disagree() -> None:
    """Half of the sequences slightly off: neither uniform nor isolated, so "numerics"."""
    g, lp = _uniform_offset((10, 8), 0.0)
    lp = lp.clone()
    lp[::2] -= 0.2
    with pytest.raises(LogprobMismatchError) as info:
        check_logprob_agreement(g, lp)
    assert info.value.likely_cause == "numerics"
    assert info.value.affected_sequences == (0, 2, 4, 6, 8)


@pytest.mark.parametrize(
    ("direction", "shifted"),
    [
        ("learner[t] matches vLLM[t + 1]", lambda lp: torch.cat([lp[:, 1:], lp[:, :1]], dim=1)),
        ("learner[t + 1] matches vLLM[t]", lambda lp: torch.cat([lp[:, :1], lp[:, :-1]], dim=1)),
    ],
)
def test_cause_shift_in_either_direction(
    direction: str, shifted: Callable[[torch.Tensor], torch.Tensor]
) -> None:
    """Learner logprobs one position off (either way) give cause "shift" with the direction."""
    g = -torch.rand(6, 30, generator=torch.Generator().manual_seed(2)) * 5
    with pytest.raises(LogprobMismatchError) as info:
        check_logprob_agreement(g, shifted(g))
    assert info.value.likely_cause == "shift"
    assert direction in str(info.value)


def test_shift_is_checked_over_jointly_counted_tokens_only() -> None:
    """Masked positions take part in no shifted pair: junk there cannot fake or hide a shift."""
    g = -torch.rand(6, 30, generator=torch.Generator().manual_seed(3)) * 5
    lp = torch.cat([g[:, 1:], g[:, :1]], dim=1)
    mask = torch.ones_like(g)
    mask[:, 10] = 0
    lp[:, 10] = NAN
    with pytest.raises(LogprobMismatchError) as info:
        check_logprob_agreement(g, lp, mask)
    assert info.value.likely_cause == "shift"


def test_sequence_limit_falls_back_to_the_mult_bound_then_to_1_05() -> None:
    """A sequence exceeds max_seq_mult_prob_error, else max_mult_prob_error, else 1.05."""
    g, lp = _uniform_offset((4, 8), 0.0)
    lp = lp.clone()
    lp[0] -= 0.03  # seq error ~1.03
    lp[1] -= 0.2  # ~1.22
    cases = [
        (MismatchBounds(max_mult_prob_error=1.01), (0, 1)),
        (MismatchBounds(max_mult_prob_error=1.01, max_seq_mult_prob_error=1.1), (1,)),
        (MismatchBounds(max_mult_prob_error=None, max_abs_diff=0.0), (1,)),
    ]
    for bounds, affected in cases:
        with pytest.raises(LogprobMismatchError) as info:
            check_logprob_agreement(g, lp, bounds=bounds)
        assert info.value.affected_sequences == affected


def test_bounds_must_be_a_mismatch_bounds() -> None:
    """A mapping is not accepted for bounds (a ContractTypeError), and the options are checked as in the report."""
    with pytest.raises(ContractTypeError):
        check_logprob_agreement(G, L, bounds={"max_mult_prob_error": 1.1})  # type: ignore[arg-type]
    with pytest.raises(LogprobContractError):
        check_logprob_agreement(G, L, neg_inf="no")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "fields",
    [
        {"max_mult_prob_error": 0.99},
        {"max_seq_mult_prob_error": INF},
        {"max_gen_kl": -1.0},
        {"max_abs_diff": NAN},
        {"max_outside_band": 1.5},
        {"min_token_ess": -0.1},
        {"band": (0.0, 1.2)},
        {"band": (0.9,)},
        {"band": (0.9, 0.95)},
        {"max_gen_kl": True},
        {"max_gen_kl": "0.1"},
        {"unknown": 1},
    ],
)
def test_invalid_bounds_are_a_validation_error(fields: dict[str, Any]) -> None:
    """MismatchBounds rejects non-finite values, values out of their range, bools, strings and unknown fields."""
    with pytest.raises(ValidationError):
        MismatchBounds(**fields)


def test_bounds_accept_ints_and_none() -> None:
    """Ints are read as floats; None disables a bound."""
    bounds = MismatchBounds(max_mult_prob_error=1, max_gen_kl=0, band=[1, 2])
    assert (bounds.max_mult_prob_error, bounds.max_gen_kl, bounds.band) == (1.0, 0.0, (1.0, 2.0))
    assert MismatchBounds(max_mult_prob_error=None).max_mult_prob_error is None


def test_mismatch_errors_carry_the_report_through_pickle() -> None:
    """The error and its report survive a pickle round-trip; details() lists every attribute."""
    g, lp = _uniform_offset((4, 8), 0.3)
    with pytest.raises(LogprobMismatchError) as info:
        check_logprob_agreement(g, lp)
    clone = pickle.loads(pickle.dumps(info.value))
    assert clone.report == info.value.report
    assert clone.likely_cause == "uniform"
    assert set(info.value.details()) == {"error", "message", *type(info.value).attribute_names}


def test_messages_stay_bounded_for_many_affected_sequences() -> None:
    """Thousands of affected sequences print as 8 indices and a total, within 2,000 characters."""
    g, lp = _uniform_offset((3000, 4), 0.5)
    with pytest.raises(LogprobMismatchError) as info:
        check_logprob_agreement(g, lp)
    assert "... (3000 total)" in str(info.value)
    assert len(str(info.value)) <= 2000


# --------------------------------------------------------------------------------------------------------------
# Importance sampling (§9.4)


def _reference_weights(
    prev: torch.Tensor, gen: torch.Tensor, mask: torch.Tensor, kind: str, high: float, low: float | None
) -> tuple[torch.Tensor, float]:
    """NeMo RL's ``ClippedPGLossFn`` correction block, as the reference writes it (float32, nan_to_num)."""
    weights = torch.nan_to_num(torch.exp(prev - gen), nan=0.0, posinf=0.0, neginf=0.0)

    def masked_mean(values: torch.Tensor, m: torch.Tensor) -> float:
        return float((values * m).sum() / (m.sum() + 1e-8))

    if kind == "tis":
        in_bounds = weights <= high
        oob = masked_mean((~in_bounds).float(), mask)
        weights = torch.clamp(weights, max=high)
    elif kind == "icepop":
        assert low is not None
        kept = (weights >= low) & (weights <= high)
        oob = masked_mean((~kept).float(), mask)
        weights = torch.where(kept, weights, torch.zeros_like(weights))
    else:
        assert low is not None
        log_ratio = torch.nan_to_num(prev - gen, nan=0.0, posinf=0.0, neginf=0.0)
        seq_mean = (log_ratio * mask).sum(-1) / (mask.sum(-1) + 1e-8)
        geometric = torch.exp(seq_mean)
        in_bounds = (geometric >= low) & (geometric <= high)
        sample = (mask.sum(-1) > 0).float()
        oob = masked_mean((~in_bounds).float(), sample)
        weights = weights * in_bounds.unsqueeze(-1)
    return weights, oob


@pytest.mark.parametrize(
    ("kind", "high", "low"),
    [
        ("tis", 1.05, None),
        ("tis", 2.0, None),
        ("icepop", 1.05, 0.95),
        ("icepop", 5.0, 0.5),
        ("seq-mask-tis", 1.02, 0.98),
        ("seq-mask-tis", 1.2, 0.8),
    ],
)
@pytest.mark.parametrize("seed", range(3))
def test_truncated_weights_equal_the_reference_on_finite_inputs(
    kind: Any, high: float, low: float | None, seed: int
) -> None:
    """At counted tokens the weights and out_of_bounds equal the reference's block (float32 rounding)."""
    g, lp, mask = _batch(seed, shape=(8, 16), noise=0.05)
    expected, oob = _reference_weights(lp, g, mask, kind, high, low)
    result = truncated_importance_weights(lp, g, mask, kind=kind, high=high, low=low)
    counted = mask.bool()
    assert result.weights.dtype == torch.float32
    torch.testing.assert_close(result.weights[counted], expected[counted], rtol=1e-6, atol=0.0)
    assert bool((result.weights[~counted] == 0).all())
    assert result.out_of_bounds == pytest.approx(oob, rel=1e-6)
    assert (result.kept_sequences is None) == (kind != "seq-mask-tis")


def test_tis_clamps_to_low_when_given() -> None:
    """tis with low clamps from below too and counts those tokens out of bounds."""
    g = torch.tensor([[-1.0, -1.0, -1.0]])
    lp = torch.tensor([[-1.0, -2.0, -0.5]])
    result = truncated_importance_weights(lp, g, kind="tis", high=1.2, low=0.9)
    torch.testing.assert_close(result.weights, torch.tensor([[1.0, 0.9, 1.2]]))
    assert result.out_of_bounds == pytest.approx(2 / 3)


def test_seq_mask_tis_keeps_sequences_without_counted_tokens() -> None:
    """A sequence without counted tokens is kept and left out of out_of_bounds."""
    g = torch.full((3, 2), -1.0)
    lp = torch.tensor([[-1.0, -1.0], [-3.0, -3.0], [-1.0, -1.0]])
    mask = torch.tensor([[1, 1], [1, 1], [0, 0]])
    result = truncated_importance_weights(lp, g, mask, kind="seq-mask-tis", high=1.5, low=0.5)
    assert result.kept_sequences is not None
    assert result.kept_sequences.tolist() == [True, False, True]
    assert result.out_of_bounds == 0.5
    assert result.weights[1].tolist() == [0.0, 0.0]


def test_token_and_sequence_importance_weights() -> None:
    """Token level is exp(l - g) at counted tokens; sequence level broadcasts exp(Σ (l - g)); 0 elsewhere."""
    g, lp, mask = _batch(9)
    token = importance_weights(lp, g, mask)
    counted = mask.bool()
    torch.testing.assert_close(token[counted], torch.exp(lp - g)[counted])
    assert bool((token[~counted] == 0).all())
    sequence = importance_weights(lp, g, mask, level="sequence")
    for row in range(g.shape[0]):
        weight = math.exp(float((lp.double() - g.double())[row][counted[row]].sum()))
        assert sequence[row][counted[row]].tolist() == pytest.approx(
            [weight] * int(counted[row].sum()), rel=1e-6
        )
        assert bool((sequence[row][~counted[row]] == 0).all())


@pytest.mark.parametrize(
    ("dtypes", "result"),
    [
        ((torch.float16, torch.float16), torch.float32),
        ((torch.bfloat16, torch.float16), torch.float32),
        ((torch.float32, torch.float64), torch.float64),
    ],
)
def test_weight_dtype_is_the_promotion_but_at_least_float32(
    dtypes: tuple[torch.dtype, torch.dtype], result: torch.dtype
) -> None:
    """The result dtype promotes the inputs' dtypes, at least float32, and keeps a 1-D shape."""
    g, lp, _ = _batch(shape=(1, 6))
    weights = importance_weights(lp[0].to(dtypes[0]), g[0].to(dtypes[1]))
    assert (weights.dtype, tuple(weights.shape)) == (result, (6,))
    truncated = truncated_importance_weights(lp[0].to(dtypes[0]), g[0].to(dtypes[1]), kind="tis", high=2.0)
    assert (truncated.weights.dtype, tuple(truncated.weights.shape)) == (result, (6,))


def test_overflowing_weights_raise_where_the_reference_zeroes() -> None:
    """exp(812.3) is not finite in float32: the sequence (and token) are named, not silently zeroed."""
    g = torch.full((2, 10), -81.23)
    lp = torch.zeros(2, 10)
    lp[1] = g[1]
    with pytest.raises(LogprobContractError, match=r"sequence 0 .*exp\(812\.3") as info:
        importance_weights(lp, g, level="sequence")
    assert info.value.sequence_index == 0
    assert_contract_error(info.value)
    big = torch.tensor([[-100.0, -1.0]])
    for call in (
        lambda: importance_weights(torch.zeros(1, 2), big),
        lambda: truncated_importance_weights(torch.zeros(1, 2), big, kind="icepop", high=2.0, low=0.5),
    ):
        with pytest.raises(LogprobContractError, match="not finite in float32") as raised:
            call()
        assert (raised.value.sequence_index, raised.value.token_index) == (0, 0)
    assert importance_weights(torch.zeros(1, 2, dtype=torch.float64), big.double())[0, 0] == math.exp(100)


TRUNCATION_ERRORS: list[tuple[dict[str, Any], type[Exception], str]] = [
    ({"kind": "gspo", "high": 2.0}, LogprobContractError, "kind"),
    ({"kind": 1, "high": 2.0}, ContractTypeError, "kind"),
    ({"kind": "tis", "high": 0.0}, LogprobContractError, "high"),
    ({"kind": "tis", "high": INF}, LogprobContractError, "high"),
    ({"kind": "tis", "high": "2"}, ContractTypeError, "high"),
    ({"kind": "tis", "high": True}, ContractTypeError, "high"),
    ({"kind": "icepop", "high": 2.0}, LogprobContractError, "low"),
    ({"kind": "seq-mask-tis", "high": 2.0}, LogprobContractError, "low"),
    ({"kind": "icepop", "high": 2.0, "low": 3.0}, LogprobContractError, "low"),
    ({"kind": "icepop", "high": 2.0, "low": -0.1}, LogprobContractError, "low"),
    ({"kind": "icepop", "high": 2.0, "low": NAN}, LogprobContractError, "low"),
]


@pytest.mark.parametrize(("options", "error", "argument"), TRUNCATION_ERRORS)
def test_truncation_arguments_as_the_reference_asserts(
    options: dict[str, Any], error: type[Exception], argument: str
) -> None:
    """kind, high and low are checked as the reference asserts them, as ContractTypeError or LogprobContractError."""
    with pytest.raises(error) as info:
        truncated_importance_weights(L, G, **options)
    assert_contract_error(info.value)
    assert getattr(info.value, "argument", None) == argument


def test_importance_weight_level_is_checked() -> None:
    """level is 'token' or 'sequence'."""
    with pytest.raises(LogprobContractError):
        importance_weights(L, G, level="sample")  # type: ignore[arg-type]
    with pytest.raises(ContractTypeError):
        importance_weights(L, G, level=None)  # type: ignore[arg-type]


def test_importance_inputs_are_checked_as_in_the_report() -> None:
    """A NaN at a counted token raises; at an uncounted one it is ignored and the weight there is 0."""
    g = _with(G, 1, 1, NAN)
    with pytest.raises(LogprobContractError) as info:
        importance_weights(L, g)
    assert info.value.argument == "generation_logprobs"
    mask = torch.ones_like(G)
    mask[1, 1] = 0
    assert importance_weights(L, g, mask)[1, 1] == 0.0


def test_sequence_error_mask_keeps_sequences_within_the_threshold() -> None:
    """grpo.seq_logprob_error_threshold: kept when the sequence's mult_prob_error <= threshold; empty ones kept."""
    g = torch.full((3, 4), -1.0)
    lp = torch.tensor([[-1.0] * 4, [-1.5] * 4, [-1.0] * 4])
    mask = torch.tensor([[1] * 4, [1] * 4, [0] * 4])
    result = sequence_logprob_error_mask(g, lp, mask, threshold=1.5)
    assert result.keep.tolist() == [True, False, True]
    assert result.masked == 1
    assert result.seq_mult_prob_error.dtype == torch.float64
    assert result.seq_mult_prob_error[1] == pytest.approx(math.exp(0.5))
    assert math.isnan(float(result.seq_mult_prob_error[2]))
    assert sequence_logprob_error_mask(g, lp, mask, threshold=math.exp(0.5) + 1e-9).masked == 0


@pytest.mark.parametrize(
    ("threshold", "error"),
    [(0.5, LogprobContractError), (INF, LogprobContractError), ("1.1", ContractTypeError)],
)
def test_sequence_error_threshold_is_checked(threshold: Any, error: type[Exception]) -> None:
    """threshold is a finite number >= 1."""
    with pytest.raises(error):
        sequence_logprob_error_mask(G, L, threshold=threshold)


@pytest.mark.parametrize(
    "call",
    [
        lambda lp: importance_weights(lp, G),
        lambda lp: truncated_importance_weights(lp, G, kind="tis", high=2.0),
        lambda lp: sequence_logprob_error_mask(G, lp, threshold=1.5),
    ],
    ids=["importance_weights", "truncated_importance_weights", "sequence_logprob_error_mask"],
)
def test_neg_inf_advice_names_a_remedy_the_function_has(call: Callable[[torch.Tensor], object]) -> None:
    """The -inf error of the corrections (which take no neg_inf) advises masking, never neg_inf='drop'.

    Before the fix they advised ``neg_inf='drop'``, a parameter none of them has.
    """
    with pytest.raises(LogprobContractError, match="set the mask to 0 there") as info:
        call(_with(L, 0, 2, -INF))
    assert "neg_inf=" not in str(info.value)
    assert (info.value.sequence_index, info.value.token_index) == (0, 2)
    with pytest.raises(LogprobContractError, match="neg_inf='drop'"):
        check_logprob_agreement(G, _with(L, 0, 2, -INF))


# --------------------------------------------------------------------------------------------------------------
# Truncated support and the bias bound (issue 30); the sweep is benchmarks/measure_truncated_support.py


def _sampled_pair(seed: int, *, top_p: float = 1.0) -> tuple[torch.Tensor, torch.Tensor, float]:
    """vLLM's processed and the learner's full-vocabulary logprobs of 16 x 128 sampled tokens, and the kept mass.

    One policy (logits N(0, 1) times a sharpness in [4, 10]), two copies with logit noise 0.02: the engine's
    rounded to bfloat16 before its softmax, truncated to the smallest top set of mass >= ``top_p`` and renormalised
    over it; the learner's softmax in float32.  Both probabilities are rounded through bfloat16.
    """
    generator = torch.Generator().manual_seed(seed)
    logits = torch.randn(2048, 512, generator=generator) * torch.empty(2048, 1).uniform_(
        4, 10, generator=generator
    )
    engine = (
        (logits + 0.02 * torch.randn(logits.shape, generator=generator)).bfloat16().float().log_softmax(-1)
    )
    learner = (logits + 0.02 * torch.randn(logits.shape, generator=generator)).log_softmax(-1)
    ordered, order = engine.sort(dim=-1, descending=True)
    before = ordered.exp().cumsum(dim=-1) - ordered.exp()
    keep = torch.zeros_like(engine, dtype=torch.bool).scatter(-1, order, before < top_p)
    processed = engine.masked_fill(~keep, -INF).log_softmax(-1)
    tokens = torch.multinomial(processed.exp(), 1, generator=generator)

    def rounded(values: torch.Tensor) -> torch.Tensor:
        return values.gather(-1, tokens).exp().bfloat16().float().log().view(16, 128)

    return rounded(processed), rounded(learner), float(engine.exp().mul(keep).sum(-1).mean())


def test_healthy_bf16_noise_passes_and_the_top_p_095_bias_fails_as_truncated_support() -> None:
    """bf16 copies of one policy pass every default bound; top_p 0.95 with processed logprobs passed
    mult_prob_error (about 1.04 < 1.05) before the bias bound, and now fails it as "truncated_support"."""
    for seed in range(2):
        g, lp, _ = _sampled_pair(seed)
        healthy = check_logprob_agreement(g, lp, sampling={"temperature": 1.0, "top_p": 1.0})
        assert healthy.mean_diff is not None
        assert abs(healthy.mean_diff) < DEFAULT_MAX_ABS_MEAN_DIFF / 4
        g, lp, kept = _sampled_pair(seed, top_p=0.95)
        assert 0.95 <= kept < 0.97
        report = logprob_mismatch(g, lp)
        assert report.mult_prob_error is not None
        assert report.mult_prob_error < 1.05
        with pytest.raises(LogprobMismatchError) as info:
            check_logprob_agreement(g, lp, sampling={"top_p": 0.95}, logprobs_mode="processed_logprobs")
        error = info.value
        assert error.exceeded == ("max_abs_mean_diff",)
        assert error.likely_cause == "truncated_support"
        assert "top_p=0.95" in str(error)
        assert "renormalise the learner over the kept support" in str(error)
        assert_contract_error(error)


def test_a_kept_mass_of_095_is_beyond_the_default_bias_bound() -> None:
    """Every token renormalised over a support of mass 0.95 shifts the mean by log 0.95 = -0.051."""
    lp = torch.full((4, 32), -0.5).sub_(torch.rand(4, 32, generator=torch.Generator().manual_seed(3)))
    g = lp - math.log(0.95)
    with pytest.raises(
        LogprobMismatchError, match=r"\|mean_diff\| 0\.0512933 > max_abs_mean_diff 0\.02"
    ) as info:
        check_logprob_agreement(
            g, lp, sampling=SimpleNamespace(temperature=1.0, top_p=1.0, top_k=20, min_p=0.0)
        )
    assert info.value.likely_cause == "truncated_support"
    assert "kept mass of about 0.950" in str(info.value)
    raw = SamplingSettings(top_k=20, logprobs_mode="raw_logprobs")
    with pytest.raises(LogprobMismatchError) as not_truncation:
        check_logprob_agreement(g, lp, sampling=raw)
    assert not_truncation.value.likely_cause == "uniform"
    with pytest.raises(LogprobMismatchError, match="pass sampling= to tell") as unstated:
        check_logprob_agreement(g, lp)
    assert unstated.value.likely_cause == "uniform"
    assert logprob_mismatch(g, lp).mean_diff == pytest.approx(math.log(0.95))


@pytest.mark.parametrize("value", [-0.01, math.inf, math.nan, True])
def test_the_bias_bound_is_a_finite_non_negative_number(value: object) -> None:
    """max_abs_mean_diff is finite and >= 0 (None disables it)."""
    with pytest.raises(ValidationError, match="max_abs_mean_diff"):
        MismatchBounds(max_abs_mean_diff=value)
    assert MismatchBounds(max_abs_mean_diff=None).max_abs_mean_diff is None


def test_sampling_arguments_are_checked_before_the_figures() -> None:
    """A bad sampling argument raises even when every bound holds."""
    with pytest.raises(SamplingParamsError, match="top_p"):
        check_logprob_agreement(G, G, sampling={"top_p": 1.5})
    with pytest.raises(ContractTypeError, match="sampling"):
        check_logprob_agreement(G, G, sampling=0.9)  # type: ignore[arg-type]
    with pytest.raises(SamplingParamsError, match="logprobs_mode"):
        check_logprob_agreement(G, G, logprobs_mode="processed")
