"""Every preflight rule of PREFLIGHT.md: a minimal recipe that violates it and one that passes it.

Each case starts from ``tests/data/preflight/base.yaml`` (a recipe that passes every rule) and applies dotted-path
overrides.  A violating case pins the code, the path, the severity and key fragments of the message (the values
and the fix); a passing case exercises the same rule's condition and must report no error at all.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from rl_contracts.config.rules.preflight import ABSENT, PreflightOptions, preflight

Recipe = Callable[..., dict[str, Any]]
"""The ``recipe`` fixture of ``conftest.py``: the base recipe with dotted-path overrides."""


PG = "policy.generation"
VC = "policy.generation.vllm_cfg"
VK = "policy.generation.vllm_kwargs"
RES = "policy.generation.colocated.resources"
GYM: dict[str, object] = {"env.should_use_nemo_gym": True, "grpo.max_val_samples": None}
SC: dict[str, object] = {
    "grpo.async_grpo": None,
    "data_plane.enabled": True,
    "grpo.val_period": 0,
    "async_rl.min_groups_for_streaming_train": 1,
}
MEGATRON: dict[str, object] = {"policy.megatron_cfg.enabled": True, "policy.dtensor_cfg.enabled": False}
NONCOLOCATED_2N: dict[str, object] = {
    "cluster.num_nodes": 2,
    f"{PG}.colocated.enabled": False,
    f"{RES}.num_nodes": 1,
    f"{RES}.gpus_per_node": 8,
}
R3: dict[str, object] = {**MEGATRON, "policy.router_replay.enabled": True}
NO_ENV = PreflightOptions(environ={})


@dataclass(frozen=True)
class Violation:
    """A recipe breaking one rule, and the finding that must be reported."""

    id: str
    layers: tuple[Mapping[str, object], ...]
    code: str
    path: str
    fragments: tuple[str, ...]
    options: PreflightOptions = NO_ENV
    severity: str = "error"


@dataclass(frozen=True)
class Passing:
    """A recipe that exercises a rule's condition without breaking anything."""

    id: str
    layers: tuple[Mapping[str, object], ...]
    options: PreflightOptions = field(default=NO_ENV)


V = Violation
OK = Passing
V32 = PreflightOptions(environ={}, vllm_version=(0, 32))
V30 = PreflightOptions(environ={}, vllm_version=(0, 30))

