"""``loss_fn`` (and PPO's ``value_loss_fn``): the loss of each algorithm.

GRPO and PPO use NeMo RL's ``ClippedPGLossConfig``, distillation ``DistillationLossConfig``, cross-tokenizer
distillation ``CrossTokenizerDistillationLossConfig``, PPO's value model ``MseValueLossConfig``.  Rule P29 checks
the combinations the policy-gradient loss rejects.
"""

from typing import Annotated, Literal

from ..._internal.config_scalars import (
    AtLeastOne,
    ConfigBool,
    ConfigFloat,
    ConfigStr,
    NonNegativeFloat,
    PositiveFloat,
    StrictStr,
)
from .variants import FloatList, IntList, Omittable, SectionModel

__all__ = [
    "ClippedPGLossConfig",
    "CrossTokenizerDistillationLossConfig",
    "DistillationLossConfig",
    "MseValueLossConfig",
]


class ClippedPGLossConfig(SectionModel):
    """``loss_fn`` of GRPO and PPO: the clipped policy-gradient loss (every key has a default)."""

    disable_ppo_ratio: ConfigBool = False
    """Use the plain policy gradient without the PPO ratio."""
    token_level_loss: ConfigBool = True
    """Average the loss over tokens (else over sequences)."""
    sequence_level_importance_ratios: ConfigBool = False
    """Importance ratios per sequence (GSPO) instead of per token."""
    ratio_clip_min: NonNegativeFloat = 0.2
    """Lower clip ε of the ratio, ≥ 0."""
    ratio_clip_max: NonNegativeFloat = 0.2
    """Upper clip ε of the ratio, ≥ 0."""
    ratio_clip_c: ConfigFloat | None = None
    """Dual-clip constant c (> 1); null for no dual clip (rule P29)."""
    reference_policy_kl_penalty: NonNegativeFloat = 0.01
    """Weight of the KL penalty against the reference policy, ≥ 0."""
    reference_policy_kl_type: Annotated[Literal["k1", "k2", "k3"], StrictStr] = "k3"
    """KL estimator (rule P29).

    Divergence: NeMo RL types it ``str`` and rejects an unknown estimator at the first step; here at start-up.
    """
    kl_input_clamp_value: ConfigFloat | None = 20.0
    """Clamp of the KL estimator's input; null for none."""
    kl_output_clamp_value: ConfigFloat | None = 10.0
    """Clamp of the KL estimator's output; null for none."""
    use_kl_in_reward: ConfigBool = False
    """Subtract the KL from the reward instead of adding it to the loss."""
    use_importance_sampling_correction: ConfigBool = False
    """Correct for the training-inference mismatch with importance sampling."""
    truncated_importance_sampling_type: (
        Annotated[Literal["tis", "icepop", "seq-mask-tis"], StrictStr] | None
    ) = None
    """Truncated importance sampling variant; null for none (rule P29).

    Divergence: NeMo RL types it ``str | None`` and rejects an unknown variant in the loss; here at start-up.
    """
    truncated_importance_sampling_ratio: PositiveFloat | None = None
    """Upper bound of the truncated importance ratio, > 0."""
    truncated_importance_sampling_ratio_min: NonNegativeFloat | None = None
    """Lower bound of the truncated importance ratio, ≥ 0."""
    use_on_policy_kl_approximation: ConfigBool = False
    """Estimate the KL with on-policy samples."""
    force_on_policy_ratio: ConfigBool = False
    """Force the ratio to 1 (one optimizer step per generation batch, rule P9)."""
    use_cispo: ConfigBool = False
    """Use the CISPO loss (rule P29)."""
    positive_example_nll_weight: NonNegativeFloat = 0.0
    """Weight of an NLL term on positive examples, ≥ 0."""


class DistillationLossConfig(SectionModel):
    """``loss_fn`` of on-policy distillation: a KL between teacher and student top-k logits."""

    kl_type: Annotated[Literal["forward", "reverse", "mixed"], StrictStr] = "mixed"
    """KL direction.

    Divergence: NeMo RL types it ``str`` and rejects another value in the loss; here at start-up.
    """
    mixed_kl_weight: NonNegativeFloat = 0.5
    """Weight of the forward KL in ``mixed``, ≥ 0."""
    zero_outside_topk: ConfigBool = False
    """Treat probabilities outside the top k as zero."""


class CrossTokenizerDistillationLossConfig(SectionModel):
    """``loss_fn`` of cross-tokenizer off-policy distillation."""

    gold_loss: ConfigBool
    """Use the GOLD loss. Required."""
    xtoken_loss: ConfigBool
    """Use the cross-token loss. Required."""
    temperature: PositiveFloat
    """Softmax temperature, > 0. Required."""
    vocab_topk: AtLeastOne
    """Top-k of the shared vocabulary, ≥ 1. Required."""
    uncommon_topk: AtLeastOne
    """Top-k of tokens outside the shared vocabulary, ≥ 1. Required."""
    reverse_kl: ConfigBool
    """Use the reverse KL. Required."""
    exact_token_match_only: ConfigBool
    """Match tokens only where both tokenizers agree exactly. Required."""
    kl_loss_weight: NonNegativeFloat
    """Weight of the KL term, ≥ 0. Required."""
    ce_loss_scale: NonNegativeFloat
    """Scale of the cross-entropy term, ≥ 0. Required."""
    dynamic_loss_scaling: ConfigBool
    """Balance the loss terms dynamically. Required."""
    kd_loss_mode: ConfigStr
    """Knowledge-distillation loss mode. Required."""
    normalize_teacher_by_vocab: ConfigBool
    """Normalise teacher probabilities by vocabulary. Required."""
    alpha: ConfigFloat
    """Mixing weight of the loss terms. Required."""
    sum_weights_metric: ConfigStr | None = None
    """Metric whose weights are summed; null for none."""
    student_vocab_size: Omittable[AtLeastOne] = None
    """Vocabulary size of the student, ≥ 1 (filled at setup)."""
    teacher_vocab_sizes: Omittable[IntList] = None
    """Vocabulary sizes of the teachers (filled at setup)."""
    projection_matrix_paths: Omittable[list[ConfigStr | None]] = None
    """Projection matrix per teacher (filled at setup)."""
    teacher_weights: Omittable[FloatList] = None
    """Weight per teacher (filled at setup)."""
    teacher_gold_loss: Omittable[list[ConfigBool | None]] = None
    """GOLD loss per teacher (filled at setup)."""
    teacher_xtoken_loss: Omittable[list[ConfigBool | None]] = None
    """Cross-token loss per teacher (filled at setup)."""


class MseValueLossConfig(SectionModel):
    """PPO's ``value_loss_fn``: the squared error of the value model."""

    scale: NonNegativeFloat = 1.0
    """Weight of the value loss, ≥ 0."""
    cliprange: NonNegativeFloat | None = None
    """Clip of the value update, ≥ 0; null for none."""
