"""Preflight rule of the policy-gradient loss options (P29): what ``ClippedPGLossFn`` asserts of ``loss_fn``
once Ray and the workers are up (``ratio_clip_c``, the KL type: at the first step), from the recipe alone."""

from __future__ import annotations

import math
from typing import Final

from ...._internal.config_absent import ABSENT
from ...._internal.messages import render
from ....checks import real_or_none
from ...rule import Rule, checks
from .context import ALL_ENTRIES, Context

__all__ = ["KL_TYPES", "P29", "TRUNCATED_IS_TYPES", "check_loss_options"]

LOSS: Final = "loss_fn"
KL_TYPES: Final[tuple[str, ...]] = ("k1", "k2", "k3")
"""The values of ``loss_fn.reference_policy_kl_type`` the loss computes (its default is ``"k3"``)."""
TRUNCATED_IS_TYPES: Final[tuple[str, ...]] = ("tis", "icepop", "seq-mask-tis")
"""The values of ``loss_fn.truncated_importance_sampling_type`` (null: no truncation)."""
_NEEDS_MIN: Final[tuple[str, ...]] = ("icepop", "seq-mask-tis")

P29 = Rule(
    "P29",
    "loss-option-conflict",
    summary="loss_fn options the policy-gradient loss rejects (CISPO, sequence-level ratios, truncated IS, KL type)",
    reference="algorithms/loss/loss_functions.py:ClippedPGLossFn ~236-330 (S1; ratio_clip_c, KL type: first step)",
    what_it_checks=(
        "That the `loss_fn` options agree as `ClippedPGLossFn` asserts: sequence-level importance ratios with "
        "`token_level_loss: false`; `use_cispo` without `disable_ppo_ratio`, `force_on_policy_ratio`, "
        "sequence-level ratios or `ratio_clip_c`, and with `token_level_loss: true`; a truncated importance "
        "sampling type (`tis`, `icepop`, `seq-mask-tis`) with `use_importance_sampling_correction`, a finite "
        "ratio > 0, a finite `_ratio_min` >= 0 (required for icepop and seq-mask-tis) no larger than it (a bound "
        "that can never bind is a mistake, as `truncated_importance_weights` refuses it), and seq-mask-tis without "
        "sequence-level ratios; `ratio_clip_c` null or > 1; `reference_policy_kl_type` one of k1, k2, k3."
    ),
    why_it_matters=(
        "The loss is built in `grpo.setup` after Ray, the data and every worker are up, and it fails an "
        "assertion there (S1); `ratio_clip_c` and the KL type fail only at the first training step."
    ),
    example="""\
loss_fn:
  use_cispo: true
  token_level_loss: false
""",
    fix=(
        "Change the key the finding names as its message says (for CISPO: `token_level_loss: true`, no PPO-ratio "
        "switches, `ratio_clip_c: null`; for truncated IS: turn on `use_importance_sampling_correction` and give "
        "the ratio bounds)."
    ),
)


@checks(P29, entries=ALL_ENTRIES)
def check_loss_options(context: Context) -> None:
    """The clauses (a)-(e) of :data:`P29`, one finding per violated clause at the key that must change."""
    reader = context.reader
    sequence_level = reader.flag(f"{LOSS}.sequence_level_importance_ratios")
    token_level = reader.flag(f"{LOSS}.token_level_loss")
    clip_c = reader.value(f"{LOSS}.ratio_clip_c")
    clip_c = None if clip_c is ABSENT else clip_c
    if sequence_level and token_level:  # (a) sequence-level importance ratios need a sequence-level loss
        context.error_at(
            f"{LOSS}.token_level_loss",
            f"{LOSS}.sequence_level_importance_ratios=true needs {LOSS}.token_level_loss=false (GSPO-style "
            "ratios weight whole sequences): set token_level_loss: false, or turn the sequence-level ratios off.",
        )
    _check_cispo(context, sequence_level=sequence_level, token_level=token_level, clip_c=clip_c)
    _check_truncated_is(context, sequence_level=sequence_level)
    if clip_c is not None:
        number = real_or_none(clip_c)
        if number is None or not number > 1:
            context.error_at(
                f"{LOSS}.ratio_clip_c",
                f"{LOSS}.ratio_clip_c={render(clip_c)} must be null or a number > 1 (the dual-clip bound); the "
                "loss asserts it at the first training step: set it above 1 (3.0 is usual) or to null.",
            )
    kl_type = reader.value(f"{LOSS}.reference_policy_kl_type")
    if kl_type is not ABSENT and kl_type not in KL_TYPES:
        context.error_at(
            f"{LOSS}.reference_policy_kl_type",
            f"{LOSS}.reference_policy_kl_type={render(kl_type)} must be one of 'k1', 'k2', 'k3' (the loss computes "
            "its KL metric with it at every step, whatever the penalty): set one of them (the default is 'k3').",
        )


