"""The refit settings of the generation section (``refit_cfg``) and the transport names (SPEC §1.1, §1.3); every
model keeps unknown keys except :class:`VllmNixlRefitConfig`.
"""

from typing import Annotated, Any, Literal

from pydantic import Field

from ..._internal.config_base import ConfigModel, ForbidExtra
from ..._internal.config_scalars import (
    ConfigBool,
    ConfigStr,
    NonNegative,
    Positive,
    PositiveFloat,
    Ratio,
    StrictStr,
)

__all__ = [
    "VLLM_REFIT_SELECTORS",
    "VLLM_SPARSE_REFIT_TRANSPORTS",
    "VllmCheckpointEnginePluginConfig",
    "VllmDeltaCompressionConfig",
    "VllmNixlRefitConfig",
    "VllmRefitBaselineConfig",
    "VllmRefitConfig",
    "VllmRefitStorageConfig",
    "VllmRefitTuningConfig",
    "VllmSparseRefitConfig",
    "is_plugin_path",
]

VLLM_REFIT_SELECTORS: tuple[str, ...] = ("vllm_s3_sparse", "vllm_zmq_sparse", "nixl", "nccl_reshard")
"""The named refit transports ``refit_transport`` may select (besides ``None`` and a ``module:ClassName``)."""

VLLM_SPARSE_REFIT_TRANSPORTS: frozenset[str] = frozenset({"vllm_s3_sparse", "vllm_zmq_sparse"})
"""The sparse (delta-compressed) refit transports, configured by ``refit_cfg.sparse``."""


def is_plugin_path(key: str) -> bool:
    """Whether ``key`` has the ``module.path:ClassName`` form of a custom checkpoint-engine transport.

    >>> is_plugin_path("my_pkg.engines:FastEngine"), is_plugin_path("nixl"), is_plugin_path("a:b:C")
    (True, False, False)
    """
    if key.count(":") != 1:
        return False
    module, _, class_name = key.partition(":")
    return (
        bool(module) and all(part.isidentifier() for part in module.split(".")) and class_name.isidentifier()
    )


class VllmDeltaCompressionConfig(ConfigModel):
    """How sparse refit encodes and chunks weight deltas (extra keys allowed)."""

    encoding: Annotated[Literal["xor", "overwrite"], StrictStr] = "xor"
    """Delta encoding: ``"xor"`` against the baseline, or ``"overwrite"`` with the new values."""
    sparse_bucket_size_bytes: Positive = 536870912
    """Bytes per sparse bucket (default 512 MiB), > 0."""
    export_chunk_bytes: dict[ConfigStr, Positive] = Field(
        default_factory=lambda: {"s3": 67108864, "zmq": 268435456}
    )
    """Export chunk size in bytes per sparse transport (``"s3"``, ``"zmq"``), each > 0."""
    zstd_threads: dict[ConfigStr, NonNegative] = Field(default_factory=lambda: {"s3": 0, "zmq": 0})
    """zstd compression threads per sparse transport, each ≥ 0 (0: zstd's default)."""


class VllmRefitStorageConfig(ConfigModel):
    """Where sparse refit stages payloads (extra keys allowed)."""

    s3_bucket: ConfigStr | None = None
    """S3 bucket for the ``vllm_s3_sparse`` transport; null when unused."""
    s3_region: ConfigStr = "us-east-1"
    """Region of the S3 bucket."""
    s3_prefix: ConfigStr = "nemo-rl-refit"
    """Key prefix of refit objects in the bucket."""
    staging_dir: ConfigStr = "/dev/shm"
    """Local directory for staged payloads."""


class VllmRefitBaselineConfig(ConfigModel):
    """Where the sparse-refit baseline weights (the XOR reference) live (extra keys allowed)."""

    in_memory: ConfigBool = False
    """Keep the baseline in host memory."""
    mmap_dir: ConfigStr | None = None
    """Directory for a memory-mapped baseline; null when unused."""


