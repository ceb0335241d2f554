"""Messages and structured attributes of the rl_contracts.metrics error paths (SPEC §0.3, §0.4, §6).

Each bad input is checked for its class, the key fragments of its message (where the value was found, the key
shortened to 200 characters, the value, the position) and its structured attributes (``key``/``value`` of
``CounterSnapshotError``, ``argument``/``expected``/``actual`` of ``ContractTypeError``), plus the boundaries next to
those errors.  Whole messages are pinned only where SPEC quotes them ("could not parse Prometheus text: ...").
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from rl_contracts.errors import ContractError, ContractTypeError, CounterSnapshotError
from rl_contracts.metrics import (
    KEPT_COUNTER_NAMES,
    SPEC_DECODE_ACCEPTED_PER_POS,
    SPEC_DECODE_NUM_DRAFTS,
    AggregatedCounters,
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
SHORT_LONG = LONG[:197] + "..."
"""``LONG`` as SPEC §0.4 shortens it to 200 characters."""
PARSE_ERROR = "could not parse Prometheus text: "
"""The prefix SPEC §6.3 quotes for a page that cannot be read."""


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


def _says(err: ContractError, *fragments: str) -> None:
    """Every fragment appears in the message."""
    for fragment in fragments:
        assert fragment in str(err), (fragment, str(err))


def _names_argument(err: ContractTypeError, argument: str, actual: str) -> None:
    """The structured attributes name the argument, what was expected and the type received; the message names
    the argument and the type."""
    assert (err.argument, err.actual) == (argument, actual)
    assert isinstance(err.expected, str)
    assert err.expected
    _says(err, argument, actual)


# ---------------------------------------------------------------------------------------------------- vLLM objects


@pytest.mark.parametrize(
    ("objects", "fragments", "key", "value"),
    [
        (
            [NS(name="vllm:prompt_tokens", labels={}, value=1), NS(name=3, labels={}, value=1)],
            ["metrics[1]", "name", "int 3"],
            "3",
            None,
        ),
        (
            [NS(name="vllm:prompt_tokens", labels={}, value=1), NS(name="vllm:prompt_tokens", value=1)],
            ["metrics[1]", "'vllm:prompt_tokens'", "labels", "NoneType"],
            "vllm:prompt_tokens",
            "None",
        ),
        (
            [NS(name=LONG, labels=["engine"], value=1)],
            ["metrics[0]", f"'{SHORT_LONG}'", "labels", "list"],
            SHORT_LONG,
            "['engine']",
        ),
        (
            [NS(name=LONG, labels={"finished_reason": b"stop"}, value=1)],
            ["metrics[0]", f"'{SHORT_LONG}'", "finished_reason", "b'stop'"],
            SHORT_LONG,
            "b'stop'",
        ),
        (
            [NS(name=LONG, labels={}, values="12")],
            ["metrics[0]", f"'{SHORT_LONG}'", "str"],
            SHORT_LONG,
            "'12'",
        ),
        ([NS(name=LONG, labels={}, values=7)], ["metrics[0]", f"'{SHORT_LONG}'", "int"], SHORT_LONG, "7"),
        (
            [NS(name=LONG, labels={})],
            ["metrics[0]", f"'{SHORT_LONG}'", "SimpleNamespace", "'values'", "'value'", "'count'", "'sum'"],
            SHORT_LONG,
            None,
        ),
        (
            [NS(name=PER_POS, labels={}, values=[1, -1])],
            [f"'{PER_POS}'", ">= 0", "-1", "position 1"],
            PER_POS,
            "-1",
        ),
        (
            [NS(name="vllm:prompt_tokens", labels={}, value=-1)],
            ["'vllm:prompt_tokens'", ">= 0", "-1"],
            "vllm:prompt_tokens",
            "-1",
        ),
        (
            [NS(name=LONG, labels={}, value=1), NS(name=LONG, labels={}, values=[1])],
            [f"'{SHORT_LONG}'", "scalar", "vector"],
            SHORT_LONG,
            None,
        ),
        (
            [NS(name=LONG, labels={}, values=[1]), NS(name=LONG, labels={"engine": "1"}, value=1)],
            [f"'{SHORT_LONG}'", "scalar", "vector"],
            SHORT_LONG,
            None,
        ),
        (
            [NS(name=LONG, labels={"engine": str(e)}, value=1.5e308) for e in range(2)],
            [f"'{SHORT_LONG}'", "overflows", "inf"],
            SHORT_LONG,
            "inf",
        ),
        (
            [NS(name=LONG, labels={"engine": str(e)}, values=[1, 1.5e308]) for e in range(2)],
            [f"'{SHORT_LONG}'", "overflows", "inf"],
            SHORT_LONG,
            "inf",
        ),
    ],
)
def test_from_vllm_metrics_errors_name_the_object_key_and_value(
    objects: list[SimpleNamespace], fragments: list[str], key: str, value: str | None
) -> None:
    """Bad names, labels and values, scalar/vector conflicts and overflowing sums name the object index, the
    shortened key and the offending value."""
    err = _snapshot_error(lambda: CounterSnapshot.from_vllm_metrics(objects))
    _says(err, *fragments)
    assert (err.key, err.value) == (key, value)
    assert LONG not in str(err)


@pytest.mark.parametrize("metrics", [3, None, "vllm:prompt_tokens", {"vllm:prompt_tokens": 1}])
def test_from_vllm_metrics_type_error_names_the_argument(metrics: object) -> None:
    """An argument that is not a collection of objects names 'metrics' and the type received."""
    err = _type_error(lambda: CounterSnapshot.from_vllm_metrics(metrics))  # type: ignore[arg-type]
    _names_argument(err, "metrics", type(metrics).__name__)


@pytest.mark.parametrize(
    ("array", "dtype"), [(np.array(1), "int64"), (np.array(2.5), "float64"), (np.array(True), "bool")]
)
def test_zero_dimensional_arrays_are_type_errors(array: np.ndarray[Any, Any], dtype: str) -> None:
    """A 0-d array is iterable by type but not by value: it is a ContractTypeError, never numpy's bare TypeError
    "iteration over a 0-d array" (regression)."""
    actual = f"ndarray with dtype {dtype} and 0 dimensions"
    _names_argument(_type_error(lambda: CounterSnapshot.from_vllm_metrics(array)), "metrics", actual)
    _names_argument(_type_error(lambda: aggregate_spec_decode_counters(array)), "worker_metrics", actual)  # type: ignore[arg-type]


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


@pytest.mark.parametrize(("length", "cut"), [(200, False), (201, True)])
def test_key_shortening_boundary(length: int, cut: bool) -> None:
    """A key of exactly 200 characters is shown whole; one of 201 is cut to 197 characters and '...'."""
    name = ("vllm:spec_decode_" + "k" * length)[:length]
    key = name[:197] + "..." if cut else name
    objects = [NS(name=name, labels={}, value=1), NS(name=name, labels={}, values=[1])]
    err = _snapshot_error(lambda: CounterSnapshot.from_vllm_metrics(objects))
    _says(err, f"'{key}'")
    assert (err.key, err.value) == (key, None)
    assert len(key) == 200
    assert (name in str(err)) is not cut


# ---------------------------------------------------------------------------------------------------- Prometheus


@pytest.mark.parametrize(
    ("text", "actual"), [(b"vllm:x 1", "bytes"), (None, "NoneType"), (["vllm:x 1"], "list")]
)
@pytest.mark.parametrize("parse", [CounterSnapshot.from_prometheus_text, parse_prometheus_text])
def test_prometheus_text_that_is_not_a_str(parse: Callable[[str], object], text: object, actual: str) -> None:
    """Text that is not a str is a ContractTypeError naming the argument 'text' and the type received."""
    _names_argument(_type_error(lambda: parse(text)), "text", actual)  # type: ignore[arg-type]


def _counter_page(family: str, *samples: str) -> str:
    """A Prometheus page with one counter family and the given ``labels value`` sample lines."""
    return f"# TYPE {family}_total counter\n" + "".join(f"{family}_total{s}\n" for s in samples)


@pytest.mark.parametrize(
    ("text", "fragments", "key", "value"),
    [
        (
            _counter_page(
                "vllm:prompt_tokens", '{engine="0",model_name="m"} 1', '{model_name="m",engine="0"} 2.5'
            ),
            ["vllm:prompt_tokens_total", "{'model_name': 'm', 'engine': '0'}"],
            "vllm:prompt_tokens",
            "2.5",
        ),
        (
            _counter_page(PER_POS, '{position="1"} 1', '{position="1"} 7'),
            [f"{PER_POS}_total", "{'position': '1'}"],
            PER_POS,
            "7",
        ),
        (
            "# TYPE vllm:request_prompt_tokens histogram\n"
            "vllm:request_prompt_tokens_sum 1\nvllm:request_prompt_tokens_sum 3\n",
            ["vllm:request_prompt_tokens_sum", "{}"],
            "vllm:request_prompt_tokens",
            "3",
        ),
        (
            _counter_page(LONG, '{engine="0"} 1', '{engine="0"} 2.5'),
            [(LONG + "_total")[:197] + "...", "{'engine': '0'}"],
            SHORT_LONG,
            "2.5",
        ),
        (
            "# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total 1\n"
            "# TYPE vllm:prompt_tokens counter\nvllm:prompt_tokens_total 2\n",
            ["vllm:prompt_tokens_total", "{}"],
            "vllm:prompt_tokens",
            "2",
        ),
    ],
)
def test_from_prometheus_text_duplicate_sample(text: str, fragments: list[str], key: str, value: str) -> None:
    """A series set twice (same labels in any order, or once per spelling of the family) is a parse error naming
    the sample, its labels, the family and the later value."""
    err = _snapshot_error(lambda: CounterSnapshot.from_prometheus_text(text))
    assert str(err).startswith(PARSE_ERROR + "duplicate sample")
    _says(err, *fragments)
    assert (err.key, err.value) == (key, value)


@pytest.mark.parametrize(("length", "cut"), [(200, False), (201, True)])
def test_from_prometheus_text_duplicate_key_shortening_boundary(length: int, cut: bool) -> None:
    """The duplicate-sample key is the family name: whole at 200 characters, cut to 197 and '...' at 201."""
    family = ("vllm:spec_decode_" + "k" * length)[:length]
    err = _snapshot_error(lambda: CounterSnapshot.from_prometheus_text(_counter_page(family, " 1", " 2")))
    assert (err.key, err.value) == (family[:197] + "..." if cut else family, "2")
    _says(err, (family + "_total")[:197] + "...")


@pytest.mark.parametrize(
    ("family", "kind", "sample"),
    [
        ("vllm:spec_decode|x", "counter", "_total"),
        ("vllm:request_prompt_tokens|x", "histogram", "_count"),
        (f"{LONG}|x", "counter", "_total"),
    ],
)
def test_from_prometheus_text_bad_family_name(family: str, kind: str, sample: str) -> None:
    """A counter or histogram family whose (quoted) name holds the key separator is named as a Prometheus family."""
    text = f'# TYPE "{family}" {kind}\n{{"{family}{sample}"}} 1\n'
    err = _snapshot_error(lambda: CounterSnapshot.from_prometheus_text(text))
    shown = family if len(family) <= 200 else family[:197] + "..."
    _says(err, "Prometheus family", "'|'", shown if len(family) < 190 else repr(family)[:197])
    assert (err.key, err.value) == (shown, None)


LONG_REASON = "r" * 300
LONG_POS_KEY = f"{PER_POS}|finished_reason={LONG_REASON}"


@pytest.mark.parametrize(
    ("labels", "value", "fragments", "key", "err_value"),
    [
        (
            f'finished_reason="{LONG_REASON}"',
            "1",
            ["'position'", "4095", "None"],
            LONG_POS_KEY[:197] + "...",
            "None",
        ),
        ('position="4096"', "1", ["'position'", "4095", "'4096'"], PER_POS, "'4096'"),
        ('position="1"', "-1", [">= 0", "-1"], PER_POS, "-1"),
    ],
)
def test_from_prometheus_text_position_errors(
    labels: str, value: str, fragments: list[str], key: str, err_value: str
) -> None:
    """A per-position sample with a bad position or value names the shortened key and the raw value."""
    text = f"# TYPE {PER_POS}_total counter\n{PER_POS}_total{{{labels}}} {value}\n"
    err = _snapshot_error(lambda: CounterSnapshot.from_prometheus_text(text))
    _says(err, "Prometheus", f"'{key}'", *fragments)
    assert (err.key, err.value) == (key, err_value)


@pytest.mark.parametrize(
    "samples",
    [
        [f'{PER_POS}_total{{engine="{e}",position="2"}} 1.5e308' for e in range(2)],
        [f'vllm:prompt_tokens_total{{engine="{e}"}} 1.5e308' for e in range(2)],
    ],
)
def test_from_prometheus_text_overflow(samples: list[str]) -> None:
    """Engines whose sum overflows (a scalar, or one position of the vector) are reported with key and value."""
    family = samples[0].split("_total", 1)[0]
    text = f"# TYPE {family}_total counter\n" + "\n".join(samples) + "\n"
    err = _snapshot_error(lambda: CounterSnapshot.from_prometheus_text(text))
    _says(err, "Prometheus", f"'{family}'", "overflows", "inf")
    assert (err.key, err.value) == (family, "inf")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        # prometheus_client's OpenMetrics parser refuses what its text parser accepts: proof of the parser used.
        ("# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total 1\n# EOF\n", "Clashing name"),
        ("# TYPE vllm:prompt_tokens counter\nvllm:prompt_tokens_total NaN\n# EOF", "cannot be NaN"),
        ("# TYPE vllm:prompt_tokens counter\nvllm:prompt_tokens_total 1\n# EOF\n\n", "after # EOF"),
    ],
)
def test_openmetrics_pages_are_read_by_the_openmetrics_parser(text: str, reason: str) -> None:
    """A page whose last line is '# EOF' is parsed as OpenMetrics, so OpenMetrics' own rules reject it."""
    err = _snapshot_error(lambda: CounterSnapshot.from_prometheus_text(text))
    assert str(err).startswith(PARSE_ERROR)
    _says(err, reason)
    assert (err.key, err.value) == (None, None)