# fmt: off
VIOLATIONS = [
    V("P1-cluster", ({"cluster.gpus_per_node": ABSENT},), "P1", "cluster.gpus_per_node", ("is required", "KeyError", "add it")),
    V("P1-colocated", ({f"{PG}.colocated": None},), "P1", f"{PG}.colocated.enabled", ("KeyError",)),
    V("P1-kv-grpo", ({f"{VC}.kv_cache_dtype": ABSENT},), "P1", f"{VC}.kv_cache_dtype", ("is required",)),
    V("P1-precision", ({f"{VC}.precision": ABSENT},), "P1", f"{VC}.precision", ("is required",)),
    V("P1-enforce-eager", ({f"{VC}.enforce_eager": ABSENT}, SC), "P1", f"{VC}.enforce_eager", ("is required",)),
    V("P1-draft-sc", ({"policy.draft.enabled": ABSENT}, SC), "P1", "policy.draft.enabled", ("is required",)),
    V("P1-gbs", ({"policy.train_global_batch_size": ABSENT},), "P1", "policy.train_global_batch_size", ("KeyError",)),
    V("P1-dataloader", ({"data.use_multiple_dataloader": ABSENT},), "P1", "data.use_multiple_dataloader", ("add it",)),
    V("P1-backend", ({f"{PG}.backend": ABSENT},), "P1", f"{PG}.backend", ("is required",)),
    V("P2-both-true", ({"policy.megatron_cfg.enabled": True},), "P2", "policy.megatron_cfg.enabled", ("are both true", "exactly one")),
    V("P2-both-false", ({"policy.dtensor_cfg.enabled": False},), "P2", "policy.megatron_cfg.enabled", ("are both false",)),
    V("P3-dtensor", ({"policy.draft.enabled": True},), "P3", "policy.draft.enabled", ("policy.megatron_cfg.enabled is false",)),
    V("P3-packing", (MEGATRON, {"policy.draft.enabled": True, "policy.sequence_packing.enabled": True}), "P3", "policy.sequence_packing.enabled", ("sequence_packing.enabled=false",)),
    V("P4-lora", ({"policy.dtensor_cfg._v2": False, "policy.dtensor_cfg.lora_cfg.enabled": True},), "P4", "policy.dtensor_cfg.lora_cfg.enabled", ("_v2: true",)),
    V("P4-replicate", ({"policy.dtensor_cfg._v2": ABSENT, "policy.dtensor_cfg.dp_replicate_size": 2},), "P4", "policy.dtensor_cfg.dp_replicate_size", ("dp_replicate_size=2", "_v2: true")),
    V("P5-not-gym", ({f"{PG}.val_temperature": 0.7},), "P5", f"{PG}.val_temperature", ("val_temperature=0.7 vs temperature=1.0", "make val_* equal")),
    V("P5-top-k-gym", (GYM, {f"{PG}.val_temperature": 0.7, f"{PG}.val_top_k": 5}), "P5", f"{PG}.val_top_k", ("val_top_k=5 cannot be honoured", "null")),
    V("P5-absent-val-top-k", ({f"{PG}.val_temperature": 0.7, f"{PG}.top_k": 20, f"{PG}.val_top_k": ABSENT}, GYM), "P5", f"{PG}.val_top_k", ("val_top_k=20",)),
    V("P6-zero", ({"grpo.val_num_generations_per_prompt": 0},), "P6", "grpo.val_num_generations_per_prompt", ("=0 must be >= 1",)),
    V("P6-pass-k", ({"grpo.stop_at_validation_metric": "pass_k", "grpo.stop_at_validation_threshold": 0.5},), "P6", "grpo.val_num_generations_per_prompt", ("pass_k", "> 1, got 1")),
    V("P6-threshold", ({"grpo.stop_at_validation_metric": "accuracy"},), "P6", "grpo.stop_at_validation_threshold", ("'accuracy'", "threshold")),
    V("P7-multiplier", ({"grpo.batch_multiplier": 1.5},), "P7", "grpo.batch_multiplier", ("grpo.batch_multiplier=1.5 needs grpo.use_dynamic_sampling=true",)),
    V("P7-dataloaders", ({"data.use_multiple_dataloader": True, "data.num_prompts_per_dataloader": 3},), "P7", "data.num_prompts_per_dataloader", ("num_prompts_per_step=8", "num_prompts_per_dataloader=3")),
    V("P7-scaled", ({"grpo.use_dynamic_sampling": True, "grpo.batch_multiplier": 2, "data.use_multiple_dataloader": True, "data.num_prompts_per_dataloader": 3},), "P7", "data.num_prompts_per_dataloader", ("num_prompts_per_step=16", "num_prompts_per_dataloader=6", "batch_multiplier=2")),
    V("P7-zero-loader", ({"data.use_multiple_dataloader": True, "data.num_prompts_per_dataloader": 0},), "P7", "data.num_prompts_per_dataloader", ("num_prompts_per_dataloader=0",)),
    V("P7-missing-loader", ({"data.use_multiple_dataloader": True},), "P1", "data.num_prompts_per_dataloader", ("is required",)),
    V("P8-packing", (MEGATRON, {"policy.megatron_cfg.use_fused_linear_logprobs": True, "policy.sequence_packing.enabled": True}), "P8", "policy.sequence_packing.enabled", ("use_fused_linear_logprobs=true",)),
    V("P8-packing-absent", (MEGATRON, {"policy.megatron_cfg.use_fused_linear_logprobs": True, "policy.sequence_packing": ABSENT}), "P1", "policy.sequence_packing.enabled", ("is required",)),
    V("P8-top-k", (MEGATRON, {"policy.megatron_cfg.use_fused_linear_logprobs": True, f"{PG}.top_k": 20, f"{PG}.val_top_k": 20}), "P8", f"{PG}.top_k", ("top_k=20",)),
    V("P8-top-p", (MEGATRON, {"policy.megatron_cfg.use_fused_linear_logprobs": True, f"{PG}.top_p": 0.9, f"{PG}.val_top_p": 0.9}), "P8", f"{PG}.top_p", ("top_p=0.9",)),
    V("P9", ({"loss_fn.force_on_policy_ratio": True, "policy.train_global_batch_size": 64},), "P9", "policy.train_global_batch_size", ("== 8 x 4 = 32, got 64",)),
    V("P9-default-counts", ({"loss_fn.force_on_policy_ratio": True, "grpo.num_prompts_per_step": ABSENT, "grpo.num_generations_per_prompt": ABSENT},), "P9", "policy.train_global_batch_size", ("== 32 x 16 = 512, got 32",)),
    V("P10-default-penalty", ({"grpo.skip_reference_policy_logprobs_calculation": True, "loss_fn.reference_policy_kl_penalty": ABSENT},), "P10", "loss_fn.reference_policy_kl_penalty", ("reference_policy_kl_penalty=0.01", "default is 0.01")),
    V("P10-kl-in-reward", ({"loss_fn.use_kl_in_reward": True, "loss_fn.force_on_policy_ratio": True},), "P10", "loss_fn.use_kl_in_reward", ("seq_logprob_error_threshold=null", "zeros")),
    V("P11-penalty", ({"reward_penalties.penalize_unwanted_tokens": True},), "P11", "reward_penalties.penalize_unwanted_tokens", ("env.should_use_nemo_gym",)),
    V("P11-async", (GYM,), "P11", f"{VC}.async_engine", ("async rollouts",), PreflightOptions(environ={}, entrypoint="grpo")),
    V("P11-http", (GYM, {f"{VC}.async_engine": True}), "P11", f"{VC}.expose_http_server", ("expose_http_server=true",), PreflightOptions(environ={}, entrypoint="grpo")),
    V("P11-sc", (SC, {"env.should_use_nemo_gym": True, f"{VC}.async_engine": True}), "P11", f"{VC}.expose_http_server", ("HTTP server",)),
    V("P12-data-plane", ({"grpo.deduplicate_multimodal_data": True, "data_plane.enabled": True},), "P12", "grpo.deduplicate_multimodal_data", ("data_plane.enabled=true",)),
    V("P13-no-train-gpus", ({f"{PG}.colocated.enabled": False, f"{RES}.gpus_per_node": 8},), "P13", f"{RES}.gpus_per_node", ("no GPUs left for training", "8 - 8 - 0 = 0")),
    V("P13-gg-null", ({f"{PG}.colocated.enabled": False},), "P13", f"{RES}.gpus_per_node", ("> 0, got None",)),
    V("P13-gn-two", ({f"{PG}.colocated.enabled": False, f"{RES}.gpus_per_node": 4, f"{RES}.num_nodes": 2},), "P13", f"{RES}.num_nodes", ("null or 1, got 2",)),
    V("P13-gn-null", (NONCOLOCATED_2N, {f"{RES}.num_nodes": None}), "P13", f"{RES}.num_nodes", ("TypeError",)),
    V("P13-gg-not-g", (NONCOLOCATED_2N, {f"{RES}.gpus_per_node": 4}), "P13", f"{RES}.gpus_per_node", ("cluster.gpus_per_node=8, got 4",)),
    V("P13-no-train-nodes", (NONCOLOCATED_2N, {f"{RES}.num_nodes": 2}), "P13", f"{RES}.num_nodes", ("2 - 2 = 0",)),
    V("P13-rm-nodes", ({"cluster.num_nodes": 2, "data.default.env_name": "reward_model", "env.reward_model.resources": {"num_nodes": 2, "gpus_per_node": 8}},), "P13", "cluster.num_nodes", ("no nodes left for the policy", "2 - 2 = 0")),
    V("P13-rm-gpus", ({"data.train": [{"env_name": "reward_model"}], "env.reward_model.resources": {"num_nodes": 1, "gpus_per_node": 8}},), "P13", "cluster.gpus_per_node", ("8 - 8 = 0",)),
    V("P13-rm-noncolocated", ({f"{PG}.colocated.enabled": False, f"{RES}.gpus_per_node": 4, "data.validation": {"env_name": "reward_model"}, "env.reward_model.resources": {"num_nodes": 1, "gpus_per_node": 4}},), "P13", f"{RES}.gpus_per_node", ("8 - 4 - 4 = 0",)),
    V("P13-rm-missing-resources", ({"data.default.env_name": "reward_model"},), "P1", "env.reward_model.resources.num_nodes", ("is required",)),
    V("P13-zero-nodes", ({"cluster.num_nodes": 0},), "P13", "cluster.num_nodes", ("cluster.num_nodes=0 must be >= 1",)),
    V("P14-correction", ({f"{VC}.precision": "fp8"},), "P14", "loss_fn.use_importance_sampling_correction", ("precision='fp8'", "use_importance_sampling_correction=true")),
    V("P14-ds-mla", ({f"{VC}.precision": "fp8", "loss_fn.use_importance_sampling_correction": True, f"{VC}.kv_cache_dtype": "fp8_ds_mla"},), "P14", f"{VC}.kv_cache_dtype", ("got 'fp8_ds_mla'",)),
    V("P14-kv-precision", (MEGATRON, {f"{VC}.kv_cache_dtype": "fp8"}), "P14", f"{VC}.kv_cache_dtype", ("needs vllm_cfg.precision='fp8', got 'bfloat16'",)),
    V("P14-kv-dtensor", ({f"{VC}.precision": "fp8", "loss_fn.use_importance_sampling_correction": True, f"{VC}.kv_cache_dtype": "fp8"},), "P14", "policy.dtensor_cfg.enabled", ("DTensor",)),
    V("P14-kv-async", (MEGATRON, {f"{VC}.precision": "fp8", "loss_fn.use_importance_sampling_correction": True, f"{VC}.kv_cache_dtype": "fp8_e4m3", f"{VC}.async_engine": True}), "P14", f"{VC}.kv_cache_dtype", ("async rollouts",)),
    V("P14-kv-pp", (MEGATRON, {f"{VC}.precision": "fp8", "loss_fn.use_importance_sampling_correction": True, f"{VC}.kv_cache_dtype": "fp8", "policy.megatron_cfg.pipeline_model_parallel_size": 2}), "P14", "policy.megatron_cfg.pipeline_model_parallel_size", ("=1, got 2",)),
    V("P14-kv-pp-absent", (MEGATRON, {f"{VC}.precision": "fp8", "loss_fn.use_importance_sampling_correction": True, f"{VC}.kv_cache_dtype": "fp8", "policy.megatron_cfg.pipeline_model_parallel_size": ABSENT}), "P1", "policy.megatron_cfg.pipeline_model_parallel_size", ("is required",)),
    V("P14-gym-async", (GYM, MEGATRON, {f"{VC}.precision": "fp8", "loss_fn.use_importance_sampling_correction": True, f"{VC}.kv_cache_dtype": "fp8"}), "P14", f"{VC}.kv_cache_dtype", ("async rollouts",)),
    V("P15-colocated", ({f"{PG}.refit_transport": "vllm_zmq_sparse"},), "P15", f"{PG}.refit_transport", ("'vllm_zmq_sparse'", "colocated.enabled must be false", "megatron_cfg.enabled must be true")),
    V("P15-s3-bucket", (NONCOLOCATED_2N, MEGATRON, {f"{PG}.refit_transport": "vllm_s3_sparse", f"{PG}.refit_cfg.sparse.storage.s3_bucket": " "}), "P15", f"{PG}.refit_transport", ("s3_bucket must be a non-blank",)),
    V("P15-quant", (NONCOLOCATED_2N, MEGATRON, {f"{PG}.refit_transport": "vllm_zmq_sparse", f"{PG}.real_quant": True, f"{PG}.quant_cfg": "fp8"}), "P15", f"{PG}.refit_transport", ("quant_cfg must be unset", "real_quant must be false")),
    V("P16-seed", ({f"{VK}.seed": 1},), "P16", f"{VK}.seed", ("collides with the engine argument", "use the vllm_cfg key")),
    V("P16-sc", (SC, {f"{VK}.enable_expert_parallel": True}), "P16", f"{VK}.enable_expert_parallel", ("collides",)),
    V("P16-executor", ({f"{VK}.distributed_executor_backend": "mp", f"{VC}.tensor_parallel_size": 2},), "P16", f"{VK}.distributed_executor_backend", ("overwritten", "'ray'"), severity="warning"),
    V("P16-executor-uni", ({f"{VK}.distributed_executor_backend": "ray", f"{VC}.expert_parallel_size": 2},), "P16", f"{VK}.distributed_executor_backend", ("'uni'",), severity="warning"),
    V("P16-hf-overrides", ({f"{VK}.hf_overrides": {"a": 1}},), "P16", f"{VK}.hf_overrides", ("policy.hf_config_overrides",), severity="warning"),
    V("P17-world", ({f"{VC}.tensor_parallel_size": 3},), "P17", f"{VC}.tensor_parallel_size", ("1 x 8 = 8 generation GPUs, TP(3) x PP(1) = 3",)),
    V("P17-per-node", ({"cluster.num_nodes": 3, "cluster.gpus_per_node": 6, f"{PG}.colocated.enabled": False, f"{RES}.num_nodes": 2, f"{RES}.gpus_per_node": 6, f"{VC}.tensor_parallel_size": 4, "policy.dtensor_cfg.tensor_parallel_size": 2},), "P17", f"{VC}.tensor_parallel_size", ("2 x 6 = 12 generation GPUs", "builds 2 x 1 = 2 engines instead of 3")),
    V("P17-expert-groups", ({f"{VC}.expert_parallel_size": 3},), "P17", f"{VC}.expert_parallel_size", ("8 engines", "EP(3) / TP(1) = 3")),
    V("P17-sc", (SC, {f"{VC}.pipeline_parallel_size": 3, f"{VC}.async_engine": True}), "P17", f"{VC}.tensor_parallel_size", ("TP(1) x PP(3) = 3",)),
    V("P18-dtensor", ({"policy.dtensor_cfg.tensor_parallel_size": 3},), "P18", "policy.dtensor_cfg.tensor_parallel_size", ("training world of 8 GPUs (1 x 8)", "PP(1) x CP(1) x TP(3) = 3")),
    V("P18-megatron", (MEGATRON, {"policy.megatron_cfg.tensor_model_parallel_size": 4, "policy.megatron_cfg.pipeline_model_parallel_size": 2, "policy.megatron_cfg.context_parallel_size": 2, "policy.logprob_batch_size": 2}), "P18", "policy.megatron_cfg.tensor_model_parallel_size", ("PP(2) x CP(2) x TP(4) = 16",)),
    V("P18-noncolocated", ({f"{PG}.colocated.enabled": False, f"{RES}.gpus_per_node": 2, "policy.dtensor_cfg.tensor_parallel_size": 4},), "P18", "policy.dtensor_cfg.tensor_parallel_size", ("training world of 6 GPUs (1 x 6)",)),
    V("P19", ({"policy.dtensor_cfg.tensor_parallel_size": 4, "policy.logprob_batch_size": 4},), "P19", "policy.logprob_batch_size", ("TP=4", "train_micro_batch_size=2", "logprob_batch_size=4", "--ignore-tp-accuracy-check")),
    V("P19-null", ({"policy.dtensor_cfg.tensor_parallel_size": 4, "policy.logprob_batch_size": None},), "P19", "policy.logprob_batch_size", ("logprob_batch_size=None",)),
    V("P19-sc-force", (SC, {"policy.dtensor_cfg.tensor_parallel_size": 8, "policy.logprob_batch_size": 4, "loss_fn.force_on_policy_ratio": True}), "P19", "policy.logprob_batch_size", ("TP=8",)),
    V("P20-dtensor", ({"policy.router_replay.enabled": True},), "P20", "policy.megatron_cfg.enabled", ("silently trains without replay",)),
    V("P20-vpp", (R3, {"policy.megatron_cfg.virtual_pipeline_model_parallel_size": 2}), "P20", "policy.megatron_cfg.virtual_pipeline_model_parallel_size", ("virtual_pipeline_model_parallel_size=2",)),
    V("P21-pp", (R3, {f"{VC}.pipeline_parallel_size": 2, f"{VC}.async_engine": True}), "P21", f"{VC}.pipeline_parallel_size", ("pipeline_parallel_size=2",)),
    V("P21-kwarg-r3", ({f"{VK}.enable_return_routed_experts": True, f"{VK}.decode_context_parallel_size": 2},), "P21", f"{VK}.decode_context_parallel_size", ("decode_context_parallel_size=2",)),
    V("P21-030-connector", (R3, {f"{VK}.kv_transfer_config": {"kv_connector": "OffloadingConnector"}}), "P21", f"{VK}.kv_transfer_config.kv_connector", ("vLLM 0.30", "'OffloadingConnector'"), V30),
    V("P21-032-nixl", (R3, {f"{VK}.kv_transfer_config": {"kv_connector": "NixlConnector"}}), "P21", f"{VK}.kv_transfer_config", ("vLLM 0.32", "'NixlConnector'"), V32),
    V("P21-032-multi", (R3, {f"{VK}.kv_transfer_config": {"kv_connector": "MultiConnector", "kv_connector_extra_config": {"connectors": [{"kv_connector": "LMCacheConnectorV1"}, {"kv_connector": "MooncakeConnector"}] }} }), "P21", f"{VK}.kv_transfer_config", ("'MooncakeConnector'",), V32),
    V("P21-032-prefix", (R3, {f"{VC}.enable_prefix_caching": False}), "P21", f"{VC}.enable_prefix_caching", ("enable_prefix_caching=false",), V32),
    V("P21-032-runner", (R3, {f"{VC}.env_vars": {"VLLM_USE_V2_MODEL_RUNNER": "0"}}), "P21", f"{VC}.env_vars.VLLM_USE_V2_MODEL_RUNNER", ("Model Runner V2", "'0'"), V32),
    V("P21-032-method", (R3, {f"{VK}.speculative_config": {"method": "suffix", "num_speculative_tokens": 3}}), "P21", f"{VK}.speculative_config.method", ("'suffix'",), V32),
    V("P21-032-parallel-drafting", (R3, {f"{VK}.speculative_config": {"method": "eagle3", "num_speculative_tokens": 3, "parallel_drafting": True} }), "P21", f"{VK}.speculative_config.parallel_drafting", ("dflash/dspark",), V32),
    V("P21-032-parallel-drafting-no-tokens", (R3, {f"{VK}.speculative_config": {"method": "eagle3", "num_speculative_tokens": 0, "parallel_drafting": True}}), "P21", f"{VK}.speculative_config.parallel_drafting", ("'eagle3'",), V32),
    V("P21-032-adaptive", (R3, {f"{VK}.speculative_config": {"method": "eagle3", "num_speculative_tokens": 0, "enable_adaptive_verification": True} }), "P21", f"{VK}.speculative_config.enable_adaptive_verification", ("enable_adaptive_verification",), V32),
    V("P22-colocated", ({f"{PG}.refit_transport": "nccl_reshard"},), "P22", f"{PG}.colocated.enabled", ("non-colocated generation",)),
    V("P22-dtensor", ({f"{PG}.refit_transport": "nccl_reshard"},), "P22", "policy.dtensor_cfg.enabled", ("DTensor disabled",)),
    V("P22-eplb", (NONCOLOCATED_2N, MEGATRON, {f"{PG}.refit_transport": "nccl_reshard", f"{VK}.enable_eplb": True}), "P22", f"{VK}.enable_eplb", ("enable_eplb off",)),
    V("P22-layout", (NONCOLOCATED_2N, MEGATRON, {f"{PG}.refit_transport": "nccl_reshard", "policy.megatron_cfg.pipeline_model_parallel_layout": "Et|tL"}), "P22", "policy.megatron_cfg.pipeline_model_parallel_layout", ("'Et|tL'",)),
    V("P22-etp", (NONCOLOCATED_2N, MEGATRON, {f"{PG}.refit_transport": "nccl_reshard", "policy.megatron_cfg.expert_tensor_parallel_size": 2}), "P22", "policy.megatron_cfg.expert_tensor_parallel_size", ("got 2",)),
    V("P22-precision", (NONCOLOCATED_2N, MEGATRON, {f"{PG}.refit_transport": "nccl_reshard", f"{VC}.precision": "float16"}), "P22", f"{VC}.precision", ("'float16'",)),
    V("P22-fp8-no-mx", (NONCOLOCATED_2N, MEGATRON, {f"{PG}.refit_transport": "nccl_reshard", f"{VC}.precision": "fp8", "loss_fn.use_importance_sampling_correction": True}), "P22", f"{VC}.is_mx", ("is_mx true",)),
    V("P22-fp8-recipe", (NONCOLOCATED_2N, MEGATRON, {f"{PG}.refit_transport": "nccl_reshard", f"{VC}.precision": "fp8", "loss_fn.use_importance_sampling_correction": True, "policy.megatron_cfg.fp8_cfg": {"fp8_param": True, "fp8_recipe": "tensorwise"}}), "P22", "policy.megatron_cfg.fp8_cfg.fp8_recipe", ("'tensorwise'",)),
    V("P22-fp8-param", (NONCOLOCATED_2N, MEGATRON, {f"{PG}.refit_transport": "nccl_reshard", "policy.megatron_cfg.fp8_cfg.fp8_param": True}), "P22", "policy.megatron_cfg.fp8_cfg.fp8_param", ("fp8_param false",)),
    V("P22-ep", (NONCOLOCATED_2N, MEGATRON, {f"{PG}.refit_transport": "nccl_reshard", f"{VC}.expert_parallel_size": 4}), "P22", f"{VC}.expert_parallel_size", ("1 or TP (1)",)),
    V("P23-async-engine", ({"grpo.async_grpo.enabled": True},), "P23", f"{VC}.async_engine", ("async_engine=true",)),
    V("P23-correction", ({"grpo.async_grpo.enabled": True},), "P23", "loss_fn.use_importance_sampling_correction", ("off-policy",)),
    V("P23-colocated", ({"grpo.async_grpo.enabled": True},), "P23", f"{PG}.colocated.enabled", ("non-colocated",)),
    V("P23-dynamic", (NONCOLOCATED_2N, {"grpo.async_grpo.enabled": True, f"{VC}.async_engine": True, "loss_fn.use_importance_sampling_correction": True, "grpo.use_dynamic_sampling": True}), "P23", "grpo.use_dynamic_sampling", ("does not support grpo.use_dynamic_sampling=true",)),
    V("P23-data-plane", (NONCOLOCATED_2N, R3, {"grpo.async_grpo.enabled": True, f"{VC}.async_engine": True, "loss_fn.use_importance_sampling_correction": True, "data_plane.enabled": True}), "P23", "data_plane.enabled", ("router_replay",)),
    V("P23-age", (NONCOLOCATED_2N, {"grpo.async_grpo": {"enabled": True, "max_trajectory_age_steps": 4}, f"{VC}.async_engine": True, "loss_fn.use_importance_sampling_correction": True}), "P23", "grpo.async_grpo.max_trajectory_age_steps", ("max_trajectory_age_steps=4", "in_flight_weight_updates"), severity="warning"),
    V("P24-data-plane", (SC, {"data_plane.enabled": False}), "P24", "data_plane.enabled", ("data_plane.enabled=true",)),
    V("P24-validation", (SC, {"grpo.val_period": 5}), "P24", "grpo.val_period", ("grpo.val_period=5",)),
    V("P24-val-at-end", (SC, {"grpo.val_at_end": True}), "P24", "grpo.val_at_end", ("grpo.val_at_end=true",)),
    V("P24-dataloaders", (SC, {"data.use_multiple_dataloader": True}), "P24", "data.use_multiple_dataloader", ("not support",)),
    V("P25-no-train-gpus", (SC, {f"{PG}.colocated.enabled": False, f"{RES}.gpus_per_node": 8}), "P25", f"{RES}.gpus_per_node", ("8 - 8 = 0",)),
    V("P25-no-train-nodes", (SC, NONCOLOCATED_2N, {f"{RES}.num_nodes": 2}), "P25", f"{RES}.num_nodes", ("2 - 2 = 0",)),
    V("P25-gg-null", (SC, {f"{PG}.colocated.enabled": False}), "P25", f"{RES}.gpus_per_node", ("got None",)),
    V("P26-groups", (SC, {"async_rl": ABSENT}), "P26", "grpo.num_prompts_per_step", ("num_prompts_per_step=8 < async_rl.min_groups_for_streaming_train=32",)),
    V("P26-gbs", (SC, {"policy.train_global_batch_size": 64}), "P26", "policy.train_global_batch_size", ("8 x 4 = 32, got 64",)),
    V("P26-ready-first", (SC, {"async_rl.sampler.name": "ready_first", "loss_fn.force_on_policy_ratio": True}), "P26", "loss_fn.use_importance_sampling_correction", ("'ready_first'",)),
    V("P26-ready-first-force", (SC, {"async_rl.sampler.name": "ready_first", "loss_fn.use_importance_sampling_correction": True, "loss_fn.force_on_policy_ratio": True}), "P26", "loss_fn.force_on_policy_ratio", ("force_on_policy_ratio=true",)),
    V("P26-metric", (SC, {"checkpointing": {"enabled": True, "metric_name": "val:accuracy"}}), "P26", "checkpointing.metric_name", ("'val:accuracy'", "'train:'")),
    V("P26-kl", (SC, {"grpo.skip_reference_policy_logprobs_calculation": True}), "P26", "loss_fn.reference_policy_kl_penalty", ("skip_reference_policy_logprobs_calculation=true",)),
    V("P27-max-val", (GYM, {"grpo.max_val_samples": ABSENT}), "P27", "grpo.max_val_samples", ("max_val_samples=256", "null")),
    V("P27-gym-flag", ({"grpo.max_val_samples": None},), "P27", "env.should_use_nemo_gym", ("should_use_nemo_gym=true",), PreflightOptions(environ={}, entrypoint="grpo-gym")),
    V("P27-video", (GYM, {f"{VC}.video": {"num_frames": 8}}), "P27", f"{VK}.limit_mm_per_prompt.video", ("must be a mapping", "<absent>")),
    V("W1", ({f"{VC}.max_model_len": 512},), "W1", f"{VC}.max_model_len", ("max_total_sequence_length=1024 > vllm_cfg.max_model_len=512",), severity="warning"),
    V("N2", (R3,), "N2", "policy.router_replay.enabled", ("no routed experts",), PreflightOptions(environ={}, model_config={"num_experts": 0})),
    V("N3", (R3,), "N3", f"{VC}.enable_prefix_caching", ("compute capability 7.5",), PreflightOptions(environ={}, vllm_version=(0, 32), gpu_capability=(7, 5))),
    V("N7", (NONCOLOCATED_2N, MEGATRON, {f"{PG}.refit_transport": "vllm_zmq_sparse"}), "N7", f"{VC}.load_format", ("'GptOssForCausalLM'", "got 'auto'"), PreflightOptions(environ={}, model_config={"architectures": ["GptOssForCausalLM"], "quantization_config": {"quant_method": "mxfp4"}})),
]
# fmt: on

