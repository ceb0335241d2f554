"""``async_rl``: the single-controller asynchronous GRPO path (NeMo RL's ``AsyncRLConfig``; every key has a default):
its staleness sampler, rollout fault tolerance, stall watchdog, generation fleet health and router; and
:class:`GRPOSingleControllerRecipe`, the whole recipe of that path."""

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal

from ..._internal.config_scalars import (
    AtLeastOne,
    ConfigBool,
    ConfigInt,
    ConfigStr,
    Fraction,
    NonNegative,
    Port,
    PositiveFloat,
    StrictStr,
)
from .algorithm import Algorithm
from .data_plane import DataPlaneConfig
from .grpo import GRPOConfig
from .logger import RLLoggerConfig
from .loss_fn import ClippedPGLossConfig
from .training import TrainingRecipe
from .variants import Omittable, OpenMapping, SectionModel, chosen_by, tag

__all__ = [
    "SAMPLER_NAMES",
    "AsyncRLConfig",
    "CustomSamplerConfig",
    "FleetHealthConfig",
    "GRPOSingleControllerRecipe",
    "GenerationRouterConfig",
    "InOrderSamplerConfig",
    "NativeRolloutFTConfig",
    "NemoGymRolloutFTConfig",
    "ReadyFirstSamplerConfig",
    "RolloutFailureConfig",
    "WatchdogConfig",
    "WeightFifoSamplerConfig",
    "WindowedSamplerConfig",
]


class WindowedSamplerConfig(SectionModel):
    """``async_rl.sampler`` named ``windowed``."""

    name: Annotated[Literal["windowed"], StrictStr] = "windowed"
    """``"windowed"``."""
    max_staleness_versions: NonNegative = 1
    """Oldest weight version a rollout may have, counted back, ≥ 0."""
    sample_freshest_first: ConfigBool = False
    """Take the freshest rollouts first."""


class ReadyFirstSamplerConfig(SectionModel):
    """``async_rl.sampler`` named ``ready_first``."""

    name: Annotated[Literal["ready_first"], StrictStr] = "ready_first"
    """``"ready_first"``."""
    max_staleness_versions: NonNegative = 1
    """Oldest weight version a rollout may have, counted back, ≥ 0."""


class WeightFifoSamplerConfig(SectionModel):
    """``async_rl.sampler`` named ``weight_fifo``."""

    name: Annotated[Literal["weight_fifo"], StrictStr] = "weight_fifo"
    """``"weight_fifo"``."""
    max_staleness_versions: NonNegative = 1
    """Oldest weight version a rollout may have, counted back, ≥ 0."""


class InOrderSamplerConfig(SectionModel):
    """``async_rl.sampler`` named ``in_order`` (the default)."""

    name: Annotated[Literal["in_order"], StrictStr] = "in_order"
    """``"in_order"``."""
    max_lookahead_versions: NonNegative = 1
    """Weight versions generation may run ahead, ≥ 0."""


class CustomSamplerConfig(SectionModel):
    """``async_rl.sampler`` named ``custom``: a sampler class of your own (its own keys are open)."""

    open_keys: ClassVar[bool] = True

    name: Annotated[Literal["custom"], StrictStr] = "custom"
    """``"custom"``."""
    target: ConfigStr
    """Import path of the sampler class. Required."""


SAMPLER_NAMES: tuple[str, ...] = ("windowed", "ready_first", "weight_fifo", "in_order", "custom")
"""The sampler names ``async_rl.sampler.name`` accepts."""


def _sampler(value: Any) -> str:
    name = value.get("name", "in_order") if isinstance(value, Mapping) else "in_order"
    return name if isinstance(name, str) else "in_order"


Sampler = Annotated[
    Annotated[WindowedSamplerConfig, tag("windowed")]
    | Annotated[ReadyFirstSamplerConfig, tag("ready_first")]
    | Annotated[WeightFifoSamplerConfig, tag("weight_fifo")]
    | Annotated[InOrderSamplerConfig, tag("in_order")]
    | Annotated[CustomSamplerConfig, tag("custom")],
    chosen_by(_sampler),
]


class NativeRolloutFTConfig(SectionModel):
    """``async_rl.rollout_failure.native``: time limits of native rollouts."""

    generation_timeout_s: PositiveFloat | None = None
    """Seconds a generation may take, > 0; null for no limit."""
    env_timeout_s: PositiveFloat | None = None
    """Seconds an environment step may take, > 0; null for no limit."""


class NemoGymRolloutFTConfig(SectionModel):
    """``async_rl.rollout_failure.nemo_gym``: limits of NeMo-Gym rollouts."""

    rollout_timeout_s: PositiveFloat | None = None
    """Seconds a rollout may take, > 0; null for no limit."""
    max_row_attempts: AtLeastOne = 3
    """Attempts per row, ≥ 1."""


