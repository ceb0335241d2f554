"""Error messages and structured attributes of format_prompt_for_vllm_generation (SPEC §0.3, §0.4, §4.2).

Callers and logs grep the key facts of a message (the batch key, ``row``, ``B=``/``W=`` fragments), so each
representative bad batch is checked for those fragments and for every structured attribute; SPEC §4.2 quotes no
whole message.
"""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pytest
import torch

from rl_contracts.errors import ContractTypeError, PromptFormatError
from rl_contracts.prompts import format_prompt_for_vllm_generation


def _batch(**changes: Any) -> dict[str, Any]:
    """The SPEC §4.2 example batch (``B=2``, ``W=4``) with ``changes`` applied; ``...`` deletes a key."""
    data: dict[str, Any] = {
        "input_ids": torch.tensor([[5, 6, 7, 0], [8, 9, 0, 0]]),
        "input_lengths": torch.tensor([3, 2]),
    }
    for key, value in changes.items():
        if value is ...:
            del data[key]
        else:
            data[key] = value
    return data


class _DuckArray:
    """A duck-typed integer array (``tolist``, ``dtype``, ``ndim``) with a given ``shape`` and ``tolist`` value."""

    dtype = "int64"

    def __init__(self, ndim: int, shape: object, values: object) -> None:
        self.ndim = ndim
        self.shape = shape
        self._values = values

    def tolist(self) -> object:
        return self._values


class _NoShape:
    """A duck-typed 2-D integer array without a ``shape`` attribute."""

    dtype = "int64"
    ndim = 2

    def tolist(self) -> list[list[int]]:
        return [[5, 6, 7, 0], [8, 9, 0, 0]]


class _ShapeRaises:
    """Not an array (no ``tolist``); reading its ``shape`` raises, so a non-array must be judged by type alone."""

    @property
    def shape(self) -> tuple[int, int]:
        raise RuntimeError("shape must not be read from a non-array")


