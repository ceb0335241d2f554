"""Training–inference agreement: the engine's and the learner's logprobs as a fail-closed contract (SPEC §9).

The learner trains on tokens vLLM sampled and weights them by the ratio of its own probability to the engine's.
When the two disagree for any reason other than the policy update (a refit that did not apply, a stale weight
version, other sampling semantics, a different prompt, a shift by one position, bf16 kernels), training silently
goes off-policy.  This module computes NeMo RL's mismatch figures with exact definitions
(:func:`logprob_mismatch`), turns them into a check with a diagnosis (:func:`check_logprob_agreement`), and
provides the reference's importance-sampling corrections with its semantics on finite inputs and an error where
it silently zeroes (:func:`importance_weights`, :func:`truncated_importance_weights`,
:func:`sequence_logprob_error_mask`).

Inputs are torch tensors or numpy arrays of shape ``[B, T]`` (or ``[T]``, one sequence), on any device; the work
stays on that device, statistics are accumulated in float64 and only scalars move to the host.  This module
imports torch and numpy when it is imported, and never imports vLLM.
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal, TypeAlias

import numpy as np
import numpy.typing as npt
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

from ._internal.messages import render, render_list, render_name, type_name
from ._internal.optional_torch import torch
from .checks import real_or_none, require_float
from .errors import ContractTypeError, LogprobContractError, LogprobMismatchError
from .vllm_arguments import SamplingSettings, SamplingSource, sampling_settings

__all__ = [
    "DEFAULT_BAND",
    "DEFAULT_MAX_ABS_MEAN_DIFF",
    "KlType",
    "LogprobArray",
    "MaskArray",
    "MismatchBounds",
    "MismatchCause",
    "MismatchReport",
    "NegInfPolicy",
    "SequenceErrorMask",
    "TruncatedWeights",
    "TruncationKind",
    "WeightLevel",
    "check_logprob_agreement",
    "importance_weights",
    "logprob_mismatch",
    "sequence_logprob_error_mask",
    "truncated_importance_weights",
]

KlType: TypeAlias = Literal["k1", "k2", "k3"]
"""Schulman's KL estimators: k1(x) = -x, k2(x) = x²/2, k3(x) = eˣ - 1 - x (NeMo RL ``calculate_kl``)."""
NegInfPolicy: TypeAlias = Literal["error", "drop"]
"""What a learner logprob of -inf at a counted token does: raise, or leave the count (``dropped_neg_inf``)."""
TruncationKind: TypeAlias = Literal["tis", "icepop", "seq-mask-tis"]
"""NeMo RL's ``truncated_importance_sampling_type``."""
WeightLevel: TypeAlias = Literal["token", "sequence"]
"""Per-token ratios, or one GSPO-style weight per sequence."""
MismatchCause: TypeAlias = Literal["shift", "truncated_support", "uniform", "isolated", "numerics"]
"""The likely cause :class:`~rl_contracts.errors.LogprobMismatchError` names (SPEC §9.3)."""
LogprobArray: TypeAlias = torch.Tensor | npt.NDArray[Any]
"""A ``[B, T]`` or ``[T]`` floating torch tensor or numpy array."""
MaskArray: TypeAlias = torch.Tensor | npt.NDArray[Any] | None
"""A 0/1 mask of the logprobs' shape (bool, integer or floating), or ``None`` for every position."""

DEFAULT_BAND: Final[tuple[float, float]] = (0.8, 1.25)
"""The ratio band of ``outside_band`` (and of TIS/ICEPOP's usual bounds)."""
DEFAULT_MAX_ABS_MEAN_DIFF: Final = 0.02
"""Default limit of ``|mean_diff|``: simulated bf16 noise stays below 0.0011 on batches of 2048 tokens and below
0.015 on 64 tokens, every token renormalised over a kept mass of 0.95 gives log 0.95 = -0.051
(``benchmarks/measure_truncated_support.py``; docs/helpers/sampling-agreement.md)."""

_FLOAT_DTYPES: Final = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_NUMPY_FLOAT_KINDS: Final = frozenset({"float16", "float32", "float64"})
_LOG2: Final = math.log(2.0)
_COSH_LIMIT: Final = 350.0  # log(cosh(x)) = x - log 2 + log1p(exp(-2x)) and exp(-700) vanishes in float64
_QUANTILES: Final = (0.5, 0.95, 0.99)
_SHIFT_NAMES: Final = {
    "early": "learner[t] matches vLLM[t + 1]",
    "late": "learner[t + 1] matches vLLM[t]",
}
_CAUSES: Final[dict[str, str]] = {
    "uniform": "every sequence disagrees: the engine and the learner hold different weights (a refit that did not "
    "apply, a stale weight version) or use different sampling semantics (temperature, top-p/top-k, "
    "logprobs_mode)",
    "isolated": "a few sequences disagree: check their prompts (validate_rollout_prompt), truncation or alignment",
    "numerics": "widespread small disagreement: numerics (bf16, batch-variant kernels at TP >= 4) or partial "
    "staleness",
}


# --------------------------------------------------------------------------------------------------------------
# Models


def _real(value: object) -> float:
    """A finite real number (int or float, never a bool) as a ``float``; ``ValueError`` otherwise (pydantic)."""
    number = real_or_none(value)
    if number is None:
        raise ValueError(f"expected a finite real number, got {type_name(value)}")
    if not math.isfinite(number):
        raise ValueError(f"expected a finite real number, got {number}")
    return number


def _at_least_one(value: float) -> float:
    if value < 1.0:
        raise ValueError(f"must be >= 1 (a mult_prob_error is never below 1), got {value}")
    return value


def _non_negative(value: float) -> float:
    if value < 0.0:
        raise ValueError(f"must be >= 0, got {value}")
    return value


def _fraction(value: float) -> float:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"must lie in [0, 1], got {value}")
    return value


def _band(value: object) -> tuple[float, float]:
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise ValueError(f"must be a (low, high) pair, got {type_name(value)}")
    low, high = _real(value[0]), _real(value[1])
    if not 0.0 < low <= 1.0 <= high:
        raise ValueError(f"must satisfy 0 < low <= 1 <= high, got ({low}, {high})")
    return low, high


_Real = Annotated[float, BeforeValidator(_real)]
_MultBound = Annotated[float, BeforeValidator(_real), AfterValidator(_at_least_one)]
_NonNegative = Annotated[float, BeforeValidator(_real), AfterValidator(_non_negative)]
_Fraction = Annotated[float, BeforeValidator(_real), AfterValidator(_fraction)]
_Band = Annotated[tuple[float, float], BeforeValidator(_band)]