# fmt: off
PASSING = [
    OK("base", ()),
    OK("gym", (GYM,)),
    OK("sc", (SC,)),
    OK("megatron", (MEGATRON,)),
    OK("P1-sc-no-kv", (SC, {f"{VC}.kv_cache_dtype": ABSENT})),
    OK("P1-gym-no-draft", (GYM, {"policy.draft.enabled": ABSENT})),
    OK("P3-megatron-draft", (MEGATRON, {"policy.draft.enabled": True})),
    OK("P4-v1-plain", ({"policy.dtensor_cfg._v2": False, "policy.dtensor_cfg.dp_replicate_size": 1},)),
    OK("P4-megatron-lora", (MEGATRON, {"policy.dtensor_cfg._v2": False, "policy.dtensor_cfg.lora_cfg.enabled": True})),
    OK("P5-gym-override", (GYM, {f"{PG}.val_temperature": 0.7, f"{PG}.val_top_k": 0})),
    OK("P5-absent-train", ({f"{PG}.top_k": ABSENT},)),
    OK("P5-absent-val", ({f"{PG}.val_temperature": ABSENT, f"{PG}.val_top_k": ABSENT},)),
    OK("P6-pass-k", ({"grpo.stop_at_validation_metric": "pass_k", "grpo.stop_at_validation_threshold": 0.5, "grpo.val_num_generations_per_prompt": 4},)),
    OK("P7-dynamic", ({"grpo.use_dynamic_sampling": True, "grpo.batch_multiplier": 1.5, "data.use_multiple_dataloader": True, "data.num_prompts_per_dataloader": 4},)),
    OK("P7-dataloaders", ({"data.use_multiple_dataloader": True, "data.num_prompts_per_dataloader": 4},)),
    OK("P8-fused", (MEGATRON, {"policy.megatron_cfg.use_fused_linear_logprobs": True, f"{PG}.top_k": 0, f"{PG}.val_top_k": 0})),
    OK("P9", ({"loss_fn.force_on_policy_ratio": True, "policy.train_global_batch_size": 32},)),
    OK("P9-sc-skipped", (SC, {"loss_fn.force_on_policy_ratio": True})),
    OK("P10-zero-penalty", ({"grpo.skip_reference_policy_logprobs_calculation": True, "loss_fn.reference_policy_kl_penalty": 0},)),
    OK("P10-threshold", ({"loss_fn.use_kl_in_reward": True, "loss_fn.force_on_policy_ratio": True, "grpo.seq_logprob_error_threshold": 0.1},)),
    OK("P11-gym-forced", (GYM, {"reward_penalties.penalize_unwanted_tokens": True, f"{VC}.async_engine": False})),
    OK("P11-gym-explicit", (GYM, {f"{VC}.async_engine": True, f"{VC}.expose_http_server": True}), PreflightOptions(environ={}, entrypoint="grpo")),
    OK("P11-sc-penalty", (SC, {"reward_penalties.penalize_unwanted_tokens": True})),
    OK("P12", ({"grpo.deduplicate_multimodal_data": True},)),
    OK("P13-one-node", ({f"{PG}.colocated.enabled": False, f"{RES}.gpus_per_node": 4, f"{VC}.tensor_parallel_size": 4, "policy.dtensor_cfg.tensor_parallel_size": 2},)),
    OK("P13-two-nodes", (NONCOLOCATED_2N,)),
    OK("P13-rm-one-node", ({"data.default.env_name": "reward_model", "env.reward_model.resources": {"num_nodes": 1, "gpus_per_node": 2}, f"{VC}.tensor_parallel_size": 2, "policy.dtensor_cfg.tensor_parallel_size": 3},)),
    OK("P13-rm-nodes", ({"cluster.num_nodes": 3, "data.default.env_name": "reward_model", "env.reward_model.resources": {"num_nodes": 1, "gpus_per_node": 8}},)),
    OK("P14-fp8-kv", (MEGATRON, {f"{VC}.precision": "fp8", "loss_fn.use_importance_sampling_correction": True, f"{VC}.kv_cache_dtype": "fp8"})),
    OK("P14-sc-not-checked", (SC, {f"{VC}.precision": "fp8"})),
    OK("P15", (NONCOLOCATED_2N, MEGATRON, {f"{PG}.refit_transport": "vllm_s3_sparse", f"{PG}.refit_cfg.sparse.storage.s3_bucket": "bucket"})),
    OK("P16-other-kwargs", ({f"{VK}.enable_chunked_prefill": False, f"{VK}.kv_cache_memory_bytes": 1 << 30},) ),
    OK("P17-tp-pp", ({f"{VC}.tensor_parallel_size": 2, f"{VC}.pipeline_parallel_size": 2, f"{VC}.async_engine": True},)),
    OK("P17-expert-groups", ({f"{VC}.tensor_parallel_size": 2, f"{VC}.expert_parallel_size": 8},)),
    OK("P17-big-engine", (NONCOLOCATED_2N, {"cluster.num_nodes": 3, f"{RES}.num_nodes": 2, f"{VC}.tensor_parallel_size": 16, f"{VC}.async_engine": True})),
    OK("P18-megatron", (MEGATRON, {"policy.megatron_cfg.tensor_model_parallel_size": 2, "policy.megatron_cfg.pipeline_model_parallel_size": 2, "policy.megatron_cfg.context_parallel_size": 2})),
    OK("P19-equal", ({"policy.dtensor_cfg.tensor_parallel_size": 4, "policy.logprob_batch_size": 2},)),
    OK("P19-option", ({"policy.dtensor_cfg.tensor_parallel_size": 4, "policy.logprob_batch_size": 4},), PreflightOptions(environ={}, ignore_tp_accuracy_check=True)),
    OK("P19-environ", ({"policy.dtensor_cfg.tensor_parallel_size": 4, "policy.logprob_batch_size": 4},), PreflightOptions(environ={"NRL_IGNORE_TP_ACCURACY_CHECK": "1"})),
    OK("P19-force", ({"policy.dtensor_cfg.tensor_parallel_size": 4, "policy.logprob_batch_size": 4, "loss_fn.force_on_policy_ratio": True},)),
    OK("P19-empty-environ", ({"policy.dtensor_cfg.tensor_parallel_size": 2, "policy.logprob_batch_size": 4},), PreflightOptions(environ={"NRL_IGNORE_TP_ACCURACY_CHECK": ""})),
    OK("P20-P21-r3", (R3,)),
    OK("P21-032", (R3, {f"{VC}.enable_prefix_caching": True, f"{VK}.kv_transfer_config": {"kv_connector": "LMCacheConnectorV1"}, f"{VK}.speculative_config": {"method": "dflash", "num_speculative_tokens": 3, "parallel_drafting": True}}), V32),
    OK("P21-030", (R3, {f"{VC}.enable_prefix_caching": False}), V30),
    OK("P22", (NONCOLOCATED_2N, MEGATRON, {f"{PG}.refit_transport": "nccl_reshard"})),
    OK("P22-fp8-param", (NONCOLOCATED_2N, MEGATRON, {f"{PG}.refit_transport": "nccl_reshard", f"{VC}.precision": "fp8", "loss_fn.use_importance_sampling_correction": True, "policy.megatron_cfg.fp8_cfg": {"fp8_param": True, "fp8_recipe": "blockwise"}})),
    OK("P22-fp8-mx", (NONCOLOCATED_2N, MEGATRON, {f"{PG}.refit_transport": "nccl_reshard", f"{VC}.precision": "fp8", "loss_fn.use_importance_sampling_correction": True, f"{VC}.is_mx": True})),
    OK("P23", (NONCOLOCATED_2N, {"grpo.async_grpo": {"enabled": True, "max_trajectory_age_steps": 4, "in_flight_weight_updates": True}, f"{VC}.async_engine": True, "loss_fn.use_importance_sampling_correction": True})),
    OK("P25-noncolocated", (SC, NONCOLOCATED_2N, {f"{RES}.num_nodes": None, f"{RES}.gpus_per_node": 4})),
    OK("P26-ready-first", (SC, {"async_rl.sampler.name": "ready_first", "loss_fn.use_importance_sampling_correction": True, "checkpointing": {"enabled": True, "metric_name": "train:reward"}})),
    OK("P27-video", (GYM, {f"{VC}.video": {"num_frames": 8}, f"{VK}.limit_mm_per_prompt": {"video": {"count": 1}}})),
    OK("W1-equal", ({f"{VC}.max_model_len": 1024, "policy.max_total_sequence_length": 1024},)),
    OK("N2-moe", (R3,), PreflightOptions(environ={}, model_config={"text_config": {"num_local_experts": 8}})),
    OK("N3-ampere", (R3,), PreflightOptions(environ={}, vllm_version=(0, 32), gpu_capability=(8, 0))),
    OK("N7-dummy", (NONCOLOCATED_2N, MEGATRON), PreflightOptions(environ={}, model_config={"architectures": ["Mistral3ForConditionalGeneration"], "quantization_config": {}})),
]
# fmt: on


