"""The generation section of a recipe (``policy.generation``): ``GenerationConfig``, ``VllmConfig`` and their rules.

SPEC §1.1 (fields) and §1.2 (rules C1–C11, in :mod:`.cross_field` and :mod:`.refit_transport`).  The cross-field
rules run after field validation and report every finding in one ``ValidationError``: each line error's ``loc`` is
the reported key relative to the section, its ``type`` ``config_rule_<rule>`` (``..._missing`` for an absent key).
Validated with the context ``{FINDINGS: []}``, the findings are collected in that list instead, and a model with
findings does not run its cross-field rules.
"""

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, ConfigDict, Field, ValidationInfo, model_validator

from ..._internal.config_base import ConfigModel, collected_findings, report_findings
from ..._internal.config_scalars import (
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
from ..._internal.config_view import ConfigView
from ..finding import Finding
from .cross_field import (
    check_top_k,
    check_top_p,
    exclusive_option_findings,
    parallelism_findings,
    port_range_findings,
    real_quant_findings,
)
from .refit_cfg import VllmRefitConfig
from .refit_transport import check_refit
from .vllm_cfg import VllmSpecificArgs

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


_TOP_K = AfterValidator(check_top_k)
_TOP_P = AfterValidator(check_top_p)


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
    def _cross_field_rules(self, info: ValidationInfo) -> "GenerationConfig":
        if not collected_findings(info):  # a field's finding (C1) stops them, as a field's error does
            report_findings(type(self).__name__, self._rule_findings(), self, info)
        return self

    def _rule_findings(self) -> list[Finding]:
        """Every cross-field finding of this section, in rule order (extended by subclasses)."""
        return port_range_findings(self.port_range_low, self.port_range_high)


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

    # the model every recipe check validates: built at import (ConfigModel's other subclasses wait for first use)
    model_config = ConfigDict(defer_build=False)

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

    def _rule_findings(self) -> list[Finding]:
        view = ConfigView(self)
        return [
            *super()._rule_findings(),
            *parallelism_findings(self.vllm_cfg),
            *check_refit(view, nvfp4=False, first_only=False).findings,
            *exclusive_option_findings(view),
            *real_quant_findings(view),
        ]
