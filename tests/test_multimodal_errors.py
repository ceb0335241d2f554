"""Error paths of ``rl_contracts.multimodal`` (SPEC §2.4, §2.5): messages and structured attributes.

Every rejection of a bad ``mm_placeholders`` container, range, field or token sequence is checked against a table of
bad inputs with the message as SPEC quotes it (or its key fragments where SPEC quotes none) and every structured
attribute (``argument``, ``expected``, ``actual``, ``modality``, ``item_index``, ``offset``, ``length``): callers
and logs rely on both, and a range inside ``mm_placeholders`` must be quoted by its modality and index.

When building the result (SPEC §2.5 step 7), a dataclass range passes validation (its ``offset`` is an init
field) but ``dataclasses.replace`` can still fail: a required ``InitVar`` or a ``__post_init__`` that rejects
the moved offset.  That failure must surface as a ``PlaceholderTypeError`` naming the range, its type and the cause, with structured
attributes, never as a bare ``ValueError``/``TypeError`` from the caller's dataclass.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from rl_contracts.errors import ContractTypeError, PlaceholderRemapError, PlaceholderTypeError
from rl_contracts.multimodal import placeholder_range_bounds, remap_multimodal_placeholders
from rl_contracts.splice import PrefixSplice
from rl_contracts.testing import assert_contract_error

# SPEC §2.5 example 1: the range (5, 3) moves to offset 6.
TEMPLATE = [7, 8, 1001, 2, 30, 90, 90, 90, 31]
SPLICE = PrefixSplice([7, 8, 1002, 1003, 2, 30, 90, 90, 90, 31], 5, 4)
EXPECTED = "dataclass rebuildable with dataclasses.replace"


@dataclasses.dataclass(frozen=True)
class NeedsInitVar:
    """A range with a required ``InitVar``: ``dataclasses.replace`` raises ``ValueError`` without it."""

    offset: int
    length: int
    scale: dataclasses.InitVar[int]

    def __post_init__(self, scale: int) -> None:
        del scale


@dataclasses.dataclass(frozen=True)
class PinnedOffset:
    """A range whose ``__post_init__`` rejects any offset but 5 with a ``ValueError``."""

    offset: int
    length: int

    def __post_init__(self) -> None:
        if self.offset != 5:
            raise ValueError(f"offset {self.offset} is pinned to 5")


@dataclasses.dataclass(frozen=True)
class TypedOffset:
    """A range whose ``__post_init__`` raises ``TypeError`` for any offset but 5, with a very long message."""

    offset: int
    length: int

    def __post_init__(self) -> None:
        if self.offset != 5:
            raise TypeError("x" * 1000)


REBUILD_FAILURES = [
    (
        "required_initvar",
        NeedsInitVar(5, 3, 1),
        "NeedsInitVar",
        "ValueError: InitVar 'scale' must be specified with replace()",
    ),
    (
        "post_init_value_error",
        PinnedOffset(5, 3),
        "PinnedOffset",
        "ValueError: offset 6 is pinned to 5",
    ),
    # The caller's exception text is a name-like value: shortened to 200 characters (SPEC §0.4).
    ("post_init_type_error", TypedOffset(5, 3), "TypedOffset", "TypeError: " + "x" * 197 + "..."),
]


@pytest.mark.parametrize(
    ("range_", "type_text", "cause"),
    [case[1:] for case in REBUILD_FAILURES],
    ids=[c[0] for c in REBUILD_FAILURES],
)
def test_dataclass_that_replace_cannot_rebuild_raises_placeholder_type_error(
    range_: Any, type_text: str, cause: str
) -> None:
    """The error names the modality, item index, the range's type and the replace failure, with attributes."""
    placeholders: dict[str, list[Any]] = {
        "image": [{"offset": 5, "length": 3}],
        "audio": [{"offset": 5, "length": 3}, range_],  # coincident with image[0]: placed once, then rebuilt
    }
    snapshot = copy.deepcopy(placeholders)
    with pytest.raises(PlaceholderTypeError) as info:
        remap_multimodal_placeholders(
            template_token_ids=TEMPLATE,
            final_token_ids=SPLICE.token_ids,
            mm_placeholders=placeholders,
            splice=SPLICE,
        )
    error = info.value
    assert "(mm_placeholders['audio'][1])" in str(error)
    assert f"of type {type_text}" in str(error)
    assert str(error).endswith(f"dataclasses.replace: {cause}")  # the caller's exception, type and text
    assert (error.argument, error.expected, error.actual) == ("mm_placeholders", EXPECTED, type_text)
    assert (error.modality, error.item_index, error.offset, error.length) == ("audio", 1, None, None)
    assert error.__cause__ is None  # raised "from None": no chained traceback of the caller's exception
    assert error.__suppress_context__
    assert_contract_error(error)
    assert placeholders == snapshot  # nothing was mutated


