"""Config contracts for the vLLM generation section of a recipe (SPEC §1); imports neither torch nor vLLM.

The public names only, loaded lazily from their stages (docs/development/config-core.md, "Stages").
"""

import importlib
import warnings
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
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


_STAGES: Final[dict[str, tuple[str, ...]]] = {
    ".._internal.config_scalars": ("ConfigBool", "ConfigFloat", "ConfigInt", "ConfigStr"),
    ".loading.check_section": ("DEFAULT_SECTION", "EVALUATION_SECTION"),
    ".loading.issues": ("ConfigIssue",),
    ".loading.load_recipe": ("LoadedRecipe", "load_recipe"),
    ".loading.resolve": ("register_resolvers",),
    ".rules.refit_support": (
        "assert_reload_refit_config_supported",
        "normalize_vllm_refit_config",
        "reload_refit_violation",
    ),
    ".rules.unknown_keys": ("UnknownKey", "unknown_keys"),
    ".section.generation": (
        "ColocationConfig",
        "ColocationResources",
        "GenerationConfig",
        "Nvfp4PerTokenRolloutConfig",
        "VllmConfig",
    ),
    ".section.json_schema": ("config_json_schema",),
    ".section.refit_cfg": (
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
    ),
    ".section.vllm_cfg": ("VllmSpecificArgs", "VllmVideoConfig"),
    ".worker_class": ("GENERATION_WORKER_OVERRIDES", "resolve_generation_worker_cls"),
}
_HOME: Final[dict[str, str]] = {name: stage for stage, names in _STAGES.items() for name in names}
"""Where each public name lives, loaded on first access: importing a stage (``config.rule``, ``config.finding``)
does not import every other stage first, so the private modules that build on the lowest stages import cleanly."""


def __getattr__(name: str) -> Any:  # Any: a lazily loaded name or a moved module
    """A public name, loaded from its stage on first access; a moved name (:data:`MOVED`), with a
    ``DeprecationWarning`` naming its new place."""
    if name in _HOME:
        value = getattr(importlib.import_module(_HOME[name], __name__), name)
        globals()[name] = value
        return value
    if name not in MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"rl_contracts.config.{name} moved to {MOVED[name]}; import from there",
        DeprecationWarning,
        stacklevel=2,
    )
    return importlib.import_module(MOVED[name])
