"""Unit tests for the generation-section models and their cross-field rules (SPEC §1.1, §1.2)."""

from __future__ import annotations

import copy
import enum
import json
import pickle
import re
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from pydantic import BaseModel, ValidationError

from rl_contracts.config import (
    VLLM_REFIT_SELECTORS,
    VLLM_SPARSE_REFIT_TRANSPORTS,
    ColocationConfig,
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
    VllmSpecificArgs,
    VllmVideoConfig,
    config_json_schema,
    unknown_keys,
)
from rl_contracts.testing.strategies import minimal_vllm_generation as section

Loc = tuple[str | int, ...]
PLUGIN = "my_pkg.engines:FastEngine"


def with_vllm(**overrides: Any) -> dict[str, Any]:
    """A minimal section whose ``vllm_cfg`` carries ``overrides``."""
    config = section()
    config["vllm_cfg"].update(overrides)
    return config


def at(config: dict[str, Any], loc: Loc, value: Any) -> dict[str, Any]:
    """A copy of ``config`` with ``value`` stored at ``loc`` (intermediate dicts created)."""
    result = copy.deepcopy(config)
    target: Any = result
    for part in loc[:-1]:
        target = target.setdefault(part, {})
    target[loc[-1]] = value
    return result


def errors(config: Any) -> list[dict[str, Any]]:
    """The line errors of validating ``config`` as ``VllmConfig`` (fails the test when it validates)."""
    with pytest.raises(ValidationError) as info:
        VllmConfig.model_validate(config)
    return [dict(error) for error in info.value.errors(include_url=False)]


def locs(config: Any) -> list[Loc]:
    """The ``loc`` of every line error of validating ``config``."""
    return [error["loc"] for error in errors(config)]


# --- constants --------------------------------------------------------------------------------------------------


def test_constants() -> None:
    """The refit selectors and sparse transports hold exactly the SPEC's values."""
    assert VLLM_REFIT_SELECTORS == ("vllm_s3_sparse", "vllm_zmq_sparse", "nixl", "nccl_reshard")
    assert frozenset({"vllm_s3_sparse", "vllm_zmq_sparse"}) == VLLM_SPARSE_REFIT_TRANSPORTS


def test_minimal_section_validates_and_dumps_back() -> None:
    """A minimal section validates and ``model_dump(by_alias=True, exclude_unset=True)`` returns it."""
    config = section()
    model = VllmConfig.model_validate(config)
    assert model.model_dump(by_alias=True, exclude_unset=True) == config
    assert model.vllm_cfg.kv_cache_dtype == "auto"
    assert model.vllm_cfg.refit_with_reload_api is False
    assert model.refit_transport is None
    assert model.refit_cfg is None


# --- strict scalars ---------------------------------------------------------------------------------------------

REJECTED_SCALARS: list[tuple[Loc, Any]] = [
    # int fields: only Python int
    (("max_new_tokens",), True),
    (("max_new_tokens",), False),
    (("max_new_tokens",), 16.0),
    (("max_new_tokens",), "16"),
    (("max_new_tokens",), np.int64(16)),
    (("max_new_tokens",), b"16"),
    (("vllm_cfg", "tensor_parallel_size"), True),
    (("vllm_cfg", "max_model_len"), 4096.0),
    (("port_range_low",), np.int32(8000)),
    (("_pad_token_id",), True),
    (("stop_token_ids", 0), True),
    (("stop_token_ids", 0), 1.0),
    # float fields: int or float, never bool or str, always finite
    (("temperature",), True),
    (("temperature",), "1.0"),
    (("temperature",), None),
    (("temperature",), float("nan")),
    (("temperature",), float("inf")),
    (("temperature",), 10**400),
    (("vllm_cfg", "gpu_memory_utilization"), False),
    (("top_p",), "1"),
    # bool fields: only bool
    (("vllm_cfg", "async_engine"), 1),
    (("vllm_cfg", "async_engine"), 0),
    (("vllm_cfg", "async_engine"), "true"),
    (("vllm_cfg", "async_engine"), np.bool_(True)),
    (("vllm_cfg", "enforce_eager"), 1),
    (("use_async_rollouts",), "yes"),
    (("_draft_weights_from_refit",), 1),
    # str fields: only str
    (("backend",), b"vllm"),
    (("model_name",), 7),
    (("quant_cfg",), 1),
    (("vllm_cfg", "kv_cache_dtype"), 1),
    (("vllm_cfg", "kv_cache_dtype"), b"fp8"),
    # lists: list or tuple of the element type
    (("stop_strings",), "stop"),
    (("stop_strings",), {"a"}),
    (("stop_token_ids",), {1, 2}),
    (("bad_words", 0), 1),
]


@pytest.mark.parametrize(("loc", "value"), REJECTED_SCALARS)
def test_strict_scalars_reject(loc: Loc, value: Any) -> None:
    """A value outside the field's strict type is reported at that field's location."""
    config = at(section(), loc[:1], [value]) if isinstance(loc[-1], int) else at(section(), loc, value)
    assert loc in locs(config)


class _Size(enum.IntEnum):
    TWO = 2
    SIXTEEN = 16


ACCEPTED_SCALARS: list[tuple[Loc, Any, Any]] = [
    # an int subclass reads as its plain int
    (("max_new_tokens",), _Size.SIXTEEN, 16),
    (("vllm_cfg", "tensor_parallel_size"), _Size.TWO, 2),
    (("stop_token_ids",), [_Size.TWO], [2]),
    (("temperature",), 1, 1.0),
    (("temperature",), 0, 0.0),
    (("top_p",), 1, 1.0),
    (("vllm_cfg", "gpu_memory_utilization"), 1, 1.0),
    (("max_new_tokens",), 7, 7),
    (("stop_token_ids",), (1, 2), [1, 2]),
    (("stop_strings",), ("a",), ["a"]),
    (("vllm_cfg", "kv_cache_dtype"), None, "auto"),
    (("vllm_cfg", "refit_with_reload_api"), None, False),
    (
        ("vllm_cfg", "env_vars"),
        {"A": 1, "B": 1.5, "C": "x", "D": 1e-8},
        {"A": "1", "B": "1.5", "C": "x", "D": "1e-08"},
    ),
]


@pytest.mark.parametrize(("loc", "value", "expected"), ACCEPTED_SCALARS)
def test_strict_scalars_accept_and_convert(loc: Loc, value: Any, expected: Any) -> None:
    """Ints for floats become floats, int subclasses plain ints, tuples become lists, null reads as the default, env numbers become str."""
    model = VllmConfig.model_validate(at(section(), loc, value))
    target: Any = model
    for part in loc:
        target = getattr(target, str(part))
    assert target == expected
    assert type(target) is type(expected)


