"""The whole recipe: one top-level model per NeMo RL algorithm, and which algorithm a recipe is for.

Each ``examples/run_*.py`` of NeMo RL validates the composed, resolved recipe as its algorithm's ``MasterConfig``
before Ray starts; :data:`RECIPE_MODELS` holds the model of each (stricter, see :mod:`.variants`), and
:func:`detect_algorithm` picks one from the recipe's top-level sections, most specific first (an ``eval`` section
means ``run_eval.py``; ``teachers`` cross-tokenizer distillation; ``teacher`` distillation; ``value``/``ppo`` PPO;
``async_rl`` the single-controller GRPO script; then ``grpo``, ``sft``, ``dpo``, ``rm``, ``distillation``).

The generation section (``policy.generation``, or the top-level ``generation`` of an evaluation) is declared open
here: it is validated on its own as :class:`~rl_contracts.config.VllmConfig`.
"""

from collections.abc import Mapping
from typing import Any, ClassVar, Final, Literal, get_args

from .async_rl import AsyncRLConfig
from .checkpointing import CheckpointingConfig
from .cluster import ClusterConfig
from .data import DataConfig, EvalDataConfig
from .data_plane import DataPlaneConfig
from .distillation import (
    DistillationConfig,
    OffPolicyDistillationConfig,
    OnPolicyDistillationConfig,
    TeacherConfig,
)
from .eval import EvalConfig, EvalEnvConfig
from .grpo import GRPOConfig, RewardPenaltyConfig
from .logger import LoggerConfig, RLLoggerConfig
from .loss_fn import (
    ClippedPGLossConfig,
    CrossTokenizerDistillationLossConfig,
    DistillationLossConfig,
    MseValueLossConfig,
)
from .policy import PolicyConfig, TokenizerConfig, ValueConfig
from .ppo import PPOConfig
from .supervised import DPOConfig, RMConfig, SFTConfig
from .variants import Omittable, OpenMapping, SectionModel

__all__ = [
    "ALGORITHMS",
    "RECIPE_MODELS",
    "RUN_SCRIPTS",
    "Algorithm",
    "DPORecipe",
    "DistillationRecipe",
    "EvalRecipe",
    "GRPORecipe",
    "GRPOSingleControllerRecipe",
    "PPORecipe",
    "RMRecipe",
    "RecipeModel",
    "SFTRecipe",
    "XTokenDistillationRecipe",
    "detect_algorithm",
]

Algorithm = Literal[
    "grpo", "grpo-sc", "sft", "dpo", "rm", "ppo", "distillation", "xtoken-distillation", "eval"
]
"""The NeMo RL algorithms whose recipes are typed: one per ``examples/run_*.py`` entry point."""

ALGORITHMS: Final[tuple[Algorithm, ...]] = get_args(Algorithm)
"""Every :data:`Algorithm`, in the order of :data:`RECIPE_MODELS`."""


class RecipeModel(SectionModel):
    """A whole composed recipe of one algorithm (its top-level sections)."""

    algorithm: ClassVar[Algorithm]
    """The algorithm this model types."""


class _TrainingRecipe(RecipeModel):
    """The sections every training algorithm requires."""

    policy: PolicyConfig
    """The trained model. Required."""
    data: DataConfig
    """The datasets. Required."""
    cluster: ClusterConfig
    """Nodes and GPUs. Required."""
    checkpointing: CheckpointingConfig
    """Saving and resuming. Required."""


class GRPORecipe(_TrainingRecipe):
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


class GRPOSingleControllerRecipe(_TrainingRecipe):
    """A single-controller asynchronous GRPO recipe (``examples/run_grpo_single_controller.py``)."""

    algorithm: ClassVar[Algorithm] = "grpo-sc"

    loss_fn: ClippedPGLossConfig
    """The clipped policy-gradient loss. Required."""
    env: OpenMapping
    """Environments by name (each reads its own keys). Required."""
    grpo: GRPOConfig
    """The GRPO loop. Required."""
    logger: RLLoggerConfig
    """Metrics. Required."""
    data_plane: DataPlaneConfig
    """The transfer-queue data plane. Required."""
    async_rl: AsyncRLConfig
    """The asynchronous loop. Required."""


