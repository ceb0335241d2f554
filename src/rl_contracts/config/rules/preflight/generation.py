"""Preflight rules of the vLLM generation side: FP8 (P14), refit transports (P15, P22), engine arguments in
``vllm_kwargs`` (P16), engine placement (P17), routed experts (P21) and the context-length warning (W1)."""

from __future__ import annotations

from collections.abc import Mapping

from ...._internal.config_absent import ABSENT
from ...._internal.messages import render, render_list
from ....checks import int_or_none
from ...rule import Rule, checks
from .context import ALL_ENTRIES, LEGACY_ENTRIES, Context
from .facts import (
    GENERATION,
    VLLM_CFG,
    VLLM_KWARGS,
    dtensor,
    is_async,
    is_vllm,
    megatron,
    routed_experts_enabled,
    vllm_parallel,
)
from .reader import WrongShape

__all__ = [
    "ENGINE_ARGUMENTS",
    "P14",
    "P15",
    "P16",
    "P17",
    "P21",
    "P22",
    "W1",
    "check_context_length",
    "check_engine_arguments",
    "check_fp8_generation",
    "check_nccl_reshard",
    "check_routed_experts",
    "check_sparse_refit",
    "check_vllm_placement",
]

_FP8_KV = ("auto", "fp8", "fp8_e4m3")


P14 = Rule(
    "P14",
    "fp8-generation-unsupported",
    summary="FP8 generation or an FP8 KV cache with settings that cannot run",
    reference="algorithms/grpo.py ~1321-1338, vllm/quantization/fp8.py:init_fp8 ~199 (S2/S3)",
    what_it_checks=(
        "That FP8 generation (`vllm_cfg.precision: fp8`) uses importance-sampling correction and a compatible "
        "KV cache, and that an FP8 KV cache comes with FP8 precision, DTensor off, no async engine and "
        "Megatron pipeline size 1."
    ),
    why_it_matters=(
        "`grpo.py` (~1321-1338) and `vllm/quantization/fp8.py:init_fp8` (~199) raise an "
        "`AssertionError`/`ValueError` after the placement groups or at engine start (S2/S3)."
    ),
    example="""\
policy:
  generation:
    vllm_cfg:
      kv_cache_dtype: fp8
""",
    fix="Set `kv_cache_dtype: auto`, or run FP8 generation with the settings the issue lists.",
)


@checks(P14, entries=LEGACY_ENTRIES)
def check_fp8_generation(context: Context) -> None:
    """(vLLM) the FP8 conditions of :data:`P14`; ``policy.dtensor_cfg.enabled`` must be present (P1)."""
    reader = context.reader
    if not is_vllm(reader):
        return
    precision = reader.text(f"{VLLM_CFG}.precision")
    where = f"{VLLM_CFG}.kv_cache_dtype"
    kv = reader.text(where)
    if precision == "fp8":
        if not reader.flag("loss_fn.use_importance_sampling_correction"):
            context.error_at(
                "loss_fn.use_importance_sampling_correction",
                "policy.generation.vllm_cfg.precision='fp8' needs loss_fn.use_importance_sampling_correction=true "
                "(FP8 rollouts drift from the training logprobs); enable it.",
            )
        if kv not in _FP8_KV:
            context.error_at(
                where,
                f"vllm_cfg.precision='fp8' supports kv_cache_dtype in {render_list(_FP8_KV)}, got {render(kv)}; "
                "use one of them.",
            )
    if not kv.startswith("fp8"):
        return
    if precision != "fp8":
        context.error_at(
            where,
            f"kv_cache_dtype={render(kv)} needs vllm_cfg.precision='fp8', got {render(precision)}; set precision "
            "to fp8 or kv_cache_dtype to auto.",
        )
    if not reader.present("policy.dtensor_cfg.enabled"):
        context.missing("policy.dtensor_cfg.enabled")
    elif dtensor(reader):
        context.error_at(
            "policy.dtensor_cfg.enabled",
            f"kv_cache_dtype={render(kv)} is not supported with DTensor training; use Megatron or "
            "kv_cache_dtype auto.",
        )
    if is_async(reader):
        context.error_at(
            where,
            f"kv_cache_dtype={render(kv)} is not supported with async rollouts; set vllm_cfg.async_engine=false or "
            "kv_cache_dtype auto.",
        )
    pp = reader.integer("policy.megatron_cfg.pipeline_model_parallel_size")
    if pp != 1:
        context.error_at(
            "policy.megatron_cfg.pipeline_model_parallel_size",
            f"kv_cache_dtype={render(kv)} needs policy.megatron_cfg.pipeline_model_parallel_size=1, got {pp}; set "
            "it to 1 or kv_cache_dtype auto.",
        )


