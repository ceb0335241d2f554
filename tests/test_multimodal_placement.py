"""Placement rules of ``rl_contracts.multimodal`` (SPEC §2.5 steps 2, 3 and 6).

Where a range lands after a splice (arithmetic at and after ``template_cut_start``, by content before it), the
anchoring rule of step 6d at its boundaries (offset 0, the template's last token, the scan limit, the cursor),
the "could not be located" message, splice coherence, which dataclass ranges can be rebuilt, and that the content
search builds its hash tables once.  The smallest match and the exact verification of hash hits are properties,
checked through the public remap in ``property_tests/test_multimodal_properties.py``.
"""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest

from rl_contracts import multimodal
from rl_contracts.errors import PlaceholderRemapError, PlaceholderTypeError
from rl_contracts.multimodal import remap_multimodal_placeholders
from rl_contracts.splice import PrefixSplice
from rl_contracts.testing import assert_contract_error

# SPEC §2.5 examples 2-4.
T2 = [1, 30, 90, 90, 31, 5, 2, 6, 7, 2, 8, 30, 90, 90, 31, 9]
S2 = PrefixSplice([1, 30, 90, 90, 31, 5, 2, 6, 77, 78, 2, 8, 30, 90, 90, 31, 9], 11, 10)
NOT_LOCATED = "refusing to submit token IDs with incorrect multimodal positions."


def _remap(template: Any, final: Any, placeholders: Any, splice: Any = None) -> dict[str, list[Any]]:
    return remap_multimodal_placeholders(
        template_token_ids=template, final_token_ids=final, mm_placeholders=placeholders, splice=splice
    )


def _remap_error(template: Any, final: Any, placeholders: Any, splice: Any = None) -> PlaceholderRemapError:
    with pytest.raises(PlaceholderRemapError) as info:
        _remap(template, final, placeholders, splice)
    assert_contract_error(info.value)
    return info.value


def _ranges(*bounds: tuple[int, int]) -> dict[str, list[dict[str, int]]]:
    return {"image": [{"offset": offset, "length": length} for offset, length in bounds]}


# ---------------------------------------------------------------------------------------------------------------
# Step 6: where a range lands.

PLACEMENTS = [
    (
        # A range starting exactly at template_cut_start is arithmetic (cut_end + 0); one ending exactly at the
        # cut is located by content, its right neighbour (5) lying at the limit.
        "at_and_before_the_cut",
        [1, 30, 90, 90, 5, 6],
        [1, 1, 30, 90, 90, 5, 6],
        (5, 4),
        [(2, 2), (4, 1)],
        [3, 5],
    ),
    (
        # The only window that fits is the first one (first == last == 0); the right neighbour is at the limit.
        "single_candidate_position",
        [1, 30, 90, 31, 5],
        [30, 90, 31, 5],
        (2, 3),
        [(2, 1)],
        [1],
    ),
    (
        # Offset 0: the start of the sequence is the left neighbour, so the span sits at 0.
        "offset_zero_is_anchored_at_the_start",
        [90, 90, 31, 5],
        [90, 90, 31, 7, 5],
        None,
        [(0, 2)],
        [0],
    ),
    (
        # Offset 1 has a left neighbour (30): the earlier [90, 31] preceded by 7 is not the span.
        "offset_one_checks_its_left_neighbour",
        [30, 90, 31],
        [7, 90, 31, 30, 90, 31],
        None,
        [(1, 1)],
        [4],
    ),
    (
        # A range ending at the template's last token is anchored at the end of final.
        "last_token_is_anchored_at_the_end",
        [5, 30, 90],
        [5, 5, 30, 90],
        None,
        [(2, 1)],
        [3],
    ),
    (
        # A probed candidate that fails is followed by the very next position, which matches.
        "adjacent_candidates_in_the_probe",
        [30, 90, 31],
        [1, 30, 30, 90, 31],
        None,
        [(1, 1)],
        [3],
    ),
    (
        # The match is at the last admissible position, exactly _PROBE positions after the cursor.
        "match_at_the_last_position_just_past_the_probe",
        [30, 90, 31],
        [0, 0, 0, 0, 0, 0, 0, 0, 30, 90, 31],
        None,
        [(1, 1)],
        [9],
    ),
    (
        # Far matches (hashed windows) for two items in prompt order, the second searched from the cursor.
        "far_matches_in_order",
        [1, 30, 90, 31, 40, 91, 41, 2, 5],
        [1, *[7] * 20, 30, 90, 31, *[7] * 20, 40, 91, 41, 2, 5],
        None,
        [(5, 1), (2, 1)],
        [45, 22],
    ),
]