@pytest.mark.parametrize("case", VIOLATIONS, ids=[case.id for case in VIOLATIONS])
def test_violation_is_reported(case: Violation, recipe: Recipe) -> None:
    """A recipe breaking a rule gets that rule's finding at the path, with the values and the fix in the message."""
    report = preflight(recipe(*case.layers), case.options)
    matching = [f for f in report.findings if f.code == case.code and f.path == case.path]
    assert matching, [(f.code, f.path, f.message) for f in report.findings]
    finding = matching[0]
    assert finding.severity == case.severity
    for fragment in case.fragments:
        assert fragment in finding.message, finding.message
    assert len(finding.message) <= 2000


@pytest.mark.parametrize("case", PASSING, ids=[case.id for case in PASSING])
def test_passing_recipe_has_no_error(case: Passing, recipe: Recipe) -> None:
    """A recipe that exercises a rule's condition correctly gets no error finding."""
    report = preflight(recipe(*case.layers), case.options)
    assert report.in_scope
    assert report.errors == (), [(f.code, f.path, f.message) for f in report.errors]


def test_absent_key_finding_has_absent_value(recipe: Recipe) -> None:
    """A P1 finding for an absent key carries ABSENT as its value, which reads <absent>."""
    report = preflight(recipe({"cluster.num_nodes": ABSENT}), NO_ENV)
    (finding,) = [f for f in report.findings if f.path == "cluster.num_nodes"]
    assert finding.value is ABSENT
    assert repr(finding.value) == "<absent>"