@pytest.mark.parametrize("value", [True, False, None, [1], {"a": 1}])
def test_env_vars_reject_bool_null_and_containers(value: Any) -> None:
    """An ``env_vars`` value that is a bool, null or container is rejected at its key."""
    assert ("vllm_cfg", "env_vars", "FLAG") in locs(with_vllm(env_vars={"FLAG": value}))


# --- ranges (rule C2) -------------------------------------------------------------------------------------------

RANGES: list[tuple[Loc, Any, Any]] = [
    (("max_new_tokens",), 0, 1),
    (("temperature",), -0.001, 0),
    (("val_temperature",), -1, 0.0),
    (("stop_token_ids",), [-1], [0]),
    (("port_range_low",), 0, 1),
    (("port_range_high",), 65536, 65535),
    (("vllm_cfg", "tensor_parallel_size"), 0, 1),
    (("vllm_cfg", "pipeline_parallel_size"), 0, 1),
    (("vllm_cfg", "expert_parallel_size"), -1, 1),
    (("vllm_cfg", "gpu_memory_utilization"), 0, 0.0001),
    (("vllm_cfg", "gpu_memory_utilization"), 1.0001, 1),
    (("vllm_cfg", "max_model_len"), 0, 1),
    (("vllm_cfg", "vllm_metrics_logger_interval"), 0, 0.5),
    (("vllm_cfg", "num_first_layers_in_bf16"), -1, 0),
    (("vllm_cfg", "num_last_layers_in_bf16"), -1, 0),
    (("vllm_cfg", "http_refit_server_port"), 0, 65535),
    (("vllm_cfg", "zmq_refit_server_port"), 65536, 1),
    (("colocated", "resources", "gpus_per_node"), 0, 1),
    (("colocated", "resources", "num_nodes"), 0, None),
    (("refit_cfg", "sparse", "verify_samples_per_payload"), -1, 0),
    (("refit_cfg", "sparse", "request_timeout_s"), 0, 0.001),
    (("refit_cfg", "sparse", "delta_compression", "sparse_bucket_size_bytes"), 0, 1),
    (("refit_cfg", "sparse", "delta_compression", "export_chunk_bytes", "s3"), 0, 1),
    (("refit_cfg", "sparse", "delta_compression", "zstd_threads", "zmq"), -1, 0),
    (("refit_cfg", "sparse", "tuning", "encode_workers", "s3"), 0, 1),
    (("refit_cfg", "sparse", "tuning", "transfer_workers", "zmq"), 0, 1),
    (("refit_cfg", "sparse", "tuning", "zmq_retries"), -1, 0),
    (("refit_cfg", "sparse", "tuning", "zmq_relay_payload_workers"), 0, 1),
    (("refit_cfg", "sparse", "tuning", "zmq_relay_forward_workers"), 0, 1),
    (("refit_cfg", "sparse", "tuning", "apply_queue_depth"), 0, 1),
    (("refit_cfg", "sparse", "tuning", "apply_batch_size"), 0, 1),
    (("refit_cfg", "sparse", "tuning", "partition_workers"), 0, 1),
    (("refit_cfg", "nixl", "update_weights_bucket_memory_ratio"), 1, 0.99),
    (("refit_cfg", "nixl", "update_weights_bucket_memory_ratio"), 0, 0.01),
]


@pytest.mark.parametrize(("loc", "bad", "good"), RANGES)
def test_ranges(loc: Loc, bad: Any, good: Any) -> None:
    """Each ranged field rejects a value just outside its range and accepts its boundary."""
    config = section(colocated={"enabled": True, "resources": {"gpus_per_node": 1, "num_nodes": 1}})
    bad_loc = (*loc, 0) if isinstance(bad, list) else loc
    assert bad_loc in locs(at(config, loc, bad))
    VllmConfig.model_validate(at(config, loc, good))


def test_video_ranges_and_literal() -> None:
    """``video`` needs ``sampling_style='nemotron_vl'`` and frame counts >= 1."""
    good = {"sampling_style": "nemotron_vl", "num_frames": 1, "temporal_patch_size": 1}
    assert VllmConfig.model_validate(with_vllm(video=good)).vllm_cfg.video == VllmVideoConfig(**good)
    for key, value in (("sampling_style", "uniform"), ("num_frames", 0), ("temporal_patch_size", 0)):
        assert ("vllm_cfg", "video", key) in locs(with_vllm(video={**good, key: value}))


@pytest.mark.parametrize(
    ("loc", "value"),
    [
        (("vllm_cfg", "kv_cache_dtype"), "fp16"),
        (("vllm_cfg", "logprobs_mode"), "logits"),
        (("refit_cfg", "sparse", "delta_compression", "encoding"), "zstd"),
    ],
)
def test_literal_fields_reject_other_values(loc: Loc, value: str) -> None:
    """Enumerated fields accept only their listed values."""
    assert loc in locs(at(section(), loc, value))


# --- "Req." semantics -------------------------------------------------------------------------------------------

REQUIRED: list[Loc] = [
    ("backend",),
    ("max_new_tokens",),
    ("temperature",),
    ("top_p",),
    ("val_temperature",),
    ("val_top_p",),
    ("vllm_cfg",),
    ("vllm_cfg", "tensor_parallel_size"),
    ("vllm_cfg", "pipeline_parallel_size"),
    ("vllm_cfg", "expert_parallel_size"),
    ("vllm_cfg", "gpu_memory_utilization"),
    ("vllm_cfg", "max_model_len"),
    ("vllm_cfg", "async_engine"),
]
REQUIRED_NULLABLE: list[Loc] = [("top_k",), ("val_top_k",), ("stop_token_ids",), ("stop_strings",)]


def without(config: dict[str, Any], loc: Loc) -> dict[str, Any]:
    """A copy of ``config`` without the key at ``loc``."""
    result = copy.deepcopy(config)
    target: Any = result
    for part in loc[:-1]:
        target = target[part]
    del target[loc[-1]]
    return result


@pytest.mark.parametrize("loc", REQUIRED)
def test_required_keys_reject_missing_and_null(loc: Loc) -> None:
    """A required key may be neither absent nor null."""
    missing = errors(without(section(), loc))
    assert (loc, "missing") in [(e["loc"], e["type"]) for e in missing]
    assert loc in locs(at(section(), loc, None))


@pytest.mark.parametrize("loc", REQUIRED_NULLABLE)
def test_required_nullable_keys(loc: Loc) -> None:
    """A required-nullable key accepts null but not absence."""
    VllmConfig.model_validate(at(section(), loc, None))
    assert (loc, "missing") in [(e["loc"], e["type"]) for e in errors(without(section(), loc))]


