"""``checkpointing``: when and where a run saves and what it starts from (NeMo RL's ``CheckpointingConfig``)."""

from typing import Annotated, Any, Literal

from ..._internal.config_scalars import ConfigBool, ConfigStr, NonNegative, StrictStr
from .variants import Omittable, SectionModel

__all__ = ["CheckpointingConfig", "PretrainedCheckpointConfig"]


class PretrainedCheckpointConfig(SectionModel):
    """``pretrained_checkpoint``: a Megatron checkpoint to start from."""

    path: ConfigStr
    """Folder of the checkpoint. Required."""
    format: Annotated[Literal["megatron_bridge", "megatron_lm"], StrictStr]
    """Layout of the checkpoint. Required."""


class CheckpointingConfig(SectionModel):
    """``checkpointing``: saving and resuming."""

    enabled: ConfigBool
    """Save checkpoints. Required."""
    checkpoint_dir: ConfigStr
    """Folder of the checkpoints. Required."""
    metric_name: ConfigStr | None
    """Validation metric that ranks checkpoints (e.g. ``"val:accuracy"``); null keeps the latest. Required."""
    higher_is_better: ConfigBool
    """A higher metric is a better checkpoint. Required."""
    save_period: NonNegative
    """Save every this many steps, ≥ 0. Required."""
    keep_top_k: Omittable[NonNegative] = None
    """Checkpoints kept, the best by ``metric_name``, ≥ 0."""
    ft_keep_latest_k: NonNegative | None = None
    """Fault-tolerance checkpoints kept, ≥ 0; null keeps all."""
    ft_save_period: Omittable[NonNegative] = None
    """Save a fault-tolerance checkpoint every this many steps, ≥ 0."""
    checkpoint_must_save_by: ConfigStr | None = None
    """Wall-clock deadline (``DD:HH:MM:SS``) by which a checkpoint is saved; null for none."""
    pretrained_checkpoint: Omittable[PretrainedCheckpointConfig] = None
    """A Megatron checkpoint to start from."""
    save_optimizer: Omittable[ConfigBool] = None
    """Save the optimizer state too."""
    model_save_format: ConfigStr | None = None
    """Format of saved weights (``"safetensors"``, ``"torch_save"``); null for the backend's."""
    save_consolidated: Omittable[ConfigBool] = None
    """Also save consolidated (unsharded) weights."""
    model_cache_dir: Omittable[ConfigStr] = None
    """Cache folder of the base model."""
    model_repo_id: Omittable[ConfigStr] = None
    """Hugging Face repository id of the base model."""
    is_peft: Omittable[ConfigBool] = None
    """The checkpoint holds PEFT adapters only."""
    peft_config: Any = None
    """PEFT configuration of the saved adapters (any value)."""
    is_async: Omittable[ConfigBool] = None
    """Save asynchronously."""
