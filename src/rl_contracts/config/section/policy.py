"""The trained model of a recipe: ``policy`` (NeMo RL's ``PolicyConfig``; also ``teacher`` in distillation) and
PPO's ``value`` (``ValueConfig``), with their tokenizer, batching, draft, router-replay, optimizer and scheduler
settings.  The training backends are :mod:`.dtensor` and :mod:`.megatron`.

``policy.generation`` is checked on its own (:class:`~rl_contracts.config.VllmConfig`, with rules C1-C11), so it is
declared here as an open mapping and never reported twice.
"""

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from ..._internal.config_scalars import (
    AtLeastOne,
    ConfigBool,
    ConfigFloat,
    ConfigStr,
    NonNegativeFloat,
    StrictStr,
)
from .checkpointing import PretrainedCheckpointConfig
from .dtensor import DTensorSection
from .megatron import MegatronSection
from .variants import (
    DISABLED,
    ENABLED,
    SWITCH,
    DisabledSection,
    IntList,
    Omittable,
    OpenMapping,
    SectionModel,
    StrictTrue,
    chosen_by,
    tag,
)

__all__ = [
    "DraftConfig",
    "DynamicBatchingConfig",
    "PolicyConfig",
    "PytorchMilestonesConfig",
    "PytorchOptimizerConfig",
    "PytorchSchedulerConfig",
    "RewardModelConfig",
    "RouterReplayConfig",
    "SequencePackingConfig",
    "TokenizerConfig",
    "TrainedModelConfig",
    "ValueConfig",
]


class TokenizerConfig(SectionModel):
    """``policy.tokenizer`` (and eval's top-level ``tokenizer``): which tokenizer and chat template."""

    name: ConfigStr
    """Tokenizer name or path (usually ``${policy.model_name}``). Required."""
    chat_template: ConfigStr | None = None
    """A Jinja chat template, ``"default"``, or null for the tokenizer's own."""
    chat_template_kwargs: OpenMapping | None = None
    """Keyword arguments of the chat template (e.g. ``enable_thinking``), passed through."""
    audio: Omittable[OpenMapping] = None
    """Audio processor options, passed through."""
    video: Omittable[OpenMapping] = None
    """Video processor options, passed through."""
    use_processor: Omittable[ConfigBool] = None
    """Load the model's processor instead of a bare tokenizer."""
    use_fastokens: Omittable[ConfigBool] = None
    """Use the fastokens tokenizer."""


class RewardModelConfig(SectionModel):
    """``policy.reward_model_cfg``: train the policy as a reward model."""

    enabled: ConfigBool
    """Train a reward model. Required."""
    reward_model_type: ConfigStr
    """Reward-model head (e.g. ``"bradley_terry"``). Required."""


class DynamicBatchingConfig(SectionModel):
    """``policy.dynamic_batching`` when enabled: micro-batches packed to a token budget."""

    enabled: StrictTrue
    """``true``: build micro-batches by token count."""
    train_mb_tokens: AtLeastOne
    """Token budget of a training micro-batch, ≥ 1. Required."""
    logprob_mb_tokens: Omittable[AtLeastOne] = None
    """Token budget of a log-probability micro-batch, ≥ 1."""
    sequence_length_round: AtLeastOne
    """Sequence lengths are rounded up to a multiple of this, ≥ 1. Required."""


class SequencePackingConfig(SectionModel):
    """``policy.sequence_packing`` when enabled: several sequences packed into one row."""

    enabled: StrictTrue
    """``true``: pack sequences."""
    train_mb_tokens: AtLeastOne
    """Token budget of a packed training micro-batch, ≥ 1. Required."""
    logprob_mb_tokens: Omittable[AtLeastOne] = None
    """Token budget of a packed log-probability micro-batch, ≥ 1."""
    algorithm: ConfigStr
    """Packing algorithm (e.g. ``"modified_first_fit_decreasing"``). Required."""
    microbatch_order: Omittable[Annotated[Literal["packer", "largest_first"], StrictStr]] = None
    """Order of packed micro-batches."""


class DraftConfig(SectionModel):
    """``policy.draft`` when enabled: an Eagle draft model trained beside the policy."""

    enabled: StrictTrue
    """``true``: train a draft model."""
    model_name: ConfigStr | None = None
    """Draft model name or path; null to build one."""
    loss_weight: Omittable[ConfigFloat] = None
    """Weight of the draft loss."""
    num_layers: AtLeastOne | None = None
    """Draft layers; null for the default."""
    aux_layer_indices: IntList | None = None
    """Policy layers whose hidden states feed the draft; null for the default."""


class RouterReplayConfig(SectionModel):
    """``policy.router_replay`` when enabled: the trainer replays vLLM's expert routes (R3)."""

    enabled: StrictTrue
    """``true``: replay routes (needs vLLM and Megatron, rule P20)."""


class PytorchOptimizerConfig(SectionModel):  # type: ignore[no-redef]  # a field named kwargs (pydantic plugin)
    """``policy.optimizer``: a ``torch.optim`` class and its keyword arguments."""

    name: ConfigStr
    """Import path of the optimizer class (e.g. ``"torch.optim.AdamW"``). Required."""
    kwargs: OpenMapping
    """Keyword arguments of the optimizer, passed through. Required."""


class PytorchSchedulerConfig(SectionModel):  # type: ignore[no-redef]  # a field named kwargs (pydantic plugin)
    """An item of ``policy.scheduler``: a ``torch.optim.lr_scheduler`` class and its keyword arguments."""

    name: ConfigStr
    """Import path of the scheduler class. Required."""
    kwargs: OpenMapping
    """Keyword arguments of the scheduler, passed through. Required."""


