"""Per-token weight versions of a rollout: spans, allowed labels and the per-token map (SPEC §4.3)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from types import MappingProxyType, SimpleNamespace
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from rl_contracts import WeightVersionError
from rl_contracts.errors import ConfigContractError, ContractError, ContractTypeError
from rl_contracts.testing import assert_contract_error
from rl_contracts.weights import (
    WeightVersionSpan,
    check_weight_version_staleness,
    check_weight_versions,
    max_staleness_from_recipe,
    weight_version_lag,
    weight_version_per_token,
    weight_version_spans,
)


@dataclasses.dataclass(frozen=True)
class _VllmSpan:
    """Stand-in for vLLM 0.32's ``WeightVersionSpan`` dataclass."""

    version: str
    start: int
    end: int


@dataclasses.dataclass(frozen=True)
class _PartialSpan:
    """A dataclass with only some of a span's fields."""

    version: str
    start: int


class _Fresh:
    """A callable object without ``__qualname__`` that allows only "7"."""

    def __call__(self, label: str) -> bool:
        return label == "7"


_SPAN_FORMS = (
    "a WeightVersionSpan, vLLM's WeightVersionSpan dataclass, a mapping with 'version', 'start' and 'end', "
    "or a (version, start, end) tuple"
)


def _output(spans: Any, n: int = 12, index: int = 0, **extra: Any) -> SimpleNamespace:
    return SimpleNamespace(index=index, token_ids=list(range(100, 100 + n)), weight_versions=spans, **extra)


def _span(version: str, start: int, end: int) -> WeightVersionSpan:
    return WeightVersionSpan(version=version, start=start, end=end)


def test_one_version_gives_one_span_over_every_token() -> None:
    """``set_weight_version("7")`` before a generate gives one span covering every output token."""
    spans = weight_version_spans(_output([_VllmSpan("7", 0, 5)], n=5))
    assert spans == (_span("7", 0, 5),)


@pytest.mark.parametrize(
    "form",
    [
        [_VllmSpan("7", 0, 4), _VllmSpan("8", 4, 12)],
        [{"version": "7", "start": 0, "end": 4}, {"version": "8", "start": 4, "end": 12}],
        [("7", 0, 4), ("8", 4, 12)],
        (WeightVersionSpan(version="7", start=0, end=4), WeightVersionSpan(version="8", start=4, end=12)),
        [("7", np.int64(0), np.int32(4)), {"version": "8", "start": np.uint8(4), "end": 12}],
    ],
    ids=["vllm_dataclass", "json_mappings", "tuples", "models", "numpy_ints"],
)
def test_every_span_form_reads_the_same(form: Any) -> None:
    """vLLM's dataclass, JSON mappings, 3-tuples and our model all give the same frozen spans with plain ints."""
    spans = weight_version_spans(_output(form))
    assert spans == (_span("7", 0, 4), _span("8", 4, 12))
    assert spans is not None
    assert all(type(s.start) is int and type(s.end) is int for s in spans)


def test_no_labels_read_as_none_unless_required() -> None:
    """A missing or ``None`` ``weight_versions`` gives ``None``; with ``required=True`` it raises the SPEC's message."""
    assert weight_version_spans(SimpleNamespace(index=0, token_ids=[1])) is None
    assert weight_version_spans(_output(None)) is None
    with pytest.raises(WeightVersionError) as info:
        weight_version_spans(_output(None, index=3), required=True)
    assert str(info.value) == (
        "completion output 3 carries no weight_versions; the engine must be vLLM >= 0.32 and the trainer must "
        "call set_weight_version after every weight update"
    )
    assert info.value.output_index == 3
    assert_contract_error(info.value)


def test_an_empty_output_has_no_spans() -> None:
    """An output with no tokens has an empty span list; a span there is beyond the tokens."""
    assert weight_version_spans(_output([], n=0)) == ()
    with pytest.raises(WeightVersionError) as info:
        weight_version_spans(_output([("7", 0, 1)], n=0))
    assert (info.value.span_index, info.value.token_count) == (0, 0)


