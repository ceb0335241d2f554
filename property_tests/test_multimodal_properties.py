"""Properties of ``remap_multimodal_placeholders`` and ``placeholder_range_bounds`` (SPEC §7 invariants 1, 2, 4–9)."""

from __future__ import annotations

import copy
import dataclasses
import itertools
from typing import Any
from unittest.mock import patch

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from rl_contracts import multimodal
from rl_contracts.errors import (
    ContractError,
    ContractTypeError,
    PlaceholderRemapError,
    PlaceholderTypeError,
)
from rl_contracts.multimodal import PlaceholderRange, placeholder_range_bounds, remap_multimodal_placeholders
from rl_contracts.splice import PrefixSplice, splice_prefix_tokens
from rl_contracts.testing import assert_contract_error
from rl_contracts.testing.strategies import (
    MEDIA_TOKENS,
    TEXT_TOKENS,
    SpliceCase,
    hostile_placeholder_maps,
    hostile_placeholder_ranges,
    hostile_splices,
    hostile_token_ids,
    range_factories,
    splice_cases,
)


@dataclasses.dataclass(frozen=True)
class VllmRange:
    """Stand-in for vLLM's frozen ``PlaceholderRange(offset, length, is_embed)`` dataclass."""

    offset: int
    length: int
    is_embed: Any = None


def _vllm_range(offset: int, length: int) -> VllmRange:
    return VllmRange(offset, length, object())


CASES = splice_cases(factories=range_factories(_vllm_range))
START_TOKENS = {start for start, _, _ in MEDIA_TOKENS.values()}


def _splice(case: SpliceCase) -> PrefixSplice:
    return splice_prefix_tokens(
        model_prefix_token_ids=case.model_prefix_token_ids,
        template_prefix_token_ids=case.template_prefix_token_ids,
        template_token_ids=case.template_token_ids,
        terminator_ids=case.terminators,
    )


def _remap(template: Any, final: Any, placeholders: Any, splice: Any = None) -> dict[str, list[Any]]:
    return remap_multimodal_placeholders(
        template_token_ids=template, final_token_ids=final, mm_placeholders=placeholders, splice=splice
    )


def _fields(placeholder_range: Any) -> dict[str, Any]:
    if isinstance(placeholder_range, dict):
        return dict(placeholder_range)
    if isinstance(placeholder_range, PlaceholderRange):
        return dict(placeholder_range)
    return {
        field.name: getattr(placeholder_range, field.name) for field in dataclasses.fields(placeholder_range)
    }


def _check_round_trip(
    template: list[int], final: list[int], placeholders: dict[str, list[Any]], result: dict[str, list[Any]]
) -> None:
    assert list(result) == list(placeholders)
    for modality, ranges in placeholders.items():
        assert len(result[modality]) == len(ranges)
        for before, after in zip(ranges, result[modality], strict=True):
            assert type(after) is type(before)
            assert after is not before
            offset, length = placeholder_range_bounds(before)
            new, new_length = placeholder_range_bounds(after)
            assert new_length == length
            assert final[new : new + length] == template[offset : offset + length]
            moved, kept = _fields(after), _fields(before)
            assert moved.pop("offset") == new
            kept.pop("offset")
            assert moved.keys() == kept.keys()
            assert all(moved[key] is kept[key] or moved[key] == kept[key] for key in kept)


@given(CASES)
def test_round_trip_arithmetic_and_purity(case: SpliceCase) -> None:
    """Invariants 2, 4, 5: spans land on equal tokens, suffix spans shift exactly, inputs stay unchanged."""
    splice = _splice(case)
    before = copy.deepcopy((case.template_token_ids, splice.token_ids, case.spans))
    result = _remap(case.template_token_ids, splice.token_ids, case.mm_placeholders, splice)
    _check_round_trip(case.template_token_ids, splice.token_ids, case.mm_placeholders, result)
    for modality, ranges in case.mm_placeholders.items():
        for before_range, after_range in zip(ranges, result[modality], strict=True):
            offset, _ = placeholder_range_bounds(before_range)
            if offset >= splice.template_cut_start:
                new, _ = placeholder_range_bounds(after_range)
                assert new == splice.model_cut_end + offset - splice.template_cut_start
    assert before == (case.template_token_ids, splice.token_ids, case.spans)
    assert [
        [placeholder_range_bounds(r) for r in ranges] for ranges in case.mm_placeholders.values()
    ] == list(case.spans.values())