def test_p13_arithmetic_with_deduplicated_teachers(recipe: Recipe) -> None:
    """Non-colocated OPD teachers sharing a checkpoint count once; with deduplication off both take a node."""
    teachers = {
        "on_policy_distillation": {
            "enabled": True,
            "non_colocated_teachers": {"enabled": True},
            "teacher_model_by_agent_name": {"math": "t1", "code": "t2"},
            "default_teacher_cfg": {"model_name": "Qwen/Qwen3-8B", "num_nodes": 1},
        },
        "cluster.num_nodes": 3,
        f"{VC}.async_engine": True,
    }
    assert preflight(recipe(teachers), NO_ENV).errors == ()
    undeduplicated = recipe(
        teachers,
        {"on_policy_distillation.deduplicate_shared_teacher_checkpoints": False, "cluster.num_nodes": 2},
    )
    (finding,) = preflight(undeduplicated, NO_ENV).errors
    assert (finding.code, finding.path) == ("P13", "cluster.num_nodes")
    assert "2 - 2 = 0" in finding.message


def test_p13_teachers_need_async_and_fitting_gpus(recipe: Recipe) -> None:
    """Non-colocated teachers without async rollouts, or wider than a node, are P13 errors at their paths."""
    teachers = {
        "on_policy_distillation": {
            "enabled": True,
            "non_colocated_teachers": {"enabled": True},
            "teacher_model_by_agent_name": {"math": "t1"},
            "teacher_overrides": {"t1": {"gpus_per_node": 16}},
        },
        "cluster.num_nodes": 2,
    }
    paths = {f.path: f.message for f in preflight(recipe(teachers), NO_ENV).errors if f.code == "P13"}
    assert "async rollouts" in paths["on_policy_distillation.non_colocated_teachers.enabled"]
    assert (
        "gpus_per_node=16 > cluster.gpus_per_node=8"
        in paths["on_policy_distillation.teacher_overrides.t1.gpus_per_node"]
    )


