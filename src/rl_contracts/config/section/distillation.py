"""Distillation sections: ``distillation`` of on-policy distillation (``DistillationConfig``) and of cross-tokenizer
off-policy distillation (``OffPolicyDistillationConfig``), the latter's ``teachers`` list (``TeacherConfig``), and
GRPO's ``on_policy_distillation`` (``OnPolicyDistillationConfig``); and the whole recipes of both distillation
algorithms.  Distillation's ``teacher`` is a :class:`~.policy.PolicyConfig`."""

from typing import ClassVar

from ..._internal.config_scalars import AtLeastOne, ConfigBool, ConfigFloat, ConfigInt, ConfigStr, NonNegative
from .algorithm import Algorithm
from .logger import LoggerConfig
from .loss_fn import CrossTokenizerDistillationLossConfig, DistillationLossConfig
from .policy import PolicyConfig
from .training import TrainingRecipe
from .variants import Omittable, OpenMapping, SectionModel

__all__ = [
    "DistillationConfig",
    "DistillationRecipe",
    "NonColocatedTeachersConfig",
    "OffPolicyDistillationConfig",
    "OnPolicyDistillationConfig",
    "TeacherConfig",
    "TeacherResourceConfig",
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


class TeacherResourceConfig(SectionModel):
    """Resources and parallelism of one non-colocated teacher."""

    tensor_model_parallel_size: AtLeastOne = 1
    """Tensor-parallel size, ≥ 1."""
    pipeline_model_parallel_size: AtLeastOne = 1
    """Pipeline-parallel size, ≥ 1."""
    context_parallel_size: AtLeastOne = 1
    """Context-parallel size, ≥ 1."""
    expert_model_parallel_size: AtLeastOne = 1
    """Expert-parallel size, ≥ 1."""
    num_nodes: AtLeastOne = 1
    """Nodes, ≥ 1."""
    gpus_per_node: AtLeastOne = 8
    """GPUs per node, ≥ 1."""
    precision: ConfigStr = "bf16"
    """Precision of the teacher."""
    micro_batch_size: AtLeastOne = 4
    """Samples per micro-batch, ≥ 1."""
    megatron_cfg_overrides: Omittable[OpenMapping] = None
    """Megatron settings overridden for this teacher (open mapping)."""


class NonColocatedTeachersConfig(SectionModel):
    """``on_policy_distillation.non_colocated_teachers``: teachers on GPUs of their own."""

    enabled: ConfigBool = False
    """Place teachers on their own GPUs."""
    default_teacher_cfg: Omittable[TeacherResourceConfig] = None
    """Resources of every teacher without an override."""
    teacher_overrides: Omittable[dict[ConfigStr, TeacherResourceConfig]] = None
    """Resources per teacher alias."""


class OnPolicyDistillationConfig(SectionModel):
    """``on_policy_distillation`` of GRPO: teachers that score the policy's rollouts."""

    enabled: ConfigBool = False
    """Distil from teachers during GRPO."""
    teacher_model_by_agent_name: Omittable[dict[ConfigStr, ConfigStr]] = None
    """Teacher model per agent name."""
    default_teacher_alias: ConfigStr | None = None
    """Teacher of agents without an entry; null for none."""
    strict_agent_name_match: ConfigBool = False
    """Fail when an agent has no teacher."""
    deduplicate_shared_teacher_checkpoints: ConfigBool = True
    """Load a checkpoint shared by several teachers once."""
    non_colocated_teachers: NonColocatedTeachersConfig | None = None
    """Teachers on GPUs of their own."""


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