def test_colocation_requires_enabled_and_both_resource_keys() -> None:
    """``colocated`` needs ``enabled`` and ``resources``; ``resources`` needs both nullable keys present."""
    resources = {"gpus_per_node": None, "num_nodes": None}
    assert VllmConfig.model_validate(
        section(colocated={"enabled": False, "resources": resources})
    ).colocated == (ColocationConfig.model_validate({"enabled": False, "resources": resources}))
    assert ("colocated", "enabled") in locs(section(colocated={"resources": resources}))
    assert ("colocated", "resources") in locs(section(colocated={"enabled": True}))
    assert ("colocated", "resources", "num_nodes") in locs(
        section(colocated={"enabled": True, "resources": {"gpus_per_node": 2}})
    )


OPTIONAL_NONE_DEFAULT = [
    "model_name",
    "bad_words",
    "colocated",
    "port_range_low",
    "use_async_rollouts",
    "mcore_generation_config",
    "vllm_kwargs",
    "refit_transport",
    "refit_cfg",
    "quant_cfg",
    "real_quant",
    "real_quant_export_cpu_offload",
    "nvfp4_pertoken_rollout",
    "worker_extension_cls_fqn",
]


@pytest.mark.parametrize("key", OPTIONAL_NONE_DEFAULT)
def test_optional_keys_absent_or_null_read_as_none(key: str) -> None:
    """An optional key without a listed default reads as ``None`` whether absent or null."""
    assert getattr(VllmConfig.model_validate(section()), key) is None
    assert getattr(VllmConfig.model_validate(section(**{key: None})), key) is None


def test_refit_submodel_defaults() -> None:
    """The refit sub-models carry the SPEC's defaults."""
    refit = VllmRefitConfig()
    assert refit.sparse.delta_compression == VllmDeltaCompressionConfig(
        encoding="xor",
        sparse_bucket_size_bytes=536870912,
        export_chunk_bytes={"s3": 67108864, "zmq": 268435456},
        zstd_threads={"s3": 0, "zmq": 0},
    )
    assert refit.sparse.storage == VllmRefitStorageConfig(
        s3_bucket=None, s3_region="us-east-1", s3_prefix="nemo-rl-refit", staging_dir="/dev/shm"
    )
    assert refit.sparse.baseline == VllmRefitBaselineConfig(in_memory=False, mmap_dir=None)
    tuning = refit.sparse.tuning
    assert (tuning.encode_workers, tuning.transfer_workers) == ({"s3": 8, "zmq": 8}, {"s3": 32, "zmq": 4})
    assert (
        tuning.zmq_retries,
        tuning.zmq_relay_payload_workers,
        tuning.zmq_relay_forward_workers,
        tuning.apply_queue_depth,
        tuning.apply_batch_size,
        tuning.partition_workers,
    ) == (3, 16, 8, 32, 8, 8)
    assert (refit.sparse.verify_samples_per_payload, refit.sparse.request_timeout_s) == (0, 600.0)
    assert refit.nixl == VllmNixlRefitConfig(
        update_weights_bucket_memory_ratio=0.05,
        device="cuda",
        backend_name="UCX",
        backend_init_params=None,
        release_after_refit=False,
        shard_expert_weights=False,
    )
    plugin = VllmCheckpointEnginePluginConfig()
    assert (plugin.update_weights_bucket_memory_ratio, plugin.release_after_refit) == (0.05, False)
    assert Nvfp4PerTokenRolloutConfig().enabled is False
    assert VllmRefitConfig().sparse.delta_compression.export_chunk_bytes is not (
        VllmRefitConfig().sparse.delta_compression.export_chunk_bytes
    )


@pytest.mark.parametrize(
    "loc",
    [
        ("refit_cfg", "sparse"),
        ("refit_cfg", "sparse", "storage", "s3_region"),
        ("refit_cfg", "nixl", "device"),
    ],
)
def test_refit_submodel_fields_without_none_reject_null(loc: Loc) -> None:
    """A refit sub-model field whose type has no ``None`` rejects null."""
    assert loc in locs(at(section(), loc, None))


# --- underscore keys --------------------------------------------------------------------------------------------

UNDERSCORE: list[tuple[Loc, str, Any]] = [
    (("_pad_token_id",), "pad_token_id", 151643),
    (("_draft_weights_from_refit",), "draft_weights_from_refit", True),
    (("_mtp_weights_from_refit",), "mtp_weights_from_refit", False),
    (("_debug_payload_metrics",), "debug_payload_metrics", True),
    (("vllm_cfg", "_routed_experts_transport"), "routed_experts_transport", "ray"),
    (("vllm_cfg", "_routed_experts_store_run_instance_id"), "routed_experts_store_run_instance_id", "run-1"),
]


@pytest.mark.parametrize(("loc", "attribute", "value"), UNDERSCORE)
@pytest.mark.parametrize("spelling", ["underscore", "plain"])
def test_underscore_keys_both_spellings(loc: Loc, attribute: str, value: Any, spelling: str) -> None:
    """Either spelling sets the attribute, and the by-alias dump writes the underscore spelling."""
    key = loc[-1] if spelling == "underscore" else str(loc[-1])[1:]
    config = at(section(), (*loc[:-1], key), value)
    model = VllmConfig.model_validate(config)
    holder: BaseModel = model.vllm_cfg if len(loc) == 2 else model
    assert getattr(holder, attribute) == value
    assert not holder.model_extra
    assert model.model_dump(by_alias=True, exclude_unset=True) == at(section(), loc, value)


def test_underscore_key_given_twice_is_rejected() -> None:
    """Giving both spellings of an underscore key is an error at the plain spelling."""
    found = errors(section(_pad_token_id=1, pad_token_id=1))
    assert [(e["loc"], e["type"]) for e in found] == [(("pad_token_id",), "config_rule_duplicate_key")]
    assert "'_pad_token_id'" in found[0]["msg"]
    assert "'pad_token_id'" in found[0]["msg"]
    nested = errors(with_vllm(_routed_experts_transport="ray", routed_experts_transport="ray"))
    assert nested[0]["loc"] == ("vllm_cfg", "routed_experts_transport")


# --- extra keys -------------------------------------------------------------------------------------------------


def unknown(loc: Loc, value: object) -> UnknownKey:
    """The K2 finding of an unknown key at ``loc`` (all str keys) holding ``value``."""
    path = ".".join(str(key) for key in loc)
    return UnknownKey(
        code="K2", path=path, value=value, message="unknown key (not validated)", severity="warning"
    )


def suggestion(found: UnknownKey) -> str | None:
    """The declared key a K1 finding's message suggests, else ``None``."""
    match = re.search(r"did you mean '([^']*)'\?$", found.message)
    return match.group(1) if match else None


