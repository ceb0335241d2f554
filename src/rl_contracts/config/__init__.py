"""Config contracts for the vLLM generation section of a recipe (SPEC §1); imports neither torch nor vLLM.

- :mod:`.generation`, :mod:`.vllm_args`, :mod:`.refit_models`: ``GenerationConfig``, ``VllmConfig`` and every
  nested part, with the cross-field rules (all re-exported by :mod:`.models`);
- :mod:`.keys`: unknown keys of a validated section and their class (typo, misplaced, dead, unknown);
- :mod:`.refit_rules`: refit-transport normalisation, the reload-refit support check, worker-class resolution;
- :mod:`.recipe`: recipe loading (``load_recipe``, ``ConfigIssue``), built on :mod:`.composition` (``defaults:``
  inheritance), :mod:`.overrides` (``--set``), :mod:`.resolution` (leaf-by-leaf interpolation) and
  :mod:`.provenance` (file and line of each value), and running :mod:`.preflight`;
- :mod:`.codes` and :mod:`.catalogue`: the stable finding codes, the ``--select``/``--ignore`` filter, and every
  code in one ordered tuple.
"""

from .models import (
    VLLM_REFIT_SELECTORS,
    VLLM_SPARSE_REFIT_TRANSPORTS,
    ColocationConfig,
    ColocationResources,
    ConfigBool,
    ConfigFloat,
    ConfigInt,
    ConfigStr,
    GenerationConfig,
    Nvfp4PerTokenRolloutConfig,
    UnknownKey,
    VllmCheckpointEnginePluginConfig,
    VllmConfig,
    VllmDeltaCompressionConfig,
    VllmNixlRefitConfig,
    VllmRefitBaselineConfig,
    VllmRefitConfig,
    VllmRefitStorageConfig,
    VllmRefitTuningConfig,
    VllmSparseRefitConfig,
    VllmSpecificArgs,
    VllmVideoConfig,
    config_json_schema,
    unknown_keys,
)
from .recipe import (
    DEFAULT_SECTION,
    EVALUATION_SECTION,
    ConfigIssue,
    LoadedRecipe,
    load_recipe,
    register_resolvers,
)
from .refit_rules import (
    GENERATION_WORKER_OVERRIDES,
    assert_reload_refit_config_supported,
    normalize_vllm_refit_config,
    resolve_generation_worker_cls,
)

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
    "load_recipe",
    "normalize_vllm_refit_config",
    "register_resolvers",
    "resolve_generation_worker_cls",
    "unknown_keys",
]
