"""``data`` of a training recipe: its datasets (NeMo RL's ``DataConfig``; the evaluation data configs are in
:mod:`.eval`).

A dataset entry (``data.train``, ``data.validation``, ``data.default``) is open: datasets read options of their own
(``repeat``, ``num_images``, ...), so only the keys NeMo RL declares are typed there and other keys are not reported.
An entry is a preference dataset when it names ``prompt_key``, ``chosen_key`` or ``rejected_key``, else a response
dataset; ``train`` and ``validation`` may also be lists of response datasets.
"""

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal

from ..._internal.config_scalars import (
    AtLeastOne,
    ConfigBool,
    ConfigInt,
    ConfigStr,
    NonNegative,
    NonNegativeFloat,
    StrictStr,
)
from .variants import Omittable, SectionModel, chosen_by, tag

__all__ = [
    "DataConfig",
    "PreferenceDatasetConfig",
    "ResponseDatasetConfig",
]


class DatasetConfig(SectionModel):
    """The keys response and preference datasets share; a dataset's own keys are open."""

    open_keys: ClassVar[bool] = True

    dataset_name: Omittable[ConfigStr] = None
    """Registered dataset name (e.g. ``"OpenMathInstruct-2"``) or a loader."""
    data_path: Omittable[ConfigStr] = None
    """Local file or folder of the data."""
    subset: ConfigStr | None = None
    """Dataset subset (configuration); null for the default."""
    split: Omittable[ConfigStr] = None
    """Dataset split (``"train"``, ``"validation"``, ...)."""
    prompt_file: ConfigStr | None = None
    """File holding the prompt template; null for none."""
    system_prompt_file: ConfigStr | None = None
    """File holding the system prompt; null for none."""
    num_frames: Omittable[AtLeastOne] = None
    """Video frames sampled per sample, ≥ 1."""
    video_sampling_style: Omittable[Annotated[Literal["nemotron_vl"], StrictStr]] = None
    """Video frame sampling style."""
    video_target_num_patches: AtLeastOne | None = None
    """Target vision patches per video, ≥ 1; null for the processor's."""
    video_temporal_patch_size: Omittable[AtLeastOne] = None
    """Frames merged into one temporal patch, ≥ 1."""
    video_maintain_aspect_ratio: Omittable[ConfigBool] = None
    """Keep the aspect ratio of video frames."""
    min_generation_tokens: Omittable[NonNegative] = None
    """Tokens left for generation after the prompt, ≥ 0."""


class ResponseDatasetConfig(DatasetConfig):
    """A dataset of prompts (and reference responses): GRPO, SFT, distillation."""

    input_key: Omittable[ConfigStr] = None
    """Column of the input (prompt)."""
    output_key: Omittable[ConfigStr] = None
    """Column of the output (reference response)."""
    env_name: Omittable[ConfigStr] = None
    """Environment that scores this dataset's responses (a key of ``env``)."""
    processor: Omittable[ConfigStr] = None
    """Data processor that turns a row into a message log."""
    download_dir: Omittable[ConfigStr] = None
    """Folder datasets are downloaded to."""
    split_validation_size: Omittable[NonNegativeFloat] = None
    """Fraction of the training data held out for validation, ≥ 0 (0: none)."""
    seed: Omittable[ConfigInt] = None
    """Seed of the validation split."""


class PreferenceDatasetConfig(DatasetConfig):
    """A dataset of preference pairs: DPO and reward models."""

    prompt_key: Omittable[ConfigStr] = None
    """Column of the prompt."""
    chosen_key: Omittable[ConfigStr] = None
    """Column of the chosen response."""
    rejected_key: Omittable[ConfigStr] = None
    """Column of the rejected response."""


_PREFERENCE_KEYS = ("prompt_key", "chosen_key", "rejected_key")


def _dataset(value: Any) -> str:
    if isinstance(value, list | tuple):
        return "list"
    if isinstance(value, Mapping) and any(key in value for key in _PREFERENCE_KEYS):
        return "preference"
    return "response"


def _entry(value: Any) -> str:
    return (
        "preference"
        if isinstance(value, Mapping) and any(k in value for k in _PREFERENCE_KEYS)
        else "response"
    )


Dataset = Annotated[
    Annotated[ResponseDatasetConfig, tag("response")]
    | Annotated[PreferenceDatasetConfig, tag("preference")]
    | Annotated[list[ResponseDatasetConfig], tag("list")],
    chosen_by(_dataset),
]
DatasetDefaults = Annotated[
    Annotated[ResponseDatasetConfig, tag("response")] | Annotated[PreferenceDatasetConfig, tag("preference")],
    chosen_by(_entry),
]


class DataConfig(SectionModel):
    """``data`` of every training algorithm."""

    max_input_seq_length: AtLeastOne | None
    """Longest prompt in tokens, ≥ 1; null for no limit. Required, may be null."""
    add_bos: Omittable[ConfigBool] = None
    """Prepend the BOS token."""
    add_eos: Omittable[ConfigBool] = None
    """Append the EOS token."""
    add_generation_prompt: Omittable[ConfigBool] = None
    """End prompts with the generation prompt of the chat template."""
    add_system_prompt: Omittable[ConfigBool] = None
    """Add the system prompt."""
    shuffle: ConfigBool
    """Shuffle the training data. Required."""
    num_workers: Omittable[NonNegative] = None
    """Data-loader worker processes, ≥ 0."""
    use_multiple_dataloader: Omittable[ConfigBool] = None
    """One data loader per dataset (rule P7)."""
    num_prompts_per_dataloader: Omittable[AtLeastOne] = None
    """Prompts each data loader contributes per step, ≥ 1 (rule P7)."""
    custom_dataloader: Omittable[ConfigStr] = None
    """Import path of a custom data loader."""
    train: Dataset
    """The training dataset(s). Required."""
    validation: Dataset | None = None
    """The validation dataset(s); null for none."""
    default: DatasetDefaults | None = None
    """Defaults every dataset entry inherits; null for none."""