EXTRA_ALLOWED: list[tuple[Loc, Callable[[VllmConfig], BaseModel | None]]] = [
    ((), lambda m: m),
    (("vllm_cfg",), lambda m: m.vllm_cfg),
    (("colocated",), lambda m: m.colocated),
    (("colocated", "resources"), lambda m: m.colocated.resources if m.colocated else None),
    (("nvfp4_pertoken_rollout",), lambda m: m.nvfp4_pertoken_rollout),
    (("refit_cfg",), lambda m: m.refit_cfg),
    (("refit_cfg", "sparse"), lambda m: m.refit_cfg.sparse if m.refit_cfg else None),
    (("refit_cfg", "sparse", "tuning"), lambda m: m.refit_cfg.sparse.tuning if m.refit_cfg else None),
    (("refit_cfg", "sparse", "storage"), lambda m: m.refit_cfg.sparse.storage if m.refit_cfg else None),
]


@pytest.mark.parametrize(("loc", "holder"), EXTRA_ALLOWED)
def test_unknown_keys_kept_where_allowed(loc: Loc, holder: Callable[[VllmConfig], BaseModel | None]) -> None:
    """Sections that allow extra keys keep them in ``model_extra`` and report them through ``unknown_keys``."""
    config = section(colocated={"enabled": False, "resources": {"gpus_per_node": 1, "num_nodes": 1}})
    config = at(config, (*loc, "x_custom"), {"nested": [1, 2]})
    model = VllmConfig.model_validate(config)
    target = holder(model)
    assert target is not None
    assert target.model_extra == {"x_custom": {"nested": [1, 2]}}
    assert unknown_keys(model) == [unknown((*loc, "x_custom"), {"nested": [1, 2]})]


@pytest.mark.parametrize(
    "loc",
    [
        ("vllm_cfg", "video", "fps"),
        ("refit_cfg", "nixl", "backend"),
    ],
)
def test_unknown_keys_forbidden_in_video_and_nixl(loc: Loc) -> None:
    """``video`` and ``refit_cfg.nixl`` reject unknown keys."""
    config = section()
    if loc[1] == "video":
        config = at(
            config, loc[:2], {"sampling_style": "nemotron_vl", "num_frames": 8, "temporal_patch_size": 2}
        )
    assert [(e["loc"], e["type"]) for e in errors(at(config, loc, 1))] == [(loc, "extra_forbidden")]


def test_unknown_keys_suggest_the_closest_key_of_their_model() -> None:
    """A misspelt key gets the closest known key of the model that holds it (aliases included)."""
    config = with_vllm(gpu_memory_utilisation=0.9)
    config["pad_token_idd"] = 0
    config["temprature"] = 0.7
    config["completely_unrelated"] = 1
    found = unknown_keys(VllmConfig.model_validate(config))
    assert [(u.path, u.value, suggestion(u), u.code, u.severity) for u in found] == [
        ("pad_token_idd", 0, "pad_token_id", "K1", "error"),
        ("temprature", 0.7, "temperature", "K1", "error"),
        ("completely_unrelated", 1, None, "K2", "warning"),
        ("vllm_cfg.gpu_memory_utilisation", 0.9, "gpu_memory_utilization", "K1", "error"),
    ]
    assert all(isinstance(u, UnknownKey) for u in found)
    assert "did you mean 'gpu_memory_utilization'?" in found[3].reason
    assert found[2].reason == "unknown key (not validated)"


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("_draft_weight_from_refit", "_draft_weights_from_refit"),
        ("draft_weights_from_refitt", "draft_weights_from_refit"),
        ("tempera", None),
    ],
)
def test_unknown_key_suggestion_is_the_best_match_at_cutoff_0_8(key: str, expected: str | None) -> None:
    """The suggestion is the single closest known key, the ``_`` alias included; a ratio below 0.8 gets none
    (``tempera`` is 0.78 like ``temperature``)."""
    found = unknown_keys(VllmConfig.model_validate(section(**{key: 1})))
    assert [(u.path, u.value, suggestion(u)) for u in found] == [(key, 1, expected)]
    assert found[0].code == ("K2" if expected is None else "K1")


def test_unknown_keys_skip_opaque_dicts_legacy_key_and_plugin_config() -> None:
    """Opaque dicts, a null ``checkpoint_engine`` and the plugin config of the chosen transport are not unknown."""
    config = section(
        checkpoint_engine=None,
        vllm_kwargs={"speculative_config": {"method": "ngram"}},
        mcore_generation_config={"anything": 1},
        refit_transport=PLUGIN,
        refit_cfg={PLUGIN: {"release_after_refit": True, "x_plugin_key": 1}, "other.mod:Engine": {}},
    )
    config["vllm_cfg"]["env_vars"] = {"VLLM_X": "1"}
    config["vllm_cfg"]["http_server_serving_chat_kwargs"] = {"x": 1}
    found = unknown_keys(VllmConfig.model_validate(config))
    assert found == [unknown(("refit_cfg", "other.mod:Engine"), {})]


def test_unknown_key_is_a_frozen_picklable_value() -> None:
    """``UnknownKey`` (a ``Finding``) compares by value, is immutable and survives pickling."""
    item = unknown(("vllm_cfg", "x"), [1])
    assert pickle.loads(pickle.dumps(item)) == item
    with pytest.raises(ValidationError):
        item.path = "z"  # type: ignore[misc]


def test_unknown_keys_of_a_standalone_refit_config_skip_plugin_paths() -> None:
    """In a standalone ``VllmRefitConfig`` every ``module:ClassName`` key is a plugin config, not unknown."""
    refit = VllmRefitConfig.model_validate({PLUGIN: {}, "spars": {}})
    assert [(u.path, suggestion(u), u.code) for u in unknown_keys(refit)] == [("spars", "sparse", "K1")]


def test_unknown_keys_of_a_generic_section() -> None:
    """``unknown_keys`` works on a backend-agnostic ``GenerationConfig`` too."""
    config = section(backend="megatron", checkpoint_engine={"x": 1})
    del config["vllm_cfg"]
    model = GenerationConfig.model_validate(config)
    assert unknown_keys(model) == [unknown(("checkpoint_engine",), {"x": 1})]


def test_generation_config_accepts_other_backends_and_vllm_config_does_not() -> None:
    """``GenerationConfig`` takes any backend string; ``VllmConfig`` requires ``"vllm"``."""
    config = section(backend="megatron")
    assert GenerationConfig.model_validate(config).backend == "megatron"
    assert [(e["loc"], e["type"]) for e in errors(config)] == [(("backend",), "literal_error")]


# --- cross-field rules ------------------------------------------------------------------------------------------