NATIVE = (
    "{count:3,sum:5.0,schema:1,zero_threshold:0.001,zero_count:0,positive_spans:[0:1],positive_deltas:[3]}"
)


def test_a_kept_native_histogram_is_refused() -> None:
    """A kept histogram in native form has no _count/_sum samples to read, so it is an error, never dropped;
    an unkept one is ignored like any unkept family."""
    kept = f"# TYPE vllm:request_prompt_tokens histogram\nvllm:request_prompt_tokens {NATIVE}\n# EOF\n"
    err = _snapshot_error(lambda: CounterSnapshot.from_prometheus_text(kept))
    _says(err, "'vllm:request_prompt_tokens'", "native histogram")
    assert (err.key, err.value) == ("vllm:request_prompt_tokens", None)
    unkept = kept.replace("vllm:request_prompt_tokens", "vllm:e2e_request_latency_seconds")
    assert CounterSnapshot.from_prometheus_text(unkept).values == {}


SERVER_PAGES = ["vllm_server_metrics_sample.prom", "server_metrics_after_two_chats.prom"]


@pytest.mark.parametrize(
    ("text", "families"),
    [
        ("", ()),
        ("# TYPE x counter\nx_total 1\n# TYPE spec_decode_y gauge\nspec_decode_y 2\n", ()),
        (_counter_page("vllm:prompt_tokens", " 1"), ("vllm:prompt_tokens",)),
        (
            "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 0\n",
            ("vllm:num_requests_running",),
        ),
        (
            "# TYPE vllm:a gauge\nvllm:a 1\n# TYPE vllm:b_total counter\nvllm:b_total 1\n"
            "# TYPE other_total counter\nother_total 1\nvllm:c 3\n"
            "# TYPE vllm:d summary\nvllm:d_count 1\nvllm:d_sum 1\n",
            ("vllm:a", "vllm:b", "vllm:c", "vllm:d"),
        ),
        (
            "# TYPE vllm:b counter\nvllm:b_total 1\nvllm:b_created 1\n# TYPE vllm:a gauge\nvllm:a 1\n",
            ("vllm:b", "vllm:a"),
        ),
        ("# TYPE vllm:b counter\nvllm:b_total 1\nvllm:b_created 1\n# EOF\n", ("vllm:b",)),
    ],
)
def test_parse_prometheus_text_names_the_vllm_families(text: str, families: tuple[str, ...]) -> None:
    """Every vllm: family is named once, in page order, kept or not and of any type (the split-off untyped half
    of an OpenMetrics-spelled counter is not a family); the CLI refuses a page that names none."""
    page = parse_prometheus_text(text)
    assert page.vllm_families == families
    assert page.snapshot == CounterSnapshot.from_prometheus_text(text)


