"""``cluster``: the nodes and GPUs a run asks Ray for (NeMo RL's ``ClusterConfig``)."""

from ..._internal.config_scalars import AtLeastOne, Port
from .variants import Omittable, SectionModel

__all__ = ["ClusterConfig"]


class ClusterConfig(SectionModel):
    """``cluster``: nodes, GPUs per node and ports."""

    gpus_per_node: AtLeastOne
    """GPUs on each node, ≥ 1. Required."""
    num_nodes: AtLeastOne
    """Nodes, ≥ 1. Required."""
    master_port_range_low: Omittable[Port] = None
    """Lowest port of the torch.distributed masters, 1–65535."""
    master_port_range_high: Omittable[Port] = None
    """Highest port of the torch.distributed masters, 1–65535."""
    segment_size: AtLeastOne | None = None
    """Nodes per NVLink-domain segment for topology-aware placement, ≥ 1; null to disable."""
