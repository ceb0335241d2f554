"""Hypothesis strategies for whole GRPO recipes as preflight reads them (PREFLIGHT.md).

- :func:`valid_recipes`: composed, resolved recipes (cluster, policy, generation, loss, grpo and the sections the
  entrypoint needs) that are consistent by construction, so no preflight rule reports an error;
- :func:`broken_recipes`: one of those with exactly one rule broken (:data:`BREAKABLE_RULES`), so that rule and
  no other reports an error.

Documents are plain JSON-compatible dicts, as ``preflight()`` takes them.  Every recipe uses the vLLM backend;
the training backend, cluster shape, colocation, parallel sizes, batch sizes, FP8, router replay, a reward
model, legacy async GRPO and the three entrypoints vary.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from hypothesis import strategies as st

from ...config.rules.preflight import PREFLIGHT_RULES

__all__ = ["BREAKABLE_RULES", "broken_recipes", "valid_recipes"]

_Entry = Literal["grpo", "grpo-gym", "grpo-sc"]
_ENTRIES: tuple[_Entry, ...] = ("grpo", "grpo-gym", "grpo-sc")


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


@dataclass(frozen=True)
class _Constraints:
    """What a breaker needs of the valid recipe it starts from."""

    entries: tuple[_Entry, ...] = _ENTRIES
    training: tuple[str, ...] = ("megatron", "dtensor")
    min_train_tp: int = 1
    vllm_pp_one: bool = False
    async_grpo: bool = True
    router_replay: bool = True


def _cluster_split(draw: st.DrawFn, entry: _Entry, c: _Constraints) -> dict[str, Any]:
    """Cluster, colocation, reward model and the layout they give (mirrors PREFLIGHT.md P13/P25 by construction)."""
    legacy = entry != "grpo-sc"
    if c.min_train_tp > 1:
        n, g, colocated = draw(st.integers(1, 2)), 8, True
    else:
        n, g = draw(st.integers(1, 4)), draw(st.sampled_from([1, 2, 4, 8]))
        colocated = draw(st.booleans())
    rm_nodes = rm_gpn = 0
    use_rm = legacy and c.min_train_tp == 1 and draw(st.booleans())
    if use_rm:
        if n == 1 and g >= 2:
            rm_gpn, rm_nodes = draw(st.integers(1, g - 1)), draw(st.integers(0, 2))
        elif n > 1:
            rm_nodes, rm_gpn = draw(st.integers(1, n - 1)), draw(st.integers(0, g))
        else:
            use_rm = False
    res: dict[str, Any] = {"gpus_per_node": None, "num_nodes": None}
    # A reward model (legacy entrypoints only) leaves the policy the other nodes, or on one node the other GPUs.
    nodes, gpus = (n - rm_nodes, g) if n > 1 else (1, g - rm_gpn)
    if not colocated and nodes == 1 and gpus < 2:
        colocated = True
    if colocated:
        layout = (nodes, gpus, nodes, gpus)
    elif nodes == 1:
        gg = draw(st.integers(1, gpus - 1))
        res = {"gpus_per_node": gg, "num_nodes": draw(st.sampled_from([None, 1]))}
        layout = (1, gpus - gg, 1, gg)
    else:
        gn = draw(st.integers(1, nodes - 1))
        gg = g if legacy else draw(st.integers(1, g))  # legacy: a generation node is a whole node
        res = {"gpus_per_node": gg, "num_nodes": gn}
        layout = (nodes - gn, g, gn, gg)
    return {
        "cluster": {"num_nodes": n, "gpus_per_node": g, "segment_size": None},
        "colocated": {"enabled": colocated, "resources": res},
        "rm": (use_rm, rm_nodes, rm_gpn),
        "layout": layout,
    }


@st.composite
def _recipe(draw: st.DrawFn, c: _Constraints) -> dict[str, Any]:
    entry: _Entry = draw(st.sampled_from(c.entries))
    legacy = entry != "grpo-sc"
    gym = entry == "grpo-gym"
    split = _cluster_split(draw, entry, c)
    train_nodes, train_gpn, gen_nodes, gen_gpn = split["layout"]
    colocated = split["colocated"]["enabled"]
    training = draw(st.sampled_from(c.training))
    mega = training == "megatron"

    # vLLM engine sizes: TP x PP divides the generation GPUs per node (P17).
    mp = draw(st.sampled_from(_divisors(gen_gpn)))
    pp = 1 if c.vllm_pp_one else draw(st.sampled_from(_divisors(mp)))
    tp = mp // pp
    # An FP8 KV cache needs FP8 weights, Megatron with PP 1, and no async rollouts (P14).
    fp8_kv = legacy and not gym and mega and pp == 1 and draw(st.booleans())
    async_engine = not fp8_kv and (gym or pp > 1 or draw(st.booleans()))
    engines = gen_nodes * gen_gpn // mp
    ep = 1
    if tp > 1 and draw(st.booleans()):
        ep = tp
    elif not async_engine and pp == 1 and engines > 1 and draw(st.booleans()):
        ep = tp * draw(st.sampled_from([k for k in _divisors(engines) if k > 1]))

    # Training sizes: PP x CP x TP divides the training world (P18); TP >= 4 needs equal batch sizes (P19).
    world = train_nodes * train_gpn
    train_tp = draw(st.sampled_from([d for d in _divisors(world) if d >= c.min_train_tp]))
    rest = world // train_tp
    train_pp = draw(st.sampled_from(_divisors(rest))) if mega and not fp8_kv else 1
    train_cp = draw(st.sampled_from(_divisors(rest // train_pp)))
    micro = draw(st.integers(1, 4))
    logprob = micro if train_tp >= 4 else draw(st.integers(1, 4))

    # Batching: train_global_batch_size = prompts x generations (P9, P26).
    prompts, generations = draw(st.integers(1, 64)), draw(st.integers(1, 16))
    multiple_loaders = legacy and draw(st.booleans())
    dynamic = not multiple_loaders and draw(st.booleans())
    multiplier = draw(st.sampled_from([1, 1.0, 1.5, 2])) if dynamic else 1

    async_grpo = (
        legacy and c.async_grpo and not colocated and not dynamic and not fp8_kv and draw(st.booleans())
    )
    if async_grpo:
        async_engine, multiple_loaders = True, False
    fp8 = fp8_kv or draw(st.booleans())
    sampler = "in_order" if legacy else draw(st.sampled_from(["in_order", "windowed", "ready_first"]))
    force_ratio = sampler != "ready_first" and draw(st.booleans())
    correction = async_grpo or fp8 or sampler == "ready_first" or draw(st.booleans())
    router_replay = c.router_replay and mega and pp == 1 and draw(st.booleans())
    packing = draw(st.booleans())
    fused = mega and not packing and draw(st.booleans())
    draft = mega and not packing and draw(st.booleans())
    # Loss-function options (P29): CISPO excludes the PPO-ratio switches and needs a token-level loss;
    # sequence-level ratios need a sequence-level loss; truncated IS needs the correction and its bounds.
    truncation = draw(st.sampled_from([None, "tis", "icepop", "seq-mask-tis"])) if correction else None
    clip_c = draw(st.sampled_from([None, 3.0]))
    cispo = not force_ratio and clip_c is None and draw(st.booleans())
    sequence_level = not cispo and truncation != "seq-mask-tis" and draw(st.booleans())
    penalty = draw(st.sampled_from([0, 0.0, 0.01, 0.1]))
    skip_reference = penalty == 0 and draw(st.booleans())
    kl_in_reward = not force_ratio and draw(st.booleans())
    top_k = None if fused else draw(st.sampled_from([None, 0, 20]))
    top_p = 1.0 if fused else draw(st.sampled_from([1.0, 0.9]))
    temperature = draw(st.sampled_from([1.0, 0.7]))
    seq_len = draw(st.sampled_from([512, 1024, 4096]))

    vllm_cfg: dict[str, Any] = {
        "async_engine": async_engine,
        "precision": "fp8" if fp8 else "bfloat16",
        "kv_cache_dtype": draw(st.sampled_from(["fp8", "fp8_e4m3"])) if fp8_kv else "auto",
        "tensor_parallel_size": tp,
        "pipeline_parallel_size": pp,
        "expert_parallel_size": ep,
        "gpu_memory_utilization": 0.6,
        "max_model_len": seq_len + draw(st.sampled_from([0, 512])),
        "enforce_eager": draw(st.booleans()),
        "enable_prefix_caching": draw(st.sampled_from([None, True])) if router_replay else None,
        "expose_http_server": gym,
    }
    generation: dict[str, Any] = {
        "backend": "vllm",
        "max_new_tokens": seq_len,
        "temperature": temperature,
        "top_p": top_p,
        "top_k": top_k,
        "val_temperature": temperature,
        "val_top_p": top_p,
        "val_top_k": top_k,
        "stop_token_ids": None,
        "stop_strings": None,
        "refit_transport": None,
        "vllm_cfg": vllm_cfg,
        "vllm_kwargs": draw(st.sampled_from([{}, {"enable_chunked_prefill": False}])),
        "colocated": split["colocated"],
    }
    policy: dict[str, Any] = {
        "model_name": "Qwen/Qwen2.5-1.5B",
        "train_global_batch_size": prompts * generations,
        "train_micro_batch_size": micro,
        "logprob_batch_size": logprob,
        "max_total_sequence_length": seq_len,
        "precision": "bfloat16",
        "dtensor_cfg": {
            "enabled": not mega,
            "_v2": True,
            "tensor_parallel_size": train_tp if not mega else 1,
            "context_parallel_size": train_cp if not mega else 1,
            "lora_cfg": {"enabled": False},
        },
        "megatron_cfg": {
            "enabled": mega,
            "tensor_model_parallel_size": train_tp if mega else 1,
            "pipeline_model_parallel_size": train_pp if mega else 1,
            "context_parallel_size": train_cp if mega else 1,
            "virtual_pipeline_model_parallel_size": None,
            "use_fused_linear_logprobs": fused,
            "fp8_cfg": {"enabled": False, "fp8_recipe": "blockwise", "fp8_param": False},
        },
        "draft": {"enabled": draft},
        "router_replay": {"enabled": router_replay},
        "sequence_packing": {"enabled": packing},
        "generation": generation,
    }
    grpo: dict[str, Any] = {
        "num_prompts_per_step": prompts,
        "num_generations_per_prompt": generations,
        "use_dynamic_sampling": dynamic,
        "batch_multiplier": multiplier,
        "val_num_generations_per_prompt": draw(st.integers(1, 4)),
        "stop_at_validation_metric": None,
        "stop_at_validation_threshold": None,
        "skip_reference_policy_logprobs_calculation": skip_reference,
        "seq_logprob_error_threshold": None,
        "val_period": 10 if legacy else 0,
        "val_at_start": False,
        "val_at_end": False,
        "max_val_samples": None if gym else 256,
        "reward_scaling": {"enabled": False},
        "reward_shaping": {"enabled": False},
        "async_grpo": (
            None
            if not legacy
            else {"enabled": async_grpo, "max_trajectory_age_steps": 1, "in_flight_weight_updates": False}
        ),
    }
    data: dict[str, Any] = {
        "use_multiple_dataloader": multiple_loaders,
        "train": {"dataset_name": "OpenMathInstruct-2"},
        "validation": None,
        "default": {"env_name": "math"},
    }
    if multiple_loaders:
        data["num_prompts_per_dataloader"] = draw(st.sampled_from(_divisors(prompts)))
    env: dict[str, Any] = {"should_use_nemo_gym": gym, "math": {"num_workers": 8}}
    use_rm, rm_nodes, rm_gpn = split["rm"]
    if use_rm:
        data["default"]["env_name"] = "reward_model"
        env["reward_model"] = {"resources": {"num_nodes": rm_nodes, "gpus_per_node": rm_gpn}}
    document: dict[str, Any] = {
        "grpo": grpo,
        "loss_fn": {
            "reference_policy_kl_penalty": penalty,
            "use_kl_in_reward": kl_in_reward,
            "use_importance_sampling_correction": correction,
            "force_on_policy_ratio": force_ratio,
            "reference_policy_kl_type": draw(st.sampled_from(["k1", "k2", "k3"])),
            "ratio_clip_c": clip_c,
            "use_cispo": cispo,
            "disable_ppo_ratio": False,
            "sequence_level_importance_ratios": sequence_level,
            "token_level_loss": not sequence_level,
            "truncated_importance_sampling_type": truncation,
            "truncated_importance_sampling_ratio": 2.0 if truncation else None,
            "truncated_importance_sampling_ratio_min": 0.5
            if truncation in ("icepop", "seq-mask-tis")
            else None,
        },
        "policy": policy,
        "data": data,
        "env": env,
        "cluster": split["cluster"],
        "checkpointing": {
            "enabled": draw(st.booleans()),
            "metric_name": "val:accuracy" if legacy else "train:loss",
        },
        "reward_penalties": {"penalize_empty_final_answer": False},
        "data_plane": {"enabled": not legacy},
        "on_policy_distillation": None,
    }
    if not legacy:
        document["async_rl"] = {
            "sampler": {"name": sampler},
            "min_groups_for_streaming_train": draw(st.integers(1, prompts)),
        }
    return document


def valid_recipes(entrypoint: _Entry | None = None) -> st.SearchStrategy[dict[str, Any]]:
    """Whole recipes that pass every preflight rule (no error finding; warnings and skipped N-rules allowed).

    ``entrypoint`` restricts the recipe to one trainer script (``grpo``, ``grpo-gym``, ``grpo-sc``); by default
    all three are drawn.  The recipe is detected as that entrypoint (``grpo.async_grpo: null`` for grpo-sc,
    ``env.should_use_nemo_gym: true`` for grpo-gym).
    """
    entries = _ENTRIES if entrypoint is None else (entrypoint,)
    return _recipe(_Constraints(entries=entries))


def _get(doc: dict[str, Any], path: str) -> Any:
    node: Any = doc
    for key in path.split("."):
        node = node[key]
    return node


def _set(doc: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    node = doc
    for key in parents:
        node = node.setdefault(key, {})
    node[last] = value


def _total_gpus(doc: dict[str, Any]) -> int:
    return int(doc["cluster"]["num_nodes"]) * int(doc["cluster"]["gpus_per_node"])


_PG = "policy.generation"
_VC = "policy.generation.vllm_cfg"
_VK = "policy.generation.vllm_kwargs"
_LEGACY: tuple[_Entry, ...] = ("grpo", "grpo-gym")


def _break_p1(doc: dict[str, Any], draw: st.DrawFn) -> None:
    path = draw(
        st.sampled_from(["data.use_multiple_dataloader", f"{_VC}.enforce_eager", "cluster.num_nodes"])
    )
    *parents, last = path.split(".")
    del _get(doc, ".".join(parents))[last]


def _break_p2(doc: dict[str, Any], draw: st.DrawFn) -> None:
    both = draw(st.booleans())
    doc["policy"]["megatron_cfg"]["enabled"] = both
    doc["policy"]["dtensor_cfg"]["enabled"] = both
    if both:  # an FP8 KV cache needs DTensor off (P14)
        _set(doc, f"{_VC}.kv_cache_dtype", "auto")
    else:  # router replay and a draft model need Megatron (P20, P3)
        doc["policy"]["router_replay"]["enabled"] = False
        doc["policy"]["draft"]["enabled"] = False


def _break_p3(doc: dict[str, Any], draw: st.DrawFn) -> None:
    doc["policy"]["draft"]["enabled"] = True
    doc["policy"]["sequence_packing"]["enabled"] = True
    doc["policy"]["megatron_cfg"]["use_fused_linear_logprobs"] = False


def _break_p4(doc: dict[str, Any], draw: st.DrawFn) -> None:
    doc["policy"]["dtensor_cfg"]["_v2"] = False
    if draw(st.booleans()):
        doc["policy"]["dtensor_cfg"]["lora_cfg"]["enabled"] = True
    else:
        doc["policy"]["dtensor_cfg"]["dp_replicate_size"] = draw(st.integers(2, 8))


def _break_p5(doc: dict[str, Any], draw: st.DrawFn) -> None:
    generation = doc["policy"]["generation"]
    generation["val_temperature"] = generation["temperature"] + 0.5
    generation["val_top_k"] = draw(st.integers(1, 50))


def _break_p6(doc: dict[str, Any], draw: st.DrawFn) -> None:
    if draw(st.booleans()):
        doc["grpo"]["val_num_generations_per_prompt"] = draw(st.integers(-2, 0))
    else:
        doc["grpo"]["stop_at_validation_metric"] = "pass_k"
        doc["grpo"]["stop_at_validation_threshold"] = 0.9
        doc["grpo"]["val_num_generations_per_prompt"] = 1


def _break_p7(doc: dict[str, Any], draw: st.DrawFn) -> None:
    doc["grpo"]["use_dynamic_sampling"] = False
    doc["grpo"]["batch_multiplier"] = draw(st.sampled_from([1.5, 2, 0.5]))


def _break_p8(doc: dict[str, Any], draw: st.DrawFn) -> None:
    doc["policy"]["megatron_cfg"]["use_fused_linear_logprobs"] = True
    doc["policy"]["draft"]["enabled"] = False
    doc["policy"]["sequence_packing"]["enabled"] = True


def _break_p9(doc: dict[str, Any], draw: st.DrawFn) -> None:
    doc["loss_fn"]["force_on_policy_ratio"] = True
    doc["loss_fn"]["use_kl_in_reward"] = False
    doc["loss_fn"]["use_cispo"] = False  # CISPO excludes the forced ratio (P29)
    doc["policy"]["train_global_batch_size"] += draw(st.integers(1, 64))


def _break_p10(doc: dict[str, Any], draw: st.DrawFn) -> None:
    doc["grpo"]["skip_reference_policy_logprobs_calculation"] = True
    doc["loss_fn"]["reference_policy_kl_penalty"] = draw(st.sampled_from([0.01, 0.5]))


def _break_p11(doc: dict[str, Any], draw: st.DrawFn) -> None:
    doc["reward_penalties"][
        draw(st.sampled_from(["penalize_empty_final_answer", "penalize_unwanted_tokens"]))
    ] = True


def _break_p12(doc: dict[str, Any], draw: st.DrawFn) -> None:
    doc["grpo"]["deduplicate_multimodal_data"] = True
    doc["data_plane"]["enabled"] = True


def _break_layout(doc: dict[str, Any], draw: st.DrawFn) -> None:
    g = doc["cluster"]["gpus_per_node"]
    doc["cluster"]["num_nodes"] = 1
    doc["data"]["default"]["env_name"] = "math"
    doc["policy"]["generation"]["colocated"] = {
        "enabled": False,
        "resources": {"gpus_per_node": g + draw(st.integers(0, 2)), "num_nodes": 1},
    }


def _break_p14(doc: dict[str, Any], draw: st.DrawFn) -> None:
    _set(doc, f"{_VC}.precision", "fp8")
    _set(doc, f"{_VC}.kv_cache_dtype", "fp8_ds_mla")
    doc["loss_fn"]["use_importance_sampling_correction"] = True


def _break_p15(doc: dict[str, Any], draw: st.DrawFn) -> None:
    _set(doc, f"{_PG}.refit_transport", draw(st.sampled_from(["vllm_zmq_sparse", "vllm_s3_sparse"])))
    _set(doc, f"{_PG}.quant_cfg", "modelopt_fp8")


def _break_p16(doc: dict[str, Any], draw: st.DrawFn) -> None:
    key = draw(st.sampled_from(["seed", "max_model_len", "enforce_eager", "dtype", "tensor_parallel_size"]))
    _set(doc, f"{_VK}.{key}", 1)


def _break_p17(doc: dict[str, Any], draw: st.DrawFn) -> None:
    vllm_cfg = doc["policy"]["generation"]["vllm_cfg"]
    vllm_cfg["tensor_parallel_size"] = _total_gpus(doc) + draw(st.integers(1, 3))
    vllm_cfg["expert_parallel_size"] = 1


def _break_p18(doc: dict[str, Any], draw: st.DrawFn) -> None:
    tp = _total_gpus(doc) + draw(st.integers(1, 3))
    if doc["policy"]["megatron_cfg"]["enabled"]:
        doc["policy"]["megatron_cfg"]["tensor_model_parallel_size"] = tp
    else:
        doc["policy"]["dtensor_cfg"]["tensor_parallel_size"] = tp
    doc["policy"]["logprob_batch_size"] = doc["policy"]["train_micro_batch_size"]


def _break_p19(doc: dict[str, Any], draw: st.DrawFn) -> None:
    doc["loss_fn"]["force_on_policy_ratio"] = False
    doc["policy"]["logprob_batch_size"] = doc["policy"]["train_micro_batch_size"] + draw(st.integers(1, 4))


def _break_p20(doc: dict[str, Any], draw: st.DrawFn) -> None:
    doc["policy"]["router_replay"]["enabled"] = True
    if doc["policy"]["megatron_cfg"]["enabled"]:
        doc["policy"]["megatron_cfg"]["virtual_pipeline_model_parallel_size"] = draw(st.integers(2, 4))


def _break_p21(doc: dict[str, Any], draw: st.DrawFn) -> None:
    _set(doc, f"{_VK}.enable_return_routed_experts", True)
    key = draw(st.sampled_from(["decode_context_parallel_size", "prefill_context_parallel_size"]))
    _set(doc, f"{_VK}.{key}", draw(st.integers(2, 4)))


def _break_p22(doc: dict[str, Any], draw: st.DrawFn) -> None:
    _set(doc, f"{_PG}.refit_transport", "nccl_reshard")
    _set(doc, f"{_VK}.enable_eplb", True)


def _break_p23(doc: dict[str, Any], draw: st.DrawFn) -> None:
    doc["grpo"]["async_grpo"]["enabled"] = True
    doc["grpo"]["reward_scaling"]["enabled"] = True


def _break_p24(doc: dict[str, Any], draw: st.DrawFn) -> None:
    doc["data_plane"]["enabled"] = False


def _break_p26(doc: dict[str, Any], draw: st.DrawFn) -> None:
    doc["policy"]["train_global_batch_size"] += draw(st.integers(1, 64))


def _break_p27(doc: dict[str, Any], draw: st.DrawFn) -> None:
    doc["grpo"]["max_val_samples"] = draw(st.sampled_from([256, 16]))


def _break_p29(doc: dict[str, Any], draw: st.DrawFn) -> None:
    loss = doc["loss_fn"]
    breaking = draw(st.sampled_from(["kl_type", "clip_c", "cispo", "sequence_level", "ratio"]))
    if breaking == "kl_type":
        loss["reference_policy_kl_type"] = draw(st.sampled_from(["k4", "K3", None]))
    elif breaking == "clip_c":
        loss["ratio_clip_c"] = draw(st.sampled_from([1, 0.5, -3.0]))
    elif breaking == "cispo":
        loss["use_cispo"], loss["token_level_loss"] = True, False
    elif breaking == "sequence_level":
        loss["sequence_level_importance_ratios"], loss["token_level_loss"] = True, True
    else:
        loss["truncated_importance_sampling_type"] = draw(st.sampled_from(["tis", "icepop", "seq-mask-tis"]))
        loss["truncated_importance_sampling_ratio"] = draw(st.sampled_from([0, -1.0, None]))


_BREAKERS: dict[str, tuple[_Constraints, Callable[[dict[str, Any], st.DrawFn], None]]] = {
    "P1": (_Constraints(), _break_p1),
    "P2": (_Constraints(), _break_p2),
    "P3": (_Constraints(), _break_p3),
    "P4": (_Constraints(training=("dtensor",)), _break_p4),
    "P5": (_Constraints(entries=_LEGACY), _break_p5),
    "P6": (_Constraints(entries=_LEGACY), _break_p6),
    "P7": (_Constraints(entries=_LEGACY), _break_p7),
    "P8": (_Constraints(entries=_LEGACY, training=("megatron",)), _break_p8),
    "P9": (_Constraints(entries=_LEGACY), _break_p9),
    "P10": (_Constraints(entries=_LEGACY), _break_p10),
    "P11": (_Constraints(entries=("grpo",)), _break_p11),
    "P12": (_Constraints(entries=_LEGACY, async_grpo=False), _break_p12),
    "P13": (_Constraints(entries=_LEGACY, async_grpo=False), _break_layout),
    "P14": (_Constraints(entries=_LEGACY), _break_p14),
    "P15": (_Constraints(entries=_LEGACY), _break_p15),
    "P16": (_Constraints(), _break_p16),
    "P17": (_Constraints(), _break_p17),
    "P18": (_Constraints(), _break_p18),
    "P19": (_Constraints(min_train_tp=4), _break_p19),
    "P20": (_Constraints(vllm_pp_one=True), _break_p20),
    "P21": (_Constraints(), _break_p21),
    "P22": (_Constraints(entries=_LEGACY), _break_p22),
    "P23": (_Constraints(entries=_LEGACY), _break_p23),
    "P24": (_Constraints(entries=("grpo-sc",)), _break_p24),
    "P25": (_Constraints(entries=("grpo-sc",)), _break_layout),
    "P26": (_Constraints(entries=("grpo-sc",)), _break_p26),
    "P27": (_Constraints(entries=("grpo-gym",)), _break_p27),
    "P29": (_Constraints(), _break_p29),
}

BREAKABLE_RULES: tuple[str, ...] = tuple(rule.code for rule in PREFLIGHT_RULES if rule.code in _BREAKERS)
"""The rules :func:`broken_recipes` can break, in the rule table's order: the preflight error rules that have a
breaker here (every P-rule that needs no runtime input; a test keeps the breakers keyed by the table's codes)."""


@st.composite
def _broken(draw: st.DrawFn, rule: str) -> dict[str, Any]:
    constraints, breaker = _BREAKERS[rule]
    document = copy.deepcopy(draw(_recipe(constraints)))
    breaker(document, draw)
    return document


def broken_recipes(rule: str) -> st.SearchStrategy[dict[str, Any]]:
    """Recipes from :func:`valid_recipes` with exactly ``rule`` broken: preflight reports an error of ``rule``
    and no error of any other rule.  ``rule`` is one of :data:`BREAKABLE_RULES` (``KeyError`` otherwise);
    the recipe is drawn for an entrypoint the rule applies to.
    """
    if rule not in _BREAKERS:
        raise KeyError(f"no breaker for rule {rule!r}; breakable rules: {', '.join(BREAKABLE_RULES)}")
    return _broken(rule)