class RolloutFailureConfig(SectionModel):
    """``async_rl.rollout_failure``: retries and drops of failing rollouts."""

    max_infra_attempts_per_prompt: AtLeastOne = 5
    """Attempts per prompt after infrastructure failures, ≥ 1."""
    max_data_attempts_per_prompt: AtLeastOne = 2
    """Attempts per prompt after data failures, ≥ 1."""
    backoff_base_s: PositiveFloat = 1.0
    """First retry delay in seconds, > 0."""
    max_backoff_s: PositiveFloat = 30.0
    """Longest retry delay in seconds, > 0."""
    max_skipped_prompts: NonNegative = 0
    """Prompts that may be skipped in a run, ≥ 0."""
    max_consecutive_dropped_prompts: NonNegative = 0
    """Prompts that may be dropped in a row, ≥ 0."""
    min_step_batch_fraction: Fraction = 0.9
    """Smallest fraction of a step's batch that may train, 0 < x ≤ 1."""
    on_dropped_prompt: Annotated[Literal["shrink", "replace"], StrictStr] = "shrink"
    """Shrink the step's batch or replace a dropped prompt."""
    max_replacement_attempts: NonNegative = 1
    """Replacements per dropped prompt, ≥ 0."""
    replacement_reserve_prompts: NonNegative = 1
    """Prompts held in reserve for replacements, ≥ 0."""
    native: Omittable[NativeRolloutFTConfig] = None
    """Time limits of native rollouts."""
    nemo_gym: Omittable[NemoGymRolloutFTConfig] = None
    """Limits of NeMo-Gym rollouts."""


class WatchdogConfig(SectionModel):
    """``async_rl.stall_watchdog``: what happens when nothing progresses."""

    interval_s: PositiveFloat = 30.0
    """Seconds between checks, > 0."""
    stall_timeout_s: PositiveFloat = 600.0
    """Seconds without progress that count as a stall, > 0."""
    stall_action: Annotated[Literal["warn", "abort"], StrictStr] = "warn"
    """Warn or abort on a stall."""
    gym_subprocess_check: ConfigBool = True
    """Also check NeMo-Gym's subprocesses."""


class FleetHealthConfig(SectionModel):
    """``async_rl.generation_fleet_health``: health probes of the generation shards."""

    enabled: ConfigBool = False
    """Probe the generation shards."""
    probe_interval_s: PositiveFloat = 5.0
    """Seconds between probes, > 0."""
    probe_timeout_s: PositiveFloat = 2.0
    """Seconds a probe may take, > 0."""
    unhealthy_threshold: AtLeastOne = 3
    """Failed probes that mark a shard unhealthy, ≥ 1."""
    healthy_threshold: AtLeastOne = 2
    """Passed probes that mark a shard healthy again, ≥ 1."""
    selection: Annotated[Literal["least_outstanding"], StrictStr] = "least_outstanding"
    """How a shard is chosen."""
    on_dead_shard: Annotated[Literal["fail_fast"], StrictStr] = "fail_fast"
    """What a dead shard does to the run."""
    max_restart_attempts_per_shard: NonNegative = 5
    """Restarts per shard, ≥ 0."""
    min_healthy_shards: AtLeastOne = 1
    """Fewest healthy shards the run continues with, ≥ 1."""


class GenerationRouterConfig(SectionModel):
    """``async_rl.generation_router``: the HTTP router in front of the generation shards."""

    enabled: ConfigBool = False
    """Route generation requests through the router."""
    port_range_low: Port = 6000
    """Lowest port of the router, 1–65535."""
    port_range_high: Port = 6099
    """Highest port of the router, 1–65535."""
    backend_timeout_s: PositiveFloat = 600.0
    """Seconds a backend request may take, > 0."""
    connect_timeout_s: PositiveFloat = 5.0
    """Seconds a connection may take, > 0."""
    no_healthy_backend_status: ConfigInt = 409
    """HTTP status returned when no backend is healthy."""


class AsyncRLConfig(SectionModel):
    """``async_rl``: the single-controller asynchronous GRPO path."""

    sampler: Omittable[Sampler] = None
    """The staleness sampler (``name`` picks it; default ``in_order``)."""
    rollout_failure: Omittable[RolloutFailureConfig] = None
    """Retries and drops of failing rollouts."""
    stall_watchdog: Omittable[WatchdogConfig] = None
    """What happens when nothing progresses."""
    generation_fleet_health: Omittable[FleetHealthConfig] = None
    """Health probes of the generation shards."""
    generation_router: Omittable[GenerationRouterConfig] = None
    """The HTTP router in front of the generation shards."""
    recompute_kv_cache_after_weight_updates: ConfigBool = False
    """Recompute the KV cache of in-flight generations after a weight update."""
    min_groups_for_streaming_train: AtLeastOne = 32
    """Prompt groups that must be ready before a step trains, ≥ 1 (rule P26)."""
    max_inflight_prompts: AtLeastOne = 32
    """Prompts generating at once, ≥ 1."""
    max_buffered_rollouts: AtLeastOne = 64
    """Finished rollouts buffered, ≥ 1."""
    diagnostics: ConfigBool = False
    """Log diagnostics of the asynchronous loop."""


class GRPOSingleControllerRecipe(TrainingRecipe):
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
