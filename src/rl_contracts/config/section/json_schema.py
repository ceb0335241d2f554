"""JSON Schemas for editors (``rl-contracts schema``): the generation section, a whole recipe file, and a recipe
file of one algorithm, each with ``$schema`` (draft 2020-12) and a stable ``$id`` for a YAML language server.

A recipe file is usually a partial override of its ``defaults:`` chain, so the recipe schemas require no key and
accept ``${...}`` and ``???`` wherever they type a value: they check what a file sets, not that the composed
recipe is complete (``validate`` does that).
"""

from __future__ import annotations

import copy
from typing import Any

from .generation import VllmConfig
from .recipe import RECIPE_MODELS, RUN_SCRIPTS, Algorithm

__all__ = [
    "GENERATION_SCHEMA_ID",
    "JSON_SCHEMA_DIALECT",
    "RECIPE_SCHEMA_ID",
    "algorithm_json_schema",
    "algorithm_schema_id",
    "config_json_schema",
    "generation_json_schema",
    "recipe_json_schema",
]

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
"""The ``$schema`` of both schemas."""

GENERATION_SCHEMA_ID = "urn:rl-contracts:schema:vllm-generation:1"
"""The ``$id`` of :func:`generation_json_schema`; its last part changes only with an incompatible schema."""

RECIPE_SCHEMA_ID = "urn:rl-contracts:schema:recipe:1"
"""The ``$id`` of :func:`recipe_json_schema`; its last part changes only with an incompatible schema."""

_INTERPOLATION: dict[str, Any] = {
    "type": "string",
    "pattern": r"^(\$\{.*\}|\?\?\?)$",
    "description": "An OmegaConf interpolation (${...}) or a mandatory value (???), resolved when composed.",
}


def config_json_schema() -> dict[str, Any]:
    """``VllmConfig``'s JSON Schema by alias in validation mode (pydantic's defaults of ``model_json_schema``)."""
    return VllmConfig.model_json_schema()


def generation_json_schema() -> dict[str, Any]:
    """``VllmConfig``'s JSON Schema (by alias, validation mode) with ``$schema`` and ``$id`` first; a new dict."""
    return {"$schema": JSON_SCHEMA_DIALECT, "$id": GENERATION_SCHEMA_ID, **config_json_schema()}