@pytest.mark.parametrize(
    ("spans", "span_index", "fragment"),
    [
        ([], None, "is empty but the output has token_count=12"),
        ([("7", 1, 12)], 0, "does not start at 0"),
        ([("7", 0, 4), ("8", 5, 12)], 1, "does not start where span 0 ends (4)"),
        ([("7", 0, 4), ("8", 3, 12)], 1, "does not start where span 0 ends (4)"),
        (
            [("7", 0, 4), ("7", 4, 12)],
            1,
            "repeats the label of span 0; vLLM starts a span only when the label changes",
        ),
        ([("7", 0, 11)], 0, "is the last span but ends before the 12 output tokens"),
        ([("7", 0, 13)], 0, "ends beyond the 12 output tokens"),
        ([("7", 0, 4), ("8", 4, 4), ("9", 4, 12)], 1, "is empty or reversed (end <= start)"),
        ([("7", 0, 4), ("8", 4, 2)], 1, "is empty or reversed (end <= start)"),
        ([("", 0, 12)], 0, "has an empty version label"),
        ([("7", -1, 12)], 0, "does not start at 0"),
        (
            [("7", 0, 4), ("8", 4, 8), ("8", 8, 12)],
            2,
            "repeats the label of span 1; vLLM starts a span only when the label changes",
        ),
    ],
    ids=[
        "no_spans",
        "late_start",
        "gap",
        "overlap",
        "same_label",
        "short",
        "long",
        "empty_span",
        "reversed",
        "empty_label",
        "negative_start",
        "third_repeats",
    ],
)
def test_malformed_spans_name_the_first_bad_span(spans: Any, span_index: int | None, fragment: str) -> None:
    """Every malformation raises WeightVersionError naming the first bad span (index, fields), the fault, the
    token count and the fix."""
    with pytest.raises(WeightVersionError) as info:
        weight_version_spans(_output(spans, index=2))
    error = info.value
    assert f"of completion output 2 {fragment}" in str(error)
    assert (error.span_index, error.token_count, error.output_index) == (span_index, 12, 2)
    if span_index is None:
        assert str(error).endswith(
            "every sampled token must be labelled with the weight version that sampled it"
        )
    else:
        version, start, end = spans[span_index]
        assert (error.version, error.start, error.end) == (version, start, end)
        assert f"weight_versions[{span_index}] (version='{version}', start={start}, end={end})" in str(error)
        assert f"{fragment}; token_count=12. The spans must start at 0" in str(error)
        assert str(error).endswith("end at token_count and change label from one span to the next")
    assert isinstance(error, ValueError)
    assert_contract_error(error)


_LIST = "a list of weight-version spans"


@pytest.mark.parametrize(
    ("weight_versions", "argument", "expected", "actual"),
    [
        ("7", "completion_output.weight_versions", _LIST, "str"),
        ({"version": "7", "start": 0, "end": 12}, "completion_output.weight_versions", _LIST, "dict"),
        ([["7", 0, 12]], "completion_output.weight_versions[0]", _SPAN_FORMS, "list"),
        ([("7", 0)], "completion_output.weight_versions[0]", _SPAN_FORMS, "tuple"),
        ([("7", 0, 12, "x")], "completion_output.weight_versions[0]", _SPAN_FORMS, "tuple"),
        ([{"version": "7", "start": 0}], "completion_output.weight_versions[0]", _SPAN_FORMS, "dict"),
        (
            [SimpleNamespace(version="7", start=0, end=12)],
            "completion_output.weight_versions[0]",
            _SPAN_FORMS,
            "SimpleNamespace",
        ),
        ([_VllmSpan], "completion_output.weight_versions[0]", _SPAN_FORMS, "type"),
        ([_PartialSpan("7", 0)], "completion_output.weight_versions[0]", _SPAN_FORMS, "_PartialSpan"),
        ([(7, 0, 12)], "completion_output.weight_versions[0].version", "a str label", "int"),
        ([("7", True, 12)], "completion_output.weight_versions[0].start", "an int (not bool)", "bool"),
        ([("7", 0, 12.0)], "completion_output.weight_versions[0].end", "an int (not bool)", "float"),
        (
            [("7", 0, np.array([12]))],
            "completion_output.weight_versions[0].end",
            "an int (not bool)",
            "ndarray",
        ),
    ],
    ids=[
        "str",
        "mapping",
        "list_span",
        "two_tuple",
        "four_tuple",
        "missing_key",
        "namespace",
        "dataclass_class",
        "dataclass_missing_field",
        "int_label",
        "bool_start",
        "float_end",
        "array_end",
    ],
)
def test_wrong_span_types_raise_contract_type_error(
    weight_versions: Any, argument: str, expected: str, actual: str
) -> None:
    """A span list or span of another shape, a non-str label or a non-int bound raises ContractTypeError naming
    the argument, what it must be and the type it has."""
    with pytest.raises(ContractTypeError) as info:
        weight_version_spans(_output(weight_versions))
    assert (info.value.argument, info.value.expected, info.value.actual) == (argument, expected, actual)
    assert_contract_error(info.value)