def _check_cispo(context: Context, *, sequence_level: bool, token_level: bool, clip_c: object) -> None:
    """(b) CISPO replaces the PPO ratio clip: it excludes the ratio switches and needs a token-level loss."""
    reader = context.reader
    if not reader.flag(f"{LOSS}.use_cispo"):
        return
    for name, reason in (
        ("disable_ppo_ratio", "CISPO needs the importance ratio it clips"),
        ("force_on_policy_ratio", "CISPO clips the off-policy ratio"),
    ):
        if reader.flag(f"{LOSS}.{name}"):
            context.error_at(
                f"{LOSS}.{name}",
                f"{LOSS}.use_cispo=true excludes {LOSS}.{name}=true ({reason}): set {name}: false, or turn "
                "use_cispo off.",
            )
    if sequence_level:
        context.error_at(
            f"{LOSS}.sequence_level_importance_ratios",
            f"{LOSS}.use_cispo=true excludes {LOSS}.sequence_level_importance_ratios=true (CISPO clips token "
            "ratios): set sequence_level_importance_ratios: false, or turn use_cispo off.",
        )
    if clip_c is not None:
        context.error_at(
            f"{LOSS}.ratio_clip_c",
            f"{LOSS}.use_cispo=true excludes {LOSS}.ratio_clip_c={render(clip_c)} (dual clipping is a PPO-clip "
            "option): set ratio_clip_c: null, or turn use_cispo off.",
        )
    if not token_level:
        context.error_at(
            f"{LOSS}.token_level_loss",
            f"{LOSS}.use_cispo=true needs {LOSS}.token_level_loss=true (absent reads as false): set "
            "token_level_loss: true, or turn use_cispo off.",
        )


def _check_truncated_is(context: Context, *, sequence_level: bool) -> None:
    """(c) a truncated importance-sampling type needs the correction on and well-ordered ratio bounds."""
    reader = context.reader
    kind = reader.value(f"{LOSS}.truncated_importance_sampling_type")
    if kind is ABSENT or kind is None:
        return
    shown = render(kind)
    if not reader.flag(f"{LOSS}.use_importance_sampling_correction"):
        context.error_at(
            f"{LOSS}.use_importance_sampling_correction",
            f"{LOSS}.truncated_importance_sampling_type={shown} needs "
            f"{LOSS}.use_importance_sampling_correction=true (it truncates the correction's weights): turn the "
            "correction on, or set the type to null.",
        )
    if kind not in TRUNCATED_IS_TYPES:
        context.error_at(
            f"{LOSS}.truncated_importance_sampling_type",
            f"{LOSS}.truncated_importance_sampling_type={shown} must be null or one of 'tis', 'icepop', "
            "'seq-mask-tis': set one of them.",
        )
    ratio_path = f"{LOSS}.truncated_importance_sampling_ratio"
    min_path = f"{ratio_path}_min"
    raw_ratio = reader.value(ratio_path)
    ratio = real_or_none(raw_ratio)
    if ratio is None or not 0 < ratio < math.inf:
        context.error_at(
            ratio_path,
            f"{ratio_path}={render(raw_ratio)} must be a finite number > 0 with truncated_importance_sampling_type="
            f"{shown} (the upper bound of the weights): set it (2.0 is usual).",
        )
        ratio = None
    raw_min = reader.value(min_path)
    if raw_min is ABSENT or raw_min is None:
        if kind in _NEEDS_MIN:
            context.error_at(
                min_path,
                f"truncated_importance_sampling_type={shown} needs {min_path} (the lower bound it masks "
                "below), which is null: set a number no larger than the ratio (0.5 is usual).",
            )
    else:
        low = real_or_none(raw_min)
        if low is None or not 0 <= low < math.inf or (ratio is not None and low > ratio):
            context.error_at(
                min_path,
                f"{min_path}={render(raw_min)} must be a finite number >= 0 and <= {ratio_path}="
                f"{render(raw_ratio)} (a bound below 0 can never bind): set it in that range.",
            )
    if kind == "seq-mask-tis" and sequence_level:
        context.error_at(
            f"{LOSS}.sequence_level_importance_ratios",
            f"truncated_importance_sampling_type='seq-mask-tis' excludes {LOSS}.sequence_level_importance_ratios"
            "=true (it masks sequences by their token ratios): set sequence_level_importance_ratios: false, or use "
            "'tis' or 'icepop'.",
        )
