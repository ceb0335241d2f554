"""Rollout prompt checks and prompt formatting for vLLM generate (SPEC §4)."""

from __future__ import annotations

import copy
import pickle
import warnings
from typing import Any

import numpy as np
import pytest
import torch
from typing_extensions import assert_type

from rl_contracts.errors import (
    MAX_MESSAGE_CHARS,
    ContractTypeError,
    PromptFormatError,
    RolloutPromptMismatchError,
)
from rl_contracts.prompts import (
    TextPrompt,
    TokensPrompt,
    VllmPrompt,
    format_prompt_for_vllm_generation,
    validate_rollout_prompt,
)
from rl_contracts.testing.strategies import MediaItem

# --- validate_rollout_prompt (§4.1) ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("actual", "actual_length", "first_mismatch_index", "fragment"),
    [
        (None, None, None, "actual_length=None, first_mismatch_index=None. Refusing"),
        ([41], 1, 1, "actual_length=1, first_mismatch_index=1. Refusing"),
        ([41, 42, 43], 3, 2, "actual_length=3, first_mismatch_index=2. Refusing"),
        ([41, 99], 2, 1, "first_mismatch_index=1, expected_token=42, actual_token=99. Refusing"),
        ([], 0, 0, "actual_length=0, first_mismatch_index=0. Refusing"),
        ([7, 42], 2, 0, "first_mismatch_index=0, expected_token=41, actual_token=7."),
    ],
)
def test_rollout_prompt_mismatch_reports_lengths_and_first_mismatch(
    actual: list[int] | None, actual_length: int | None, first_mismatch_index: int | None, fragment: str
) -> None:
    """Each SPEC §4.1 example raises with the quoted key=value fragments and the matching attributes."""
    with pytest.raises(RolloutPromptMismatchError) as info:
        validate_rollout_prompt([41, 42], actual)
    message = str(info.value)
    assert message.startswith("vLLM processed prompt differs from the learner prompt: expected_length=2, ")
    assert fragment in message
    assert "Refusing to train on a different prompt." in message
    assert info.value.expected_length == 2
    assert info.value.actual_length == actual_length
    assert info.value.first_mismatch_index == first_mismatch_index
    assert isinstance(info.value, ValueError)


def test_rollout_prompt_mismatch_message_without_actual_is_exactly_the_spec_template() -> None:
    """With ``actual=None`` the message is exactly the quoted template, with no excerpt."""
    with pytest.raises(RolloutPromptMismatchError) as info:
        validate_rollout_prompt([41, 42], None)
    assert str(info.value) == (
        "vLLM processed prompt differs from the learner prompt: expected_length=2, actual_length=None, "
        "first_mismatch_index=None. Refusing to train on a different prompt."
    )


@pytest.mark.parametrize("kind", ["list", "tuple", "numpy", "torch", "numpy_uint16", "torch_int32"])
def test_rollout_prompt_container_type_never_matters(kind: str) -> None:
    """A tuple, numpy array or torch tensor with the same ids as the list passes (the reference rejects tuples)."""
    ids = [41, 42, 7]
    containers: dict[str, Any] = {
        "list": list(ids),
        "tuple": tuple(ids),
        "numpy": np.array(ids),
        "torch": torch.tensor(ids),
        "numpy_uint16": np.array(ids, dtype=np.uint16),
        "torch_int32": torch.tensor(ids, dtype=torch.int32),
    }
    validate_rollout_prompt(ids, containers[kind])
    validate_rollout_prompt(containers[kind], tuple(ids))


def test_two_empty_prompts_match() -> None:
    """Two empty prompts, of any container type, match."""
    validate_rollout_prompt([], [])
    validate_rollout_prompt(np.array([], dtype=np.int64), ())


def test_rollout_prompt_excerpt_is_bounded_for_huge_prompts() -> None:
    """A 200k-token mismatch gives a short message with at most 8 ids of each side around the mismatch."""
    expected = list(range(200_000))
    actual = [*expected[:150_000], -5, *expected[150_001:]]
    with pytest.raises(RolloutPromptMismatchError) as info:
        validate_rollout_prompt(expected, np.array(actual))
    message = str(info.value)
    assert len(message) <= 400
    assert "first_mismatch_index=150000, expected_token=150000, actual_token=-5" in message
    assert "Excerpts from index 149998: expected=[149998, 149999, 150000, 150001" in message
    assert "actual=[149998, 149999, -5, 150001" in message


