"""``data_plane``: the transfer-queue data plane between rollout and training (NeMo RL's ``DataPlaneConfig``;
optional in GRPO, required on the single-controller path)."""

from typing import Annotated, Any, Literal

from ..._internal.config_scalars import AtLeastOne, ConfigBool, ConfigStr, PositiveFloat, StrictStr
from .variants import SectionModel

__all__ = ["DataPlaneConfig", "ObservabilityConfig"]


class ObservabilityConfig(SectionModel):
    """``data_plane.observability``: a callback that receives the data plane's metrics."""

    enabled: ConfigBool
    """Report data-plane metrics. Required."""
    callback: Any
    """The metrics callback (set in code, not in YAML). Required."""


class DataPlaneConfig(SectionModel):
    """``data_plane``: the transfer queue (rules P12, P24)."""

    enabled: ConfigBool
    """Use the data plane. Required."""
    impl: Annotated[Literal["transfer_queue"], StrictStr]
    """Implementation; only ``"transfer_queue"``. Required."""
    backend: Annotated[Literal["simple", "mooncake_cpu"], StrictStr]
    """Storage backend. Required."""
    storage_capacity: AtLeastOne
    """Samples kept per partition, ≥ 1. Required."""
    num_storage_units: AtLeastOne
    """Storage shards, ≥ 1. Required."""
    claim_meta_poll_interval_s: PositiveFloat
    """Seconds between polls of a blocking claim, > 0. Required."""
    global_segment_size: AtLeastOne
    """Bytes of the global segment (``mooncake_cpu``), ≥ 1. Required."""
    local_buffer_size: AtLeastOne
    """Bytes of the local buffer (``mooncake_cpu``), ≥ 1. Required."""
    controller_address: ConfigStr
    """Address of the transfer-queue controller. Required."""
    ack_timeout_ms: AtLeastOne
    """Milliseconds to wait for an acknowledgement, ≥ 1. Required."""
    observability: ObservabilityConfig
    """Metrics reporting. Required."""
