"""Chained placeholder ranges (SPEC §2.5 step 3, fourth release): Gemma3's adjacent images share one token.

vLLM's Gemma3 expands each image to ``\\n\\n <start_of_image> soft x N <end_of_image> \\n\\n`` and merges the
trailing ``\\n\\n`` of one image with the leading ``\\n\\n`` of the next into one token, which both ranges cover with
``is_embed`` false. Such ranges are chained and placed as one span; every other partial overlap still fails closed.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
import torch

from rl_contracts.errors import PlaceholderRemapError
from rl_contracts.multimodal import PlaceholderRange, remap_multimodal_placeholders
from rl_contracts.splice import PrefixSplice
from rl_contracts.testing import assert_contract_error

# SPEC §2.5 step 3's example: image[0] (1, 8) and image[1] (8, 8) share position 8 (token 10, "\n\n\n\n").
IDS = [26, 8, 3, 5, 5, 5, 5, 4, 10, 3, 5, 5, 5, 5, 4, 8, 22]
MASK = [False, False, True, True, True, True, False, False]
OVERLAP = "overlap without being identical; they cannot be relocated."


@dataclasses.dataclass(frozen=True)
class VllmRange:
    """Stand-in for vLLM's frozen ``PlaceholderRange(offset, length, is_embed)`` dataclass."""

    offset: int
    length: int
    is_embed: Any = None


def _chain(mask: Any = MASK, second_mask: Any = MASK) -> dict[str, list[Any]]:
    return {
        "image": [
            {"offset": 1, "length": 8, "is_embed": mask},
            {"offset": 8, "length": 8, "is_embed": second_mask},
        ]
    }


def _remap(template: Any, final: Any, placeholders: Any, splice: Any = None) -> dict[str, list[Any]]:
    return remap_multimodal_placeholders(
        template_token_ids=template, final_token_ids=final, mm_placeholders=placeholders, splice=splice
    )


def _offsets(result: dict[str, list[Any]]) -> dict[str, list[tuple[int, int]]]:
    def bounds(r: Any) -> tuple[int, int]:
        return (r["offset"], r["length"]) if isinstance(r, dict) else (r.offset, r.length)

    return {modality: [bounds(r) for r in ranges] for modality, ranges in result.items()}


def _overlap_error(placeholders: Any, final: Any = IDS, splice: Any = None) -> PlaceholderRemapError:
    with pytest.raises(PlaceholderRemapError) as info:
        _remap(IDS, final, placeholders, splice)
    assert_contract_error(info.value)
    assert str(info.value).endswith(OVERLAP)
    return info.value


def test_spec_example_is_accepted_and_kept_on_the_fast_path() -> None:
    """The SPEC's Gemma3 chain is valid: with final == template every offset and mask object is kept."""
    placeholders = _chain()
    result = _remap(IDS, list(IDS), placeholders)
    assert _offsets(result) == {"image": [(1, 8), (8, 8)]}
    assert all(
        new["is_embed"] is old["is_embed"]
        for new, old in zip(result["image"], placeholders["image"], strict=True)
    )


def test_chain_located_by_content_moves_as_a_unit() -> None:
    """Three words spliced in front (no splice given) move both members by exactly 3, as vLLM's own ranges do."""
    result = _remap(IDS, [40, 41, 42, *IDS], _chain())
    assert _offsets(result) == {"image": [(4, 8), (11, 8)]}


def test_chain_after_the_cut_shifts_arithmetically() -> None:
    """With a splice whose cut lies before the chain, both members shift by model_cut_end - template_cut_start."""
    final = [26, 99, 98, *IDS[1:]]
    result = _remap(IDS, final, _chain(), PrefixSplice(final, 3, 1))
    assert _offsets(result) == {"image": [(3, 8), (10, 8)]}


def test_chain_before_the_cut_is_located_with_the_union_neighbours() -> None:
    """A chain inside the exact model prefix is found by content; its neighbours are the union's, not a member's."""
    template = [*IDS, 2, 60]
    final = [77, *IDS, 2, 60]
    result = _remap(template, final, _chain(), PrefixSplice(final, 19, 18))
    assert _offsets(result) == {"image": [(2, 8), (9, 8)]}


def test_a_cut_through_the_shared_token_straddles_the_chain() -> None:
    """A cut inside the union (here at the shared token) refuses the chain, named by its first member."""
    final = [26, 99, *IDS[8:]]
    with pytest.raises(PlaceholderRemapError) as info:
        _remap(IDS, final, _chain(), PrefixSplice(final, 2, 8))
    assert_contract_error(info.value)
    assert str(info.value) == (
        "Multimodal placeholder range image[0] (offset=1, length=8), chained with image[1] into the span "
        "(offset=1, length=15), straddles the splice boundary template_cut_start=8; it cannot be represented in "
        "the final prompt."
    )
    assert (info.value.modality, info.value.item_index, info.value.offset, info.value.length) == (
        "image",
        0,
        1,
        8,
    )


def test_a_chain_that_cannot_be_located_names_its_members() -> None:
    """A chain whose union is not in the final prompt fails closed with the union's span in the message."""
    final = [26, 8, 3, 5, 5, 5, 5, 4, 8, 3, 5, 5, 5, 5, 4, 8, 22]  # the shared token split in two
    with pytest.raises(
        PlaceholderRemapError, match=r"chained with image\[1\] into the span \(offset=1, length=15\), "
    ):
        _remap(IDS, final, _chain())