@pytest.mark.parametrize(
    ("expected", "actual", "argument"),
    [
        (np.zeros((2, 2), dtype=np.int64), [0, 0], "expected"),
        ([1, 2], torch.zeros((1, 2), dtype=torch.int64), "actual"),
        ([1, 2], [1, 2.0], "actual"),
        ([1, True], [1, 1], "expected"),
        ([1, 2], np.array([1.0, 2.0]), "actual"),
        ([1, 2], torch.tensor([True, False]), "actual"),
        ("ab", [97, 98], "expected"),
        (None, [1], "expected"),
        ([1], 5, "actual"),
    ],
)
def test_rollout_prompt_rejects_non_integer_sequences(expected: Any, actual: Any, argument: str) -> None:
    """A 2-D array, a float or bool element, a string or a scalar raises ContractTypeError naming the argument."""
    with pytest.raises(ContractTypeError) as info:
        validate_rollout_prompt(expected, actual)
    assert info.value.argument is not None
    assert info.value.argument.startswith(argument)
    assert argument in str(info.value)


def test_rollout_prompt_error_survives_pickle() -> None:
    """The mismatch error keeps class, message and attributes through pickle (it crosses Ray workers)."""
    with pytest.raises(RolloutPromptMismatchError) as info:
        validate_rollout_prompt([41, 42], [41, 99])
    clone = pickle.loads(pickle.dumps(info.value))
    assert type(clone) is RolloutPromptMismatchError
    assert str(clone) == str(info.value)
    assert (clone.expected_length, clone.actual_length, clone.first_mismatch_index) == (2, 2, 1)


# --- format_prompt_for_vllm_generation (§4.2) --------------------------------------------------------------------


def _batch(kind: str = "torch", **extra: Any) -> dict[str, Any]:
    ids = [[5, 6, 7, 0], [8, 9, 0, 0]]
    lengths = [3, 2]
    if kind == "torch":
        data: dict[str, Any] = {"input_ids": torch.tensor(ids), "input_lengths": torch.tensor(lengths)}
    else:
        data = {"input_ids": np.array(ids), "input_lengths": np.array(lengths)}
    data.update(extra)
    return data


@pytest.mark.parametrize("kind", ["torch", "numpy"])
def test_batch_without_media_gives_token_prompts(kind: str) -> None:
    """The SPEC example without media gives one token prompt of the unpadded ids per row."""
    result = format_prompt_for_vllm_generation(_batch(kind))
    assert result == [{"prompt_token_ids": [5, 6, 7]}, {"prompt_token_ids": [8, 9]}]
    for prompt in result:
        assert "prompt_token_ids" in prompt
        assert {type(token) for token in prompt["prompt_token_ids"]} == {int}


@pytest.mark.parametrize("kind", ["torch", "numpy"])
def test_batch_with_content_and_current_media_scheme(kind: str) -> None:
    """The SPEC multimodal example: text prompt for the row with content, token prompt plus media otherwise."""
    img0, img1 = MediaItem("img0"), MediaItem("img1")
    data = _batch(
        kind,
        vllm_content=["<image> describe", None],
        vllm_multi_modal_data=[{"image": img0}, {"image": img1, "audio": []}],
    )
    result = format_prompt_for_vllm_generation(data)
    assert result == [
        {"prompt": "<image> describe", "multi_modal_data": {"image": img0}},
        {"prompt_token_ids": [8, 9], "multi_modal_data": {"image": img1}},
    ]
    first, second = result
    assert "multi_modal_data" in first
    assert first["multi_modal_data"]["image"] is img0
    assert "multi_modal_data" in second
    assert second["multi_modal_data"]["image"] is img1
    assert format_prompt_for_vllm_generation(data, sample_idx=1) == result[1]


