"""The Megatron training backend of a policy: ``policy.megatron_cfg`` with its PEFT, optimizer, scheduler,
data-parallel, checkpoint and FP8 settings (NeMo RL's ``MegatronConfig | MegatronConfigDisabled``)."""

from typing import Annotated, Literal

from ..._internal.config_scalars import (
    AtLeastOne,
    ConfigBool,
    ConfigFloat,
    ConfigInt,
    ConfigStr,
    NonNegative,
    StrictStr,
    StrList,
)
from .variants import (
    DISABLED,
    ENABLED,
    SWITCH,
    DisabledSection,
    Omittable,
    OpenMapping,
    SectionModel,
    StrictTrue,
)

__all__ = [
    "Fp8Config",
    "MegatronCheckpointConfig",
    "MegatronConfig",
    "MegatronDDPConfig",
    "MegatronOptimizerConfig",
    "MegatronPeftConfig",
    "MegatronPeftSection",
    "MegatronSchedulerConfig",
    "MegatronSection",
]


class MegatronPeftConfig(SectionModel):
    """``megatron_cfg.peft`` when enabled: LoRA adapters trained through Megatron-Bridge."""

    enabled: StrictTrue
    """``true``: train LoRA adapters."""
    target_modules: StrList
    """Module-name patterns that get adapters. Required."""
    exclude_modules: StrList
    """Module-name patterns that never get adapters. Required."""
    dim: AtLeastOne
    """LoRA rank, ≥ 1. Required."""
    alpha: ConfigInt
    """LoRA scaling numerator. Required."""
    dropout: ConfigFloat
    """Dropout probability on the adapter input. Required."""
    dropout_position: Annotated[Literal["pre", "post"], StrictStr]
    """Apply dropout before (``pre``) or after (``post``) the adapter. Required."""
    lora_A_init_method: ConfigStr
    """Initialisation of the A matrix. Required."""
    lora_B_init_method: ConfigStr
    """Initialisation of the B matrix. Required."""
    a2a_experimental: ConfigBool
    """Experimental all-to-all adapter communication. Required."""
    lora_dtype: ConfigStr | None
    """Adapter dtype; null for the model's. Required, may be null."""


MegatronPeftSection = Annotated[
    Annotated[MegatronPeftConfig, ENABLED] | Annotated[DisabledSection, DISABLED], SWITCH
]
"""``megatron_cfg.peft``: :class:`MegatronPeftConfig`, or ``enabled: false``."""


class MegatronOptimizerConfig(SectionModel):
    """``megatron_cfg.optimizer``: Megatron's optimizer."""

    optimizer: ConfigStr
    """Optimizer name (``"adam"``, ``"sgd"``). Required."""
    lr: ConfigFloat
    """Peak learning rate. Required."""
    min_lr: ConfigFloat
    """Learning rate at the end of decay. Required."""
    weight_decay: ConfigFloat
    """Weight decay. Required."""
    bf16: ConfigBool
    """Train in bf16. Required."""
    fp16: ConfigBool
    """Train in fp16. Required."""
    params_dtype: ConfigStr
    """Dtype of the main parameters (e.g. ``"float32"``). Required."""
    adam_beta1: ConfigFloat
    """Adam β1. Required."""
    adam_beta2: ConfigFloat
    """Adam β2. Required."""
    adam_eps: ConfigFloat
    """Adam ε. Required."""
    sgd_momentum: ConfigFloat
    """SGD momentum. Required."""
    use_distributed_optimizer: ConfigBool
    """Shard the optimizer state across data-parallel ranks. Required."""
    use_precision_aware_optimizer: ConfigBool
    """Use the precision-aware optimizer. Required."""
    clip_grad: ConfigFloat
    """Gradient-norm clip. Required."""
    optimizer_cpu_offload: ConfigBool
    """Offload the optimizer to CPU. Required."""
    optimizer_offload_fraction: ConfigFloat
    """Fraction of the optimizer offloaded to CPU. Required."""
    overlap_cpu_optimizer_d2h_h2d: Omittable[ConfigBool] = None
    """Overlap the CPU optimizer's device-host copies."""


class MegatronSchedulerConfig(SectionModel):
    """``megatron_cfg.scheduler``: learning-rate and weight-decay schedules."""

    start_weight_decay: ConfigFloat
    """Weight decay at the start. Required."""
    end_weight_decay: ConfigFloat
    """Weight decay at the end. Required."""
    weight_decay_incr_style: ConfigStr
    """How weight decay moves from start to end (``"constant"``, ``"linear"``, ...). Required."""
    lr_decay_style: ConfigStr
    """Learning-rate decay style (``"constant"``, ``"cosine"``, ...). Required."""
    lr_decay_iters: ConfigInt | None = None
    """Iterations of learning-rate decay; null for the whole run."""
    lr_warmup_iters: NonNegative
    """Warm-up iterations, ≥ 0. Required."""
    lr_warmup_init: ConfigFloat
    """Learning rate at the start of warm-up. Required."""