@pytest.mark.parametrize(("probe", "base"), [(0, multimodal._HASH_BASE), (0, 0), (2, 2**32)])
@given(case=CASES)
def test_round_trip_through_the_hashed_search(probe: int, base: int, case: SpliceCase) -> None:
    """Invariant 4 with the direct probe shortened and degenerate hash bases, so hashed windows and collisions occur."""
    splice = _splice(case)
    with patch.object(multimodal, "_PROBE", probe), patch.object(multimodal, "_HASH_BASE", base):
        result = _remap(case.template_token_ids, splice.token_ids, case.mm_placeholders, splice)
        unspliced = _remap(
            case.template_token_ids, [*TEXT_TOKENS, *case.template_token_ids], case.mm_placeholders
        )
    _check_round_trip(case.template_token_ids, splice.token_ids, case.mm_placeholders, result)
    _check_round_trip(
        case.template_token_ids, [*TEXT_TOKENS, *case.template_token_ids], case.mm_placeholders, unspliced
    )


@given(CASES)
def test_ordering_and_coincident_ranges(case: SpliceCase) -> None:
    """Invariant 7: equal inputs give equal outputs; distinct located spans keep their order without overlapping."""
    splice = _splice(case)
    result = _remap(case.template_token_ids, splice.token_ids, case.mm_placeholders, splice)
    images: dict[tuple[int, int], set[int]] = {}
    for modality, ranges in case.mm_placeholders.items():
        for before_range, after_range in zip(ranges, result[modality], strict=True):
            images.setdefault(placeholder_range_bounds(before_range), set()).add(
                placeholder_range_bounds(after_range)[0]
            )
    assert all(len(new_offsets) == 1 for new_offsets in images.values())
    located = sorted(
        (key, next(iter(new))) for key, new in images.items() if key[0] + key[1] <= splice.template_cut_start
    )
    for ((_, length), new), (_, next_new) in itertools.pairwise(located):
        assert new + length <= next_new


@given(CASES)
def test_identity(case: SpliceCase) -> None:
    """Invariant 6: offsets are unchanged without a splice when final == template, and after an empty-prefix splice."""
    template = case.template_token_ids
    unchanged = _remap(template, list(template), case.mm_placeholders)
    empty = splice_prefix_tokens(
        model_prefix_token_ids=[], template_prefix_token_ids=[], template_token_ids=template
    )
    identity = _remap(template, empty.token_ids, case.mm_placeholders, empty)
    for result in (unchanged, identity):
        _check_round_trip(template, template, case.mm_placeholders, result)
        assert [[placeholder_range_bounds(r) for r in ranges] for ranges in result.values()] == list(
            case.spans.values()
        )


@given(CASES, st.lists(st.sampled_from(TEXT_TOKENS), max_size=6))
def test_located_without_splice(case: SpliceCase, head: list[int]) -> None:
    """Invariant 4 without a splice: text prepended to the template moves every span by content."""
    template = case.template_token_ids
    final = head + template
    result = _remap(template, final, case.mm_placeholders)
    _check_round_trip(template, final, case.mm_placeholders, result)


@given(CASES, st.data())
def test_invalid_ranges_always_raise(case: SpliceCase, data: st.DataObject) -> None:
    """Invariant 8: an out-of-bounds or a partially overlapping range raises, fast paths included."""
    template = case.template_token_ids
    spans = [span for ranges in case.spans.values() for span in ranges]
    choices = [
        st.integers(1, 4).flatmap(
            lambda n: st.tuples(st.integers(len(template) - n + 1, len(template) + 3), st.just(n))
        )
    ]
    if spans:
        choices.append(
            st.sampled_from(spans).flatmap(
                lambda span: st.sampled_from(
                    [(span[0], span[1] + 1), (span[0] + span[1] - 1, 2), (span[0] - 1, 2)]
                )
            )
        )
    offset, length = data.draw(st.one_of(*choices))
    assume((offset, length) not in spans)
    modality = data.draw(st.sampled_from(["image", "audio", "extra"]))
    placeholders = {key: list(ranges) for key, ranges in case.mm_placeholders.items()}
    placeholders.setdefault(modality, []).append({"offset": offset, "length": length})
    splice = _splice(case)
    for final, used in ((list(template), None), (splice.token_ids, splice)):
        with pytest.raises(PlaceholderRemapError):
            _remap(template, final, placeholders, used)


