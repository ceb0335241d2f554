"""Multimodal placeholder remap against real vision-language models: vLLM's own ranges are the oracle (0.32).

Two tiny random-weight models (``tests/vllm/build_vlm_models.py``): Qwen2-VL, whose ranges cover only the
``<|image_pad|>`` run, and Gemma3, whose ranges cover ``\\n\\n <start_of_image> soft x4 <end_of_image> \\n\\n`` with
``is_embed`` marking the four soft tokens, and whose adjacent images share one merged newline token (chained
ranges, SPEC §2.5 step 3). vLLM's ranges are read from the processed request (the adapter below).

The oracle property: Hypothesis draws a multi-turn conversation (images in earlier and in the new user turn, their
sizes) and the model's generated prefix. The learner builds the final prompt with the library's splice of the
expanded ids (the engine-prefilled prompt of the earlier turns plus the generated ids, against the expanded
template), and moves the template's ranges with ``remap_multimodal_placeholders``. Independently, the same splice
of the unexpanded ids is handed, with the same images, to vLLM's input processor: it must prefill exactly the
learner's final prompt, and its ranges (offset, length, is_embed) must equal the remapped ones.

With ``RL_CONTRACTS_VLLM_RECORD`` set to a directory, the cases are written there as ``vlm_placeholder_ranges.json``
(the recording ``tests/test_multimodal_recorded.py`` replays without vLLM).
"""

from __future__ import annotations

import gc
import itertools
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest
import torch
import vllm
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from PIL import Image  # type: ignore[import-not-found, unused-ignore]
from vllm import LLM, SamplingParams

from rl_contracts.errors import PlaceholderRemapError, RolloutPromptError, RolloutPromptMismatchError
from rl_contracts.multimodal import remap_multimodal_placeholders
from rl_contracts.prompts import format_prompt_for_vllm_generation, validate_rollout_prompt
from rl_contracts.rollouts import rollout_batch
from rl_contracts.splice import PrefixSplice, splice_prefix_tokens

pytestmark = [pytest.mark.vllm, pytest.mark.vllm_releases("0.32")]

VLM_MODELS_ENV = "RL_CONTRACTS_VLLM_VLM_MODELS"
RECORD_ENV = "RL_CONTRACTS_VLLM_RECORD"
MAX_IMAGES = 4
ENGINE_ARGS: dict[str, Any] = {
    "dtype": "float32",
    "enforce_eager": True,
    "max_model_len": 1024,
    "max_num_seqs": 2,
    "seed": 0,
    "distributed_executor_backend": "uni",
    "limit_mm_per_prompt": {"image": MAX_IMAGES, "video": 0},
    "mm_processor_cache_gb": 0,  # requests processed by the adapter never reach the engine core
}
WORDS = ["what", "is", "this", "picture", "look", "red", "cat", "dog", "and", "the", "sky", "compare", "left"]
IMAGE_SIZES = {
    # Qwen2-VL: multiples of 28 pixels, one <|image_pad|> per 28x28 -> 16, 8, 8, 24 tokens.
    "qwen2_vl": [(112, 112), (112, 56), (56, 112), (168, 112)],
    # Gemma3 resizes every image to 56x56: 4 soft tokens whatever the size.
    "gemma3": [(56, 56), (100, 40), (30, 90)],
}
MODELS = list(IMAGE_SIZES)


# --- the adapter: vLLM's own ranges, from the request its input processor builds (vLLM 0.32 internals) ------
#
# vLLM 0.32's ``RequestOutput`` carries no ``multi_modal_placeholders``. The ranges the engine schedules media
# embeddings into exist only on the processed request: ``LLM.llm_engine.input_processor.process_inputs(request_id,
# prompt, params, supported_tasks=...)`` returns an ``EngineCoreRequest`` whose ``prompt_token_ids`` are the prompt
# the engine prefills (placeholders expanded) and whose ``mm_features`` hold, per media item in prompt order,
# ``.modality`` and ``.mm_position`` (a ``vllm.multimodal.inputs.PlaceholderRange``: ``offset``, ``length``,
# ``is_embed``). It runs in the calling process (the engine's input processing happens before the engine core).
#
# :data:`PINNED_INTERNALS` names exactly what this adapter reads; when a vLLM upgrade moves any of it,
# :func:`processed_prompt` fails the tier with that sentence and what is missing, instead of comparing against
# nothing. The engine must be built with ``mm_processor_cache_gb=0``: a request processed here never reaches the
# engine core, and with the processor cache on, the cache would believe the core already holds its media.