def test_sample_idx_returns_the_single_dict_of_that_row() -> None:
    """``sample_idx=i`` returns exactly ``result[i]`` of the whole-batch call, as a new dict."""
    data = _batch()
    whole = format_prompt_for_vllm_generation(data)
    for row in range(2):
        single = format_prompt_for_vllm_generation(data, sample_idx=row)
        assert single == whole[row]
        assert single is not whole[row]
    assert format_prompt_for_vllm_generation(data, sample_idx=np.int64(1)) == whole[1]


def test_older_scheme_unwraps_single_items_and_forwards_multi_item_rows_by_identity() -> None:
    """``vllm_images = [[img0], [img1a, img1b]]`` gives ``{"image": img0}`` and the second row list itself."""
    img0, img1a, img1b = MediaItem("img0"), MediaItem("img1a"), MediaItem("img1b")
    row_list = [img1a, img1b]
    result = format_prompt_for_vllm_generation(_batch(vllm_images=[[img0], row_list]))
    assert result == [
        {"prompt_token_ids": [5, 6, 7], "multi_modal_data": {"image": img0}},
        {"prompt_token_ids": [8, 9], "multi_modal_data": {"image": row_list}},
    ]
    second = result[1]
    assert "multi_modal_data" in second
    assert second["multi_modal_data"]["image"] is row_list


def test_older_scheme_orders_modalities_and_keeps_tuples_by_identity() -> None:
    """Older keys emit image, audio, video in that order; a multi-item tuple row stays that very tuple."""
    clip, frames = MediaItem("clip"), (MediaItem("f0"), MediaItem("f1"))
    data = _batch(vllm_videos=[frames, None], vllm_audios=[[clip], []], vllm_images=[(MediaItem("pic"),), ()])
    first, second = format_prompt_for_vllm_generation(data)
    assert "multi_modal_data" in first
    assert list(first["multi_modal_data"]) == ["image", "audio", "video"]
    assert first["multi_modal_data"]["video"] is frames
    assert first["multi_modal_data"]["audio"] is clip
    assert second == {"prompt_token_ids": [8, 9]}


def test_older_scheme_is_used_without_a_vllm_content_key() -> None:
    """Divergence: the older per-modality keys are used even when ``data`` has no ``vllm_content`` key."""
    img = MediaItem("img")
    result = format_prompt_for_vllm_generation(_batch(vllm_images=[None, [img]]))
    assert result[1] == {"prompt_token_ids": [8, 9], "multi_modal_data": {"image": img}}


def test_older_scheme_with_content_gives_a_text_prompt() -> None:
    """With ``vllm_content`` present, an older-scheme media row becomes a text prompt with that content."""
    img = MediaItem("img")
    result = format_prompt_for_vllm_generation(
        _batch(vllm_content=["hi", "there"], vllm_images=[[img], None])
    )
    assert result == [{"prompt": "hi", "multi_modal_data": {"image": img}}, {"prompt_token_ids": [8, 9]}]


def test_older_scheme_drops_a_single_none_or_empty_item() -> None:
    """A single ``None`` or empty item is dropped like an empty row, so no emitted media value is empty."""
    result = format_prompt_for_vllm_generation(_batch(vllm_images=[[None], [[]]]))
    assert result == [{"prompt_token_ids": [5, 6, 7]}, {"prompt_token_ids": [8, 9]}]


def test_current_scheme_drops_empty_values_and_forwards_unknown_modalities() -> None:
    """``None``, ``[]`` and ``()`` values are dropped; an unknown modality name is forwarded for vLLM to judge."""
    cond = MediaItem("cond")
    rows: list[Any] = [{"image": None, "audio": (), "conditioning": cond}, {"video": [], "image": None}]
    first, second = format_prompt_for_vllm_generation(_batch(vllm_multi_modal_data=rows))
    assert first == {"prompt_token_ids": [5, 6, 7], "multi_modal_data": {"conditioning": cond}}
    assert second == {"prompt_token_ids": [8, 9]}


def test_content_without_media_is_ignored() -> None:
    """A ``vllm_content`` string on a row without media is ignored: the row stays a token prompt."""
    result = format_prompt_for_vllm_generation(
        _batch(vllm_content=["stale", "text"], vllm_multi_modal_data=[{}, None])
    )
    assert result == [{"prompt_token_ids": [5, 6, 7]}, {"prompt_token_ids": [8, 9]}]