@given(CASES)
def test_straddling_range_raises(case: SpliceCase) -> None:
    """Invariant 8: a range covering both sides of the splice cut raises PlaceholderRemapError."""
    splice = _splice(case)
    cut = splice.template_cut_start
    assume(1 <= cut < len(case.template_token_ids))
    placeholders = {**case.mm_placeholders, "straddle": [{"offset": cut - 1, "length": 2}]}
    with pytest.raises(PlaceholderRemapError):
        _remap(case.template_token_ids, splice.token_ids, placeholders, splice)


@given(CASES, st.data())
def test_missing_span_raises(case: SpliceCase, data: st.DataObject) -> None:
    """Invariant 8: when one media block of the exact prefix is corrupted, the remap raises PlaceholderRemapError."""
    model = list(case.model_prefix_token_ids)
    starts = [i for i, token in enumerate(model) if token in START_TOKENS]
    assume(starts)
    block = data.draw(st.sampled_from(starts))
    model[block + 1] = data.draw(st.sampled_from(TEXT_TOKENS))
    corrupted = dataclasses.replace(case, model_prefix_token_ids=model)
    splice = _splice(corrupted)
    with pytest.raises(PlaceholderRemapError):
        _remap(case.template_token_ids, splice.token_ids, case.mm_placeholders, splice)


@given(st.integers(0, 2**70), st.integers(1, 2**70), st.sampled_from([None, (True, False)]))
def test_bounds_agree_across_containers(offset: int, length: int, mask: tuple[bool, ...] | None) -> None:
    """Invariant 9: a mapping, a dataclass and a PlaceholderRange with the same values give the same bounds."""
    model = PlaceholderRange(offset=offset, length=2, is_embed=mask).model_copy(update={"length": length})
    containers = [{"offset": offset, "length": length}, VllmRange(offset, length, mask), model]
    assert {placeholder_range_bounds(r) for r in containers} == {(offset, length)}


_BUILTINS: dict[type[ContractError], type[Exception]] = {
    ContractTypeError: TypeError,
    PlaceholderTypeError: TypeError,
    PlaceholderRemapError: ValueError,
}


def _check_error(error: ContractError) -> None:
    assert isinstance(error, _BUILTINS[type(error)])
    assert_contract_error(error)


@given(hostile_placeholder_ranges())
def test_hostile_range_bounds(placeholder_range: Any) -> None:
    """Invariants 1 and 9: any range gives non-negative bounds with length >= 1, or a bounded ContractError."""
    try:
        offset, length = placeholder_range_bounds(placeholder_range)
    except ContractError as error:
        _check_error(error)
    else:
        assert offset >= 0
        assert length >= 1


@given(
    template=hostile_token_ids(),
    final=hostile_token_ids(),
    placeholders=hostile_placeholder_maps(),
    splice=hostile_splices(),
)
def test_hostile_arguments_raise_only_contract_errors(
    template: Any, final: Any, placeholders: Any, splice: Any
) -> None:
    """Invariants 1 and 8: arbitrary arguments return a valid remap or raise a bounded, picklable ContractError."""
    try:
        result = _remap(template, final, placeholders, splice)
    except ContractError as error:
        _check_error(error)
    else:
        _check_round_trip(list(template), list(final), placeholders, result)