PINNED_INTERNALS = (
    "LLM.llm_engine.input_processor.process_inputs(request_id, prompt, params, supported_tasks=...) returning an "
    "EngineCoreRequest with .prompt_token_ids and .mm_features[i].modality / .mm_position (offset, length, "
    "is_embed) (vLLM 0.32)"
)
_REQUEST_IDS = itertools.count()


@dataclass(frozen=True)
class Range:
    """One placeholder range as plain values: ``is_embed`` as a tuple of bools, or ``None``."""

    offset: int
    length: int
    is_embed: tuple[bool, ...] | None

    def as_dict(self) -> dict[str, Any]:
        """The JSON form recordings use."""
        return {
            "offset": self.offset,
            "length": self.length,
            "is_embed": None if self.is_embed is None else list(self.is_embed),
        }


@dataclass(frozen=True)
class ProcessedPrompt:
    """What vLLM's input processor made of a prompt: the ids it prefills and its ranges per modality."""

    prompt_token_ids: list[int]
    mm_placeholders: dict[str, list[Range]]
    raw_ranges: dict[str, list[Any]]
    """The same ranges as vLLM's own ``PlaceholderRange`` objects (``is_embed`` tensors), in item order."""


def _moved(what: str) -> NoReturn:
    pytest.fail(
        f"vllm tier: the VLM placeholder adapter (tests/vllm/test_vlm.py, processed_prompt) needs {PINNED_INTERNALS}; "
        f"vLLM {vllm.__version__} has no {what}. Update the adapter to where this release keeps the processed "
        "request's placeholder ranges."
    )


def _attribute(owner: Any, name: str, where: str) -> Any:
    value = getattr(owner, name, _MISSING)
    if value is _MISSING:
        _moved(f"{where}.{name}")
    return value


_MISSING = object()


def _range(position: Any) -> Range:
    offset = _attribute(position, "offset", "mm_features[i].mm_position")
    length = _attribute(position, "length", "mm_features[i].mm_position")
    mask = _attribute(position, "is_embed", "mm_features[i].mm_position")
    return Range(int(offset), int(length), None if mask is None else tuple(bool(v) for v in mask.tolist()))


def processed_prompt(llm: Any, prompt: dict[str, Any]) -> ProcessedPrompt:
    """Run ``prompt`` (a vLLM prompt dict, e.g. ``{"prompt_token_ids": ..., "multi_modal_data": ...}``) through the
    engine's input processor and return the ids and ranges of the request it builds; nothing is generated."""
    engine = _attribute(llm, "llm_engine", "LLM")
    processor = _attribute(engine, "input_processor", "LLM.llm_engine")
    process = _attribute(processor, "process_inputs", "LLM.llm_engine.input_processor")
    try:
        request = process(
            f"rl-contracts-vlm-{next(_REQUEST_IDS)}",
            prompt,
            SamplingParams(max_tokens=1),
            supported_tasks=("generate",),
        )
    except TypeError as exc:  # the signature moved
        _moved(f"process_inputs(request_id, prompt, params, supported_tasks=...) of that signature ({exc})")
    ids = _attribute(request, "prompt_token_ids", "EngineCoreRequest")
    features = _attribute(request, "mm_features", "EngineCoreRequest") or []
    ranges: dict[str, list[Range]] = {}
    raw: dict[str, list[Any]] = {}
    for feature in features:  # in prompt order, which is item order within a modality
        modality = _attribute(feature, "modality", "EngineCoreRequest.mm_features[i]")
        position = _attribute(feature, "mm_position", "EngineCoreRequest.mm_features[i]")
        ranges.setdefault(modality, []).append(_range(position))
        raw.setdefault(modality, []).append(position)
    return ProcessedPrompt(list(ids), ranges, raw)


@dataclass(frozen=True)
class Vlm:
    """One engine with the facts the tests need about its model."""

    name: str
    llm: Any
    tokenizer: Any
    placeholder_token_id: int
    """The token that receives an image's embeddings: ``<|image_pad|>`` or ``<image_soft_token>``."""
    terminator_id: int


