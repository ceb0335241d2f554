"""Every config model and its helpers under one import path (``rl_contracts.config.models``), re-exported.

The definitions live by concern: :mod:`.generation` (``GenerationConfig``, ``VllmConfig``, their parts and rules
C1–C11), :mod:`.vllm_args` (the ``vllm_cfg`` block), :mod:`.refit_models` (``refit_cfg`` and the transport
names), :mod:`.keys` (unknown keys and their class), :mod:`.schema` (the JSON Schema) and the private
:mod:`._scalars` (strict scalar types).
"""

from __future__ import annotations

from ._scalars import ConfigBool, ConfigFloat, ConfigInt, ConfigStr
from .generation import (
    ColocationConfig,
    ColocationResources,
    GenerationConfig,
    Nvfp4PerTokenRolloutConfig,
    VllmConfig,
)
from .keys import UnknownKey, unknown_keys
from .refit_models import (
    VLLM_REFIT_SELECTORS,
    VLLM_SPARSE_REFIT_TRANSPORTS,
    VllmCheckpointEnginePluginConfig,
    VllmDeltaCompressionConfig,
    VllmNixlRefitConfig,
    VllmRefitBaselineConfig,
    VllmRefitConfig,
    VllmRefitStorageConfig,
    VllmRefitTuningConfig,
    VllmSparseRefitConfig,
)
from .schema import config_json_schema
from .vllm_args import VllmSpecificArgs, VllmVideoConfig

__all__ = [
    "VLLM_REFIT_SELECTORS",
    "VLLM_SPARSE_REFIT_TRANSPORTS",
    "ColocationConfig",
    "ColocationResources",
    "ConfigBool",
    "ConfigFloat",
    "ConfigInt",
    "ConfigStr",
    "GenerationConfig",
    "Nvfp4PerTokenRolloutConfig",
    "UnknownKey",
    "VllmCheckpointEnginePluginConfig",
    "VllmConfig",
    "VllmDeltaCompressionConfig",
    "VllmNixlRefitConfig",
    "VllmRefitBaselineConfig",
    "VllmRefitConfig",
    "VllmRefitStorageConfig",
    "VllmRefitTuningConfig",
    "VllmSparseRefitConfig",
    "VllmSpecificArgs",
    "VllmVideoConfig",
    "config_json_schema",
    "unknown_keys",
]