def test_p15_lists_every_failed_condition_in_one_finding(recipe: Recipe) -> None:
    """Sparse refit reports one finding naming each unmet precondition."""
    document = recipe(
        {f"{PG}.refit_transport": "vllm_s3_sparse", f"{VC}.precision": "fp8", f"{VC}.kv_cache_dtype": "fp8"}
    )
    (finding,) = [f for f in preflight(document, NO_ENV).findings if f.code == "P15"]
    for fragment in (
        "colocated.enabled",
        "megatron_cfg.enabled",
        "precision must not be fp8",
        "fp8*",
        "s3_bucket",
    ):
        assert fragment in finding.message


def test_p16_unresolved_engine_key_still_collides(recipe: Recipe) -> None:
    """A vllm_kwargs engine key dropped because it did not resolve is still reported (it collides whatever its value)."""
    report = preflight(recipe(), NO_ENV, unresolved=[f"{VK}.seed"])
    assert [(f.code, f.path) for f in report.errors] == [("P16", f"{VK}.seed")]


def test_p17_and_p18_skip_without_layout(recipe: Recipe) -> None:
    """Without a cluster layout (P13 failed) P17 and P18 are reported skipped, not evaluated."""
    report = preflight(recipe({"cluster.gpus_per_node": 0}), NO_ENV)
    assert {s.code for s in report.skipped} >= {"P17", "P18"}
    assert [f.code for f in report.errors] == ["P13"]