TOP_K_MSG = "top_k valid values: i) None or -1: no filtering. ii) >= 1: top-k filtering. Got top_k={}."
VAL_TOP_K_MSG = (
    "val_top_k valid values: i) None or -1: no filtering. ii) >= 1: top-k filtering. Got val_top_k={}."
)
TOP_P_MSG = "top_p valid values: i) 1.0: no filtering. ii) (0, 1]: top-p filtering. Got top_p={}."
VAL_TOP_P_MSG = "val_top_p valid values: i) 1.0: no filtering. ii) (0, 1]: top-p filtering. Got val_top_p={}."
C3_MSG = "When pipeline_parallel_size > 1, async_engine must be set to True in the vLLM configuration."
C4_MSG = "When EP > 1, EP must be a multiple of TP since vLLM's EP = DP * TP."
C5_MSG = (
    "vLLM async_engine has some issues when using DP inside vLLM. Please update your configuration to set "
    "`policy.generation.vllm_cfg.async_engine=false`."
)
C6_MSG = (
    "policy.generation.checkpoint_engine was replaced by policy.generation.refit_transport='nixl' and "
    "policy.generation.refit_cfg.nixl."
)
C7_MSG = (
    "Unknown vLLM refit transport {}: expected null, 'nccl_reshard', 'vllm_s3_sparse', 'vllm_zmq_sparse', 'nixl', "
    "or a 'module:ClassName' checkpoint-engine path."
)
C8_MSG = (
    "vllm_cfg.reset_encoder_cache_after_weight_update is not supported with refit_transport={}: this "
    "transport's refit path does not reset the multimodal encoder cache, so stale vision embeddings would "
    "silently survive weight updates. Supported transports: null (collective/IPC) and 'nccl_reshard'."
)
NVFP4_MSG = (
    "nvfp4_pertoken_rollout.enabled=true requires quant_cfg=null, real_quant=false and refit_transport=null; "
    "got {}={}."
)
C11_BOOL_MSG = "generation.real_quant_export_cpu_offload must be a boolean"
C11_IPC_MSG = "generation.real_quant_export_cpu_offload=false requires colocated CUDA-IPC refit with no explicit refit_transport"
COLOCATED = {"enabled": True, "resources": {"gpus_per_node": None, "num_nodes": None}}
NOT_COLOCATED = {"enabled": False, "resources": {"gpus_per_node": 8, "num_nodes": 1}}

RULES: list[tuple[str, dict[str, Any], Loc, str, str]] = [
    ("C1", section(top_k=0), ("top_k",), "config_rule_c1", TOP_K_MSG.format(0)),
    ("C1", section(top_k=-2), ("top_k",), "config_rule_c1", TOP_K_MSG.format(-2)),
    ("C1", section(val_top_k=0), ("val_top_k",), "config_rule_c1", VAL_TOP_K_MSG.format(0)),
    ("C1", section(top_p=0), ("top_p",), "config_rule_c1", TOP_P_MSG.format("0.0")),
    ("C1", section(top_p=1.5), ("top_p",), "config_rule_c1", TOP_P_MSG.format("1.5")),
    ("C1", section(top_p=-0.25), ("top_p",), "config_rule_c1", TOP_P_MSG.format("-0.25")),
    ("C1", section(val_top_p=2), ("val_top_p",), "config_rule_c1", VAL_TOP_P_MSG.format("2.0")),
    (
        "C2",
        section(port_range_low=9000, port_range_high=8999),
        ("port_range_high",),
        "config_rule_c2",
        "port_range_low must be <= port_range_high: got port_range_low=9000 and port_range_high=8999.",
    ),
    (
        "C3",
        with_vllm(pipeline_parallel_size=2, async_engine=False),
        ("vllm_cfg", "pipeline_parallel_size"),
        "config_rule_c3",
        C3_MSG,
    ),
    (
        "C4",
        with_vllm(tensor_parallel_size=2, expert_parallel_size=3),
        ("vllm_cfg", "expert_parallel_size"),
        "config_rule_c4",
        C4_MSG,
    ),
    (
        "C5",
        with_vllm(tensor_parallel_size=2, expert_parallel_size=4, async_engine=True),
        ("vllm_cfg", "async_engine"),
        "config_rule_c5",
        C5_MSG,
    ),
    ("C6", section(checkpoint_engine={"enabled": True}), ("checkpoint_engine",), "config_rule_c6", C6_MSG),
    ("C6", section(checkpoint_engine=False), ("checkpoint_engine",), "config_rule_c6", C6_MSG),
    ("C7", section(refit_transport="nccl"), ("refit_transport",), "config_rule_c7", C7_MSG.format("'nccl'")),
    (
        "C7",
        section(refit_transport="a:b:C"),
        ("refit_transport",),
        "config_rule_c7",
        C7_MSG.format("'a:b:C'"),
    ),
    ("C7", section(refit_transport="mod:"), ("refit_transport",), "config_rule_c7", C7_MSG.format("'mod:'")),
    ("C7", section(refit_transport=":Cls"), ("refit_transport",), "config_rule_c7", C7_MSG.format("':Cls'")),
    (
        "C7",
        section(refit_transport="a..b:C"),
        ("refit_transport",),
        "config_rule_c7",
        C7_MSG.format("'a..b:C'"),
    ),
    ("C7", section(refit_transport="1a:C"), ("refit_transport",), "config_rule_c7", C7_MSG.format("'1a:C'")),
    (
        "C7",
        section(refit_transport="a:C.D"),
        ("refit_transport",),
        "config_rule_c7",
        C7_MSG.format("'a:C.D'"),
    ),
    (
        "C8",
        at(section(refit_transport="nixl"), ("vllm_cfg", "reset_encoder_cache_after_weight_update"), True),
        ("vllm_cfg", "reset_encoder_cache_after_weight_update"),
        "config_rule_c8",
        C8_MSG.format("'nixl'"),
    ),
    (
        "C9",
        section(refit_transport=PLUGIN, refit_cfg={"other.mod:Engine": {}}),
        ("refit_cfg", PLUGIN),
        "config_rule_c9_missing",
        f"Custom checkpoint-engine transport {PLUGIN!r} requires policy.generation.refit_cfg[{PLUGIN!r}].",
    ),
    (
        "C9",
        section(refit_transport=PLUGIN),
        ("refit_cfg", PLUGIN),
        "config_rule_c9_missing",
        f"Custom checkpoint-engine transport {PLUGIN!r} requires policy.generation.refit_cfg[{PLUGIN!r}].",
    ),
    (
        "C9",
        section(refit_transport=PLUGIN, refit_cfg={PLUGIN: {"update_weights_bucket_memory_ratio": 1}}),
        ("refit_cfg", PLUGIN, "update_weights_bucket_memory_ratio"),
        "config_rule_c9",
        "Input should be less than 1",
    ),
    (
        "C10",
        section(worker_extension_cls_fqn="pkg.Ext", quant_cfg="FP8"),
        ("worker_extension_cls_fqn",),
        "config_rule_c10",
        "worker_extension_cls_fqn and quant_cfg are mutually exclusive: got worker_extension_cls_fqn='pkg.Ext' and "
        "quant_cfg='FP8'.",
    ),
    (
        "C10",
        section(nvfp4_pertoken_rollout={"enabled": True}, quant_cfg=""),
        ("quant_cfg",),
        "config_rule_c10",
        NVFP4_MSG.format("quant_cfg", "''"),
    ),
    (
        "C10",
        section(
            nvfp4_pertoken_rollout={"enabled": True}, real_quant=True, real_quant_export_cpu_offload=True
        ),
        ("real_quant",),
        "config_rule_c10",
        NVFP4_MSG.format("real_quant", "True"),
    ),
    (
        "C10",
        section(nvfp4_pertoken_rollout={"enabled": True}, refit_transport="nccl_reshard"),
        ("refit_transport",),
        "config_rule_c10",
        NVFP4_MSG.format("refit_transport", "'nccl_reshard'"),
    ),
    (
        "C11",
        section(real_quant=True),
        ("real_quant_export_cpu_offload",),
        "config_rule_c11_missing",
        C11_BOOL_MSG,
    ),
    (
        "C11",
        section(real_quant=True, real_quant_export_cpu_offload=None),
        ("real_quant_export_cpu_offload",),
        "config_rule_c11",
        C11_BOOL_MSG,
    ),
    (
        "C11",
        section(real_quant=True, real_quant_export_cpu_offload=False, colocated=NOT_COLOCATED),
        ("real_quant_export_cpu_offload",),
        "config_rule_c11",
        C11_IPC_MSG,
    ),
    (
        "C11",
        section(real_quant=True, real_quant_export_cpu_offload=False),
        ("real_quant_export_cpu_offload",),
        "config_rule_c11",
        C11_IPC_MSG,
    ),
    (
        "C11",
        section(
            real_quant=True, real_quant_export_cpu_offload=False, colocated=COLOCATED, refit_transport="nixl"
        ),
        ("real_quant_export_cpu_offload",),
        "config_rule_c11",
        C11_IPC_MSG,
    ),
]