def _models_dir() -> Path:
    root = os.environ.get(VLM_MODELS_ENV)
    if not root:
        pytest.fail(f"{VLM_MODELS_ENV} is not set; run the tier with `bash .ci/vllm_tier`")
    return Path(root)


def _check_torchvision_shim() -> None:
    """Fail loudly (never skip) when the environment lacks the torchvision CPU shim the tier installs."""
    try:
        import torchvision.extension as extension  # type: ignore[import-not-found, unused-ignore]
    except Exception as exc:  # an import failure of any kind means the shim is not in place
        pytest.fail(
            f"vllm tier: torchvision does not import ({type(exc).__name__}: {exc}); rerun .ci/vllm_tier"
        )
    if not (extension._has_ops() or hasattr(extension, "_rl_contracts_cpu_shim")):
        pytest.fail(
            f"vllm tier: the torchvision CPU shim is missing from {extension.__file__}; rerun .ci/vllm_tier"
        )


_ENGINES: dict[str, Vlm] = {}
RECORDED: dict[str, list[dict[str, Any]]] = {
    "oracle": [],
    "chained": [],
    "straddle": [],
    "double_expansion": [],
}
RECORD_LIMIT = 20
"""Cases recorded per kind and model."""


def engine(name: str) -> Vlm:
    """The in-process engine on the tiny model ``name``, built on first use and kept until the module ends."""
    if name not in _ENGINES:
        _check_torchvision_shim()
        if "llvmlite.binding.ffi" in sys.modules:
            pytest.fail(
                "vllm tier: vLLM 0.32 cannot start an engine once numba is imported (the n-gram speculative "
                "engine imports it; 0.32's kernel rebinding then trips over llvmlite's library wrapper): "
                "tests/vllm/test_vlm.py must run before it (ENGINE_OF_ITS_OWN in tests/vllm/conftest.py)"
            )
        path = _models_dir() / name
        if not (path / "config.json").is_file():
            pytest.fail(
                f"tiny VLM {name!r} is missing at {path}; rebuild it with tests/vllm/build_vlm_models.py"
            )
        llm = LLM(model=str(path), **ENGINE_ARGS)
        tokenizer = llm.get_tokenizer()
        token = "<|image_pad|>" if name == "qwen2_vl" else "<image_soft_token>"
        _ENGINES[name] = Vlm(
            name, llm, tokenizer, tokenizer.convert_tokens_to_ids(token), tokenizer.eos_token_id
        )
    return _ENGINES[name]


@pytest.fixture(scope="module", autouse=True)
def _engines_of_this_module() -> Iterator[None]:
    """At the end of the module: write what the tests saw into ``$RL_CONTRACTS_VLLM_RECORD/vlm_placeholder_ranges
    .json`` when it is set, then free the engines (a later MoE engine must initialise the process's distributed
    state afresh, with its expert-parallel group)."""
    yield
    directory = os.environ.get(RECORD_ENV)
    if directory and any(RECORDED.values()):
        _write_record(Path(directory))
    _ENGINES.clear()
    gc.collect()


@pytest.fixture(params=MODELS)
def vlm(request: pytest.FixtureRequest) -> Vlm:
    """The engine on each tiny VLM in turn."""
    return engine(request.param)


# --- conversations --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    """A user turn: its content items in order, ``None`` standing for an image, words otherwise."""

    items: tuple[str | None, ...]

    @property
    def images(self) -> int:
        return sum(item is None for item in self.items)

    def message(self) -> dict[str, Any]:
        content = [
            {"type": "image"} if item is None else {"type": "text", "text": f" {item} "}
            for item in self.items
        ]
        return {"role": "user", "content": content}


words = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join)
turn_items = st.lists(st.one_of(st.none(), words), min_size=1, max_size=4)


def _capped(turns: list[list[str | None]]) -> list[Turn]:
    """The first ``MAX_IMAGES`` images kept (later ones become words); an image-free conversation gets one image
    at the start of its new turn."""
    left, capped = MAX_IMAGES, []
    for items in turns:
        kept: list[str | None] = []
        for item in items:
            if item is None and left:
                left -= 1
                kept.append(None)
            else:
                kept.append(item if item is not None else "look")
        capped.append(kept)
    if left == MAX_IMAGES:
        capped[-1].insert(0, None)
    return [Turn(tuple(items)) for items in capped]


