"""The sections every training algorithm's recipe requires (``policy``, ``data``, ``cluster``, ``checkpointing``):
:class:`TrainingRecipe`, the base of the whole-recipe models of every algorithm but ``eval``."""

from .algorithm import RecipeModel
from .checkpointing import CheckpointingConfig
from .cluster import ClusterConfig
from .data import DataConfig
from .policy import PolicyConfig

__all__ = ["TrainingRecipe"]


class TrainingRecipe(RecipeModel):
    """The sections every training algorithm requires."""

    policy: PolicyConfig
    """The trained model. Required."""
    data: DataConfig
    """The datasets. Required."""
    cluster: ClusterConfig
    """Nodes and GPUs. Required."""
    checkpointing: CheckpointingConfig
    """Saving and resuming. Required."""