def test_p21_without_version_skips_the_version_dependent_part(recipe: Recipe) -> None:
    """Without a vLLM version the 0.30/0.32 checks of P21 are a skipped note, and the common checks still run."""
    report = preflight(
        recipe(R3, {f"{VC}.enable_prefix_caching": False, f"{VK}.prefill_context_parallel_size": 2}), NO_ENV
    )
    assert [(f.code, f.path) for f in report.errors] == [("P21", f"{VK}.prefill_context_parallel_size")]
    (skip,) = [s for s in report.skipped if s.code == "P21"]
    assert "--vllm-version" in skip.reason


def test_p21_later_versions_take_the_032_rules(recipe: Recipe) -> None:
    """A vLLM version after 0.32 applies the 0.32 rules; one between 0.30 and 0.32 applies the 0.30 rules."""
    document = recipe(R3, {f"{VC}.enable_prefix_caching": False})
    later = preflight(document, PreflightOptions(environ={}, vllm_version=(0, 33)))
    between = preflight(document, PreflightOptions(environ={}, vllm_version=(0, 31)))
    assert [f.code for f in later.errors] == ["P21"]
    assert between.errors == ()


# fmt: off
RUNTIME_SKIPS = [
    ("N1", (), "dataset loader"),
    ("N2", (R3,), "--model-config"),
    ("N3", (R3,), "--gpu-capability"),
    ("N4", (R3,), "launch environment"),
    ("N5", (MEGATRON,), "TORCH_CUDA_ARCH_LIST"),
    ("N6", ({"cluster.segment_size": 4},), "Ray cluster"),
    ("N7", (), "--model-config"),
]
# fmt: on