class SFTRecipe(_TrainingRecipe):
    """A supervised fine-tuning recipe (``examples/run_sft.py``)."""

    algorithm: ClassVar[Algorithm] = "sft"

    sft: SFTConfig
    """The SFT loop. Required."""
    logger: LoggerConfig
    """Metrics. Required."""


class DPORecipe(_TrainingRecipe):
    """A DPO recipe (``examples/run_dpo.py``)."""

    algorithm: ClassVar[Algorithm] = "dpo"

    dpo: DPOConfig
    """The DPO loop. Required."""
    logger: LoggerConfig
    """Metrics. Required."""


class RMRecipe(_TrainingRecipe):
    """A reward-model recipe (``examples/run_rm.py``)."""

    algorithm: ClassVar[Algorithm] = "rm"

    rm: RMConfig
    """The reward-model loop. Required."""
    logger: LoggerConfig
    """Metrics. Required."""


class PPORecipe(_TrainingRecipe):
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


class DistillationRecipe(_TrainingRecipe):
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


class XTokenDistillationRecipe(_TrainingRecipe):
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


class EvalRecipe(RecipeModel):
    """An evaluation recipe (``examples/run_eval.py``)."""

    algorithm: ClassVar[Algorithm] = "eval"

    eval: EvalConfig
    """The metric. Required."""
    generation: OpenMapping
    """The generation section: checked on its own as ``VllmConfig``. Required."""
    tokenizer: TokenizerConfig
    """The tokenizer. Required."""
    data: EvalDataConfig
    """The evaluation dataset. Required."""
    env: EvalEnvConfig
    """The verifiers. Required."""
    cluster: ClusterConfig
    """Nodes and GPUs. Required."""


RECIPE_MODELS: Final[Mapping[Algorithm, type[RecipeModel]]] = {
    "grpo": GRPORecipe,
    "grpo-sc": GRPOSingleControllerRecipe,
    "sft": SFTRecipe,
    "dpo": DPORecipe,
    "rm": RMRecipe,
    "ppo": PPORecipe,
    "distillation": DistillationRecipe,
    "xtoken-distillation": XTokenDistillationRecipe,
    "eval": EvalRecipe,
}
"""The whole-recipe model of each algorithm."""

RUN_SCRIPTS: Final[Mapping[Algorithm, str]] = {
    "grpo": "examples/run_grpo.py",
    "grpo-sc": "examples/run_grpo_single_controller.py",
    "sft": "examples/run_sft.py",
    "dpo": "examples/run_dpo.py",
    "rm": "examples/run_rm.py",
    "ppo": "examples/run_ppo.py",
    "distillation": "examples/run_distillation.py",
    "xtoken-distillation": "examples/run_xtoken_off_policy_distillation.py",
    "eval": "examples/run_eval.py",
}
"""The NeMo RL entry point that runs each algorithm."""

_SIGNATURES: Final[tuple[tuple[str, Algorithm], ...]] = (
    ("eval", "eval"),
    ("teachers", "xtoken-distillation"),
    ("teacher", "distillation"),
    ("value", "ppo"),
    ("value_loss_fn", "ppo"),
    ("ppo", "ppo"),
    ("async_rl", "grpo-sc"),
    ("grpo", "grpo"),
    ("sft", "sft"),
    ("dpo", "dpo"),
    ("rm", "rm"),
    ("distillation", "distillation"),
)


def detect_algorithm(document: Mapping[Any, Any]) -> Algorithm | None:
    """The algorithm whose entry point runs ``document``, judged by its top-level sections (see the module);
    ``None`` when no algorithm's own section is there (a fragment, or a bare generation section)."""
    for section, algorithm in _SIGNATURES:
        if document.get(section) is not None:
            return algorithm
    return None
