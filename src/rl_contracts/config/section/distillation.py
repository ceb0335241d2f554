"""Distillation sections: ``distillation`` of on-policy distillation (``DistillationConfig``) and of cross-tokenizer
off-policy distillation (``OffPolicyDistillationConfig``), the latter's ``teachers`` list (``TeacherConfig``), and
the whole recipes of both distillation algorithms.  Distillation's ``teacher`` is a :class:`~.policy.PolicyConfig`;
GRPO's ``on_policy_distillation`` is in :mod:`rl_contracts.config.section.grpo`."""

from typing import ClassVar

from ..._internal.config_scalars import AtLeastOne, ConfigBool, ConfigFloat, ConfigInt, ConfigStr, NonNegative
from .algorithm import Algorithm
from .logger import LoggerConfig
from .loss_fn import CrossTokenizerDistillationLossConfig, DistillationLossConfig
from .policy import PolicyConfig
from .training import TrainingRecipe
from .variants import OpenMapping, SectionModel

__all__ = [
    "DistillationConfig",
    "DistillationRecipe",
    "OffPolicyDistillationConfig",
    "TeacherConfig",
    "XTokenDistillationRecipe",
]


class DistillationConfig(SectionModel):
    """``distillation`` of on-policy distillation (every key has a default)."""

    num_prompts_per_step: AtLeastOne = 128
    """Prompts per step, ≥ 1."""
    num_generations_per_prompt: AtLeastOne = 1
    """Student responses per prompt, ≥ 1."""
    max_rollout_turns: AtLeastOne = 1
    """Turns of a multi-turn rollout, ≥ 1."""
    max_num_steps: AtLeastOne = 1000
    """Training steps, ≥ 1."""
    max_num_epochs: AtLeastOne = 10
    """Passes over the training data, ≥ 1."""
    val_batch_size: AtLeastOne = 64
    """Prompts per validation batch, ≥ 1."""
    val_period: NonNegative = 20
    """Validate every this many steps, ≥ 0 (0: never)."""
    val_at_start: ConfigBool = False
    """Validate before the first step."""
    val_at_end: ConfigBool = False
    """Validate after the last step."""
    max_val_samples: AtLeastOne | None = 512
    """Validation prompts, ≥ 1; null for the whole dataset."""
    topk_logits_k: AtLeastOne = 64
    """Teacher logits kept per token, ≥ 1."""
    seed: ConfigInt = 42
    """Random seed."""


class OffPolicyDistillationConfig(SectionModel):
    """``distillation`` of cross-tokenizer off-policy distillation (every key required)."""

    num_prompts_per_step: AtLeastOne
    """Prompts per step, ≥ 1. Required."""
    max_num_steps: AtLeastOne
    """Training steps, ≥ 1. Required."""
    max_num_epochs: AtLeastOne
    """Passes over the training data, ≥ 1. Required."""
    seed: ConfigInt
    """Random seed. Required."""
    val_period: NonNegative
    """Validate every this many steps, ≥ 0 (0: never). Required."""
    val_at_start: ConfigBool
    """Validate before the first step. Required."""
    val_at_end: ConfigBool
    """Validate after the last step. Required."""


class TeacherConfig(SectionModel):
    """An item of ``teachers`` (cross-tokenizer distillation): one teacher and its loss options."""

    projection_matrix_path: ConfigStr | None = None
    """Token projection matrix between the tokenizers; null to build one."""
    weight: ConfigFloat = 1.0
    """Weight of this teacher's loss."""
    gold_loss: ConfigBool | None = None
    """Use the GOLD loss for this teacher; null for ``loss_fn.gold_loss``."""
    xtoken_loss: ConfigBool | None = None
    """Use the cross-token loss for this teacher; null for ``loss_fn.xtoken_loss``."""


class DistillationRecipe(TrainingRecipe):
    """An on-policy distillation recipe (``examples/run_distillation.py``)."""

    algorithm: ClassVar[Algorithm] = "distillation"

    teacher: PolicyConfig
    """The teacher model. Required."""
    loss_fn: DistillationLossConfig
    """The distillation loss. Required."""
    env: OpenMapping
    """Environments by name (each reads its own keys). Required."""
    distillation: DistillationConfig
    """The distillation loop. Required."""
    logger: LoggerConfig
    """Metrics. Required."""


class XTokenDistillationRecipe(TrainingRecipe):
    """A cross-tokenizer off-policy distillation recipe (``examples/run_xtoken_off_policy_distillation.py``)."""

    algorithm: ClassVar[Algorithm] = "xtoken-distillation"

    teachers: list[TeacherConfig]
    """The teachers. Required."""
    loss_fn: CrossTokenizerDistillationLossConfig
    """The cross-tokenizer distillation loss. Required."""
    distillation: OffPolicyDistillationConfig
    """The distillation loop. Required."""
    logger: LoggerConfig
    """Metrics. Required."""