class MegatronDDPConfig(SectionModel):
    """``megatron_cfg.distributed_data_parallel_config``: Megatron's data-parallel wrapper."""

    grad_reduce_in_fp32: ConfigBool
    """Reduce gradients in fp32. Required."""
    overlap_grad_reduce: ConfigBool
    """Overlap the gradient reduction with the backward pass. Required."""
    overlap_param_gather: ConfigBool
    """Overlap the parameter all-gather with the forward pass. Required."""
    use_custom_fsdp: ConfigBool
    """Use Megatron's FSDP. Required."""
    data_parallel_sharding_strategy: ConfigStr
    """Sharding strategy of the data-parallel wrapper. Required."""


class MegatronCheckpointConfig(SectionModel):
    """``megatron_cfg.checkpoint``: Megatron distributed-checkpoint options."""

    async_save: Omittable[ConfigBool] = None
    """Save checkpoints asynchronously."""
    ckpt_assume_constant_structure: Omittable[ConfigBool] = None
    """Assume the checkpoint structure does not change between saves."""
    ckpt_fully_parallel_save_process_group: Omittable[ConfigStr] = None
    """Process group of fully parallel saves."""
    ckpt_fully_parallel_load_process_group: Omittable[ConfigStr] = None
    """Process group of fully parallel loads."""
    ckpt_fully_parallel_load_exchange_algo: Omittable[ConfigStr] = None
    """Exchange algorithm of fully parallel loads."""


class Fp8Config(SectionModel):
    """``megatron_cfg.fp8_cfg``: FP8 training."""

    enabled: ConfigBool
    """Train in FP8. Required."""
    fp8: Omittable[ConfigStr] = None
    """FP8 format (``"e4m3"``, ``"hybrid"``)."""
    fp8_recipe: Omittable[ConfigStr] = None
    """FP8 scaling recipe (``"tensorwise"``, ``"blockwise"``, ...)."""
    fp8_param: Omittable[ConfigBool] = None
    """Keep parameters in FP8."""
    force_clear_fp8_caches: Omittable[ConfigBool] = None
    """Clear FP8 caches after each step."""


