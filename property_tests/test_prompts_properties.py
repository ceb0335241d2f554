"""Properties of rollout prompt checks and prompt formatting (SPEC §4; §7 invariants 1, 2, 20, 21)."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rl_contracts.errors import ContractError, ContractTypeError, PromptFormatError
from rl_contracts.errors import RolloutPromptMismatchError as Mismatch
from rl_contracts.prompts import format_prompt_for_vllm_generation, validate_rollout_prompt
from rl_contracts.testing import assert_contract_error
from rl_contracts.testing.strategies import (
    TOKEN_CONTAINER_KINDS,
    as_token_container,
    generation_batches,
    hostile_generation_batches,
    rollout_prompt_pairs,
)

MEDIA_KEYS = ("vllm_multi_modal_data", "vllm_images", "vllm_audios", "vllm_videos")


def _outcome(expected: Any, actual: Any) -> tuple[int, int | None, int | None] | None:
    try:
        validate_rollout_prompt(expected, actual)
    except Mismatch as error:
        return (error.expected_length or 0, error.actual_length, error.first_mismatch_index)
    return None


@given(rollout_prompt_pairs(), st.sampled_from(TOKEN_CONTAINER_KINDS), st.sampled_from(TOKEN_CONTAINER_KINDS))
def test_rollout_prompt_raises_iff_mismatch_whatever_the_containers(
    pair: tuple[list[int], list[int] | None], expected_kind: Any, actual_kind: Any
) -> None:
    """Inv. 20: raises iff ``actual is None`` or the ids differ, with the same outcome for every container kind."""
    expected, actual = pair
    outcome = _outcome(
        as_token_container(expected, expected_kind),
        None if actual is None else as_token_container(actual, actual_kind),
    )
    assert (outcome is not None) == (actual is None or expected != actual)
    assert outcome == _outcome(expected, actual)


@given(rollout_prompt_pairs())
def test_first_mismatch_index_is_the_smallest_differing_index(
    pair: tuple[list[int], list[int] | None],
) -> None:
    """Inv. 20: ``first_mismatch_index`` is the first differing index, or the shorter length for a prefix."""
    expected, actual = pair
    outcome = _outcome(expected, actual)
    if outcome is None or actual is None:
        assert outcome is None or outcome[1:] == (None, None)
        return
    index = outcome[2]
    assert index is not None
    assert expected[:index] == actual[:index]
    shorter = min(len(expected), len(actual))
    assert index == shorter or expected[index] != actual[index]
    assert index <= shorter
    assert outcome[:2] == (len(expected), len(actual))


def _rows_of(data: dict[str, Any]) -> tuple[list[list[int]], list[int]]:
    ids = np.asarray(data["input_ids"]).tolist()
    lengths = np.asarray(data["input_lengths"]).tolist()
    return ids, lengths


def _media_values(row: int, data: dict[str, Any]) -> list[Any]:
    """Every media object the batch holds for ``row`` (values, items, and the row lists themselves)."""
    found: list[Any] = []
    for key in MEDIA_KEYS:
        rows = data.get(key)
        if rows is None or rows[row] is None:
            continue
        values = list(rows[row].values()) if isinstance(rows[row], dict) else [rows[row], *rows[row]]
        found.extend(values)
    return found


@given(generation_batches())
def test_formatting_returns_unpadded_ids_and_matches_single_row_calls(data: dict[str, Any]) -> None:
    """Inv. 21: B entries, ``result[i]`` equals the ``sample_idx=i`` call, token ids equal ``input_ids[i, :L_i]``."""
    result = format_prompt_for_vllm_generation(data)
    ids, lengths = _rows_of(data)
    assert len(result) == len(ids)
    for row, prompt in enumerate(result):
        assert format_prompt_for_vllm_generation(data, sample_idx=row) == prompt
        if "prompt_token_ids" in prompt:
            assert prompt["prompt_token_ids"] == ids[row][: lengths[row]]
        else:
            assert prompt["prompt"] == data["vllm_content"][row]
            assert prompt["multi_modal_data"]


@given(generation_batches())
def test_media_values_are_the_input_objects_and_never_empty(data: dict[str, Any]) -> None:
    """Inv. 21: media are the input objects themselves, never ``None``/empty; a row without media has no key."""
    for row, prompt in enumerate(format_prompt_for_vllm_generation(data)):
        media = prompt.get("multi_modal_data")
        if media is None:
            continue
        assert media
        originals = _media_values(row, data)
        for value in media.values():
            assert value is not None
            assert not (isinstance(value, list | tuple) and len(value) == 0)
            assert any(value is original for original in originals)


@given(generation_batches())
def test_formatting_never_mutates_the_batch(data: dict[str, Any]) -> None:
    """Inv. 2: after the call every input is deep-equal to its value before the call."""
    ids, lengths = _rows_of(data)
    rows_before = {key: copy.copy(data[key]) for key in data if key.startswith("vllm_")}
    row_contents = {key: [copy.copy(r) for r in rows] for key, rows in rows_before.items()}
    format_prompt_for_vllm_generation(data)
    assert _rows_of(data) == (ids, lengths)
    for key, rows in rows_before.items():
        assert data[key] == rows
        assert [copy.copy(r) for r in data[key]] == row_contents[key]


@given(hostile_generation_batches())
def test_broken_batches_raise_only_bounded_picklable_contract_errors(case: tuple[Any, Any]) -> None:
    """Inv. 1: a batch broken in one way raises PromptFormatError or ContractTypeError, bounded and picklable."""
    data, sample_idx = case
    with pytest.raises((PromptFormatError, ContractTypeError)) as info:
        format_prompt_for_vllm_generation(data, sample_idx)
    assert_contract_error(info.value)


LEAF: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(),
    st.text(max_size=5),
    st.just(np.zeros((2, 2), dtype=np.float32)),
    st.just(np.arange(6).reshape(2, 3)),
)
HOSTILE = st.recursive(
    LEAF, lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner), max_leaves=10
)


@given(HOSTILE, HOSTILE)
def test_hostile_rollout_prompts_raise_only_contract_errors(expected: Any, actual: Any) -> None:
    """Inv. 1: arbitrary nested garbage either passes or raises a bounded, picklable ContractError."""
    try:
        validate_rollout_prompt(expected, actual)
    except ContractError as error:
        assert_contract_error(error)
        if not isinstance(error, ContractTypeError | Mismatch):
            raise


@given(st.dictionaries(st.sampled_from(["input_ids", "input_lengths", "vllm_content", *MEDIA_KEYS]), HOSTILE))
def test_hostile_batches_raise_only_contract_errors(data: dict[str, Any]) -> None:
    """Inv. 1: a mapping of garbage values raises a bounded, picklable ContractError (never IndexError etc.)."""
    try:
        format_prompt_for_vllm_generation(data)
    except ContractError as error:
        assert_contract_error(error)