@st.composite
def conversations(draw: st.DrawFn) -> tuple[list[Turn], list[str], list[int]]:
    """Earlier user turns (each answered; the last answer is the model's generated prefix), the new user turn, the
    answers rendered from text, and one size choice per image. Adjacent images (no words between) are common."""
    turns = _capped(draw(st.lists(turn_items, min_size=2, max_size=3)))
    answers = [draw(words) for _ in turns[:-2]]
    images = sum(turn.images for turn in turns)
    return turns, answers, draw(st.lists(st.integers(0, 3), min_size=images, max_size=images))


def _images(vlm: Vlm, size_choices: list[int]) -> list[Any]:
    sizes = IMAGE_SIZES[vlm.name]
    return [
        Image.new("RGB", sizes[choice % len(sizes)], (40 * index % 256, 90, 160))
        for index, choice in enumerate(size_choices)
    ]


def _raw_ids(vlm: Vlm, messages: list[dict[str, Any]], *, generation_prompt: bool) -> list[int]:
    """The chat template's ids with one placeholder token per image, as the learner tokenizes them."""
    text = vlm.tokenizer.apply_chat_template(
        messages, add_generation_prompt=generation_prompt, tokenize=False
    )
    ids: list[int] = vlm.tokenizer(text, add_special_tokens=False).input_ids
    return ids


def _process(vlm: Vlm, ids: list[int], images: list[Any]) -> ProcessedPrompt:
    prompt: dict[str, Any] = {"prompt_token_ids": ids}
    if images:
        prompt["multi_modal_data"] = {"image": images}
    return processed_prompt(vlm.llm, prompt)


def _plain(ranges: dict[str, list[Any]]) -> dict[str, list[Range]]:
    """Ranges of any container (vLLM's ``PlaceholderRange``, as remapped) as plain values."""
    return {
        modality: [
            Range(
                r.offset,
                r.length,
                None if r.is_embed is None else tuple(bool(v) for v in r.is_embed.tolist()),
            )
            for r in items
        ]
        for modality, items in ranges.items()
    }


def _check_spans(vlm: Vlm, ids: list[int], ranges: dict[str, list[Range]]) -> None:
    """Every range covers placeholder tokens: all of it (no mask) or exactly its ``is_embed`` positions."""
    for r in ranges["image"]:
        span = ids[r.offset : r.offset + r.length]
        embeds = r.is_embed if r.is_embed is not None else (True,) * r.length
        assert [token == vlm.placeholder_token_id for token in span] == list(embeds)


def _json_ranges(ranges: dict[str, list[Range]]) -> dict[str, list[dict[str, Any]]]:
    return {modality: [r.as_dict() for r in items] for modality, items in ranges.items()}


def _record(kind: str, vlm: Vlm, images: list[Any], **case: Any) -> None:
    if sum(seen["model"] == vlm.name for seen in RECORDED[kind]) < RECORD_LIMIT:
        RECORDED[kind].append(
            {"model": vlm.name, "image_sizes": [list(image.size) for image in images], **case}
        )


def _write_record(directory: Path) -> None:
    models = {
        name: {
            "placeholder_token_id": vlm.placeholder_token_id,
            "terminator_id": vlm.terminator_id,
            "newline_ids": [
                vlm.tokenizer.convert_tokens_to_ids(n) for n in ("\n", "\n\n", "\n\n\n", "\n\n\n\n")
            ],
        }
        for name, vlm in _ENGINES.items()
    }
    data = {
        "meta": {
            "vllm_version": vllm.__version__,
            "models": "tiny random-weight Qwen2-VL and Gemma3 (tests/vllm/build_vlm_models.py), word-level tokenizers",
            "procedure": "ranges read from vLLM's processed request ("
            + PINNED_INTERNALS
            + "); oracle: template "
            "ranges remapped onto the splice of the expanded ids equal vLLM's ranges for the splice of the raw ids",
        },
        "models": models,
        **RECORDED,
    }
    (directory / "vlm_placeholder_ranges.json").write_text(json.dumps(data, indent=1) + "\n")


# --- the oracle property ----------------------------------------------------------------------------------------