_SPARSE = ("vllm_s3_sparse", "vllm_zmq_sparse")


P15 = Rule(
    "P15",
    "sparse-refit-preconditions",
    summary="sparse refit transport without its preconditions",
    reference="weight_sync/vllm_remote_sparse_weight_synchronizer.py:validate_vllm_remote_sparse_refit ~47 (S2)",
    what_it_checks=(
        "That a sparse refit transport (`vllm_s3_sparse`, `vllm_zmq_sparse`) runs non-colocated, with "
        "Megatron, without FP8 precision or KV cache, without `quant_cfg` or `real_quant`, and (S3) with a "
        "storage bucket."
    ),
    why_it_matters=(
        "`validate_vllm_remote_sparse_refit` (`weight_sync/vllm_remote_sparse_weight_synchronizer.py` ~47) "
        "raises a `ValueError` after the placement groups (S2)."
    ),
    example="""\
policy:
  generation:
    refit_transport: vllm_zmq_sparse
""",
    fix="Meet every precondition the issue lists, or use `refit_transport: null`.",
)


@checks(P15, entries=LEGACY_ENTRIES)
def check_sparse_refit(context: Context) -> None:
    """A sparse refit transport's preconditions (:data:`P15`); one finding lists every failed condition."""
    reader = context.reader
    if not is_vllm(reader):
        return
    transport = reader.value(f"{GENERATION}.refit_transport")
    if transport not in _SPARSE:
        return
    failed: list[str] = []
    if reader.flag(f"{GENERATION}.colocated.enabled"):
        failed.append("policy.generation.colocated.enabled must be false")
    if not megatron(reader):
        failed.append("policy.megatron_cfg.enabled must be true")
    if reader.value(f"{VLLM_CFG}.precision") == "fp8":
        failed.append("vllm_cfg.precision must not be fp8")
    kv = reader.value(f"{VLLM_CFG}.kv_cache_dtype")
    if isinstance(kv, str) and kv.startswith("fp8"):
        failed.append(f"vllm_cfg.kv_cache_dtype must not be fp8* (got {render(kv)})")
    if reader.truthy(f"{GENERATION}.quant_cfg"):
        failed.append("policy.generation.quant_cfg must be unset")
    if reader.truthy(f"{GENERATION}.real_quant"):
        failed.append("policy.generation.real_quant must be false")
    if transport == "vllm_s3_sparse":
        bucket = reader.value(f"{GENERATION}.refit_cfg.sparse.storage.s3_bucket")
        if not isinstance(bucket, str) or not bucket.strip():
            failed.append(
                "policy.generation.refit_cfg.sparse.storage.s3_bucket must be a non-blank bucket name"
            )
    if failed:
        context.error_at(
            f"{GENERATION}.refit_transport",
            f"refit_transport={render(transport)} cannot run: {'; '.join(failed)}; fix these or choose another "
            "refit_transport.",
        )


ENGINE_ARGUMENTS = (
    "model",
    "served_model_name",
    "load_format",
    "skip_tokenizer_init",
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "enable_expert_parallel",
    "gpu_memory_utilization",
    "enable_prefix_caching",
    "dtype",
    "seed",
    "enforce_eager",
    "max_model_len",
    "trust_remote_code",
    "worker_extension_cls",
    "enable_sleep_mode",
    "disable_log_stats",
)
"""The engine keyword arguments the trainer passes itself; the same key in ``vllm_kwargs`` is a TypeError."""


P16 = Rule(
    "P16",
    "vllm-kwargs-collision",
    summary="a vllm_kwargs key collides with an engine argument the trainer sets",
    reference="vllm/vllm_worker.py:_load_model ~570-596, algorithms/grpo.py ~1345 (S3)",
    what_it_checks=(
        "That `vllm_kwargs` holds no engine argument the trainer already passes (`model`, `seed`, "
        "`tensor_parallel_size`, `gpu_memory_utilization`, `max_model_len`, ...), and warns about the keys it "
        "silently overwrites (`distributed_executor_backend`, `hf_overrides`)."
    ),
    why_it_matters=(
        "The engine is built with the trainer's keyword arguments plus `**vllm_kwargs`: a duplicate keyword "
        "is a `TypeError` at engine start (S3, `vllm_worker.py:_load_model` ~570-596); an overwritten one is "
        "silently lost."
    ),
    example="""\
policy:
  generation:
    vllm_kwargs:
      seed: 1
""",
    fix="Remove the key from `vllm_kwargs`; set the matching `vllm_cfg` key instead.",
)


