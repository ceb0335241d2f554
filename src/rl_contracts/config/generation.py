"""The generation section of a recipe (``policy.generation``): ``GenerationConfig``, ``VllmConfig`` and their rules.

SPEC §1.1 (fields, "Req." semantics) and §1.2 (rules C1–C11).  Cross-field rules run after field validation and
report *every* violation at once inside one pydantic ``ValidationError``; each line error's ``loc`` is the dotted
key the rule reports against, relative to the generation section (e.g. ``("vllm_cfg", "pipeline_parallel_size")``),
and its ``type`` is ``config_rule_<rule>`` (``config_rule_c9_missing`` / ``config_rule_c11_missing`` mark an absent
key).  Scalars are strict (:mod:`rl_contracts.config._scalars`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, ValidationInfo, model_validator
from pydantic_core import PydanticCustomError

from .._messages import render
from ._base import ConfigModel
from ._scalars import (
    AtLeastOne,
    ConfigBool,
    ConfigFloat,
    ConfigInt,
    ConfigStr,
    NonNegativeFloat,
    Port,
    StrictStr,
    StrList,
    TokenIdList,
)
from ._view import ConfigView
from ._violations import MISSING, Loc, Violation, raise_violations
from .refit_models import VllmRefitConfig
from .refit_steps import check_refit, nvfp4_violations
from .vllm_args import VllmSpecificArgs

__all__ = [
    "ColocationConfig",
    "ColocationResources",
    "GenerationConfig",
    "Nvfp4PerTokenRolloutConfig",
    "VllmConfig",
]


class ColocationResources(ConfigModel):
    """GPUs reserved for generation when it is not colocated (extra keys allowed)."""

    gpus_per_node: AtLeastOne | None
    """GPUs per node for generation; required, may be null (then the trainer decides). ≥ 1 when set."""
    num_nodes: AtLeastOne | None
    """Nodes for generation; required, may be null (then the trainer decides). ≥ 1 when set."""


class ColocationConfig(ConfigModel):
    """Whether generation shares the training GPUs (CUDA-IPC refit) or runs on its own (extra keys allowed)."""

    enabled: ConfigBool
    """True: generation shares the training GPUs and refit uses CUDA-IPC. Required."""
    resources: ColocationResources
    """Dedicated generation resources (used when not colocated). Required."""


class Nvfp4PerTokenRolloutConfig(ConfigModel):
    """NVFP4 per-token quantized rollout (extra keys allowed); excludes ``quant_cfg``, real quant and transports."""

    enabled: ConfigBool = False
    """Turn NVFP4 per-token rollout on (rule C10)."""


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


class GenerationConfig(ConfigModel):
    """The backend-agnostic generation section ``policy.generation`` (extra keys allowed).

    Sampling rules C1 (``top_k``/``top_p`` and their ``val_`` twins) run per field; the port range rule (C2)
    after the fields.
    """

    backend: ConfigStr
    """Generation backend (``"vllm"`` for :class:`VllmConfig`)."""
    max_new_tokens: AtLeastOne
    """Maximum generated tokens per sample, ≥ 1."""
    temperature: NonNegativeFloat
    """Sampling temperature, ≥ 0."""
    top_p: Annotated[ConfigFloat, _TOP_P]
    """Top-p (nucleus) sampling, 0 < p ≤ 1 (1.0: no filtering; rule C1)."""
    top_k: Annotated[ConfigInt, _TOP_K] | None
    """Top-k sampling: null or -1 for no filtering, else ≥ 1 (rule C1). Required, may be null."""
    val_temperature: NonNegativeFloat
    """Validation sampling temperature, ≥ 0 (recipes usually interpolate ``${.temperature}``)."""
    val_top_p: Annotated[ConfigFloat, _TOP_P]
    """Validation top-p, 0 < p ≤ 1 (rule C1)."""
    val_top_k: Annotated[ConfigInt, _TOP_K] | None
    """Validation top-k: null or -1 for no filtering, else ≥ 1 (rule C1). Required, may be null."""
    stop_token_ids: TokenIdList | None
    """Token ids that stop generation, each ≥ 0. Required, may be null."""
    stop_strings: StrList | None
    """Strings that stop generation. Required, may be null."""
    model_name: ConfigStr | None = None
    """Runtime-filled: the model name or path."""
    bad_words: StrList | None = None
    """Words the sampler must not produce."""
    colocated: ColocationConfig | None = None
    """Colocation of generation with training."""
    port_range_low: Port | None = None
    """Lowest port generation workers may bind, 1–65535, ≤ ``port_range_high``."""
    port_range_high: Port | None = None
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
        raise_violations(type(self).__name__, self._rule_violations(), self)
        return self

    def _rule_violations(self) -> list[Violation]:
        """Every cross-field violation of this section, in rule order (extended by subclasses)."""
        low, high = self.port_range_low, self.port_range_high
        if low is not None and high is not None and low > high:
            return [
                Violation(
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

    backend: Annotated[Literal["vllm"], StrictStr]
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
    real_quant_ignore: StrList | None = None
    """Layer-name patterns real quantization leaves alone."""
    nvfp4_pertoken_rollout: Nvfp4PerTokenRolloutConfig | None = None
    """NVFP4 per-token rollout (rule C10)."""
    worker_extension_cls_fqn: ConfigStr | None = None
    """Fully qualified vLLM worker extension class; excludes ``quant_cfg`` (rule C10)."""

    def _rule_violations(self) -> list[Violation]:
        view = ConfigView(self)
        return [
            *super()._rule_violations(),
            *_parallelism_violations(self.vllm_cfg),
            *check_refit(view, nvfp4=False, first_only=False).violations,
            *_exclusive_options(self, view),
            *_real_quant_violations(self),
        ]


def _parallelism_violations(vllm: VllmSpecificArgs) -> list[Violation]:
    """Rules C3–C5: pipeline parallelism needs the async engine; EP is a multiple of TP; DP inside vLLM is sync."""
    tp, pp, ep = vllm.tensor_parallel_size, vllm.pipeline_parallel_size, vllm.expert_parallel_size
    violations = []
    if pp > 1 and not vllm.async_engine:
        violations.append(
            Violation(
                "C3",
                ("vllm_cfg", "pipeline_parallel_size"),
                "When pipeline_parallel_size > 1, async_engine must be set to True in the vLLM configuration.",
                pp,
            )
        )
    if ep > 1 and ep % tp != 0:
        violations.append(
            Violation(
                "C4",
                ("vllm_cfg", "expert_parallel_size"),
                "When EP > 1, EP must be a multiple of TP since vLLM's EP = DP * TP.",
                ep,
            )
        )
    if ep > 1 and ep != tp and vllm.async_engine:
        violations.append(
            Violation(
                "C5",
                ("vllm_cfg", "async_engine"),
                "vLLM async_engine has some issues when using DP inside vLLM. Please update your "
                "configuration to set `policy.generation.vllm_cfg.async_engine=false`.",
                vllm.async_engine,
            )
        )
    return violations


def _exclusive_options(config: VllmConfig, view: ConfigView) -> list[Violation]:
    """Rule C10: a worker extension excludes ``quant_cfg``; NVFP4 per-token rollout excludes three options."""
    violations = []
    if config.worker_extension_cls_fqn is not None and config.quant_cfg is not None:
        violations.append(
            Violation(
                "C10",
                ("worker_extension_cls_fqn",),
                "worker_extension_cls_fqn and quant_cfg are mutually exclusive: got "
                f"worker_extension_cls_fqn={render(config.worker_extension_cls_fqn)} and "
                f"quant_cfg={render(config.quant_cfg)}.",
                config.worker_extension_cls_fqn,
            )
        )
    violations.extend(nvfp4_violations(view, ("quant_cfg", "real_quant", "refit_transport")))
    return violations


def _real_quant_violations(config: VllmConfig) -> list[Violation]:
    """Rule C11: a real-quant export states its CPU offload, and no offload needs colocated CUDA-IPC refit."""
    if config.real_quant is not True:
        return []
    offload = config.real_quant_export_cpu_offload
    loc: Loc = ("real_quant_export_cpu_offload",)
    if offload is None:
        given = "real_quant_export_cpu_offload" in config.model_fields_set
        return [
            Violation(
                "C11",
                loc,
                "generation.real_quant_export_cpu_offload must be a boolean",
                None if given else MISSING,
            )
        ]
    colocated = config.colocated is not None and config.colocated.enabled
    if offload is False and (not colocated or config.refit_transport is not None):
        return [
            Violation(
                "C11",
                loc,
                "generation.real_quant_export_cpu_offload=false requires colocated CUDA-IPC refit with no "
                "explicit refit_transport",
                offload,
            )
        ]
    return []