@given(CASES, hostile_placeholder_ranges(), st.data())
def test_hostile_range_among_valid_ones(case: SpliceCase, hostile: Any, data: st.DataObject) -> None:
    """Invariants 1, 4, 8: one hostile range among valid ones either round-trips or raises a ContractError."""
    splice = _splice(case)
    placeholders = {key: list(ranges) for key, ranges in case.mm_placeholders.items()}
    modality = data.draw(st.sampled_from([*placeholders, "extra"]))
    items = placeholders.setdefault(modality, [])
    items.insert(data.draw(st.integers(0, len(items))), hostile)
    try:
        result = _remap(case.template_token_ids, splice.token_ids, placeholders, splice)
    except ContractError as error:
        _check_error(error)
    else:
        _check_round_trip(case.template_token_ids, splice.token_ids, placeholders, result)


def _anchored_positions(
    template: list[int], final: list[int], spans: list[tuple[int, int]]
) -> dict[Any, int] | None:
    """SPEC §2.5 step 6d without a splice, by brute force: each distinct span in global order at its smallest
    anchored position at or after the cursor; ``None`` when one has no such position."""
    memo: dict[tuple[int, int], int] = {}
    cursor = 0
    for offset, length in sorted(set(spans)):
        end = offset + length
        for p in range(cursor, len(final) - length + 1):
            if final[p : p + length] != template[offset:end]:
                continue
            if (p != 0) if offset == 0 else (p == 0 or final[p - 1] != template[offset - 1]):
                continue
            if end == len(template):
                if p + length != len(final):
                    continue
            elif p + length >= len(final) or final[p + length] != template[end]:
                continue
            memo[(offset, length)] = p
            cursor = p + length
            break
        else:
            return None
    return memo


@st.composite
def _edited_prompts(draw: st.DrawFn) -> tuple[list[int], list[int], list[tuple[int, int]]]:
    """A template over a two- or three-token alphabet, a copy with a few tokens inserted and deleted (so runs of
    equal tokens are common, also at both ends), and disjoint spans of the template."""
    alphabet = draw(
        st.sampled_from([[1, 2], [1, 2, 3], [7, 2**70], [0, 2**63 - 1, -(2**63)], [7, 2**64 + 7]])
    )
    template = draw(st.lists(st.sampled_from(alphabet), min_size=1, max_size=14))
    final = list(template)
    for _ in range(draw(st.integers(0, 3))):
        position = draw(st.integers(0, len(final)))
        delete: bool = draw(st.booleans())
        if final and delete:
            del final[min(position, len(final) - 1)]
        else:
            final.insert(position, draw(st.sampled_from(alphabet)))
    assume(len(final) > 0 and final != template)
    cuts = sorted(draw(st.sets(st.integers(0, len(template)), min_size=2, max_size=6)))
    pairs = list(itertools.pairwise(cuts))
    chosen = draw(st.lists(st.booleans(), min_size=len(pairs), max_size=len(pairs)))
    spans = [(a, b - a) for i, (a, b) in enumerate(pairs) if i == 0 or chosen[i]]
    return template, final, spans


@pytest.mark.parametrize(
    ("probe", "base"),
    [(multimodal._PROBE, multimodal._HASH_BASE), (0, multimodal._HASH_BASE), (0, 0), (0, 2**32), (2, 3)],
)
@given(_edited_prompts())
def test_content_placement_is_the_smallest_anchored_position(
    probe: int, base: int, prompts: tuple[list[int], list[int], list[tuple[int, int]]]
) -> None:
    """Without a splice, every span lands at the smallest anchored position (the sequence ends count as neighbours,
    SPEC §2.5 step 6d revised) after the previous span, or the call raises exactly when no such position exists;
    also with the direct probe shortened and degenerate hash bases, so hashed windows, collisions and ids beyond
    int64 all go through the search."""
    template, final, spans = prompts
    expected = _anchored_positions(template, final, spans)
    placeholders = {"image": [{"offset": offset, "length": length} for offset, length in spans]}
    with patch.object(multimodal, "_PROBE", probe), patch.object(multimodal, "_HASH_BASE", base):
        if expected is None:
            with pytest.raises(PlaceholderRemapError):
                _remap(template, final, placeholders)
            return
        result = _remap(template, final, placeholders)
    assert [r["offset"] for r in result["image"]] == [expected[span] for span in spans]