@checks(P16, entries=ALL_ENTRIES)
def check_engine_arguments(context: Context) -> None:
    """(vLLM) :data:`P16`: a key of :data:`ENGINE_ARGUMENTS` in ``vllm_kwargs`` errs, even unresolved."""
    reader = context.reader
    if not is_vllm(reader):
        return
    keys = reader.shallow(VLLM_KWARGS)
    if keys is ABSENT or keys is None:
        keys = {}
    if not isinstance(keys, Mapping):
        raise WrongShape(VLLM_KWARGS, keys, "a mapping of engine keyword arguments")
    for name in ENGINE_ARGUMENTS:
        path = f"{VLLM_KWARGS}.{name}"
        if name in keys or reader.is_unresolved(path):
            context.error(
                path,
                keys.get(name, ABSENT),
                f"{path} collides with the engine argument the trainer sets; remove it (use the vllm_cfg key).",
            )
    if "distributed_executor_backend" in keys:
        tp, pp, ep = vllm_parallel(reader)
        derived = "ray" if tp * pp > 1 else "uni" if ep > tp else None
        context.warning(
            f"{VLLM_KWARGS}.distributed_executor_backend",
            keys["distributed_executor_backend"],
            f"{VLLM_KWARGS}.distributed_executor_backend={render(keys['distributed_executor_backend'])} is overwritten by "
            f"the trainer (it derives {render(derived)} from the parallel sizes); remove it.",
        )
    if "hf_overrides" in keys:
        context.warning(
            f"{VLLM_KWARGS}.hf_overrides",
            keys["hf_overrides"],
            f"{VLLM_KWARGS}.hf_overrides is replaced by policy.hf_config_overrides; move the overrides there.",
        )


P17 = Rule(
    "P17",
    "engine-placement-impossible",
    summary="vLLM engines cannot be placed on the generation GPUs",
    reference="vllm/vllm_generation.py:__init__ ~121, ~263, vllm_worker.py ~429 (S3)",
    what_it_checks=(
        "That vLLM engines fit the generation GPUs: the generation world is a multiple of TP x PP, per-node "
        "placement divides the GPUs per node, and with EP > TP the engines form whole data-parallel groups."
    ),
    why_it_matters=(
        "`vllm_generation.py:__init__` (~121, ~263) fails an assertion or its data-parallel size check after "
        "spawning workers (S3), or the engines hang at start."
    ),
    example="""\
policy:
  generation:
    vllm_cfg:
      tensor_parallel_size: 3
""",
    fix="Choose `tensor_parallel_size`/`pipeline_parallel_size` whose product divides the generation GPUs.",
)


@checks(P17, entries=ALL_ENTRIES)
def check_vllm_placement(context: Context) -> None:
    """(vLLM, layout known) the placement of :data:`P17` (an EP that is no multiple of TP is C4's)."""
    reader = context.reader
    if not is_vllm(reader):
        return
    split = context.layout()
    if split is None:
        return
    tp, pp, ep = vllm_parallel(reader)
    mp = tp * pp
    world = split.gen_nodes * split.gen_gpn
    arithmetic = f"{split.gen_nodes} x {split.gen_gpn} = {world} generation GPUs, TP({tp}) x PP({pp}) = {mp}"
    if world % mp != 0:
        context.error_at(
            f"{VLLM_CFG}.tensor_parallel_size",
            f"{arithmetic}: the generation GPUs are not a positive multiple of the engine size; change "
            "vllm_cfg.tensor_parallel_size/pipeline_parallel_size or the generation resources.",
        )
        return
    if mp <= split.gen_gpn and split.gen_gpn % mp != 0:
        context.error_at(
            f"{VLLM_CFG}.tensor_parallel_size",
            f"{arithmetic}: {split.gen_gpn} GPUs per node is not a multiple of {mp}, so per-node placement builds "
            f"{split.gen_nodes} x {split.gen_gpn // mp} = {split.gen_nodes * (split.gen_gpn // mp)} engines "
            f"instead of {world // mp} and the data-parallel size assert fails; make gpus per node a multiple "
            "of TP x PP.",
        )
        return
    if ep > tp and ep % tp == 0:
        engines, group = world // mp, ep // tp
        if engines % group != 0:
            context.error_at(
                f"{VLLM_CFG}.expert_parallel_size",
                f"{arithmetic}, {engines} engines: expert parallelism EP({ep}) / TP({tp}) = {group} engines per "
                f"data-parallel group, and {engines} is not a multiple of {group} (the groups would be "
                "incomplete and engine start is expected to hang); change expert_parallel_size or the "
                "generation GPUs.",
            )