@pytest.mark.parametrize(("rule", "config", "loc", "error_type", "message"), RULES)
def test_cross_field_rules(
    rule: str, config: dict[str, Any], loc: Loc, error_type: str, message: str
) -> None:
    """Each rule violation is one line error at the rule's key, with the SPEC's exact message."""
    del rule
    found = errors(config)
    assert [(e["loc"], e["type"], e["msg"]) for e in found] == [(loc, error_type, message)]


@pytest.mark.parametrize(("rule", "config", "loc", "error_type", "message"), RULES)
def test_cross_field_rules_on_direct_construction(
    rule: str, config: dict[str, Any], loc: Loc, error_type: str, message: str
) -> None:
    """``VllmConfig(**section)`` raises the same ``ValidationError`` as ``model_validate``."""
    del rule, error_type, message
    with pytest.raises(ValidationError) as info:
        VllmConfig(**config)
    assert [e["loc"] for e in info.value.errors()] == [loc]


ACCEPTED_RULES: list[dict[str, Any]] = [
    section(top_k=-1, val_top_k=1, top_p=1e-9, val_top_p=1),
    section(port_range_low=9000, port_range_high=9000),
    with_vllm(pipeline_parallel_size=2, async_engine=True),
    with_vllm(tensor_parallel_size=2, expert_parallel_size=2, async_engine=True),
    with_vllm(tensor_parallel_size=2, expert_parallel_size=4, async_engine=False),
    section(checkpoint_engine=None),
    *(section(refit_transport=t) for t in VLLM_REFIT_SELECTORS),
    section(refit_transport="pkg:Engine", refit_cfg={"pkg:Engine": {}}),
    section(refit_transport="a.b_c.d:_E1", refit_cfg={"a.b_c.d:_E1": {"x": 1}}),
    at(section(), ("vllm_cfg", "reset_encoder_cache_after_weight_update"), True),
    at(
        section(refit_transport="nccl_reshard"), ("vllm_cfg", "reset_encoder_cache_after_weight_update"), True
    ),
    section(worker_extension_cls_fqn="pkg.Ext"),
    section(nvfp4_pertoken_rollout={"enabled": True}, real_quant=False),
    section(nvfp4_pertoken_rollout={"enabled": False}, quant_cfg="FP8", refit_transport="nixl"),
    section(real_quant=True, real_quant_export_cpu_offload=True),
    section(real_quant=True, real_quant_export_cpu_offload=False, colocated=COLOCATED),
    section(real_quant=False, real_quant_export_cpu_offload=False),
]


@pytest.mark.parametrize("config", ACCEPTED_RULES)
def test_cross_field_rules_accept_boundaries(config: dict[str, Any]) -> None:
    """Configurations at the edge of each rule validate."""
    VllmConfig.model_validate(config)


C1_KEYS = ["top_k", "val_top_k", "top_p", "val_top_p"]
C1_MESSAGES = {"top_k": TOP_K_MSG, "val_top_k": VAL_TOP_K_MSG, "top_p": TOP_P_MSG, "val_top_p": VAL_TOP_P_MSG}


@pytest.mark.parametrize(
    ("kind", "value", "shown"),
    [
        ("k", 0, "0"),
        ("k", -2, "-2"),
        ("k", -100, "-100"),
        ("p", 0, "0.0"),
        ("p", 0.0, "0.0"),
        ("p", -1e-300, "-1e-300"),
        ("p", 1.0000001, "1.0000001"),
        ("p", 2, "2.0"),
    ],
)
@pytest.mark.parametrize("prefix", ["", "val_"])
def test_c1_rejects_values_just_outside_the_range(kind: str, value: float, shown: str, prefix: str) -> None:
    """Rule C1 at its boundaries, for a field and its ``val_`` twin: the message names the field that failed."""
    key = f"{prefix}top_{kind}"
    found = errors(section(**{key: value}))
    assert [(e["loc"], e["type"], e["msg"], e["input"]) for e in found] == [
        ((key,), "config_rule_c1", C1_MESSAGES[key].format(shown), value)
    ]


