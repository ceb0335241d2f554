"""Error paths of ``rl_contracts.multimodal`` when building the result (SPEC §2.5 step 7).

A dataclass range passes validation (its ``offset`` is an init field) but ``dataclasses.replace`` can still fail
when the result is built: a required ``InitVar`` or a ``__post_init__`` that rejects the moved offset.  That
failure must surface as a ``PlaceholderTypeError`` naming the range, its type and the cause, with structured
attributes, never as a bare ``ValueError``/``TypeError`` from the caller's dataclass.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from rl_contracts.errors import PlaceholderTypeError
from rl_contracts.multimodal import remap_multimodal_placeholders
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


def _cause(text: str) -> str:
    return f"cannot be rebuilt with dataclasses.replace: {text}"


REBUILD_FAILURES = [
    (
        "required_initvar",
        NeedsInitVar(5, 3, 1),
        "NeedsInitVar",
        _cause("ValueError: InitVar 'scale' must be specified with replace()"),
    ),
    (
        "post_init_value_error",
        PinnedOffset(5, 3),
        "PinnedOffset",
        _cause("ValueError: offset 6 is pinned to 5"),
    ),
    # The caller's exception text is a name-like value: shortened to 200 characters (SPEC §0.4).
    ("post_init_type_error", TypedOffset(5, 3), "TypedOffset", _cause("TypeError: " + "x" * 197 + "...")),
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
    assert (
        str(error)
        == f"Multimodal placeholder range (mm_placeholders['audio'][1]) of type {type_text} {cause}"
    )
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
    assert str(info.value) == (
        "Multimodal placeholder range (mm_placeholders['video'][0]) of type NeedsInitVar "
        + _cause("ValueError: InitVar 'scale' must be specified with replace()")
    )
    assert (info.value.modality, info.value.item_index, info.value.actual) == ("video", 0, "NeedsInitVar")


def test_rebuildable_dataclasses_are_moved() -> None:
    """The same dataclasses rebuild fine when ``__post_init__`` accepts the new offset (control case)."""
    result = remap_multimodal_placeholders(
        template_token_ids=TEMPLATE,
        final_token_ids=list(TEMPLATE),
        mm_placeholders={"image": [PinnedOffset(5, 3)]},
    )
    assert result == {"image": [PinnedOffset(5, 3)]}