@pytest.mark.parametrize(
    "output",
    [
        SimpleNamespace(index=1, token_ids=None, weight_versions=[("7", 0, 1)]),
        SimpleNamespace(index=1, weight_versions=[("7", 0, 1)]),
    ],
    ids=["none", "missing"],
)
def test_spans_without_token_ids_fail_closed(output: SimpleNamespace) -> None:
    """Spans on an output whose ``token_ids`` is ``None`` or absent cannot be checked and raise WeightVersionError."""
    with pytest.raises(WeightVersionError) as info:
        weight_version_spans(output)
    assert "completion output 1 carries weight_versions but no token_ids" in str(info.value)
    assert str(info.value).endswith("cannot be checked against the output tokens")
    assert info.value.output_index == 1


def test_required_must_be_a_bool() -> None:
    """``required=1`` raises ContractTypeError instead of reading as true."""
    with pytest.raises(ContractTypeError) as info:
        weight_version_spans(_output(None), required=1)  # type: ignore[arg-type]
    assert (info.value.argument, info.value.expected, info.value.actual) == ("required", "a bool", "int")


def test_token_ids_may_be_an_array() -> None:
    """The token count is read from a 1-D integer array as well as from a list."""
    output = SimpleNamespace(index=0, token_ids=np.arange(6), weight_versions=[("7", 0, 6)])
    assert weight_version_spans(output) == (_span("7", 0, 6),)


def test_check_allows_listed_labels_and_returns_the_spans() -> None:
    """Every label allowed (by collection or by predicate) returns the spans."""
    output = _output([("7", 0, 4), ("8", 4, 12)])
    expected = (_span("7", 0, 4), _span("8", 4, 12))
    assert check_weight_versions(output, allowed={"7", "8"}) == expected
    assert check_weight_versions(output, allowed=["8", "7", "9"]) == expected
    assert check_weight_versions(output, allowed=lambda label: int(label) >= 7) == expected


def test_check_accepts_a_mapping_as_the_collection_of_its_keys() -> None:
    """A mapping is a Collection[str] of its keys: labels are allowed by key membership, values are ignored."""
    output = _output([("7", 0, 4), ("8", 4, 12)])
    expected = (_span("7", 0, 4), _span("8", 4, 12))
    assert check_weight_versions(output, allowed={"7": "policy step 7", "8": None}) == expected
    assert check_weight_versions(output, allowed=MappingProxyType({"7": 0, "8": 1})) == expected
    with pytest.raises(WeightVersionError) as info:
        check_weight_versions(output, allowed={"8": "policy step 8"})
    assert (info.value.span_index, info.value.version) == (0, "7")
    assert "(allowed: ['8'])" in str(info.value)


def test_weight_version_error_names_the_completion_outputs_own_index() -> None:
    """The error names ``completion_output.index`` (its choice among a request's n outputs), so the second
    choice of an n=2 request is "completion output 1"; the batch row is the rollouts module's to add."""
    with pytest.raises(WeightVersionError) as info:
        check_weight_versions(_output([("7", 0, 12)], index=1), allowed={"8"})
    assert info.value.output_index == 1
    assert "of completion output 1 were sampled by weights '7'" in str(info.value)