class MismatchReport(BaseModel):
    """The mismatch figures of one batch (SPEC §9.2); frozen, JSON-dumpable and picklable.

    Means are over counted tokens (mask 1, not dropped).  Every statistic is ``None`` when no token is counted.
    Infinite figures (an overflowing ``exp``) are dumped to JSON as the strings ``"Infinity"``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", ser_json_inf_nan="strings")

    kl_type: KlType = Field(description="The estimator of gen_kl and policy_kl.")
    band: tuple[float, float] = Field(description="The (low, high) ratio band of outside_band.")
    tokens: int = Field(description="n, the counted tokens (NeMo RL global_valid_toks).")
    sequences: int = Field(description="Sequences with at least one counted token (global_valid_seqs).")
    dropped_neg_inf: int = Field(
        description="Tokens left out because the learner logprob is -inf (drop mode)."
    )
    mult_prob_error: float | None = Field(description="Mean of exp(|l - g|) (token_mult_prob_error).")
    seq_mult_prob_error_max: float | None = Field(
        description="Max over sequences of their mean exp(|l - g|)."
    )
    seq_mult_prob_error_mean: float | None = Field(
        description="Mean over sequences of their mean exp(|l - g|)."
    )
    seq_mult_prob_error_min: float | None = Field(
        description="Min over sequences of their mean exp(|l - g|)."
    )
    gen_kl: float | None = Field(description="Mean of k(l - g) (gen_kl_error).")
    policy_kl: float | None = Field(description="Mean of k(g - l) (policy_kl_error).")
    js_divergence: float | None = Field(description="Mean of k3 against the mixture (js_divergence_error).")
    abs_diff_p50: float | None = Field(description="Median of |l - g| (linear interpolation).")
    abs_diff_p95: float | None = Field(description="95th percentile of |l - g|.")
    abs_diff_p99: float | None = Field(description="99th percentile of |l - g|.")
    abs_diff_max: float | None = Field(description="Largest |l - g|.")
    mean_diff: float | None = Field(description="Mean of l - g; < 0: the learner gives the tokens less mass.")
    ratio_min: float | None = Field(description="Smallest token ratio exp(l - g).")
    ratio_max: float | None = Field(description="Largest token ratio.")
    ratio_mean: float | None = Field(description="Mean token ratio.")
    outside_band: float | None = Field(description="Fraction of tokens whose ratio lies outside the band.")
    token_ess: float | None = Field(description="(Σr)² / (n Σr²) over token ratios, in (0, 1].")
    sequence_ess: float | None = Field(description="The same over sequence weights exp(Σ (l - g)).")
    worst_sequence: int | None = Field(description="Sequence of the largest |l - g| (first on ties).")
    worst_token: int | None = Field(description="Token position of the largest |l - g|.")
    worst_generation_logprob: float | None = Field(description="vLLM's logprob at the worst token.")
    worst_learner_logprob: float | None = Field(description="The learner's logprob at the worst token.")

    def summary(self) -> str:
        """The figures an operator reads first, in one line (``str(report)``; ``repr`` keeps every field).

        >>> import numpy as np
        >>> report = logprob_mismatch(np.array([[-0.5, -1.0]]), np.array([[-0.5, -1.1]]), np.array([[1, 1]]))
        >>> print(report)  # doctest: +NORMALIZE_WHITESPACE
        logprob agreement over 2 tokens in 1 sequence: mult_prob_error 1.05259 (worst sequence 1.05259),
        k3 gen_kl 0.00241871, max |l - g| 0.1 at sequence 0, token 1 (vLLM -1, learner -1.1),
        0 outside the ratio band [0.8, 1.25], token ESS 0.99751
        """
        counted = f"{self.tokens} token{'s' * (self.tokens != 1)} in {self.sequences} sequence" + "s" * (
            self.sequences != 1
        )
        if self.tokens == 0:
            return f"logprob agreement: no counted token ({counted})"

        def figure(value: float | None) -> str:
            return "none" if value is None else f"{value:.6g}"

        return (
            f"logprob agreement over {counted}: mult_prob_error {figure(self.mult_prob_error)} (worst sequence "
            f"{figure(self.seq_mult_prob_error_max)}), {self.kl_type} gen_kl {figure(self.gen_kl)}, max |l - g| "
            f"{figure(self.abs_diff_max)} at sequence {self.worst_sequence}, token {self.worst_token} (vLLM "
            f"{figure(self.worst_generation_logprob)}, learner {figure(self.worst_learner_logprob)}), "
            f"{figure(self.outside_band)} outside the ratio band [{figure(self.band[0])}, {figure(self.band[1])}], "
            f"token ESS {figure(self.token_ess)}"
        )

    def __str__(self) -> str:
        return self.summary()


class MismatchBounds(BaseModel):
    """Limits :func:`check_logprob_agreement` enforces (SPEC §9.3); a field set to ``None`` disables it.

    Values are finite; the two mult_prob_error limits are >= 1, ``max_outside_band`` and ``min_token_ess`` lie in
    [0, 1], ``max_gen_kl`` and ``max_abs_diff`` are >= 0, ``band`` satisfies 0 < low <= 1 <= high.  Invalid values
    raise pydantic's ``ValidationError`` (a ``ValueError``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_mult_prob_error: _MultBound | None = Field(
        default=1.05,
        description="Limit of mult_prob_error: the figure NeMo RL's functional tests assert on.",
    )
    max_seq_mult_prob_error: _MultBound | None = Field(
        default=None, description="Limit of the worst sequence's mult_prob_error."
    )
    max_gen_kl: _NonNegative | None = Field(default=None, description="Limit of gen_kl.")
    max_abs_diff: _NonNegative | None = Field(default=None, description="Limit of the largest |l - g|.")
    max_abs_mean_diff: _NonNegative | None = Field(
        default=DEFAULT_MAX_ABS_MEAN_DIFF,
        description="Limit of |mean_diff|, the signed bias of l - g: healthy bf16 noise averages out, a truncated "
        "support (processed logprobs renormalised over top-p/top-k/min-p) shifts every token by log S < 0.",
    )
    max_outside_band: _Fraction | None = Field(
        default=None, description="Limit of the fraction of tokens whose ratio lies outside band."
    )
    min_token_ess: _Fraction | None = Field(default=None, description="Lower limit of token_ess.")
    band: _Band = Field(default=DEFAULT_BAND, description="The (low, high) ratio band of outside_band.")


@dataclass(frozen=True)
class TruncatedWeights:
    """Truncated importance weights (SPEC §9.4).

    ``weights`` has the inputs' shape (0 at uncounted positions); ``out_of_bounds`` is the reference's
    ``is_oob_ratio``; ``kept_sequences`` (``[B]`` bool, ``seq-mask-tis`` only, else ``None``) says which sequences
    keep their weights.
    """

    weights: torch.Tensor
    out_of_bounds: float
    kept_sequences: torch.Tensor | None


@dataclass(frozen=True)
class SequenceErrorMask:
    """Sequences kept by ``grpo.seq_logprob_error_threshold`` masking (SPEC §9.4).

    ``keep`` is ``[B]`` bool, ``seq_mult_prob_error`` ``[B]`` float64 (NaN for a sequence without counted tokens),
    ``masked`` the number of sequences not kept.
    """

    keep: torch.Tensor
    seq_mult_prob_error: torch.Tensor
    masked: int


# --------------------------------------------------------------------------------------------------------------
# Inputs (SPEC §9.1)


@dataclass(frozen=True)
class _Batch:
    """Checked inputs: ``[B, T]`` tensors on one device and the bool mask of counted tokens.

    ``clean`` says that every position (counted or not) holds valid logprobs, so nothing needs masking before
    arithmetic; ``all_counted`` that ``counted`` is all True.
    """

    generation: torch.Tensor
    learner: torch.Tensor
    counted: torch.Tensor
    tokens: int
    dropped: int
    clean: bool
    one_dimensional: bool

    @property
    def all_counted(self) -> bool:
        return self.tokens == self.counted.numel()

    @functools.cached_property
    def uncounted(self) -> torch.Tensor | None:
        """``~counted``, or ``None`` when every position counts (computed once, when first needed)."""
        return None if self.all_counted else ~self.counted

    @property
    def shape(self) -> tuple[int, int]:
        return int(self.generation.shape[0]), int(self.generation.shape[1])


def _from_numpy(array: np.ndarray[Any, Any]) -> torch.Tensor:
    """A tensor viewing ``array`` without a copy where torch can (read-only arrays included: nothing writes)."""
    if not array.dtype.isnative:
        array = array.astype(array.dtype.newbyteorder("="))
    if any(stride < 0 for stride in array.strides):
        array = np.ascontiguousarray(array)
    if array.flags.writeable:
        return torch.from_numpy(array)
    with warnings.catch_warnings():  # a read-only array (Ray's object store): this module never writes to it
        warnings.simplefilter("ignore", UserWarning)
        return torch.from_numpy(array)