def test_rebuild_failure_on_the_unchanged_fast_path() -> None:
    """Without a splice and with final == template the offsets are kept, but the result is still rebuilt."""
    with pytest.raises(PlaceholderTypeError) as info:
        remap_multimodal_placeholders(
            template_token_ids=TEMPLATE,
            final_token_ids=list(TEMPLATE),
            mm_placeholders={"video": [NeedsInitVar(5, 3, 2)]},
        )
    assert "(mm_placeholders['video'][0]) of type NeedsInitVar" in str(info.value)
    assert str(info.value).endswith("ValueError: InitVar 'scale' must be specified with replace()")
    assert (info.value.modality, info.value.item_index, info.value.actual) == ("video", 0, "NeedsInitVar")


def test_rebuildable_dataclasses_are_moved() -> None:
    """The same dataclasses rebuild fine when ``__post_init__`` accepts the new offset (control case)."""
    result = remap_multimodal_placeholders(
        template_token_ids=TEMPLATE,
        final_token_ids=list(TEMPLATE),
        mm_placeholders={"image": [PinnedOffset(5, 3)]},
    )
    assert result == {"image": [PinnedOffset(5, 3)]}


# --- Validation errors (SPEC §2.4, §2.5 steps 1 and 3) ---------------------------------------------------------

# SPEC §2.5 examples 2-5: a 16-token template.
T2 = [1, 30, 90, 90, 31, 5, 2, 6, 7, 2, 8, 30, 90, 90, 31, 9]
RANGE_TYPES = "Mapping | dataclass instance | PlaceholderRange"
MAPPING = "a mapping from modality name to a list of placeholder ranges"
OK = {"offset": 1, "length": 1}


@dataclasses.dataclass(frozen=True)
class NoOffset:
    """A dataclass range without an ``offset`` field."""

    length: int


@dataclasses.dataclass(frozen=True)
class ComputedOffset:
    """A dataclass range whose ``offset`` is not an init field: ``dataclasses.replace`` cannot move it."""

    length: int
    offset: int = dataclasses.field(init=False, default=1)


def _remap(placeholders: Any, template: Any = T2, final: Any = T2) -> dict[str, list[Any]]:
    return remap_multimodal_placeholders(
        template_token_ids=template, final_token_ids=final, mm_placeholders=placeholders
    )


def _attributes(error: Any) -> tuple[Any, ...]:
    names = ("argument", "expected", "actual", "modality", "item_index", "offset", "length")
    return tuple(getattr(error, name) for name in names)


# (id, mm_placeholders, message fragments (the SPEC text first where SPEC quotes one), (argument, expected, actual,
# modality, item_index, offset, length))
TYPE_ERRORS: list[tuple[str, Any, tuple[str, ...], tuple[Any, ...]]] = [
    (
        "container_not_a_mapping",
        [OK],
        ("mm_placeholders must be a mapping", "got list"),
        ("mm_placeholders", MAPPING, "list", None, None, None, None),
    ),
    (
        "modality_key_not_str",
        {"image": [], 7: []},
        ("mm_placeholders keys must be str", "got int 7"),
        ("mm_placeholders", "str", "int", None, None, None, None),
    ),
    (
        "modality_key_tuple",
        {("image",): []},
        ("mm_placeholders keys must be str", "got tuple ('image',)"),
        ("mm_placeholders", "str", "tuple", None, None, None, None),
    ),
    (
        "ranges_not_a_list",
        {"image": [OK], "audio": OK},
        ("mm_placeholders['audio'] must be a list or tuple", "got dict"),
        ("mm_placeholders", "list | tuple", "dict", "audio", None, None, None),
    ),
    (
        "ranges_a_frozenset",
        {"video": frozenset()},
        ("mm_placeholders['video'] must be a list or tuple", "got frozenset"),
        ("mm_placeholders", "list | tuple", "frozenset", "video", None, None, None),
    ),
    (
        "range_not_a_container",
        {"image": [OK, [5, 3]]},
        (
            "Multimodal placeholder ranges must be mappings or dataclass instances, got list",
            "(mm_placeholders['image'][1])",
        ),
        ("mm_placeholders", RANGE_TYPES, "list", "image", 1, None, None),
    ),
    (
        "range_a_dataclass_class",
        {"image": [], "video": (OK, OK, NoOffset)},
        (
            "Multimodal placeholder ranges must be mappings or dataclass instances, got type",
            "(mm_placeholders['video'][2])",
        ),
        ("mm_placeholders", RANGE_TYPES, "type", "video", 2, None, None),
    ),
    (
        "offset_a_bool",
        {"image": [{"offset": True, "length": 2}]},
        ("Multimodal placeholder range offset must be an int, got bool", "(mm_placeholders['image'][0])"),
        ("offset", "int", "bool", "image", 0, None, None),
    ),
    (
        "length_a_float",
        {"audio": [OK, {"offset": 3, "length": 2.0}]},
        ("Multimodal placeholder range length must be an int, got float", "(mm_placeholders['audio'][1])"),
        ("length", "int", "float", "audio", 1, None, None),
    ),
    (
        "offset_not_an_init_field",
        {"image": [], "video": [OK, ComputedOffset(2)]},
        ("(mm_placeholders['video'][1])", "ComputedOffset", "'offset' is not an init field"),
        (
            "mm_placeholders",
            "dataclass with an init field 'offset'",
            "ComputedOffset",
            "video",
            1,
            None,
            None,
        ),
    ),
]