# Back-to-back images in history and in the new turn (chained on Gemma3).
BACK_TO_BACK: tuple[list[Turn], list[str], list[int]] = (
    [Turn((None, None, "compare")), Turn(("and", None, None))],
    [],
    [0, 1, 2, 0],
)
HISTORY_ONLY: tuple[list[Turn], list[str], list[int]] = (
    [Turn(("look", None)), Turn(("what", None, "is")), Turn(("and", "the", "sky"))],
    ["red cat"],
    [3, 1],
)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(conversation=BACK_TO_BACK, generated=["the", "cat"], stopped=True)
@example(conversation=BACK_TO_BACK, generated=["red"], stopped=False)
@example(conversation=HISTORY_ONLY, generated=["dog", "and", "sky"], stopped=True)
@given(
    conversation=conversations(),
    generated=st.lists(st.sampled_from(WORDS), min_size=1, max_size=5),
    stopped=st.booleans(),
)
def test_remapped_ranges_equal_vllms_own(
    vlm: Vlm, conversation: tuple[list[Turn], list[str], list[int]], generated: list[str], stopped: bool
) -> None:
    """The learner's spliced prompt is what vLLM prefills, and the template ranges remapped onto it are vLLM's own
    ranges for it (offset, length, is_embed), each covering placeholder tokens exactly where it embeds."""
    turns, answers, size_choices = conversation
    images = _images(vlm, size_choices)
    history: list[dict[str, Any]] = []
    for turn, answer in zip(turns[:-2], answers, strict=True):
        history += [turn.message(), {"role": "assistant", "content": answer}]
    asked = [*history, turns[-2].message()]
    earlier_images = images[: sum(turn.images for turn in turns[:-1])]

    # The earlier turn as the engine prefilled it, then the model's generated ids (words, maybe its terminator).
    prompt_raw = _raw_ids(vlm, asked, generation_prompt=True)
    prefilled = _process(vlm, prompt_raw, earlier_images).prompt_token_ids
    generated_ids = [vlm.tokenizer.convert_tokens_to_ids(word) for word in generated]
    generated_ids += [vlm.terminator_id] if stopped else []
    answered = [*asked, {"role": "assistant", "content": " ".join(generated)}]

    # The template of the whole conversation, expanded by vLLM with every image: its ids and its ranges.
    template_prefix_raw = _raw_ids(vlm, answered, generation_prompt=False)
    template_raw = _raw_ids(vlm, [*answered, turns[-1].message()], generation_prompt=True)
    template = _process(vlm, template_raw, images)
    template_prefix = _process(vlm, template_prefix_raw, earlier_images).prompt_token_ids

    # The learner: splice the expanded ids, move vLLM's template ranges into the final prompt.
    model_prefix = prefilled + generated_ids
    splice = splice_prefix_tokens(
        tokenizer=vlm.tokenizer,
        model_prefix_token_ids=model_prefix,
        template_prefix_token_ids=template_prefix,
        template_token_ids=template.prompt_token_ids,
    )
    remapped = remap_multimodal_placeholders(
        template_token_ids=template.prompt_token_ids,
        final_token_ids=splice.token_ids,
        mm_placeholders=template.raw_ranges,
        splice=splice,
    )

    # The oracle: the same splice of the unexpanded ids, with the same images, through vLLM's input processor.
    splice_raw = splice_prefix_tokens(
        tokenizer=vlm.tokenizer,
        model_prefix_token_ids=prompt_raw + generated_ids,
        template_prefix_token_ids=template_prefix_raw,
        template_token_ids=template_raw,
    )
    oracle = _process(vlm, splice_raw.token_ids, images)
    validate_rollout_prompt(splice.token_ids, oracle.prompt_token_ids)
    assert _plain(remapped) == oracle.mm_placeholders
    _check_spans(vlm, splice.token_ids, oracle.mm_placeholders)
    _check_spans(vlm, template.prompt_token_ids, template.mm_placeholders)
    _record(
        "oracle",
        vlm,
        images,
        model_prefix=model_prefix,
        template_prefix=template_prefix,
        template=template.prompt_token_ids,
        template_ranges=_json_ranges(template.mm_placeholders),
        final=oracle.prompt_token_ids,
        final_ranges=_json_ranges(oracle.mm_placeholders),
    )