def _as_tensor(value: object, argument: str, *, mask: bool) -> torch.Tensor:
    """``value`` as a detached dense tensor of an accepted dtype, or ``ContractTypeError`` naming ``argument``."""
    expected = (
        "a torch tensor or numpy array of 0/1 (bool, integer or floating)"
        if mask
        else "a floating torch tensor or numpy array (float16, bfloat16, float32 or float64)"
    )
    if isinstance(value, torch.Tensor):
        if value.layout != torch.strided or value.is_nested:
            raise ContractTypeError.for_value(
                argument, "a dense (strided) tensor", value, actual=f"a tensor with layout {value.layout}"
            )
        if value.device.type == "meta":
            raise ContractTypeError.for_value(
                argument, "a tensor holding values", value, actual="a tensor on the meta device"
            )
        tensor = value.detach()
    elif isinstance(value, np.ndarray):
        if isinstance(value, np.ma.MaskedArray):
            raise ContractTypeError.for_value(
                argument, f"{expected}; pass a masked array's data and its mask as `mask`", value
            )
        accepted_numpy = (
            value.dtype.kind in ("b", "i", "u") or value.dtype.name in _NUMPY_FLOAT_KINDS
            if mask
            else value.dtype.name in _NUMPY_FLOAT_KINDS
        )
        if accepted_numpy:
            tensor = _from_numpy(np.asarray(value))
        else:
            raise ContractTypeError.for_value(
                argument, expected, value, actual=f"numpy array with dtype {render_name(value.dtype)}"
            )
    else:
        raise ContractTypeError.for_value(argument, expected, value)
    dtype = tensor.dtype
    accepted = (
        dtype == torch.bool
        or dtype in _FLOAT_DTYPES
        or (not dtype.is_floating_point and not dtype.is_complex)
        if mask
        else dtype in _FLOAT_DTYPES
    )
    if not accepted:
        raise ContractTypeError.for_value(
            argument, expected, value, actual=f"tensor with dtype {render_name(dtype).removeprefix('torch.')}"
        )
    return tensor