@pytest.mark.parametrize("page", SERVER_PAGES)
def test_parse_prometheus_text_names_the_families_of_a_recorded_page(page: str) -> None:
    """On a real vLLM /metrics page the families are the '# TYPE vllm:' declarations (dozens), a counter's
    without its '_total'."""
    text = (DATA / page).read_text()
    declared = [line.split()[2:4] for line in text.splitlines() if line.startswith("# TYPE vllm:")]
    assert len(declared) > 10
    families = tuple(name.removesuffix("_total") if kind == "counter" else name for name, kind in declared)
    assert parse_prometheus_text(text).vllm_families == families


# ---------------------------------------------------------------------------------------------------- deltas


@pytest.mark.parametrize(
    ("candidates", "argument", "actual"),
    [
        ({"vllm:prompt_tokens"}, "candidates", "set"),
        (None, "candidates", "NoneType"),
        (("a", 1), "candidates[i]", "int"),
        (["a", None], "candidates[i]", "NoneType"),
    ],
)
@pytest.mark.parametrize("function", [first_delta, mean_from_histogram])
def test_bad_candidates(function: Callable[..., object], candidates: Any, argument: str, actual: str) -> None:
    """Candidates must be a tuple or list of str; the error names the argument and the type received."""
    err = _type_error(lambda: function({"a": 1.0}, candidates))
    _names_argument(err, argument, actual)
    assert "(name,)" not in str(err)


