"""Exact messages and structured attributes of the rl_contracts.metrics error paths (SPEC §0.3, §0.4, §6).

Each bad input is checked for its class, its full message (the bounded wording of SPEC §0.4) and its structured
attributes (``key``/``value`` of ``CounterSnapshotError``, ``argument``/``expected``/``actual`` of
``ContractTypeError``), plus the boundaries next to those errors.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from rl_contracts.errors import ContractTypeError, CounterSnapshotError, render, shorten
from rl_contracts.metrics import (
    SPEC_DECODE_ACCEPTED_PER_POS,
    CounterSnapshot,
    _parse_prometheus,
    compute_engine_step_metrics,
    compute_spec_decode_metrics,
    encode_counter_key,
    first_delta,
    mean_from_histogram,
)
from rl_contracts.testing import assert_contract_error

DATA = Path(__file__).parent / "data"
NS = SimpleNamespace
PER_POS = SPEC_DECODE_ACCEPTED_PER_POS
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
    snapshot, count = _parse_prometheus(text)
    assert count == families
    assert snapshot == CounterSnapshot.from_prometheus_text(text)


@pytest.mark.parametrize("page", SERVER_PAGES)
def test_parse_prometheus_counts_the_families_of_a_recorded_page(page: str) -> None:
    """On a real vLLM /metrics page the count is the number of '# TYPE vllm:' declarations (dozens)."""
    text = (DATA / page).read_text()
    declared = sum(line.startswith("# TYPE vllm:") for line in text.splitlines())
    assert declared > 10
    assert _parse_prometheus(text)[1] == declared


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
