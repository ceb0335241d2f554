"""Pydantic models of the generation section of a recipe (``policy.generation``) and its cross-field rules.

SPEC §1.1 (fields, scalar typing, "Req." semantics, underscore keys, extra-key policy) and §1.2 (rules C1–C11).

- Scalars are strict: :data:`ConfigBool` takes only ``bool``, :data:`ConfigInt` only a Python ``int`` (never a
  bool, float, str or ``numpy`` integer), :data:`ConfigFloat` an ``int`` or ``float`` (never a bool or str, never
  NaN or infinity), :data:`ConfigStr` only ``str``.  Lists take a ``list`` or ``tuple`` only.
- Keys spelled with a leading ``_`` are exposed as attributes without it; both spellings are accepted on input
  (not both at once), and ``model_dump(by_alias=True, exclude_unset=True)`` writes the ``_`` spelling.
- Cross-field rules run after field validation and report *every* violation at once inside one pydantic
  ``ValidationError``; each line error's ``loc`` is the dotted key the rule reports against, relative to the
  generation section (e.g. ``("vllm_cfg", "pipeline_parallel_size")``), and its ``type`` is
  ``config_rule_<rule>`` (``config_rule_c9_missing`` / ``config_rule_c11_missing`` mark an absent key).
- Models are validated at construction; attribute assignment is not re-validated (build a new model instead).

:func:`unknown_keys` lists the unknown keys kept in ``model_extra`` (for ``load_recipe`` warnings and the CLI's
did-you-mean), and :func:`config_json_schema` gives the JSON Schema ``rl-contracts schema`` prints.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    model_validator,
)
from pydantic_core import ErrorDetails, InitErrorDetails, PydanticCustomError

from .._messages import render, type_name
from ..checks import ContractInt, as_int

__all__ = [
    "VLLM_REFIT_SELECTORS",
    "VLLM_SPARSE_REFIT_TRANSPORTS",
    "ColocationConfig",
    "ColocationResources",
    "ConfigBool",
    "ConfigFloat",
    "ConfigInt",
    "ConfigStr",
    "GenerationConfig",
    "Nvfp4PerTokenRolloutConfig",
    "UnknownKey",
    "VllmCheckpointEnginePluginConfig",
    "VllmConfig",
    "VllmDeltaCompressionConfig",
    "VllmNixlRefitConfig",
    "VllmRefitBaselineConfig",
    "VllmRefitConfig",
    "VllmRefitStorageConfig",
    "VllmRefitTuningConfig",
    "VllmSparseRefitConfig",
    "VllmSpecificArgs",
    "VllmVideoConfig",
    "config_json_schema",
    "unknown_keys",
]

VLLM_REFIT_SELECTORS: tuple[str, ...] = ("vllm_s3_sparse", "vllm_zmq_sparse", "nixl", "nccl_reshard")
"""The named refit transports ``refit_transport`` may select (besides ``None`` and a ``module:ClassName``)."""

VLLM_SPARSE_REFIT_TRANSPORTS: frozenset[str] = frozenset({"vllm_s3_sparse", "vllm_zmq_sparse"})
"""The sparse (delta-compressed) refit transports, configured by ``refit_cfg.sparse``."""

Loc = tuple[str | int, ...]


# --- strict scalars -------------------------------------------------------------------------------------------


def _strict_bool(value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected a bool (true or false), got {type_name(value)}")
    return value


def _python_int(value: object) -> object:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(
            f"expected an int (not bool, float, str or another integer type), got {type_name(value)}"
        )
    return value


def _finite_float(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"expected a number (int or float, not bool or str), got {type_name(value)}")
    try:
        result = float(value)
    except OverflowError:
        raise ValueError("expected a finite number, got an int too large for a float") from None
    if not math.isfinite(result):
        raise ValueError(f"expected a finite number, got {result!r}")
    return result


def _strict_str(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a str, got {type_name(value)}")
    return value


def _strict_list(value: object) -> list[object]:
    if not isinstance(value, list | tuple):
        raise ValueError(f"expected a list, got {type_name(value)}")
    return list(value)


def _env_value(value: object) -> str:
    if isinstance(value, bool) or value is None or not isinstance(value, str | int | float):
        raise ValueError(
            f"expected a str, int or float environment value (not bool or null), got {type_name(value)}; "
            "quote the value if you mean the string"
        )
    return str(value)


def _null_as_auto(value: object) -> object:
    """Before-validator of ``kv_cache_dtype``: ``null`` reads as its default ``"auto"`` ("Req. no", SPEC §1.1)."""
    return "auto" if value is None else value


def _null_as_false(value: object) -> object:
    """Before-validator of ``refit_with_reload_api``: ``null`` reads as its default ``False`` ("Req. no")."""
    return False if value is None else value


# Range constraints sit *inside* the strict validators (``Annotated[int, Field(ge=1), *validators]``) so pydantic
# emits them as JSON Schema ``minimum``/``maximum`` rather than as opaque keys.
_AS_INT = BeforeValidator(as_int)
_PYTHON_INT = BeforeValidator(_python_int)
_AS_FLOAT = BeforeValidator(_finite_float)

ConfigBool = Annotated[bool, BeforeValidator(_strict_bool)]
"""A config ``bool``: accepts only ``True``/``False``."""
ConfigInt = Annotated[ContractInt, _PYTHON_INT]
"""A config int: :data:`~rl_contracts.checks.ContractInt` restricted to Python ``int`` (never bool or ``__index__``)."""
ConfigFloat = Annotated[float, _AS_FLOAT]
"""A config float: accepts a finite ``int`` or ``float``, never a bool or str."""
ConfigStr = Annotated[str, BeforeValidator(_strict_str)]
"""A config ``str``: accepts only ``str``."""

_AtLeastOne = Annotated[int, Field(ge=1), _AS_INT, _PYTHON_INT]
_Port = Annotated[int, Field(ge=1, le=65535), _AS_INT, _PYTHON_INT]
_Positive = Annotated[int, Field(gt=0), _AS_INT, _PYTHON_INT]
_NonNegative = Annotated[int, Field(ge=0), _AS_INT, _PYTHON_INT]
_NonNegativeFloat = Annotated[float, Field(ge=0), _AS_FLOAT]
_PositiveFloat = Annotated[float, Field(gt=0), _AS_FLOAT]
_Ratio = Annotated[float, Field(gt=0, lt=1), _AS_FLOAT]
_Fraction = Annotated[float, Field(gt=0, le=1), _AS_FLOAT]
_StrList = Annotated[list[ConfigStr], BeforeValidator(_strict_list)]
_TokenIdList = Annotated[list[_NonNegative], BeforeValidator(_strict_list)]
_EnvValue = Annotated[str, BeforeValidator(_env_value, json_schema_input_type=str | int | float)]

_KvCacheDtype = Literal["auto", "fp8", "fp8_e4m3", "fp8_ds_mla"]
_LogprobsMode = Literal["processed_logprobs", "raw_logprobs"]


# --- rule violations --------------------------------------------------------------------------------------------


class _Missing:
    """Marks an absent key as the offending value of a rule violation."""

    def __repr__(self) -> str:
        return "<missing>"


_MISSING: Any = _Missing()


@dataclass(frozen=True)
class _Violation:
    """One cross-field rule violation: where (``loc``, relative to the generation section), what and why.

    ``nested`` holds the line errors of a nested validation (rule C9); they are reported below ``loc``.
    """

    rule: str
    loc: Loc
    message: str
    value: object
    nested: tuple[ErrorDetails, ...] = ()


def _raise_violations(title: str, violations: Sequence[_Violation], container: object) -> None:
    """Raise one pydantic ``ValidationError`` carrying every violation with its ``loc`` (no-op when empty)."""
    details: list[InitErrorDetails] = []
    for violation in violations:
        if violation.nested:
            details.extend(
                InitErrorDetails(
                    type=PydanticCustomError(error["type"], error["msg"]),
                    loc=(*violation.loc, *error["loc"]),
                    input=error["input"],
                )
                for error in violation.nested
            )
            continue
        missing = violation.value is _MISSING
        rule_type = f"config_rule_{violation.rule.lower()}" + ("_missing" if missing else "")
        details.append(
            InitErrorDetails(
                type=PydanticCustomError(rule_type, violation.message),
                loc=violation.loc,
                input=container if missing else violation.value,
            )
        )
    if details:
        raise ValidationError.from_exception_data(title, details)


# --- base -------------------------------------------------------------------------------------------------------


class _ConfigModel(BaseModel):
    """Common config of every model of this module: extra keys kept, both spellings of ``_`` keys accepted."""

    model_config = ConfigDict(
        extra="allow",
        validate_by_name=True,
        validate_by_alias=True,
        protected_namespaces=(),
        use_attribute_docstrings=True,
    )

    @model_validator(mode="before")
    @classmethod
    def _one_spelling_per_key(cls, data: Any) -> Any:
        """Reject an input that gives both spellings of an underscore key (the model could keep only one)."""
        if isinstance(data, Mapping):
            violations = [
                _Violation(
                    "duplicate_key",
                    (name,),
                    f"both {field.alias!r} and {name!r} are set; give the key once "
                    f"(the canonical spelling is {field.alias!r})",
                    data[name],
                )
                for name, field in cls.model_fields.items()
                if field.alias and field.alias != name and field.alias in data and name in data
            ]
            _raise_violations(cls.__name__, violations, data)
        return data


class _ForbidExtra(_ConfigModel):
    model_config = ConfigDict(extra="forbid")


# --- nested models ----------------------------------------------------------------------------------------------


class ColocationResources(_ConfigModel):
    """GPUs reserved for generation when it is not colocated (extra keys allowed)."""

    gpus_per_node: _AtLeastOne | None
    """GPUs per node for generation; required, may be null (then the trainer decides). ≥ 1 when set."""
    num_nodes: _AtLeastOne | None
    """Nodes for generation; required, may be null (then the trainer decides). ≥ 1 when set."""


class ColocationConfig(_ConfigModel):
    """Whether generation shares the training GPUs (CUDA-IPC refit) or runs on its own (extra keys allowed)."""

    enabled: ConfigBool
    """True: generation shares the training GPUs and refit uses CUDA-IPC. Required."""
    resources: ColocationResources
    """Dedicated generation resources (used when not colocated). Required."""


class VllmVideoConfig(_ForbidExtra):
    """Video frame sampling for vision-language models (extra keys forbidden)."""

    sampling_style: Annotated[Literal["nemotron_vl"], BeforeValidator(_strict_str)]
    """Frame sampling style; only ``"nemotron_vl"`` exists."""
    num_frames: _AtLeastOne
    """Frames sampled per video, ≥ 1."""
    temporal_patch_size: _AtLeastOne
    """Frames merged into one temporal patch, ≥ 1."""


class Nvfp4PerTokenRolloutConfig(_ConfigModel):
    """NVFP4 per-token quantized rollout (extra keys allowed); excludes ``quant_cfg``, real quant and transports."""

    enabled: ConfigBool = False
    """Turn NVFP4 per-token rollout on (rule C10)."""


class VllmDeltaCompressionConfig(_ConfigModel):
    """How sparse refit encodes and chunks weight deltas (extra keys allowed)."""

    encoding: Annotated[Literal["xor", "overwrite"], BeforeValidator(_strict_str)] = "xor"
    """Delta encoding: ``"xor"`` against the baseline, or ``"overwrite"`` with the new values."""
    sparse_bucket_size_bytes: _Positive = 536870912
    """Bytes per sparse bucket (default 512 MiB), > 0."""
    export_chunk_bytes: dict[ConfigStr, _Positive] = Field(
        default_factory=lambda: {"s3": 67108864, "zmq": 268435456}
    )
    """Export chunk size in bytes per sparse transport (``"s3"``, ``"zmq"``), each > 0."""
    zstd_threads: dict[ConfigStr, _NonNegative] = Field(default_factory=lambda: {"s3": 0, "zmq": 0})
    """zstd compression threads per sparse transport, each ≥ 0 (0: zstd's default)."""


class VllmRefitStorageConfig(_ConfigModel):
    """Where sparse refit stages payloads (extra keys allowed)."""

    s3_bucket: ConfigStr | None = None
    """S3 bucket for the ``vllm_s3_sparse`` transport; null when unused."""
    s3_region: ConfigStr = "us-east-1"
    """Region of the S3 bucket."""
    s3_prefix: ConfigStr = "nemo-rl-refit"
    """Key prefix of refit objects in the bucket."""
    staging_dir: ConfigStr = "/dev/shm"
    """Local directory for staged payloads."""


class VllmRefitBaselineConfig(_ConfigModel):
    """Where the sparse-refit baseline weights (the XOR reference) live (extra keys allowed)."""

    in_memory: ConfigBool = False
    """Keep the baseline in host memory."""
    mmap_dir: ConfigStr | None = None
    """Directory for a memory-mapped baseline; null when unused."""


class VllmRefitTuningConfig(_ConfigModel):
    """Worker counts and queue sizes of sparse refit (extra keys allowed)."""

    encode_workers: dict[ConfigStr, _Positive] = Field(default_factory=lambda: {"s3": 8, "zmq": 8})
    """Delta-encoding workers per sparse transport, each > 0."""
    transfer_workers: dict[ConfigStr, _Positive] = Field(default_factory=lambda: {"s3": 32, "zmq": 4})
    """Transfer workers per sparse transport, each > 0."""
    zmq_retries: _NonNegative = 3
    """Retries of a failed ZMQ send, ≥ 0."""
    zmq_relay_payload_workers: _Positive = 16
    """ZMQ relay payload workers, > 0."""
    zmq_relay_forward_workers: _Positive = 8
    """ZMQ relay forward workers, > 0."""
    apply_queue_depth: _Positive = 32
    """Depth of the apply queue on the engine side, > 0."""
    apply_batch_size: _Positive = 8
    """Payloads applied per batch, > 0."""
    partition_workers: _Positive = 8
    """Workers that partition weights into buckets, > 0."""


class VllmSparseRefitConfig(_ConfigModel):
    """Settings of the sparse refit transports ``vllm_s3_sparse`` and ``vllm_zmq_sparse`` (extra keys allowed)."""

    delta_compression: VllmDeltaCompressionConfig = Field(default_factory=VllmDeltaCompressionConfig)
    """Delta encoding and chunking."""
    storage: VllmRefitStorageConfig = Field(default_factory=VllmRefitStorageConfig)
    """Payload staging."""
    baseline: VllmRefitBaselineConfig = Field(default_factory=VllmRefitBaselineConfig)
    """Baseline weights location."""
    tuning: VllmRefitTuningConfig = Field(default_factory=VllmRefitTuningConfig)
    """Worker counts and queue sizes."""
    verify_samples_per_payload: _NonNegative = 0
    """Weights re-checked per payload after apply (0: no verification), ≥ 0."""
    request_timeout_s: _PositiveFloat = 600.0
    """Timeout of one refit request in seconds, > 0."""


class VllmNixlRefitConfig(_ForbidExtra):
    """Settings of the ``nixl`` checkpoint-engine transport (extra keys forbidden)."""

    update_weights_bucket_memory_ratio: _Ratio = 0.05
    """Fraction of device memory used for one weight bucket, 0 < x < 1."""
    device: ConfigStr = "cuda"
    """Device the buckets live on."""
    backend_name: ConfigStr = "UCX"
    """NIXL backend name."""
    backend_init_params: dict[ConfigStr, Any] | None = None
    """Backend initialisation parameters, passed through; null for the backend's defaults."""
    release_after_refit: ConfigBool = False
    """Release the transfer buffers after every refit."""
    shard_expert_weights: ConfigBool = False
    """Send MoE expert weights sharded by expert-parallel rank."""


class VllmCheckpointEnginePluginConfig(_ConfigModel):
    """Settings of a custom ``module:ClassName`` checkpoint-engine transport (extra keys allowed).

    It lives in ``refit_cfg`` under the extra key equal to the transport string.
    """

    update_weights_bucket_memory_ratio: _Ratio = 0.05
    """Fraction of device memory used for one weight bucket, 0 < x < 1."""
    release_after_refit: ConfigBool = False
    """Release the transfer buffers after every refit."""


class VllmRefitConfig(_ConfigModel):
    """Per-transport refit settings (extra keys allowed).

    A ``module:ClassName`` transport keeps its :class:`VllmCheckpointEnginePluginConfig` under the extra key of
    that exact name.
    """

    sparse: VllmSparseRefitConfig = Field(default_factory=VllmSparseRefitConfig)
    """Settings of the sparse transports."""
    nixl: VllmNixlRefitConfig = Field(default_factory=VllmNixlRefitConfig)
    """Settings of the ``nixl`` transport."""


class VllmSpecificArgs(_ConfigModel):
    """The ``vllm_cfg`` block: engine construction arguments (extra keys allowed)."""

    tensor_parallel_size: _AtLeastOne
    """Tensor-parallel size, ≥ 1 (rules C4, C5)."""
    pipeline_parallel_size: _AtLeastOne
    """Pipeline-parallel size, ≥ 1; above 1 it needs ``async_engine`` (rule C3)."""
    expert_parallel_size: _AtLeastOne
    """Expert-parallel size, ≥ 1; above 1 a multiple of the tensor-parallel size (rules C4, C5)."""
    gpu_memory_utilization: _Fraction
    """Fraction of GPU memory vLLM may use, 0 < x ≤ 1."""
    max_model_len: _AtLeastOne
    """Maximum sequence length (prompt + generation), ≥ 1."""
    async_engine: ConfigBool
    """Use vLLM's async engine."""
    kv_cache_dtype: Annotated[
        _KvCacheDtype,
        BeforeValidator(_strict_str),
        BeforeValidator(_null_as_auto, json_schema_input_type=_KvCacheDtype | None),
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
    logprobs_mode: Annotated[_LogprobsMode, BeforeValidator(_strict_str)] | None = None
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
    enable_return_routed_experts: ConfigBool | None = None
    """Return routed experts (router replay, R3)."""
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
    refit_with_reload_api: Annotated[
        ConfigBool, BeforeValidator(_null_as_false, json_schema_input_type=bool | None)
    ] = False
    """Opt in to vLLM's native ``reload_weights`` refit (SPEC §1.4); null reads as false."""
    vllm_metrics_logger_interval: _PositiveFloat | None = None
    """Metrics logging interval in seconds, > 0."""
    num_first_layers_in_bf16: _NonNegative | None = None
    """Number of first layers kept in bf16 under quantization, ≥ 0."""
    num_last_layers_in_bf16: _NonNegative | None = None
    """Number of last layers kept in bf16 under quantization, ≥ 0."""
    quantization_ignored_layer_kws: _StrList | None = None
    """Deprecated spelling of ``quantization_ignore_patterns``."""
    quantization_ignore_patterns: _StrList | None = None
    """Layer-name patterns quantization leaves alone."""
    http_refit_api_key_env_var: ConfigStr | None = None
    """Environment variable holding the HTTP refit API key."""
    http_refit_server_port: _Port | None = None
    """Port of the HTTP refit server, 1–65535."""
    zmq_refit_server_port: _Port | None = None
    """Port of the ZMQ refit server, 1–65535."""
    http_server_serving_chat_kwargs: dict[ConfigStr, Any] | None = None
    """Keyword arguments for vLLM's chat serving, passed through."""
    tool_parser_plugin: ConfigStr | None = None
    """Tool-call parser plugin."""
    reasoning_parser_plugin: ConfigStr | None = None
    """Reasoning parser plugin."""
    env_vars: dict[ConfigStr, _EnvValue] | None = None
    """Environment variables for the engine; str, int or float values (numbers are converted with ``str()``).

    Divergence: the reference exports every value with ``str(v)``; bool and null values are rejected here.
    """
    routed_experts_transport: ConfigStr | None = Field(default=None, alias="_routed_experts_transport")
    """Runtime-filled (``_routed_experts_transport``): how routed experts travel (seen value ``"ray"``)."""
    routed_experts_store_run_instance_id: ConfigStr | None = Field(
        default=None, alias="_routed_experts_store_run_instance_id"
    )
    """Runtime-filled (``_routed_experts_store_run_instance_id``): run instance id of the routed-experts store."""


# --- the generation section -----------------------------------------------------------------------------------


def _check_top_k(value: int, info: ValidationInfo) -> int:
    """Rule C1 for a top-k field (``top_k``, ``val_top_k``): ``-1`` or ``>= 1`` (``None`` never reaches it)."""
    if value != -1 and value < 1:
        key = info.field_name
        raise PydanticCustomError(
            "config_rule_c1",
            f"{key} valid values: i) None or -1: no filtering. ii) >= 1: top-k filtering. "
            f"Got {key}={render(value)}.",
        )
    return value


def _check_top_p(value: float, info: ValidationInfo) -> float:
    """Rule C1 for a top-p field (``top_p``, ``val_top_p``): ``0 < p <= 1``."""
    if not 0 < value <= 1:
        key = info.field_name
        raise PydanticCustomError(
            "config_rule_c1",
            f"{key} valid values: i) 1.0: no filtering. ii) (0, 1]: top-p filtering. Got {key}={value!r}.",
        )
    return value


_TOP_K = AfterValidator(_check_top_k)
_TOP_P = AfterValidator(_check_top_p)


class GenerationConfig(_ConfigModel):
    """The backend-agnostic generation section ``policy.generation`` (extra keys allowed).

    Sampling rules C1 (``top_k``/``top_p`` and their ``val_`` twins) run per field; the port range rule (C2)
    after the fields.
    """

    backend: ConfigStr
    """Generation backend (``"vllm"`` for :class:`VllmConfig`)."""
    max_new_tokens: _AtLeastOne
    """Maximum generated tokens per sample, ≥ 1."""
    temperature: _NonNegativeFloat
    """Sampling temperature, ≥ 0."""
    top_p: Annotated[ConfigFloat, _TOP_P]
    """Top-p (nucleus) sampling, 0 < p ≤ 1 (1.0: no filtering; rule C1)."""
    top_k: Annotated[ConfigInt, _TOP_K] | None
    """Top-k sampling: null or -1 for no filtering, else ≥ 1 (rule C1). Required, may be null."""
    val_temperature: _NonNegativeFloat
    """Validation sampling temperature, ≥ 0 (recipes usually interpolate ``${.temperature}``)."""
    val_top_p: Annotated[ConfigFloat, _TOP_P]
    """Validation top-p, 0 < p ≤ 1 (rule C1)."""
    val_top_k: Annotated[ConfigInt, _TOP_K] | None
    """Validation top-k: null or -1 for no filtering, else ≥ 1 (rule C1). Required, may be null."""
    stop_token_ids: _TokenIdList | None
    """Token ids that stop generation, each ≥ 0. Required, may be null."""
    stop_strings: _StrList | None
    """Strings that stop generation. Required, may be null."""
    model_name: ConfigStr | None = None
    """Runtime-filled: the model name or path."""
    bad_words: _StrList | None = None
    """Words the sampler must not produce."""
    colocated: ColocationConfig | None = None
    """Colocation of generation with training."""
    port_range_low: _Port | None = None
    """Lowest port generation workers may bind, 1–65535, ≤ ``port_range_high``."""
    port_range_high: _Port | None = None
    """Highest port generation workers may bind, 1–65535, ≥ ``port_range_low``."""
    use_async_rollouts: ConfigBool | None = None
    """Generate rollouts asynchronously."""
    mcore_generation_config: dict[ConfigStr, Any] | None = None
    """Opaque settings of the Megatron-core backend."""
    pad_token_id: ConfigInt | None = Field(default=None, alias="_pad_token_id")
    """Runtime-filled (``_pad_token_id``): the pad token id."""
    draft_weights_from_refit: ConfigBool | None = Field(default=None, alias="_draft_weights_from_refit")
    """Runtime-filled (``_draft_weights_from_refit``): Eagle draft weights arrive through refit."""
    mtp_weights_from_refit: ConfigBool | None = Field(default=None, alias="_mtp_weights_from_refit")
    """Runtime-filled (``_mtp_weights_from_refit``): the trainer trains the MTP layer."""
    debug_payload_metrics: ConfigBool | None = Field(default=None, alias="_debug_payload_metrics")
    """Internal (``_debug_payload_metrics``): log refit payload metrics."""

    @model_validator(mode="after")
    def _cross_field_rules(self) -> GenerationConfig:
        _raise_violations(type(self).__name__, self._rule_violations(), self)
        return self

    def _rule_violations(self) -> list[_Violation]:
        """Every cross-field violation of this section, in rule order (extended by subclasses)."""
        low, high = self.port_range_low, self.port_range_high
        if low is not None and high is not None and low > high:
            return [
                _Violation(
                    "C2",
                    ("port_range_high",),
                    f"port_range_low must be <= port_range_high: got port_range_low={low} and "
                    f"port_range_high={high}.",
                    high,
                )
            ]
        return []


class VllmConfig(GenerationConfig):
    """The generation section for the vLLM backend (``backend: vllm``; extra keys allowed).

    Adds rules C3–C11 (SPEC §1.2); C6–C9 share one implementation with
    :func:`~rl_contracts.config.normalize_vllm_refit_config`.  A non-null legacy ``checkpoint_engine`` key is
    an error (C6).

    Divergence: the reference applies C1 only to ``top_k`` and ``top_p``; this also checks ``val_top_k`` and
    ``val_top_p``.

    Divergence: the reference's C3 and C4 messages carry a second sentence and its C5 message a pointer to
    NeMo RL issue #1101; these are dropped.  Its C10 ``worker_extension_cls_fqn`` message names no values; this
    one reports both offending values.

    Divergence: the reference's config is an unchecked ``TypedDict``; here bools, ints, floats and strings are
    strictly typed, numbers must be finite, and an underscore key given in both spellings is rejected.

    Example::

        VllmConfig.model_validate(recipe["policy"]["generation"])
    """

    backend: Annotated[Literal["vllm"], BeforeValidator(_strict_str)]
    """Generation backend; must be ``"vllm"``."""
    vllm_cfg: VllmSpecificArgs
    """Engine construction arguments. Required."""
    vllm_kwargs: dict[ConfigStr, Any] | None = None
    """Passed through to the engine (``speculative_config``, ``limit_mm_per_prompt``, ...)."""
    refit_transport: ConfigStr | None = None
    """Refit transport: one of ``VLLM_REFIT_SELECTORS``, a ``module:ClassName`` checkpoint engine, or null for
    the topology default (CUDA-IPC when colocated, NCCL collective otherwise). Rule C7."""
    refit_cfg: VllmRefitConfig | None = None
    """Per-transport refit settings (rules C8, C9)."""
    quant_cfg: ConfigStr | None = None
    """ModelOpt quantization config name."""
    real_quant: ConfigBool | None = None
    """Export really quantized weights (rule C11)."""
    real_quant_export_cpu_offload: ConfigBool | None = None
    """Offload the real-quant export to CPU; required when ``real_quant`` is true (rule C11)."""
    real_quant_ignore: _StrList | None = None
    """Layer-name patterns real quantization leaves alone."""
    nvfp4_pertoken_rollout: Nvfp4PerTokenRolloutConfig | None = None
    """NVFP4 per-token rollout (rule C10)."""
    worker_extension_cls_fqn: ConfigStr | None = None
    """Fully qualified vLLM worker extension class; excludes ``quant_cfg`` (rule C10)."""

    def _rule_violations(self) -> list[_Violation]:
        from .refit_rules import (
            _ConfigView,
            _nvfp4_violations,
            _refit_steps,
        )  # refit_rules imports this module

        violations = super()._rule_violations()
        vllm = self.vllm_cfg
        tp, pp, ep = vllm.tensor_parallel_size, vllm.pipeline_parallel_size, vllm.expert_parallel_size
        if pp > 1 and not vllm.async_engine:
            violations.append(
                _Violation(
                    "C3",
                    ("vllm_cfg", "pipeline_parallel_size"),
                    "When pipeline_parallel_size > 1, async_engine must be set to True in the vLLM configuration.",
                    pp,
                )
            )
        if ep > 1 and ep % tp != 0:
            violations.append(
                _Violation(
                    "C4",
                    ("vllm_cfg", "expert_parallel_size"),
                    "When EP > 1, EP must be a multiple of TP since vLLM's EP = DP * TP.",
                    ep,
                )
            )
        if ep > 1 and ep != tp and vllm.async_engine:
            violations.append(
                _Violation(
                    "C5",
                    ("vllm_cfg", "async_engine"),
                    "vLLM async_engine has some issues when using DP inside vLLM. Please update your "
                    "configuration to set `policy.generation.vllm_cfg.async_engine=false`.",
                    vllm.async_engine,
                )
            )
        view = _ConfigView(self)
        violations.extend(_refit_steps(view, nvfp4=False))
        if self.worker_extension_cls_fqn is not None and self.quant_cfg is not None:
            violations.append(
                _Violation(
                    "C10",
                    ("worker_extension_cls_fqn",),
                    "worker_extension_cls_fqn and quant_cfg are mutually exclusive: got "
                    f"worker_extension_cls_fqn={render(self.worker_extension_cls_fqn)} and "
                    f"quant_cfg={render(self.quant_cfg)}.",
                    self.worker_extension_cls_fqn,
                )
            )
        violations.extend(_nvfp4_violations(view, ("quant_cfg", "real_quant", "refit_transport")))
        violations.extend(self._real_quant_violations())
        return violations

    def _real_quant_violations(self) -> list[_Violation]:
        """Rule C11: a real-quant export states its CPU offload, and no offload needs colocated CUDA-IPC refit."""
        if self.real_quant is not True:
            return []
        offload = self.real_quant_export_cpu_offload
        loc: Loc = ("real_quant_export_cpu_offload",)
        if offload is None:
            given = "real_quant_export_cpu_offload" in self.model_fields_set
            return [
                _Violation(
                    "C11",
                    loc,
                    "generation.real_quant_export_cpu_offload must be a boolean",
                    None if given else _MISSING,
                )
            ]
        colocated = self.colocated is not None and self.colocated.enabled
        if offload is False and (not colocated or self.refit_transport is not None):
            return [
                _Violation(
                    "C11",
                    loc,
                    "generation.real_quant_export_cpu_offload=false requires colocated CUDA-IPC refit with no "
                    "explicit refit_transport",
                    offload,
                )
            ]
        return []


# --- unknown keys and schema -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class UnknownKey:
    """One unknown key kept in a model's ``model_extra``.

    ``path`` is its location relative to the validated section, ending with the key itself (e.g.
    ``("vllm_cfg", "gpu_memory_utilisation")``); ``suggestion`` is the closest known key of the model that holds
    it (``difflib.get_close_matches(key, known, n=1, cutoff=0.8)``, aliases included) or ``None``.
    """

    path: tuple[str | int, ...]
    key: str
    value: object
    suggestion: str | None


def _known_keys(model_cls: type[BaseModel]) -> list[str]:
    keys: list[str] = []
    for name, field in model_cls.model_fields.items():
        keys.append(name)
        if field.alias and field.alias != name:
            keys.append(field.alias)
    return keys


def _is_plugin_path(key: str) -> bool:
    """Whether ``key`` has the ``module.path:ClassName`` form of a custom checkpoint-engine transport."""
    if key.count(":") != 1:
        return False
    module, _, class_name = key.partition(":")
    return (
        bool(module) and all(part.isidentifier() for part in module.split(".")) and class_name.isidentifier()
    )


def _not_unknown(model: BaseModel, parent: BaseModel | None, key: str) -> bool:
    """Extra keys judged elsewhere: C6's ``checkpoint_engine`` and a custom transport's plugin config."""
    if isinstance(model, VllmConfig):
        return key == "checkpoint_engine"
    if isinstance(model, VllmRefitConfig):
        return key == parent.refit_transport if isinstance(parent, VllmConfig) else _is_plugin_path(key)
    return False


def _walk_unknown(model: BaseModel, parent: BaseModel | None, path: Loc, out: list[UnknownKey]) -> None:
    known = _known_keys(type(model))
    for key, value in (model.model_extra or {}).items():
        if not _not_unknown(model, parent, key):
            match = difflib.get_close_matches(key, known, n=1, cutoff=0.8)
            out.append(UnknownKey((*path, key), key, value, match[0] if match else None))
    for name, field in type(model).model_fields.items():
        child = getattr(model, name)
        if isinstance(child, BaseModel):
            _walk_unknown(child, model, (*path, field.alias or name), out)


def unknown_keys(config: BaseModel) -> list[UnknownKey]:
    """Every unknown key kept in ``model_extra`` of ``config`` and of each model nested in it, in walk order.

    The walk visits a model's own extra keys (in input order), then its model-valued fields in declaration
    order.  It never descends into opaque dict fields (``vllm_kwargs``, ``mcore_generation_config``,
    ``env_vars``, ...) nor into extra values.  Not reported: the legacy ``checkpoint_engine`` key of a
    :class:`VllmConfig` (rule C6 judges it) and the plugin config of a custom transport inside ``refit_cfg``
    (the extra key equal to ``refit_transport``; in a standalone :class:`VllmRefitConfig`, every key of the
    ``module:ClassName`` form).

    Example::

        >>> refit = VllmRefitConfig.model_validate({"spars": {}})
        >>> [(u.path, u.suggestion) for u in unknown_keys(refit)]
        [(('spars',), 'sparse')]
    """
    out: list[UnknownKey] = []
    _walk_unknown(config, None, (), out)
    return out


def config_json_schema() -> dict[str, Any]:
    """``VllmConfig``'s JSON Schema by alias in validation mode (what ``rl-contracts schema`` prints).

    Both are pydantic's defaults of ``model_json_schema``.
    """
    return VllmConfig.model_json_schema()
