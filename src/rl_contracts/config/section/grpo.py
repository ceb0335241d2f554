"""``grpo``, ``reward_penalties`` and ``on_policy_distillation``: the GRPO loop, its advantage estimator and reward
shaping, and the teachers that score its rollouts (NeMo RL's ``GRPOConfig``, ``RewardPenaltyConfig`` and
``OnPolicyDistillationConfig``; every key has a default), and :class:`GRPORecipe`, the whole GRPO recipe.  PPO
reuses the reward shaping and scaling models (:mod:`.ppo`)."""

from typing import ClassVar

from ..._internal.config_scalars import AtLeastOne, ConfigBool, ConfigFloat, ConfigInt, ConfigStr, NonNegative
from .algorithm import Algorithm
from .data_plane import DataPlaneConfig
from .logger import RLLoggerConfig
from .loss_fn import ClippedPGLossConfig
from .training import TrainingRecipe
from .variants import FloatList, IntList, Omittable, OpenMapping, SectionModel

__all__ = [
    "AdvEstimatorConfig",
    "AsyncGRPOConfig",
    "GAEOptions",
    "GRPOConfig",
    "GRPORecipe",
    "NonColocatedTeachersConfig",
    "OnPolicyDistillationConfig",
    "RewardPenaltyConfig",
    "RewardPenaltyTokenIdsConfig",
    "RewardScalingConfig",
    "RewardShapingConfig",
    "TeacherResourceConfig",
]


class AsyncGRPOConfig(SectionModel):
    """``grpo.async_grpo``: legacy asynchronous GRPO (generation runs ahead of training)."""

    enabled: ConfigBool = False
    """Run GRPO asynchronously (rule P23)."""
    max_trajectory_age_steps: AtLeastOne = 1
    """Oldest trajectory, in weight versions, a step may train on, ≥ 1."""
    max_generation_failures: NonNegative = 0
    """Generation failures tolerated before the run stops, ≥ 0."""
    in_flight_weight_updates: ConfigBool = False
    """Update weights while generations are in flight."""
    recompute_kv_cache_after_weight_updates: ConfigBool = False
    """Recompute the KV cache of in-flight generations after a weight update."""


class RewardShapingConfig(SectionModel):
    """``grpo.reward_shaping`` (and ``ppo.reward_shaping``): DAPO-style overlong penalties."""

    enabled: ConfigBool = False
    """Shape rewards."""
    overlong_buffer_length: NonNegative | None = None
    """Tokens before ``max_response_length`` where the penalty ramps up, ≥ 0."""
    overlong_buffer_penalty: ConfigFloat | None = None
    """Largest overlong penalty."""
    max_response_length: AtLeastOne | None = None
    """Response length the penalty is measured against, ≥ 1."""
    stop_properly_penalty_coef: ConfigFloat | None = None
    """Penalty coefficient of responses that do not stop properly."""


class RewardScalingConfig(SectionModel):
    """``grpo.reward_scaling`` (and ``ppo.reward_scaling``): a linear map of rewards."""

    enabled: ConfigBool = False
    """Scale rewards."""
    source_min: ConfigFloat = 0.0
    """Lowest raw reward."""
    source_max: ConfigFloat = 1.0
    """Highest raw reward."""
    target_min: ConfigFloat = 0.0
    """Reward ``source_min`` maps to."""
    target_max: ConfigFloat = 1.0
    """Reward ``source_max`` maps to."""


class GAEOptions(SectionModel):
    """The generalised-advantage-estimation keys an advantage estimator reads (``grpo.adv_estimator``,
    ``ppo.adv_estimator``)."""

    gae_lambda: Omittable[ConfigFloat] = None
    """GAE λ."""
    gae_gamma: Omittable[ConfigFloat] = None
    """GAE γ (discount)."""
    normalize_advantages: Omittable[ConfigBool] = None
    """Normalise advantages over the batch."""
    gae_lambda_value: ConfigFloat | None = None
    """GAE λ of the value targets."""
    gae_lambda_policy: ConfigFloat | None = None
    """GAE λ of the policy advantages."""
    length_adaptive_alpha: Omittable[ConfigFloat] = None
    """α of length-adaptive GAE."""


class AdvEstimatorConfig(GAEOptions):
    """``grpo.adv_estimator``: how advantages are estimated."""

    name: ConfigStr = "grpo"
    """Estimator (``"grpo"``, ``"reinforce_plus_plus"``, ``"gdpo"``, ...)."""
    normalize_rewards: ConfigBool = True
    """Divide advantages by the group's reward standard deviation."""
    use_leave_one_out_baseline: ConfigBool = True
    """Leave the sample out of its group's baseline."""
    reward_weights: FloatList | None = None
    """Weights of multiple rewards; null for one reward."""
    minus_baseline: ConfigBool = True
    """Subtract the baseline."""


