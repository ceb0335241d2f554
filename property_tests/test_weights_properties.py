"""Invariants of the weight-version spans of a rollout (SPEC §4.3), over generated span lists."""

from __future__ import annotations

import copy
import itertools
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rl_contracts.errors import WeightVersionError
from rl_contracts.testing import assert_contract_error
from rl_contracts.testing.strategies import (
    WEIGHT_LABELS,
    MalformedSpans,
    SpanList,
    malformed_span_lists,
    span_forms,
    weight_version_span_lists,
)
from rl_contracts.weights import (
    WeightVersionSpan,
    check_weight_versions,
    weight_version_per_token,
    weight_version_spans,
)


def _output(token_count: int, spans: Any, index: int = 0) -> SimpleNamespace:
    return SimpleNamespace(index=index, token_ids=[5] * token_count, weight_versions=spans)


@given(data=st.data(), case=weight_version_span_lists())
def test_valid_lists_are_accepted_in_every_form(data: st.DataObject, case: SpanList) -> None:
    """Every valid list, in any mix of forms, reads back as the same spans; the input is left unchanged."""
    raw = data.draw(span_forms(case.spans))
    before = copy.deepcopy(raw)
    assert weight_version_spans(_output(case.token_count, raw)) == case.spans
    assert raw == before


@given(case=weight_version_span_lists())
def test_accepted_spans_tile_the_output(case: SpanList) -> None:
    """Accepted spans start at 0, are contiguous and non-empty, end at the token count, and change label."""
    spans = weight_version_spans(_output(case.token_count, list(case.spans)), required=True)
    assert spans is not None
    assert [s.start for s in spans[:1]] == ([0] if case.token_count else [])
    assert all(a.end == b.start for a, b in itertools.pairwise(spans))
    assert all(s.start < s.end for s in spans)
    assert (spans[-1].end if spans else 0) == case.token_count
    assert all(a.version != b.version for a, b in itertools.pairwise(spans))


@given(case=malformed_span_lists())
def test_every_malformed_list_names_its_first_bad_span(case: MalformedSpans) -> None:
    """Each malformation raises WeightVersionError with ``span_index`` the first bad span and the token count."""
    with pytest.raises(WeightVersionError) as info:
        weight_version_spans(_output(case.token_count, list(case.spans), index=4))
    error = info.value
    assert (error.span_index, error.token_count, error.output_index) == (case.bad_index, case.token_count, 4)
    if case.bad_index is not None:
        assert f"[{case.bad_index}] (version=" in str(error)
        assert (error.version, error.start, error.end) == case.spans[case.bad_index]
    assert_contract_error(error)


@pytest.mark.parametrize("malformation", ["gap", "overlap", "repeated_label", "empty_span", "short"])
@given(data=st.data())
def test_each_malformation_is_generated_and_rejected(malformation: Any, data: st.DataObject) -> None:
    """Restricted to one malformation, the strategy still yields broken lists that are rejected at bad_index."""
    case = data.draw(malformed_span_lists(malformations=[malformation]))
    with pytest.raises(WeightVersionError) as info:
        weight_version_spans(_output(case.token_count, list(case.spans)))
    assert info.value.span_index == case.bad_index


@given(data=st.data(), case=weight_version_span_lists())
def test_per_token_labels_match_a_token_by_token_lookup(data: st.DataObject, case: SpanList) -> None:
    """Token j gets the index in ``labels`` of the label of the span that contains j."""
    labels = data.draw(st.permutations(WEIGHT_LABELS))
    codes = weight_version_per_token(case.spans, labels=labels)
    expected = [
        labels.index(next(s.version for s in case.spans if s.start <= j < s.end))
        for j in range(case.token_count)
    ]
    assert codes.tolist() == expected
    assert codes.dtype.name == "int32"


@given(
    data=st.data(),
    case=malformed_span_lists(malformations=["repeated_label"]).filter(
        lambda c: c.malformation == "repeated_label"
    ),
)
def test_per_token_maps_repeated_labels_token_by_token(data: st.DataObject, case: MalformedSpans) -> None:
    """Spans that tile the output but repeat a label (rejected by weight_version_spans) still map token j to the
    index in ``labels`` of the label of the span containing j (SPEC §4.3 defines the result per token)."""
    spans = [WeightVersionSpan(version=v, start=a, end=b) for v, a, b in case.spans]
    labels = data.draw(st.permutations(WEIGHT_LABELS))
    codes = weight_version_per_token(spans, labels=labels)
    expected = [
        labels.index(next(v for v, a, b in case.spans if a <= j < b)) for j in range(case.token_count)
    ]
    assert codes.tolist() == expected


@given(data=st.data(), case=weight_version_span_lists())
def test_disallowed_label_is_named_at_its_first_span(data: st.DataObject, case: SpanList) -> None:
    """Allowing every label but one rejects the first span with that label; allowing all of them passes."""
    present = sorted({s.version for s in case.spans})
    output = _output(case.token_count, list(case.spans))
    assert check_weight_versions(output, allowed=present, required=case.token_count > 0) == (
        case.spans if case.token_count else ()
    )
    if not present:
        return
    refused = data.draw(st.sampled_from(present))
    with pytest.raises(WeightVersionError) as info:
        check_weight_versions(output, allowed={label for label in present if label != refused})
    first = next(i for i, s in enumerate(case.spans) if s.version == refused)
    assert (info.value.span_index, info.value.version) == (first, refused)
    assert f"[{case.spans[first].start}, {case.spans[first].end})" in str(info.value)
