"""``logger``: where metrics go (NeMo RL's ``LoggerConfig``; ``GRPOLoggerConfig`` and ``PPOLoggerConfig`` also
require ``num_val_samples_to_print``)."""

from ..._internal.config_scalars import ConfigBool, ConfigStr, NonNegative, PositiveFloat
from .variants import Omittable, SectionModel

__all__ = [
    "GPUMonitoringConfig",
    "LoggerConfig",
    "MLflowConfig",
    "RLLoggerConfig",
    "SwanlabConfig",
    "TensorboardConfig",
    "WandbConfig",
]


class WandbConfig(SectionModel):
    """``logger.wandb``: the Weights & Biases run."""

    project: Omittable[ConfigStr] = None
    """Project name."""
    name: Omittable[ConfigStr] = None
    """Run name."""
    entity: Omittable[ConfigStr] = None
    """Team or user."""
    log_nemo_gym_full_result_tables: Omittable[ConfigBool] = None
    """Log NeMo-Gym's full result tables."""


class TensorboardConfig(SectionModel):
    """``logger.tensorboard``: the TensorBoard writer."""

    log_dir: Omittable[ConfigStr] = None
    """Folder of the event files."""


class SwanlabConfig(SectionModel):
    """``logger.swanlab``: the SwanLab run."""

    project: Omittable[ConfigStr] = None
    """Project name."""
    name: Omittable[ConfigStr] = None
    """Run name."""


class MLflowConfig(SectionModel):
    """``logger.mlflow``: the MLflow run."""

    experiment_name: ConfigStr | None = None
    """Experiment name."""
    run_id: ConfigStr | None = None
    """Run id to resume."""
    run_name: ConfigStr | None = None
    """Run name."""
    tracking_uri: ConfigStr | None = None
    """Tracking server URI."""
    artifact_location: ConfigStr | None = None
    """Artifact store location."""


class GPUMonitoringConfig(SectionModel):
    """``logger.gpu_monitoring``: GPU metrics sampling."""

    collection_interval: PositiveFloat
    """Seconds between samples, > 0. Required."""
    flush_interval: PositiveFloat
    """Seconds between flushes, > 0. Required."""


class LoggerConfig(SectionModel):
    """``logger`` of SFT, DPO, RM and distillation."""

    log_dir: ConfigStr
    """Folder of the logs. Required."""
    wandb_enabled: ConfigBool
    """Log to Weights & Biases. Required."""
    swanlab_enabled: ConfigBool
    """Log to SwanLab. Required."""
    tensorboard_enabled: ConfigBool
    """Log to TensorBoard. Required."""
    mlflow_enabled: ConfigBool
    """Log to MLflow. Required."""
    wandb: WandbConfig
    """The Weights & Biases run. Required."""
    tensorboard: Omittable[TensorboardConfig] = None
    """The TensorBoard writer."""
    swanlab: Omittable[SwanlabConfig] = None
    """The SwanLab run."""
    mlflow: Omittable[MLflowConfig] = None
    """The MLflow run."""
    monitor_gpus: ConfigBool
    """Sample GPU metrics. Required."""
    gpu_monitoring: GPUMonitoringConfig
    """GPU metrics sampling. Required."""
    num_val_samples_to_print: Omittable[NonNegative] = None
    """Validation samples printed, ≥ 0."""


class RLLoggerConfig(LoggerConfig):
    """``logger`` of GRPO and PPO: ``num_val_samples_to_print`` is required."""

    num_val_samples_to_print: NonNegative
    """Validation samples printed, ≥ 0. Required."""