@pytest.mark.parametrize(
    ("data", "sample_idx", "fragments", "key", "row", "value"),
    [
        pytest.param(
            _batch(input_ids=...),
            None,
            ("missing 'input_ids'",),
            "input_ids",
            None,
            None,
            id="missing-input_ids",
        ),
        pytest.param(
            _batch(input_lengths=None),
            None,
            ("missing 'input_lengths'",),
            "input_lengths",
            None,
            None,
            id="missing-input_lengths",
        ),
        pytest.param(
            _batch(input_ids=torch.tensor([1, 2])),
            None,
            ("'input_ids' must be a 2-D integer array", "shape torch.Size([2])"),
            "input_ids",
            None,
            "Tensor with dtype int64 and shape torch.Size([2])",
            id="input_ids-1d",
        ),
        pytest.param(
            _batch(input_ids=np.zeros((2, 4))),
            None,
            ("'input_ids' must be a 2-D integer array", "dtype float64"),
            "input_ids",
            None,
            "ndarray with dtype float64 and shape (2, 4)",
            id="input_ids-float",
        ),
        pytest.param(
            _batch(input_ids=[[5, 6, 7, 0], [8, 9, 0, 0]]),
            None,
            ("'input_ids' must be a 2-D", "got list"),
            "input_ids",
            None,
            "list",
            id="input_ids-list",
        ),
        pytest.param(
            _batch(input_ids=_NoShape()),
            None,
            ("'input_ids'", "shape None"),
            "input_ids",
            None,
            "_NoShape with dtype int64 and shape None",
            id="input_ids-without-shape",
        ),
        pytest.param(
            _batch(input_ids=_DuckArray(2, (2, None), [])),
            None,
            ("'input_ids'", "shape (2, None)"),
            "input_ids",
            None,
            "_DuckArray with dtype int64 and shape (2, None)",
            id="input_ids-shape-with-none",
        ),
        pytest.param(
            _batch(input_ids=_DuckArray(2, (-1, 4), [])),
            None,
            ("'input_ids'", "shape (-1, 4)"),
            "input_ids",
            None,
            "_DuckArray with dtype int64 and shape (-1, 4)",
            id="input_ids-negative-shape",
        ),
        pytest.param(
            _batch(input_ids=_ShapeRaises()),
            None,
            ("'input_ids'", "got _ShapeRaises"),
            "input_ids",
            None,
            "_ShapeRaises",
            id="input_ids-not-an-array",
        ),
        pytest.param(
            _batch(input_lengths=np.array([[3], [2]])),
            None,
            ("'input_lengths' must be a 1-D integer array", "shape (2, 1)"),
            "input_lengths",
            None,
            "ndarray with dtype int64 and shape (2, 1)",
            id="input_lengths-2d",
        ),
        pytest.param(
            _batch(input_lengths=_DuckArray(1, (2,), 7)),
            None,
            ("'input_lengths'.tolist() returned int",),
            "input_lengths",
            None,
            "int",
            id="input_lengths-tolist-not-a-list",
        ),
        pytest.param(
            _batch(input_lengths=[3, True]),
            None,
            ("'input_lengths'", "got bool at row 1"),
            "input_lengths",
            1,
            "True",
            id="input_lengths-bool",
        ),
        pytest.param(
            _batch(input_lengths=(2.5, 2)),
            None,
            ("'input_lengths'", "got float at row 0"),
            "input_lengths",
            0,
            "2.5",
            id="input_lengths-float",
        ),
        pytest.param(
            _batch(input_lengths=[3]),
            None,
            ("'input_lengths' has 1 entries", "B=2"),
            "input_lengths",
            None,
            "1",
            id="input_lengths-too-few",
        ),
        pytest.param(
            _batch(input_lengths=torch.tensor([3, 2, 1])),
            None,
            ("'input_lengths' has 3 entries", "B=2"),
            "input_lengths",
            None,
            "3",
            id="input_lengths-too-many",
        ),
        pytest.param(
            _batch(input_lengths=[3, 5]),
            None,
            ("'input_lengths'[1]=5", "[0, 4]", "W=4"),
            "input_lengths",
            1,
            "5",
            id="input_lengths-above-width",
        ),
        pytest.param(
            _batch(),
            2,
            ("sample_idx=2", "B=2"),
            "sample_idx",
            2,
            "2",
            id="sample_idx-too-large",
        ),
        pytest.param(
            _batch(),
            -1,
            ("sample_idx=-1", "negative indices are rejected"),
            "sample_idx",
            -1,
            "-1",
            id="sample_idx-negative",
        ),
        pytest.param(
            _batch(vllm_content={"a", "b"}),
            None,
            ("'vllm_content'", "B=2", "got set"),
            "vllm_content",
            None,
            "set",
            id="vllm_content-not-a-sequence",
        ),
        pytest.param(
            _batch(vllm_content="ab"),
            None,
            ("'vllm_content'", "got str with 2 entries"),
            "vllm_content",
            None,
            "str",
            id="vllm_content-str",
        ),
        pytest.param(
            _batch(vllm_images=[[1], [2], [3]]),
            None,
            ("'vllm_images'", "got list with 3 entries"),
            "vllm_images",
            None,
            "list",
            id="vllm_images-wrong-count",
        ),
        pytest.param(
            _batch(vllm_content=[None, 3]),
            None,
            ("'vllm_content'[1] must be a str or None", "got int: 3"),
            "vllm_content",
            1,
            "3",
            id="vllm_content-row-type",
        ),
        pytest.param(
            _batch(vllm_audios=(None, [1]), vllm_videos=[None, None], vllm_multi_modal_data=[None, None]),
            None,
            ("ambiguous multimodal key scheme", "['vllm_audios', 'vllm_videos']"),
            "vllm_multi_modal_data",
            None,
            "['vllm_audios', 'vllm_videos']",
            id="both-key-schemes",
        ),
    ],
)
def test_prompt_format_errors_name_key_row_and_value(
    data: dict[str, Any],
    sample_idx: int | None,
    fragments: tuple[str, ...],
    key: str,
    row: int | None,
    value: str | None,
) -> None:
    """Each bad batch raises PromptFormatError whose message holds the key facts and whose ``key``, ``row`` and
    ``value`` say where; the error pickles unchanged."""
    with pytest.raises(PromptFormatError) as info:
        format_prompt_for_vllm_generation(data, sample_idx)
    error = info.value
    for fragment in fragments:
        assert fragment in str(error)
    assert (error.key, error.row, error.value) == (key, row, value)
    clone = pickle.loads(pickle.dumps(error))
    assert (type(clone), str(clone), clone.key, clone.row, clone.value) == (
        PromptFormatError,
        str(error),
        key,
        row,
        value,
    )


@pytest.mark.parametrize(
    ("data", "actual"),
    [([("input_ids", 1)], "list"), (None, "NoneType"), ("input_ids", "str")],
)
def test_non_mapping_data_error_names_the_expected_mapping_and_the_actual_type(
    data: Any, actual: str
) -> None:
    """A non-mapping ``data`` raises ContractTypeError with the expected description and the actual type name."""
    with pytest.raises(ContractTypeError) as info:
        format_prompt_for_vllm_generation(data)
    assert (info.value.argument, info.value.actual) == ("data", actual)
    assert "mapping" in (info.value.expected or "")
    assert str(info.value).startswith("data must be a mapping")


@pytest.mark.parametrize(
    ("ids", "lengths"),
    [
        (np.array([[5, 6, 7, 0], [8, 9, 0, 0]], dtype=np.uint16), np.array([3, 2], dtype=np.uint32)),
        (
            torch.tensor([[5, 6, 7, 0], [8, 9, 0, 0]], dtype=torch.uint8),
            torch.tensor([3, 2], dtype=torch.uint8),
        ),
        (np.array([[5, 6, 7, 0], [8, 9, 0, 0]], dtype=np.int32), (3, 2)),
    ],
    ids=["numpy-uint", "torch-uint8", "int32-with-tuple-lengths"],
)
def test_unsigned_and_narrow_integer_dtypes_are_accepted(ids: Any, lengths: Any) -> None:
    """Unsigned and 32-bit integer arrays are integer arrays: they give the same plain-int token prompts."""
    result = format_prompt_for_vllm_generation({"input_ids": ids, "input_lengths": lengths})
    assert result == [{"prompt_token_ids": [5, 6, 7]}, {"prompt_token_ids": [8, 9]}]
    for prompt in result:
        assert "prompt_token_ids" in prompt
        assert {type(token) for token in prompt["prompt_token_ids"]} == {int}
