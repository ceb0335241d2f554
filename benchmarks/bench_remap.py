"""Speed of ``remap_multimodal_placeholders`` against the cost of merely converting the token lists to arrays.

Run: ``.venv/bin/python benchmarks/bench_remap.py``.  Prints, in one run (median of several repetitions):

(a) the remap of a 128k-token prompt with 64 media spans of 1,024 tokens, spliced in the middle, so half the
    spans are located by content in the exact model prefix and half are shifted arithmetically;
(b) the time of ``np.asarray`` on the two token lists (template and final), and the ratio (a)/(b)
    (goal: within 3x);
(c) an adversarial prompt made of long runs of one repeated token (the placeholder token itself fills the text
    between media items, so every scan crosses long near-matches) at 16k and 128k tokens, and the growth ratio
    (goal: 8x the input within 10x the time);
(d) the same growth for many one-token media items (about one every four tokens), the per-item overhead case.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from rl_contracts.multimodal import remap_multimodal_placeholders
from rl_contracts.splice import PrefixSplice, splice_prefix_tokens

EOS, VISION_START, VISION_END, PAD = 2, 151652, 151653, 151655
REPEATS = 15

Case = tuple[list[int], PrefixSplice, dict[str, list[dict[str, int]]]]


def _median_ms(action: Callable[[], Any], repeats: int = REPEATS) -> float:
    """Median wall time of ``action`` in milliseconds over ``repeats`` runs, after one warm-up run."""
    action()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def _text(rng: random.Random, count: int) -> list[int]:
    return [rng.randrange(1000, 100_000) for _ in range(count)]


def _drift(rng: random.Random, tokens: list[int]) -> list[int]:
    """Retokenize a text chunk: replace a few tokens by a different number of other tokens."""
    if len(tokens) < 8:
        return tokens
    at = rng.randrange(len(tokens) - 4)
    return tokens[:at] + _text(rng, rng.randrange(1, 7)) + tokens[at + 4 :]


def realistic_case(total: int = 131_072, spans: int = 64, span_length: int = 1024, seed: int = 0) -> Case:
    """A chat prompt with ``spans`` image spans; the model prefix covers the first half, with text drift."""
    rng = random.Random(seed)
    text_length = (total - spans * (span_length + 2) - 1) // (spans + 1)
    template: list[int] = []
    model_prefix: list[int] = []
    ranges: list[dict[str, int]] = []
    cut_after = spans // 2
    for k in range(spans):
        chunk = _text(rng, text_length)
        media = [VISION_START, *([PAD] * span_length), VISION_END]
        ranges.append({"offset": len(template) + len(chunk) + 1, "length": span_length})
        template += chunk + media
        if k < cut_after:
            model_prefix += _drift(rng, chunk) + media
        if k == cut_after - 1:
            template.append(EOS)
            model_prefix.append(EOS)
            template_prefix = list(template)
    template += _text(rng, total - len(template))
    splice = splice_prefix_tokens(
        model_prefix_token_ids=model_prefix,
        template_prefix_token_ids=template_prefix,
        template_token_ids=template,
        eos_token_id=EOS,
    )
    return template, splice, {"image": ranges}


def adversarial_case(total: int, span_length: int = 256, filler: int = 768, seed: int = 1) -> Case:
    """Long runs of the placeholder token everywhere: between items the text is the same token repeated."""
    rng = random.Random(seed)
    template: list[int] = []
    model_prefix: list[int] = []
    ranges: list[dict[str, int]] = []
    while len(template) + filler + span_length + 3 < total:
        ranges.append({"offset": len(template) + filler + 1, "length": span_length})
        media = [VISION_START, *([PAD] * span_length), VISION_END]
        template += [PAD] * filler + media
        model_prefix += [PAD] * (filler + rng.randrange(-16, 17)) + media
    template.append(EOS)
    model_prefix.append(EOS)
    template_prefix = list(template)
    template += [PAD] * (total - len(template))
    splice = splice_prefix_tokens(
        model_prefix_token_ids=model_prefix,
        template_prefix_token_ids=template_prefix,
        template_token_ids=template,
        eos_token_id=EOS,
    )
    return template, splice, {"image": ranges}


def many_items_case(total: int, seed: int = 2) -> Case:
    """One-token media items every few tokens, separated by runs of one filler token of drifting length."""
    rng = random.Random(seed)
    template: list[int] = []
    model_prefix: list[int] = []
    ranges: list[dict[str, int]] = []
    while len(template) + 8 < total:
        ranges.append({"offset": len(template) + 1, "length": 1})
        template += [VISION_START, PAD, VISION_END, *([PAD - 1] * rng.randrange(3))]
        model_prefix += [VISION_START, PAD, VISION_END, *([PAD - 1] * rng.randrange(3))]
    template.append(EOS)
    model_prefix.append(EOS)
    template_prefix = list(template)
    template += [PAD - 1] * (total - len(template))
    splice = splice_prefix_tokens(
        model_prefix_token_ids=model_prefix,
        template_prefix_token_ids=template_prefix,
        template_token_ids=template,
        eos_token_id=EOS,
    )
    return template, splice, {"image": ranges}


def _remap(case: Case) -> Callable[[], Any]:
    template, splice, placeholders = case
    return lambda: remap_multimodal_placeholders(
        template_token_ids=template,
        final_token_ids=splice.token_ids,
        mm_placeholders=placeholders,
        splice=splice,
    )


def main() -> None:
    """Print the three measurements and the two ratios."""
    template, splice, placeholders = case = realistic_case()
    located = sum(r["offset"] < splice.template_cut_start for r in placeholders["image"])
    remap_ms = _median_ms(_remap(case))
    convert_ms = _median_ms(lambda: (np.asarray(template), np.asarray(splice.token_ids)))
    print(
        f"(a) remap, {len(template):,}-token template -> {len(splice.token_ids):,}-token final, "
        f"{len(placeholders['image'])} spans x 1,024 ({located} located by content, "
        f"{len(placeholders['image']) - located} arithmetic): {remap_ms:.2f} ms"
    )
    print(
        f"(b) np.asarray of both token lists: {convert_ms:.2f} ms; ratio remap/conversion = {remap_ms / convert_ms:.2f}x"
    )
    small, large = adversarial_case(16_384), adversarial_case(131_072)
    small_ms, large_ms = _median_ms(_remap(small)), _median_ms(_remap(large))
    print(
        f"(c) adversarial runs of one token: 16k -> {small_ms:.2f} ms ({len(small[2]['image'])} spans), "
        f"128k -> {large_ms:.2f} ms ({len(large[2]['image'])} spans); growth for 8x input = "
        f"{large_ms / small_ms:.2f}x"
    )
    small, large = many_items_case(16_384), many_items_case(131_072)
    small_ms, large_ms = _median_ms(_remap(small), 5), _median_ms(_remap(large), 5)
    print(
        f"(d) many one-token items: 16k -> {small_ms:.2f} ms ({len(small[2]['image']):,} spans), "
        f"128k -> {large_ms:.2f} ms ({len(large[2]['image']):,} spans); growth for 8x input = "
        f"{large_ms / small_ms:.2f}x"
    )


if __name__ == "__main__":
    main()