def test_check_rejects_the_first_disallowed_span_with_the_spec_message() -> None:
    """A rollout that allows only "8" rejects tokens [0, 4) sampled by "7", with SPEC's message and attributes."""
    with pytest.raises(WeightVersionError) as info:
        check_weight_versions(_output([("7", 0, 4), ("8", 4, 12)], index=0), allowed={"8"})
    assert str(info.value) == (
        "output tokens [0, 4) of completion output 0 were sampled by weights '7', which this rollout does not "
        "allow (allowed: ['8']); the engine was not updated, or the rollout is older than the trainer accepts"
    )
    assert (info.value.version, info.value.span_index, info.value.start, info.value.end) == ("7", 0, 0, 4)
    assert (info.value.output_index, info.value.token_count) == (0, 12)
    assert_contract_error(info.value)


def test_check_reads_an_output_without_index() -> None:
    """An output without ``index`` is checked like any other; its spans come back."""
    output = SimpleNamespace(token_ids=[1, 2], weight_versions=[("7", 0, 2)])
    assert check_weight_versions(output, allowed={"7"}) == (_span("7", 0, 2),)


def test_check_with_a_predicate_names_it() -> None:
    """A predicate that refuses a later span is named in the message; the span is the second one."""

    def is_fresh(label: str) -> bool:
        return label == "7"

    with pytest.raises(WeightVersionError) as info:
        check_weight_versions(_output([("7", 0, 4), ("8", 4, 12)]), allowed=is_fresh)
    assert "allowed: labels accepted by" in str(info.value)
    assert "is_fresh" in str(info.value)
    assert (info.value.span_index, info.value.version) == (1, "8")


def test_check_with_a_callable_object_names_its_type() -> None:
    """A callable object without ``__qualname__`` is named by its type in the message."""
    with pytest.raises(WeightVersionError) as info:
        check_weight_versions(_output([("7", 0, 4), ("8", 4, 12)]), allowed=_Fresh())
    assert "(allowed: labels accepted by _Fresh)" in str(info.value)
    assert (info.value.span_index, info.value.version) == (1, "8")


def test_check_requires_labels_by_default() -> None:
    """check_weight_versions requires spans unless ``required=False``, which returns ``None``."""
    with pytest.raises(WeightVersionError, match="carries no weight_versions"):
        check_weight_versions(_output(None), allowed={"8"})
    assert check_weight_versions(_output(None), allowed={"8"}, required=False) is None


def test_predicate_errors_propagate() -> None:
    """What a caller's predicate raises propagates unchanged (SPEC §0.3)."""

    def broken(label: str) -> bool:
        raise KeyError(label)

    with pytest.raises(KeyError):
        check_weight_versions(_output([("7", 0, 12)]), allowed=broken)


_NEITHER = "a collection of str labels (not a bare str) or a callable taking a label"


@pytest.mark.parametrize(
    ("allowed", "expected", "actual"),
    [
        ("8", _NEITHER, "str"),
        (b"8", _NEITHER, "bytes"),
        ({8: "eight"}, "a collection of str labels", "int"),
        ({8}, "a collection of str labels", "int"),
        (["8", None], "a collection of str labels", "NoneType"),
        ((label for label in ["8"]), "a collection of str labels (not an iterator)", "generator"),
        (8, _NEITHER, "int"),
        (None, _NEITHER, "NoneType"),
    ],
    ids=["str", "bytes", "int_key_mapping", "int_label", "none_label", "generator", "int", "none"],
)
def test_check_rejects_allowed_that_is_no_label_collection(allowed: Any, expected: str, actual: str) -> None:
    """A bare str, non-str labels (or mapping keys), an iterator or a scalar raise ContractTypeError before any
    read, naming what ``allowed`` must be and the type of the offending value."""
    with pytest.raises(ContractTypeError) as info:
        check_weight_versions(_output(None), allowed=allowed)
    assert (info.value.argument, info.value.expected, info.value.actual) == ("allowed", expected, actual)