class PytorchMilestonesConfig(SectionModel):
    """An item of ``policy.scheduler``: the steps at which the next scheduler takes over."""

    milestones: IntList
    """Steps at which the next scheduler of the list takes over. Required."""


def _scheduler_item(value: Any) -> str:
    return "milestones" if isinstance(value, Mapping) and "milestones" in value else "scheduler"


def _list_or_mapping(value: Any) -> str:
    return "list" if isinstance(value, list | tuple) else "mapping"


SchedulerItem = Annotated[
    Annotated[PytorchSchedulerConfig, tag("scheduler")]
    | Annotated[PytorchMilestonesConfig, tag("milestones")],
    chosen_by(_scheduler_item),
]
Scheduler = Annotated[
    Annotated[list[SchedulerItem], tag("list")] | Annotated[dict[ConfigStr, IntList], tag("mapping")],
    chosen_by(_list_or_mapping),
]
DynamicBatchingSection = Annotated[
    Annotated[DynamicBatchingConfig, ENABLED] | Annotated[DisabledSection, DISABLED], SWITCH
]
SequencePackingSection = Annotated[
    Annotated[SequencePackingConfig, ENABLED] | Annotated[DisabledSection, DISABLED], SWITCH
]
DraftSection = Annotated[Annotated[DraftConfig, ENABLED] | Annotated[DisabledSection, DISABLED], SWITCH]
RouterReplaySection = Annotated[
    Annotated[RouterReplayConfig, ENABLED] | Annotated[DisabledSection, DISABLED], SWITCH
]


class TrainedModelConfig(SectionModel):
    """The keys the policy and PPO's value model share."""

    model_name: ConfigStr
    """Model name or path. Required."""
    tokenizer: TokenizerConfig
    """The tokenizer. Required."""
    train_global_batch_size: AtLeastOne
    """Samples per optimizer step, across all data-parallel ranks, ≥ 1. Required."""
    train_micro_batch_size: AtLeastOne
    """Samples per micro-batch on one rank, ≥ 1. Required."""
    logprob_batch_size: Omittable[AtLeastOne] = None
    """Samples per log-probability micro-batch, ≥ 1."""
    precision: ConfigStr
    """Training precision (``"bfloat16"``, ``"float32"``, ...). Required."""
    dtensor_cfg: DTensorSection
    """The DTensor backend (``enabled: false`` when Megatron trains). Required."""
    megatron_cfg: Omittable[MegatronSection] = None
    """The Megatron backend."""
    hf_config_overrides: Omittable[OpenMapping] = None
    """Hugging Face config attributes overridden when the model loads (open mapping)."""
    dynamic_batching: DynamicBatchingSection
    """Token-budget micro-batching (``enabled: false`` for fixed micro-batches). Required."""
    sequence_packing: Omittable[SequencePackingSection] = None
    """Sequence packing."""
    make_sequence_length_divisible_by: AtLeastOne
    """Sequences are padded to a multiple of this, ≥ 1. Required."""
    max_total_sequence_length: AtLeastOne
    """Longest prompt plus response, in tokens, ≥ 1. Required."""
    max_grad_norm: NonNegativeFloat | None = None
    """Gradient-norm clip, ≥ 0; null for none."""
    optimizer: PytorchOptimizerConfig | None = None
    """The ``torch.optim`` optimizer (DTensor); null under Megatron."""
    scheduler: Scheduler | None = None
    """Learning-rate schedulers: a list of schedulers and milestones, or a mapping; null for none."""


class PolicyConfig(TrainedModelConfig):
    """``policy`` (and distillation's ``teacher``): the trained model and how it trains."""

    logprob_chunk_size: AtLeastOne | None = None
    """Vocabulary chunk of the log-probability computation, ≥ 1; null for none."""
    generation: OpenMapping | None = None
    """The generation section: checked on its own as ``VllmConfig`` (rules C1-C11)."""
    generation_batch_size: Omittable[AtLeastOne] = None
    """Prompts per generation batch (non-vLLM backends), ≥ 1."""
    reward_model_cfg: Omittable[RewardModelConfig] = None
    """Train the policy as a reward model."""
    draft: Omittable[DraftSection] = None
    """An Eagle draft model trained beside the policy."""
    pretrained_checkpoint: Omittable[PretrainedCheckpointConfig] = None
    """A Megatron checkpoint to start from."""
    router_replay: Omittable[RouterReplaySection] = None
    """Replay vLLM's expert routes in training (R3)."""
    refit_buffer_size_gb: Omittable[NonNegativeFloat] = None
    """Size of the refit buffer in GB, ≥ 0."""
    quant_cfg: ConfigStr | None = None
    """ModelOpt quantization config of the policy."""
    quant_calib_data: ConfigStr | None = None
    """Calibration dataset of quantization."""
    quant_calib_size: AtLeastOne | None = None
    """Calibration samples, ≥ 1."""
    quant_batch_size: AtLeastOne | None = None
    """Calibration batch size, ≥ 1."""
    quant_sequence_length: AtLeastOne | None = None
    """Calibration sequence length, ≥ 1."""
    disable_modelopt_layer_spec: Omittable[ConfigBool] = None
    """Build the model without ModelOpt's layer spec."""
    is_vlm: Omittable[ConfigBool] = None
    """The model is a vision-language model."""


class ValueConfig(TrainedModelConfig):
    """PPO's ``value``: the value model and how it trains."""

    reward_model_cfg: RewardModelConfig
    """The value head (a reward-model head). Required."""
    dequantize_base_checkpoint: Omittable[ConfigBool] = None
    """Dequantize a quantized base checkpoint before training."""