class MegatronConfig(SectionModel):
    """``policy.megatron_cfg`` when enabled: the Megatron training backend."""

    enabled: StrictTrue
    """``true``: train with Megatron (exactly one of ``dtensor_cfg``/``megatron_cfg`` is enabled)."""
    env_vars: dict[ConfigStr, ConfigStr] | None = None
    """Environment variables of the training workers (string values)."""
    model_overrides: Omittable[OpenMapping] = None
    """Model-provider attributes overridden before the model is built (open mapping)."""
    empty_unused_memory_level: NonNegative
    """How aggressively Megatron empties unused memory (0, 1 or 2). Required."""
    activation_checkpointing: ConfigBool
    """Activation checkpointing. Required."""
    recompute_granularity: Omittable[Annotated[Literal["full", "selective"], StrictStr]] = None
    """Recompute granularity of activation checkpointing."""
    recompute_modules: StrList | None = None
    """Modules recomputed under selective recompute."""
    tensor_model_parallel_size: AtLeastOne
    """Tensor-parallel size, ≥ 1. Required."""
    pipeline_model_parallel_size: AtLeastOne
    """Pipeline-parallel size, ≥ 1. Required."""
    num_layers_in_first_pipeline_stage: AtLeastOne | None
    """Layers in the first pipeline stage; null for an even split. Required, may be null."""
    num_layers_in_last_pipeline_stage: AtLeastOne | None
    """Layers in the last pipeline stage; null for an even split. Required, may be null."""
    context_parallel_size: AtLeastOne
    """Context-parallel size, ≥ 1. Required."""
    radio_force_cpe_eval_mode: Omittable[ConfigBool] = None
    """Keep RADIO's CPE in eval mode."""
    freeze_vision_model: Omittable[ConfigBool] = None
    """Keep the vision model frozen."""
    freeze_vision_projection: Omittable[ConfigBool] = None
    """Keep the vision projection frozen."""
    freeze_sound_encoder: Omittable[ConfigBool] = None
    """Keep the sound encoder frozen."""
    freeze_sound_projection: Omittable[ConfigBool] = None
    """Keep the sound projection frozen."""
    pipeline_dtype: ConfigStr
    """Dtype of pipeline communication. Required."""
    sequence_parallel: ConfigBool
    """Sequence parallelism. Required."""
    freeze_moe_router: ConfigBool
    """Keep the MoE router frozen. Required."""
    expert_tensor_parallel_size: AtLeastOne
    """Expert tensor-parallel size, ≥ 1. Required."""
    expert_model_parallel_size: AtLeastOne
    """Expert-parallel size, ≥ 1. Required."""
    defer_fp32_logits: Omittable[ConfigBool] = None
    """Cast logits to fp32 only where needed."""
    apply_rope_fusion: ConfigBool
    """Fused rotary embeddings. Required."""
    bias_activation_fusion: ConfigBool
    """Fused bias and activation. Required."""
    force_reconvert_from_hf: Omittable[ConfigBool] = None
    """Convert the Hugging Face checkpoint again even when a converted one exists."""
    attention_backend: Omittable[ConfigStr] = None
    """Attention backend (``"flash"``, ``"fused"``, ...)."""
    moe_per_layer_logging: ConfigBool
    """Log MoE statistics per layer. Required."""
    moe_enable_deepep: ConfigBool
    """Use DeepEP for expert communication. Required."""
    moe_token_dispatcher_type: ConfigStr
    """MoE token dispatcher (``"alltoall"``, ``"allgather"``, ``"flex"``). Required."""
    inference_moe_token_dispatcher_type: Omittable[ConfigStr] = None
    """MoE token dispatcher during inference."""
    inference_grouped_gemm_backend: Omittable[ConfigStr] = None
    """Grouped-GEMM backend during inference."""
    moe_router_num_groups: AtLeastOne | None = None
    """Router groups of group-limited routing; null for none."""
    moe_router_group_topk: AtLeastOne | None = None
    """Groups each token may route to; null for none."""
    transformer_impl: Omittable[ConfigStr] = None
    """Transformer implementation (``"transformer_engine"``, ``"local"``)."""
    cuda_graph_impl: Omittable[ConfigStr] = None
    """CUDA-graph implementation."""
    cuda_graph_modules: Omittable[ConfigStr | StrList] = None
    """Modules captured in CUDA graphs (a name or a list)."""
    cuda_graph_warmup_steps: Omittable[NonNegative] = None
    """Warm-up steps before CUDA-graph capture, ≥ 0."""
    moe_pad_experts_for_cuda_graph_inference: Omittable[ConfigBool] = None
    """Pad experts so inference can use CUDA graphs."""
    moe_shared_expert_overlap: ConfigBool
    """Overlap the shared expert with dispatch. Required."""
    fine_grained_activation_offloading: Omittable[ConfigBool] = None
    """Offload activations of chosen modules."""
    offload_modules: StrList | None = None
    """Modules whose activations are offloaded."""
    use_gloo_process_groups: Omittable[ConfigBool] = None
    """Create Gloo process groups as well."""
    moe_grouped_gemm: Omittable[ConfigBool] = None
    """Grouped GEMM for experts."""
    moe_flex_dispatcher_backend: Omittable[ConfigStr] = None
    """Backend of the flex dispatcher."""
    moe_hybridep_num_sms: Omittable[AtLeastOne] = None
    """SMs used by HybridEP, ≥ 1."""
    hybridep_num_ranks_per_nvlink_domain: Omittable[AtLeastOne] = None
    """Ranks per NVLink domain for HybridEP, ≥ 1."""
    hybridep_use_mnnvl: Omittable[ConfigBool] = None
    """HybridEP over multi-node NVLink."""
    peft: Omittable[MegatronPeftSection] = None
    """LoRA adapters (``enabled: false`` turns them off)."""
    optimizer: MegatronOptimizerConfig
    """The optimizer. Required."""
    scheduler: MegatronSchedulerConfig
    """Learning-rate and weight-decay schedules. Required."""
    distributed_data_parallel_config: MegatronDDPConfig
    """The data-parallel wrapper. Required."""
    checkpoint: Omittable[MegatronCheckpointConfig] = None
    """Distributed-checkpoint options."""
    gradient_accumulation_fusion: Omittable[ConfigBool] = None
    """Fuse gradient accumulation into the weight-gradient GEMM."""
    use_fused_weighted_squared_relu: Omittable[ConfigBool] = None
    """Fused weighted squared-ReLU kernel."""
    use_fused_linear_logprobs: Omittable[ConfigBool] = None
    """Compute log-probabilities fused with the LM head (rule P8)."""
    fused_linear_logprobs_chunk_size: Omittable[AtLeastOne] = None
    """Chunk size of fused linear log-probabilities, ≥ 1."""
    mtp_num_layers: Omittable[NonNegative] = None
    """Multi-token-prediction layers, ≥ 0."""
    mtp_loss_scaling_factor: Omittable[ConfigFloat] = None
    """Weight of the multi-token-prediction loss."""
    mtp_use_repeated_layer: Omittable[ConfigBool] = None
    """Reuse one layer for every MTP depth."""
    mtp_detach_heads: Omittable[ConfigBool] = None
    """Detach the MTP heads from the main graph."""
    clear_memory_caches_before_refit: Omittable[ConfigBool] = None
    """Empty memory caches before each refit."""
    fp8_cfg: Omittable[Fp8Config] = None
    """FP8 training."""
    freeze_config: Omittable[OpenMapping] = None
    """Parts of the model kept frozen (open mapping)."""


MegatronSection = Annotated[Annotated[MegatronConfig, ENABLED] | Annotated[DisabledSection, DISABLED], SWITCH]
"""``policy.megatron_cfg``: :class:`MegatronConfig`, or ``enabled: false``."""