def test_zero_length_row_gives_an_empty_token_prompt() -> None:
    """``L = 0`` gives ``{"prompt_token_ids": []}``; an empty batch gives an empty list."""
    data = {"input_ids": np.array([[1, 2]]), "input_lengths": [0]}
    assert format_prompt_for_vllm_generation(data) == [{"prompt_token_ids": []}]
    empty = {
        "input_ids": torch.zeros((0, 3), dtype=torch.int64),
        "input_lengths": torch.zeros(0, dtype=torch.int64),
    }
    assert format_prompt_for_vllm_generation(empty) == []


def test_inputs_are_never_mutated_and_every_dict_is_new() -> None:
    """The batch is unchanged after the call, and the media dict is a new dict, not the input row."""
    row = {"image": MediaItem("img"), "audio": []}
    data = _batch(vllm_content=[None, None], vllm_multi_modal_data=[row, None])
    before = copy.deepcopy({k: v for k, v in data.items() if k != "vllm_multi_modal_data"})
    first, _ = format_prompt_for_vllm_generation(data)
    assert "multi_modal_data" in first
    assert first["multi_modal_data"] is not row
    assert row == {"image": row["image"], "audio": []}
    assert torch.equal(data["input_ids"], before["input_ids"])
    assert torch.equal(data["input_lengths"], before["input_lengths"])
    assert data["vllm_content"] == before["vllm_content"]
    assert "mm_processor_kwargs" not in first


def test_none_valued_keys_count_as_absent() -> None:
    """A media or content key whose value is ``None`` counts as absent, so both schemes may be named."""
    data = _batch(vllm_content=None, vllm_multi_modal_data=None, vllm_images=[[MediaItem("x")], None])
    assert len(format_prompt_for_vllm_generation(data)) == 2


def test_overloads_give_a_list_a_single_prompt_or_the_union() -> None:
    """The overloads type the result as a list, a single prompt, or either (checked by mypy on this file)."""
    data = _batch()
    many = format_prompt_for_vllm_generation(data)
    one = format_prompt_for_vllm_generation(data, 0)
    maybe_index: int | None = 1
    either = format_prompt_for_vllm_generation(data, sample_idx=maybe_index)
    assert_type(many, list[VllmPrompt])
    assert_type(one, VllmPrompt)
    assert_type(either, list[VllmPrompt] | VllmPrompt)
    assert isinstance(many, list)
    assert isinstance(one, dict)
    assert isinstance(either, dict)
    if "prompt_token_ids" in one:
        assert_type(one, TokensPrompt)
        assert one["prompt_token_ids"] == [5, 6, 7]
    else:
        assert_type(one, TextPrompt)
        pytest.fail("row 0 has no media, so it must be a token prompt")


def _with(**changes: Any) -> dict[str, Any]:
    data = _batch()
    for key, value in changes.items():
        if isinstance(value, str) and value == "DELETE":
            del data[key]
        else:
            data[key] = value
    return data


