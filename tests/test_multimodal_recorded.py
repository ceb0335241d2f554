"""Placeholder remap (SPEC §2.5) on prompts and ranges recorded from real vLLM 0.32 vision-language models.

``tests/data/vlm_placeholder_ranges.json`` was written by the real-vLLM tier (``tests/vllm/test_vlm.py`` with
``RL_CONTRACTS_VLLM_RECORD``) on tiny Qwen2-VL and Gemma3 models: per case the image sizes, the model prefix (the
engine-prefilled earlier turn plus generated ids), the expanded template prefix and template with vLLM's ranges,
and the final prompt vLLM prefilled for the splice of the unexpanded ids with vLLM's own ranges for it. Here the
library's splice and remap must reproduce vLLM's final prompt and ranges without vLLM; expectations come from the
recording only.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rl_contracts.errors import PlaceholderRemapError, RolloutPromptMismatchError
from rl_contracts.multimodal import remap_multimodal_placeholders
from rl_contracts.prompts import validate_rollout_prompt
from rl_contracts.splice import PrefixSplice, splice_prefix_tokens

DATA = json.loads((Path(__file__).parent / "data" / "vlm_placeholder_ranges.json").read_text())
MODELS: dict[str, dict[str, Any]] = DATA["models"]


@dataclasses.dataclass(frozen=True)
class VllmRange:
    """The shape of vLLM's ``PlaceholderRange`` dataclass; ``is_embed`` a numpy bool array (vLLM's is a tensor)."""

    offset: int
    length: int
    is_embed: Any = None


def _ids(kind: str) -> list[str]:
    return [f"{case['model']}-{index}" for index, case in enumerate(DATA[kind])]


def _as_vllm(ranges: dict[str, list[dict[str, Any]]]) -> dict[str, list[VllmRange]]:
    return {
        modality: [
            VllmRange(r["offset"], r["length"], None if r["is_embed"] is None else np.array(r["is_embed"]))
            for r in items
        ]
        for modality, items in ranges.items()
    }


def _plain(ranges: dict[str, list[Any]]) -> dict[str, list[dict[str, Any]]]:
    def mask(value: Any) -> list[bool] | None:
        return None if value is None else [bool(v) for v in np.asarray(value).tolist()]

    return {
        modality: [
            {"offset": r.offset, "length": r.length, "is_embed": mask(r.is_embed)}
            if isinstance(r, VllmRange)
            else {**r, "is_embed": mask(r["is_embed"])}
            for r in items
        ]
        for modality, items in ranges.items()
    }


def _check_spans(model: str, ids: list[int], ranges: dict[str, list[dict[str, Any]]]) -> None:
    token = MODELS[model]["placeholder_token_id"]
    for r in ranges["image"]:
        embeds = r["is_embed"] if r["is_embed"] is not None else [True] * r["length"]
        assert [t == token for t in ids[r["offset"] : r["offset"] + r["length"]]] == embeds


def test_the_recording_covers_both_models_and_chains() -> None:
    """Both models are recorded, with Gemma3 cases whose adjacent images vLLM reports as chained ranges."""
    assert {case["model"] for case in DATA["oracle"]} == {"qwen2_vl", "gemma3"}
    chained = [
        case
        for case in DATA["oracle"]
        if any(
            b["offset"] < a["offset"] + a["length"]
            for a, b in zip(case["final_ranges"]["image"], case["final_ranges"]["image"][1:], strict=False)
        )
    ]
    assert chained
    assert {case["model"] for case in chained} == {"gemma3"}


@pytest.mark.parametrize("case", DATA["oracle"], ids=_ids("oracle"))
def test_splice_and_remap_reproduce_vllms_final_prompt_and_ranges(case: dict[str, Any]) -> None:
    """The library's splice of the recorded expanded ids is the prompt vLLM prefilled, and the template's ranges
    remapped onto it (as dicts and as vLLM-style dataclasses) are vLLM's own ranges for it."""
    model = MODELS[case["model"]]
    splice = splice_prefix_tokens(
        model_prefix_token_ids=case["model_prefix"],
        template_prefix_token_ids=case["template_prefix"],
        template_token_ids=case["template"],
        eos_token_id=model["terminator_id"],
    )
    validate_rollout_prompt(splice.token_ids, case["final"])
    for ranges in (case["template_ranges"], _as_vllm(case["template_ranges"])):
        remapped = remap_multimodal_placeholders(
            template_token_ids=case["template"],
            final_token_ids=splice.token_ids,
            mm_placeholders=ranges,
            splice=splice,
        )
        assert _plain(remapped) == case["final_ranges"]
    _check_spans(case["model"], case["final"], case["final_ranges"])
    _check_spans(case["model"], case["template"], case["template_ranges"])


@pytest.mark.parametrize(
    "case",
    [case for case in DATA["oracle"] if case["model"] == "qwen2_vl"],
    ids=[name for name in _ids("oracle") if name.startswith("qwen2_vl")],
)
def test_qwen2_vl_range_lengths_follow_the_image_sizes(case: dict[str, Any]) -> None:
    """Qwen2-VL's ranges cover one ``<|image_pad|>`` per 28x28 pixels of each recorded image, with no mask."""
    ranges = case["template_ranges"]["image"]
    assert [r["length"] for r in ranges] == [w * h // 784 for w, h in case["image_sizes"]]
    assert all(r["is_embed"] is None for r in ranges)


@pytest.mark.parametrize("case", DATA["chained"], ids=_ids("chained"))
def test_gemma3_chain_moves_as_a_unit(case: dict[str, Any]) -> None:
    """Gemma3's two back-to-back images share one token; text spliced in front moves the chain as one unit."""
    first, second = case["template_ranges"]["image"]
    assert second["offset"] == first["offset"] + first["length"] - 1
    assert case["template"][second["offset"]] == MODELS["gemma3"]["newline_ids"][3]
    remapped = remap_multimodal_placeholders(
        template_token_ids=case["template"],
        final_token_ids=case["final"],
        mm_placeholders=_as_vllm(case["template_ranges"]),
    )
    assert _plain(remapped) == case["final_ranges"]


@pytest.mark.parametrize("case", DATA["straddle"], ids=_ids("straddle"))
def test_a_cut_through_a_recorded_image_span_fails_closed(case: dict[str, Any]) -> None:
    """A splice cutting strictly inside a recorded image span (a chain's union included) raises, naming the range
    the real tier saw named."""
    ids, cut = case["template"], case["cut"]
    with pytest.raises(PlaceholderRemapError, match="straddles the splice boundary") as info:
        remap_multimodal_placeholders(
            template_token_ids=ids,
            final_token_ids=ids,
            mm_placeholders=_as_vllm(case["template_ranges"]),
            splice=PrefixSplice(token_ids=ids, model_cut_end=cut, template_cut_start=cut),
        )
    assert info.value.item_index == case["error_item_index"]


@pytest.mark.parametrize("case", DATA["double_expansion"], ids=_ids("double_expansion"))
def test_double_expansion_is_refused(case: dict[str, Any]) -> None:
    """NeMo RL #4182: vLLM prefilled a longer prompt than the learner's expanded ids; the prompt check refuses it."""
    token = MODELS[case["model"]]["placeholder_token_id"]
    assert case["prefilled_twice"].count(token) > case["expanded"].count(token) > case["raw"].count(token)
    with pytest.raises(RolloutPromptMismatchError) as info:
        validate_rollout_prompt(case["expanded"], case["prefilled_twice"])
    assert info.value.expected_length == len(case["expanded"])
    assert info.value.actual_length == len(case["prefilled_twice"])