def test_per_token_maps_every_token_to_its_label_index() -> None:
    """Each output token gets the index of its span's label in ``labels``, as int32 of length spans[-1].end."""
    spans = (_span("7", 0, 4), _span("8", 4, 12))
    codes = weight_version_per_token(spans, labels=["8", "7"])
    assert codes.dtype == np.int32
    assert codes.tolist() == [1] * 4 + [0] * 8
    assert weight_version_per_token([], labels=["8"]).tolist() == []
    assert weight_version_per_token(spans, labels=["7", "8", "7"]).tolist() == [0] * 4 + [1] * 8


def test_per_token_rejects_an_unknown_label() -> None:
    """A span whose label is not in ``labels`` raises WeightVersionError naming the span and its version."""
    with pytest.raises(WeightVersionError) as info:
        weight_version_per_token((_span("7", 0, 4), _span("8", 4, 12)), labels=["7"])
    assert (info.value.span_index, info.value.version) == (1, "8")
    assert (info.value.start, info.value.end, info.value.token_count) == (4, 12, 12)
    assert "spans[1] (version='8', start=4, end=12) has a label absent from labels=['7']" in str(info.value)
    assert str(info.value).endswith("add every weight version the rollout may carry to labels")
    assert_contract_error(info.value)


@pytest.mark.parametrize(
    ("spans", "labels", "argument", "expected", "actual"),
    [
        ("7", ["7"], "spans", "a sequence of WeightVersionSpan", "str"),
        ([("7", 0, 4)], ["7"], "spans[0]", "a WeightVersionSpan", "tuple"),
        ([_span("7", 0, 4)], "7", "labels", "a sequence of str labels (not a bare str)", "str"),
        ([_span("7", 0, 4)], ["7", 8], "labels[1]", "a str label", "int"),
    ],
)
def test_per_token_type_errors(spans: Any, labels: Any, argument: str, expected: str, actual: str) -> None:
    """Non-sequence arguments, a non-model span or a non-str label raise ContractTypeError naming the argument,
    what it must be and the type it has."""
    with pytest.raises(ContractTypeError) as info:
        weight_version_per_token(spans, labels=labels)
    assert (info.value.argument, info.value.expected, info.value.actual) == (argument, expected, actual)


def test_per_token_maps_adjacent_spans_with_the_same_label() -> None:
    """SPEC §4.3 defines the result token by token, so adjacent spans with one label (which weight_version_spans
    rejects: vLLM never reports them) map every token to that label instead of raising."""
    spans = (_span("7", 0, 2), _span("7", 2, 5), _span("8", 5, 6), _span("8", 6, 7))
    assert weight_version_per_token(spans, labels=["8", "7"]).tolist() == [1] * 5 + [0] * 2


@pytest.mark.parametrize(
    "end", [2**61, 2**62, 2**63, 2**64, 10**5000], ids=["2^61", "2^62", "2^63", "2^64", "10^5000"]
)
def test_per_token_rejects_spans_beyond_what_an_array_can_index(end: int) -> None:
    """A span ending beyond the largest int32 array numpy can index raises WeightVersionError naming the span
    and the limit (before: OverflowError or numpy's ValueError), with a bounded message."""
    with pytest.raises(WeightVersionError) as info:
        weight_version_per_token((_span("7", 0, 4), _span("8", 4, end)), labels=["7", "8"])
    assert (info.value.span_index, info.value.version, info.value.end) == (1, "8", end)
    assert info.value.token_count == end
    assert f"{np.iinfo(np.intp).max // 4} tokens" in str(info.value)
    assert_contract_error(info.value)


def test_per_token_rejects_spans_that_do_not_tile() -> None:
    """Spans with a gap are rejected, not mapped with a hole."""
    with pytest.raises(WeightVersionError) as info:
        weight_version_per_token((_span("7", 0, 4), _span("8", 5, 12)), labels=["7", "8"])
    assert info.value.span_index == 1
    assert "spans[1]" in str(info.value)