@pytest.mark.parametrize(
    ("data", "sample_idx", "key", "row", "fragment"),
    [
        (_with(input_ids="DELETE"), None, "input_ids", None, "missing 'input_ids'"),
        (_with(input_ids=None), None, "input_ids", None, "missing 'input_ids'"),
        (_with(input_lengths=None), None, "input_lengths", None, "missing 'input_lengths'"),
        (_with(input_ids=torch.tensor([1, 2])), None, "input_ids", None, "2-D integer array"),
        (_with(input_ids=torch.zeros((2, 4))), None, "input_ids", None, "dtype float32"),
        (_with(input_ids=np.zeros((2, 4), dtype=bool)), None, "input_ids", None, "dtype bool"),
        (_with(input_ids=[[5, 6, 7, 0], [8, 9, 0, 0]]), None, "input_ids", None, "got list"),
        (_with(input_lengths=np.array([[3], [2]])), None, "input_lengths", None, "1-D integer array"),
        (_with(input_lengths=torch.tensor([3.0, 2.0])), None, "input_lengths", None, "dtype float32"),
        (_with(input_lengths=[3, True]), None, "input_lengths", 1, "got bool at row 1"),
        (_with(input_lengths=[3, 2.0]), None, "input_lengths", 1, "got float at row 1"),
        (_with(input_lengths=[3]), None, "input_lengths", None, "has 1 entries but 'input_ids' has B=2 rows"),
        (_with(input_lengths=[3, 5]), None, "input_lengths", 1, "'input_lengths'[1]=5 is outside [0, 4]"),
        (_with(input_lengths=[-1, 2]), None, "input_lengths", 0, "'input_lengths'[0]=-1 is outside [0, 4]"),
        (_batch(), -1, "sample_idx", -1, "sample_idx=-1 is out of range"),
        (_batch(), 2, "sample_idx", 2, "expected 0 <= sample_idx < 2"),
        (
            _with(vllm_content=["a"]),
            None,
            "vllm_content",
            None,
            "exactly one entry per row (B=2), got list with 1",
        ),
        (_with(vllm_content="ab"), None, "vllm_content", None, "got str"),
        (_with(vllm_content=[None, 3]), None, "vllm_content", 1, "must be a str or None, got int"),
        (_with(vllm_multi_modal_data=[None]), None, "vllm_multi_modal_data", None, "B=2"),
        (_with(vllm_multi_modal_data=[None, [1]]), None, "vllm_multi_modal_data", 1, "mapping from modality"),
        (
            _with(vllm_multi_modal_data=[{1: "x"}, None]),
            None,
            "vllm_multi_modal_data",
            0,
            "mapping from modality",
        ),
        (_with(vllm_images=[[1], [2], [3]]), None, "vllm_images", None, "B=2"),
        (_with(vllm_videos=[None, "clip"]), None, "vllm_videos", 1, "a list, a tuple or None, got str"),
        (
            _with(vllm_multi_modal_data=[None, None], vllm_audios=[None, None]),
            None,
            "vllm_multi_modal_data",
            None,
            "ambiguous multimodal key scheme",
        ),
    ],
)
def test_inconsistent_batches_raise_prompt_format_error(
    data: dict[str, Any], sample_idx: int | None, key: str, row: int | None, fragment: str
) -> None:
    """Every inconsistency raises PromptFormatError naming the key and row, before any prompt is built."""
    with pytest.raises(PromptFormatError) as info:
        format_prompt_for_vllm_generation(data, sample_idx)
    assert fragment in str(info.value)
    assert info.value.key == key
    assert info.value.row == row
    assert isinstance(info.value, ValueError)
    clone = pickle.loads(pickle.dumps(info.value))
    assert (type(clone), str(clone), clone.key, clone.row, clone.value) == (
        PromptFormatError,
        str(info.value),
        key,
        row,
        info.value.value,
    )


@pytest.mark.parametrize("device", ["meta", "sparse"])
@pytest.mark.parametrize("key", ["input_ids", "input_lengths"])
def test_tensors_whose_values_cannot_be_read_are_rejected(key: str, device: str) -> None:
    """A meta or sparse tensor raises PromptFormatError naming why, not torch's error from slicing or tolist()."""
    good = {"input_ids": torch.zeros((2, 3), dtype=torch.int64), "input_lengths": torch.tensor([1, 2])}
    tensor = good[key].to(device="meta") if device == "meta" else good[key].to_sparse()
    with pytest.raises(
        PromptFormatError, match=r"got Tensor (on the meta device|with layout torch.sparse_coo)"
    ) as info:
        format_prompt_for_vllm_generation({**good, key: tensor})
    assert info.value.key == key


HUGE = 10**5000
"""An int whose decimal form Python refuses to build (more than 4,300 digits)."""