@pytest.mark.parametrize(
    ("placeholders", "fragments", "attributes"),
    [case[1:] for case in TYPE_ERRORS],
    ids=[case[0] for case in TYPE_ERRORS],
)
def test_remap_type_errors_name_the_item_and_carry_attributes(
    placeholders: Any, fragments: tuple[str, ...], attributes: tuple[Any, ...]
) -> None:
    """A wrong container, modality key, range type or field type raises PlaceholderTypeError, item quoted."""
    with pytest.raises(PlaceholderTypeError) as info:
        _remap(placeholders)
    for fragment in fragments:
        assert fragment in str(info.value)
    assert _attributes(info.value) == attributes
    assert_contract_error(info.value)


# (id, range, message, (argument, expected, actual)): outside mm_placeholders there is no position to quote.
BOUNDS_TYPE_ERRORS: list[tuple[str, Any, str, tuple[Any, ...]]] = [
    (
        "set",
        {5, 3},
        "Multimodal placeholder ranges must be mappings or dataclass instances, got set",
        ("mm_placeholders", RANGE_TYPES, "set"),
    ),
    (
        "length_a_str",
        {"offset": 5, "length": "3"},
        "Multimodal placeholder range length must be an int, got str",
        ("length", "int", "str"),
    ),
    (
        "offset_none",
        {"offset": None, "length": 3},
        "Multimodal placeholder range offset must be an int, got NoneType",
        ("offset", "int", "NoneType"),
    ),
]


@pytest.mark.parametrize(
    ("placeholder_range", "message", "attributes"),
    [case[1:] for case in BOUNDS_TYPE_ERRORS],
    ids=[case[0] for case in BOUNDS_TYPE_ERRORS],
)
def test_placeholder_range_bounds_type_errors_have_attributes(
    placeholder_range: Any, message: str, attributes: tuple[Any, ...]
) -> None:
    """``placeholder_range_bounds`` raises the same errors, without a modality or item index."""
    with pytest.raises(PlaceholderTypeError) as info:
        placeholder_range_bounds(placeholder_range)
    assert str(info.value) == message
    assert _attributes(info.value) == (*attributes, None, None, None, None)
    assert_contract_error(info.value)


def _overlap(first: str, second: str) -> str:
    return f"Multimodal placeholder ranges {first} and {second} overlap without being identical; they cannot be relocated."


