"""Properties of chained placeholder ranges (SPEC §2.5 step 3, fourth release) in ``remap_multimodal_placeholders``.

Prompts are built like vLLM's Gemma3 expansion: each image is ``NL BOI SOFT x n EOI NL`` with ``is_embed`` on the
soft tokens only, and two adjacent images share one ``NL`` (a chain); images separated by text are not chained.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rl_contracts.errors import PlaceholderRemapError
from rl_contracts.multimodal import remap_multimodal_placeholders
from rl_contracts.splice import PrefixSplice

NL, BOI, SOFT, EOI, TERMINATOR = 900, 901, 902, 903, 2
TEXT = st.lists(st.integers(10, 21), min_size=1, max_size=4)


@dataclass(frozen=True)
class Prompt:
    """Token ids, the image ranges (dicts with masks) and, per range, the index of its chain."""

    ids: list[int]
    ranges: list[dict[str, Any]]
    chain_of: list[int]


@st.composite
def gemma_prompts(draw: st.DrawFn) -> Prompt:
    """Text, then 1-4 images, each adjacent to the previous one (chained) or separated from it by text, then text."""
    ids = [*draw(TEXT), NL]
    ranges: list[dict[str, Any]] = []
    chain_of: list[int] = []
    for index, soft in enumerate(draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))):
        separated = index == 0 or draw(st.booleans())
        if index and separated:
            ids += [*draw(TEXT), NL]
        start = len(ids) - 1
        ids += [BOI, *[SOFT] * soft, EOI, NL]
        ranges.append(
            {"offset": start, "length": soft + 4, "is_embed": [False, False, *[True] * soft, False, False]}
        )
        chain_of.append(index if separated else chain_of[-1])
    ids += draw(TEXT)
    return Prompt(ids, ranges, chain_of)


def _remap(template: list[int], final: list[int], ranges: list[Any], splice: Any = None) -> list[Any]:
    result = remap_multimodal_placeholders(
        template_token_ids=template, final_token_ids=final, mm_placeholders={"image": ranges}, splice=splice
    )
    return result["image"]


@given(gemma_prompts(), gemma_prompts(), TEXT, st.booleans())
def test_a_chain_moves_as_a_unit(
    prompt: Prompt, suffix: Prompt, inserted: list[int], with_splice: bool
) -> None:
    """Every member of a chain moves by the same shift, keeps its mask and still shares its token with the next
    member. Without a splice, text prepended to the template moves every range by content; with one, the history
    (holding ``prompt``'s images, located by content) gains the text and the new turn (``suffix``'s images) shifts
    arithmetically."""
    ranges, chain_of = prompt.ranges, prompt.chain_of
    if with_splice:
        history = len(prompt.ids) + 1
        template = [*prompt.ids, TERMINATOR, *suffix.ids]
        ranges = ranges + [{**r, "offset": r["offset"] + history} for r in suffix.ranges]
        chain_of = chain_of + [len(chain_of) + index for index in suffix.chain_of]
        final = inserted + template
        splice: PrefixSplice | None = PrefixSplice(final, len(inserted) + history, history)
    else:
        template, final, splice = prompt.ids, inserted + prompt.ids, None
    result = _remap(template, final, ranges, splice)
    for old, new in zip(ranges, result, strict=True):
        assert new["offset"] == old["offset"] + len(inserted)
        assert new["is_embed"] is old["is_embed"]
    for index in range(1, len(result)):
        if chain_of[index] == chain_of[index - 1]:
            assert result[index]["offset"] == result[index - 1]["offset"] + result[index - 1]["length"] - 1


@st.composite
def broken_chains(draw: st.DrawFn) -> tuple[Prompt, list[dict[str, Any]]]:
    """A prompt with a chain, and its ranges with one chained pair made to overlap on an embedding position (or to
    lose a mask): the later member's shared token embeds, the earlier one's does, the later one starts 2-3 tokens
    earlier, or one of the two has no mask."""
    prompt = draw(gemma_prompts().filter(lambda p: len(set(p.chain_of)) < len(p.chain_of)))
    later = draw(
        st.sampled_from(
            [i for i in range(1, len(prompt.ranges)) if prompt.chain_of[i] == prompt.chain_of[i - 1]]
        )
    )
    ranges = [dict(r) for r in prompt.ranges]
    earlier, member = ranges[later - 1], ranges[later]
    how = draw(
        st.sampled_from(
            ["later_embeds", "earlier_embeds", "earlier_start", "no_mask_later", "no_mask_earlier"]
        )
    )
    if how == "later_embeds":
        member["is_embed"] = [True, *member["is_embed"][1:]]
    elif how == "earlier_embeds":
        earlier["is_embed"] = [*earlier["is_embed"][:-1], True]
    elif how == "earlier_start":
        member["offset"] -= draw(st.integers(2, 3))
    else:
        (member if how == "no_mask_later" else earlier)["is_embed"] = None
    return prompt, ranges


@given(broken_chains(), TEXT)
def test_a_partial_overlap_on_an_embedding_position_fails_closed(
    case: tuple[Prompt, list[dict[str, Any]]], head: list[int]
) -> None:
    """Two ranges that overlap where either embeds (or either has no mask) are no chain: the remap raises
    PlaceholderRemapError's overlap error on the identity fast path, when locating, and with a splice."""
    prompt, ranges = case
    template = prompt.ids
    final = head + template
    for target, splice in ((template, None), (final, None), (final, PrefixSplice(final, len(head), 0))):
        with pytest.raises(
            PlaceholderRemapError, match="overlap without being identical; they cannot be relocated"
        ):
            _remap(template, target, ranges, splice)