def _connectors(transfer: Mapping[object, object]) -> list[object]:
    """The KV connector names of ``kv_transfer_config``: its own, then its multi-connector children's."""
    extra = transfer.get("kv_connector_extra_config")
    children = extra.get("connectors") if isinstance(extra, Mapping) else None
    configs = [transfer, *(children if isinstance(children, list) else [])]
    return [
        c["kv_connector"] for c in configs if isinstance(c, Mapping) and c.get("kv_connector") is not None
    ]


_BAD_CONNECTORS = ("Nixl", "MoRIIO", "Mooncake")
_V1_METHODS = ("suffix", "medusa", "mlp_speculator", "custom_class")


P21 = Rule(
    "P21",
    "routed-experts-rejected-by-vllm",
    summary="routed experts (R3) with vLLM settings that vLLM rejects",
    reference="vLLM config/vllm.py (0.30 __post_init__ ~1280, 0.32 _verify_aux_output_compatibility ~1135) (S3)",
    what_it_checks=(
        "That routed experts (router replay, or `vllm_kwargs.enable_return_routed_experts`) run with vLLM "
        "settings vLLM accepts: PP 1, no decode/prefill context parallelism, and per version no KV connector "
        "(0.30) or no Nixl/MoRIIO/Mooncake connector, prefix caching on, Model Runner V2 and a compatible "
        "speculative method (0.32)."
    ),
    why_it_matters=(
        "vLLM's config check (0.30 `__post_init__` ~1280, 0.32 `_verify_aux_output_compatibility` ~1135) "
        "raises a `ValueError` at engine start (S3)."
    ),
    example="""\
policy:
  generation:
    vllm_kwargs:
      enable_return_routed_experts: true
      decode_context_parallel_size: 2
""",
    fix="Change the vLLM setting the issue names, or turn routed experts off.",
    example_options={"vllm_version": (0, 30)},
)


@checks(P21, entries=ALL_ENTRIES)
def check_routed_experts(context: Context) -> None:
    """(vLLM, R3) :data:`P21`; a version takes the nearest lower one's rules, none skips their part."""
    reader = context.reader
    if not (is_vllm(reader) and routed_experts_enabled(reader)):
        return
    pp = reader.count(f"{VLLM_CFG}.pipeline_parallel_size")
    if pp != 1:
        context.error_at(
            f"{VLLM_CFG}.pipeline_parallel_size",
            f"routed experts (router replay) with vllm_cfg.pipeline_parallel_size={pp}: vLLM returns routed "
            "experts only without pipeline parallelism; set it to 1.",
        )
    for name in ("decode_context_parallel_size", "prefill_context_parallel_size"):
        size = reader.count(f"{VLLM_KWARGS}.{name}", 1)
        if size > 1:
            context.error_at(
                f"{VLLM_KWARGS}.{name}",
                f"routed experts (router replay) with vllm_kwargs.{name}={size}: vLLM rejects context parallelism "
                "with routed experts; set it to 1.",
            )
    version = context.options.vllm_version
    if version is None:
        context.skip("the version-dependent checks need the vLLM version (--vllm-version X.Y)")
        return
    names = _connectors(reader.mapping(f"{VLLM_KWARGS}.kv_transfer_config") or {})
    shown = f"vLLM {version[0]}.{version[1]}"
    if version < (0, 32):
        if names:
            context.error(
                f"{VLLM_KWARGS}.kv_transfer_config.kv_connector",
                names[0],
                f"{shown} rejects routed experts with a KV connector ({render_list(names)}); remove "
                "vllm_kwargs.kv_transfer_config.",
            )
        return
    bad = [n for n in names if isinstance(n, str) and n.startswith(_BAD_CONNECTORS)]
    if bad:
        context.error(
            f"{VLLM_KWARGS}.kv_transfer_config",
            bad[0],
            f"{shown} rejects routed experts with the KV connector(s) {render_list(bad)}; remove them "
            "(offloading/LMCache connectors are allowed).",
        )
    if reader.value(f"{VLLM_CFG}.enable_prefix_caching") is False:
        context.error_at(
            f"{VLLM_CFG}.enable_prefix_caching",
            f"{shown} rejects routed experts with enable_prefix_caching=false; set "
            "policy.generation.vllm_cfg.enable_prefix_caching to true or null.",
        )
    runner = reader.value(f"{VLLM_CFG}.env_vars.VLLM_USE_V2_MODEL_RUNNER")
    if runner == 0 or (isinstance(runner, str) and runner.strip().lower() in ("0", "false")):
        context.error_at(
            f"{VLLM_CFG}.env_vars.VLLM_USE_V2_MODEL_RUNNER",
            f"{shown} needs Model Runner V2 for routed experts, but VLLM_USE_V2_MODEL_RUNNER={render(runner)}; "
            "remove it or set it to 1.",
        )
    _check_speculative(context, shown)