@pytest.mark.parametrize(
    ("kind", "value"),
    [
        ("k", -1),
        ("k", 1),
        ("k", 2),
        ("k", None),
        ("p", 5e-324),
        ("p", 1e-9),
        ("p", 0.5),
        ("p", 1),
        ("p", 1.0),
    ],
)
@pytest.mark.parametrize("prefix", ["", "val_"])
def test_c1_accepts_values_at_the_edge_of_the_range(kind: str, value: float | None, prefix: str) -> None:
    """``top_k`` -1, 1 or null and ``top_p`` in (0, 1] validate unchanged (ints for top-p become floats)."""
    key = f"{prefix}top_{kind}"
    model = VllmConfig.model_validate(section(**{key: value}))
    assert getattr(model, key) == value


@pytest.mark.parametrize(
    ("loc", "default", "other"),
    [
        (("vllm_cfg", "kv_cache_dtype"), "auto", "fp8"),
        (("vllm_cfg", "kv_cache_dtype"), "auto", "fp8_ds_mla"),
        (("vllm_cfg", "refit_with_reload_api"), False, True),
    ],
)
def test_null_reads_as_the_default_and_other_values_are_kept(
    loc: Loc, default: object, other: object
) -> None:
    """A "Req. no" key with a non-null default: absent or null reads as the default, a set value is kept."""
    absent = section()
    assert loc[-1] not in absent["vllm_cfg"]
    for config, expected in (
        (absent, default),
        (at(section(), loc, None), default),
        (at(section(), loc, other), other),
    ):
        assert getattr(VllmConfig.model_validate(config).vllm_cfg, str(loc[-1])) is expected


def test_every_violation_is_reported_at_once() -> None:
    """Cross-field violations are collected, not stopped at the first one."""
    config = section(
        port_range_low=2,
        port_range_high=1,
        checkpoint_engine={"enabled": True},
        refit_transport="bogus",
        worker_extension_cls_fqn="pkg.Ext",
        quant_cfg="FP8",
        nvfp4_pertoken_rollout={"enabled": True},
        real_quant=True,
    )
    config["vllm_cfg"].update(tensor_parallel_size=2, expert_parallel_size=3, async_engine=True)
    assert locs(config) == [
        ("port_range_high",),
        ("vllm_cfg", "expert_parallel_size"),
        ("vllm_cfg", "async_engine"),
        ("checkpoint_engine",),
        ("refit_transport",),
        ("worker_extension_cls_fqn",),
        ("quant_cfg",),
        ("real_quant",),
        ("refit_transport",),
        ("real_quant_export_cpu_offload",),
    ]


def test_field_errors_are_all_reported_at_once() -> None:
    """Field-level errors (including rule C1) in several places are reported together."""
    config = section(top_k=0, max_new_tokens=True, temperature=-1)
    config["vllm_cfg"]["async_engine"] = "yes"
    assert sorted(locs(config), key=str) == sorted(
        [("top_k",), ("max_new_tokens",), ("temperature",), ("vllm_cfg", "async_engine")], key=str
    )


def test_rule_errors_carry_the_offending_input() -> None:
    """A rule error's ``input`` is the offending value (the section itself for an absent key)."""
    assert errors(section(refit_transport="bogus"))[0]["input"] == "bogus"
    assert errors(with_vllm(pipeline_parallel_size=2))[0]["input"] == 2
    missing = errors(section(real_quant=True))[0]
    assert isinstance(missing["input"], VllmConfig)


def test_rule_messages_are_bounded() -> None:
    """A huge offending value is shortened in rule messages."""
    transport = "x" * 100_000
    message = errors(section(refit_transport=transport))[0]["msg"]
    assert len(message) < 2000
    assert "'xxx" in message
    assert "..." in message


def test_rule_messages_render_huge_ints() -> None:
    """A top-k beyond Python's int-to-str limit (an interpolation can build one) is rendered in rule C1's message."""
    assert errors(section(top_k=-(10**5000)))[0]["msg"] == TOP_K_MSG.format("<int of 16610 bits>")


def test_validation_does_not_mutate_the_input() -> None:
    """Validating a section leaves the input dict unchanged."""
    config = section(
        refit_transport="nixl", refit_cfg={"nixl": {"backend_init_params": {"a": [1]}}}, x_extra=[1]
    )
    config["vllm_cfg"]["env_vars"] = {"A": 1}
    before = copy.deepcopy(config)
    VllmConfig.model_validate(config)
    assert config == before


def test_validation_accepts_any_mapping() -> None:
    """A read-only mapping validates like a dict."""
    from types import MappingProxyType

    assert VllmConfig.model_validate(MappingProxyType(section())) == VllmConfig.model_validate(section())


# --- schema -----------------------------------------------------------------------------------------------------


def _properties(schema: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    found = [("VllmConfig", name, prop) for name, prop in schema["properties"].items()]
    for model, definition in schema.get("$defs", {}).items():
        found.extend((model, name, prop) for name, prop in definition.get("properties", {}).items())
    return found


def test_schema_describes_every_field_and_model() -> None:
    """Every property and every model of the JSON Schema has a description."""
    schema = config_json_schema()
    assert schema["description"]
    undocumented = [(m, n) for m, n, prop in _properties(schema) if not prop.get("description")]
    assert undocumented == []
    assert all(definition.get("description") for definition in schema["$defs"].values())


def test_field_docstrings_are_read_when_a_schema_is_generated() -> None:
    """A field's docstring is its schema description (a redeclared field's own, an explicit one wins), read from
    the source when the schema is built: the field itself carries none."""
    from pydantic import Field

    base: Any = VllmConfig.__mro__[-3]  # the private base of every config model (found wherever it lives)
    assert (base.__name__, VllmConfig.__mro__[-2]) == ("ConfigModel", BaseModel)

    class Parent(base):  # type: ignore[misc]
        kept: int = 0
        """Parent's kept."""
        redeclared: int = 0
        """Parent's redeclared."""

    class Child(Parent):
        redeclared: int = 1
        """Child's redeclared."""
        explicit: int = Field(0, description="Explicit.")
        """Not this one."""
        undocumented: int = 0

    properties = Child.model_json_schema()["properties"]
    described = {name: prop.get("description") for name, prop in properties.items()}
    assert described == {
        "kept": "Parent's kept.",
        "redeclared": "Child's redeclared.",
        "explicit": "Explicit.",
        "undocumented": None,
    }
    assert Child.model_fields["kept"].description is None


def test_schema_uses_aliases_and_extra_policy() -> None:
    """The schema lists underscore keys by alias and forbids extra keys only on ``video`` and ``nixl``."""
    schema = config_json_schema()
    assert "_pad_token_id" in schema["properties"]
    assert "pad_token_id" not in schema["properties"]
    assert "_routed_experts_transport" in schema["$defs"]["VllmSpecificArgs"]["properties"]
    forbidding = sorted(m for m, d in schema["$defs"].items() if d.get("additionalProperties") is False)
    assert forbidding == ["VllmNixlRefitConfig", "VllmVideoConfig"]
    assert schema["additionalProperties"] is True
    assert set(schema["required"]) == {
        "backend",
        "max_new_tokens",
        "temperature",
        "top_p",
        "top_k",
        "val_temperature",
        "val_top_p",
        "val_top_k",
        "stop_token_ids",
        "stop_strings",
        "vllm_cfg",
    }


def test_schema_is_the_validation_mode_schema() -> None:
    """The schema describes what validation accepts (null for defaulted keys, numbers in ``env_vars``)."""
    schema = config_json_schema()
    vllm_cfg = schema["$defs"]["VllmSpecificArgs"]["properties"]
    assert vllm_cfg["kv_cache_dtype"]["anyOf"] == [
        {"enum": ["auto", "fp8", "fp8_e4m3", "fp8_ds_mla"], "type": "string"},
        {"type": "null"},
    ]
    assert vllm_cfg["refit_with_reload_api"]["anyOf"] == [{"type": "boolean"}, {"type": "null"}]
    env_values = vllm_cfg["env_vars"]["anyOf"][0]["additionalProperties"]
    assert env_values == {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "number"}]}
    assert schema == VllmConfig.model_json_schema(by_alias=True, mode="validation")


