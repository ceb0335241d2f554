"""Keyword arguments for ``vllm.LLM`` and ``vllm.SamplingParams`` from a validated recipe: no hand-written glue.

``LLM(**engine_kwargs(recipe, seed=0))`` starts the engine the way NeMo RL's vLLM worker does (``precision`` →
``dtype``, the parallel sizes, ``distributed_executor_backend`` derived as PREFLIGHT.md P16 states, the recipe's
``vllm_kwargs`` passed through), and ``SamplingParams(**sampling_kwargs(recipe))`` samples as its ``generate``
does (``top_k: null`` → ``-1``, greedy → temperature 0 and top-k 1, sampled-token log-probs on).  Both read a
validated :class:`~rl_contracts.config.LoadedRecipe` (or its :class:`~rl_contracts.config.VllmConfig`) and return
typed dicts; neither imports vLLM or torch.

Read back: :func:`sampling_settings` reads the parameters that decide the distribution vLLM sampled from (a vLLM
``SamplingParams``, a mapping such as ``sampling_kwargs(recipe)``, or the validated generation section) as one
:class:`SamplingSettings`, and :func:`check_scoring_matches_rollout` checks that whoever scores the sampled tokens
afterwards (the learner's recompute, a teacher) uses the same ones: with ``logprobs_mode="processed_logprobs"``
vLLM's log-probabilities are temperature-scaled and renormalised over the kept top-p/top-k/min-p support, so a
scorer at other parameters describes another distribution and biases every ratio or distillation target.

The model: recipes leave ``policy.generation.model_name`` unset (the trainer copies ``policy.model_name`` there at
start-up), so :func:`engine_kwargs` resolves it from the recipe document: ``model=`` when given, else the
section's ``model_name``, else the ``model_name`` beside the section (``policy.model_name`` for
``policy.generation``).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final, Literal, Protocol, TypeAlias, cast, get_args

from omegaconf import OmegaConf
from typing_extensions import Required, TypedDict

from ._internal.messages import render, render_name, type_name
from .checks import as_int, is_collection, is_int, require_bool, require_int
from .config import GenerationConfig, LoadedRecipe, VllmConfig, VllmSpecificArgs, register_resolvers
from .config.rules.preflight.generation import ENGINE_ARGUMENTS
from .errors import ConfigContractError, ContractTypeError, SamplingParamsError

__all__ = [
    "DERIVED_ENGINE_ARGUMENTS",
    "ENGINE_ARGUMENTS_SET_BY_TRAINER",
    "FP8_BLOCK_QUANTIZATION",
    "MXFP8_QUANTIZATION",
    "EngineKwargs",
    "LogprobsMode",
    "SamplingKwargs",
    "SamplingParamsLike",
    "SamplingSettings",
    "SamplingSource",
    "check_scoring_matches_rollout",
    "derived_executor_backend",
    "engine_kwargs",
    "resolve_model_name",
    "sampling_kwargs",
    "sampling_settings",
]

ENGINE_ARGUMENTS_SET_BY_TRAINER = ENGINE_ARGUMENTS
"""The engine arguments the trainer sets itself; the same key in ``vllm_kwargs`` is a duplicate keyword (P16)."""

DERIVED_ENGINE_ARGUMENTS = ("distributed_executor_backend", "hf_overrides")
"""Engine arguments the trainer derives and silently overwrites in ``vllm_kwargs`` (P16's warning)."""


FP8_BLOCK_QUANTIZATION: Final[Mapping[str, Any]] = MappingProxyType(
    {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": [128, 128]}
)
"""The ``quantization_config`` the trainer's FP8 setup passes in ``hf_overrides`` (block-wise e4m3 weights)."""
MXFP8_QUANTIZATION: Final[Mapping[str, Any]] = MappingProxyType(
    {"quant_method": "modelopt", "quant_algo": "MXFP8"}
)
"""The ``quantization_config`` of FP8 with ``vllm_cfg.is_mx: true``."""
_FP8_ENGINE_ARGUMENTS: Final = ("quantization", "kv_cache_dtype")
_BF16_LAYER_KEYS: Final = (
    "num_first_layers_in_bf16",
    "num_last_layers_in_bf16",
    "quantization_ignored_layer_kws",
)


class EngineKwargs(TypedDict, total=False):
    """The keyword arguments of ``vllm.LLM``, in the order NeMo RL's vLLM worker passes them.

    The required keys are always present.  At run time the dict also holds every key of the recipe's
    ``vllm_kwargs`` and of ``engine_kwargs(overrides=...)``, which are open-ended and so not declared here.
    """

    model: Required[str]
    served_model_name: Required[str]
    load_format: Required[str]
    skip_tokenizer_init: Required[bool]
    tensor_parallel_size: Required[int]
    pipeline_parallel_size: Required[int]
    enable_expert_parallel: Required[bool]
    gpu_memory_utilization: Required[float]
    enable_prefix_caching: Required[bool]
    dtype: Required[str]
    seed: Required[int]
    enforce_eager: Required[bool]
    max_model_len: Required[int]
    trust_remote_code: Required[bool]
    enable_sleep_mode: Required[bool]
    disable_log_stats: Required[bool]
    worker_extension_cls: str
    distributed_executor_backend: str
    logprobs_mode: str
    kv_cache_dtype: str
    quantization: str
    hf_overrides: dict[str, Any]


class SamplingKwargs(TypedDict):
    """The keyword arguments of ``vllm.SamplingParams`` for a rollout, as NeMo RL's vLLM worker builds them."""

    temperature: float
    top_p: float
    top_k: int
    max_tokens: int
    logprobs: int
    stop_token_ids: list[int] | None
    stop: list[str] | None
    include_stop_str_in_output: bool
    bad_words: list[str] | None
    ignore_eos: bool


def _section(recipe: object, argument: str, model: type[GenerationConfig]) -> GenerationConfig:
    """The validated generation section of ``recipe`` (a ``LoadedRecipe`` or a model instance)."""
    if isinstance(recipe, LoadedRecipe):
        if recipe.generation is None:
            raise ConfigContractError(
                f"{argument}: the recipe's section '{render_name(recipe.section)}' was not validated "
                f"(status {render_name(recipe.status)}); load a recipe whose generation backend is vllm",
                path=recipe.section,
            )
        return recipe.generation
    if isinstance(recipe, model):
        return recipe
    raise ContractTypeError.for_value(
        argument, f"a LoadedRecipe (rl_contracts.config.load_recipe) or a {model.__name__}", recipe
    )


def _document_value(recipe: LoadedRecipe, path: str) -> object:
    """The resolved value at ``path`` of the recipe's document (``None`` when absent); resolver failures raise."""
    register_resolvers()
    try:
        document = OmegaConf.create(recipe.document)
        value = OmegaConf.select(document, path, default=None, throw_on_missing=True)
        return OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value
    except (RecursionError, MemoryError):
        raise
    except Exception as exc:
        raise ConfigContractError(
            f"{path} cannot be resolved in {render_name(recipe.file)}: {type_name(exc)}: "
            f"{render_name(exc)}; set it to a value",
            path=path,
        ) from None


def _sibling(section: str, key: str) -> str:
    """The dotted path of ``key`` beside ``section`` (``policy.generation`` → ``policy.{key}``)."""
    parent, _, _ = section.rpartition(".")
    return f"{parent}.{key}" if parent else key


def resolve_model_name(recipe: LoadedRecipe | VllmConfig, *, model: str | None = None) -> str:
    """The model vLLM loads: ``model`` when given, else the section's ``model_name``, else ``policy.model_name``.

    Recipes leave ``policy.generation.model_name`` unset: it is runtime-filled, the trainer copying
    ``policy.model_name`` into it at start-up.  For a :class:`LoadedRecipe` the last step reads the ``model_name``
    beside the validated section in the recipe document (``policy.model_name`` for ``policy.generation``;
    interpolations resolved); a bare :class:`VllmConfig` has no document, so it needs ``model_name`` or ``model``.

    Raises:
        ContractTypeError: ``recipe`` is neither, or ``model`` is not a ``str`` or ``None``.
        ConfigContractError: no source names a model, a source is not a non-empty ``str``, or the document's
            value cannot be resolved (``???``, an unset environment variable).
    """
    if model is not None:
        if not isinstance(model, str):
            raise ContractTypeError.for_value("model", "a str (a model path or hub id) or None", model)
        if model:
            return model
        raise ConfigContractError("model is the empty string; pass a model path or hub id", path="model")
    generation = _section(recipe, "recipe", VllmConfig)
    if generation.model_name:
        return generation.model_name
    if not isinstance(recipe, LoadedRecipe):
        raise ConfigContractError(
            "model_name is not set in this generation section (the trainer fills it from policy.model_name at "
            "start-up); pass model=..., or pass the LoadedRecipe so that policy.model_name can be read",
            path="model_name",
        )
    path = _sibling(recipe.section, "model_name")
    value = _document_value(recipe, path)
    if isinstance(value, str) and value:
        return value
    raise ConfigContractError(
        f"no model to load: {recipe.section}.model_name is unset (the trainer fills it at start-up) and {path} "
        f"is {render(value)}; set {path} to a model path or hub id, or pass model=...",
        path=path,
        value=render(value),
    )


def derived_executor_backend(generation: VllmConfig) -> str | None:
    """``distributed_executor_backend`` as the trainer derives it (P16): ``"ray"`` when TP × PP > 1, else
    ``"uni"`` when EP > TP (data parallelism inside vLLM), else ``None`` (vLLM chooses)."""
    cfg = generation.vllm_cfg
    if cfg.tensor_parallel_size * cfg.pipeline_parallel_size > 1:
        return "ray"
    if cfg.expert_parallel_size > cfg.tensor_parallel_size:
        return "uni"
    return None


def _required(value: object, path: str, why: str) -> Any:
    if value is None:
        raise ConfigContractError(
            f"{path} is required to start the engine ({why}); set it in the recipe", path=path
        )
    return value


def _pass_through(generation: VllmConfig, cfg_kv_cache_dtype: str | None) -> dict[str, Any]:
    """The recipe's ``vllm_kwargs``, checked against the keys the trainer sets or derives (P16)."""
    passed = dict(generation.vllm_kwargs or {})
    for key in passed:
        if key in ENGINE_ARGUMENTS_SET_BY_TRAINER:
            raise ConfigContractError(
                f"vllm_kwargs.{key} collides with the engine argument the trainer sets; remove it (use the "
                "vllm_cfg key, or an engine_kwargs option)",
                path=f"vllm_kwargs.{key}",
                value=render(passed[key]),
            )
        if key in DERIVED_ENGINE_ARGUMENTS:
            source = "policy.hf_config_overrides" if key == "hf_overrides" else "the parallel sizes (P16)"
            raise ConfigContractError(
                f"vllm_kwargs.{key} would be silently overwritten: the trainer derives it from {source}; remove "
                f"it, or pass engine_kwargs(overrides={{'{key}': ...}}) to choose it explicitly",
                path=f"vllm_kwargs.{key}",
                value=render(passed[key]),
            )
    for key, cfg_value in (
        ("kv_cache_dtype", cfg_kv_cache_dtype),
        ("logprobs_mode", generation.vllm_cfg.logprobs_mode),
    ):
        if cfg_value is not None and key in passed:
            raise ConfigContractError(
                f"vllm_kwargs.{key}={render(passed[key])} and vllm_cfg.{key}={render(cfg_value)} are both set "
                f"(the trainer applies vllm_cfg's after vllm_kwargs); keep vllm_cfg.{key} only",
                path=f"vllm_kwargs.{key}",
                value=render(passed[key]),
            )
    if generation.vllm_cfg.precision == "fp8":
        for key in _FP8_ENGINE_ARGUMENTS:
            if key in passed:
                raise ConfigContractError(
                    f"vllm_kwargs.{key}={render(passed[key])} would be silently overwritten: with vllm_cfg.precision="
                    f"'fp8' the trainer sets {key} from its FP8 setup; remove it (kv_cache_dtype belongs in vllm_cfg)",
                    path=f"vllm_kwargs.{key}",
                    value=render(passed[key]),
                )
    return passed


def _optional_str(value: object, argument: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ContractTypeError.for_value(argument, "a str or None", value)
    return value


def _optional_bool(value: object, argument: str) -> bool | None:
    return None if value is None else require_bool(value, argument)


def _fp8_quantization(cfg: VllmSpecificArgs, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The ``quantization_config`` of ``precision: fp8`` as the trainer's FP8 setup builds it (``init_fp8``)."""
    layered = [key for key in _BF16_LAYER_KEYS if getattr(cfg, key)]
    if layered and "hf_overrides" not in overrides:
        value = render(getattr(cfg, layered[0]))
        raise ConfigContractError(
            f"vllm_cfg.{layered[0]}={value} keeps layers out of FP8 by their parameter names, which the trainer "
            "reads from the model, not the recipe; pass engine_kwargs(overrides={'hf_overrides': "
            "{'quantization_config': {..., 'ignored_layers': [...]}}})",
            path=f"vllm_cfg.{layered[0]}",
            value=value,
        )
    return dict(MXFP8_QUANTIZATION if cfg.is_mx else FP8_BLOCK_QUANTIZATION)


def engine_kwargs(
    recipe: LoadedRecipe | VllmConfig,
    *,
    seed: int,
    model: str | None = None,
    served_model_name: str | None = None,
    load_format: str | None = None,
    skip_tokenizer_init: bool | None = None,
    enable_prefix_caching: bool | None = None,
    enable_sleep_mode: bool = False,
    worker_extension_cls: str | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> EngineKwargs:
    """The keyword arguments of ``vllm.LLM`` for the recipe's generation section, as NeMo RL's vLLM worker builds
    them: ``LLM(**engine_kwargs(recipe, seed=0))``.

    In order: ``model`` (:func:`resolve_model_name`), ``served_model_name`` (default: the model),
    ``load_format`` (the option, else ``vllm_cfg.load_format``, else ``"auto"``: weights from the model path;
    trainers that refit pass ``"dummy"``), ``skip_tokenizer_init`` (option, else ``vllm_cfg``, else ``False``),
    ``tensor_parallel_size``, ``pipeline_parallel_size``, ``enable_expert_parallel`` (``expert_parallel_size >
    1``), ``gpu_memory_utilization``, ``enable_prefix_caching`` (option, else ``vllm_cfg``, else ``True``,
    vLLM's default), ``dtype`` (``vllm_cfg.precision``; ``"bfloat16"`` for ``fp8``), ``seed``, ``enforce_eager``, ``max_model_len``,
    ``trust_remote_code=True``, ``enable_sleep_mode`` (option, default ``False``), ``disable_log_stats=False``
    (``LLM.get_metrics()`` and the Prometheus registry need stat logging); then, when they apply,
    ``worker_extension_cls`` (option), ``distributed_executor_backend`` (:func:`derived_executor_backend`),
    ``logprobs_mode`` and ``kv_cache_dtype`` (when not ``"auto"``) from ``vllm_cfg``, and ``hf_overrides``
    (``policy.hf_config_overrides`` of a :class:`LoadedRecipe`, when set); with ``precision: fp8``, as the
    trainer's FP8 setup: ``quantization="fp8"``, ``kv_cache_dtype`` always, and ``hf_overrides.quantization_config``
    (:data:`FP8_BLOCK_QUANTIZATION`, :data:`MXFP8_QUANTIZATION` with ``is_mx``; the recipe's overrides win); then
    every ``vllm_kwargs`` key; then
    ``overrides``, which replace any of the above (a caller's explicit choice, e.g.
    ``{"distributed_executor_backend": "uni", "max_num_seqs": 4}`` on a CPU).

    The trainer-specific keys (a worker extension class, sleep mode for colocated refit, ``"dummy"`` weights)
    are options, not hard-coded.  ``vllm_cfg.env_vars`` are the trainer's to export before the engine starts.

    Raises:
        ContractTypeError: ``recipe`` is neither a ``LoadedRecipe`` nor a ``VllmConfig``; ``seed`` is not an int;
            an option of the wrong type; ``overrides`` is not a mapping with ``str`` keys.
        ConfigContractError: no model name (see :func:`resolve_model_name`); ``vllm_cfg.precision`` or
            ``vllm_cfg.enforce_eager`` unset (the trainer reads both; P1); a ``vllm_kwargs`` key the trainer sets
            (a duplicate keyword, P16) or derives (``distributed_executor_backend``, ``hf_overrides``: silently
            overwritten, P16), ``kv_cache_dtype`` or ``logprobs_mode`` there beside the ``vllm_cfg`` key (the
            trainer applies ``vllm_cfg``'s last), ``quantization``/``kv_cache_dtype`` there with ``precision: fp8``;
            ``precision: fp8`` with layers kept in bf16 (their names come from the model) unless ``overrides``
            holds ``hf_overrides``; ``policy.hf_config_overrides`` that is not a mapping.

    Divergence: the reference passes ``disable_log_stats=True`` and hard-codes its worker extension class, sleep
    mode and ``logprobs_mode="processed_logprobs"``; here stat logging is on, and the other three are options or
    recipe keys.  The reference silently overwrites ``vllm_kwargs.distributed_executor_backend`` and
    ``vllm_kwargs.hf_overrides``; here they are errors.  The trainer's FP8 setup also patches vLLM's weight
    loading for refit: that stays the trainer's.
    """
    generation = cast(VllmConfig, _section(recipe, "recipe", VllmConfig))
    cfg = generation.vllm_cfg
    seed = require_int(seed, "seed")
    name = resolve_model_name(recipe, model=model)
    served = _optional_str(served_model_name, "served_model_name")
    chosen_format = _optional_str(load_format, "load_format")
    skip = _optional_bool(skip_tokenizer_init, "skip_tokenizer_init")
    prefix_caching = _optional_bool(enable_prefix_caching, "enable_prefix_caching")
    require_bool(enable_sleep_mode, "enable_sleep_mode")
    extension = _optional_str(worker_extension_cls, "worker_extension_cls")
    if overrides is not None and (
        not isinstance(overrides, Mapping) or not all(isinstance(key, str) for key in overrides)
    ):
        raise ContractTypeError.for_value(
            "overrides", "a mapping of engine argument names (str) to values", overrides
        )
    fp8 = cfg.precision == "fp8"
    quantization_config = _fp8_quantization(cfg, overrides or {}) if fp8 else None
    kv_cache_dtype = cfg.kv_cache_dtype if cfg.kv_cache_dtype not in (None, "auto") else None
    passed = _pass_through(generation, kv_cache_dtype)

    kwargs: dict[str, Any] = {
        "model": name,
        "served_model_name": served if served is not None else name,
        "load_format": chosen_format or cfg.load_format or "auto",
        "skip_tokenizer_init": skip if skip is not None else bool(cfg.skip_tokenizer_init),
        "tensor_parallel_size": cfg.tensor_parallel_size,
        "pipeline_parallel_size": cfg.pipeline_parallel_size,
        "enable_expert_parallel": cfg.expert_parallel_size > 1,
        "gpu_memory_utilization": cfg.gpu_memory_utilization,
        "enable_prefix_caching": (
            prefix_caching
            if prefix_caching is not None
            else (True if cfg.enable_prefix_caching is None else cfg.enable_prefix_caching)
        ),
        "dtype": "bfloat16"
        if fp8
        else _required(cfg.precision, "vllm_cfg.precision", "it is the engine dtype"),
        "seed": seed,
        "enforce_eager": _required(cfg.enforce_eager, "vllm_cfg.enforce_eager", "the trainer reads it"),
        "max_model_len": cfg.max_model_len,
        "trust_remote_code": True,
        "enable_sleep_mode": enable_sleep_mode,
        "disable_log_stats": False,
    }
    if extension is not None:
        kwargs["worker_extension_cls"] = extension
    backend = derived_executor_backend(generation)
    if backend is not None:
        kwargs["distributed_executor_backend"] = backend
    if cfg.logprobs_mode is not None:
        kwargs["logprobs_mode"] = cfg.logprobs_mode
    if fp8:
        kwargs["quantization"] = "fp8"
        kwargs["kv_cache_dtype"] = cfg.kv_cache_dtype
    elif kv_cache_dtype is not None:
        kwargs["kv_cache_dtype"] = kv_cache_dtype
    hf_overrides: dict[str, Any] = (
        {} if quantization_config is None else {"quantization_config": quantization_config}
    )
    if isinstance(recipe, LoadedRecipe):
        path = _sibling(recipe.section, "hf_config_overrides")
        configured = _document_value(recipe, path)
        if configured is not None and not isinstance(configured, dict):
            raise ConfigContractError(
                f"{path} must be a mapping of model config overrides, got {type_name(configured)}",
                path=path,
                value=render(configured),
            )
        hf_overrides.update(
            configured or {}
        )  # the recipe's overrides win over the FP8 setup's, as the trainer's
    if hf_overrides:
        kwargs["hf_overrides"] = hf_overrides
    kwargs.update(passed)
    kwargs.update(overrides or {})
    return cast(EngineKwargs, kwargs)


def _stop_strings(configured: list[str] | None, extra: object) -> list[str] | None:
    """The recipe's stop strings, then the call's, each once, in first-seen order; ``None`` when there are none."""
    if extra is not None and (not is_collection(extra) or isinstance(extra, Mapping)):
        raise ContractTypeError.for_value(
            "stop_strings", "a collection of str (not a bare str) or None", extra
        )
    added = [] if extra is None else list(cast(Collection[object], extra))
    odd = next((item for item in added if not isinstance(item, str)), None)
    if odd is not None:
        raise ContractTypeError.for_value(
            "stop_strings", "a collection of str", odd, actual=f"an item {type_name(odd)}"
        )
    merged = list(dict.fromkeys([*(configured or []), *cast(list[str], added)]))
    return merged or None


def sampling_kwargs(
    generation: LoadedRecipe | GenerationConfig,
    *,
    greedy: bool = False,
    max_new_tokens: int | None = None,
    stop_strings: Collection[str] | None = None,
    ignore_eos: bool = False,
) -> SamplingKwargs:
    """The keyword arguments of ``vllm.SamplingParams`` for a rollout, as NeMo RL's vLLM worker builds them:
    ``SamplingParams(**sampling_kwargs(recipe))``.

    ``temperature`` (0 when ``greedy``), ``top_p``, ``top_k`` (1 when ``greedy``, else the recipe's value, or -1
    for ``null``: no filtering), ``max_tokens`` (``max_new_tokens`` when given, else the recipe's),
    ``logprobs=0`` (the sampled token's log-prob only, which the learner compares with), ``stop_token_ids``,
    ``stop`` (the recipe's ``stop_strings`` then the call's, each once; ``None`` when there are none),
    ``include_stop_str_in_output=True`` (the learner sees the tokens the engine generated), ``bad_words`` and
    ``ignore_eos``.  ``vllm_cfg.cap_max_tokens_to_context`` needs the prompt length, so it is the caller's:
    ``min(max_tokens, max_model_len - len(prompt))``.

    Raises:
        ContractTypeError: ``generation`` is neither a ``LoadedRecipe`` nor a ``GenerationConfig``; ``greedy`` or
            ``ignore_eos`` not a bool; ``max_new_tokens`` not an int or ``None``; ``stop_strings`` not a
            collection of ``str`` (a bare ``str`` is rejected) or ``None``.
        ConfigContractError: ``max_new_tokens`` below 1.
    """
    section = _section(generation, "generation", GenerationConfig)
    require_bool(greedy, "greedy")
    require_bool(ignore_eos, "ignore_eos")
    max_tokens = section.max_new_tokens
    if max_new_tokens is not None:
        max_tokens = require_int(max_new_tokens, "max_new_tokens")
        if max_tokens < 1:
            raise ConfigContractError(
                f"max_new_tokens={render(max_tokens)} must be at least 1 (vLLM generates at least one token)",
                path="max_new_tokens",
                value=render(max_tokens),
            )
    stop = _stop_strings(section.stop_strings, stop_strings)
    return SamplingKwargs(
        temperature=0.0 if greedy else float(section.temperature),
        top_p=float(section.top_p),
        top_k=1 if greedy else (-1 if section.top_k is None else section.top_k),
        max_tokens=max_tokens,
        logprobs=0,
        stop_token_ids=None if section.stop_token_ids is None else list(section.stop_token_ids),
        stop=stop,
        include_stop_str_in_output=True,
        bad_words=None if section.bad_words is None else list(section.bad_words),
        ignore_eos=ignore_eos,
    )


# --------------------------------------------------------------------------------------------------------------
# Reading sampling parameters back, and a scorer that must reproduce them (issue 30)

LogprobsMode: TypeAlias = Literal["raw_logprobs", "raw_logits", "processed_logprobs", "processed_logits"]
"""vLLM's ``logprobs_mode``: ``processed_*`` are computed after temperature and top-p/top-k/min-p."""
_MODES: Final = frozenset(get_args(LogprobsMode))
_SAMPLING_FIELDS: Final = ("temperature", "top_p", "top_k", "min_p", "logprobs_mode")
_RELATIVE_TOLERANCE: Final = 1e-6
"""Floats compare equal to this relative tolerance: a value stored in float32 (0.800000011920929) is 0.8."""


class SamplingParamsLike(Protocol):
    """vLLM ``SamplingParams`` (or a recipe's generation section) as read here: ``temperature``, ``top_p`` and
    ``top_k``; ``min_p`` and ``logprobs_mode`` (or ``vllm_cfg.logprobs_mode``) are read when present."""

    @property
    def temperature(self) -> float: ...

    @property
    def top_p(self) -> float: ...

    @property
    def top_k(self) -> int | None: ...


@dataclass(frozen=True)
class SamplingSettings:
    """The parameters that decide the distribution vLLM sampled from and the one its logprobs describe.

    ``top_k`` is -1 when off (vLLM's ``None``, 0 and -1 all mean no top-k); ``logprobs_mode`` is ``None`` when the
    source does not say (a ``SamplingParams`` carries none: it is an engine argument).
    """

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1
    min_p: float = 0.0
    logprobs_mode: LogprobsMode | None = None

    @property
    def truncates(self) -> bool:
        """Whether sampling keeps only part of the vocabulary (top-p < 1, top-k on, or min-p > 0)."""
        return self.top_p < 1.0 or self.top_k > 0 or self.min_p > 0.0

    @property
    def truncation(self) -> str:
        """The truncating parameters as ``"top_p=0.95, top_k=20"`` (empty when none truncates)."""
        parts = [f"top_p={self.top_p:g}"] if self.top_p < 1.0 else []
        parts += [f"top_k={self.top_k}"] if self.top_k > 0 else []
        parts += [f"min_p={self.min_p:g}"] if self.min_p > 0.0 else []
        return ", ".join(parts)


SamplingSource: TypeAlias = SamplingSettings | SamplingParamsLike | Mapping[str, object]
"""What :func:`sampling_settings` reads: a :class:`SamplingSettings`, an object with the attributes of
:class:`SamplingParamsLike` (vLLM ``SamplingParams``, a validated generation section, a ``LoadedRecipe`` through
its ``generation``), or a mapping with those keys."""


def _read(source: object, name: str) -> object:
    if isinstance(source, Mapping):
        return source.get(name)
    return getattr(source, name, None)


def _real(value: object, field: str, default: float) -> float:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ContractTypeError.for_value(field, "a real number (int or float, not bool)", value)
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _invalid(field: str, value: object, rule: str) -> SamplingParamsError:
    return SamplingParamsError(
        f"{field}={render(value)} {rule}", field=field, fields=(field,), rollout_value=render(value)
    )


def _mode(value: object, field: str) -> LogprobsMode | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ContractTypeError.for_value(field, f"one of {sorted(_MODES)} or None", value)
    if value not in _MODES:
        raise _invalid(field, value, f"is not a vLLM logprobs_mode: use one of {', '.join(sorted(_MODES))}")
    return cast(LogprobsMode, value)


def _source_mode(source: object) -> object:
    """``logprobs_mode`` of the source, else of its ``vllm_cfg`` (a recipe's vLLM generation section)."""
    mode = _read(source, "logprobs_mode")
    return mode if mode is not None else _read(_read(source, "vllm_cfg"), "logprobs_mode")


def sampling_settings(source: SamplingSource, *, logprobs_mode: str | None = None) -> SamplingSettings:
    """``source``'s sampling parameters as a checked :class:`SamplingSettings`.

    Absent parameters take vLLM's ``SamplingParams`` defaults (temperature 1, top-p 1, top-k off, min-p 0), as
    ``SamplingParams(**mapping)`` would.  ``logprobs_mode`` states the engine's mode when the source carries none;
    a ``LoadedRecipe`` is read through its validated ``generation`` section.

    Raises:
        ContractTypeError: ``source`` is none of the accepted kinds, or a parameter of the wrong type (a bool, a
            string for a number, a float ``top_k``).
        SamplingParamsError: a value vLLM refuses (temperature negative or not finite, top-p outside (0, 1],
            top-k below -1, min-p outside [0, 1], an unknown logprobs mode), or ``logprobs_mode`` given while the
            source states another one.
    """
    if isinstance(source, SamplingSettings):
        base = source
        if logprobs_mode is None:
            return base
        source = {name: getattr(base, name) for name in _SAMPLING_FIELDS}
    if (
        not isinstance(source, Mapping)
        and not hasattr(source, "temperature")
        and hasattr(source, "generation")
    ):
        source = source.generation  # a LoadedRecipe: its validated generation section
    if not isinstance(source, Mapping) and not hasattr(source, "temperature"):
        raise ContractTypeError.for_value(
            "sampling",
            "vLLM SamplingParams, a mapping of sampling parameters, or a generation section",
            source,
        )
    temperature = _real(_read(source, "temperature"), "temperature", 1.0)
    if not (math.isfinite(temperature) and temperature >= 0.0):
        raise _invalid("temperature", temperature, "must be finite and >= 0 (0 samples greedily)")
    top_p = _real(_read(source, "top_p"), "top_p", 1.0)
    if not 0.0 < top_p <= 1.0:
        raise _invalid("top_p", top_p, "must lie in (0, 1] (1 keeps the whole vocabulary)")
    raw_k = _read(source, "top_k")
    if raw_k is not None and not is_int(raw_k):
        raise ContractTypeError.for_value("top_k", "an int or None", raw_k)
    top_k = -1 if raw_k is None else as_int(raw_k)
    if top_k < -1:
        raise _invalid("top_k", top_k, "must be >= -1 (-1, 0 or None: no top-k)")
    min_p = _real(_read(source, "min_p"), "min_p", 0.0)
    if not 0.0 <= min_p <= 1.0:
        raise _invalid("min_p", min_p, "must lie in [0, 1] (0: no min-p)")
    stated = _mode(_source_mode(source), "logprobs_mode")
    given = _mode(logprobs_mode, "logprobs_mode")
    if stated is not None and given is not None and stated != given:
        raise SamplingParamsError(
            f"logprobs_mode={render(given)} was passed but the sampling parameters say {render(stated)}; pass one",
            field="logprobs_mode",
            fields=("logprobs_mode",),
            rollout_value=stated,
            scoring_value=given,
        )
    return SamplingSettings(temperature, top_p, max(top_k, 0) or -1, min_p, stated or given)


def _differs(field: str, rollout: object, scoring: object) -> bool:
    if field == "logprobs_mode":
        return rollout is not None and scoring is not None and rollout != scoring
    if isinstance(rollout, float) and isinstance(scoring, float):
        return not math.isclose(rollout, scoring, rel_tol=_RELATIVE_TOLERANCE)
    return rollout != scoring


def check_scoring_matches_rollout(
    rollout: SamplingSource, scoring: SamplingSource, *, scorer: str = "learner"
) -> SamplingSettings:
    """Check that ``scoring`` (how the learner or a teacher computes log-probabilities) reproduces ``rollout``
    (how vLLM sampled); return the rollout's :class:`SamplingSettings`.

    Temperature, top-p, top-k and min-p must be equal (floats to a relative 1e-6, so float32 copies match; top-k
    off compares equal however it is spelled); ``logprobs_mode`` is compared when both sides state it.  A scorer
    at another temperature scores a sharper or flatter distribution; one without the rollout's top-p/top-k/min-p
    scores the full vocabulary while processed logprobs are renormalised over the kept support.

    Raises:
        SamplingParamsError: a parameter differs; the message names every differing field with both values, and
            the attributes the first one (``field``, ``rollout_value``, ``scoring_value``) and ``scorer``.
        ContractTypeError, SamplingParamsError: as :func:`sampling_settings` for either side; ``scorer`` not a
            ``str``.

    >>> check_scoring_matches_rollout({"temperature": 0.8, "top_p": 0.95}, {"temperature": 0.8, "top_p": 0.95})
    SamplingSettings(temperature=0.8, top_p=0.95, top_k=-1, min_p=0.0, logprobs_mode=None)
    """
    if not isinstance(scorer, str):
        raise ContractTypeError.for_value("scorer", "a str naming who scores ('learner', 'teacher')", scorer)
    expected = sampling_settings(rollout)
    actual = sampling_settings(scoring)
    differing = [
        field
        for field in _SAMPLING_FIELDS
        if _differs(field, getattr(expected, field), getattr(actual, field))
    ]
    if differing:
        shown = "; ".join(
            f"{field}={render(getattr(actual, field))} but the rollout sampled at {field}="
            f"{render(getattr(expected, field))}"
            for field in differing
        )
        first = differing[0]
        raise SamplingParamsError(
            f"the {render_name(scorer)} scores with {shown}: its log-probabilities describe another distribution "
            "than the one vLLM sampled from, so every importance ratio or distillation target is biased; score "
            "with the rollout's sampling parameters",
            field=first,
            fields=tuple(differing),
            rollout_value=getattr(expected, first),
            scoring_value=getattr(actual, first),
            scorer=scorer,
        )
    return expected