@pytest.mark.parametrize(
    "fields",
    [
        {"version": "", "start": 0, "end": 1},
        {"version": 7, "start": 0, "end": 1},
        {"version": "7", "start": -1, "end": 1},
        {"version": "7", "start": True, "end": 2},
        {"version": "7", "start": 2, "end": 2},
        {"version": "7", "start": 0, "end": 1, "extra": 1},
    ],
)
def test_span_model_validates_its_fields(fields: dict[str, Any]) -> None:
    """An empty or non-str label, a negative or bool start, ``end <= start`` or an extra key is a ValidationError."""
    with pytest.raises(ValidationError):
        WeightVersionSpan(**fields)


def test_span_model_is_frozen() -> None:
    """A WeightVersionSpan cannot be changed after construction."""
    span = _span("7", 0, 1)
    with pytest.raises(ValidationError):
        span.end = 5  # type: ignore[misc]


def test_weight_version_error_is_a_value_error_and_exported() -> None:
    """WeightVersionError is a ContractError and a ValueError, importable from the package root."""
    assert issubclass(WeightVersionError, ContractError)
    assert issubclass(WeightVersionError, ValueError)
    assert WeightVersionError.attribute_names[:2] == ("output_index", "span_index")


def test_weights_imports_neither_torch_nor_vllm() -> None:
    """``rl_contracts.weights`` is import-light: a fresh interpreter importing it loads numpy, not torch or vLLM."""
    probe = (
        "import sys, rl_contracts.weights; print(sorted(m for m in ('torch', 'vllm') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_huge_bounds_are_rendered_in_every_tiling_message() -> None:
    """Spans whose bounds have thousands of digits still get a bounded WeightVersionError for a gap, a short
    last span and an overlong one (not Python's ValueError from an int-to-str conversion)."""
    huge = 10**5000
    cases = [
        ((_span("7", 0, huge), _span("8", huge + 1, huge + 2)), 1),
        ((_span("7", 0, 2), _span("8", 3, huge)), 1),
    ]
    for spans, index in cases:
        with pytest.raises(WeightVersionError) as info:
            weight_version_per_token(spans, labels=["7", "8"])
        assert info.value.span_index == index
        assert_contract_error(info.value)
    with pytest.raises(WeightVersionError) as info:
        weight_version_spans(_output([("7", 0, huge)], n=3))
    assert "ends beyond the 3 output tokens" in str(info.value)
    assert_contract_error(info.value)


# ---------------------------------------------------------------------------------------------------- staleness


@pytest.mark.parametrize(
    ("version", "kwargs", "lag"),
    [
        ("5", {"current_version": 7}, 2),
        ("7", {"current_version": "7"}, 0),
        ("0", {"current_version": 0}, 0),
        ("a", {"current_version": "c", "version_order": ["a", "b", "c"]}, 2),
        ("default", {"current_version": "step-1", "version_order": ("default", "step-1")}, 1),
    ],
)
def test_weight_version_lag_counts_versions(version: str, kwargs: dict[str, Any], lag: int) -> None:
    """Integer labels subtract; with version_order, positions subtract."""
    assert weight_version_lag(version, **kwargs) == lag


@pytest.mark.parametrize(
    ("version", "kwargs", "error", "fragment"),
    [
        (
            "default",
            {"current_version": 3},
            WeightVersionError,
            "cannot be ordered among the integer versions",
        ),
        ("07", {"current_version": 7}, WeightVersionError, "cannot be ordered"),
        ("v7", {"current_version": 7}, WeightVersionError, "cannot be ordered"),
        ("7", {"current_version": "v7"}, WeightVersionError, "'v7' cannot be ordered"),
        ("9", {"current_version": 7}, WeightVersionError, "2 versions newer than current_version=7"),
        ("z", {"current_version": "a", "version_order": ["a"]}, WeightVersionError, "'z' cannot be ordered"),
        ("a", {"current_version": "a", "version_order": ["a", "a"]}, WeightVersionError, "twice"),
        ("a", {"current_version": 1, "version_order": ["a"]}, ContractTypeError, "current_version"),
        ("a", {"current_version": "a", "version_order": "a"}, ContractTypeError, "version_order"),
        ("7", {"current_version": True}, ContractTypeError, "current_version"),
        ("7", {"current_version": -1}, ContractTypeError, "current_version"),
        (7, {"current_version": 7}, ContractTypeError, "version"),
    ],
)
def test_weight_version_lag_fails_closed(
    version: Any, kwargs: dict[str, Any], error: type[Exception], fragment: str
) -> None:
    """A label that cannot be ordered, a newer label, or a bad argument is refused, never guessed."""
    with pytest.raises(error) as info:
        weight_version_lag(version, **kwargs)
    assert_contract_error(info.value)
    assert fragment in str(info.value)


def test_check_weight_version_staleness_names_the_first_span_beyond_the_bound() -> None:
    """The largest lag is returned; the first span beyond max_staleness is named with its tokens."""
    spans = (WeightVersionSpan(version="4", start=0, end=3), WeightVersionSpan(version="6", start=3, end=5))
    assert check_weight_version_staleness(spans, current_version=6, max_staleness=2) == 2
    assert check_weight_version_staleness((), current_version=6, max_staleness=0) == 0
    with pytest.raises(WeightVersionError) as info:
        check_weight_version_staleness(spans, current_version=6, max_staleness=1)
    assert_contract_error(info.value)
    assert (info.value.span_index, info.value.version, info.value.start, info.value.end) == (0, "4", 0, 3)
    with pytest.raises(WeightVersionError, match="max_staleness must be >= 0"):
        check_weight_version_staleness(spans, current_version=6, max_staleness=-1)
    with pytest.raises(ContractTypeError):
        check_weight_version_staleness([("4", 0, 3)], current_version=6, max_staleness=1)  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("recipe", "bound"),
    [
        ({"grpo": {"async_grpo": {"enabled": True, "max_trajectory_age_steps": 4}}}, 4),
        ({"grpo": {"async_grpo": {"enabled": True}}}, 1),
        ({"grpo": {"async_grpo": {"enabled": False, "max_trajectory_age_steps": 4}}}, None),
        ({"grpo": {"num_prompts_per_step": 8}}, None),
        ({"ppo": {"async_ppo": {"enabled": True, "max_trajectory_age_steps": 3}}}, 3),
        ({"async_rl": {"sampler": {"name": "windowed", "max_staleness_versions": 2}}}, 2),
        ({"async_rl": {"sampler": {"name": "weight_fifo"}}}, 1),
        (
            SimpleNamespace(
                document={"grpo": {"async_grpo": {"enabled": True, "max_trajectory_age_steps": 0}}}
            ),
            0,
        ),
    ],
)
def test_max_staleness_from_recipe_reads_the_async_bound(recipe: Any, bound: int | None) -> None:
    """NeMo RL's async sections give the bound; a synchronous recipe gives None."""
    assert max_staleness_from_recipe(recipe) == bound


@pytest.mark.parametrize(
    ("recipe", "error"),
    [
        (
            {"grpo": {"async_grpo": {"enabled": True, "max_trajectory_age_steps": "${steps}"}}},
            ConfigContractError,
        ),
        ({"grpo": {"async_grpo": {"enabled": True, "max_trajectory_age_steps": -1}}}, ConfigContractError),
        ({"grpo": {"async_grpo": {"enabled": "true"}}}, ConfigContractError),
        ({"async_rl": {"sampler": {"name": "in_order", "max_lookahead_versions": 1}}}, ConfigContractError),
        ("grpo.yaml", ContractTypeError),
    ],
)
def test_max_staleness_from_recipe_fails_closed(recipe: Any, error: type[Exception]) -> None:
    """An unresolved or negative bound, a non-bool switch, a sampler it does not read, or no recipe: an error."""
    with pytest.raises(error) as info:
        max_staleness_from_recipe(recipe)
    assert_contract_error(info.value)
