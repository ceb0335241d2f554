"""Config contracts for the vLLM generation section of a recipe (SPEC §1); imports neither torch nor vLLM.

The public names only; they live by stage (README's "Package layout"): what a section is (:mod:`.section`), how a
recipe file becomes a checked document (:mod:`.loading`), every finding code (:mod:`.rules`, one registry), and
worker-class resolution (:mod:`.worker_class`).
"""

import importlib
import warnings
from typing import Final

from .._internal.config_scalars import ConfigBool, ConfigFloat, ConfigInt, ConfigStr
from .loading.check_section import DEFAULT_SECTION, EVALUATION_SECTION
from .loading.issues import ConfigIssue
from .loading.load_recipe import LoadedRecipe, load_recipe
from .loading.resolve import register_resolvers
from .rules.refit_support import (
    assert_reload_refit_config_supported,
    normalize_vllm_refit_config,
    reload_refit_violation,
)
from .rules.unknown_keys import UnknownKey, unknown_keys
from .section.generation import (
    ColocationConfig,
    ColocationResources,
    GenerationConfig,
    Nvfp4PerTokenRolloutConfig,
    VllmConfig,
)
from .section.json_schema import config_json_schema
from .section.refit_cfg import (
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
    is_plugin_path,
)
from .section.vllm_cfg import VllmSpecificArgs, VllmVideoConfig
from .worker_class import GENERATION_WORKER_OVERRIDES, resolve_generation_worker_cls

__all__ = [
    "DEFAULT_SECTION",
    "EVALUATION_SECTION",
    "GENERATION_WORKER_OVERRIDES",
    "VLLM_REFIT_SELECTORS",
    "VLLM_SPARSE_REFIT_TRANSPORTS",
    "ColocationConfig",
    "ColocationResources",
    "ConfigBool",
    "ConfigFloat",
    "ConfigInt",
    "ConfigIssue",
    "ConfigStr",
    "GenerationConfig",
    "LoadedRecipe",
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
    "assert_reload_refit_config_supported",
    "config_json_schema",
    "is_plugin_path",
    "load_recipe",
    "normalize_vllm_refit_config",
    "register_resolvers",
    "reload_refit_violation",
    "resolve_generation_worker_cls",
    "unknown_keys",
]

MOVED: Final[dict[str, str]] = {"preflight": "rl_contracts.config.rules.preflight"}
"""Names that moved: the old attribute of this package and the module that now holds it."""


def __getattr__(name: str) -> object:
    """A moved name (:data:`MOVED`), with a ``DeprecationWarning`` naming its new place."""
    if name not in MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"rl_contracts.config.{name} moved to {MOVED[name]}; import from there",
        DeprecationWarning,
        stacklevel=2,
    )
    return importlib.import_module(MOVED[name])
