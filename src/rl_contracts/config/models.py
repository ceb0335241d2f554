"""Every config model and its helpers under one import path (``rl_contracts.config.models``), re-exported.

The definitions live by concern: :mod:`.generation` (``GenerationConfig``, ``VllmConfig``, their parts and rules
C1–C11), :mod:`.vllm_args` (the ``vllm_cfg`` block), :mod:`.refit_models` (``refit_cfg`` and the transport
names), :mod:`.keys` (unknown keys and their class), :mod:`.schema` (the JSON Schema) and the private
:mod:`._scalars` (strict scalar types).
"""

from __future__ import annotations

from . import generation, refit_models, schema, vllm_args
from ._scalars import ConfigBool as ConfigBool
from ._scalars import ConfigFloat as ConfigFloat
from ._scalars import ConfigInt as ConfigInt
from ._scalars import ConfigStr as ConfigStr
from .generation import ColocationConfig as ColocationConfig
from .generation import ColocationResources as ColocationResources
from .generation import GenerationConfig as GenerationConfig
from .generation import Nvfp4PerTokenRolloutConfig as Nvfp4PerTokenRolloutConfig
from .generation import VllmConfig as VllmConfig
from .keys import UnknownKey as UnknownKey
from .keys import unknown_keys as unknown_keys
from .refit_models import VLLM_REFIT_SELECTORS as VLLM_REFIT_SELECTORS
from .refit_models import VLLM_SPARSE_REFIT_TRANSPORTS as VLLM_SPARSE_REFIT_TRANSPORTS
from .refit_models import VllmCheckpointEnginePluginConfig as VllmCheckpointEnginePluginConfig
from .refit_models import VllmDeltaCompressionConfig as VllmDeltaCompressionConfig
from .refit_models import VllmNixlRefitConfig as VllmNixlRefitConfig
from .refit_models import VllmRefitBaselineConfig as VllmRefitBaselineConfig
from .refit_models import VllmRefitConfig as VllmRefitConfig
from .refit_models import VllmRefitStorageConfig as VllmRefitStorageConfig
from .refit_models import VllmRefitTuningConfig as VllmRefitTuningConfig
from .refit_models import VllmSparseRefitConfig as VllmSparseRefitConfig
from .refit_models import is_plugin_path as is_plugin_path
from .schema import config_json_schema as config_json_schema
from .vllm_args import VllmSpecificArgs as VllmSpecificArgs
from .vllm_args import VllmVideoConfig as VllmVideoConfig

# Whole modules re-export their ``__all__``; of the scalar types and the key helpers, only the public few.
__all__ = [
    "ConfigBool",
    "ConfigFloat",
    "ConfigInt",
    "ConfigStr",
    "UnknownKey",
    "unknown_keys",
    *generation.__all__,
    *refit_models.__all__,
    *schema.__all__,
    *vllm_args.__all__,
]