def _unions(ranges: list[Range]) -> list[tuple[int, int]]:
    """``[start, end)`` of each group of intersecting ranges (a Gemma3 chain is one)."""
    spans: list[list[int]] = []
    for r in sorted(ranges, key=lambda r: r.offset):
        if spans and r.offset < spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], r.offset + r.length)
        else:
            spans.append([r.offset, r.offset + r.length])
    return [(start, end) for start, end in spans]


def test_gemma3_adjacent_images_are_chained() -> None:
    """vLLM reports Gemma3's back-to-back images as two ranges sharing one merged newline token that embeds nothing;
    the remap accepts the chain and moves it as a unit (three words spliced in front shift both by exactly 3)."""
    vlm = engine("gemma3")
    images = _images(vlm, [0, 1])
    raw = _raw_ids(vlm, [Turn((None, None, "look")).message()], generation_prompt=True)
    template = _process(vlm, raw, images)
    first, second = template.mm_placeholders["image"]
    assert (first.length, second.length) == (8, 8)
    assert second.offset == first.offset + first.length - 1
    assert first.is_embed == second.is_embed == (False, False, True, True, True, True, False, False)
    assert template.prompt_token_ids[second.offset] == vlm.tokenizer.convert_tokens_to_ids("\n\n\n\n")

    three_words = [vlm.tokenizer.convert_tokens_to_ids(word) for word in ("the", "red", "cat")]
    oracle = _process(vlm, raw[:1] + three_words + raw[1:], images)
    remapped = remap_multimodal_placeholders(
        template_token_ids=template.prompt_token_ids,
        final_token_ids=oracle.prompt_token_ids,
        mm_placeholders=template.raw_ranges,
    )
    assert _plain(remapped) == oracle.mm_placeholders
    assert [r.offset for r in oracle.mm_placeholders["image"]] == [first.offset + 3, second.offset + 3]
    _record(
        "chained",
        vlm,
        images,
        template=template.prompt_token_ids,
        template_ranges=_json_ranges(template.mm_placeholders),
        final=oracle.prompt_token_ids,
        final_ranges=_json_ranges(oracle.mm_placeholders),
    )


# --- the failure side -------------------------------------------------------------------------------------------


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(items=[None, None, "look"], size_choices=[0, 1], pick=0)
@given(
    items=turn_items,
    size_choices=st.lists(st.integers(0, 3), min_size=MAX_IMAGES, max_size=MAX_IMAGES),
    pick=st.integers(0, 10**6),
)
def test_a_splice_through_an_image_span_fails_closed(
    vlm: Vlm, items: list[str | None], size_choices: list[int], pick: int
) -> None:
    """A splice whose template cut falls strictly inside a real image span (a Gemma3 chain's union included)
    raises PlaceholderRemapError naming a range of that span; no ranges come back."""
    [turn] = _capped([list(items)])
    images = _images(vlm, size_choices[: turn.images])
    template = _process(vlm, _raw_ids(vlm, [turn.message()], generation_prompt=True), images)
    ranges = template.mm_placeholders["image"]
    start, end = _unions(ranges)[pick % len(_unions(ranges))]
    cut = start + 1 + pick % (end - start - 1)
    ids = template.prompt_token_ids
    with pytest.raises(PlaceholderRemapError, match="straddles the splice boundary") as info:
        remap_multimodal_placeholders(
            template_token_ids=ids,
            final_token_ids=ids,
            mm_placeholders=template.raw_ranges,
            splice=PrefixSplice(token_ids=ids, model_cut_end=cut, template_cut_start=cut),
        )
    assert info.value.modality == "image"
    assert info.value.item_index is not None
    named = ranges[info.value.item_index]
    assert (info.value.offset, info.value.length) == (named.offset, named.length)
    assert start <= named.offset < cut
    _record(
        "straddle",
        vlm,
        images,
        template=ids,
        template_ranges=_json_ranges(template.mm_placeholders),
        cut=cut,
        error_item_index=info.value.item_index,
    )


