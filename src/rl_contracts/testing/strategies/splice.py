"""Hypothesis strategies for the prompt splice and multimodal placeholder contracts (SPEC §2, §7 inv. 3–9).

The token vocabulary is small on purpose, so generated prompts are full of repeats:

- text tokens are :data:`TEXT_TOKENS` (never a terminator, never a media token);
- turns end with :data:`TERMINATOR`; :data:`ALT_TERMINATOR` is a second member of the terminator set that a model
  may stop on instead;
- a media item is a block ``[start, pad * length, end]`` with per-modality tokens (:data:`MEDIA_TOKENS`); its
  placeholder range covers the pad run.  A video item may carry a coincident audio range (Qwen2.5-Omni's
  audio-in-video).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np
from hypothesis import strategies as st

from rl_contracts.multimodal import PlaceholderRange

__all__ = [
    "ALT_TERMINATOR",
    "MEDIA_TOKENS",
    "TERMINATOR",
    "TEXT_TOKENS",
    "MediaPrompt",
    "RangeFactory",
    "SpliceCase",
    "TerminatorDeclaration",
    "hostile_placeholder_maps",
    "hostile_placeholder_ranges",
    "hostile_splices",
    "hostile_token_ids",
    "media_prompts",
    "model_prefixes",
    "range_factories",
    "splice_cases",
    "splice_token_inputs",
    "terminator_declarations",
]

TERMINATOR = 2
"""The turn terminator every template renders."""
ALT_TERMINATOR = 3
"""A second terminator (``terminator_ids={2, 3}``) the model may stop on."""
TEXT_TOKENS = range(10, 22)
"""Text token ids: a small alphabet, so runs and repeats are common."""
MEDIA_TOKENS: dict[str, tuple[int, int, int]] = {
    "image": (100, 101, 102),
    "audio": (110, 111, 112),
    "video": (120, 121, 122),
}
"""Per modality: (start, pad, end) token ids of a media block."""

RangeFactory = Callable[[int, int], Any]
"""Builds one placeholder range of some container type from ``(offset, length)``."""


def _dict_range(offset: int, length: int) -> dict[str, int]:
    return {"offset": offset, "length": length}


def _model_range(offset: int, length: int) -> PlaceholderRange:
    return PlaceholderRange(offset=offset, length=length)


def range_factories(*extra: RangeFactory) -> st.SearchStrategy[RangeFactory]:
    """A factory for dict ranges, :class:`PlaceholderRange` models, or any of ``extra`` (e.g. a vLLM-like dataclass)."""
    return st.sampled_from([_dict_range, _model_range, *extra])


@dataclasses.dataclass(frozen=True)
class MediaPrompt:
    """A rendered prompt with media blocks: its tokens, and per modality the ``(offset, length)`` of each range.

    ``text_chunks`` are the ``(start, stop)`` slices of ``token_ids`` holding text, which a retokenization may
    change; everything else (media blocks, terminators) is structural.
    """

    token_ids: list[int]
    spans: dict[str, list[tuple[int, int]]]
    text_chunks: list[tuple[int, int]]


@st.composite
def media_prompts(
    draw: st.DrawFn,
    *,
    min_turns: int = 1,
    max_turns: int = 3,
    max_media_length: int = 6,
    terminate: bool = True,
    start: int = 0,
) -> MediaPrompt:
    """Turns of text and media blocks, each turn ending with :data:`TERMINATOR` when ``terminate``.

    Offsets are counted from ``start`` (the length of whatever precedes this part of the prompt).
    """
    tokens: list[int] = []
    spans: dict[str, list[tuple[int, int]]] = {}
    chunks: list[tuple[int, int]] = []

    def text() -> None:
        chunk = draw(st.lists(st.sampled_from(TEXT_TOKENS), max_size=4))
        chunks.append((start + len(tokens), start + len(tokens) + len(chunk)))
        tokens.extend(chunk)

    for _ in range(draw(st.integers(min_turns, max_turns))):
        for _ in range(draw(st.integers(0, 3))):
            text()
            modality = draw(st.sampled_from(sorted(MEDIA_TOKENS)))
            first, pad, last = MEDIA_TOKENS[modality]
            length = draw(st.integers(1, max_media_length))
            offset = start + len(tokens) + 1
            spans.setdefault(modality, []).append((offset, length))
            if modality == "video" and draw(st.booleans()):
                spans.setdefault("audio", []).append((offset, length))
            tokens.extend([first, *([pad] * length), last])
        text()
        if terminate:
            tokens.append(TERMINATOR)
    return MediaPrompt(tokens, spans, chunks)


@st.composite
def model_prefixes(
    draw: st.DrawFn, history: MediaPrompt, *, terminators: Sequence[int] = (TERMINATOR,)
) -> list[int]:
    """The model's exact tokens for ``history``: text chunks retokenized (any length), media blocks unchanged.

    The prefix ends with a terminator drawn from ``terminators``, or (stopped at max_tokens) without one.
    """
    tokens = history.token_ids
    prefix: list[int] = []
    cursor = 0
    for begin, end in history.text_chunks:
        prefix.extend(tokens[cursor:begin])
        drifted = draw(st.booleans())
        prefix.extend(
            draw(st.lists(st.sampled_from(TEXT_TOKENS), max_size=5)) if drifted else tokens[begin:end]
        )
        cursor = end
    prefix.extend(tokens[cursor:])
    if prefix and prefix[-1] == TERMINATOR:
        prefix.pop()
        if draw(st.booleans()):
            prefix.append(draw(st.sampled_from(list(terminators))))
    return prefix


@dataclasses.dataclass(frozen=True)
class SpliceCase:
    """Inputs of a splice plus a placeholder map in template coordinates (ranges built by ``range_factories``)."""

    model_prefix_token_ids: list[int]
    template_prefix_token_ids: list[int]
    template_token_ids: list[int]
    terminators: tuple[int, ...]
    mm_placeholders: dict[str, list[Any]]
    spans: dict[str, list[tuple[int, int]]]


@st.composite
def splice_cases(draw: st.DrawFn, *, factories: st.SearchStrategy[RangeFactory] | None = None) -> SpliceCase:
    """A history with media, a new turn with media, and a retokenized model prefix of the history.

    Every media block survives in the model prefix with its delimiters, so the splice and remap must succeed
    (SPEC §7 inv. 3–7).  Ranges before the cut are located by content, ranges after it shift arithmetically.
    """
    factories = factories if factories is not None else range_factories()
    history = draw(media_prompts())
    suffix = draw(media_prompts(min_turns=0, max_turns=2, start=len(history.token_ids)))
    generation_prompt = draw(st.lists(st.sampled_from(TEXT_TOKENS), max_size=3))
    terminators = draw(st.sampled_from([(TERMINATOR,), (TERMINATOR, ALT_TERMINATOR)]))
    spans: dict[str, list[tuple[int, int]]] = {}
    for part in (history, suffix):
        for modality, ranges in part.spans.items():
            spans.setdefault(modality, []).extend(ranges)
    placeholders = {
        modality: [draw(factories)(offset, length) for offset, length in ranges]
        for modality, ranges in spans.items()
    }
    return SpliceCase(
        model_prefix_token_ids=draw(model_prefixes(history, terminators=terminators)),
        template_prefix_token_ids=list(history.token_ids),
        template_token_ids=history.token_ids + suffix.token_ids + generation_prompt,
        terminators=terminators,
        mm_placeholders=placeholders,
        spans=spans,
    )


@st.composite
def splice_token_inputs(draw: st.DrawFn) -> tuple[list[int], list[int], list[int]]:
    """``(model_prefix, template_prefix, template)`` of arbitrary small ids where a splice exists (SPEC §7 inv. 3).

    The template prefix holds at least one :data:`TERMINATOR`, the template at least as many.
    """
    ids = st.integers(0, 6)
    model_prefix = draw(st.lists(ids, max_size=12))
    template_prefix = [*draw(st.lists(ids, max_size=12)), TERMINATOR]
    template_prefix = draw(st.permutations(template_prefix))
    needed = template_prefix.count(TERMINATOR)
    template = draw(st.lists(ids, max_size=16)) + [TERMINATOR] * needed
    return model_prefix, list(template_prefix), list(draw(st.permutations(template)))


@dataclasses.dataclass(frozen=True)
class TerminatorDeclaration:
    """Where a model declares its turn terminators (SPEC §2.2.1), and the set they declare together.

    ``tokenizer`` is ``None`` or an object whose ``eos_token_id`` is an int or ``None`` (or absent);
    ``generation_config`` is ``None`` or a ``generation_config.json`` mapping whose ``eos_token_id`` is absent,
    ``None``, an int or a list/tuple of ints, next to unrelated keys.  ``terminators`` is the union.
    """

    tokenizer: SimpleNamespace | None
    generation_config: dict[str, Any] | None
    terminators: frozenset[int]


@st.composite
def terminator_declarations(draw: st.DrawFn) -> TerminatorDeclaration:
    """A tokenizer EOS and a generation config that may repeat it, add Gemma-4-style turn ends, or declare nothing.

    Ids come from ``{1, 2, 3, 50, 106}`` as plain or numpy ints, so overlaps between the two sources are common.
    """
    ids = st.sampled_from([1, 2, 3, 50, 106])
    int_like = st.one_of(ids, ids.map(np.int64))
    eos = draw(st.one_of(st.none(), int_like))
    tokenizer = draw(
        st.sampled_from([None, SimpleNamespace()] if eos is None else [SimpleNamespace(eos_token_id=eos)])
    )
    declared = draw(
        st.one_of(st.none(), int_like, st.lists(int_like, max_size=4), st.lists(int_like).map(tuple))
    )
    config = draw(
        st.sampled_from([None, {"top_p": 0.95}, {"eos_token_id": None}])
        if declared is None
        else st.just({"eos_token_id": declared, "top_p": 0.95})
    )
    from_tokenizer = [] if eos is None else [eos]
    from_config = (
        [] if declared is None else list(declared) if isinstance(declared, list | tuple) else [declared]
    )
    return TerminatorDeclaration(
        tokenizer, config, frozenset(int(i) for i in [*from_tokenizer, *from_config])
    )


@dataclasses.dataclass(frozen=True)
class _LooseRange:
    """A frozen dataclass with unchecked fields, standing in for a badly built vLLM ``PlaceholderRange``."""

    offset: Any
    length: Any
    is_embed: Any = None


def _garbage_values() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.integers(-3, 40),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.booleans(),
        st.none(),
        st.floats(allow_nan=True),
        st.text(max_size=3),
        st.sampled_from([np.int64(3), np.bool_(True), np.float64(2.0), 10**5000]),
    )


def hostile_placeholder_ranges() -> st.SearchStrategy[Any]:
    """Anything a caller might pass as one range: valid-looking, garbage fields, missing keys, wrong containers."""
    values = _garbage_values()
    return st.one_of(
        st.fixed_dictionaries({}, optional={"offset": values, "length": values, "is_embed": values}),
        st.builds(_dict_range, values, values),
        st.builds(_LooseRange, values, values),
        st.builds(PlaceholderRange.model_construct, offset=values, length=values),
        st.builds(SimpleNamespace, offset=values, length=values),
        st.just(_LooseRange),
        st.tuples(values, values),
        values,
    )


def hostile_placeholder_maps() -> st.SearchStrategy[Any]:
    """Placeholder maps with hostile keys, values and ranges, and non-mapping containers."""
    ranges = hostile_placeholder_ranges()
    containers = st.one_of(st.lists(ranges, max_size=4), st.lists(ranges, max_size=4).map(tuple), ranges)
    return st.one_of(
        st.dictionaries(st.sampled_from(["image", "audio", "video"]), containers, max_size=3),
        st.dictionaries(st.one_of(st.text(max_size=2), st.integers(), st.none()), containers, max_size=3),
        st.lists(ranges, max_size=2),
        _garbage_values(),
    )


def hostile_token_ids() -> st.SearchStrategy[Any]:
    """Token id arguments: valid small lists, lists holding garbage, int, float and bool arrays, ``np.matrix``
    rows, 0-d arrays, and non-sequences."""
    return st.one_of(
        st.lists(st.integers(0, 130), max_size=24),
        st.lists(_garbage_values(), max_size=6),
        st.lists(st.integers(0, 130), max_size=12).map(tuple),
        st.lists(st.integers(-(2**70), 2**70), max_size=6),
        st.lists(st.integers(0, 130), max_size=12).map(lambda ids: np.array(ids, dtype=np.int64)),
        st.lists(st.floats(), max_size=3).map(np.array),
        st.lists(st.booleans(), max_size=4).map(lambda flags: np.array(flags, dtype=np.bool_)),
        st.lists(st.integers(0, 130), min_size=1, max_size=6).map(
            lambda ids: np.array([ids]).view(np.matrix)
        ),
        st.sampled_from([np.array(3), np.array(3.0), np.array(True)]),
        _garbage_values(),
    )


def hostile_splices() -> st.SearchStrategy[Any]:
    """Splice arguments: ``None``, garbage, objects with garbage attributes, and mappings."""
    values = _garbage_values()
    return st.one_of(
        st.none(),
        values,
        st.builds(
            SimpleNamespace,
            token_ids=hostile_token_ids(),
            model_cut_end=values,
            template_cut_start=values,
        ),
        st.fixed_dictionaries(
            {"token_ids": hostile_token_ids(), "model_cut_end": values, "template_cut_start": values}
        ),
    )
