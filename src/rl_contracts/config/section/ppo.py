"""``ppo``: the PPO loop with a value model (NeMo RL's ``PPOConfig``; every key has a default).  The value model is
:class:`~.policy.ValueConfig`, its loss :class:`~.loss_fn.MseValueLossConfig`; :class:`PPORecipe` is the whole
recipe."""

from typing import ClassVar

from ..._internal.config_scalars import AtLeastOne, ConfigBool, ConfigFloat, ConfigInt, ConfigStr, NonNegative
from .algorithm import Algorithm
from .grpo import GAEOptions, RewardScalingConfig, RewardShapingConfig
from .logger import RLLoggerConfig
from .loss_fn import ClippedPGLossConfig, MseValueLossConfig
from .policy import ValueConfig
from .training import TrainingRecipe
from .variants import Omittable, OpenMapping, SectionModel

__all__ = ["AsyncPPOConfig", "PPOAdvEstimatorConfig", "PPOConfig", "PPORecipe"]


class PPOAdvEstimatorConfig(GAEOptions):
    """``ppo.adv_estimator``: generalised advantage estimation."""

    name: ConfigStr
    """Estimator (e.g. ``"gae"``). Required."""


class AsyncPPOConfig(SectionModel):
    """``ppo.async_ppo``: asynchronous PPO."""

    enabled: ConfigBool = False
    """Run PPO asynchronously."""
    max_trajectory_age_steps: AtLeastOne = 1
    """Oldest trajectory, in weight versions, a step may train on, ≥ 1."""
    warmup_generation_lead_steps: NonNegative | None = None
    """Steps generation runs ahead during warm-up, ≥ 0."""
    in_flight_weight_updates: ConfigBool = False
    """Update weights while generations are in flight."""
    recompute_kv_cache_after_weight_updates: ConfigBool = False
    """Recompute the KV cache of in-flight generations after a weight update."""
    drop_incomplete_targets_on_restore: ConfigBool = False
    """Drop incomplete targets when restoring from a checkpoint."""


class PPOConfig(SectionModel):
    """``ppo``: the PPO loop (every key has a default)."""

    num_prompts_per_step: AtLeastOne = 32
    """Prompts per step, ≥ 1."""
    num_generations_per_prompt: AtLeastOne = 16
    """Responses generated per prompt, ≥ 1."""
    max_num_epochs: AtLeastOne = 100000
    """Passes over the training data, ≥ 1."""
    max_num_steps: AtLeastOne = 100000
    """Training steps, ≥ 1."""
    max_rollout_turns: AtLeastOne = 1
    """Turns of a multi-turn rollout, ≥ 1."""
    val_period: NonNegative = 20
    """Validate every this many steps, ≥ 0 (0: never)."""
    val_batch_size: AtLeastOne = 256
    """Prompts per validation batch, ≥ 1."""
    val_at_start: ConfigBool = True
    """Validate before the first step."""
    val_at_end: ConfigBool = False
    """Validate after the last step."""
    max_val_samples: AtLeastOne = 256
    """Validation prompts, ≥ 1."""
    skip_reference_policy_logprobs_calculation: ConfigBool = True
    """Skip the reference policy's log-probabilities."""
    seed: ConfigInt = 42
    """Random seed."""
    overlong_filtering: ConfigBool = False
    """Drop truncated responses from the loss."""
    use_dynamic_sampling: ConfigBool = False
    """Regenerate groups with no reward variance."""
    dynamic_sampling_max_gen_batches: AtLeastOne = 10
    """Generation batches dynamic sampling may draw per step, ≥ 1."""
    batch_multiplier: ConfigFloat = 1.0
    """Prompts drawn per step, as a multiple of ``num_prompts_per_step``."""
    ppo_epochs: AtLeastOne = 4
    """Optimisation passes over each step's batch, ≥ 1."""
    reward_shaping: Omittable[RewardShapingConfig] = None
    """Overlong penalties."""
    reward_scaling: Omittable[RewardScalingConfig] = None
    """A linear map of rewards."""
    adv_estimator: Omittable[PPOAdvEstimatorConfig] = None
    """The advantage estimator (GAE)."""
    policy_training_start_step: NonNegative = 0
    """Step from which the policy trains (the value model warms up before), ≥ 0."""
    seq_logprob_error_threshold: ConfigFloat | None = None
    """Largest sequence log-probability error between training and inference; null for no check."""
    async_ppo: Omittable[AsyncPPOConfig] = None
    """Asynchronous PPO."""


class PPORecipe(TrainingRecipe):
    """A PPO recipe (``examples/run_ppo.py``)."""

    algorithm: ClassVar[Algorithm] = "ppo"

    value: ValueConfig
    """The value model. Required."""
    loss_fn: ClippedPGLossConfig
    """The clipped policy-gradient loss. Required."""
    value_loss_fn: MseValueLossConfig
    """The value model's loss. Required."""
    env: OpenMapping
    """Environments by name (each reads its own keys). Required."""
    ppo: PPOConfig
    """The PPO loop. Required."""
    logger: RLLoggerConfig
    """Metrics. Required."""