def _position(flat: int, columns: int) -> tuple[int, int]:
    return (flat // columns, flat % columns) if columns else (0, 0)


def _first(flags: torch.Tensor) -> int:
    """The row-major flat index of the first True of a bool tensor that holds one."""
    return int(flags.reshape(-1).to(torch.uint8).argmax())


def _value_at(tensor: torch.Tensor, b: int, t: int) -> float:
    return float(tensor[b, t])


def _format_value(value: float) -> str:
    """A logprob in a message: 8 significant digits (a float32's precision and a little more)."""
    return f"{value:.8g}"


def _attribute(value: float) -> float | None:
    """A value as an error attribute: NaN becomes ``None`` (NaN != NaN would break equality after a pickle)."""
    return None if math.isnan(value) else value


def _located(
    message: str,
    argument: str,
    batch_g: torch.Tensor,
    batch_l: torch.Tensor,
    flat: int,
    one_dimensional: bool,
) -> LogprobContractError:
    b, t = _position(flat, int(batch_g.shape[1]))
    where = f"[{t}]" if one_dimensional else f"[{b}, {t}]"
    g, lp = _value_at(batch_g, b, t), _value_at(batch_l, b, t)
    return LogprobContractError(
        message.format(where=where, g=_format_value(g), l=_format_value(lp)),
        argument=argument,
        sequence_index=b,
        token_index=t,
        generation_logprob=_attribute(g),
        learner_logprob=_attribute(lp),
    )


def _check_options(neg_inf: object, positive_tolerance: object) -> float:
    if not isinstance(neg_inf, str):
        raise ContractTypeError.for_value("neg_inf", "'error' or 'drop'", neg_inf)
    if neg_inf not in ("error", "drop"):
        raise LogprobContractError(
            f"neg_inf must be 'error' or 'drop', got '{render_name(neg_inf)}'", argument="neg_inf"
        )
    return _tolerance(positive_tolerance)


def _tolerance(value: object) -> float:
    return require_float(value, "positive_tolerance", low=0, error=LogprobContractError)


def _checked_batch(
    generation: object,
    learner: object,
    mask: object,
    *,
    names: tuple[str, str] = ("generation_logprobs", "learner_logprobs"),
    neg_inf: str | None = None,
    tolerance: float = 1e-4,
) -> _Batch:
    """Check the inputs of §9.1 and return them as ``[B, T]`` tensors on one device with a bool mask.

    ``neg_inf=None`` (the importance-sampling corrections, which take no such option) raises on a learner -inf."""
    g_name, l_name = names
    g = _as_tensor(generation, g_name, mask=False)
    lp = _as_tensor(learner, l_name, mask=False)
    m = None if mask is None else _as_tensor(mask, "mask", mask=True)
    device = _common_device(
        [(g_name, g, isinstance(generation, torch.Tensor)), (l_name, lp, isinstance(learner, torch.Tensor))]
        + ([("mask", m, isinstance(mask, torch.Tensor))] if m is not None else [])
    )
    g, lp = g.to(device), lp.to(device)
    for name, tensor in ((g_name, g), (l_name, lp)):
        if tensor.ndim not in (1, 2):
            raise LogprobContractError(
                f"{name} must have shape [B, T] or [T], got {tensor.ndim} dimensions "
                f"{render(tuple(tensor.shape))}",
                argument=name,
            )
    if g.shape != lp.shape:
        raise LogprobContractError(
            f"{g_name} and {l_name} must have the same shape, got {render(tuple(g.shape))} and "
            f"{render(tuple(lp.shape))}; position [b, t] of both must describe the same token",
            argument=l_name,
        )
    one_dimensional = g.ndim == 1
    if one_dimensional:
        g, lp = g.unsqueeze(0), lp.unsqueeze(0)
    counted = _counted(m, tuple(g.shape), one_dimensional, device, g, lp)
    return _checked_values(
        g, lp, counted, names, neg_inf or "error", tolerance, one_dimensional, droppable=neg_inf is not None
    )


def _common_device(inputs: list[tuple[str, torch.Tensor, bool]]) -> torch.device:
    """The device of the torch inputs (numpy inputs follow it); ``LogprobContractError`` when they differ."""
    devices = [(name, tensor.device) for name, tensor, is_torch in inputs if is_torch]
    if not devices:
        return torch.device("cpu")
    first_name, first = devices[0]
    for name, device in devices[1:]:
        if device != first:
            raise LogprobContractError(
                f"{first_name} is on {render_name(first)} but {name} on {render_name(device)}; move them to one "
                "device",
                argument=name,
            )
    return first


def _counted(
    mask: torch.Tensor | None,
    shape: tuple[int, ...],
    one_dimensional: bool,
    device: torch.device,
    g: torch.Tensor,
    lp: torch.Tensor,
) -> torch.Tensor | None:
    """The mask as bool ``[B, T]`` (``None``: every position counts); its values must be 0 or 1."""
    if mask is None:
        return None
    mask = mask.to(device)
    expected = shape[1:] if one_dimensional else shape
    if tuple(mask.shape) != expected:
        raise LogprobContractError(
            f"mask must have the logprobs' shape {render(expected)}, got {render(tuple(mask.shape))}",
            argument="mask",
        )
    if one_dimensional:
        mask = mask.unsqueeze(0)
    if mask.dtype == torch.bool:
        return mask
    if mask.dtype in (torch.uint16, torch.uint32, torch.uint64):  # torch compares these only after a widening
        mask = mask.to(torch.int64)  # a uint64 above 2**63 wraps negative: still no 0/1
    ones = mask == 1
    if int(torch.count_nonzero(mask)) != int(
        torch.count_nonzero(ones)
    ):  # a value other than 0 and 1, NaN included
        flat = _first((mask != 0) & ~ones)
        b, t = _position(flat, shape[-1])
        where = f"[{t}]" if one_dimensional else f"[{b}, {t}]"
        raise LogprobContractError(
            f"mask{where} = {render(mask[b, t].item())}: a mask holds only 0 and 1 (bool, integer or floating); "
            "a weighted mask is not a token mask",
            argument="mask",
            sequence_index=b,
            token_index=t,
            generation_logprob=_attribute(_value_at(g, b, t)),
            learner_logprob=_attribute(_value_at(lp, b, t)),
        )
    return ones


def _clean(tensor: torch.Tensor, tolerance: float, *, allow_neg_inf: bool) -> bool:
    """Whether every value of ``tensor`` is a valid logprob (one ``aminmax`` pass, NaN propagates)."""
    low, high = torch.aminmax(tensor)
    low_ok = bool(low >= -math.inf) if allow_neg_inf else bool(low > -math.inf)
    return low_ok and bool(high <= tolerance)


def _checked_values(
    g: torch.Tensor,
    lp: torch.Tensor,
    counted: torch.Tensor | None,
    names: tuple[str, str],
    neg_inf: str,
    tolerance: float,
    one_dimensional: bool,
    *,
    droppable: bool,
) -> _Batch:
    """The value rules of §9.1 at counted tokens; a fast whole-tensor check first, exact positions on failure.

    ``droppable`` says whether the caller takes ``neg_inf`` (the -inf error advises it only then)."""
    g_name, l_name = names
    if g.numel() == 0:
        empty = torch.zeros(g.shape, dtype=torch.bool, device=g.device)
        return _Batch(g, lp, empty, 0, 0, True, one_dimensional)
    if _clean(g, tolerance, allow_neg_inf=False) and _clean(lp, tolerance, allow_neg_inf=False):
        return _finished(g, lp, counted, 0, True, one_dimensional)
    live = torch.ones(g.shape, dtype=torch.bool, device=g.device) if counted is None else counted
    bad_g = ~((g <= tolerance) & (g > -math.inf)) & live
    bad_l = ~(lp <= tolerance) & live
    minus_inf = (lp == -math.inf) & live
    bad = bad_g | bad_l | minus_inf if neg_inf == "error" else bad_g | bad_l
    if bool(bad.any()):
        flat = _first(bad)
        b, t = _position(flat, int(g.shape[1]))
        if bool(bad_g[b, t]):
            raise _located(
                f"{g_name}{{where}} = {{g}}: vLLM's logprob of a counted token must be finite and <= "
                f"positive_tolerance {render(tolerance)} (learner {{l}}); mask the position out if it is padding",
                g_name,
                g,
                lp,
                flat,
                one_dimensional,
            )
        if bool(bad_l[b, t]):
            raise _located(
                f"{l_name}{{where}} = {{l}}: the learner's logprob of a counted token must be <= "
                f"positive_tolerance {render(tolerance)} and not NaN or +inf (vLLM {{g}}); mask the position out if "
                "it is padding",
                l_name,
                g,
                lp,
                flat,
                one_dimensional,
            )
        remedy = (
            "neg_inf='drop' to leave such tokens out"
            if droppable
            else "set the mask to 0 there to leave such tokens out"
        )
        raise _located(
            f"{l_name}{{where}} = -inf where vLLM sampled the token (vLLM {{g}}): the learner's top-k/top-p "
            f"filtering excluded it; use the engine's sampling semantics, or {remedy} (NeMo RL "
            "mask_out_neg_inf_logprobs)",
            l_name,
            g,
            lp,
            flat,
            one_dimensional,
        )
    dropped = int(torch.count_nonzero(minus_inf))
    if dropped:
        live = live & ~minus_inf
        counted = live
    return _finished(g, lp, counted, dropped, False, one_dimensional)


def _finished(
    g: torch.Tensor,
    lp: torch.Tensor,
    counted: torch.Tensor | None,
    dropped: int,
    clean: bool,
    one_dimensional: bool,
) -> _Batch:
    if counted is None:
        full = torch.ones(g.shape, dtype=torch.bool, device=g.device)
        return _Batch(g, lp, full, int(g.numel()), dropped, clean, one_dimensional)
    return _Batch(g, lp, counted, int(torch.count_nonzero(counted)), dropped, clean, one_dimensional)


def _check_kl_type(kl_type: object) -> str:
    if not isinstance(kl_type, str):
        raise ContractTypeError.for_value("kl_type", "'k1', 'k2' or 'k3'", kl_type)
    if kl_type not in ("k1", "k2", "k3"):
        raise LogprobContractError(
            f"kl_type must be 'k1', 'k2' or 'k3', got '{render_name(kl_type)}'", argument="kl_type"
        )
    return kl_type


def _check_band(band: object) -> tuple[float, float]:
    if not isinstance(band, tuple | list) or len(band) != 2:
        raise ContractTypeError.for_value("band", "a (low, high) pair of numbers", band)
    low, high = (
        require_float(band[i], f"band[{i}]", error=LogprobContractError, argument="band") for i in (0, 1)
    )
    if not 0.0 < low <= 1.0 <= high:
        raise LogprobContractError(
            f"band must be finite with 0 < low <= 1 <= high, got ({render(low)}, {render(high)})",
            argument="band",
        )
    return low, high


# --------------------------------------------------------------------------------------------------------------
# Statistics (SPEC §9.2)


_CHUNK_ELEMENTS: Final = 1 << 18
"""Elements per chunk of row-wise work whose temporaries would otherwise be input-sized (2 MB in float64)."""


def _chunk_rows(columns: int) -> int:
    """Rows per chunk of about ``_CHUNK_ELEMENTS`` elements (at least one)."""
    return max(1, _CHUNK_ELEMENTS // max(columns, 1))


def _differences(batch: _Batch) -> torch.Tensor:
    """Δ = l - g in float64 (exact for any input dtype), 0 at uncounted positions; a new contiguous tensor.

    Converted chunk by chunk: a mixed-dtype ``sub_`` would otherwise cast all of g to float64 at once.
    """
    rows, columns = batch.shape
    d = torch.empty((rows, columns), dtype=torch.float64, device=batch.generation.device)
    step = _chunk_rows(columns)
    for start in range(0, rows, step):
        part = d[start : start + step]
        part.copy_(batch.learner[start : start + step])
        part.sub_(batch.generation[start : start + step])
    if batch.uncounted is not None:
        d.masked_fill_(batch.uncounted, 0.0)  # also clears whatever junk an uncounted position holds
    return d


def _row_counts(flags: torch.Tensor) -> torch.Tensor:
    """Per-row True counts of a bool ``[B, T]`` tensor (int64 ``[B]``), without an input-sized int64 cast."""
    rows, columns = int(flags.shape[0]), int(flags.shape[1])
    step = _chunk_rows(columns)
    if step >= rows:
        return flags.sum(dim=1)
    return torch.cat([flags[start : start + step].sum(dim=1) for start in range(0, rows, step)])


def _order_statistics(values: torch.Tensor, ranks: list[int]) -> list[float]:
    """The values of the given 0-based ranks of a contiguous 1-D tensor (which it may reorder).

    On the CPU one numpy partition selects them all in place (linear time); elsewhere a device sort.
    """
    if values.device.type == "cpu":
        array = values.numpy()
        array.partition(ranks)
        return [float(array[rank]) for rank in ranks]
    ordered = torch.sort(values).values
    picked = ordered[torch.tensor(ranks, device=values.device)]
    return [float(v) for v in picked.tolist()]


def _quantiles(work: torch.Tensor, batch: _Batch) -> list[float]:
    """``torch.quantile``'s linear-interpolation p50, p95, p99 of |Δ| over counted tokens; ``work`` holds |Δ| and
    is overwritten (it is reordered in place)."""
    n, total = batch.tokens, work.numel()
    if batch.uncounted is not None:
        work.masked_fill_(batch.uncounted, -1.0)  # below every |Δ|: ranks shift by the uncounted count
    offset = total - n
    spots = []
    for q in _QUANTILES:
        position = q * (n - 1)
        low = math.floor(position)
        spots.append((low, min(low + 1, n - 1), position - low))
    ranks = sorted({offset + r for low, high, _ in spots for r in (low, high)})
    found = dict(zip(ranks, _order_statistics(work.view(-1), ranks), strict=True))
    del work
    result = []
    for low, high, weight in spots:
        a, b = found[offset + low], found[offset + high]
        result.append(a + weight * (b - a) if weight < 0.5 else b - (b - a) * (1.0 - weight))
    return result


def _exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


@dataclass(frozen=True)
class _Figures:
    """A report and the per-sequence figures the check needs."""

    report: MismatchReport
    seq_mult: torch.Tensor  # float64 [B], NaN without counted tokens
    batch: _Batch
    worst: (
        tuple[int, int, float, float] | None
    )  # (b, t, g, l) of the largest |Δ|; None without counted tokens


def _figures(batch: _Batch, kl_type: str, band: tuple[float, float]) -> _Figures:
    rows, columns = batch.shape
    seq_counts = _row_counts(batch.counted)
    has_tokens = seq_counts > 0
    sequences = int(torch.count_nonzero(has_tokens))
    n = batch.tokens
    if n == 0:
        report = MismatchReport.model_validate(
            {
                "kl_type": kl_type,
                "band": band,
                "tokens": 0,
                "sequences": 0,
                "dropped_neg_inf": batch.dropped,
                **dict.fromkeys(_STATISTICS),
            }
        )
        nan = torch.full((rows,), math.nan, dtype=torch.float64, device=batch.generation.device)
        return _Figures(report, nan, batch, None)
    d = _differences(batch)
    a = d.abs()
    flat = int(a.view(-1).argmax())
    a_max = float(a.view(-1)[flat])
    if a_max == 0.0 and batch.uncounted is not None:
        flat = _first(batch.counted)
    worst_b, worst_t = _position(flat, columns)

    # JS divergence: ½k3(l - M) + ½k3(g - M) with M = logaddexp(l, g) - log 2 is exactly log cosh(Δ / 2).
    work = torch.mul(a, 0.5)
    beyond = 0.0
    if a_max > 2 * _COSH_LIMIT:
        beyond = float((work - _COSH_LIMIT).clamp_min_(0.0).sum())
        work.clamp_(max=_COSH_LIMIT)
    js = (float(work.cosh_().log_().sum()) + beyond) / n

    # mult_prob_error: exp(|Δ|), per sequence and overall; then a is reordered in place for the quantiles.
    e = torch.exp(a, out=work)
    if batch.uncounted is not None:
        e.masked_fill_(batch.uncounted, 0.0)
    seq_sums = e.sum(dim=1)
    p50, p95, p99 = _quantiles(a, batch)
    del a
    mult = float(seq_sums.sum()) / n
    seq_mult = torch.where(has_tokens, seq_sums / seq_counts.clamp_min(1), math.nan)
    counted_seq = seq_mult[has_tokens]
    seq_min, seq_max = (float(v) for v in torch.aminmax(counted_seq))
    seq_mean = float(counted_seq.mean())

    # Signed extremes of Δ over counted tokens, then the ratios shifted by the largest log ratio (no overflow).
    d_min, d_max = _signed_extremes(d, batch, work)
    torch.sub(d, d_max, out=work)
    work.exp_()
    if batch.uncounted is not None:
        work.masked_fill_(batch.uncounted, 0.0)
    s1 = float(work.sum())
    flat_work = work.view(-1)
    s2 = float(torch.dot(flat_work, flat_work))
    token_ess = min(s1 * s1 / (n * s2), 1.0)
    ratio_mean = _exp(d_max + math.log(s1 / n))
    log_low, log_high = math.log(band[0]), math.log(band[1])
    outside = (
        int(torch.count_nonzero((d > log_high) | (d < log_low))) / n
    )  # uncounted Δ = 0 lies inside any band

    sum_d = float(d.sum())
    gen_kl, policy_kl = _kls(d, work, kl_type, sum_d, n)
    seq_log_weights = d.sum(dim=1)[has_tokens]
    sequence_ess = _ess_from_logs(seq_log_weights)
    report = MismatchReport(
        kl_type=kl_type,
        band=band,
        tokens=n,
        sequences=sequences,
        dropped_neg_inf=batch.dropped,
        mult_prob_error=mult,
        seq_mult_prob_error_max=seq_max,
        seq_mult_prob_error_mean=seq_mean,
        seq_mult_prob_error_min=seq_min,
        gen_kl=gen_kl,
        policy_kl=policy_kl,
        js_divergence=js,
        abs_diff_p50=p50,
        abs_diff_p95=p95,
        abs_diff_p99=p99,
        abs_diff_max=a_max,
        mean_diff=sum_d / n,
        ratio_min=_exp(d_min),
        ratio_max=_exp(d_max),
        ratio_mean=ratio_mean,
        outside_band=outside,
        token_ess=token_ess,
        sequence_ess=sequence_ess,
        worst_sequence=worst_b,
        worst_token=worst_t,
        worst_generation_logprob=_value_at(batch.generation, worst_b, worst_t),
        worst_learner_logprob=_value_at(batch.learner, worst_b, worst_t),
    )
    return _Figures(
        report,
        seq_mult,
        batch,
        (
            worst_b,
            worst_t,
            _value_at(batch.generation, worst_b, worst_t),
            _value_at(batch.learner, worst_b, worst_t),
        ),
    )


_STATISTICS: Final = tuple(
    name
    for name in MismatchReport.model_fields
    if name not in ("kl_type", "band", "tokens", "sequences", "dropped_neg_inf")
)


def _signed_extremes(d: torch.Tensor, batch: _Batch, scratch: torch.Tensor) -> tuple[float, float]:
    """Min and max of Δ over counted tokens; uncounted zeros decide nothing unless they could be the extreme."""
    low, high = (float(v) for v in torch.aminmax(d))
    if batch.uncounted is None or (low < 0.0 < high):
        return low, high
    scratch.copy_(d)
    if high <= 0.0:
        high = float(scratch.masked_fill_(batch.uncounted, -math.inf).max())
    if low >= 0.0:
        low = float(scratch.masked_fill_(batch.uncounted, math.inf).min())
    return low, high


def _kls(d: torch.Tensor, work: torch.Tensor, kl_type: str, sum_d: float, n: int) -> tuple[float, float]:
    """Mean k(l - g) and mean k(g - l) over counted tokens (Δ is 0 at uncounted ones, where every k is 0)."""
    if kl_type == "k1":
        return -sum_d / n, sum_d / n
    if kl_type == "k2":
        flat = d.view(-1)
        half_square = float(torch.dot(flat, flat)) / 2 / n
        return half_square, half_square
    torch.expm1(d, out=work)
    gen = float(work.sub_(d).sum()) / n
    torch.neg(d, out=work)
    policy = float(work.expm1_().add_(d).sum()) / n
    return gen, policy


def _ess_from_logs(log_weights: torch.Tensor) -> float:
    """(Σw)² / (S·Σw²) for w = exp(log_weights), computed shifted by the largest log weight (never overflows)."""
    shifted = torch.exp(log_weights - log_weights.max())
    s1, s2 = float(shifted.sum()), float(shifted.square().sum())
    return min(s1 * s1 / (log_weights.numel() * s2), 1.0)


def logprob_mismatch(
    generation_logprobs: LogprobArray,
    learner_logprobs: LogprobArray,
    mask: MaskArray = None,
    *,
    kl_type: KlType = "k3",
    band: tuple[float, float] = DEFAULT_BAND,
    neg_inf: NegInfPolicy = "error",
    positive_tolerance: float = 1e-4,
) -> MismatchReport:
    """The mismatch figures between vLLM's and the learner's logprobs of the same tokens (SPEC §9.2).

    ``generation_logprobs`` (g) are vLLM's logprobs of the sampled tokens, ``learner_logprobs`` (l) the learner's of
    the same tokens (NeMo RL's ``prev_logprobs``), ``mask`` which positions count (``None``: all).  Position
    ``[b, t]`` of all three must describe the same token; an uncounted position is ignored completely, NaN
    included.  Statistics are accumulated in float64 whatever the input dtype; see :class:`MismatchReport` for the
    figures, with NeMo RL's definitions (``token_mult_prob_error``, ``gen_kl_error``, ``policy_kl_error``,
    ``js_divergence_error``).  ``js_divergence`` is computed as the identical ``mean(log cosh(Δ / 2))``, which is
    never negative in floating point.

    Raises:
        ContractTypeError: an input that is no torch tensor or numpy array, a non-floating logprob dtype, a
            complex mask, or an option of the wrong type.
        LogprobContractError: shapes that differ or have more than 2 dimensions, a mask value other than 0/1,
            tensors on different devices, a bad option value, or at a counted token: g not finite or above
            ``positive_tolerance``, l NaN, +inf or above it, l = -inf with ``neg_inf="error"`` (the first offending
            ``[b, t]`` in row-major order, which input and its value are named).

    >>> report = logprob_mismatch(torch.tensor([[-1.0, -2.0]]), torch.tensor([[-1.0, -2.5]]))
    >>> round(report.mult_prob_error, 4), report.worst_token
    (1.3244, 1)
    """
    kl = _check_kl_type(kl_type)
    low_high = _check_band(band)
    tolerance = _check_options(neg_inf, positive_tolerance)
    batch = _checked_batch(generation_logprobs, learner_logprobs, mask, neg_inf=neg_inf, tolerance=tolerance)
    with torch.no_grad():
        return _figures(batch, kl, low_high).report


# --------------------------------------------------------------------------------------------------------------
# The check (SPEC §9.3)

_BOUND_FIGURES: Final = (
    ("max_mult_prob_error", "mult_prob_error", ">"),
    ("max_seq_mult_prob_error", "seq_mult_prob_error_max", ">"),
    ("max_gen_kl", "gen_kl", ">"),
    ("max_abs_diff", "abs_diff_max", ">"),
    ("max_outside_band", "outside_band", ">"),
    ("min_token_ess", "token_ess", "<"),
    ("max_abs_mean_diff", "mean_diff", "|>|"),
)
_DEFAULT_SEQUENCE_LIMIT: Final = 1.05


def _exceeded(report: MismatchReport, bounds: MismatchBounds) -> list[tuple[str, str, float, float, str]]:
    """``(bound, figure, value, limit, comparison)`` of every enabled bound that does not hold."""
    failed = []
    for bound, figure, comparison in _BOUND_FIGURES:
        limit = getattr(bounds, bound)
        value = getattr(report, figure)
        if limit is None or value is None:
            continue
        if comparison == "|>|":
            if abs(value) > limit:
                failed.append((bound, f"|{figure}|", abs(float(value)), float(limit), ">"))
            continue
        if (value > limit) if comparison == ">" else (value < limit):
            failed.append((bound, figure, float(value), float(limit), comparison))
    return failed


def _shifted_mult_error(g: torch.Tensor, lp: torch.Tensor, joint: torch.Tensor) -> float | None:
    """mult_prob_error of two aligned slices over their jointly counted tokens (``None`` when there is none)."""
    count = int(torch.count_nonzero(joint))
    if count == 0:
        return None
    d = lp.to(torch.float64, memory_format=torch.contiguous_format, copy=True)
    d.sub_(g)
    d.masked_fill_(~joint, 0.0)
    return float(d.abs_().exp_().masked_fill_(~joint, 0.0).sum()) / count


def _shift(figures: _Figures) -> str | None:
    """The direction of a shift by one position (§9.3 rule 1), or ``None``."""
    batch = figures.batch
    e = figures.report.mult_prob_error
    if e is None or batch.shape[1] < 2:
        return None
    limit = 1.0 + (e - 1.0) / 4.0
    g, lp, c = batch.generation, batch.learner, batch.counted
    pairs = {
        "early": (g[:, 1:], lp[:, :-1], c[:, 1:] & c[:, :-1]),
        "late": (g[:, :-1], lp[:, 1:], c[:, :-1] & c[:, 1:]),
    }
    best: tuple[float, str] | None = None
    for name, (gs, ls, joint) in pairs.items():
        value = _shifted_mult_error(gs, ls, joint)
        if value is not None and value < limit and (best is None or value < best[0]):
            best = (value, name)
    return None if best is None else best[1]


def _format(value: float) -> str:
    return f"{value:.6g}"


def _truncated_support(figures: _Figures, settings: SamplingSettings | None) -> str | None:
    """The explanation of a truncated support (processed logprobs renormalised over top-p/top-k/min-p against a
    full-vocabulary learner), or ``None``: truncation in effect, processed (or unstated) logprobs, and a negative
    bias that carries at least half of the error (``-mean_diff >= (mult_prob_error - 1) / 2``; pure truncation
    gives about 1, noise around the bias lowers it)."""
    report = figures.report
    mean, mult = report.mean_diff, report.mult_prob_error
    if settings is None or not settings.truncates or mean is None or mult is None or mean >= 0.0:
        return None
    if settings.logprobs_mode not in (None, "processed_logprobs") or -mean < (mult - 1.0) / 2.0:
        return None
    return (
        f"vLLM sampled with {settings.truncation} and its processed logprobs are renormalised over the kept support, "
        f"log(p/S), while the learner's log-softmax covers the full vocabulary, log p: every ratio carries log S < 0 "
        f"(mean_diff {_format(mean)}, a kept mass of about {math.exp(mean):.3f}); renormalise the learner over the "
        "kept support (e.g. with vLLM's returned sampling mask) or train on raw logprobs (logprobs_mode="
        "'raw_logprobs')"
    )


def _mismatch_error(
    figures: _Figures, bounds: MismatchBounds, failed: list[Any], settings: SamplingSettings | None
) -> LogprobMismatchError:
    report = figures.report
    sequence_limit = (
        bounds.max_seq_mult_prob_error
        if bounds.max_seq_mult_prob_error is not None
        else bounds.max_mult_prob_error
        if bounds.max_mult_prob_error is not None
        else _DEFAULT_SEQUENCE_LIMIT
    )
    exceeding = (figures.seq_mult > sequence_limit) & ~figures.seq_mult.isnan()
    affected = tuple(int(i) for i in torch.nonzero(exceeding).view(-1).tolist())
    sequences = report.sequences
    direction = _shift(figures)
    truncated = None if direction is not None else _truncated_support(figures, settings)
    cause: str
    if direction is not None:
        cause = "shift"
        explanation = f"the learner's log-probabilities look shifted by one position against vLLM's ({_SHIFT_NAMES[direction]})"
    elif truncated is not None:
        cause, explanation = "truncated_support", truncated
    elif len(affected) >= 0.9 * sequences or all(bound == "max_abs_mean_diff" for bound, *_ in failed):
        cause, explanation = "uniform", _CAUSES["uniform"]
    elif len(affected) <= 0.1 * sequences:
        cause, explanation = "isolated", _CAUSES["isolated"]
    else:
        cause, explanation = "numerics", _CAUSES["numerics"]
    if settings is None and cause != "shift" and (report.mean_diff or 0.0) < 0.0:
        explanation += (
            "; a negative mean_diff is also what a truncated support gives (processed logprobs under top-p/top-k/"
            "min-p): pass sampling= to tell"
        )
    broken = "; ".join(
        f"{figure} {_format(value)} {comparison} {bound} {_format(limit)}"
        for bound, figure, value, limit, comparison in failed
    )
    b, t, g_worst, l_worst = figures.worst or (0, 0, math.nan, math.nan)  # a failing batch has counted tokens
    listed = f": {render_list(affected)}" if affected else ""
    message = (
        f"vLLM's and the learner's logprobs disagree: {broken} over {report.tokens} counted tokens in {sequences} "
        f"sequences; {len(affected)} of {sequences} sequences exceed seq_mult_prob_error "
        f"{_format(sequence_limit)}{listed}; worst token: sequence {b}, token {t}: vLLM {g_worst:.3f}, learner "
        f"{l_worst:.3f} (|difference| {_format(abs(l_worst - g_worst))}); likely cause ({cause}): {explanation}"
    )
    return LogprobMismatchError(
        message,
        argument="learner_logprobs",
        sequence_index=b,
        token_index=t,
        generation_logprob=g_worst,
        learner_logprob=l_worst,
        exceeded=tuple(bound for bound, *_ in failed),
        report=report,
        likely_cause=cause,
        affected_sequences=affected,
    )


def check_logprob_agreement(
    generation_logprobs: LogprobArray,
    learner_logprobs: LogprobArray,
    mask: MaskArray = None,
    *,
    bounds: MismatchBounds = MismatchBounds(),  # noqa: B008 (a frozen model: never mutated)
    kl_type: KlType = "k3",
    neg_inf: NegInfPolicy = "error",
    positive_tolerance: float = 1e-4,
    sampling: SamplingSource | None = None,
    logprobs_mode: str | None = None,
) -> MismatchReport:
    """Return the :class:`MismatchReport` when every enabled bound holds, else raise with a diagnosis (SPEC §9.3).

    The report is :func:`logprob_mismatch`'s with ``band=bounds.band``; a batch without counted tokens holds
    trivially.  A sequence *exceeds* when its own mult_prob_error is above ``bounds.max_seq_mult_prob_error``, or
    above ``bounds.max_mult_prob_error`` when that is unset (1.05 when both are).  ``sampling`` (vLLM
    ``SamplingParams``, a mapping, or the recipe's generation section; see
    :func:`~rl_contracts.vllm_arguments.sampling_settings`) and ``logprobs_mode`` are how vLLM sampled: they change no
    figure and no bound, only the diagnosis.

    Raises:
        LogprobMismatchError: a bound does not hold.  The message gives each exceeded bound with its value and
            limit, the token and sequence counts, how many (and which) sequences exceed, the worst token
            (``sequence 3, token 41: vLLM -0.021, learner -2.750``) and the likely cause; the attributes carry
            ``exceeded``, ``report``, ``likely_cause`` (``"shift"``, ``"uniform"``, ``"isolated"`` or ``"numerics"``),
            ``affected_sequences`` and the worst token's position and values.  The cause rules, in order: a
            shift by one position lowers the error to below a quarter of its excess over 1 (``"shift"``);
            ``sampling`` truncates (top-p < 1, top-k, min-p), ``logprobs_mode`` is processed or unstated and the
            tokens share a negative bias (``"truncated_support"``: the message names the kept mass and the remedy,
            renormalising the learner over the kept support or training on raw logprobs); at least 90% of the
            sequences exceed, or only the bias bound failed (``"uniform"``); at most 10% exceed
            (``"isolated"``); otherwise ``"numerics"``.
        ContractTypeError, LogprobContractError: as :func:`logprob_mismatch`; ``bounds`` not a
            :class:`MismatchBounds` is a ``ContractTypeError``.
        ContractTypeError, SamplingParamsError: ``sampling`` or ``logprobs_mode`` as
            :func:`~rl_contracts.vllm_arguments.sampling_settings` refuses them.
    """
    if not isinstance(bounds, MismatchBounds):
        raise ContractTypeError.for_value("bounds", "a MismatchBounds", bounds)
    kl = _check_kl_type(kl_type)
    tolerance = _check_options(neg_inf, positive_tolerance)
    settings = (
        sampling_settings({} if sampling is None else sampling, logprobs_mode=logprobs_mode)
        if sampling is not None or logprobs_mode is not None
        else None
    )
    batch = _checked_batch(generation_logprobs, learner_logprobs, mask, neg_inf=neg_inf, tolerance=tolerance)
    with torch.no_grad():
        figures = _figures(batch, kl, bounds.band)
        failed = _exceeded(figures.report, bounds)
        if failed:
            raise _mismatch_error(figures, bounds, failed, settings)
    return figures.report


# --------------------------------------------------------------------------------------------------------------
# Importance-sampling corrections (SPEC §9.4)


def _weight_dtype(batch: _Batch) -> torch.dtype:
    return torch.promote_types(
        torch.promote_types(batch.learner.dtype, batch.generation.dtype), torch.float32
    )


def _token_ratios(batch: _Batch, dtype: torch.dtype, *, zero_uncounted: bool = True) -> torch.Tensor:
    """exp(l - g) in ``dtype`` (as the reference computes it); raises when a counted ratio overflows.

    Uncounted positions hold 0 with ``zero_uncounted``; otherwise whatever the padding gives (callers mask them).
    """
    lp, g = batch.learner, batch.generation
    ratio = torch.sub(lp, g) if lp.dtype == g.dtype == dtype else lp.to(dtype, copy=True).sub_(g)
    ratio.exp_()
    uncounted = batch.uncounted
    if uncounted is not None and (zero_uncounted or not batch.clean):
        ratio.masked_fill_(uncounted, 0.0)  # junk at padding never reaches the overflow check
    if ratio.numel() and not bool(torch.isfinite(ratio.max())):
        overflow = (ratio == math.inf) & batch.counted
        if bool(overflow.any()):
            _raise_overflow(batch, dtype, _first(overflow))
    return ratio


def _raise_overflow(batch: _Batch, dtype: torch.dtype, flat: int) -> None:
    b, t = _position(flat, batch.shape[1])
    g, lp = _value_at(batch.generation, b, t), _value_at(batch.learner, b, t)
    where = f"[{t}]" if batch.one_dimensional else f"[{b}, {t}]"
    raise LogprobContractError(
        f"the importance weight at {where} is not finite in {render_name(dtype).removeprefix('torch.')}: "
        f"exp(learner {_format_value(lp)} - vLLM {_format_value(g)}) = exp({_format_value(lp - g)}) overflows (the "
        "reference silently replaces it by 0); the learner and the engine disagree by far too much to correct",
        argument="learner_logprobs",
        sequence_index=b,
        token_index=t,
        generation_logprob=_attribute(g),
        learner_logprob=_attribute(lp),
    )


def _sequence_log_ratios(batch: _Batch) -> tuple[torch.Tensor, torch.Tensor]:
    """Σ and count of (l - g) over each sequence's counted tokens, in float64: ``([B], [B])``."""
    d = _differences(batch)
    return d.sum(dim=1), _row_counts(batch.counted)


def importance_weights(
    learner_logprobs: LogprobArray,
    generation_logprobs: LogprobArray,
    mask: MaskArray = None,
    *,
    level: WeightLevel = "token",
) -> torch.Tensor:
    """The reference's off-policy importance-sampling correction (``ClippedPGLossFn``): exp(l - g) (SPEC §9.4).

    ``level="token"``: exp(l - g) at counted tokens; ``level="sequence"`` (GSPO-style): every counted token of
    sequence s carries exp(Σ over s's counted tokens of (l - g)).  0 at uncounted positions.  The result has the
    inputs' shape, lives on their device, and has the promotion of their dtypes, at least float32; it never
    requires grad.  Note the argument order: the learner's logprobs come first, as in the reference.

    Raises:
        LogprobContractError: a weight that is not finite in the result dtype (a summed log ratio that overflows,
            say exp(812.3) in float32), naming the sequence (and token) and its log weight; the input checks of
            :func:`logprob_mismatch` (with ``neg_inf="error"``).
        ContractTypeError: as :func:`logprob_mismatch`; ``level`` not a str.

    Divergence: the reference replaces non-finite weights by 0 (``torch.nan_to_num``), dropping the token or the
    whole sequence without a word.
    """
    if not isinstance(level, str):
        raise ContractTypeError.for_value("level", "'token' or 'sequence'", level)
    if level not in ("token", "sequence"):
        raise LogprobContractError(
            f"level must be 'token' or 'sequence', got '{render_name(level)}'", argument="level"
        )
    batch = _checked_batch(
        generation_logprobs, learner_logprobs, mask, names=("generation_logprobs", "learner_logprobs")
    )
    dtype = _weight_dtype(batch)
    with torch.no_grad():
        weights = _token_ratios(batch, dtype) if level == "token" else _sequence_weights(batch, dtype)
    return weights[0] if batch.one_dimensional else weights


def _sequence_weights(batch: _Batch, dtype: torch.dtype) -> torch.Tensor:
    sums, counts = _sequence_log_ratios(batch)
    per_sequence = sums.exp().to(dtype)
    bad = ~torch.isfinite(per_sequence) & (counts > 0)
    if bool(bad.any()):
        b = _first(bad)
        raise LogprobContractError(
            f"the sequence importance weight of sequence {b} is not finite in "
            f"{render_name(dtype).removeprefix('torch.')}: exp({_format(float(sums[b]))}) overflows (the reference "
            "silently replaces it by 0); the learner and the engine disagree by far too much to correct",
            argument="learner_logprobs",
            sequence_index=b,
        )
    return torch.where(
        batch.counted, per_sequence.unsqueeze(1), torch.zeros((), dtype=dtype, device=sums.device)
    )


_RATIO = "the recipe's truncated_importance_sampling_ratio"
"""What ``high`` (``low``: its ``_min``) is in a recipe, for the messages."""


def _check_truncation(kind: object, high: object, low: object) -> tuple[str, float, float | None]:
    if not isinstance(kind, str):
        raise ContractTypeError.for_value("kind", "'tis', 'icepop' or 'seq-mask-tis'", kind)
    if kind not in ("tis", "icepop", "seq-mask-tis"):
        raise LogprobContractError(
            f"kind must be 'tis', 'icepop' or 'seq-mask-tis' (truncated_importance_sampling_type), got "
            f"'{render_name(kind)}'",
            argument="kind",
        )
    upper = require_float(high, "high", low=0, low_open=True, hint=_RATIO, error=LogprobContractError)
    if low is None:
        if kind != "tis":
            raise LogprobContractError(
                f"kind '{kind}' needs low (truncated_importance_sampling_ratio_min); got None", argument="low"
            )
        return kind, upper, None
    lower = require_float(low, "low", low=0, high=upper, hint=f"{_RATIO}_min", error=LogprobContractError)
    return kind, upper, lower


def truncated_importance_weights(
    learner_logprobs: LogprobArray,
    generation_logprobs: LogprobArray,
    mask: MaskArray = None,
    *,
    kind: TruncationKind,
    high: float,
    low: float | None = None,
) -> TruncatedWeights:
    """The reference's truncated importance sampling (``truncated_importance_sampling_type``) (SPEC §9.4).

    With r = exp(l - g) at counted tokens (computed in the result dtype of :func:`importance_weights`):

    - ``"tis"``: r clamped to [low or 0, high]; ``out_of_bounds`` the fraction of counted tokens with r > high or
      r < (low or 0);
    - ``"icepop"``: r where low <= r <= high, else 0; ``out_of_bounds`` the fraction of counted tokens outside;
    - ``"seq-mask-tis"``: sequences whose geometric-mean ratio exp(mean of (l - g)) lies in [low, high] keep their
      raw token ratios, the others are 0; ``kept_sequences`` says which (a sequence without counted tokens is
      kept); ``out_of_bounds`` the fraction of counted sequences not kept.

    Weights are 0 at uncounted positions; ``out_of_bounds`` is 0.0 when nothing is counted.  On finite inputs the
    weights at counted tokens equal the reference's to float32 rounding.

    Raises:
        ContractTypeError: ``kind``, ``high`` or ``low`` of the wrong type; inputs as :func:`logprob_mismatch`.
        LogprobContractError: ``kind`` unknown; ``high`` not finite and > 0; ``low`` not finite, negative or above
            ``high``; ``low`` missing for ``icepop`` or ``seq-mask-tis``; a ratio r that overflows the result
            dtype at a counted token (any kind); the input checks of :func:`logprob_mismatch`.

    Divergence: the reference replaces non-finite ratios (and, for ``seq-mask-tis``, non-finite log ratios) by 0;
    this raises.  The reference's weights at uncounted positions are whatever the padding gives (its loss masks
    them); here they are 0.
    """
    checked_kind, upper, lower = _check_truncation(kind, high, low)
    batch = _checked_batch(generation_logprobs, learner_logprobs, mask)
    dtype = _weight_dtype(batch)
    with torch.no_grad():
        ratio = _token_ratios(batch, dtype, zero_uncounted=checked_kind != "icepop")
        n = batch.tokens
        kept_sequences: torch.Tensor | None = None
        if checked_kind == "tis":
            floor = 0.0 if lower is None else lower
            outside = (ratio > upper) | (ratio < floor)
            if batch.uncounted is not None:
                outside &= batch.counted
            out_of_bounds = int(torch.count_nonzero(outside)) / n if n else 0.0
            weights = ratio.clamp_(min=floor, max=upper)
            if batch.uncounted is not None:
                weights.masked_fill_(batch.uncounted, 0.0)
        elif checked_kind == "icepop":
            kept = (ratio >= (lower or 0.0)) & (ratio <= upper)
            if not batch.all_counted:
                kept &= batch.counted
            out_of_bounds = (n - int(torch.count_nonzero(kept))) / n if n else 0.0
            weights = torch.where(kept, ratio, torch.zeros((), dtype=dtype, device=ratio.device))
        else:
            sums, counts = _sequence_log_ratios(batch)
            geometric = torch.exp(sums / counts.clamp_min(1))
            has_tokens = counts > 0
            kept_sequences = ((geometric >= (lower or 0.0)) & (geometric <= upper)) | ~has_tokens
            counted_sequences = int(torch.count_nonzero(has_tokens))
            dropped = counted_sequences - int(torch.count_nonzero(kept_sequences & has_tokens))
            out_of_bounds = dropped / counted_sequences if counted_sequences else 0.0
            weights = ratio.mul_(kept_sequences.unsqueeze(1))
    if batch.one_dimensional:
        weights = weights[0]
    return TruncatedWeights(weights=weights, out_of_bounds=out_of_bounds, kept_sequences=kept_sequences)


def sequence_logprob_error_mask(
    generation_logprobs: LogprobArray,
    learner_logprobs: LogprobArray,
    mask: MaskArray = None,
    *,
    threshold: float,
) -> SequenceErrorMask:
    """The reference's ``grpo.seq_logprob_error_threshold`` masking: which sequences to keep (SPEC §9.4).

    A counted sequence is kept when its mult_prob_error (mean of exp(|l - g|) over its counted tokens) is at most
    ``threshold``; sequences without counted tokens are kept (their error is NaN).

    Raises:
        ContractTypeError: ``threshold`` not a real number; inputs as :func:`logprob_mismatch`.
        LogprobContractError: ``threshold`` not finite or below 1; the input checks of :func:`logprob_mismatch`.
    """
    limit = require_float(
        threshold,
        "threshold",
        low=1,
        hint="the recipe's grpo.seq_logprob_error_threshold",
        error=LogprobContractError,
    )
    batch = _checked_batch(generation_logprobs, learner_logprobs, mask)
    with torch.no_grad():
        d = _differences(batch)
        e = d.abs_().exp_()
        if batch.uncounted is not None:
            e.masked_fill_(batch.uncounted, 0.0)
        counts = _row_counts(batch.counted)
        has_tokens = counts > 0
        seq_mult = torch.where(has_tokens, e.sum(dim=1) / counts.clamp_min(1), math.nan)
        keep = (seq_mult <= limit) | ~has_tokens
    return SequenceErrorMask(keep=keep, seq_mult_prob_error=seq_mult, masked=int(torch.count_nonzero(~keep)))