@pytest.mark.parametrize(("code", "layers", "fragment"), RUNTIME_SKIPS, ids=[c for c, _, _ in RUNTIME_SKIPS])
def test_runtime_rule_is_skipped_naming_its_input(
    code: str, layers: tuple[Mapping[str, object], ...], fragment: str, recipe: Recipe
) -> None:
    """A NEEDS-RUNTIME rule that applies is reported skipped, and the reason names the input that would unlock it."""
    report = preflight(recipe(*layers), NO_ENV)
    (skip,) = [s for s in report.skipped if s.code == code]
    assert fragment in skip.reason
    assert all(f.code != code for f in report.findings)


def test_runtime_rules_not_reported_where_they_do_not_apply(recipe: Recipe) -> None:
    """A recipe without validation, router replay, Megatron or segments gets no N1-N6 skip notes."""
    report = preflight(recipe({"grpo.val_period": 0}), NO_ENV)
    assert {s.code for s in report.skipped} == {"N7"}


def test_n3_needs_version_too(recipe: Recipe) -> None:
    """N3 with a GPU capability but no vLLM version stays skipped, naming --vllm-version."""
    report = preflight(recipe(R3), PreflightOptions(environ={}, gpu_capability=(7, 0)))
    (skip,) = [s for s in report.skipped if s.code == "N3"]
    assert "--vllm-version" in skip.reason
    assert "--gpu-capability" not in skip.reason