@pytest.mark.parametrize("function", [first_delta, mean_from_histogram])
def test_a_bare_str_candidate_is_told_to_wrap_it(function: Callable[..., object]) -> None:
    """A bare str (which would iterate its characters) is refused with the fix: wrap it as (name,)."""
    err = _type_error(lambda: function({"a": 1.0}, "vllm:prompt_tokens"))
    _names_argument(err, "candidates", "str")
    _says(err, "(name,)")


@pytest.mark.parametrize(
    ("args", "argument", "actual"),
    [
        (([("a", 1.0)], ("a",)), "delta", "list"),
        (({"a|sum": 1.0}, ("a",), 1), "part", "int"),
        (({"a|sum": 1.0}, ("a",), b"sum"), "part", "bytes"),
    ],
)
def test_first_delta_type_errors(args: tuple[Any, ...], argument: str, actual: str) -> None:
    """A non-mapping delta or a non-str part is a ContractTypeError naming the argument and both types."""
    _names_argument(_type_error(lambda: first_delta(*args)), argument, actual)


@pytest.mark.parametrize(
    ("value", "type_name", "shown"),
    [
        (True, "bool", "True"),
        ("1", "str", "'1'"),
        (None, "NoneType", "None"),
    ],
)
@pytest.mark.parametrize("part", [None, "sum"])
def test_first_delta_non_number_value(value: object, type_name: str, shown: str, part: str | None) -> None:
    """A present value that is not a number names the (shortened) delta key, its type and its value."""
    key = LONG if part is None else f"{LONG}|{part}"
    err = _snapshot_error(lambda: first_delta({key: value}, (LONG,), part))  # type: ignore[dict-item]
    _says(err, f"delta['{SHORT_LONG}']", f"{type_name} {shown}")
    assert (err.key, err.value) == (SHORT_LONG, shown)


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
def test_step_metrics_non_mapping(
    compute: Callable[[Any, Any], dict[str, float]], argument: str, counters: object, actual: str
) -> None:
    """A snapshot that is not a mapping is a ContractTypeError naming the argument and the type received."""
    args = (counters, {}) if argument == "start_counters" else ({}, counters)
    err = _type_error(lambda: compute(*args))
    _names_argument(err, argument, actual)
    _says(err, "aggregate_spec_decode_counters")


