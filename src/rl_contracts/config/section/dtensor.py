"""The DTensor (FSDP2) training backend of a policy: ``policy.dtensor_cfg`` with its LoRA, MoE-parallelizer and
Automodel settings (NeMo RL's ``DTensorConfig | DTensorConfigDisabled``)."""

from typing import Annotated, Literal

from pydantic import Field

from ..._internal.config_scalars import (
    AtLeastOne,
    ConfigBool,
    ConfigFloat,
    ConfigInt,
    ConfigStr,
    StrictStr,
    StrList,
)
from .variants import DISABLED, ENABLED, SWITCH, DisabledSection, Omittable, SectionModel, StrictTrue

__all__ = [
    "AutomodelBackendConfig",
    "AutomodelFreezeConfig",
    "AutomodelKwargs",
    "DTensorConfig",
    "DTensorSection",
    "LoRAConfig",
    "LoRASection",
    "MoEParallelizerOptions",
]


class MoEParallelizerOptions(SectionModel):
    """``dtensor_cfg.moe_parallelizer``: how Automodel parallelizes mixture-of-experts layers."""

    ignore_router_for_ac: Omittable[ConfigBool] = None
    """Leave the router out of activation checkpointing."""
    reshard_after_forward: Omittable[ConfigBool] = None
    """Reshard expert weights after the forward pass."""
    lm_head_precision: ConfigStr | None = None
    """Precision of the LM head (e.g. ``"float32"``); null keeps the model's."""
    wrap_outer_model: Omittable[ConfigBool] = None
    """Wrap the outer model in FSDP as well."""


class LoRAConfig(SectionModel):
    """``dtensor_cfg.lora_cfg`` when enabled: LoRA adapters trained instead of the full model."""

    enabled: StrictTrue
    """``true``: train LoRA adapters."""
    target_modules: StrList
    """Module-name patterns that get adapters. Required."""
    exclude_modules: StrList
    """Module-name patterns that never get adapters. Required."""
    match_all_linear: Omittable[ConfigBool] = None
    """Put adapters on every linear layer."""
    dim: AtLeastOne
    """LoRA rank, ≥ 1. Required."""
    alpha: ConfigInt
    """LoRA scaling numerator. Required."""
    dropout: ConfigFloat
    """Dropout probability on the adapter input. Required."""
    dropout_position: Annotated[Literal["pre", "post"], StrictStr]
    """Apply dropout before (``pre``) or after (``post``) the adapter. Required."""
    lora_A_init: ConfigStr
    """Initialisation of the A matrix (e.g. ``"xavier"``). Required."""
    use_triton: Omittable[ConfigBool] = None
    """Use the Triton LoRA kernels."""


LoRASection = Annotated[Annotated[LoRAConfig, ENABLED] | Annotated[DisabledSection, DISABLED], SWITCH]
"""``dtensor_cfg.lora_cfg``: :class:`LoRAConfig`, or ``enabled: false``."""


class AutomodelBackendConfig(SectionModel):
    """``automodel_kwargs.backend``: Automodel's kernel backends (a ``_target_`` class and its options)."""

    target: ConfigStr = Field(alias="_target_")
    """``_target_``: the backend class to instantiate. Required."""
    attn: Omittable[ConfigStr] = None
    """Attention kernel backend."""
    linear: Omittable[ConfigStr] = None
    """Linear-layer kernel backend."""
    rms_norm: Omittable[ConfigStr] = None
    """RMSNorm kernel backend."""
    experts: Omittable[ConfigStr] = None
    """Expert (MoE) kernel backend."""
    dispatcher: Omittable[ConfigStr] = None
    """MoE token dispatcher."""
    enable_deepep: Omittable[ConfigBool] = None
    """Use DeepEP for expert communication."""
    fake_balanced_gate: Omittable[ConfigBool] = None
    """Replace the router with a balanced fake gate (benchmarking)."""
    enable_hf_state_dict_adapter: Omittable[ConfigBool] = None
    """Convert state dicts from and to the Hugging Face layout."""
    enable_fsdp_optimizations: Omittable[ConfigBool] = None
    """Turn on Automodel's FSDP optimisations."""
    gate_precision: Omittable[ConfigStr] = None
    """Precision of the MoE gate."""


class AutomodelFreezeConfig(SectionModel):
    """``automodel_kwargs.freeze_config``: parts of a multimodal model kept frozen."""

    freeze_vision_tower: Omittable[ConfigBool] = None
    """Keep the vision tower frozen."""
    freeze_audio_tower: Omittable[ConfigBool] = None
    """Keep the audio tower frozen."""
    freeze_language_model: Omittable[ConfigBool] = None
    """Keep the language model frozen."""


class AutomodelKwargs(SectionModel):
    """``dtensor_cfg.automodel_kwargs``: options passed to Automodel when it builds the model."""

    use_liger_kernel: Omittable[ConfigBool] = None
    """Use the Liger kernels."""
    backend: Omittable[AutomodelBackendConfig] = None
    """Kernel backends."""
    freeze_config: Omittable[AutomodelFreezeConfig] = None
    """Frozen parts of the model."""
    force_hf: Omittable[ConfigBool] = None
    """Use the Hugging Face implementation even where Automodel has its own."""


class DTensorConfig(SectionModel):
    """``policy.dtensor_cfg`` when enabled: the DTensor (FSDP2) training backend."""

    enabled: StrictTrue
    """``true``: train with DTensor (exactly one of ``dtensor_cfg``/``megatron_cfg`` is enabled)."""
    env_vars: dict[ConfigStr, ConfigStr] | None = None
    """Environment variables of the training workers (string values)."""
    v2: Omittable[ConfigBool] = Field(default=None, alias="_v2")
    """``_v2``: use the DTensor v2 worker (Automodel)."""
    tensor_parallel_size: AtLeastOne
    """Tensor-parallel size, ≥ 1. Required."""
    context_parallel_size: AtLeastOne
    """Context-parallel size, ≥ 1. Required."""
    expert_parallel_size: Omittable[AtLeastOne] = None
    """Expert-parallel size, ≥ 1."""
    dp_replicate_size: Omittable[AtLeastOne] = None
    """Replicated (HSDP) data-parallel size, ≥ 1."""
    sequence_parallel: ConfigBool
    """Sequence parallelism. Required."""
    activation_checkpointing: ConfigBool
    """Activation checkpointing. Required."""
    cpu_offload: ConfigBool
    """Offload parameters and optimizer state to CPU. Required."""
    custom_parallel_plan: ConfigStr | None = None
    """Import path of a custom parallel plan; null for the default."""
    defer_fsdp_grad_sync: Omittable[ConfigBool] = None
    """Synchronise FSDP gradients only at the last micro-batch."""
    moe_parallelizer: Omittable[MoEParallelizerOptions] = None
    """Mixture-of-experts parallelizer options."""
    lora_cfg: Omittable[LoRASection] = None
    """LoRA adapters (``enabled: false`` turns them off)."""
    automodel_kwargs: Omittable[AutomodelKwargs] = None
    """Options passed to Automodel."""
    clear_cache_every_n_steps: ConfigInt | None = None
    """Empty the CUDA cache every n steps; null never."""


DTensorSection = Annotated[Annotated[DTensorConfig, ENABLED] | Annotated[DisabledSection, DISABLED], SWITCH]
"""``policy.dtensor_cfg``: :class:`DTensorConfig`, or ``enabled: false``."""