def _check_speculative(context: Context, shown: str) -> None:
    reader = context.reader
    spec = reader.mapping(f"{VLLM_KWARGS}.speculative_config")
    if spec is None:
        return
    base = f"{VLLM_KWARGS}.speculative_config"
    method = spec.get("method")
    if spec.get("num_speculative_tokens") != 0 and method in _V1_METHODS:
        context.error_at(
            f"{base}.method",
            f"{shown}: speculative method {render(method)} runs only on Model Runner V1, which rejects routed "
            "experts; use another method or disable speculative decoding.",
        )
    if spec.get("parallel_drafting") and method not in ("dflash", "dspark"):
        context.error_at(
            f"{base}.parallel_drafting",
            f"{shown}: parallel_drafting with method {render(method)} falls back to Model Runner V1, which "
            "rejects routed experts; remove parallel_drafting or use dflash/dspark.",
        )
    if spec.get("enable_adaptive_verification") is True:
        context.error_at(
            f"{base}.enable_adaptive_verification",
            f"{shown}: enable_adaptive_verification is not supported with routed experts; remove it.",
        )


_RESHARD_PRECISIONS = (None, "auto", "bf16", "bfloat16", "fp8")


P22 = Rule(
    "P22",
    "nccl-reshard-preconditions",
    summary="nccl_reshard refit transport without its preconditions",
    reference="weight_sync/nccl_reshard_utils.py ~562, from algorithms/grpo.py ~1522 (S5)",
    what_it_checks=(
        "That `refit_transport: nccl_reshard` has every precondition of the reference's own list: "
        "non-colocated vLLM, Megatron (not DTensor), no EPLB or real quant, Megatron layout and pipeline "
        "settings it supports, a supported precision and FP8 recipe, vLLM EP 1 or TP, and vLLM PP 1."
    ),
    why_it_matters=(
        "`weight_sync/nccl_reshard_utils.py` (~562, from `grpo.py` ~1522) raises a `ValueError` after every "
        "worker loaded its model (S5)."
    ),
    example="""\
policy:
  generation:
    refit_transport: nccl_reshard
""",
    fix="Meet each precondition the issues name, or use `refit_transport: null`.",
)


