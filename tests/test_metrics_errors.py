"""Exact messages and structured attributes of the rl_contracts.metrics error paths (SPEC §0.3, §0.4, §6).

Each bad input is checked for its class, its full message (the bounded wording of SPEC §0.4) and its structured
attributes (``key``/``value`` of ``CounterSnapshotError``, ``argument``/``expected``/``actual`` of
``ContractTypeError``), plus the boundaries next to those errors.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import ValidationError

from rl_contracts._messages import render, shorten
from rl_contracts.errors import ContractTypeError, CounterSnapshotError
from rl_contracts.metrics import (
    SPEC_DECODE_ACCEPTED_PER_POS,
    SPEC_DECODE_NUM_DRAFTS,
    CounterSnapshot,
    aggregate_spec_decode_counters,
    compute_engine_step_metrics,
    compute_spec_decode_metrics,
    encode_counter_key,
    first_delta,
    is_kept,
    mean_from_histogram,
    parse_prometheus_text,
)
from rl_contracts.testing import assert_contract_error

DATA = Path(__file__).parent / "data"
NS = SimpleNamespace
PER_POS = SPEC_DECODE_ACCEPTED_PER_POS
DRAFTS = SPEC_DECODE_NUM_DRAFTS
LONG = "vllm:spec_decode_" + "x" * 300
"""A kept name longer than the 200-character bound: a wrong bound (even 201) changes the message and the key."""
SHORT_LONG = shorten(LONG, 200)
BOTH = "is reported both as a scalar and as a per-position vector; one series cannot be both"
OVERFLOW = "the inputs are not engine counters"
DUPLICATE = "could not parse Prometheus text: duplicate sample"
BAD_KEY = (
    "must be a str or a (name, position >= 1) tuple, as aggregate_spec_decode_counters returns (a position is "
    "at most sys.maxsize)"
)
STEP_COUNTERS = "a mapping of counter keys to floats (from aggregate_spec_decode_counters)"


def _snapshot_error(call: Callable[[], object]) -> CounterSnapshotError:
    """Run ``call`` and return the CounterSnapshotError it raises (after checking invariant 1)."""
    with pytest.raises(CounterSnapshotError) as info:
        call()
    assert_contract_error(info.value)
    return info.value


def _type_error(call: Callable[[], object]) -> ContractTypeError:
    """Run ``call`` and return the ContractTypeError it raises (after checking invariant 1)."""
    with pytest.raises(ContractTypeError) as info:
        call()
    assert_contract_error(info.value)
    return info.value


# ---------------------------------------------------------------------------------------------------- snapshots


@pytest.mark.parametrize(
    ("objects", "message", "key", "value"),
    [
        (
            [NS(name=LONG, labels={}, value=1), NS(name=LONG, labels={}, values=[1])],
            f"vLLM metric counter '{SHORT_LONG}' {BOTH}",
            SHORT_LONG,
            None,
        ),
        (
            [NS(name=LONG, labels={}, values=[1]), NS(name=LONG, labels={"engine": "1"}, value=1)],
            f"vLLM metric counter '{SHORT_LONG}' {BOTH}",
            SHORT_LONG,
            None,
        ),
        (
            [NS(name=LONG, labels=["engine"], value=1)],
            f"metric metrics[0] '{SHORT_LONG}' must have labels as a mapping of label names to strings, got list",
            SHORT_LONG,
            "['engine']",
        ),
        (
            [NS(name=LONG, labels={"finished_reason": b"stop"}, value=1)],
            f"metric metrics[0] '{SHORT_LONG}' has a finished_reason label that is not a str: b'stop'",
            SHORT_LONG,
            "b'stop'",
        ),
        (
            [NS(name=LONG, labels={"engine": str(e)}, value=1.5e308) for e in range(2)],
            f"vLLM metric counter '{SHORT_LONG}' overflows when summed (inf); {OVERFLOW}",
            SHORT_LONG,
            "inf",
        ),
        (
            [NS(name=LONG, labels={"engine": str(e)}, values=[1, 1.5e308]) for e in range(2)],
            f"vLLM metric counter '{SHORT_LONG}' overflows when summed (inf); {OVERFLOW}",
            SHORT_LONG,
            "inf",
        ),
    ],
)
def test_from_vllm_metrics_errors_are_exact(
    objects: list[SimpleNamespace], message: str, key: str, value: str | None
) -> None:
    """Scalar/vector conflicts, bad labels and overflowing sums name the shortened key and the offending value."""
    err = _snapshot_error(lambda: CounterSnapshot.from_vllm_metrics(objects))
    assert (str(err), err.key, err.value) == (message, key, value)


@pytest.mark.parametrize(
    "samples",
    [
        [f'{PER_POS}_total{{engine="{e}",position="2"}} 1.5e308' for e in range(2)],
        [f'vllm:prompt_tokens_total{{engine="{e}"}} 1.5e308' for e in range(2)],
    ],
)
def test_from_prometheus_text_overflow_is_exact(samples: list[str]) -> None:
    """Engines whose sum overflows (a scalar, or one position of the vector) are reported with key and value."""
    family = samples[0].split("_total", 1)[0]
    text = f"# TYPE {family}_total counter\n" + "\n".join(samples) + "\n"
    err = _snapshot_error(lambda: CounterSnapshot.from_prometheus_text(text))
    assert str(err) == f"Prometheus counter '{family}' overflows when summed (inf); {OVERFLOW}"
    assert (err.key, err.value) == (family, "inf")


@pytest.mark.parametrize(
    ("vectors", "expected"),
    [
        ([[]], ()),
        ([[], []], ()),
        ([[2], []], (2.0,)),
        ([[], [1, 2]], (1.0, 2.0)),
    ],
)
def test_from_vllm_metrics_empty_vectors(vectors: list[list[int]], expected: tuple[float, ...]) -> None:
    """An empty per-position vector is kept as an empty tuple and pads nothing when summed with another."""
    objects = [NS(name=PER_POS, labels={"engine": str(e)}, values=v) for e, v in enumerate(vectors)]
    assert CounterSnapshot.from_vllm_metrics(objects).values == {PER_POS: expected}


@pytest.mark.parametrize(("length", "shown"), [(200, None), (201, 197)])
def test_key_shortening_boundary(length: int, shown: int | None) -> None:
    """A key of exactly 200 characters is shown whole; one of 201 is cut to 197 characters and '...'."""
    name = ("vllm:spec_decode_" + "k" * length)[:length]
    key = name if shown is None else name[:shown] + "..."
    objects = [NS(name=name, labels={}, value=1), NS(name=name, labels={}, values=[1])]
    err = _snapshot_error(lambda: CounterSnapshot.from_vllm_metrics(objects))
    assert (str(err), err.key, err.value) == (f"vLLM metric counter '{key}' {BOTH}", key, None)
    assert len(key) == 200


# ---------------------------------------------------------------------------------------------------- Prometheus


@pytest.mark.parametrize(
    ("text", "actual"), [(b"vllm:x 1", "bytes"), (None, "NoneType"), (["vllm:x 1"], "list")]
)
def test_from_prometheus_text_non_str_is_exact(text: object, actual: str) -> None:
    """Text that is not a str is a ContractTypeError naming the argument 'text' and the type received."""
    err = _type_error(lambda: CounterSnapshot.from_prometheus_text(text))  # type: ignore[arg-type]
    assert (str(err), err.argument, err.expected, err.actual) == (
        f"text must be a str, got {actual}",
        "text",
        "a str",
        actual,
    )


def _counter_page(family: str, *samples: str) -> str:
    """A Prometheus page with one counter family and the given ``labels value`` sample lines."""
    return f"# TYPE {family}_total counter\n" + "".join(f"{family}_total{s}\n" for s in samples)


@pytest.mark.parametrize(
    ("text", "message", "key", "value"),
    [
        (
            _counter_page(
                "vllm:prompt_tokens", '{engine="0",model_name="m"} 1', '{model_name="m",engine="0"} 2.5'
            ),
            f"{DUPLICATE} vllm:prompt_tokens_total with labels {{'model_name': 'm', 'engine': '0'}}",
            "vllm:prompt_tokens",
            "2.5",
        ),
        (
            _counter_page(PER_POS, '{position="1"} 1', '{position="1"} 7'),
            f"{DUPLICATE} {PER_POS}_total with labels {{'position': '1'}}",
            PER_POS,
            "7",
        ),
        (
            "# TYPE vllm:request_prompt_tokens histogram\n"
            "vllm:request_prompt_tokens_sum 1\nvllm:request_prompt_tokens_sum 3\n",
            f"{DUPLICATE} vllm:request_prompt_tokens_sum with labels {{}}",
            "vllm:request_prompt_tokens",
            "3",
        ),
        (
            _counter_page(LONG, '{engine="0"} 1', '{engine="0"} 2.5'),
            f"{DUPLICATE} {shorten(LONG + '_total', 200)} with labels {{'engine': '0'}}",
            SHORT_LONG,
            "2.5",
        ),
    ],
)
def test_from_prometheus_text_duplicate_sample_is_exact(
    text: str, message: str, key: str, value: str
) -> None:
    """A sample repeated with the same labels (in any order) names the sample, its labels, the family and value."""
    err = _snapshot_error(lambda: CounterSnapshot.from_prometheus_text(text))
    assert (str(err), err.key, err.value) == (message, key, value)


@pytest.mark.parametrize(("length", "shown"), [(200, None), (201, 197)])
def test_from_prometheus_text_duplicate_key_shortening_boundary(length: int, shown: int | None) -> None:
    """The duplicate-sample key is the family name: whole at 200 characters, cut to 197 and '...' at 201."""
    family = ("vllm:spec_decode_" + "k" * length)[:length]
    key = family if shown is None else family[:shown] + "..."
    err = _snapshot_error(lambda: CounterSnapshot.from_prometheus_text(_counter_page(family, " 1", " 2")))
    assert (err.key, err.value) == (key, "2")
    assert str(err) == f"{DUPLICATE} {shorten(family + '_total', 200)} with labels {{}}"


@pytest.mark.parametrize(
    ("family", "kind", "sample"),
    [
        ("vllm:spec_decode|x", "counter", "_total"),
        ("vllm:request_prompt_tokens|x", "histogram", "_count"),
        (f"{LONG}|x", "counter", "_total"),
    ],
)
def test_from_prometheus_text_bad_family_name_is_exact(family: str, kind: str, sample: str) -> None:
    """A counter or histogram family whose (quoted) name holds the key separator is named as a Prometheus family."""
    text = f'# TYPE "{family}" {kind}\n{{"{family}{sample}"}} 1\n'
    err = _snapshot_error(lambda: CounterSnapshot.from_prometheus_text(text))
    assert str(err) == f"Prometheus family name must be a non-empty str without '|', got str {render(family)}"
    assert (err.key, err.value) == (shorten(family, 200), None)


SERVER_PAGES = ["vllm_server_metrics_sample.prom", "server_metrics_after_two_chats.prom"]


@pytest.mark.parametrize(
    ("text", "families"),
    [
        ("", 0),
        ("# TYPE x counter\nx_total 1\n# TYPE spec_decode_y gauge\nspec_decode_y 2\n", 0),
        (_counter_page("vllm:prompt_tokens", " 1"), 1),
        ("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 0\n", 1),
        (
            "# TYPE vllm:a gauge\nvllm:a 1\n# TYPE vllm:b_total counter\nvllm:b_total 1\n"
            "# TYPE other_total counter\nother_total 1\nvllm:c 3\n"
            "# TYPE vllm:d summary\nvllm:d_count 1\nvllm:d_sum 1\n",
            4,
        ),
    ],
)
def test_parse_prometheus_counts_vllm_families(text: str, families: int) -> None:
    """Every vllm: family counts, kept or not and of any type; the CLI refuses a page where the count is 0."""
    snapshot, names = parse_prometheus_text(text)
    assert len(names) == families
    assert snapshot == CounterSnapshot.from_prometheus_text(text)


@pytest.mark.parametrize("page", SERVER_PAGES)
def test_parse_prometheus_counts_the_families_of_a_recorded_page(page: str) -> None:
    """On a real vLLM /metrics page the count is the number of '# TYPE vllm:' declarations (dozens)."""
    text = (DATA / page).read_text()
    declared = sum(line.startswith("# TYPE vllm:") for line in text.splitlines())
    assert declared > 10
    assert len(parse_prometheus_text(text).vllm_families) == declared


# ---------------------------------------------------------------------------------------------------- deltas


@pytest.mark.parametrize(
    ("candidates", "message", "argument", "expected", "actual"),
    [
        (
            "vllm:prompt_tokens",
            "candidates must be a tuple of metric names, got str; wrap a single name as (name,)",
            "candidates",
            "tuple[str, ...]",
            "str",
        ),
        (
            {"vllm:prompt_tokens"},
            "candidates must be a tuple of metric names, got set",
            "candidates",
            "tuple[str, ...]",
            "set",
        ),
        (
            None,
            "candidates must be a tuple of metric names, got NoneType",
            "candidates",
            "tuple[str, ...]",
            "NoneType",
        ),
        (("a", 1), "candidates[i] must be a str, got int", "candidates[i]", "a str", "int"),
        (["a", None], "candidates[i] must be a str, got NoneType", "candidates[i]", "a str", "NoneType"),
    ],
)
@pytest.mark.parametrize("function", ["first_delta", "mean_from_histogram"])
def test_bad_candidates_are_exact(
    function: str, candidates: Any, message: str, argument: str, expected: str, actual: str
) -> None:
    """Candidates must be a tuple or list of str; a bare str gets a hint to wrap it, other types do not."""
    call = {"first_delta": first_delta, "mean_from_histogram": mean_from_histogram}[function]
    err = _type_error(lambda: call({"a": 1.0}, candidates))
    assert (str(err), err.argument, err.expected, err.actual) == (message, argument, expected, actual)


@pytest.mark.parametrize(
    ("args", "message", "argument", "expected", "actual"),
    [
        (
            ([("a", 1.0)], ("a",)),
            "delta must be a mapping of counter keys to floats, got list",
            "delta",
            "a mapping of counter keys to floats",
            "list",
        ),
        (({"a|sum": 1.0}, ("a",), 1), "part must be a str, got int", "part", "a str", "int"),
        (({"a|sum": 1.0}, ("a",), b"sum"), "part must be a str, got bytes", "part", "a str", "bytes"),
    ],
)
def test_first_delta_type_errors_are_exact(
    args: tuple[Any, ...], message: str, argument: str, expected: str, actual: str
) -> None:
    """A non-mapping delta or a non-str part is a ContractTypeError naming the argument and both types."""
    err = _type_error(lambda: first_delta(*args))
    assert (str(err), err.argument, err.expected, err.actual) == (message, argument, expected, actual)


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (float("nan"), "float nan"),
        (float("-inf"), "float -inf"),
        (True, "bool True"),
        ("1", "str '1'"),
        (None, "NoneType None"),
    ],
)
@pytest.mark.parametrize("part", [None, "sum"])
def test_first_delta_non_finite_value_is_exact(value: object, shown: str, part: str | None) -> None:
    """A present value that is not a finite number names the (shortened) delta key, its type and its value."""
    key = LONG if part is None else f"{LONG}|{part}"
    err = _snapshot_error(lambda: first_delta({key: value}, (LONG,), part))  # type: ignore[dict-item]
    rendered = shown.split(" ", 1)[1]
    assert str(err) == f"delta['{shorten(key, 200)}'] must be a finite number (not bool), got {shown}"
    assert (err.key, err.value) == (shorten(key, 200), rendered)


@pytest.mark.parametrize(
    ("count", "expected"),
    [(1.0, 7.0), (0.5, 14.0), (2.0, 3.5), (1e-9, 7e9), (0.0, None), (-0.5, None)],
)
def test_mean_from_histogram_count_boundary(count: float, expected: float | None) -> None:
    """Any count above 0 divides (one request gives its own length); a count <= 0 gives None."""
    delta: dict[str | tuple[str, int], float] = {"h|sum": 7.0, "h|count": count}
    assert mean_from_histogram(delta, ("h",)) == expected


# ---------------------------------------------------------------------------------------------------- step metrics

STEP_FUNCTIONS = [compute_engine_step_metrics, compute_spec_decode_metrics]


@pytest.mark.parametrize(("counters", "actual"), [([("a", 1.0)], "list"), ("a", "str"), (None, "NoneType")])
@pytest.mark.parametrize("argument", ["start_counters", "end_counters"])
@pytest.mark.parametrize("compute", STEP_FUNCTIONS)
def test_step_metrics_non_mapping_is_exact(
    compute: Callable[[Any, Any], dict[str, float]], argument: str, counters: object, actual: str
) -> None:
    """A snapshot that is not a mapping is a ContractTypeError naming the argument and the type received."""
    args = (counters, {}) if argument == "start_counters" else ({}, counters)
    err = _type_error(lambda: compute(*args))
    assert (str(err), err.argument, err.expected, err.actual) == (
        f"{argument} must be {STEP_COUNTERS}, got {actual}",
        argument,
        STEP_COUNTERS,
        actual,
    )


@pytest.mark.parametrize(
    ("key", "value", "shown_key", "shown_value"),
    [
        (("a", 0), 1.5, "('a', 0)", "1.5"),
        (1, 2, "1", "2"),
        (("a", sys.maxsize + 1), -1, f"('a', {sys.maxsize + 1})", "-1"),
        ((LONG, 0), 3.0, render((LONG, 0)), "3.0"),
        (("a", 1, 2), "x", "('a', 1, 2)", "'x'"),
    ],
)
@pytest.mark.parametrize("argument", ["start_counters", "end_counters"])
@pytest.mark.parametrize("compute", STEP_FUNCTIONS)
def test_step_metrics_bad_key_is_exact(
    compute: Callable[[Any, Any], dict[str, float]],
    argument: str,
    key: object,
    value: object,
    shown_key: str,
    shown_value: str,
) -> None:
    """A key that is neither a str nor (name, 1 <= position <= sys.maxsize) names the key and its value.

    The key is checked before the value, so a bad value under a bad key is reported as a bad key.
    """
    counters = {key: value}
    args = (counters, {}) if argument == "start_counters" else ({}, counters)
    err = _snapshot_error(lambda: compute(*args))
    assert (str(err), err.key, err.value) == (f"{argument} key {shown_key} {BAD_KEY}", shown_key, shown_value)


@pytest.mark.parametrize(
    ("name", "part", "argument", "actual"), [(1, "x", "name", "int"), ("vllm:a", None, "part", "NoneType")]
)
def test_encode_counter_key_rejects_non_str_arguments(
    name: Any, part: Any, argument: str, actual: str
) -> None:
    """A non-str name or part names that argument, the expected type and the type received."""
    with pytest.raises(ContractTypeError) as info:
        encode_counter_key(name, part)
    assert str(info.value) == f"{argument} must be a str, got {actual}"
    assert (info.value.argument, info.value.actual) == (argument, actual)
    assert_contract_error(info.value)


@pytest.mark.parametrize("name", ["", "vllm:a|count"])
def test_encode_counter_key_rejects_names_that_would_not_decode(name: str) -> None:
    """An empty name or one containing the separator is refused with the fix in the message."""
    with pytest.raises(CounterSnapshotError) as info:
        encode_counter_key(name, "sum")
    assert str(info.value) == (
        f"counter name must be non-empty and must not contain '|', got {name!r}; pass the bare metric name and put "
        "the component in part"
    )
    assert info.value.key == name
    assert_contract_error(info.value)


@pytest.mark.parametrize("value", [3, [("vllm:a", 1.0)], None])
def test_snapshot_values_that_are_not_a_mapping(value: Any) -> None:
    """A worker dict or a snapshot's ``values`` that is not a mapping is refused, naming where and the type."""
    actual = type(value).__name__
    with pytest.raises(ContractTypeError) as info:
        CounterSnapshot.from_worker_dict(value)
    assert str(info.value) == f"worker dict must be a mapping of counter keys to values, got {actual}"
    assert (info.value.argument, info.value.expected, info.value.actual) == (
        "d",
        "Mapping[str, float | Sequence[float]]",
        actual,
    )
    assert_contract_error(info.value)
    with pytest.raises(
        ValueError, match=rf"snapshot must be a mapping of counter keys to values, got {actual} "
    ):
        CounterSnapshot.model_validate({"values": value})