@pytest.mark.parametrize(
    ("data", "sample_idx", "key", "fragment"),
    [
        (_batch(), HUGE, "sample_idx", "sample_idx=<int of 16610 bits> is out of range"),
        (
            _with(input_lengths=[3, -HUGE]),
            None,
            "input_lengths",
            "'input_lengths'[1]=<int of 16610 bits> is outside",
        ),
    ],
    ids=["sample_idx", "input_lengths"],
)
def test_huge_ints_are_rendered_in_prompt_format_errors(
    data: dict[str, Any], sample_idx: int | None, key: str, fragment: str
) -> None:
    """An index or length beyond Python's int-to-str limit raises PromptFormatError, never a ValueError."""
    with pytest.raises(PromptFormatError) as info:
        format_prompt_for_vllm_generation(data, sample_idx)
    assert fragment in str(info.value)
    assert info.value.key == key
    assert info.value.value == "<int of 16610 bits>"


class _HugeBatch:
    """A duck-typed 2-D integer array whose batch size is beyond Python's int-to-str limit."""

    dtype = "int64"
    ndim = 2
    shape = (HUGE, 3)

    def tolist(self) -> list[list[int]]:
        return []


def test_a_huge_duck_typed_batch_size_is_rendered() -> None:
    """A batch size from a duck-typed ``shape`` is rendered in the row-count error, never a ValueError."""
    with pytest.raises(PromptFormatError, match="'input_ids' has B=<int of 16610 bits> rows"):
        format_prompt_for_vllm_generation({"input_ids": _HugeBatch(), "input_lengths": [1]})


@pytest.mark.parametrize(
    ("data", "sample_idx", "argument"),
    [
        (None, None, "data"),
        ([("input_ids", 1)], None, "data"),
        (_batch(), True, "sample_idx"),
        (_batch(), "0", "sample_idx"),
        (_batch(), 1.0, "sample_idx"),
    ],
)
def test_wrong_argument_types_raise_contract_type_error(data: Any, sample_idx: Any, argument: str) -> None:
    """A non-mapping ``data`` or a non-int ``sample_idx`` (bools included) raises ContractTypeError."""
    with pytest.raises(ContractTypeError) as info:
        format_prompt_for_vllm_generation(data, sample_idx)
    assert info.value.argument == argument


def test_whole_batch_is_validated_even_for_a_single_sample() -> None:
    """A bad row elsewhere in the batch fails the call even when ``sample_idx`` selects a good row."""
    with pytest.raises(PromptFormatError) as info:
        format_prompt_for_vllm_generation(_with(input_lengths=[3, 9]), sample_idx=0)
    assert info.value.row == 1


def test_messages_stay_bounded_for_huge_rows() -> None:
    """A huge offending row value is rendered shortened, so the message stays within 2,000 characters."""
    with pytest.raises(PromptFormatError) as info:
        format_prompt_for_vllm_generation(_with(vllm_content=[None, list(range(100_000))]))
    assert len(str(info.value)) <= MAX_MESSAGE_CHARS
    assert info.value.value is not None
    assert len(info.value.value) <= 200


@pytest.mark.parametrize(
    ("expected", "actual", "message"),
    [
        (
            [41, 42],
            [7, 42],
            "vLLM processed prompt differs from the learner prompt: expected_length=2, actual_length=2, "
            "first_mismatch_index=0, expected_token=41, actual_token=7. Refusing to train on a different prompt. "
            "Excerpts from index 0: expected=[41, 42], actual=[7, 42].",
        ),
        (
            [41, 42],
            [41, 99],
            "vLLM processed prompt differs from the learner prompt: expected_length=2, actual_length=2, "
            "first_mismatch_index=1, expected_token=42, actual_token=99. Refusing to train on a different prompt. "
            "Excerpts from index 0: expected=[41, 42], actual=[41, 99].",
        ),
        (
            list(range(20)),
            [*range(5), 99, *range(6, 20)],
            "vLLM processed prompt differs from the learner prompt: expected_length=20, actual_length=20, "
            "first_mismatch_index=5, expected_token=5, actual_token=99. Refusing to train on a different prompt. "
            "Excerpts from index 3: expected=[3, 4, 5, 6, 7, 8, 9, 10], actual=[3, 4, 99, 6, 7, 8, 9, 10].",
        ),
    ],
)
def test_rollout_prompt_mismatch_full_messages_with_excerpts(
    expected: list[int], actual: list[int], message: str
) -> None:
    """The excerpt starts 2 ids before the mismatch (never below 0) and shows exactly 8 ids of each side."""
    with pytest.raises(RolloutPromptMismatchError) as info:
        validate_rollout_prompt(expected, actual)
    quoted, excerpt = message.split(" Excerpts", 1)
    assert str(info.value).startswith(quoted)  # SPEC §4.1 quotes the message up to "a different prompt."
    assert f" Excerpts{excerpt}" in str(info.value)