@pytest.mark.parametrize("compute", STEP_FUNCTIONS)
@pytest.mark.parametrize("argument", ["start_counters", "end_counters"])
def test_step_metrics_bad_value_names_the_argument(
    compute: Callable[[AggregatedCounters, AggregatedCounters], dict[str, float]], argument: str
) -> None:
    """A bad value in either snapshot is reported under that argument's name, with the key and the value."""
    bad: AggregatedCounters = {"x": -1}
    args = (bad, {}) if argument == "start_counters" else ({}, bad)
    err = _snapshot_error(lambda: compute(*args))
    _says(err, argument, "'x'", ">= 0", "-1")
    assert (err.key, err.value) == ("x", "-1")


@pytest.mark.parametrize(
    ("key", "value", "shown_key", "shown_value"),
    [
        (("a", 0), 1.5, "('a', 0)", "1.5"),
        (1, 2, "1", "2"),
        (("a", sys.maxsize + 1), -1, f"('a', {sys.maxsize + 1})", "-1"),
        ((LONG, 0), 3.0, repr((LONG, 0))[:197] + "...", "3.0"),
        (("a", 1, 2), "x", "('a', 1, 2)", "'x'"),
    ],
)
@pytest.mark.parametrize("argument", ["start_counters", "end_counters"])
@pytest.mark.parametrize("compute", STEP_FUNCTIONS)
def test_step_metrics_bad_key(
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
    _says(err, argument, shown_key, "position >= 1")
    assert (err.key, err.value) == (shown_key, shown_value)


# ---------------------------------------------------------------------------------------------------- keys and values


@pytest.mark.parametrize(
    ("name", "part", "argument", "actual"), [(1, "x", "name", "int"), ("vllm:a", None, "part", "NoneType")]
)
def test_encode_counter_key_rejects_non_str_arguments(
    name: Any, part: Any, argument: str, actual: str
) -> None:
    """A non-str name or part names that argument, the expected type and the type received."""
    _names_argument(_type_error(lambda: encode_counter_key(name, part)), argument, actual)


@pytest.mark.parametrize("name", ["", "vllm:a|count"])
def test_encode_counter_key_rejects_names_that_would_not_decode(name: str) -> None:
    """An empty name or one containing the separator is refused, naming the name and the fix (put it in part)."""
    err = _snapshot_error(lambda: encode_counter_key(name, "sum"))
    _says(err, repr(name), "'|'", "part")
    assert err.key == name


@pytest.mark.parametrize(
    ("value", "actual"), [(None, "NoneType"), (b"vllm:prompt_tokens", "bytes"), (1, "int")]
)
def test_is_kept_non_str(value: object, actual: str) -> None:
    """is_kept refuses a non-str, naming its argument 'metric_name' and the type received."""
    _names_argument(_type_error(lambda: is_kept(value)), "metric_name", actual)  # type: ignore[arg-type]


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


@pytest.mark.parametrize("value", [3, [("vllm:a", 1.0)], None])
def test_snapshot_values_that_are_not_a_mapping(value: Any) -> None:
    """A worker dict or a snapshot's ``values`` that is not a mapping is refused, naming where and the type."""
    actual = type(value).__name__
    err = _type_error(lambda: CounterSnapshot.from_worker_dict(value))
    _names_argument(err, "d", actual)
    _says(err, "worker dict")
    with pytest.raises(ValidationError) as info:
        CounterSnapshot.model_validate({"values": value})
    assert "snapshot" in str(info.value)
    assert actual in str(info.value)


def _from_worker_dict(report: dict[Any, Any]) -> object:
    return CounterSnapshot.from_worker_dict(report)


def _aggregate_second(report: dict[Any, Any]) -> object:
    return aggregate_spec_decode_counters([{DRAFTS: 1}, report])


KEY_SOURCES = [
    pytest.param(_from_worker_dict, "worker dict", "d", id="from_worker_dict"),
    pytest.param(_aggregate_second, "worker_metrics[1]", "worker_metrics", id="aggregate"),
]


@pytest.mark.parametrize(
    ("key", "actual", "shown"),
    [
        (1, "int", "1"),
        (None, "NoneType", "None"),
        ((DRAFTS, 1), "tuple", f"('{DRAFTS}', 1)"),
        (b"k", "bytes", "b'k'"),
    ],
)
@pytest.mark.parametrize(("build", "where", "argument"), KEY_SOURCES)
def test_worker_report_non_str_key(
    build: Callable[[dict[Any, Any]], object], where: str, argument: str, key: object, actual: str, shown: str
) -> None:
    """A worker report key that is not a str is a ContractTypeError naming where, the argument and the key."""
    err = _type_error(lambda: build({key: 1}))
    _names_argument(err, argument, actual)
    _says(err, where, shown)


@pytest.mark.parametrize(
    ("value", "fragments", "shown"),
    [
        (True, ["bool True", "not bool"], "True"),
        ("1", ["str '1'"], "'1'"),
        (None, ["NoneType None"], "None"),
        (-1, [">= 0", "-1"], "-1"),
        (float("nan"), ["finite", "nan"], "nan"),
        ([1, False], ["bool False", "position 1"], "False"),
        ((2.0, 1, -0.5), [">= 0", "-0.5", "position 2"], "-0.5"),
        ([{"a": 1}], ["dict {'a': 1}", "position 0"], "{'a': 1}"),
    ],
)
@pytest.mark.parametrize(("build", "where", "argument"), KEY_SOURCES)
def test_worker_report_bad_value(
    build: Callable[[dict[Any, Any]], object],
    where: str,
    argument: str,
    value: object,
    fragments: list[str],
    shown: str,
) -> None:
    """A kept value that is not a finite number >= 0 names where, the shortened key, the type and the value."""
    err = _snapshot_error(lambda: build({LONG: value}))
    _says(err, where, f"'{SHORT_LONG}'", *fragments)
    assert (err.key, err.value) == (SHORT_LONG, shown)


@pytest.mark.parametrize(
    ("key", "shown", "key_attr"),
    [
        (1, "1", "1"),
        (0, "0", "0"),
        (None, "None", "None"),
        ("", "''", ""),
        ("vllm:num_requests_running", "'vllm:num_requests_running'", "vllm:num_requests_running"),
        ("x" * 300, repr("x" * 300)[:197] + "...", "x" * 197 + "..."),
    ],
)
def test_direct_construction_unkept_key(key: object, shown: str, key_attr: str) -> None:
    """Direct construction refuses every key that is not a kept str, naming the key, the kept names and the fix
    (from_worker_dict drops other keys); the cause carries the key and the value."""
    with pytest.raises(ValidationError) as info:
        CounterSnapshot.model_validate({"values": {key: 7}})
    cause = info.value.errors()[0]["ctx"]["error"]
    assert isinstance(cause, CounterSnapshotError)
    _says(cause, f"snapshot key {shown}", str(list(KEPT_COUNTER_NAMES)), "from_worker_dict")
    assert str(cause) in str(info.value)
    assert (cause.key, cause.value) == (key_attr, "7")


def test_direct_construction_bad_vector_names_the_snapshot() -> None:
    """A bad element of a vector in direct construction is reported for 'snapshot' with its position."""
    with pytest.raises(ValidationError) as info:
        CounterSnapshot(values={PER_POS: (1.0, -2.0)})
    cause = info.value.errors()[0]["ctx"]["error"]
    assert isinstance(cause, CounterSnapshotError)
    _says(cause, f"snapshot counter '{PER_POS}'", ">= 0", "-2.0", "position 1")
    assert (cause.key, cause.value) == (PER_POS, "-2.0")


# ---------------------------------------------------------------------------------------------------- aggregation


@pytest.mark.parametrize(
    ("workers", "actual"),
    [("abc", "str"), ({DRAFTS: 1}, "dict"), (None, "NoneType"), (3, "int"), (b"ab", "bytes")],
)
def test_aggregate_non_sequence(workers: Any, actual: str) -> None:
    """worker_metrics that is not a sequence (or is a str or bytes) names the argument and the type received."""
    _names_argument(_type_error(lambda: aggregate_spec_decode_counters(workers)), "worker_metrics", actual)


@pytest.mark.parametrize(
    ("workers", "where", "actual"),
    [
        ([3], "worker_metrics[0]", "int"),
        ([[(DRAFTS, 1)]], "worker_metrics[0]", "list"),
        ([{DRAFTS: 1}, None], "worker_metrics[1]", "NoneType"),
        ((CounterSnapshot.from_worker_dict({DRAFTS: 1}), "x"), "worker_metrics[1]", "str"),
    ],
)
def test_aggregate_bad_report(workers: Any, where: str, actual: str) -> None:
    """A report that is neither a CounterSnapshot nor a mapping names its index, the argument and its type."""
    err = _type_error(lambda: aggregate_spec_decode_counters(workers))
    _names_argument(err, "worker_metrics", actual)
    _says(err, where, "CounterSnapshot")


@pytest.mark.parametrize(
    ("workers", "fragments", "value"),
    [
        ([{LONG: 1}, {LONG: [1, 2]}], ["worker_metrics[1]", "a vector here but a scalar"], "(1.0, 2.0)"),
        ([{LONG: [1]}, {DRAFTS: 1}, {LONG: 2}], ["worker_metrics[2]", "a scalar here but a vector"], "2.0"),
        (
            [CounterSnapshot.from_worker_dict({LONG: 5}), CounterSnapshot.from_worker_dict({LONG: ()})],
            ["worker_metrics[1]", "a vector here but a scalar"],
            "()",
        ),
    ],
)
def test_aggregate_scalar_vector_conflict(workers: Any, fragments: list[str], value: str) -> None:
    """A name that is a scalar in one report and a vector in another names the report, key and later value."""
    err = _snapshot_error(lambda: aggregate_spec_decode_counters(workers))
    _says(err, f"'{SHORT_LONG}'", *fragments)
    assert (err.key, err.value) == (SHORT_LONG, value)


@pytest.mark.parametrize(
    ("workers", "key"),
    [
        ([{LONG: 1.5e308}, {LONG: 1.5e308}], SHORT_LONG),
        ([{DRAFTS: 1.0e308}, {DRAFTS: 1.0e308}], DRAFTS),
        ([{PER_POS: [1, 1.5e308]}, {PER_POS: (0, 1.5e308)}], f"('{PER_POS}', 2)"),
    ],
)
def test_aggregate_overflow(workers: Any, key: str) -> None:
    """A sum over workers that overflows names the aggregated key (a name or a 1-based position) and inf."""
    err = _snapshot_error(lambda: aggregate_spec_decode_counters(workers))
    _says(err, "aggregated", f"'{key}'", "overflows", "inf")
    assert (err.key, err.value) == (key, "inf")
