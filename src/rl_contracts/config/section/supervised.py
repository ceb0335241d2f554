"""``sft``, ``dpo`` and ``rm``: the loops of supervised fine-tuning, direct preference optimisation and reward-model
training (NeMo RL's ``SFTConfig``, ``DPOConfig`` and ``RMConfig``; every key has a default), and the whole recipe
of each."""

from typing import ClassVar

from ..._internal.config_scalars import AtLeastOne, ConfigBool, ConfigInt, NonNegative, NonNegativeFloat
from .algorithm import Algorithm
from .logger import LoggerConfig
from .training import TrainingRecipe
from .variants import SectionModel

__all__ = [
    "DPOConfig",
    "DPORecipe",
    "RMConfig",
    "RMRecipe",
    "SFTConfig",
    "SFTRecipe",
    "SupervisedLoopConfig",
]


class SupervisedLoopConfig(SectionModel):
    """The loop keys SFT, DPO and RM share."""

    max_num_epochs: AtLeastOne = 1
    """Passes over the training data, ≥ 1."""
    val_period: NonNegative = 10
    """Validate every this many steps, ≥ 0 (0: never)."""
    val_global_batch_size: AtLeastOne = 32
    """Samples per validation batch across ranks, ≥ 1."""
    val_micro_batch_size: AtLeastOne = 1
    """Samples per validation micro-batch on one rank, ≥ 1."""
    val_at_start: ConfigBool = True
    """Validate before the first step."""
    val_at_end: ConfigBool = False
    """Validate after the last step."""
    seed: ConfigInt = 42
    """Random seed."""


class SFTConfig(SupervisedLoopConfig):
    """``sft``: supervised fine-tuning."""

    max_num_steps: AtLeastOne = 60
    """Training steps, ≥ 1."""
    val_batches: ConfigInt = 8
    """Validation batches per validation (-1 or 0: the whole set)."""
    only_unmask_final: ConfigBool = False
    """Train only on the final assistant turn."""


class DPOConfig(SupervisedLoopConfig):
    """``dpo``: direct preference optimisation."""

    max_num_steps: AtLeastOne = 150
    """Training steps, ≥ 1."""
    val_period: NonNegative = 25
    """Validate every this many steps, ≥ 0 (0: never)."""
    val_batches: ConfigInt = 8
    """Validation batches per validation (-1 or 0: the whole set)."""
    val_global_batch_size: AtLeastOne = 8
    """Samples per validation batch across ranks, ≥ 1."""
    reference_policy_kl_penalty: NonNegativeFloat = 0.05
    """β: weight of the KL against the reference policy, ≥ 0."""
    preference_average_log_probs: ConfigBool = False
    """Average (not sum) log-probabilities in the preference loss."""
    sft_average_log_probs: ConfigBool = False
    """Average (not sum) log-probabilities in the SFT loss."""
    preference_loss_weight: NonNegativeFloat = 1.0
    """Weight of the preference loss, ≥ 0."""
    sft_loss_weight: NonNegativeFloat = 0.0
    """Weight of the SFT loss on chosen responses, ≥ 0."""


class RMConfig(SupervisedLoopConfig):
    """``rm``: reward-model training."""

    max_num_steps: ConfigInt = -1
    """Training steps (-1: until the epochs end)."""
    val_period: NonNegative = 16
    """Validate every this many steps, ≥ 0 (0: never)."""
    val_batches: ConfigInt = -1
    """Validation batches per validation (-1: the whole set)."""
    val_at_start: ConfigBool = False
    """Validate before the first step."""


class SFTRecipe(TrainingRecipe):
    """A supervised fine-tuning recipe (``examples/run_sft.py``)."""

    algorithm: ClassVar[Algorithm] = "sft"

    sft: SFTConfig
    """The SFT loop. Required."""
    logger: LoggerConfig
    """Metrics. Required."""


class DPORecipe(TrainingRecipe):
    """A DPO recipe (``examples/run_dpo.py``)."""

    algorithm: ClassVar[Algorithm] = "dpo"

    dpo: DPOConfig
    """The DPO loop. Required."""
    logger: LoggerConfig
    """Metrics. Required."""


class RMRecipe(TrainingRecipe):
    """A reward-model recipe (``examples/run_rm.py``)."""

    algorithm: ClassVar[Algorithm] = "rm"

    rm: RMConfig
    """The reward-model loop. Required."""
    logger: LoggerConfig
    """Metrics. Required."""