@pytest.mark.parametrize(
    ("template", "final", "cuts", "bounds", "expected"),
    [case[1:] for case in PLACEMENTS],
    ids=[case[0] for case in PLACEMENTS],
)
def test_placement(
    template: list[int],
    final: list[int],
    cuts: tuple[int, int] | None,
    bounds: list[tuple[int, int]],
    expected: list[int],
) -> None:
    """Each range lands where SPEC §2.5 step 6 puts it; lengths and order are kept."""
    splice = None if cuts is None else PrefixSplice(final, *cuts)
    result = _remap(template, final, _ranges(*bounds), splice)
    assert result == {
        "image": [
            {"offset": new, "length": length} for new, (_, length) in zip(expected, bounds, strict=True)
        ]
    }
    for new, (offset, length) in zip(expected, bounds, strict=True):
        assert final[new : new + length] == template[offset : offset + length]


@pytest.mark.parametrize(
    ("template", "final", "bounds", "anchor"),
    [
        ([5, 90, 90, 90], [5, 90, 90, 90, 90], (1, 3), "end"),  # SPEC §2.5 step 6d (revised)
        ([90, 90, 90, 5], [90, 90, 90, 90, 5], (0, 3), "start"),
        ([90, 90, 31, 5], [7, 90, 90, 31, 5], (0, 2), "start"),
        ([5, 30, 90], [5, 30, 90, 7], (2, 1), "end"),
        ([90, 90], [90, 90, 90], (0, 2), "start and end"),
    ],
    ids=["spec_run_at_the_end", "run_at_the_start", "start_moved", "end_moved", "whole_template"],
)
def test_span_at_either_end_is_anchored_to_that_end(
    template: list[int], final: list[int], bounds: tuple[int, int], anchor: str
) -> None:
    """The sequence boundary counts as the neighbour, so a run that could sit at two places fails closed."""
    error = _remap_error(template, final, _ranges(bounds))
    assert "could not be located in final_token_ids" in str(error)
    assert f"anchored at the {anchor} of final_token_ids" in str(error)
    assert (error.modality, error.item_index, error.offset, error.length) == ("image", 0, *bounds)


def test_span_running_past_the_limit_is_not_located() -> None:
    """Located spans must end at or before model_cut_end: a copy that runs into the template suffix is refused."""
    template = [1, 30, 90, 31, 2, 90, 31, 4]
    final = [1, 8, 30, 90, 31, 4]  # final[2:5] == [30, 90, 31], but 90 at index 3 is already the suffix
    error = _remap_error(template, final, _ranges((2, 1)), PrefixSplice(final, 3, 5))
    assert str(error).startswith(
        "Multimodal placeholder range image[0] (offset=2, length=1) could not be located in final_token_ids "
        "(scanned positions 0..3); "
    )
    assert (error.modality, error.item_index, error.offset, error.length) == ("image", 0, 2, 1)