def test_schema_ranges_are_json_schema_keywords() -> None:
    """Ranges appear as JSON Schema ``minimum``/``exclusiveMinimum``/``maximum`` keywords."""
    schema = config_json_schema()
    text = json.dumps(schema)
    for opaque in ('"ge":', '"gt":', '"le":', '"lt":'):
        assert opaque not in text
    gpu = schema["$defs"]["VllmSpecificArgs"]["properties"]["gpu_memory_utilization"]
    assert (gpu["exclusiveMinimum"], gpu["maximum"]) == (0, 1)
    assert schema["properties"]["max_new_tokens"]["minimum"] == 1


def test_schema_is_json_and_deterministic() -> None:
    """The schema serialises to JSON and is the same on every call."""
    assert json.dumps(config_json_schema(), sort_keys=True) == json.dumps(
        config_json_schema(), sort_keys=True
    )


# --- import rules -----------------------------------------------------------------------------------------------


def test_config_imports_neither_torch_nor_vllm() -> None:
    """Importing ``rl_contracts.config`` and ``rl_contracts.refit`` loads neither torch nor vLLM."""
    code = (
        "import sys, rl_contracts.config, rl_contracts.refit; "
        "assert 'torch' not in sys.modules and 'vllm' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize(("value", "shown"), [(True, "bool"), (None, "NoneType"), ([1], "list")])
def test_env_vars_rejection_message_names_the_type_and_the_fix(value: Any, shown: str) -> None:
    """The ``env_vars`` rejection names the accepted types, the given type and says to quote a string."""
    [error] = [
        e for e in errors(with_vllm(env_vars={"FLAG": value})) if e["loc"] == ("vllm_cfg", "env_vars", "FLAG")
    ]
    assert error["msg"] == (
        f"Value error, expected a str, int or float environment value (not bool or null), got {shown}; "
        "quote the value if you mean the string"
    )


def test_env_vars_numbers_become_plain_strings() -> None:
    """An int or float ``env_vars`` value becomes its ``str``; a string stays as written."""
    config = VllmConfig.model_validate(with_vllm(env_vars={"A": 3, "B": 0.5, "C": "x"}))
    assert config.vllm_cfg.env_vars == {"A": "3", "B": "0.5", "C": "x"}


def test_enable_return_routed_experts_is_not_a_declared_vllm_cfg_key() -> None:
    """``vllm_cfg.enable_return_routed_experts`` is no field of ``VllmSpecificArgs`` (no vLLM worker reads it)."""
    assert "enable_return_routed_experts" not in VllmSpecificArgs.model_fields
    config = VllmConfig.model_validate(with_vllm(enable_return_routed_experts=True))
    assert config.vllm_cfg.model_extra == {"enable_return_routed_experts": True}


@pytest.mark.parametrize(
    ("key", "value", "code", "fragment"),
    [
        ("distributed_executor_backend", "ray", "W2", "has no effect: NeMo RL never reads it from vllm_cfg"),
        ("enable_thinking", True, "W2", "policy.tokenizer.chat_template_kwargs"),
        ("enforce_monotonicity", False, "W2", "no NeMo RL code reads it"),
        ("enable_expert_parallel", False, "W2", "expert_parallel_size > 1"),
        (
            "limit_mm_per_prompt",
            {"image": 2},
            "P28",
            "reads it from policy.generation.vllm_kwargs.limit_mm_per_prompt",
        ),
        ("limit_mm_per_prompt", None, "W2", "its value None would change nothing"),
        ("enable_return_routed_experts", True, "P28", "set policy.router_replay.enabled: true instead"),
        ("enable_return_routed_experts", False, "W2", "its value False would change nothing"),
        ("enable_return_routed_experts", None, "W2", "its value None would change nothing"),
    ],
)
def test_known_vllm_cfg_keys_are_classified(key: str, value: object, code: str, fragment: str) -> None:
    """The dead and misplaced ``vllm_cfg`` keys of PREFLIGHT.md §5 get W2 or P28 with a reason saying why."""
    (found,) = unknown_keys(VllmConfig.model_validate(with_vllm(**{key: value})))
    assert (found.path, found.code, suggestion(found)) == (f"vllm_cfg.{key}", code, None)
    assert fragment in found.reason


def test_the_dead_and_misplaced_table_is_only_for_vllm_cfg() -> None:
    """A key of the table outside ``vllm_cfg`` is an ordinary unknown key (K2)."""
    config = section()
    config["limit_mm_per_prompt"] = {"image": 2}
    (found,) = unknown_keys(VllmConfig.model_validate(config))
    assert (found.path, found.code, found.reason) == (
        "limit_mm_per_prompt",
        "K2",
        "unknown key (not validated)",
    )


@pytest.mark.parametrize(("size", "warned"), [(1, True), (2, False)])
def test_expert_parallel_switch_is_warned_without_expert_parallelism(size: int, warned: bool) -> None:
    """``enable_expert_parallel: true`` gets a second W2 entry when ``expert_parallel_size`` ≤ 1."""
    config = with_vllm(enable_expert_parallel=True, expert_parallel_size=size, tensor_parallel_size=size)
    if size > 1:
        config["vllm_cfg"]["async_engine"] = False
    found = unknown_keys(VllmConfig.model_validate(config))
    reasons = [u.reason for u in found if u.code == "W2"]
    assert len(reasons) == (2 if warned else 1)
    assert any("vLLM runs without expert parallelism" in r for r in reasons) is warned