# (id, mm_placeholders, message fragments or the whole SPEC message, (modality, item_index, offset, length))
REMAP_ERRORS: list[tuple[str, Any, tuple[str, ...] | str, tuple[Any, ...]]] = [
    (
        "dataclass_missing_offset",
        {"image": [OK], "video": [OK, NoOffset(2)]},
        ("Multimodal placeholder range is missing 'offset'", "(mm_placeholders['video'][1])"),
        ("video", 1, None, None),
    ),
    (
        "mapping_missing_length",
        {"audio": [{"offset": 2}]},
        ("Multimodal placeholder range is missing 'length'", "(mm_placeholders['audio'][0])"),
        ("audio", 0, None, None),
    ),
    (
        "invalid_bounds",
        {"image": [OK, OK, {"offset": 0, "length": 0}]},
        (
            "Multimodal placeholder range has invalid bounds: offset=0, length=0",
            "(mm_placeholders['image'][2])",
        ),
        ("image", 2, 0, 0),
    ),
    (
        "one_past_the_end",  # offset + length == len(template) + 1
        {"image": [{"offset": 14, "length": 3}]},
        "Multimodal placeholder range image[0] (offset=14, length=3) is out of bounds for template_token_ids of "
        "length 16.",
        ("image", 0, 14, 3),
    ),
    (
        # image[0] ends exactly where image[2] starts (touching, no overlap); image[1] is the range it hits.
        "overlap_after_a_touching_range",
        {"image": [{"offset": 0, "length": 2}, {"offset": 2, "length": 1}, {"offset": 2, "length": 2}]},
        _overlap("image[1] (offset=2, length=1)", "image[2] (offset=2, length=2)"),
        ("image", 2, 2, 2),
    ),
]


@pytest.mark.parametrize(
    ("placeholders", "message", "where"),
    [case[1:] for case in REMAP_ERRORS],
    ids=[case[0] for case in REMAP_ERRORS],
)
def test_remap_value_errors_have_their_messages_and_attributes(
    placeholders: Any, message: tuple[str, ...] | str, where: tuple[Any, ...]
) -> None:
    """A missing field, invalid bounds, an out-of-bounds or an overlapping range raise PlaceholderRemapError; a
    message SPEC quotes whole is pinned whole, the others by the SPEC text and the item's position."""
    with pytest.raises(PlaceholderRemapError) as info:
        _remap(placeholders)
    error = info.value
    if isinstance(message, str):
        assert str(error) == message
    else:
        assert all(fragment in str(error) for fragment in message)
    assert (error.modality, error.item_index, error.offset, error.length) == where
    assert_contract_error(error)


def test_placeholder_range_bounds_missing_dataclass_offset() -> None:
    """A dataclass without ``offset`` is a missing field (PlaceholderRemapError), not a type error."""
    with pytest.raises(PlaceholderRemapError) as info:
        placeholder_range_bounds(NoOffset(3))
    assert str(info.value) == "Multimodal placeholder range is missing 'offset'"
    assert (info.value.modality, info.value.item_index) == (None, None)


@pytest.mark.parametrize(
    "placeholders",
    [
        {"image": [{"offset": 14, "length": 2}]},  # ends exactly at len(template)
        {"image": [{"offset": 0, "length": 2}, {"offset": 2, "length": 2}]},  # touching ranges do not overlap
    ],
    ids=["ends_at_template_end", "touching_ranges"],
)
def test_boundaries_of_the_range_checks_are_accepted(placeholders: dict[str, list[dict[str, int]]]) -> None:
    """The last valid end and two adjacent ranges pass validation; the offsets are kept when final == template."""
    assert _remap(placeholders) == placeholders


# (id, template, final, argument, expected, actual)
TOKEN_ERRORS: list[tuple[str, Any, Any, str, str, str]] = [
    (
        "template_none",
        None,
        T2,
        "template_token_ids",
        "a sequence of ints",
        "NoneType",
    ),
    (
        "template_bool_id",
        [1, 2, True],
        T2,
        "template_token_ids[2]",
        "an int (not bool)",
        "bool",
    ),
    (
        "final_a_str",
        T2,
        "12",
        "final_token_ids",
        "a sequence of ints",
        "str",
    ),
    (
        "final_float_id",
        T2,
        [1, 2.5],
        "final_token_ids[1]",
        "an int (not bool)",
        "float",
    ),
]


@pytest.mark.parametrize(
    ("template", "final", "argument", "expected", "actual"),
    [case[1:] for case in TOKEN_ERRORS],
    ids=[case[0] for case in TOKEN_ERRORS],
)
def test_token_id_errors_name_the_argument(
    template: Any, final: Any, argument: str, expected: str, actual: str
) -> None:
    """Non-int token ids raise ContractTypeError naming template_token_ids or final_token_ids (and the index)."""
    with pytest.raises(ContractTypeError) as info:
        _remap({"image": []}, template, final)
    assert type(info.value) is ContractTypeError
    assert str(info.value).startswith(f"{argument} must be ")
    assert (info.value.argument, info.value.expected, info.value.actual) == (argument, expected, actual)
    assert_contract_error(info.value)
