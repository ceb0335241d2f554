"""The ``vllm_cfg`` block of the generation section: vLLM engine construction arguments (SPEC §1.1).

Divergence: ``enable_return_routed_experts`` (listed by SPEC §1.1) is not declared: no vLLM worker reads it here,
so :mod:`rl_contracts.config.rules.unknown_keys` reports it as misplaced (P28).
"""

from typing import Annotated, Any, Literal

from pydantic import Field

from ..._internal.config_base import ConfigModel, ForbidExtra
from ..._internal.config_scalars import (
    AtLeastOne,
    ConfigBool,
    ConfigStr,
    EnvValue,
    Fraction,
    KvCacheDtype,
    LogprobsMode,
    NonNegative,
    NullAsAuto,
    NullAsFalse,
    Port,
    PositiveFloat,
    StrictStr,
    StrList,
)

__all__ = ["VllmSpecificArgs", "VllmVideoConfig"]


class VllmVideoConfig(ForbidExtra):
    """Video frame sampling for vision-language models (extra keys forbidden)."""

    sampling_style: Annotated[Literal["nemotron_vl"], StrictStr]
    """Frame sampling style; only ``"nemotron_vl"`` exists."""
    num_frames: AtLeastOne
    """Frames sampled per video, ≥ 1."""
    temporal_patch_size: AtLeastOne
    """Frames merged into one temporal patch, ≥ 1."""


class VllmSpecificArgs(ConfigModel):
    """The ``vllm_cfg`` block: engine construction arguments (extra keys allowed)."""

    tensor_parallel_size: AtLeastOne
    """Tensor-parallel size, ≥ 1 (rules C4, C5)."""
    pipeline_parallel_size: AtLeastOne
    """Pipeline-parallel size, ≥ 1; above 1 it needs ``async_engine`` (rule C3)."""
    expert_parallel_size: AtLeastOne
    """Expert-parallel size, ≥ 1; above 1 a multiple of the tensor-parallel size (rules C4, C5)."""
    gpu_memory_utilization: Fraction
    """Fraction of GPU memory vLLM may use, 0 < x ≤ 1."""
    max_model_len: AtLeastOne
    """Maximum sequence length (prompt + generation), ≥ 1."""
    async_engine: ConfigBool
    """Use vLLM's async engine."""
    kv_cache_dtype: Annotated[
        KvCacheDtype,
        StrictStr,
        NullAsAuto,
    ] = "auto"
    """KV-cache dtype; null or absent reads as ``"auto"``."""
    skip_tokenizer_init: ConfigBool | None = None
    """Runtime-filled: skip tokenizer initialisation in the engine."""
    load_format: ConfigStr | None = None
    """Runtime-filled: ``"dummy"`` for training, ``"auto"`` for eval or sparse refit."""
    precision: ConfigStr | None = None
    """Model weight precision (e.g. ``"bfloat16"``)."""
    video: VllmVideoConfig | None = None
    """Video frame sampling."""
    logprobs_mode: Annotated[LogprobsMode, StrictStr] | None = None
    """Which log-probabilities vLLM returns."""
    enable_prefix_caching: ConfigBool | None = None
    """Enable prefix caching (read by the trainer when building the engine)."""
    fp32_lm_head: ConfigBool | None = None
    """Compute the LM head in fp32."""
    cap_max_tokens_to_context: ConfigBool | None = None
    """Cap ``max_tokens`` so prompt + generation fits ``max_model_len``."""
    is_mx: ConfigBool | None = None
    """The model uses MX (microscaling) formats."""
    enforce_eager: ConfigBool | None = None
    """Disable CUDA graphs."""
    enable_vllm_metrics_logger: ConfigBool | None = None
    """Log vLLM engine metrics periodically."""
    use_tqdm: ConfigBool | None = None
    """Show tqdm progress bars."""
    expose_http_server: ConfigBool | None = None
    """Expose an OpenAI-compatible HTTP server."""
    reset_encoder_cache_after_weight_update: ConfigBool | None = None
    """Reset the multimodal encoder cache after each refit (rule C8)."""
    use_deep_gemm: ConfigBool | None = None
    """Use DeepGEMM kernels."""
    refit_with_reload_api: Annotated[ConfigBool, NullAsFalse] = False
    """Opt in to vLLM's native ``reload_weights`` refit (SPEC §1.4); null reads as false."""
    vllm_metrics_logger_interval: PositiveFloat | None = None
    """Metrics logging interval in seconds, > 0."""
    num_first_layers_in_bf16: NonNegative | None = None
    """Number of first layers kept in bf16 under quantization, ≥ 0."""
    num_last_layers_in_bf16: NonNegative | None = None
    """Number of last layers kept in bf16 under quantization, ≥ 0."""
    quantization_ignored_layer_kws: StrList | None = None
    """Deprecated spelling of ``quantization_ignore_patterns``."""
    quantization_ignore_patterns: StrList | None = None
    """Layer-name patterns quantization leaves alone."""
    http_refit_api_key_env_var: ConfigStr | None = None
    """Environment variable holding the HTTP refit API key."""
    http_refit_server_port: Port | None = None
    """Port of the HTTP refit server, 1–65535."""
    zmq_refit_server_port: Port | None = None
    """Port of the ZMQ refit server, 1–65535."""
    http_server_serving_chat_kwargs: dict[ConfigStr, Any] | None = None
    """Keyword arguments for vLLM's chat serving, passed through."""
    tool_parser_plugin: ConfigStr | None = None
    """Tool-call parser plugin."""
    reasoning_parser_plugin: ConfigStr | None = None
    """Reasoning parser plugin."""
    env_vars: dict[ConfigStr, EnvValue] | None = None
    """Environment variables for the engine; str, int or float values (numbers are converted with ``str()``).

    Divergence: the reference exports every value with ``str(v)``; bool and null values are rejected here.
    """
    routed_experts_transport: ConfigStr | None = Field(default=None, alias="_routed_experts_transport")
    """Runtime-filled (``_routed_experts_transport``): how routed experts travel (seen value ``"ray"``)."""
    routed_experts_store_run_instance_id: ConfigStr | None = Field(
        default=None, alias="_routed_experts_store_run_instance_id"
    )
    """Runtime-filled (``_routed_experts_store_run_instance_id``): run instance id of the routed-experts store."""