def test_bad_multi_modal_row_full_message() -> None:
    """A multi-modal row that is not a str-keyed mapping is reported with the exact expected description."""
    with pytest.raises(PromptFormatError) as info:
        format_prompt_for_vllm_generation(_batch(vllm_multi_modal_data=[None, [1]]))
    assert "'vllm_multi_modal_data'[1] must be a mapping from modality name (str)" in str(info.value)
    assert str(info.value).endswith("got list: [1]")
    assert (info.value.key, info.value.row, info.value.value) == ("vllm_multi_modal_data", 1, "[1]")


def test_older_scheme_row_without_images_still_gets_later_modalities() -> None:
    """An empty image row does not stop the audio and video of the same row from being emitted."""
    clip, frames = MediaItem("clip"), MediaItem("frames")
    data = _batch(vllm_images=[[], None], vllm_audios=[[clip], None], vllm_videos=[None, [frames]])
    prompts = format_prompt_for_vllm_generation(data)
    assert prompts == [
        {"prompt_token_ids": [5, 6, 7], "multi_modal_data": {"audio": clip}},
        {"prompt_token_ids": [8, 9], "multi_modal_data": {"video": frames}},
    ]


class _TupleRows:
    """A row slice whose ``tolist()`` returns a tuple instead of a list."""

    def tolist(self) -> tuple[int, ...]:
        return (5, 6)


class _TupleBatch:
    """A duck-typed 2-D integer array whose row slices do not convert to lists."""

    dtype = "int64"
    ndim = 2
    shape = (2, 4)

    def tolist(self) -> list[list[int]]:
        return [[5, 6, 0, 0], [8, 0, 0, 0]]

    def __getitem__(self, key: object) -> _TupleRows:
        return _TupleRows()


def test_row_tolist_returning_a_non_list_is_rejected() -> None:
    """A row whose ``tolist()`` is not a list raises PromptFormatError naming input_ids, the row and the type."""
    with pytest.raises(PromptFormatError) as info:
        format_prompt_for_vllm_generation({"input_ids": _TupleBatch(), "input_lengths": [2, 1]}, 1)
    assert "'input_ids'[1, :1].tolist() returned tuple" in str(info.value)
    assert (info.value.key, info.value.row, info.value.value) == ("input_ids", 1, "tuple")


def test_matrix_rows_are_rejected_not_emitted_nested() -> None:
    """An ``np.matrix`` batch keeps its row slices 2-D, so it raises instead of emitting ``[[5, 6]]`` (issue 12)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PendingDeprecationWarning)  # numpy discourages matrix itself
        matrix = np.matrix([[5, 6, 7]])
    with pytest.raises(PromptFormatError) as info:
        format_prompt_for_vllm_generation({"input_ids": matrix, "input_lengths": [2]})
    assert "returned a list holding list" in str(info.value)
    assert "numpy.asarray(input_ids)" in str(info.value)
    assert (info.value.key, info.value.row, info.value.value) == ("input_ids", 0, "a list holding list")


def test_rows_of_an_ndarray_subclass_come_out_as_flat_python_ints() -> None:
    """A 1-D-slicing ndarray subclass gives rows of plain ``int`` (not numpy scalars or nested lists)."""

    class Tagged(np.ndarray):
        """An ndarray subclass that adds nothing."""

    batch = np.array([[5, 6, 7], [8, 9, 0]]).view(Tagged)
    prompts = format_prompt_for_vllm_generation({"input_ids": batch, "input_lengths": [3, 2]})
    assert prompts == [{"prompt_token_ids": [5, 6, 7]}, {"prompt_token_ids": [8, 9]}]
    assert {
        type(token)
        for prompt in prompts
        if "prompt_token_ids" in prompt
        for token in prompt["prompt_token_ids"]
    } == {int}
