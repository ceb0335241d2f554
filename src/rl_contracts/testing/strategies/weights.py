"""Hypothesis strategies for the weight-version spans of a rollout (SPEC §4.3).

A valid span list tiles the output tokens ``[0, n)`` with contiguous, non-empty spans whose labels change from one
span to the next, as vLLM 0.32 reports them.  Each malformation is one edit of a valid list, and the case records
which span is the first bad one, so a test can check that the error names exactly that span.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from typing import Any, Literal

from hypothesis import strategies as st

from rl_contracts.weights import WeightVersionSpan

__all__ = [
    "MALFORMATIONS",
    "WEIGHT_LABELS",
    "Malformation",
    "MalformedSpans",
    "SpanList",
    "malformed_span_lists",
    "span_forms",
    "weight_version_span_lists",
]

WEIGHT_LABELS = ("1", "2", "7", "8", "policy-3")
"""The labels spans are drawn from: few, so a label often comes back after another one."""

Malformation = Literal[
    "no_spans", "late_start", "gap", "overlap", "short", "long", "repeated_label", "empty_span", "empty_label"
]
MALFORMATIONS: tuple[Malformation, ...] = (
    "no_spans",
    "late_start",
    "gap",
    "overlap",
    "short",
    "long",
    "repeated_label",
    "empty_span",
    "empty_label",
)
"""Every way :func:`malformed_span_lists` breaks a valid list."""


@dataclasses.dataclass(frozen=True)
class SpanList:
    """A valid span list for an output of ``token_count`` tokens (empty exactly when ``token_count == 0``)."""

    token_count: int
    spans: tuple[WeightVersionSpan, ...]


@dataclasses.dataclass(frozen=True)
class MalformedSpans:
    """A broken span list as ``(version, start, end)`` tuples, what was broken, and the first bad span.

    ``bad_index`` is ``None`` when the fault is the whole list (no spans for a non-empty output).
    """

    token_count: int
    spans: tuple[tuple[str, int, int], ...]
    malformation: Malformation
    bad_index: int | None


@st.composite
def weight_version_span_lists(draw: st.DrawFn, *, max_tokens: int = 40, max_spans: int = 6) -> SpanList:
    """Valid span lists: ``n`` in ``[0, max_tokens]`` tokens cut at up to ``max_spans - 1`` distinct points, each
    span labelled from :data:`WEIGHT_LABELS` with a label other than its predecessor's."""
    token_count = draw(st.integers(0, max_tokens))
    if token_count == 0:
        return SpanList(0, ())
    inner = (
        st.sets(st.integers(1, token_count - 1), max_size=max_spans - 1)
        if token_count > 1
        else st.just(set())
    )
    cuts = [0, *sorted(draw(inner)), token_count]
    spans: list[WeightVersionSpan] = []
    for start, end in itertools.pairwise(cuts):
        previous = spans[-1].version if spans else None
        version = draw(st.sampled_from([label for label in WEIGHT_LABELS if label != previous]))
        spans.append(WeightVersionSpan(version=version, start=start, end=end))
    return SpanList(token_count, tuple(spans))


def _as_tuples(spans: Sequence[WeightVersionSpan]) -> list[tuple[str, int, int]]:
    return [(span.version, span.start, span.end) for span in spans]