@pytest.mark.parametrize(
    ("template", "final", "cuts", "bounds", "message"),
    [
        pytest.param(
            [1, 30, *[90] * 10, 31, 2, 5],
            [1, 30, *[90] * 9, 31, 2, 5],
            None,
            [(2, 10)],
            "Multimodal placeholder range image[0] (offset=2, length=10) could not be located in final_token_ids "
            f"(scanned positions 0..14); {NOT_LOCATED} Expected the span with its neighbours, "
            "template_token_ids[1:13]=[30, 90, 90, 90, 90, 90, 90, 90] ... (12 total); final_token_ids from "
            "position 0: [1, 30, 90, 90, 90, 90, 90, 90] ... (14 total).",
            id="long_span_excerpts",
        ),
        pytest.param(
            [30, 90, 2, 40, 91, 41, 2, 5],
            [7, 7, 7, 30, 90, 2, 8, 8, 8, 8, 2, 5],
            (10, 6),
            [(1, 1), (4, 1)],
            "Multimodal placeholder range image[1] (offset=4, length=1) could not be located in final_token_ids "
            f"(scanned positions 5..10); {NOT_LOCATED} Expected the span with its neighbours, "
            "template_token_ids[3:6]=[40, 91, 41]; final_token_ids from position 5: [2, 8, 8, 8, 8].",
            id="after_an_earlier_match",
        ),
    ],
)
def test_not_located_message(
    template: list[int],
    final: list[int],
    cuts: tuple[int, int] | None,
    bounds: list[tuple[int, int]],
    message: str,
) -> None:
    """The message starts as SPEC §2.5 step 6d quotes it, then gives the span with its neighbours and what final
    holds at the cursor as ``name[a:b]=[...]`` fragments."""
    splice = None if cuts is None else PrefixSplice(final, *cuts)
    error = _remap_error(template, final, _ranges(*bounds), splice)
    quoted, details = message.split(" Expected the span with its neighbours, ", 1)
    assert str(error).startswith(quoted)
    for fragment in details.rstrip(".").split("; "):
        assert fragment in str(error)


# ---------------------------------------------------------------------------------------------------------------
# Step 2: splice coherence.


def _splice_error(splice: Any, final: list[int] = S2.token_ids) -> str:
    return str(_remap_error(T2, final, _ranges((12, 2)), splice))


@pytest.mark.parametrize(
    ("fields", "rendered"),
    [
        ({"model_cut_end": "11"}, "model_cut_end='11', template_cut_start=10"),
        ({"model_cut_end": -1}, "model_cut_end=-1, template_cut_start=10"),
        ({"model_cut_end": 18}, "model_cut_end=18, template_cut_start=10"),
        ({"template_cut_start": -1}, "model_cut_end=11, template_cut_start=-1"),
        ({"template_cut_start": 10.0}, "model_cut_end=11, template_cut_start=10.0"),
        ({"token_ids": tuple(S2.token_ids)}, "model_cut_end=11, template_cut_start=10"),
    ],
)
def test_unvalidated_prefix_splice_is_rejected(fields: dict[str, Any], rendered: str) -> None:
    """A PrefixSplice built without validation (model_construct) is still checked: ints, 0 <= cut_end <= len."""
    values: dict[str, Any] = {
        "token_ids": S2.token_ids,
        "model_cut_end": 11,
        "template_cut_start": 10,
        **fields,
    }
    message = _splice_error(PrefixSplice.model_construct(**values))
    assert message.startswith("splice is not a valid PrefixSplice")
    assert rendered in message


def test_unreadable_splice_message_names_type_and_validation_errors() -> None:
    """The conversion failure names the splice's type and quotes pydantic's errors, shortened to 800 chars."""
    short = _splice_error(SimpleNamespace(token_ids=[1], model_cut_end=0))
    assert short.startswith(
        "splice must be a PrefixSplice or an object with token_ids, model_cut_end and template_cut_start, got "
        "SimpleNamespace: 1 validation error for PrefixSplice\ntemplate_cut_start\n"
    )
    head = (
        "splice must be a PrefixSplice or an object with token_ids, model_cut_end and template_cut_start, got "
        "SimpleNamespace: "
    )
    long = _splice_error(SimpleNamespace(token_ids=[True] * 60, model_cut_end="x", template_cut_start=None))
    assert long.startswith(head + "62 validation errors for PrefixSplice\ntoken_ids.0\n")
    assert len(long) == len(head) + 800
    assert long.endswith("...")


OTHER_IDS = [1, 30, 90, 90, 31, 5, 2, 6, 77, 79, 2, 8, 30, 90, 90, 31, 9]
OTHER_SUFFIX = [1, 30, 90, 90, 31, 5, 2, 6, 77, 78, 2, 8, 30, 90, 90, 31, 4]


