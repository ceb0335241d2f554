"""Drop-in facade for ``nemo_rl.models.generation.vllm.utils``: every name of that module, bound to rl_contracts.

Switch a trainer by changing one import::

    from rl_contracts import vllm_utils as utils   # was: from nemo_rl.models.generation.vllm import utils

Each function is the very object of its implementation module, so names, parameter order, keyword-only markers
and defaults are the reference's (types may be wider; ``routes_start`` is an added trailing keyword-only
parameter).  Where the reference is lenient, these fail closed; see each function's "Divergence:" notes.
``G_ROUTED_EXPERTS_RANGE_CHECKED`` is resolved on every read, so it shows the implementation module's current
(informational) value; assigning it here is allowed and never affects checking.  This module imports torch.
"""

from __future__ import annotations

from typing import Any

from . import routed_experts as _routed_experts
from .chat import (
    VLLM_LOGPROB_FLOOR,
    attach_routed_experts_to_chat_response_choices,
    attach_token_information_to_chat_response_choices,
    model_dump_chat_response_with_dynamic_message_fields,
)
from .config import (
    GENERATION_WORKER_OVERRIDES,
    assert_reload_refit_config_supported,
    resolve_generation_worker_cls,
)
from .metrics import (
    COUNTER_KEY_SEP,
    HISTOGRAM_COUNT_PART,
    HISTOGRAM_SUM_PART,
    aggregate_spec_decode_counters,
    compute_engine_step_metrics,
    compute_spec_decode_metrics,
    encode_counter_key,
)
from .metrics import KEPT_COUNTER_NAMES as _KEPT_COUNTER_NAMES
from .metrics import first_delta as _first_delta
from .metrics import is_kept as _is_kept
from .metrics import mean_from_histogram as _mean_from_histogram
from .multimodal import placeholder_range_bounds as _placeholder_range_bounds
from .multimodal import remap_multimodal_placeholders
from .prompts import format_prompt_for_vllm_generation, validate_rollout_prompt
from .refit import GROUPED_MOE_EXPERT_WEIGHT_SUFFIXES as _GROUPED_MOE_EXPERT_WEIGHT_SUFFIXES
from .refit import format_refit_key_error as _format_refit_key_error
from .refit import is_grouped_moe_expert_weight_name
from .routed_experts import R3_MISSING_ROUTE_SENTINEL, pad_and_align_routed_expert_indices
from .routed_experts import as_routed_experts_tensor as _as_routed_experts_tensor

__all__ = [
    "COUNTER_KEY_SEP",
    "GENERATION_WORKER_OVERRIDES",
    "G_ROUTED_EXPERTS_RANGE_CHECKED",  # noqa: F822 (resolved by __getattr__ on every read)
    "HISTOGRAM_COUNT_PART",
    "HISTOGRAM_SUM_PART",
    "R3_MISSING_ROUTE_SENTINEL",
    "VLLM_LOGPROB_FLOOR",
    "_GROUPED_MOE_EXPERT_WEIGHT_SUFFIXES",
    "_KEPT_COUNTER_NAMES",
    "_as_routed_experts_tensor",
    "_first_delta",
    "_format_refit_key_error",
    "_is_kept",
    "_mean_from_histogram",
    "_placeholder_range_bounds",
    "aggregate_spec_decode_counters",
    "assert_reload_refit_config_supported",
    "attach_routed_experts_to_chat_response_choices",
    "attach_token_information_to_chat_response_choices",
    "compute_engine_step_metrics",
    "compute_spec_decode_metrics",
    "encode_counter_key",
    "format_prompt_for_vllm_generation",
    "is_grouped_moe_expert_weight_name",
    "model_dump_chat_response_with_dynamic_message_fields",
    "pad_and_align_routed_expert_indices",
    "remap_multimodal_placeholders",
    "resolve_generation_worker_cls",
    "validate_rollout_prompt",
]


def __getattr__(name: str) -> Any:
    """Resolve ``G_ROUTED_EXPERTS_RANGE_CHECKED`` from the implementation module on every read."""
    if name == "G_ROUTED_EXPERTS_RANGE_CHECKED":
        return _routed_experts.G_ROUTED_EXPERTS_RANGE_CHECKED
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | {"G_ROUTED_EXPERTS_RANGE_CHECKED"})
