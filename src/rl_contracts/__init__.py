"""Typed, fail-closed contracts for the glue between RL trainers and vLLM.

``import rl_contracts`` exposes the version and the error classes only, and imports neither torch nor vLLM.
The drop-in replacement for ``nemo_rl.models.generation.vllm.utils`` is :mod:`rl_contracts.vllm_utils`.
"""

from .errors import (
    ChatResponseContractError,
    ConfigContractError,
    ContractError,
    ContractTypeError,
    CounterSnapshotError,
    EnvelopeError,
    PlaceholderRemapError,
    PlaceholderTypeError,
    PromptFormatError,
    RecipeError,
    RecipeLoadError,
    RolloutPromptMismatchError,
    RoutedExpertsError,
    SpliceError,
    UnsupportedConfigError,
    WeightVersionError,
)

__version__ = "0.1.0"

__all__ = [
    "ChatResponseContractError",
    "ConfigContractError",
    "ContractError",
    "ContractTypeError",
    "CounterSnapshotError",
    "EnvelopeError",
    "PlaceholderRemapError",
    "PlaceholderTypeError",
    "PromptFormatError",
    "RecipeError",
    "RecipeLoadError",
    "RolloutPromptMismatchError",
    "RoutedExpertsError",
    "SpliceError",
    "UnsupportedConfigError",
    "WeightVersionError",
    "__version__",
]
