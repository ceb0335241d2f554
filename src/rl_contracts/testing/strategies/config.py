"""Hypothesis strategies for the config contracts (SPEC §1, invariants 27–29).

- :func:`vllm_config_dicts`: realistic, GRPO-like ``policy.generation`` sections that satisfy every rule of
  §1.1–§1.2 (both spellings of underscore keys, unknown keys on the models that keep them, every refit
  transport), as plain JSON-compatible dicts;
- :func:`broken_rule_vllm_configs`: one of those breaking exactly one cross-field rule (C1–C11), with the
  rule's code and the ``loc`` it is reported at;
- :func:`planted_bad_vllm_configs`: one of those with one planted bad value (out of range, wrong type, missing,
  unknown key in a forbidden section, cross-field or refit rule broken) and the ``loc`` that must be reported;
- :func:`unsupported_refit_configs`: partial mappings that ``normalize_vllm_refit_config`` must reject;
- :func:`reload_refit_cases`: valid sections with ``refit_with_reload_api=true`` and the reload-refit step
  (§1.4) that must reject them, or ``None`` for the single supported combination;
- :func:`minimal_vllm_generation`: not a strategy, the smallest valid section, for hand-written tests.
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Sequence
from typing import Any, NamedTuple

from hypothesis import strategies as st
from pydantic import BaseModel

from ... import config
from ...config.rules.registry import RULES

__all__ = [
    "CROSS_FIELD_RULES",
    "BrokenRuleConfig",
    "PlantedConfig",
    "ReloadRefitCase",
    "broken_rule_vllm_configs",
    "json_values",
    "minimal_vllm_generation",
    "planted_bad_vllm_configs",
    "reload_refit_cases",
    "unsupported_refit_configs",
    "vllm_config_dicts",
]

_PLUGIN = "my_company.refit.engines:FastEngine"
_TRANSPORTS: tuple[str | None, ...] = (
    None,
    "nccl_reshard",
    "vllm_s3_sparse",
    "vllm_zmq_sparse",
    "nixl",
    _PLUGIN,
)


class PlantedConfig(NamedTuple):
    """A generation section with one planted defect, the ``loc`` it must be reported at, and what was planted."""

    config: dict[str, Any]
    loc: tuple[str | int, ...]
    description: str


class ReloadRefitCase(NamedTuple):
    """A valid generation section with ``refit_with_reload_api=true`` and the ``.path`` reload refit rejects.

    ``path`` is ``None`` for the single supported combination.
    """

    config: dict[str, Any]
    path: str | None


def minimal_vllm_generation(**overrides: Any) -> dict[str, Any]:
    """A new minimal valid vLLM ``policy.generation`` section (required keys only), with top-level overrides.

    Each call builds fresh containers, so a test may change the result, its ``vllm_cfg`` included.  An
    override replaces the top-level key wholesale: ``vllm_cfg={...}`` replaces the whole engine block.

    Example::

        VllmConfig.model_validate(minimal_vllm_generation(top_k=50)).top_k  # -> 50
    """
    section: dict[str, Any] = {
        "backend": "vllm",
        "max_new_tokens": 512,
        "temperature": 1.0,
        "top_p": 1.0,
        "top_k": None,
        "val_temperature": 1.0,
        "val_top_p": 1.0,
        "val_top_k": None,
        "stop_token_ids": None,
        "stop_strings": None,
        "vllm_cfg": {
            "tensor_parallel_size": 1,
            "pipeline_parallel_size": 1,
            "expert_parallel_size": 1,
            "gpu_memory_utilization": 0.6,
            "max_model_len": 4096,
            "async_engine": False,
        },
    }
    section.update(overrides)
    return section


def json_values(max_leaves: int = 6) -> st.SearchStrategy[Any]:
    """JSON-compatible values (null, bool, int, finite float, str, and lists/str-keyed dicts of them)."""
    scalars = (
        st.none()
        | st.booleans()
        | st.integers(-(2**40), 2**40)
        | st.floats(allow_nan=False, allow_infinity=False, width=64)
        | st.text(max_size=12)
    )
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
        max_leaves=max_leaves,
    )


# Strategies are built once: building (and validating) them per draw dominated the generation time.
_JSON = json_values()
_BOOLS = st.booleans()
_OPTIONAL_BOOLS = st.none() | _BOOLS
_TEXTS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-_./0123456789", min_size=1, max_size=16)
_DECLARED_KEYS = sorted(
    {
        spelling
        for name in config.__all__
        if isinstance(model := getattr(config, name), type) and issubclass(model, BaseModel)
        for field_name, field in model.model_fields.items()
        for spelling in (field_name, field.alias)
        if spelling is not None
    }
)
_UNKNOWN_KEYS = st.dictionaries(
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=10)
    .map(lambda s: "x_" + s)
    .filter(lambda key: not difflib.get_close_matches(key, _DECLARED_KEYS, n=1, cutoff=0.8)),
    _JSON,
    max_size=2,
)
"""Extra keys that collide with no field, alias or legacy key (all carry the ``x_`` prefix) and are no typo of one
(a key within difflib ratio 0.8 of a declared key is the K1 error, not an unknown key)."""
_OPAQUE_DICTS = st.dictionaries(_TEXTS.filter(lambda key: key != "_override_"), _JSON, max_size=2)
"""Free-form mappings (``mcore_generation_config``, ``vllm_kwargs``); never a key that recipe composition reads as
the ``_override_`` merge marker."""
_TOP_P = st.just(1.0) | st.floats(min_value=0.0, max_value=1.0, exclude_min=True)
_TOP_K = st.none() | st.just(-1) | st.integers(1, 200)
_TEMPERATURE = st.sampled_from([0.0, 0.6, 0.7, 1.0]) | st.floats(0.0, 2.0) | st.integers(0, 2)
_PORT = st.integers(1, 65535)
_TENSOR_PARALLEL = st.sampled_from([1, 1, 2, 4, 8])
_PIPELINE_PARALLEL = st.sampled_from([1, 1, 1, 2, 4])
_ENV_VARS = st.dictionaries(
    st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ_", min_size=1, max_size=12),
    st.text(max_size=8) | st.integers(-5, 10**6) | st.floats(allow_nan=False, allow_infinity=False),
    max_size=3,
)
_VLLM_OPTIONAL: dict[str, st.SearchStrategy[Any]] = {
    "kv_cache_dtype": st.sampled_from([None, "auto", "fp8", "fp8_e4m3", "fp8_ds_mla"]),
    "precision": st.sampled_from(["bfloat16", "float16", "fp8"]),
    "load_format": st.sampled_from(["dummy", "auto"]),
    "skip_tokenizer_init": _BOOLS,
    "logprobs_mode": st.sampled_from([None, "processed_logprobs", "raw_logprobs"]),
    "enforce_eager": _OPTIONAL_BOOLS,
    "enable_prefix_caching": _OPTIONAL_BOOLS,
    "enable_return_routed_experts": _OPTIONAL_BOOLS,
    "use_deep_gemm": _OPTIONAL_BOOLS,
    "refit_with_reload_api": st.sampled_from([None, False]),
    "vllm_metrics_logger_interval": st.floats(0.01, 600.0),
    "num_last_layers_in_bf16": st.integers(0, 8),
    "quantization_ignore_patterns": st.lists(_TEXTS, max_size=3),
    "http_refit_server_port": st.none() | _PORT,
    "http_server_serving_chat_kwargs": _OPAQUE_DICTS,
    "env_vars": _ENV_VARS,
    "video": st.fixed_dictionaries(
        {
            "sampling_style": st.just("nemotron_vl"),
            "num_frames": st.integers(1, 64),
            "temporal_patch_size": st.integers(1, 4),
        }
    ),
}
_PLUGIN_CONFIG = st.fixed_dictionaries(
    {}, optional={"update_weights_bucket_memory_ratio": st.floats(0.01, 0.5), "release_after_refit": _BOOLS}
)
_SPARSE = st.fixed_dictionaries(
    {},
    optional={
        "request_timeout_s": st.floats(1.0, 3600.0) | st.integers(1, 3600),
        "verify_samples_per_payload": st.integers(0, 16),
        "storage": st.fixed_dictionaries({"s3_bucket": st.none() | _TEXTS}),
        "tuning": st.fixed_dictionaries(
            {"zmq_retries": st.integers(0, 5), "encode_workers": st.just({"s3": 4, "zmq": 2})}
        ),
        "delta_compression": st.fixed_dictionaries({"encoding": st.sampled_from(["xor", "overwrite"])}),
    },
)
_NIXL = st.fixed_dictionaries(
    {},
    optional={
        "update_weights_bucket_memory_ratio": st.floats(0.01, 0.5),
        "backend_name": st.sampled_from(["UCX", "GDS"]),
        "release_after_refit": _BOOLS,
        "backend_init_params": st.none() | _OPAQUE_DICTS,
    },
)
_SECTION_OPTIONAL: dict[str, st.SearchStrategy[Any]] = {
    "model_name": st.sampled_from(["Qwen/Qwen3-8B", "meta-llama/Llama-3.1-8B-Instruct"]),
    "bad_words": st.lists(_TEXTS, max_size=2),
    "use_async_rollouts": _BOOLS,
    "mcore_generation_config": _OPAQUE_DICTS,
    "vllm_kwargs": st.just({"speculative_config": {"method": "ngram", "num_speculative_tokens": 2}}),
}
_STOP_TOKEN_IDS = st.none() | st.lists(st.integers(0, 262143), max_size=4)
_STOP_STRINGS = st.none() | st.lists(st.text(min_size=1, max_size=8), max_size=3)
_MAX_NEW_TOKENS = st.sampled_from([512, 1024, 4096, 16384]) | st.integers(1, 65536)
_GPU_MEMORY = st.sampled_from([0.5, 0.6, 0.9, 1]) | st.floats(0.01, 1.0)
_MAX_MODEL_LEN = st.sampled_from([1024, 4096, 8192, 32768]) | st.integers(1, 131072)
_RESOURCE = st.none() | st.integers(1, 16)
_QUANT_CFG = st.sampled_from(["NVFP4_DEFAULT_CFG", "FP8_DEFAULT_CFG", ""])


_UNKNOWN_TRANSPORTS = st.text(max_size=12).filter(
    lambda t: t not in ("nccl_reshard", "nixl", "vllm_s3_sparse", "vllm_zmq_sparse") and ":" not in t
) | st.sampled_from(["a:b:C", ":C", "m:", "1m:C"])


def _underscore(draw: st.DrawFn, target: dict[str, Any], key: str, value: Any) -> None:
    """Store ``value`` under ``key`` (``_``-prefixed) in either accepted spelling."""
    target[key if draw(_BOOLS) else key[1:]] = value


def _maybe(draw: st.DrawFn, target: dict[str, Any], key: str, values: st.SearchStrategy[Any]) -> None:
    if draw(_BOOLS):
        target[key] = draw(values)


def _vllm_cfg(draw: st.DrawFn, *, reset_encoder_allowed: bool) -> dict[str, Any]:
    tp = draw(_TENSOR_PARALLEL)
    pp = draw(_PIPELINE_PARALLEL)
    ep = draw(st.sampled_from([1, tp] if pp > 1 else [1, tp, tp * 2, tp * 4]))
    if pp > 1:
        async_engine = True  # C3
    elif ep > 1 and ep != tp:
        async_engine = False  # C5
    else:
        async_engine = draw(_BOOLS)
    cfg: dict[str, Any] = {
        "tensor_parallel_size": tp,
        "pipeline_parallel_size": pp,
        "expert_parallel_size": ep,
        "gpu_memory_utilization": draw(_GPU_MEMORY),
        "max_model_len": draw(_MAX_MODEL_LEN),
        "async_engine": async_engine,
    }
    for key, values in _VLLM_OPTIONAL.items():
        _maybe(draw, cfg, key, values)
    if reset_encoder_allowed:
        _maybe(draw, cfg, "reset_encoder_cache_after_weight_update", _BOOLS)
    if draw(_BOOLS):
        _underscore(draw, cfg, "_routed_experts_transport", "ray")
    cfg.update(draw(_UNKNOWN_KEYS))
    return cfg


def _refit_cfg(draw: st.DrawFn, transport: str | None) -> dict[str, Any] | None:
    if transport == _PLUGIN:
        refit: dict[str, Any] = {_PLUGIN: draw(_PLUGIN_CONFIG)}
    elif draw(_BOOLS):
        return None
    else:
        refit = {}
    _maybe(draw, refit, "sparse", _SPARSE)
    _maybe(draw, refit, "nixl", _NIXL)
    refit.update(draw(_UNKNOWN_KEYS))
    return refit


@st.composite
def vllm_config_dicts(draw: st.DrawFn) -> dict[str, Any]:
    """A valid, realistic (GRPO-like) ``policy.generation`` section for the vLLM backend, as a plain dict.

    Every rule of SPEC §1.1–§1.2 holds; values are JSON-compatible (finite floats), underscore keys use either
    spelling, and the models that keep unknown keys get some (all prefixed ``x_``).  Exercises invariant 29's
    round-trips and the JSON Schema.
    """
    transport = draw(st.sampled_from(_TRANSPORTS))
    explicit_transport = transport is not None and transport != "nccl_reshard"
    temperature = draw(_TEMPERATURE)
    config: dict[str, Any] = {
        "backend": "vllm",
        "max_new_tokens": draw(_MAX_NEW_TOKENS),
        "temperature": temperature,
        "top_p": draw(_TOP_P),
        "top_k": draw(_TOP_K),
        "val_temperature": temperature if draw(_BOOLS) else draw(_TEMPERATURE),
        "val_top_p": draw(_TOP_P),
        "val_top_k": draw(_TOP_K),
        "stop_token_ids": draw(_STOP_TOKEN_IDS),
        "stop_strings": draw(_STOP_STRINGS),
        "vllm_cfg": _vllm_cfg(draw, reset_encoder_allowed=not explicit_transport),
    }
    for key, values in _SECTION_OPTIONAL.items():
        _maybe(draw, config, key, values)
    colocated_enabled = False
    if draw(_BOOLS):
        colocated_enabled = draw(_BOOLS)
        resources = {"gpus_per_node": draw(_RESOURCE), "num_nodes": draw(_RESOURCE), **draw(_UNKNOWN_KEYS)}
        config["colocated"] = {"enabled": colocated_enabled, "resources": resources, **draw(_UNKNOWN_KEYS)}
    if draw(_BOOLS):
        low = draw(_PORT)
        config["port_range_low"] = low
        config["port_range_high"] = draw(st.integers(low, 65535))
    if draw(_BOOLS):
        _underscore(draw, config, "_pad_token_id", draw(st.integers(0, 151643)))
    for key in ("_draft_weights_from_refit", "_mtp_weights_from_refit"):
        if draw(_BOOLS):
            _underscore(draw, config, key, draw(_BOOLS))
    if transport is not None or draw(_BOOLS):
        config["refit_transport"] = transport
    refit = _refit_cfg(draw, transport)
    if refit is not None:
        config["refit_cfg"] = refit
    # Quantization options, kept consistent with C10 and C11.
    nvfp4 = transport is None and draw(_BOOLS)
    if nvfp4 or draw(_BOOLS):
        config["nvfp4_pertoken_rollout"] = {"enabled": nvfp4}
    if not nvfp4 and draw(_BOOLS):
        config["quant_cfg"] = draw(_QUANT_CFG)
    elif draw(_BOOLS):
        config["worker_extension_cls_fqn"] = "my_company.workers.Extension"
    if not nvfp4 and draw(_BOOLS):
        config["real_quant"] = True
        offload_false_allowed = colocated_enabled and config.get("refit_transport") is None
        config["real_quant_export_cpu_offload"] = draw(_BOOLS) if offload_false_allowed else True
        _maybe(draw, config, "real_quant_ignore", st.lists(_TEXTS, max_size=2))
    if draw(_BOOLS):
        config["checkpoint_engine"] = None
    config.update(draw(_UNKNOWN_KEYS))
    return config


# --- planted defects ------------------------------------------------------------------------------------------


def _drop_spellings(config: dict[str, Any], key: str) -> None:
    config.pop(key, None)
    config.pop(key[1:], None)


def _plant_field(draw: st.DrawFn, config: dict[str, Any]) -> tuple[tuple[str | int, ...], str]:
    """Plant one bad field value (range, type, null, missing, forbidden extra key); return its loc."""
    nan, inf = float("nan"), float("inf")
    bad_values: dict[tuple[str | int, ...], list[Any]] = {
        ("max_new_tokens",): [0, -1, True, 1.5, "16", None],
        ("temperature",): [-0.1, True, "1.0", None, nan, inf],
        ("top_p",): [0, 0.0, 1.0001, -1, True, "1", nan],
        ("top_k",): [0, -2, True, 1.0, "5"],
        ("val_top_p",): [0, 2, False],
        ("val_top_k",): [0, -7, False],
        ("stop_strings",): ["stop", [1], {"a"}],
        ("port_range_low",): [0, 65536, True],
        ("vllm_cfg", "tensor_parallel_size"): [0, True, 2.0, "2", None],
        ("vllm_cfg", "gpu_memory_utilization"): [0, 1.01, -0.5, True, "0.9"],
        ("vllm_cfg", "async_engine"): [1, 0, "true", None],
        ("vllm_cfg", "kv_cache_dtype"): ["fp16", 1, True],
        ("vllm_cfg", "logprobs_mode"): ["logits", 0],
        ("vllm_cfg", "num_first_layers_in_bf16"): [-1, True],
        ("vllm_cfg", "zmq_refit_server_port"): [0, 70000, "80"],
        ("vllm_cfg", "vllm_metrics_logger_interval"): [0, -1.0, True],
        ("vllm_cfg", "enforce_eager"): [1, "false"],
        ("vllm_kwargs",): ["speculative", [1]],
        ("real_quant",): [1, "yes"],
    }
    kind = draw(
        st.sampled_from([*bad_values, "missing", "stop_token_id", "env", "video", "nixl", "tuning", "pad"])
    )
    if isinstance(kind, tuple):
        value = draw(st.sampled_from(bad_values[kind]))
        section = config
        for part in kind[:-1]:
            section = section[part]
        section[kind[-1]] = value
        return kind, f"{'.'.join(map(str, kind))}={value!r}"
    if kind == "missing":
        loc = draw(st.sampled_from([("max_new_tokens",), ("top_k",), ("vllm_cfg", "max_model_len")]))
        section = config
        for part in loc[:-1]:
            section = section[part]
        del section[loc[-1]]
        return loc, f"{loc} missing"
    if kind == "stop_token_id":
        ids: list[Any] = draw(st.lists(st.integers(0, 1000), max_size=4))
        index = draw(st.integers(0, len(ids)))
        ids.insert(index, draw(st.sampled_from([-1, True, 2.5, "7"])))
        config["stop_token_ids"] = ids
        return ("stop_token_ids", index), f"stop_token_ids={ids!r}"
    if kind == "env":
        config["vllm_cfg"]["env_vars"] = {"VLLM_FLAG": draw(st.sampled_from([True, False, None, [1]]))}
        return ("vllm_cfg", "env_vars", "VLLM_FLAG"), "bool/null env value"
    if kind == "video":
        config["vllm_cfg"]["video"] = {
            "sampling_style": "nemotron_vl",
            "num_frames": 8,
            "temporal_patch_size": 2,
        }
        config["vllm_cfg"]["video"]["fps"] = 2
        return ("vllm_cfg", "video", "fps"), "unknown key in the video section (extra keys forbidden)"
    if kind == "nixl":
        config["refit_cfg"] = {"nixl": {"backend": "UCX"}}
        return ("refit_cfg", "nixl", "backend"), "unknown key in the nixl section (extra keys forbidden)"
    if kind == "tuning":
        value = draw(st.sampled_from([0, -3, True, 1.5]))
        config["refit_cfg"] = {"sparse": {"tuning": {"apply_batch_size": value}}}
        return ("refit_cfg", "sparse", "tuning", "apply_batch_size"), f"apply_batch_size={value!r}"
    _drop_spellings(config, "_pad_token_id")
    config["_pad_token_id"] = draw(st.sampled_from([True, 1.0, "3"]))
    return ("_pad_token_id",), "non-int _pad_token_id"


CROSS_FIELD_RULES: tuple[str, ...] = tuple(rule.code for rule in RULES if rule.family == "C")
"""The cross-field rules of ``VllmConfig`` (SPEC §1.2, the rule table's C family) that
:func:`broken_rule_vllm_configs` breaks."""


def _plant_rule(draw: st.DrawFn, config: dict[str, Any]) -> tuple[tuple[str | int, ...], str]:
    """Break one cross-field rule (C1–C11) in an otherwise valid section; return the loc it reports."""
    return _break(draw, config, draw(st.sampled_from(CROSS_FIELD_RULES)))


def _clear_nvfp4_and_offload(config: dict[str, Any]) -> None:
    """Make a transport, ``quant_cfg`` and ``real_quant`` legal again (C10's NVFP4 part, C11's offload part)."""
    config.pop("nvfp4_pertoken_rollout", None)
    if config.get("real_quant_export_cpu_offload") is False:
        config["real_quant_export_cpu_offload"] = True


def _break(draw: st.DrawFn, config: dict[str, Any], rule: str) -> tuple[tuple[str | int, ...], str]:
    """Break ``rule`` in an otherwise valid section; return the loc it reports and what was done.

    Whatever the section held that the change would make break a second rule is adjusted first.
    """
    vllm = config["vllm_cfg"]
    if rule in ("C7", "C8", "C9", "C10", "C11"):
        _clear_nvfp4_and_offload(config)
    if rule == "C1":
        key = draw(st.sampled_from(["top_k", "val_top_k", "top_p", "val_top_p"]))
        bad = (
            draw(st.sampled_from([0, -2, -100]))
            if key.endswith("top_k")
            else draw(st.sampled_from([0, 0.0, -0.5, 1.5]))
        )
        config[key] = bad
        return (key,), f"{key}={bad!r}"
    if rule == "C2":
        config["port_range_low"], config["port_range_high"] = 9000, 8999
        return ("port_range_high",), "port_range_low > port_range_high"
    if rule == "C3":
        vllm.update(pipeline_parallel_size=2, expert_parallel_size=1, async_engine=False)
        return ("vllm_cfg", "pipeline_parallel_size"), "pipeline parallelism without async_engine"
    if rule == "C4":
        vllm.update(
            tensor_parallel_size=2, expert_parallel_size=3, pipeline_parallel_size=1, async_engine=False
        )
        return ("vllm_cfg", "expert_parallel_size"), "EP not a multiple of TP"
    if rule == "C5":
        vllm.update(
            tensor_parallel_size=2, expert_parallel_size=4, pipeline_parallel_size=1, async_engine=True
        )
        return ("vllm_cfg", "async_engine"), "async_engine with DP inside vLLM"
    if rule == "C6":
        config["checkpoint_engine"] = draw(st.sampled_from([{"enabled": True}, "nixl", True]))
        return ("checkpoint_engine",), "legacy checkpoint_engine"
    if rule == "C7":
        config["refit_transport"] = draw(
            st.sampled_from(
                ["nccl", "NIXL", "module:", ":Class", "a:b:C", "1mod:C", "vllm_s3", "a..b:C", "a.b:C.d"]
            )
        )
        return ("refit_transport",), "unknown refit transport"
    if rule == "C8":
        config["refit_transport"] = draw(
            st.sampled_from(["nixl", "vllm_s3_sparse", "vllm_zmq_sparse", _PLUGIN])
        )
        config["refit_cfg"] = {_PLUGIN: {}}
        vllm["reset_encoder_cache_after_weight_update"] = True
        return ("vllm_cfg", "reset_encoder_cache_after_weight_update"), "encoder-cache reset with a transport"
    if rule == "C9":
        config["refit_transport"] = _PLUGIN
        config["refit_cfg"] = draw(st.sampled_from([{}, {"other.mod:Engine": {}}, {_PLUGIN: None}]))
        vllm.pop("reset_encoder_cache_after_weight_update", None)
        return ("refit_cfg", _PLUGIN), "custom transport without its plugin config"
    if rule == "C10" and draw(_BOOLS):
        config["worker_extension_cls_fqn"] = "my_company.workers.Extension"
        config["quant_cfg"] = "FP8_DEFAULT_CFG"
        return ("worker_extension_cls_fqn",), "worker extension with quant_cfg"
    if rule == "C10":
        for key in ("real_quant", "real_quant_export_cpu_offload", "worker_extension_cls_fqn", "refit_cfg"):
            config.pop(key, None)
        config["refit_transport"] = None
        config["nvfp4_pertoken_rollout"] = {"enabled": True}
        config["quant_cfg"] = "NVFP4_DEFAULT_CFG"
        return ("quant_cfg",), "NVFP4 per-token rollout with quant_cfg"
    config["real_quant"] = True
    config.pop("real_quant_export_cpu_offload", None)
    return ("real_quant_export_cpu_offload",), "real_quant without real_quant_export_cpu_offload"


class BrokenRuleConfig(NamedTuple):
    """A generation section that breaks exactly one cross-field rule: the section, the rule's code, its ``loc``."""

    config: dict[str, Any]
    rule: str
    loc: tuple[str | int, ...]
    description: str


def broken_rule_vllm_configs(
    *, rules: Sequence[str] = CROSS_FIELD_RULES
) -> st.SearchStrategy[BrokenRuleConfig]:
    """A :func:`vllm_config_dicts` section that breaks exactly one of ``rules`` (codes C1–C11, SPEC §1.2).

    Every key keeps its own type and range, so the section satisfies the JSON Schema; only the combination is
    wrong (C1's ranges included: the schema types ``top_k``/``top_p`` only).  ``VllmConfig.model_validate`` must
    raise a ``ValidationError`` with exactly one error, at ``loc``; ``rule`` is the code ``load_recipe`` reports.
    ``rules`` outside :data:`CROSS_FIELD_RULES` (or none) raise ``ValueError`` here.
    """
    unknown = sorted(set(rules) - set(CROSS_FIELD_RULES))
    if unknown or not rules:
        raise ValueError(f"rules must be a non-empty subset of {list(CROSS_FIELD_RULES)}; got {list(rules)}")
    return _broken_rule_configs(tuple(rules))


@st.composite
def _broken_rule_configs(draw: st.DrawFn, rules: tuple[str, ...]) -> BrokenRuleConfig:
    config = copy.deepcopy(draw(vllm_config_dicts()))
    rule = draw(st.sampled_from(rules))
    loc, description = _break(draw, config, rule)
    return BrokenRuleConfig(config, rule, loc, description)


@st.composite
def planted_bad_vllm_configs(draw: st.DrawFn) -> PlantedConfig:
    """A :func:`vllm_config_dicts` section with one planted defect and the ``loc`` pydantic must report.

    Defects: out-of-range numbers, wrong types (bool for int, float for int, str for number, int for bool),
    null or missing required keys, unknown keys in the sections that forbid them (``video``, ``refit_cfg.nixl``),
    and broken cross-field or refit rules (C2–C11).  ``VllmConfig.model_validate`` must raise a
    ``ValidationError`` with an error at ``loc``.  ``backend`` is never planted: a recipe with another backend
    is skipped, not invalid.
    """
    config = copy.deepcopy(draw(vllm_config_dicts()))
    loc, description = draw(st.sampled_from([_plant_field, _plant_rule]))(draw, config)
    return PlantedConfig(config, loc, description)


@st.composite
def unsupported_refit_configs(draw: st.DrawFn) -> PlantedConfig:
    """A partial generation mapping that ``normalize_vllm_refit_config`` must reject, with the error's ``loc``.

    The ``loc`` joined with dots (``[i]`` for ints) is the ``ConfigContractError.path``.  Covers every step of
    SPEC §1.3: legacy ``checkpoint_engine``, NVFP4 with a transport, a non-str or unknown transport, the
    encoder-cache reset, an invalid ``refit_cfg`` and a missing or invalid plugin config.
    """
    full = draw(vllm_config_dicts())
    keep = draw(st.sets(st.sampled_from(sorted(full))))
    refit_keys = {"checkpoint_engine", "nvfp4_pertoken_rollout", "refit_transport", "refit_cfg", "vllm_cfg"}
    config: dict[str, Any] = {key: copy.deepcopy(full[key]) for key in keep - refit_keys}
    if "vllm_cfg" in keep:
        config["vllm_cfg"] = {
            k: v for k, v in full["vllm_cfg"].items() if k != "reset_encoder_cache_after_weight_update"
        }
    known = draw(st.sampled_from(["nixl", "vllm_s3_sparse", "vllm_zmq_sparse", _PLUGIN]))
    step = draw(
        st.sampled_from(["C6", "nvfp4", "type", "C7", "C8", "C9", "plugin_missing", "plugin_invalid"])
    )
    loc: tuple[str | int, ...]
    if step == "C6":
        config["checkpoint_engine"] = {"enabled": True}
        loc = ("checkpoint_engine",)
    elif step == "nvfp4":
        config["nvfp4_pertoken_rollout"] = {"enabled": True}
        config["refit_transport"] = draw(st.sampled_from(["nccl_reshard", known, "bogus"]))
        loc = ("refit_transport",)
    elif step == "type":
        config["refit_transport"] = draw(st.sampled_from([1, True, ["nixl"], {"name": "nixl"}]))
        loc = ("refit_transport",)
    elif step == "C7":
        config["refit_transport"] = draw(_UNKNOWN_TRANSPORTS)
        loc = ("refit_transport",)
    elif step == "C8":
        config["refit_transport"] = known
        config.setdefault("vllm_cfg", {})["reset_encoder_cache_after_weight_update"] = True
        loc = ("vllm_cfg", "reset_encoder_cache_after_weight_update")
    elif step == "C9":
        config["refit_transport"] = known
        config["refit_cfg"] = draw(
            st.sampled_from([{"nixl": {"device": 1}}, {"sparse": {"request_timeout_s": 0}}])
        )
        loc = (
            "refit_cfg",
            *(("nixl", "device") if "nixl" in config["refit_cfg"] else ("sparse", "request_timeout_s")),
        )
    elif step == "plugin_missing":
        config["refit_transport"] = _PLUGIN
        config["refit_cfg"] = draw(st.sampled_from([None, {}, {_PLUGIN: None}]))
        loc = ("refit_cfg", _PLUGIN)
    else:
        config["refit_transport"] = _PLUGIN
        config["refit_cfg"] = {
            _PLUGIN: {"update_weights_bucket_memory_ratio": draw(st.sampled_from([0, 1, 1.5, True]))}
        }
        loc = ("refit_cfg", _PLUGIN, "update_weights_bucket_memory_ratio")
    return PlantedConfig(config, loc, step)


@st.composite
def reload_refit_cases(draw: st.DrawFn) -> ReloadRefitCase:
    """A valid section with ``vllm_cfg.refit_with_reload_api=true`` and the reload-refit ``.path`` that rejects it.

    Starts from the single supported combination (not colocated, no transport, no ``quant_cfg``, no draft or
    trained-MTP refit) and breaks at most one condition of SPEC §1.4 (``path`` ``None`` when none is broken).
    Every generated section also validates as ``VllmConfig``.  Exercises invariant 27.
    """
    config = copy.deepcopy(draw(vllm_config_dicts()))
    vllm = config["vllm_cfg"]
    vllm["refit_with_reload_api"] = True
    vllm.pop("reset_encoder_cache_after_weight_update", None)
    config["colocated"] = {"enabled": False, "resources": {"gpus_per_node": 8, "num_nodes": 1}}
    config["refit_transport"] = None
    for key in ("quant_cfg", "real_quant", "real_quant_export_cpu_offload", "nvfp4_pertoken_rollout"):
        config.pop(key, None)
    _drop_spellings(config, "_draft_weights_from_refit")
    _drop_spellings(config, "_mtp_weights_from_refit")
    if draw(_BOOLS):
        _underscore(draw, config, "_draft_weights_from_refit", False)
    method = draw(st.sampled_from(["mtp", "deepseek_mtp", "ngram", "eagle"]))
    spec: dict[str, Any] = {"method": method}
    _maybe(draw, spec, "num_speculative_tokens", st.integers(0, 3))
    config["vllm_kwargs"] = {"speculative_config": spec}
    mtp_method = method in ("mtp", "deepseek_mtp") and spec.get("num_speculative_tokens") != 0
    if not mtp_method and draw(_BOOLS):
        _underscore(draw, config, "_mtp_weights_from_refit", True)  # harmless without an active MTP method
    kind = draw(
        st.sampled_from(
            [None, "colocated", "nccl_reshard", "nixl", "plugin", "sparse", "quant", "draft", "mtp"]
        )
    )
    path: str | None = None
    if kind == "colocated":
        config["colocated"]["enabled"] = True
        path = "colocated.enabled"
    elif kind in ("nccl_reshard", "nixl", "sparse"):
        config["refit_transport"] = (
            draw(st.sampled_from(["vllm_s3_sparse", "vllm_zmq_sparse"])) if kind == "sparse" else kind
        )
        path = "refit_transport"
    elif kind == "plugin":
        config["refit_transport"] = _PLUGIN
        config["refit_cfg"] = {_PLUGIN: {}}
        path = "refit_transport"
    elif kind == "quant":
        config["quant_cfg"] = draw(st.sampled_from(["FP8_DEFAULT_CFG", ""]))
        config.pop("worker_extension_cls_fqn", None)
        path = "quant_cfg"
    elif kind == "draft":
        _drop_spellings(config, "_draft_weights_from_refit")
        _underscore(draw, config, "_draft_weights_from_refit", True)
        path = "_draft_weights_from_refit"
    elif kind == "mtp":
        spec["method"] = draw(st.sampled_from(["mtp", "deepseek_mtp"]))
        spec["num_speculative_tokens"] = draw(st.none() | st.integers(1, 3)) if draw(_BOOLS) else 1
        if spec["num_speculative_tokens"] is None:
            del spec["num_speculative_tokens"]
        _drop_spellings(config, "_mtp_weights_from_refit")
        _underscore(draw, config, "_mtp_weights_from_refit", True)
        path = "_mtp_weights_from_refit"
    return ReloadRefitCase(config, path)