@checks(P22, entries=LEGACY_ENTRIES)
def check_nccl_reshard(context: Context) -> None:
    """``refit_transport: nccl_reshard``: the reference's own list, one finding per failed condition."""
    reader = context.reader
    if reader.value(f"{GENERATION}.refit_transport") != "nccl_reshard":
        return
    fix = "; fix it or choose another refit_transport."
    prefix = "refit_transport='nccl_reshard' needs "

    def fail(path: str, need: str, value: object = ABSENT) -> None:
        """The error at ``path`` whose ``value`` (by default the one written there) does not meet ``need``."""
        shown = reader.value(path) if value is ABSENT else value
        context.error(path, shown, f"{prefix}{need}, got {render(shown)}{fix}")

    if reader.flag(f"{GENERATION}.colocated.enabled"):
        fail(f"{GENERATION}.colocated.enabled", "non-colocated generation")
    if not is_vllm(reader):
        fail(f"{GENERATION}.backend", "backend 'vllm'")
    if reader.truthy(f"{VLLM_KWARGS}.enable_eplb"):
        fail(f"{VLLM_KWARGS}.enable_eplb", "vllm_kwargs.enable_eplb off")
    if reader.truthy(f"{GENERATION}.real_quant"):
        fail(f"{GENERATION}.real_quant", "real_quant off")
    mega = megatron(reader)
    if not mega:
        fail("policy.megatron_cfg.enabled", "Megatron training", False)
    if dtensor(reader):
        fail("policy.dtensor_cfg.enabled", "DTensor disabled")
    mc = "policy.megatron_cfg"
    if mega:
        if reader.opt_integer(f"{mc}.expert_tensor_parallel_size") not in (None, 1):
            fail(f"{mc}.expert_tensor_parallel_size", "expert_tensor_parallel_size 1 or null")
        layout = f"{mc}.pipeline_model_parallel_layout"
        if reader.value(layout) is not None and reader.present(layout):
            fail(layout, "pipeline_model_parallel_layout null")
        if reader.opt_integer(f"{mc}.virtual_pipeline_model_parallel_size") not in (None, 1):
            fail(
                f"{mc}.virtual_pipeline_model_parallel_size", "virtual_pipeline_model_parallel_size 1 or null"
            )
        for name in ("account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split"):
            if reader.flag(f"{mc}.{name}"):
                fail(f"{mc}.{name}", f"{name} false")
    precision = reader.value(f"{VLLM_CFG}.precision")
    if precision not in _RESHARD_PRECISIONS:
        fail(f"{VLLM_CFG}.precision", "generation precision null, auto, bf16, bfloat16 or fp8")
    fp8_param = reader.flag(f"{mc}.fp8_cfg.fp8_param")
    is_mx = reader.truthy(f"{VLLM_CFG}.is_mx")
    if precision == "fp8" and fp8_param:
        if is_mx:
            fail(f"{VLLM_CFG}.is_mx", "is_mx false with fp8_cfg.fp8_param", True)
        if reader.value(f"{mc}.fp8_cfg.fp8_recipe") != "blockwise":
            fail(f"{mc}.fp8_cfg.fp8_recipe", "fp8_recipe 'blockwise' with fp8_cfg.fp8_param")
    elif precision == "fp8":
        if not is_mx:
            fail(f"{VLLM_CFG}.is_mx", "is_mx true for fp8 without fp8_cfg.fp8_param")
        if reader.value("policy.precision") != "bfloat16":
            fail("policy.precision", "policy.precision 'bfloat16' for fp8 without fp8_param")
    elif fp8_param:
        fail(f"{mc}.fp8_cfg.fp8_param", "fp8_cfg.fp8_param false unless the generation precision is fp8")
    tp = reader.count(f"{VLLM_CFG}.tensor_parallel_size")
    ep = reader.count(f"{VLLM_CFG}.expert_parallel_size")
    pp = reader.count(f"{VLLM_CFG}.pipeline_parallel_size")
    if ep not in (1, tp):
        fail(f"{VLLM_CFG}.expert_parallel_size", f"vLLM expert_parallel_size 1 or TP ({tp})")
    if pp != 1:
        fail(f"{VLLM_CFG}.pipeline_parallel_size", "vLLM pipeline_parallel_size 1")


W1 = Rule(
    "W1",
    "sequence-length-exceeds-model-len",
    summary="policy.max_total_sequence_length exceeds vllm_cfg.max_model_len (rollouts are truncated)",
    reference="experience/rollouts.py ~2354 (S6, gym only)",
    severity="warning",
    what_it_checks="Whether `policy.max_total_sequence_length` exceeds `vllm_cfg.max_model_len` (a warning).",
    why_it_matters=(
        "Rollouts longer than the engine's context are truncated: NeMo-Gym rollouts warn at the first rollout "
        "(S6, `experience/rollouts.py` ~2354); the other paths cut them silently."
    ),
    example="""\
policy:
  max_total_sequence_length: 2048
""",
    fix="Raise `vllm_cfg.max_model_len` or lower `max_total_sequence_length` so they agree.",
)


@checks(W1, entries=ALL_ENTRIES)
def check_context_length(context: Context) -> None:
    """(vLLM) a warning when ``policy.max_total_sequence_length > vllm_cfg.max_model_len``, both ints."""
    reader = context.reader
    if not is_vllm(reader):
        return
    total = int_or_none(reader.value("policy.max_total_sequence_length"))
    model_len = int_or_none(reader.value(f"{VLLM_CFG}.max_model_len"))
    if total is not None and model_len is not None and total > model_len:
        context.warning(
            f"{VLLM_CFG}.max_model_len",
            model_len,
            f"policy.max_total_sequence_length={render(total)} > vllm_cfg.max_model_len={render(model_len)}: "
            f"sequences longer than {render(model_len)} tokens are truncated; raise max_model_len or lower "
            "max_total_sequence_length.",
        )