@st.composite
def malformed_span_lists(
    draw: st.DrawFn, *, malformations: Sequence[Malformation] = MALFORMATIONS
) -> MalformedSpans:
    """One valid list from :func:`weight_version_span_lists` broken once by a drawn malformation:

    - ``no_spans``: no spans for ``n > 0`` tokens (``bad_index`` ``None``);
    - ``late_start``: the first span starts after 0; ``gap`` / ``overlap``: span ``i > 0`` starts after / before
      the end of span ``i - 1``;
    - ``short`` / ``long``: the last span ends before / after ``n`` (a span for ``n == 0`` is ``long``);
    - ``repeated_label``: span ``i > 0`` carries the label of span ``i - 1``;
    - ``empty_span``: an empty span ``[e, e)`` with a fresh label is inserted after span ``i``;
    - ``empty_label``: span ``i`` is labelled ``""``.

    Malformations that need more spans than the drawn list has are replaced by one that fits.
    """
    case = draw(weight_version_span_lists())
    spans = _as_tuples(case.spans)
    n = case.token_count
    fitting: list[Malformation] = [m for m in malformations if _fits(m, spans)] or ["long"]
    malformation = draw(st.sampled_from(fitting))
    if not spans:  # n == 0: the only malformation is a span beyond the output
        return MalformedSpans(0, (("7", 0, draw(st.integers(1, 3))),), "long", 0)
    last = len(spans) - 1
    if malformation == "no_spans":
        return MalformedSpans(n, (), malformation, None)
    if malformation == "late_start":
        version, start, end = spans[0]
        spans[0] = (version, draw(st.integers(1, end + 2)), end)
        return MalformedSpans(n, tuple(spans), malformation, 0)
    if malformation in ("gap", "overlap"):
        index = draw(st.integers(1, last))
        version, start, end = spans[index]
        shift = draw(st.integers(1, 3))
        spans[index] = (version, start + shift if malformation == "gap" else start - shift, end)
        return MalformedSpans(n, tuple(spans), malformation, index)
    if malformation in ("short", "long"):
        version, start, end = spans[last]
        shift = draw(st.integers(1, end - start)) if malformation == "short" else draw(st.integers(1, 3))
        spans[last] = (version, start, end - shift if malformation == "short" else end + shift)
        return MalformedSpans(n, tuple(spans), malformation, last)
    if malformation == "repeated_label":
        index = draw(st.integers(1, last))
        spans[index] = (spans[index - 1][0], *spans[index][1:])
        return MalformedSpans(n, tuple(spans), malformation, index)
    index = draw(st.integers(0, last))
    if malformation == "empty_span":
        neighbours = {spans[index][0], spans[index + 1][0] if index < last else None}
        version = draw(st.sampled_from([label for label in WEIGHT_LABELS if label not in neighbours]))
        end = spans[index][2]
        spans.insert(index + 1, (version, end, end))
        return MalformedSpans(n, tuple(spans), malformation, index + 1)
    spans[index] = ("", *spans[index][1:])
    return MalformedSpans(n, tuple(spans), "empty_label", index)


def _fits(malformation: Malformation, spans: list[tuple[str, int, int]]) -> bool:
    """Whether ``malformation`` applies to ``spans`` (edits of span ``i > 0`` need two spans)."""
    if not spans:
        return malformation == "long"
    if malformation in ("gap", "overlap", "repeated_label"):
        return len(spans) > 1
    return True


@dataclasses.dataclass(frozen=True)
class _VllmWeightVersionSpan:
    """Stand-in for vLLM 0.32's ``WeightVersionSpan`` dataclass."""

    version: str
    start: int
    end: int


def _in_form(span: WeightVersionSpan, form: int) -> Any:
    if form == 0:
        return span
    if form == 1:
        return _VllmWeightVersionSpan(span.version, span.start, span.end)
    if form == 2:
        return {"version": span.version, "start": span.start, "end": span.end}
    return (span.version, span.start, span.end)


def span_forms(spans: Sequence[WeightVersionSpan]) -> st.SearchStrategy[list[Any]]:
    """``spans`` in the forms vLLM and its JSON produce, chosen per span: our model, a vLLM-like dataclass, a
    ``{"version", "start", "end"}`` mapping or a ``(version, start, end)`` tuple."""
    forms = st.lists(st.integers(0, 3), min_size=len(spans), max_size=len(spans))
    return forms.map(lambda chosen: [_in_form(span, form) for span, form in zip(spans, chosen, strict=True)])