@pytest.mark.parametrize(
    ("splice_ids", "final", "message"),
    [
        (OTHER_IDS, S2.token_ids, "splice.token_ids (length 17) differs from final_token_ids (length 17)"),
        (
            OTHER_SUFFIX,
            OTHER_SUFFIX,
            "final_token_ids[model_cut_end=11:] differs from template_token_ids[template_cut_start=10:]",
        ),
    ],
)
def test_splice_with_same_lengths_but_other_tokens(
    splice_ids: list[int], final: list[int], message: str
) -> None:
    """Equal lengths are not enough: the token ids and the verbatim suffix are compared element by element."""
    error = _remap_error(T2, final, _ranges((12, 2)), PrefixSplice(splice_ids, 11, 10))
    assert str(error).startswith("splice does not describe these token sequences: ")  # SPEC §2.5 step 2
    assert message in str(error)
    assert (error.modality, error.item_index, error.offset, error.length) == (None, None, None, None)


# ---------------------------------------------------------------------------------------------------------------
# Step 3: dataclass ranges must be rebuildable.


@dataclasses.dataclass(frozen=True)
class DerivedOffset:
    """``offset`` is a field, but not an init field."""

    length: int
    offset: int = dataclasses.field(init=False, default=12)


@dataclasses.dataclass(frozen=True)
class PropertyOffset:
    """``offset`` is a read-only property, not a field at all."""

    length: int

    @property
    def offset(self) -> int:
        return 12


@dataclasses.dataclass(frozen=True)
class ClassVarOffset:
    """``offset`` is a class variable, which ``dataclasses.fields`` does not list."""

    length: int
    offset: ClassVar[int] = 12


@dataclasses.dataclass(frozen=True)
class DerivedEnd:
    """A rebuildable range: ``offset`` is an init field; only the derived ``end`` is not."""

    offset: int
    length: int
    end: int = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "end", self.offset + self.length)


@pytest.mark.parametrize("range_", [DerivedOffset(2), PropertyOffset(2), ClassVarOffset(2)])
def test_dataclass_without_init_offset_is_rejected_up_front(range_: Any) -> None:
    """The error names the item and the type, carries its attributes, and comes before any placement error."""
    placeholders = {"audio": [], "video": [{"offset": 0, "length": 1}, range_, {"offset": 3, "length": 1}]}
    with pytest.raises(PlaceholderTypeError) as info:
        _remap(T2, S2.token_ids, placeholders, S2)  # video[2] alone could not be located
    error = info.value
    name = type(range_).__name__
    assert f"(mm_placeholders['video'][1]) is a {name} dataclass" in str(error)
    assert "'offset' is not an init field" in str(error)
    assert (error.argument, error.expected, error.actual) == (
        "mm_placeholders",
        "dataclass with an init field 'offset'",
        name,
    )
    assert (error.modality, error.item_index) == ("video", 1)
    assert_contract_error(error)


def test_dataclass_with_other_non_init_fields_is_rebuilt() -> None:
    """Only ``offset`` must be an init field: a derived ``end`` is recomputed by dataclasses.replace."""
    (moved,) = _remap(T2, S2.token_ids, {"image": [DerivedEnd(12, 2)]}, S2)["image"]
    assert type(moved) is DerivedEnd
    assert (moved.offset, moved.length, moved.end) == (13, 2, 15)


# ---------------------------------------------------------------------------------------------------------------
# The content search.


def test_hash_tables_are_built_once_and_only_when_needed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Searches near the cursor compare directly; far ones share one set of hash tables (linear total work)."""
    calls: list[int] = []
    real = multimodal._powers

    def counting(count: int) -> Any:
        calls.append(count)
        return real(count)

    monkeypatch.setattr(multimodal, "_powers", counting)
    template = [1, 30, 90, 31, 40, 91, 41, 50, 92, 51, 2, 5]
    near = [1, 1, 30, 90, 31, 40, 91, 41, 50, 92, 51, 2, 5]
    assert _remap(template, near, _ranges((2, 1), (5, 1), (8, 1))) == _ranges((3, 1), (6, 1), (9, 1))
    assert calls == []
    far = [1, *[7] * 20, 30, 90, 31, *[7] * 20, 40, 91, 41, *[7] * 20, 50, 92, 51, 2, 5]
    assert _remap(template, far, _ranges((2, 1), (5, 1), (8, 1))) == _ranges((22, 1), (45, 1), (68, 1))
    assert len(calls) == 1