def _section(properties: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """An open mapping whose listed keys are typed."""
    return {"type": "object", "properties": properties}


def _optional(properties: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """An open mapping whose listed keys are typed, or ``null`` for the whole section."""
    return {"type": ["object", "null"], "properties": properties}


_BOOL: dict[str, Any] = {"type": "boolean"}
_BOOL_OR_NULL = {"type": ["boolean", "null"]}
_COUNT = {"type": "integer", "minimum": 0}
_COUNT_OR_NULL = {"type": ["integer", "null"], "minimum": 0}
_NUMBER = {"type": "number"}
_NUMBER_OR_NULL = {"type": ["number", "null"]}
_TEXT_OR_NULL = {"type": ["string", "null"]}
_ENABLED_OR_NULL = _optional({"enabled": _BOOL})


def _generation_section() -> dict[str, Any]:
    return {
        "description": "The generation section: VllmConfig for the vllm backend, open for any other, or null.",
        "type": ["object", "null"],
        "if": {"required": ["backend"], "properties": {"backend": {"not": {"const": "vllm"}}}},
        "then": {},
        "else": {"$ref": "#/$defs/VllmConfig"},
    }


def _preflight_sections() -> dict[str, dict[str, Any]]:
    """The top-level sections preflight reads (PREFLIGHT.md §1-§3), typed as far as it reads them."""
    megatron = _optional(
        {
            "enabled": _BOOL,
            "tensor_model_parallel_size": _COUNT,
            "pipeline_model_parallel_size": _COUNT,
            "context_parallel_size": _COUNT,
            "expert_tensor_parallel_size": _COUNT_OR_NULL,
            "virtual_pipeline_model_parallel_size": _COUNT_OR_NULL,
            "use_fused_linear_logprobs": _BOOL_OR_NULL,
            "account_for_embedding_in_pipeline_split": _BOOL,
            "account_for_loss_in_pipeline_split": _BOOL,
            "fp8_cfg": _optional({"enabled": _BOOL, "fp8_param": _BOOL_OR_NULL, "fp8_recipe": _TEXT_OR_NULL}),
        }
    )
    dtensor = _optional(
        {
            "enabled": _BOOL,
            "_v2": _BOOL,
            "tensor_parallel_size": _COUNT,
            "context_parallel_size": _COUNT,
            "dp_replicate_size": _COUNT_OR_NULL,
            "lora_cfg": _ENABLED_OR_NULL,
        }
    )
    policy = _section(
        {
            "train_global_batch_size": _COUNT,
            "train_micro_batch_size": _COUNT,
            "logprob_batch_size": _COUNT_OR_NULL,
            "max_total_sequence_length": _COUNT,
            "precision": {"type": "string"},
            "hf_config_overrides": {"type": ["object", "null"]},
            "megatron_cfg": megatron,
            "dtensor_cfg": dtensor,
            "draft": _ENABLED_OR_NULL,
            "sequence_packing": _ENABLED_OR_NULL,
            "router_replay": _ENABLED_OR_NULL,
            "generation": _generation_section(),
        }
    )
    grpo = _section(
        {
            "num_prompts_per_step": _COUNT,
            "num_generations_per_prompt": _COUNT,
            "batch_multiplier": _NUMBER,
            "use_dynamic_sampling": _BOOL,
            "val_num_generations_per_prompt": _COUNT,
            "stop_at_validation_metric": _TEXT_OR_NULL,
            "stop_at_validation_threshold": _NUMBER_OR_NULL,
            "skip_reference_policy_logprobs_calculation": _BOOL_OR_NULL,
            "seq_logprob_error_threshold": _NUMBER_OR_NULL,
            "deduplicate_multimodal_data": _BOOL,
            "val_period": {"type": "integer"},
            "val_at_start": _BOOL,
            "val_at_end": _BOOL,
            "max_val_samples": _COUNT_OR_NULL,
            "async_grpo": _optional(
                {
                    "enabled": _BOOL,
                    "max_trajectory_age_steps": _COUNT,
                    "in_flight_weight_updates": _BOOL,
                },
            ),
            "reward_scaling": _ENABLED_OR_NULL,
            "reward_shaping": _ENABLED_OR_NULL,
        }
    )
    return {
        "cluster": _section({"num_nodes": _COUNT, "gpus_per_node": _COUNT, "segment_size": _COUNT_OR_NULL}),
        "grpo": grpo,
        "loss_fn": _section(
            {
                "reference_policy_kl_penalty": _NUMBER,
                "use_kl_in_reward": _BOOL,
                "use_importance_sampling_correction": _BOOL,
                "force_on_policy_ratio": _BOOL,
                # P29 (the loss-function options): flags may be null, read as false
                "use_cispo": _BOOL_OR_NULL,
                "disable_ppo_ratio": _BOOL_OR_NULL,
                "sequence_level_importance_ratios": _BOOL_OR_NULL,
                "token_level_loss": _BOOL_OR_NULL,
                "ratio_clip_c": _NUMBER_OR_NULL,
                "reference_policy_kl_type": {"enum": ["k1", "k2", "k3"]},
                "truncated_importance_sampling_type": {"enum": ["tis", "icepop", "seq-mask-tis", None]},
                "truncated_importance_sampling_ratio": _NUMBER_OR_NULL,
                "truncated_importance_sampling_ratio_min": _NUMBER_OR_NULL,
            }
        ),
        "policy": policy,
        "data": _section({"use_multiple_dataloader": _BOOL, "num_prompts_per_dataloader": _COUNT_OR_NULL}),
        "env": _optional(
            {
                "should_use_nemo_gym": _BOOL,
                "reward_model": _optional(
                    {"resources": _section({"num_nodes": _COUNT, "gpus_per_node": _COUNT})}
                ),
            }
        ),
        "reward_penalties": _optional(
            {
                "penalize_duplicated_reasoning": _BOOL,
                "penalize_empty_final_answer": _BOOL,
                "penalize_unwanted_tokens": _BOOL,
                "penalize_malformed_think_tag": _BOOL,
            }
        ),
        "data_plane": _ENABLED_OR_NULL,
        "async_rl": _optional(
            {
                "min_groups_for_streaming_train": _COUNT,
                "sampler": _optional({"name": {"type": "string"}}),
            }
        ),
        "checkpointing": _optional({"enabled": _BOOL, "metric_name": _TEXT_OR_NULL}),
        "on_policy_distillation": _optional({"enabled": _BOOL, "non_colocated_teachers": _ENABLED_OR_NULL}),
    }


_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMA_MAPS = ("properties", "$defs", "patternProperties")


def _partial(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` for one file of a ``defaults:`` chain: no ``required`` keys, every typed value (a property, a
    list item) also accepts an interpolation or ``???``, and ``oneOf`` reads as ``anyOf`` (in a partial file, both
    variants may match).  Works on a copy."""
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "required":
            continue
        if key in _SUBSCHEMA_MAPS and isinstance(value, dict):
            out[key] = {
                name: _allow_interpolation(_partial(sub)) if key == "properties" else _partial(sub)
                for name, sub in value.items()
            }
        elif key in _SUBSCHEMA_LISTS and isinstance(value, list):
            out["anyOf" if key == "oneOf" else key] = [_partial(sub) for sub in value]
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = _allow_interpolation(_partial(value))
        else:
            out[key] = copy.deepcopy(value)
    return out


def _allow_interpolation(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` that also accepts an interpolation or ``???``: a typed one gains the ``string`` type with the
    interpolation ``pattern`` (so a wrong value is still reported at its own key), any other an ``anyOf``."""
    kind = schema.get("type")
    if kind is None:
        return {"anyOf": [schema, _INTERPOLATION]}
    kinds = [kind] if isinstance(kind, str) else list(kind)
    if "string" in kinds:
        return schema
    return {**schema, "type": [*kinds, "string"], "pattern": _INTERPOLATION["pattern"]}


_RECIPE_DEFAULTS = {
    "description": "Parent recipe(s), relative to this file; later ones and this file win.",
    "anyOf": [
        {"type": "null"},
        {"type": "string", "minLength": 1},
        {"type": "array", "items": {"type": "string", "minLength": 1}},
    ],
}
"""The ``defaults`` key of a recipe file (:func:`_partial` copies it)."""


def _recipe_file_schema(
    schema_id: str, title: str, description: str, properties: dict[str, Any], definitions: dict[str, Any]
) -> dict[str, Any]:
    """A recipe file's schema (:func:`_partial`): ``defaults`` then ``properties``, and ``definitions`` with
    ``VllmConfig``'s."""
    generation = config_json_schema()
    body = {
        "title": title,
        "description": description,
        "type": "object",
        "properties": {"defaults": _RECIPE_DEFAULTS, **properties},
        "$defs": {**definitions, **generation.pop("$defs", {}), "VllmConfig": generation},
    }
    return {"$schema": JSON_SCHEMA_DIALECT, "$id": schema_id, **_partial(body)}


def recipe_json_schema() -> dict[str, Any]:
    """The JSON Schema of a whole recipe file (``rl-contracts schema --recipe``; a new dict): the generation
    sections typed by ``VllmConfig`` for the vllm backend, the sections preflight reads as far as it reads them,
    everything else open."""
    return _recipe_file_schema(
        RECIPE_SCHEMA_ID,
        "NeMo RL recipe",
        "One recipe file of a defaults: chain (rl-contracts). Typed: the generation section (VllmConfig) and the "
        "keys preflight reads; every other key is open. No key is required: run rl-contracts validate for the "
        "composed recipe.",
        {**_preflight_sections(), "generation": _generation_section()},
        {},
    )


def algorithm_schema_id(algorithm: Algorithm) -> str:
    """The ``$id`` of :func:`algorithm_json_schema` for ``algorithm``."""
    return f"urn:rl-contracts:schema:recipe:{algorithm}:1"


def algorithm_json_schema(algorithm: Algorithm) -> dict[str, Any]:
    """The JSON Schema of a recipe file of ``algorithm`` (``rl-contracts schema --recipe --algorithm NAME``; a new
    dict): every section of :data:`~.recipe.RECIPE_MODELS` typed, the generation section as in
    :func:`recipe_json_schema`."""
    model = RECIPE_MODELS[algorithm].model_json_schema()
    definitions = model.pop("$defs", {})
    properties = model["properties"]
    if "PolicyConfig" in definitions:
        definitions["PolicyConfig"]["properties"]["generation"] = _generation_section()
    if "generation" in properties:
        properties["generation"] = _generation_section()
    return _recipe_file_schema(
        algorithm_schema_id(algorithm),
        f"NeMo RL {algorithm} recipe",
        f"One recipe file of a defaults: chain of a {algorithm} recipe ({RUN_SCRIPTS[algorithm]}), every section "
        "typed (rl-contracts). No key is required: run rl-contracts validate for the composed recipe.",
        properties,
        definitions,
    )