class GRPOConfig(SectionModel):
    """``grpo``: the GRPO loop (every key has a default)."""

    num_prompts_per_step: AtLeastOne = 32
    """Prompts per step, ≥ 1."""
    num_generations_per_prompt: AtLeastOne = 16
    """Responses generated per prompt (the group size), ≥ 1."""
    max_num_epochs: AtLeastOne = 1
    """Passes over the training data, ≥ 1."""
    max_num_steps: AtLeastOne = 1000000
    """Training steps, ≥ 1."""
    max_rollout_turns: AtLeastOne = 1
    """Turns of a multi-turn rollout, ≥ 1."""
    normalize_rewards: ConfigBool = True
    """Divide advantages by the group's reward standard deviation."""
    advantage_clip_low: ConfigFloat | None = None
    """Lower clip of advantages; null for none."""
    advantage_clip_high: ConfigFloat | None = None
    """Upper clip of advantages; null for none."""
    use_leave_one_out_baseline: ConfigBool = True
    """Leave the sample out of its group's baseline."""
    val_period: NonNegative = 10
    """Validate every this many steps, ≥ 0 (0: never)."""
    val_start_at: ConfigInt = -1
    """First step that validates (-1: from the start)."""
    val_batch_size: AtLeastOne | None = 256
    """Prompts per validation batch, ≥ 1."""
    val_at_start: ConfigBool = False
    """Validate before the first step."""
    val_at_end: ConfigBool = False
    """Validate after the last step."""
    max_val_samples: AtLeastOne | None = 256
    """Validation prompts, ≥ 1; null for the whole dataset."""
    val_num_generations_per_prompt: AtLeastOne = 1
    """Responses per validation prompt, ≥ 1 (rule P6)."""
    stop_at_validation_metric: ConfigStr | None = None
    """Validation metric that can stop the run early (rule P6)."""
    stop_at_validation_threshold: ConfigFloat | None = None
    """Stop once ``stop_at_validation_metric`` reaches this (rule P6)."""
    skip_reference_policy_logprobs_calculation: ConfigBool = False
    """Skip the reference policy's log-probabilities (rule P10)."""
    seed: ConfigInt = 42
    """Random seed."""
    async_grpo: AsyncGRPOConfig | None = None
    """Legacy asynchronous GRPO; null or absent for synchronous."""
    overlong_filtering: ConfigBool = False
    """Drop truncated responses from the loss."""
    use_dynamic_sampling: ConfigBool = False
    """DAPO dynamic sampling: regenerate groups with no reward variance (rule P7)."""
    dynamic_sampling_max_gen_batches: AtLeastOne = 10
    """Generation batches dynamic sampling may draw per step, ≥ 1."""
    batch_multiplier: ConfigFloat = 1.0
    """Prompts drawn per step, as a multiple of ``num_prompts_per_step`` (dynamic sampling only, rule P7)."""
    reward_shaping: Omittable[RewardShapingConfig] = None
    """DAPO-style overlong penalties."""
    reward_scaling: Omittable[RewardScalingConfig] = None
    """A linear map of rewards."""
    calculate_advantages_on_gpu: ConfigBool = False
    """Compute advantages on the GPU."""
    seq_logprob_error_threshold: ConfigFloat | None = None
    """Largest sequence log-probability error between training and inference; null for no check."""
    invalid_tool_call_advantage: ConfigFloat | None = None
    """Advantage given to an invalid tool call; null for none."""
    malformed_thinking_advantage: ConfigFloat | None = None
    """Advantage given to malformed thinking; null for none."""
    adv_estimator: Omittable[AdvEstimatorConfig] = None
    """The advantage estimator."""
    deduplicate_multimodal_data: ConfigBool = False
    """Send each image once per group (rule P12)."""
    debug_payload_metrics: ConfigBool = False
    """Log payload sizes of the step."""


class RewardPenaltyTokenIdsConfig(SectionModel):
    """``reward_penalties.token_ids``: token ids the penalties look for."""

    unwanted: IntList | None = None
    """Token ids penalised when generated."""
    think_open: NonNegative | None = None
    """Token id of the opening think tag, ≥ 0."""
    think_close: NonNegative | None = None
    """Token id of the closing think tag, ≥ 0."""


class RewardPenaltyConfig(SectionModel):
    """``reward_penalties``: reward penalties of NeMo-Gym runs (rule P11)."""

    penalize_duplicated_reasoning: ConfigBool = False
    """Penalise repeated reasoning."""
    penalize_empty_final_answer: ConfigBool = False
    """Penalise an empty final answer."""
    penalize_unwanted_tokens: ConfigBool = False
    """Penalise the tokens of ``token_ids.unwanted``."""
    penalize_malformed_think_tag: ConfigBool = False
    """Penalise malformed think tags."""
    token_ids: RewardPenaltyTokenIdsConfig | None = None
    """Token ids the penalties look for."""


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


class GRPORecipe(TrainingRecipe):
    """A GRPO recipe (``examples/run_grpo.py``)."""

    algorithm: ClassVar[Algorithm] = "grpo"

    loss_fn: ClippedPGLossConfig
    """The clipped policy-gradient loss. Required."""
    env: OpenMapping
    """Environments by name (each reads its own keys). Required."""
    grpo: GRPOConfig
    """The GRPO loop. Required."""
    logger: RLLoggerConfig
    """Metrics. Required."""
    reward_penalties: Omittable[RewardPenaltyConfig] = None
    """NeMo-Gym reward penalties."""
    data_plane: DataPlaneConfig | None = None
    """The transfer-queue data plane; null for none."""
    on_policy_distillation: OnPolicyDistillationConfig | None = None
    """Teachers that score the rollouts; null for none."""