def test_learner_expanded_ids_sent_with_raw_images_are_caught(vlm: Vlm) -> None:
    """NeMo RL #4182: ids the learner already expanded, sent with the raw images, are expanded a second time by the
    real engine; the prompt contract refuses the rollout (validate_rollout_prompt and rollout_batch)."""
    images = _images(vlm, [0, 1])
    raw = _raw_ids(vlm, [Turn((None, "what", "is", None)).message()], generation_prompt=True)
    expanded = _process(vlm, raw, images).prompt_token_ids
    params = SamplingParams(max_tokens=2, logprobs=0, seed=0)
    [twice] = vlm.llm.generate(
        [{"prompt_token_ids": expanded, "multi_modal_data": {"image": images}}], params, use_tqdm=False
    )
    [once] = vlm.llm.generate(
        [{"prompt_token_ids": raw, "multi_modal_data": {"image": images}}], params, use_tqdm=False
    )
    prefilled_twice = list(twice.prompt_token_ids)
    assert len(prefilled_twice) > len(expanded)
    with pytest.raises(RolloutPromptMismatchError, match="Refusing to train on a different prompt"):
        validate_rollout_prompt(expanded, prefilled_twice)
    with pytest.raises(RolloutPromptError) as info:
        rollout_batch([expanded], [twice])
    assert (info.value.row, info.value.check) == (0, "prompt")
    validate_rollout_prompt(expanded, once.prompt_token_ids)
    assert len(rollout_batch([expanded], [once])) == 1
    _record("double_expansion", vlm, images, raw=raw, expanded=expanded, prefilled_twice=prefilled_twice)


# --- the generation hand-off on real multimodal requests --------------------------------------------------------


def test_format_prompt_and_rollout_batch_on_a_real_multimodal_batch(vlm: Vlm) -> None:
    """A right-padded batch with images per row (one row text-only) becomes vLLM prompts that forward the images
    by identity; vLLM prefills exactly the ids its input processor expands (placeholders out), and rollout_batch
    accepts those as the learner's prompts and refuses the unexpanded ids."""
    images = _images(vlm, [0, 1, 2])
    rows = [
        _raw_ids(vlm, [Turn((None, "what", "is", "this")).message()], generation_prompt=True),
        _raw_ids(vlm, [Turn(("compare", None, None)).message()], generation_prompt=True),
        _raw_ids(vlm, [Turn(("the", "sky")).message()], generation_prompt=True),
    ]
    media = [{"image": images[0]}, {"image": images[1:]}, None]
    width = max(map(len, rows)) + 2
    data = {
        "input_ids": torch.tensor([row + [0] * (width - len(row)) for row in rows]),
        "input_lengths": torch.tensor([len(row) for row in rows]),
        "vllm_multi_modal_data": media,
    }
    prompts = format_prompt_for_vllm_generation(data)
    assert prompts[0]["multi_modal_data"]["image"] is images[0]
    assert "multi_modal_data" not in prompts[2]
    expected = [processed_prompt(vlm.llm, dict(prompt)) for prompt in prompts]
    outputs = vlm.llm.generate(prompts, SamplingParams(max_tokens=3, logprobs=0, seed=3), use_tqdm=False)

    for output, processed, row in zip(outputs, expected, rows, strict=True):
        assert list(output.prompt_token_ids) == processed.prompt_token_ids
        if processed.mm_placeholders:
            assert len(processed.prompt_token_ids) > len(row)
            _check_spans(vlm, processed.prompt_token_ids, processed.mm_placeholders)
    assert [len(p.mm_placeholders.get("image", [])) for p in expected] == [1, 2, 0]
    batch = rollout_batch([p.prompt_token_ids for p in expected], outputs)
    for index, (output, processed) in enumerate(zip(outputs, expected, strict=True)):
        length = len(processed.prompt_token_ids)
        generated = list(output.outputs[0].token_ids)
        assert (
            batch.token_ids[index, : length + len(generated)].tolist()
            == processed.prompt_token_ids + generated
        )
    with pytest.raises(RolloutPromptError) as info:
        rollout_batch(rows, outputs)
    assert info.value.row == 0

    # The text-content scheme renders the same prompts: vLLM tokenizes the text and expands the same way.
    texts = [vlm.tokenizer.decode(row) for row in rows]
    by_text = format_prompt_for_vllm_generation({**data, "vllm_content": texts})
    assert by_text[0] == {"prompt": texts[0], "multi_modal_data": media[0]}
    for prompt, processed in zip(by_text, expected, strict=True):
        assert processed_prompt(vlm.llm, dict(prompt)).prompt_token_ids == processed.prompt_token_ids