# ---------------------------------------------------------------------------------------------------- keys and values


@pytest.mark.parametrize(
    ("value", "actual"), [(None, "NoneType"), (b"vllm:prompt_tokens", "bytes"), (1, "int")]
)
def test_is_kept_non_str_is_exact(value: object, actual: str) -> None:
    """is_kept refuses a non-str, naming its argument 'metric_name' and the type received."""
    err = _type_error(lambda: is_kept(value))  # type: ignore[arg-type]
    assert (str(err), err.argument, err.expected, err.actual) == (
        f"metric_name must be a str, got {actual}",
        "metric_name",
        "a str",
        actual,
    )


@pytest.mark.parametrize(
    ("key", "kept"),
    [
        ("vllm:prompt_tokens|a|b", True),
        ("vllm:request_success|finished_reason=a|b|c", True),
        ("vllm:prompt_tokens_cached|a|b", False),
        ("vllm:num_requests_running|spec_decode|x", False),
    ],
)
def test_is_kept_looks_only_before_the_first_separator(key: str, kept: bool) -> None:
    """The base is the key up to the first '|', however many separators follow."""
    assert is_kept(key) is kept


class _IndexOnly:
    """An int in the library's sense (``__index__``) that is not a ``numbers.Real``, like a 0-d int tensor."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value


def test_counter_values_accept_index_objects() -> None:
    """A counter held in an object with ``__index__`` (not a numbers.Real) is accepted as its float value."""
    report: dict[str, Any] = {DRAFTS: _IndexOnly(3), PER_POS: [_IndexOnly(2)]}
    assert CounterSnapshot.from_worker_dict(report).values == {DRAFTS: 3.0, PER_POS: (2.0,)}
    assert aggregate_spec_decode_counters([report]) == {DRAFTS: 3.0, (PER_POS, 1): 2.0}


def test_counter_values_normalise_negative_zero() -> None:
    """-0.0 is a legal counter (it is not < 0) and is stored as +0.0, scalar or vector element."""
    values = CounterSnapshot.from_worker_dict({DRAFTS: -0.0, PER_POS: [-0.0]}).values
    scalar, vector = values[DRAFTS], values[PER_POS]
    assert isinstance(scalar, float)
    assert isinstance(vector, tuple)
    assert (scalar, vector) == (0.0, (0.0,))
    assert math.copysign(1.0, scalar) == 1.0
    assert math.copysign(1.0, vector[0]) == 1.0


WORKER_DICT = "worker dict"
"""The ``where`` of CounterSnapshot.from_worker_dict errors (its argument is ``d``)."""


def _from_worker_dict(report: dict[Any, Any]) -> object:
    return CounterSnapshot.from_worker_dict(report)


def _aggregate_second(report: dict[Any, Any]) -> object:
    return aggregate_spec_decode_counters([{DRAFTS: 1}, report])


KEY_SOURCES = [
    pytest.param(_from_worker_dict, WORKER_DICT, "d", id="from_worker_dict"),
    pytest.param(_aggregate_second, "worker_metrics[1]", "worker_metrics", id="aggregate"),
]


@pytest.mark.parametrize(
    ("key", "shown"),
    [(1, "int 1"), (None, "NoneType None"), ((DRAFTS, 1), f"tuple ('{DRAFTS}', 1)"), (b"k", "bytes b'k'")],
)
@pytest.mark.parametrize(("build", "where", "argument"), KEY_SOURCES)
def test_worker_report_non_str_key_is_exact(
    build: Callable[[dict[Any, Any]], object], where: str, argument: str, key: object, shown: str
) -> None:
    """A worker report key that is not a str is a ContractTypeError naming where, the argument and the type."""
    err = _type_error(lambda: build({key: 1}))
    actual = shown.split(" ", 1)[0]
    assert (str(err), err.argument, err.expected, err.actual) == (
        f"{where} has a key that is not a str: {shown}",
        argument,
        "str",
        actual,
    )


NOT_A_NUMBER = "must be an int or float (not bool), got"
NEGATIVE = "engine counters only grow, so the snapshot is corrupt or was not read from a counter"


@pytest.mark.parametrize(
    ("value", "message", "shown"),
    [
        (True, f"{NOT_A_NUMBER} bool True", "True"),
        ("1", f"{NOT_A_NUMBER} str '1'", "'1'"),
        (None, f"{NOT_A_NUMBER} NoneType None", "None"),
        (-1, f"must be finite and >= 0, got -1; {NEGATIVE}", "-1"),
        (float("nan"), f"must be finite and >= 0, got nan; {NEGATIVE}", "nan"),
        ([1, False], f"{NOT_A_NUMBER} bool False (at position 1)", "False"),
        ((2.0, 1, -0.5), f"must be finite and >= 0, got -0.5; {NEGATIVE} (at position 2)", "-0.5"),
        ([{"a": 1}], f"{NOT_A_NUMBER} dict {{'a': 1}} (at position 0)", "{'a': 1}"),
    ],
)
@pytest.mark.parametrize(("build", "where", "argument"), KEY_SOURCES)
def test_worker_report_bad_value_is_exact(
    build: Callable[[dict[Any, Any]], object],
    where: str,
    argument: str,
    value: object,
    message: str,
    shown: str,
) -> None:
    """A kept value that is not a finite number >= 0 names where, the shortened key, the type and the value."""
    err = _snapshot_error(lambda: build({LONG: value}))
    assert (str(err), err.key, err.value) == (f"{where} counter '{SHORT_LONG}' {message}", SHORT_LONG, shown)


KEPT_HINT = (
    "is not a kept counter key (a non-empty str naming a spec-decode family or one of ['vllm:prompt_tokens', "
    "'vllm:generation_tokens', 'vllm:request_prompt_tokens', 'vllm:request_generation_tokens', "
    "'vllm:request_success']); build snapshots with from_worker_dict to drop other keys"
)


@pytest.mark.parametrize(
    ("key", "shown", "key_attr"),
    [
        (1, "1", "1"),
        (0, "0", "0"),
        (None, "None", "None"),
        ("", "''", ""),
        ("vllm:num_requests_running", "'vllm:num_requests_running'", "vllm:num_requests_running"),
        ("x" * 300, render("x" * 300), shorten("x" * 300, 200)),
    ],
)
def test_direct_construction_unkept_key_is_exact(key: object, shown: str, key_attr: str) -> None:
    """Direct construction refuses every key that is not a kept str; the cause carries the key and the value."""
    with pytest.raises(ValidationError) as info:
        CounterSnapshot.model_validate({"values": {key: 7}})
    assert f"Value error, snapshot key {shown} {KEPT_HINT} [" in str(info.value)
    cause = info.value.errors()[0]["ctx"]["error"]
    assert isinstance(cause, CounterSnapshotError)
    assert (str(cause), cause.key, cause.value) == (f"snapshot key {shown} {KEPT_HINT}", key_attr, "7")


def test_direct_construction_bad_vector_names_the_snapshot() -> None:
    """A bad element of a vector in direct construction is reported for 'snapshot' with its position."""
    with pytest.raises(ValidationError) as info:
        CounterSnapshot(values={PER_POS: (1.0, -2.0)})
    cause = info.value.errors()[0]["ctx"]["error"]
    assert isinstance(cause, CounterSnapshotError)
    assert (
        str(cause)
        == f"snapshot counter '{PER_POS}' must be finite and >= 0, got -2.0; {NEGATIVE} (at position 1)"
    )
    assert (cause.key, cause.value) == (PER_POS, "-2.0")


# ---------------------------------------------------------------------------------------------------- aggregation

AGGREGATE_REPORT = "CounterSnapshot | Mapping[str, float | list[float]]"
CONFLICT = "in an earlier report; workers run different vLLM versions or the snapshot is corrupt"


@pytest.mark.parametrize(
    ("workers", "actual"),
    [("abc", "str"), ({DRAFTS: 1}, "dict"), (None, "NoneType"), (3, "int"), (b"ab", "bytes")],
)
def test_aggregate_non_sequence_is_exact(workers: Any, actual: str) -> None:
    """worker_metrics that is not a sequence (or is a str or bytes) names the argument and the type received."""
    err = _type_error(lambda: aggregate_spec_decode_counters(workers))
    assert (str(err), err.argument, err.expected, err.actual) == (
        f"worker_metrics must be a list of worker counter snapshots, got {actual}",
        "worker_metrics",
        "a list of worker counter snapshots",
        actual,
    )


@pytest.mark.parametrize(
    ("workers", "where", "actual"),
    [
        ([3], "worker_metrics[0]", "int"),
        ([[(DRAFTS, 1)]], "worker_metrics[0]", "list"),
        ([{DRAFTS: 1}, None], "worker_metrics[1]", "NoneType"),
        ((CounterSnapshot.from_worker_dict({DRAFTS: 1}), "x"), "worker_metrics[1]", "str"),
    ],
)
def test_aggregate_bad_report_is_exact(workers: Any, where: str, actual: str) -> None:
    """A report that is neither a CounterSnapshot nor a mapping names its index, the argument and its type."""
    err = _type_error(lambda: aggregate_spec_decode_counters(workers))
    assert (str(err), err.argument, err.expected, err.actual) == (
        f"{where} must be a CounterSnapshot or a mapping of counter names to values, got {actual}",
        "worker_metrics",
        AGGREGATE_REPORT,
        actual,
    )


@pytest.mark.parametrize(
    ("workers", "message", "value"),
    [
        (
            [{LONG: 1}, {LONG: [1, 2]}],
            f"worker_metrics[1] counter '{SHORT_LONG}' is a vector here but a scalar {CONFLICT}",
            "(1.0, 2.0)",
        ),
        (
            [{LONG: [1]}, {DRAFTS: 1}, {LONG: 2}],
            f"worker_metrics[2] counter '{SHORT_LONG}' is a scalar here but a vector {CONFLICT}",
            "2.0",
        ),
        (
            [CounterSnapshot.from_worker_dict({LONG: 5}), CounterSnapshot.from_worker_dict({LONG: ()})],
            f"worker_metrics[1] counter '{SHORT_LONG}' is a vector here but a scalar {CONFLICT}",
            "()",
        ),
    ],
)
def test_aggregate_scalar_vector_conflict_is_exact(workers: Any, message: str, value: str) -> None:
    """A name that is a scalar in one report and a vector in another names the report, key and later value."""
    err = _snapshot_error(lambda: aggregate_spec_decode_counters(workers))
    assert (str(err), err.key, err.value) == (message, SHORT_LONG, value)


@pytest.mark.parametrize(
    ("workers", "key"),
    [
        ([{LONG: 1.5e308}, {LONG: 1.5e308}], SHORT_LONG),
        ([{DRAFTS: 1.0e308}, {DRAFTS: 1.0e308}], DRAFTS),
        ([{PER_POS: [1, 1.5e308]}, {PER_POS: (0, 1.5e308)}], f"('{PER_POS}', 2)"),
    ],
)
def test_aggregate_overflow_is_exact(workers: Any, key: str) -> None:
    """A sum over workers that overflows names the aggregated key (a name or a 1-based position) and inf."""
    err = _snapshot_error(lambda: aggregate_spec_decode_counters(workers))
    assert str(err) == f"aggregated counter '{key}' overflows when summed (inf); {OVERFLOW}"
    assert (err.key, err.value) == (key, "inf")