class VllmRefitTuningConfig(ConfigModel):
    """Worker counts and queue sizes of sparse refit (extra keys allowed)."""

    encode_workers: dict[ConfigStr, Positive] = Field(default_factory=lambda: {"s3": 8, "zmq": 8})
    """Delta-encoding workers per sparse transport, each > 0."""
    transfer_workers: dict[ConfigStr, Positive] = Field(default_factory=lambda: {"s3": 32, "zmq": 4})
    """Transfer workers per sparse transport, each > 0."""
    zmq_retries: NonNegative = 3
    """Retries of a failed ZMQ send, ≥ 0."""
    zmq_relay_payload_workers: Positive = 16
    """ZMQ relay payload workers, > 0."""
    zmq_relay_forward_workers: Positive = 8
    """ZMQ relay forward workers, > 0."""
    apply_queue_depth: Positive = 32
    """Depth of the apply queue on the engine side, > 0."""
    apply_batch_size: Positive = 8
    """Payloads applied per batch, > 0."""
    partition_workers: Positive = 8
    """Workers that partition weights into buckets, > 0."""


class VllmSparseRefitConfig(ConfigModel):
    """Settings of the sparse refit transports ``vllm_s3_sparse`` and ``vllm_zmq_sparse`` (extra keys allowed)."""

    delta_compression: VllmDeltaCompressionConfig = Field(default_factory=VllmDeltaCompressionConfig)
    """Delta encoding and chunking."""
    storage: VllmRefitStorageConfig = Field(default_factory=VllmRefitStorageConfig)
    """Payload staging."""
    baseline: VllmRefitBaselineConfig = Field(default_factory=VllmRefitBaselineConfig)
    """Baseline weights location."""
    tuning: VllmRefitTuningConfig = Field(default_factory=VllmRefitTuningConfig)
    """Worker counts and queue sizes."""
    verify_samples_per_payload: NonNegative = 0
    """Weights re-checked per payload after apply (0: no verification), ≥ 0."""
    request_timeout_s: PositiveFloat = 600.0
    """Timeout of one refit request in seconds, > 0."""


class VllmNixlRefitConfig(ForbidExtra):
    """Settings of the ``nixl`` checkpoint-engine transport (extra keys forbidden)."""

    update_weights_bucket_memory_ratio: Ratio = 0.05
    """Fraction of device memory used for one weight bucket, 0 < x < 1."""
    device: ConfigStr = "cuda"
    """Device the buckets live on."""
    backend_name: ConfigStr = "UCX"
    """NIXL backend name."""
    backend_init_params: dict[ConfigStr, Any] | None = None
    """Backend initialisation parameters, passed through; null for the backend's defaults."""
    release_after_refit: ConfigBool = False
    """Release the transfer buffers after every refit."""
    shard_expert_weights: ConfigBool = False
    """Send MoE expert weights sharded by expert-parallel rank."""


class VllmCheckpointEnginePluginConfig(ConfigModel):
    """Settings of a custom ``module:ClassName`` checkpoint-engine transport (extra keys allowed).

    It lives in ``refit_cfg`` under the extra key equal to the transport string.
    """

    update_weights_bucket_memory_ratio: Ratio = 0.05
    """Fraction of device memory used for one weight bucket, 0 < x < 1."""
    release_after_refit: ConfigBool = False
    """Release the transfer buffers after every refit."""


class VllmRefitConfig(ConfigModel):
    """Per-transport refit settings (extra keys allowed).

    A ``module:ClassName`` transport keeps its :class:`VllmCheckpointEnginePluginConfig` under the extra key of
    that exact name.
    """

    sparse: VllmSparseRefitConfig = Field(default_factory=VllmSparseRefitConfig)
    """Settings of the sparse transports."""
    nixl: VllmNixlRefitConfig = Field(default_factory=VllmNixlRefitConfig)
    """Settings of the ``nixl`` transport."""
