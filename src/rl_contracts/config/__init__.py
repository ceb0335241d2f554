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

from . import models, recipe, refit_rules
from .models import VLLM_REFIT_SELECTORS as VLLM_REFIT_SELECTORS
from .models import VLLM_SPARSE_REFIT_TRANSPORTS as VLLM_SPARSE_REFIT_TRANSPORTS
from .models import ColocationConfig as ColocationConfig
from .models import ColocationResources as ColocationResources
from .models import ConfigBool as ConfigBool
from .models import ConfigFloat as ConfigFloat
from .models import ConfigInt as ConfigInt
from .models import ConfigStr as ConfigStr
from .models import GenerationConfig as GenerationConfig
from .models import Nvfp4PerTokenRolloutConfig as Nvfp4PerTokenRolloutConfig
from .models import UnknownKey as UnknownKey
from .models import VllmCheckpointEnginePluginConfig as VllmCheckpointEnginePluginConfig
from .models import VllmConfig as VllmConfig
from .models import VllmDeltaCompressionConfig as VllmDeltaCompressionConfig
from .models import VllmNixlRefitConfig as VllmNixlRefitConfig
from .models import VllmRefitBaselineConfig as VllmRefitBaselineConfig
from .models import VllmRefitConfig as VllmRefitConfig
from .models import VllmRefitStorageConfig as VllmRefitStorageConfig
from .models import VllmRefitTuningConfig as VllmRefitTuningConfig
from .models import VllmSparseRefitConfig as VllmSparseRefitConfig
from .models import VllmSpecificArgs as VllmSpecificArgs
from .models import VllmVideoConfig as VllmVideoConfig
from .models import config_json_schema as config_json_schema
from .models import is_plugin_path as is_plugin_path
from .models import unknown_keys as unknown_keys
from .recipe import DEFAULT_SECTION as DEFAULT_SECTION
from .recipe import EVALUATION_SECTION as EVALUATION_SECTION
from .recipe import ConfigIssue as ConfigIssue
from .recipe import LoadedRecipe as LoadedRecipe
from .recipe import load_recipe as load_recipe
from .recipe import register_resolvers as register_resolvers
from .refit_rules import GENERATION_WORKER_OVERRIDES as GENERATION_WORKER_OVERRIDES
from .refit_rules import assert_reload_refit_config_supported as assert_reload_refit_config_supported
from .refit_rules import normalize_vllm_refit_config as normalize_vllm_refit_config
from .refit_rules import reload_refit_violation as reload_refit_violation
from .refit_rules import resolve_generation_worker_cls as resolve_generation_worker_cls

__all__ = [*models.__all__, *recipe.__all__, *refit_rules.__all__]