@pytest.mark.parametrize(
    "mask",
    [
        MASK,
        tuple(MASK),
        np.array(MASK),
        torch.tensor(MASK),
        [np.bool_(value) for value in MASK],
    ],
    ids=["list", "tuple", "numpy", "torch", "numpy-bools"],
)
def test_masks_of_every_container_chain(mask: Any) -> None:
    """``is_embed`` given as a list, tuple, numpy array or torch tensor is read (through ``tolist()``)."""
    assert _offsets(_remap(IDS, [40, *IDS], _chain(mask, mask))) == {"image": [(2, 8), (9, 8)]}


@pytest.mark.parametrize("factory", [VllmRange, PlaceholderRange])
def test_dataclass_and_model_ranges_chain(factory: Any) -> None:
    """vLLM's dataclass and the library's model carry their masks; the results keep their container types."""
    placeholders = {
        "image": [factory(offset=1, length=8, is_embed=MASK), factory(offset=8, length=8, is_embed=MASK)]
    }
    result = _remap(IDS, [40, *IDS], placeholders)
    assert [type(r) for r in result["image"]] == [factory, factory]
    assert _offsets(result) == {"image": [(2, 8), (9, 8)]}


def test_three_images_and_a_coincident_member() -> None:
    """A chain of three, with an audio range coincident with its middle member, is placed once."""
    ids = [26, 8, 3, 5, 4, 10, 3, 5, 4, 10, 3, 5, 4, 8, 22]
    mask = [False, False, True, False, False]
    placeholders = {
        "image": [{"offset": o, "length": 5, "is_embed": mask} for o in (1, 5, 9)],
        "audio": [{"offset": 5, "length": 5, "is_embed": mask}],
    }
    result = _remap(ids, [40, 41, *ids], placeholders)
    assert _offsets(result) == {"image": [(3, 5), (7, 5), (11, 5)], "audio": [(7, 5)]}


@pytest.mark.parametrize(
    ("placeholders", "names"),
    [
        # The shared token embeds in the later range.
        (_chain(MASK, [True, *MASK[1:]]), ("image[0] (offset=1, length=8)", "image[1] (offset=8, length=8)")),
        # The shared token embeds in the earlier range.
        (
            _chain([*MASK[:-1], True], MASK),
            ("image[0] (offset=1, length=8)", "image[1] (offset=8, length=8)"),
        ),
        # One range has no mask, or one that is not `length` bools.
        (_chain(MASK, None), ("image[0] (offset=1, length=8)", "image[1] (offset=8, length=8)")),
        (_chain(None, MASK), ("image[0] (offset=1, length=8)", "image[1] (offset=8, length=8)")),
        (_chain(MASK, MASK[:-1]), ("image[0] (offset=1, length=8)", "image[1] (offset=8, length=8)")),
        (
            _chain(MASK, [0, 0, 1, 1, 1, 1, 0, 0]),
            ("image[0] (offset=1, length=8)", "image[1] (offset=8, length=8)"),
        ),
        (_chain(MASK, "FFTTTTFF"), ("image[0] (offset=1, length=8)", "image[1] (offset=8, length=8)")),
        # Overlapping by three: the later range's first soft token lies inside the earlier range.
        (
            {
                "image": [
                    {"offset": 1, "length": 8, "is_embed": MASK},
                    {"offset": 6, "length": 8, "is_embed": MASK},
                ]
            },
            ("image[0] (offset=1, length=8)", "image[1] (offset=6, length=8)"),
        ),
        # A coincident twin without a mask breaks the chain; the twin is the range named.
        (
            {**_chain(), "audio": [{"offset": 8, "length": 8}]},
            ("image[0] (offset=1, length=8)", "audio[0] (offset=8, length=8)"),
        ),
    ],
    ids=[
        "later-embeds",
        "earlier-embeds",
        "later-unmasked",
        "earlier-unmasked",
        "short-mask",
        "int-mask",
        "str-mask",
        "embedding-overlap",
        "unmasked-twin",
    ],
)
def test_partial_overlaps_that_are_not_chains_fail_closed(placeholders: Any, names: tuple[str, str]) -> None:
    """Any overlap other than a chain raises the SPEC's overlap error, on the fast path and with a splice."""
    error = _overlap_error(placeholders)
    assert str(error) == f"Multimodal placeholder ranges {names[0]} and {names[1]} {OVERLAP}"
    final = [40, *IDS]
    _overlap_error(placeholders, final, PrefixSplice(final, 1, 0))


class _BrokenMask:
    """An ``is_embed`` whose ``tolist()`` raises: read only when the range overlaps another."""

    def tolist(self) -> list[bool]:
        raise RuntimeError("no")


def test_a_mask_is_read_only_when_its_range_overlaps() -> None:
    """An unreadable mask on a range that overlaps nothing is never read; on an overlapping range it fails closed."""
    alone = {"image": [{"offset": 1, "length": 7, "is_embed": _BrokenMask()}]}
    assert _offsets(_remap(IDS, [40, *IDS], alone)) == {"image": [(2, 7)]}
    _overlap_error(_chain(MASK, _BrokenMask()))
