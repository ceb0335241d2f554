"""Unit tests of rl_contracts.metrics: SPEC §6 worked examples, recorded vLLM outputs and every error path."""

from __future__ import annotations

import json
import math
import pickle
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pydantic
import pytest

from rl_contracts.errors import ContractError, ContractTypeError, CounterSnapshotError
from rl_contracts.metrics import (
    COUNTER_KEY_SEP,
    FINISHED_REASON_LABEL,
    GENERATION_LENGTH_HISTOGRAMS,
    GENERATION_TOKEN_COUNTERS,
    HISTOGRAM_COUNT_PART,
    HISTOGRAM_SUM_PART,
    KEPT_COUNTER_NAMES,
    MAX_SPEC_DECODE_POSITIONS,
    OK_FINISH_REASONS,
    PROMPT_LENGTH_HISTOGRAMS,
    PROMPT_TOKEN_COUNTERS,
    REQUEST_SUCCESS_COUNTERS,
    SPEC_DECODE_ACCEPTED_PER_POS,
    SPEC_DECODE_NUM_ACCEPTED_TOKENS,
    SPEC_DECODE_NUM_DRAFT_TOKENS,
    SPEC_DECODE_NUM_DRAFTS,
    AggregatedCounters,
    CounterSnapshot,
    EngineIdentity,
    PrometheusPage,
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
PER_POS = SPEC_DECODE_ACCEPTED_PER_POS
DRAFTS, DRAFT_TOKENS, ACCEPTED = (
    SPEC_DECODE_NUM_DRAFTS,
    SPEC_DECODE_NUM_DRAFT_TOKENS,
    SPEC_DECODE_NUM_ACCEPTED_TOKENS,
)
NS = SimpleNamespace


def _recorded_objects(which: str) -> list[SimpleNamespace]:
    """Rebuild the recorded ``LLM.get_metrics()`` objects as SimpleNamespace stand-ins with vLLM's attributes."""
    records = json.loads((DATA / "get_metrics_before_after.json").read_text())[which]
    attributes = {
        "Counter": ("value",),
        "Gauge": ("value",),
        "Histogram": ("count", "sum", "buckets"),
        "Vector": ("values",),
    }
    return [
        NS(name=r["name"], labels=r["labels"], **{a: r[a] for a in attributes[r["type"]]}) for r in records
    ]


# ---------------------------------------------------------------------------------------------------- names


def test_names_have_the_spec_values() -> None:
    """The §6.1 constants carry the SPEC's values and order."""
    assert (COUNTER_KEY_SEP, HISTOGRAM_SUM_PART, HISTOGRAM_COUNT_PART) == ("|", "sum", "count")
    assert FINISHED_REASON_LABEL == "finished_reason"
    assert PROMPT_TOKEN_COUNTERS == ("vllm:prompt_tokens",)
    assert GENERATION_TOKEN_COUNTERS == ("vllm:generation_tokens",)
    assert PROMPT_LENGTH_HISTOGRAMS == ("vllm:request_prompt_tokens",)
    assert GENERATION_LENGTH_HISTOGRAMS == ("vllm:request_generation_tokens",)
    assert REQUEST_SUCCESS_COUNTERS == ("vllm:request_success",)
    assert KEPT_COUNTER_NAMES == (
        "vllm:prompt_tokens",
        "vllm:generation_tokens",
        "vllm:request_prompt_tokens",
        "vllm:request_generation_tokens",
        "vllm:request_success",
    )
    assert SPEC_DECODE_NUM_DRAFTS == "vllm:spec_decode_num_drafts"
    assert SPEC_DECODE_NUM_DRAFT_TOKENS == "vllm:spec_decode_num_draft_tokens"
    assert SPEC_DECODE_NUM_ACCEPTED_TOKENS == "vllm:spec_decode_num_accepted_tokens"
    assert SPEC_DECODE_ACCEPTED_PER_POS == "vllm:spec_decode_num_accepted_tokens_per_pos"
    assert frozenset({"stop", "length"}) == OK_FINISH_REASONS


# ---------------------------------------------------------------------------------------------------- keys


@pytest.mark.parametrize(
    ("name", "part", "expected"),
    [
        ("vllm:request_prompt_tokens", "sum", "vllm:request_prompt_tokens|sum"),
        ("vllm:request_success", "finished_reason=stop", "vllm:request_success|finished_reason=stop"),
        ("n", "a|b=c", "n|a|b=c"),
        ("n", "", "n|"),
    ],
)
def test_encode_counter_key_joins_without_escaping(name: str, part: str, expected: str) -> None:
    """encode_counter_key returns name + '|' + part and never escapes part."""
    assert encode_counter_key(name, part) == expected


@pytest.mark.parametrize(("name", "part"), [(1, "sum"), ("n", None), (b"n", "sum"), ("n", 3)])
def test_encode_counter_key_rejects_non_str(name: Any, part: Any) -> None:
    """A non-str name or part is a ContractTypeError."""
    with pytest.raises(ContractTypeError) as info:
        encode_counter_key(name, part)
    assert_contract_error(info.value)


@pytest.mark.parametrize("name", ["", "a|b", "|", "x" * 5000 + "|"])
def test_encode_counter_key_rejects_empty_or_separator_names(name: str) -> None:
    """An empty name or one containing '|' is a CounterSnapshotError carrying the name."""
    with pytest.raises(CounterSnapshotError, match="must not contain") as info:
        encode_counter_key(name, "sum")
    assert info.value.key == (name if len(name) <= 200 else name[:197] + "...")
    assert_contract_error(info.value)


@pytest.mark.parametrize(
    "key",
    [
        "vllm:prompt_tokens",
        "vllm:request_success|finished_reason=abort",
        "vllm:request_prompt_tokens|count",
        "vllm:spec_decode_num_accepted_tokens_per_pos",
        "custom_spec_decode_thing|x",
    ],
)
def test_is_kept_accepts_engine_series_and_spec_decode(key: str) -> None:
    """The five engine series (with parts) and any spec_decode base are kept."""
    assert is_kept(key)


@pytest.mark.parametrize(
    "key",
    [
        "vllm:prompt_tokens_cached",
        "vllm:prompt_tokens_recomputed",
        "vllm:prompt_tokens_by_source",
        "vllm:num_requests_running",
        "vllm:num_preemptions",
        "vllm:kv_cache_usage_perc",
        "vllm:e2e_request_latency_seconds|sum",
        "vllm:prompt_token",
        "other|spec_decode",
        "",
    ],
)
def test_is_kept_rejects_near_misses(key: str) -> None:
    """Names match exactly (never by prefix) and only the base before '|' is looked at."""
    assert not is_kept(key)


def test_is_kept_rejects_non_str() -> None:
    """A non-str metric name is a ContractTypeError."""
    with pytest.raises(ContractTypeError):
        is_kept(None)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------------- snapshot


def test_from_worker_dict_drops_unkept_without_inspecting_and_normalises() -> None:
    """Unkept junk is dropped, ints become floats, lists become tuples and the order is kept."""
    snapshot = CounterSnapshot.from_worker_dict(
        {
            "vllm:num_requests_running": float("nan"),
            "vllm:prompt_tokens": 5,
            "other": object(),  # type: ignore[dict-item]
            PER_POS: [3, 2.5],
            "vllm:request_prompt_tokens|sum": np.int64(7),
            "vllm:request_prompt_tokens|count": np.float32(0.5),
        }
    )
    assert dict(snapshot.values) == {
        "vllm:prompt_tokens": 5.0,
        PER_POS: (3.0, 2.5),
        "vllm:request_prompt_tokens|sum": 7.0,
        "vllm:request_prompt_tokens|count": 0.5,
    }
    assert list(snapshot.values) == [
        "vllm:prompt_tokens",
        PER_POS,
        "vllm:request_prompt_tokens|sum",
        "vllm:request_prompt_tokens|count",
    ]
    assert all(type(v) is float for v in (snapshot.values["vllm:prompt_tokens"], *snapshot.values[PER_POS]))  # type: ignore[misc]


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (float("nan"), "finite"),
        (float("inf"), "finite"),
        (-1, "finite and >= 0"),
        (True, "not bool"),
        (np.bool_(False), "not bool"),
        ("5", "not bool"),
        (None, "not bool"),
        ({"a": 1}, "not bool"),
        ([1, -2], "position 1"),
        ((1, float("nan")), "position 1"),
        ([False], "position 0"),
        (10**400, "finite"),
    ],
)
def test_from_worker_dict_rejects_bad_kept_values(value: object, fragment: str) -> None:
    """A kept value that is not a finite number >= 0 (or a list of them) raises with the key."""
    with pytest.raises(CounterSnapshotError, match=fragment) as info:
        CounterSnapshot.from_worker_dict({"vllm:spec_decode_num_drafts": value})  # type: ignore[dict-item]
    assert info.value.key == "vllm:spec_decode_num_drafts"
    assert_contract_error(info.value)


@pytest.mark.parametrize("d", [[("vllm:prompt_tokens", 1)], "vllm:prompt_tokens", None, {1: 2.0}])
def test_from_worker_dict_rejects_wrong_types(d: Any) -> None:
    """A non-mapping argument or a non-str key is a ContractTypeError."""
    with pytest.raises(ContractTypeError):
        CounterSnapshot.from_worker_dict(d)


def test_snapshot_is_frozen_read_only_and_hashable() -> None:
    """Fields cannot be reassigned, values cannot be mutated, equal snapshots hash equally."""
    snapshot = CounterSnapshot.from_worker_dict({"vllm:prompt_tokens": 1})
    with pytest.raises(pydantic.ValidationError):
        snapshot.values = {}  # type: ignore[misc]
    with pytest.raises(TypeError):
        snapshot.values["vllm:prompt_tokens"] = 2.0  # type: ignore[index]
    same = CounterSnapshot.from_worker_dict({"vllm:prompt_tokens": 1.0, "x": 3})
    assert snapshot == same
    assert hash(snapshot) == hash(same)
    assert snapshot != CounterSnapshot.from_worker_dict({"vllm:prompt_tokens": 2})


def test_to_worker_dict_is_fresh_reference_format() -> None:
    """to_worker_dict returns a new plain dict with vectors as lists."""
    snapshot = CounterSnapshot.from_worker_dict({"vllm:prompt_tokens": 1, PER_POS: (1, 2)})
    first = snapshot.to_worker_dict()
    assert first == {"vllm:prompt_tokens": 1.0, PER_POS: [1.0, 2.0]}
    first[PER_POS].append(9.0)  # type: ignore[union-attr]
    assert snapshot.to_worker_dict() == {"vllm:prompt_tokens": 1.0, PER_POS: [1.0, 2.0]}


def test_snapshot_round_trips_json_and_pickle() -> None:
    """A snapshot survives model_dump_json/model_validate_json and pickle unchanged."""
    snapshot = CounterSnapshot.from_worker_dict(
        {"vllm:prompt_tokens": 0.1, PER_POS: [1e300, 0.0], "vllm:request_success|finished_reason=a|b": 3}
    )
    text = snapshot.model_dump_json()
    assert json.loads(text) == {"values": snapshot.to_worker_dict(), "engine": None, "taken_at": None}
    assert CounterSnapshot.model_validate_json(text) == snapshot
    assert pickle.loads(pickle.dumps(snapshot)) == snapshot
    assert CounterSnapshot.model_validate(snapshot.model_dump()) == snapshot


def test_snapshot_with_an_engine_round_trips_json_and_pickle_with_its_engine_and_instant() -> None:
    """The engine identity and the instant survive JSON and pickle (snapshots cross Ray and logs)."""
    objects = [NS(name="vllm:prompt_tokens", labels={"engine": "1", "model_name": "m"}, value=4)]
    snapshot = CounterSnapshot.from_vllm_metrics(objects, process="dp-1", taken_at=12.5)
    assert snapshot.engine == EngineIdentity(process="dp-1", labels=(("engine", "1"), ("model_name", "m")))
    assert snapshot.taken_at == 12.5
    for copy in (
        CounterSnapshot.model_validate_json(snapshot.model_dump_json()),
        pickle.loads(pickle.dumps(snapshot)),
        CounterSnapshot.model_validate(snapshot.model_dump()),
    ):
        assert (copy.values, copy.engine, copy.taken_at) == (snapshot.values, snapshot.engine, 12.5)


@pytest.mark.parametrize(
    ("values", "fragment"),
    [
        ({"vllm:num_requests_running": 1}, "not a kept counter key"),
        ({"": 1}, "not a kept counter key"),
        ({"vllm:prompt_tokens": -1}, ">= 0"),
        ({"vllm:prompt_tokens": True}, "not bool"),
        (3, "must be a mapping"),
    ],
)
def test_direct_construction_raises_validation_error(values: Any, fragment: str) -> None:
    """Direct construction applies the same rules to every key and reports a pydantic ValidationError."""
    with pytest.raises(pydantic.ValidationError, match=fragment):
        CounterSnapshot(values=values)


def test_model_validate_json_rejects_bools_and_extra_fields() -> None:
    """JSON true is not a counter, and unknown fields are refused."""
    with pytest.raises(pydantic.ValidationError, match="not bool"):
        CounterSnapshot.model_validate_json('{"values": {"vllm:prompt_tokens": true}}')
    with pytest.raises(pydantic.ValidationError):
        CounterSnapshot.model_validate_json('{"values": {}, "other": 1}')


# ---------------------------------------------------------------------------------------------------- vLLM objects


def test_from_vllm_metrics_spec_example_sums_engines() -> None:
    """SPEC §6.3: two engines' counters and per-position vectors add up (the DP case)."""
    snapshot = CounterSnapshot.from_vllm_metrics(
        [
            NS(name="vllm:prompt_tokens", labels={"engine": "0"}, value=100),
            NS(name="vllm:prompt_tokens", labels={"engine": "1"}, value=50),
            NS(name=PER_POS, labels={"engine": "0"}, values=[50, 30]),
            NS(name=PER_POS, labels={"engine": "1"}, values=[20, 10, 5]),
        ]
    )
    assert snapshot.values == {"vllm:prompt_tokens": 150.0, PER_POS: (70.0, 40.0, 5.0)}


def test_from_vllm_metrics_reads_the_recorded_objects() -> None:
    """The recorded get_metrics() objects give counters, outcome keys and histogram parts; others are dropped."""
    after = CounterSnapshot.from_vllm_metrics(_recorded_objects("after"))
    assert after.values == {
        "vllm:prompt_tokens": 320.0,
        "vllm:generation_tokens": 48.0,
        "vllm:request_success|finished_reason=stop": 0.0,
        "vllm:request_success|finished_reason=length": 8.0,
        "vllm:request_success|finished_reason=abort": 0.0,
        "vllm:request_success|finished_reason=error": 0.0,
        "vllm:request_success|finished_reason=repetition": 0.0,
        "vllm:request_prompt_tokens|count": 8.0,
        "vllm:request_prompt_tokens|sum": 320.0,
        "vllm:request_generation_tokens|count": 8.0,
        "vllm:request_generation_tokens|sum": 48.0,
    }


def test_recorded_step_gives_the_engine_metrics() -> None:
    """Before/after get_metrics() of the recorded generate call give its real token counts and mean lengths."""
    start = aggregate_spec_decode_counters([CounterSnapshot.from_vllm_metrics(_recorded_objects("before"))])
    end = aggregate_spec_decode_counters([CounterSnapshot.from_vllm_metrics(_recorded_objects("after"))])
    assert compute_engine_step_metrics(start, end) == {
        "vllm/prompt_tokens": 320.0,
        "vllm/generation_tokens": 48.0,
        "vllm/prompt_length_mean": 40.0,
        "vllm/generation_length_mean": 6.0,
        "vllm/generations_ok": 8.0,
        "vllm/generations_failed": 0.0,
    }


def test_recorded_objects_on_two_engines_double_every_counter() -> None:
    """The same recorded objects reported by a second engine double every kept value (no last-engine-wins)."""
    one = _recorded_objects("after")
    two = one + [NS(**{**vars(o), "labels": {**o.labels, "engine": "1"}}) for o in one]
    single = {k: v for k, v in CounterSnapshot.from_vllm_metrics(one).values.items() if isinstance(v, float)}
    assert len(single) == 11
    assert CounterSnapshot.from_vllm_metrics(two).values == {k: 2 * v for k, v in single.items()}


def test_from_vllm_metrics_histogram_with_finished_reason_and_gauge() -> None:
    """Histograms contribute key|count and key|sum; a kept gauge contributes its value; buckets are ignored."""
    snapshot = CounterSnapshot.from_vllm_metrics(
        [
            NS(
                name="vllm:spec_decode_hist",
                labels={"finished_reason": "stop"},
                count=2,
                sum=3.5,
                buckets={"1": 9},
            ),
            NS(name="vllm:spec_decode_gauge", labels={}, value=0.25),
            NS(name="vllm:num_requests_running", labels=None, value=float("nan")),
        ]
    )
    assert snapshot.values == {
        "vllm:spec_decode_hist|finished_reason=stop|count": 2.0,
        "vllm:spec_decode_hist|finished_reason=stop|sum": 3.5,
        "vllm:spec_decode_gauge": 0.25,
    }


@pytest.mark.parametrize("name", ["", "vllm:num_requests_running|x", "other|sum", "|"])
def test_from_vllm_metrics_skips_unkept_names_whatever_they_hold(name: str) -> None:
    """SPEC §6.3 step 1: an unkept name is skipped, even one holding '|' or the empty name, without reading it."""
    objects = [NS(name=name, labels=None), NS(name="vllm:prompt_tokens", labels={}, value=2)]
    assert CounterSnapshot.from_vllm_metrics(objects).values == {"vllm:prompt_tokens": 2.0}


def test_from_vllm_metrics_accepts_an_empty_iterable_and_generators() -> None:
    """Any iterable works; no objects give an empty snapshot."""
    assert CounterSnapshot.from_vllm_metrics([]).values == {}
    objects = (NS(name="vllm:prompt_tokens", labels={}, value=v) for v in (1, 2))
    assert CounterSnapshot.from_vllm_metrics(objects).values == {"vllm:prompt_tokens": 3.0}


@pytest.mark.parametrize(
    ("objects", "fragment"),
    [
        ([NS(labels={}, value=1)], "name must be a non-empty str"),
        ([NS(name=3, labels={}, value=1)], "name must be a non-empty str"),
        ([NS(name="vllm:prompt_tokens|x", labels={}, value=1)], "without '|'"),
        ([NS(name="vllm:prompt_tokens", value=1)], "labels as a mapping"),
        ([NS(name="vllm:prompt_tokens", labels=["engine"], value=1)], "labels as a mapping"),
        ([NS(name="vllm:request_success", labels={"finished_reason": 1}, value=1)], "not a str"),
        ([NS(name="vllm:prompt_tokens", labels={})], "none of 'values', 'value'"),
        ([NS(name="vllm:request_prompt_tokens", labels={}, count=1)], "none of 'values', 'value'"),
        ([NS(name=PER_POS, labels={}, values="12")], "list of per-position counts"),
        ([NS(name=PER_POS, labels={}, values=[1, -1])], "position 1"),
        ([NS(name="vllm:prompt_tokens", labels={}, value=-1)], ">= 0"),
        ([NS(name="vllm:prompt_tokens", labels={}, value=True)], "not bool"),
        ([NS(name="vllm:request_prompt_tokens", labels={}, count=1, sum=float("nan"))], "finite"),
        (
            [
                NS(name=PER_POS, labels={"engine": "0"}, values=[1]),
                NS(name=PER_POS, labels={"engine": "1"}, value=1),
            ],
            "both as a scalar and as a per-position vector",
        ),
        (
            [NS(name="vllm:prompt_tokens", labels={"engine": str(e)}, value=1.5e308) for e in range(2)],
            "overflows",
        ),
    ],
)
def test_from_vllm_metrics_rejects_bad_objects(objects: list[SimpleNamespace], fragment: str) -> None:
    """Malformed metric objects raise CounterSnapshotError naming the object and the value."""
    with pytest.raises(CounterSnapshotError, match=fragment) as info:
        CounterSnapshot.from_vllm_metrics(objects)
    assert_contract_error(info.value)


@pytest.mark.parametrize("metrics", ["vllm:prompt_tokens", b"x", {"vllm:prompt_tokens": 1}, 3, None])
def test_from_vllm_metrics_rejects_non_iterables(metrics: Any) -> None:
    """A str, bytes, mapping or non-iterable argument is a ContractTypeError."""
    with pytest.raises(ContractTypeError, match="metrics must be an iterable"):
        CounterSnapshot.from_vllm_metrics(metrics)


# ---------------------------------------------------------------------------------------------------- Prometheus


def test_from_prometheus_text_reads_the_recorded_server_pages() -> None:
    """The real /metrics pages give the kept counters, outcomes and histogram parts; everything else is dropped."""
    sample = CounterSnapshot.from_prometheus_text((DATA / "vllm_server_metrics_sample.prom").read_text())
    after = CounterSnapshot.from_prometheus_text((DATA / "server_metrics_after_two_chats.prom").read_text())
    outcomes = [
        f"vllm:request_success|finished_reason={r}"
        for r in ("stop", "length", "abort", "error", "repetition")
    ]
    assert sample.values == {
        "vllm:prompt_tokens": 5.0,
        "vllm:generation_tokens": 8.0,
        **dict(zip(outcomes, (0.0, 1.0, 0.0, 0.0, 0.0), strict=True)),
        "vllm:request_prompt_tokens|count": 1.0,
        "vllm:request_prompt_tokens|sum": 5.0,
        "vllm:request_generation_tokens|count": 1.0,
        "vllm:request_generation_tokens|sum": 8.0,
    }
    assert after.values == {
        "vllm:prompt_tokens": 30.0,
        "vllm:generation_tokens": 18.0,
        **dict(zip(outcomes, (0.0, 3.0, 0.0, 0.0, 0.0), strict=True)),
        "vllm:request_prompt_tokens|count": 3.0,
        "vllm:request_prompt_tokens|sum": 30.0,
        "vllm:request_generation_tokens|count": 3.0,
        "vllm:request_generation_tokens|sum": 18.0,
    }


SPEC_PAGE = """\
# HELP vllm:spec_decode_num_drafts_total Drafts.
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 100.0
vllm:spec_decode_num_drafts_total{engine="1",model_name="m"} 50.0
# TYPE vllm:spec_decode_num_drafts_created gauge
vllm:spec_decode_num_drafts_created{engine="0",model_name="m"} 1.7e9
# HELP vllm:spec_decode_num_accepted_tokens_per_pos_total Per position.
# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="0"} 50.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="2"} 30.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="1",model_name="m",position="0"} 20.0
# TYPE vllm:request_success_total counter
vllm:request_success_total{engine="0",finished_reason="stop",model_name="m"} 4
vllm:request_success_total{engine="1",finished_reason="stop",model_name="m"} 3
# TYPE vllm:spec_decode_latency histogram
vllm:spec_decode_latency_bucket{engine="0",le="+Inf"} 2
vllm:spec_decode_latency_count{engine="0"} 2
vllm:spec_decode_latency_sum{engine="0"} 0.5
vllm:spec_decode_latency_created{engine="0"} 1.7e9
# TYPE vllm:spec_decode_gauge gauge
vllm:spec_decode_gauge 7
# TYPE vllm:spec_decode_summary summary
vllm:spec_decode_summary_count 7
vllm:spec_decode_summary_sum 7
vllm:spec_decode_untyped 7
# TYPE spec_decode_other counter
spec_decode_other_total 7
"""


def test_from_prometheus_text_sums_engines_and_builds_the_position_vector() -> None:
    """Engines add up, the position label indexes the vector (gaps are 0), other family types are ignored."""
    snapshot = CounterSnapshot.from_prometheus_text(SPEC_PAGE)
    assert snapshot.values == {
        DRAFTS: 150.0,
        PER_POS: (70.0, 0.0, 30.0),
        "vllm:request_success|finished_reason=stop": 7.0,
        "vllm:spec_decode_latency|count": 2.0,
        "vllm:spec_decode_latency|sum": 0.5,
    }


OPENMETRICS_NAMES_PAGE = """\
# HELP vllm:prompt_tokens Prefill tokens.
# TYPE vllm:prompt_tokens counter
vllm:prompt_tokens_total{engine="0",model_name="m"} 100.0
vllm:prompt_tokens_created{engine="0",model_name="m"} 1.7e9
vllm:prompt_tokens_total{engine="1",model_name="m"} 50.0
vllm:prompt_tokens_created{engine="1",model_name="m"} 1.7e9
# TYPE vllm:request_success counter
vllm:request_success_total{engine="0",finished_reason="stop",model_name="m"} 4
# TYPE vllm:spec_decode_num_accepted_tokens_per_pos counter
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",position="0"} 5
vllm:spec_decode_num_accepted_tokens_per_pos_created{engine="0",position="0"} 1.7e9
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",position="2"} 3
# TYPE vllm:request_prompt_tokens histogram
vllm:request_prompt_tokens_bucket{engine="0",le="+Inf"} 2
vllm:request_prompt_tokens_count{engine="0"} 2
vllm:request_prompt_tokens_sum{engine="0"} 9.0
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0"} 1
"""
OPENMETRICS_NAMES_SNAPSHOT = {
    "vllm:prompt_tokens": 150.0,
    "vllm:request_success|finished_reason=stop": 4.0,
    PER_POS: (5.0, 0.0, 3.0),
    "vllm:request_prompt_tokens|count": 2.0,
    "vllm:request_prompt_tokens|sum": 9.0,
}


def test_counters_declared_by_their_openmetrics_name_are_read() -> None:
    """SPEC §6.3 (revised): '# TYPE vllm:x counter' with 'vllm:x_total' samples reads as the counter, never as
    {} (regression: the text parser splits them into an empty counter and an untyped family)."""
    assert CounterSnapshot.from_prometheus_text(OPENMETRICS_NAMES_PAGE).values == OPENMETRICS_NAMES_SNAPSHOT


def test_openmetrics_pages_ending_with_eof_are_read() -> None:
    """The same page as OpenMetrics exposition (ending with '# EOF', with or without the final newline) gives the
    same snapshot."""
    for ending in ("# EOF\n", "# EOF"):
        page = CounterSnapshot.from_prometheus_text(OPENMETRICS_NAMES_PAGE + ending)
        assert page.values == OPENMETRICS_NAMES_SNAPSHOT


def test_an_eof_comment_before_the_end_is_a_comment() -> None:
    """Only a last line '# EOF' makes a page OpenMetrics; earlier, it is a comment of the text format."""
    page = "# EOF\n# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total 3\n"
    assert CounterSnapshot.from_prometheus_text(page).values == {"vllm:prompt_tokens": 3.0}


def test_untyped_total_samples_without_a_declared_counter_are_ignored() -> None:
    """An untyped 'vllm:x_total' family is read as a counter only when the page declares 'vllm:x' a counter."""
    page = "vllm:prompt_tokens_total 3\n# TYPE vllm:generation_tokens gauge\nvllm:generation_tokens_total 4\n"
    assert CounterSnapshot.from_prometheus_text(page).values == {}


def test_parse_prometheus_text_returns_the_snapshot_and_the_families() -> None:
    """The public parser gives the snapshot from_prometheus_text gives, and the page's vllm: families once each."""
    page = parse_prometheus_text(OPENMETRICS_NAMES_PAGE)
    assert isinstance(page, PrometheusPage)
    assert page.snapshot == CounterSnapshot.from_prometheus_text(OPENMETRICS_NAMES_PAGE)
    assert page.vllm_families == (
        "vllm:prompt_tokens",
        "vllm:request_success",
        PER_POS,
        "vllm:request_prompt_tokens",
        "vllm:num_requests_running",
    )
    snapshot, families = page
    assert (snapshot, families) == (page.snapshot, page.vllm_families)


def test_from_prometheus_text_without_vllm_families_is_empty() -> None:
    """Text with no vllm: family gives an empty snapshot (the CLI reports this case)."""
    assert CounterSnapshot.from_prometheus_text("# TYPE x counter\nx_total 1\n").values == {}
    assert CounterSnapshot.from_prometheus_text("").values == {}


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("<html><body>Not found</body></html>", "could not parse Prometheus text: invalid metric name"),
        ('{"a": 1}', "could not parse Prometheus text: "),
        ("# TYPE vllm:x counter\nvllm:x_total abc\n", "could not parse Prometheus text: "),
        ("# TYPE vllm:é counter\nvllm:é_total 1\n", "could not parse Prometheus text: ValueError"),
        (
            '# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total{engine="0"} 1\n'
            'vllm:prompt_tokens_total{engine="0"} 2\n',
            "could not parse Prometheus text: duplicate sample",
        ),
        ("# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total NaN\n", "finite"),
        ("# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total -1\n", ">= 0"),
        (f"# TYPE {PER_POS}_total counter\n{PER_POS}_total 1\n", "needs a 'position' label"),
        (f'# TYPE {PER_POS}_total counter\n{PER_POS}_total{{position="-1"}} 1\n', "needs a 'position' label"),
        (
            f'# TYPE {PER_POS}_total counter\n{PER_POS}_total{{position="1.0"}} 1\n',
            "needs a 'position' label",
        ),
        (f'# TYPE {PER_POS}_total counter\n{PER_POS}_total{{position="4096"}} 1\n', "from 0 to 4095"),
        (
            '# TYPE "vllm:spec_decode|x_total" counter\n{"vllm:spec_decode|x_total"} 1\n',
            "without '|'",
        ),
    ],
)
def test_from_prometheus_text_rejects_bad_pages(text: str, fragment: str) -> None:
    """Unparseable text and bad values raise CounterSnapshotError with the SPEC's message prefix."""
    with pytest.raises(CounterSnapshotError, match=fragment) as info:
        CounterSnapshot.from_prometheus_text(text)
    assert_contract_error(info.value)


def test_from_prometheus_text_rejects_non_str() -> None:
    """Bytes or other non-str text is a ContractTypeError."""
    with pytest.raises(ContractTypeError):
        CounterSnapshot.from_prometheus_text(b"vllm:x 1")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "build",
    [
        lambda values: CounterSnapshot.from_vllm_metrics([NS(name=PER_POS, labels={}, values=values)]),
        lambda values: CounterSnapshot.from_worker_dict({PER_POS: values}),
        lambda values: aggregate_spec_decode_counters([{PER_POS: values}]),
        lambda values: CounterSnapshot(values={PER_POS: tuple(values)}),
    ],
)
def test_every_source_follows_the_one_position_limit(build: Callable[[list[int]], object]) -> None:
    """Objects, worker dicts, aggregation and direct construction accept 4096 positions and refuse 4097, as pages do."""
    assert MAX_SPEC_DECODE_POSITIONS == 4096
    build([0] * MAX_SPEC_DECODE_POSITIONS)
    with pytest.raises((CounterSnapshotError, pydantic.ValidationError), match="at most 4096") as info:
        build([0] * (MAX_SPEC_DECODE_POSITIONS + 1))
    if isinstance(info.value, CounterSnapshotError):
        assert_contract_error(info.value)
        assert info.value.value == "4097"


def test_from_prometheus_text_accepts_the_highest_position() -> None:
    """Position 4095 is accepted and gives a vector of 4096 entries."""
    snapshot = CounterSnapshot.from_prometheus_text(
        f'# TYPE {PER_POS}_total counter\n{PER_POS}_total{{position="4095"}} 1\n'
    )
    vector = snapshot.values[PER_POS]
    assert isinstance(vector, tuple)
    assert len(vector) == 4096
    assert vector[-1] == 1.0
    assert sum(vector) == 1.0


# ---------------------------------------------------------------------------------------------------- aggregation


def test_aggregate_spec_example() -> None:
    """SPEC §6.4: spec-decode and kept engine series are summed, positions become 1-based, the rest dropped."""
    result = aggregate_spec_decode_counters(
        [
            {
                "vllm:spec_decode_num_drafts": 100,
                "vllm:spec_decode_num_accepted_tokens_per_pos": [50, 30],
                "vllm:prompt_tokens": 100,
                "vllm:num_requests_running": 3,
                "other_metric": 5,
            },
            {
                "vllm:spec_decode_num_drafts": 50,
                "vllm:spec_decode_num_accepted_tokens_per_pos": [20, 10],
                "vllm:prompt_tokens": 50,
            },
        ]
    )
    assert result == {
        "vllm:spec_decode_num_drafts": 150.0,
        (PER_POS, 1): 70.0,
        (PER_POS, 2): 40.0,
        "vllm:prompt_tokens": 150.0,
    }
    assert list(result) == ["vllm:spec_decode_num_drafts", (PER_POS, 1), (PER_POS, 2), "vllm:prompt_tokens"]
    assert all(type(v) is float for v in result.values())


def test_aggregate_accepts_snapshots_tuples_and_empty() -> None:
    """Snapshots and dicts mix, any sequence works, and [] gives {}."""
    snapshot = CounterSnapshot.from_worker_dict({DRAFTS: 1, PER_POS: [1, 2, 3]})
    assert aggregate_spec_decode_counters((snapshot, {DRAFTS: 2.5, PER_POS: (1,)})) == {
        DRAFTS: 3.5,
        (PER_POS, 1): 2.0,
        (PER_POS, 2): 2.0,
        (PER_POS, 3): 3.0,
    }
    assert aggregate_spec_decode_counters([]) == {}


@pytest.mark.parametrize(
    ("workers", "error", "fragment"),
    [
        ("abc", ContractTypeError, "must be a list"),
        ({DRAFTS: 1}, ContractTypeError, "must be a list"),
        (None, ContractTypeError, "must be a list"),
        ([[(DRAFTS, 1)]], ContractTypeError, "worker_metrics\\[0\\] must be a CounterSnapshot"),
        ([{1: 1}], ContractTypeError, "key that is not a str"),
        ([{DRAFTS: float("nan")}], CounterSnapshotError, "finite"),
        ([{DRAFTS: -1}], CounterSnapshotError, ">= 0"),
        ([{DRAFTS: True}], CounterSnapshotError, "not bool"),
        ([{DRAFTS: "1"}], CounterSnapshotError, "not bool"),
        ([{PER_POS: [1, float("inf")]}], CounterSnapshotError, "position 1"),
        ([{PER_POS: [1]}, {PER_POS: 1}], CounterSnapshotError, "scalar here but a vector"),
        ([{PER_POS: 1}, {PER_POS: [1]}], CounterSnapshotError, "vector here but a scalar"),
        ([{DRAFTS: 1.5e308}, {DRAFTS: 1.5e308}], CounterSnapshotError, "overflows"),
    ],
)
def test_aggregate_rejects_bad_reports(workers: Any, error: type[ContractError], fragment: str) -> None:
    """Wrong types are ContractTypeError, bad values and scalar/vector conflicts CounterSnapshotError."""
    with pytest.raises(error, match=fragment) as info:
        aggregate_spec_decode_counters(workers)
    assert_contract_error(info.value)


def test_aggregate_skips_unkept_values_without_looking() -> None:
    """Unkept keys may hold anything (even NaN or None)."""
    workers: list[dict[str, Any]] = [{"vllm:num_preemptions": None, "x": float("nan")}]
    assert aggregate_spec_decode_counters(workers) == {}


# ---------------------------------------------------------------------------------------------------- deltas


def test_first_delta_picks_the_first_present_candidate() -> None:
    """Candidates are tried in order, a present 0.0 is returned, absence gives None."""
    delta: dict[str | tuple[str, int], float] = {"b": 0.0, "a|sum": 3.0, "a|": 7.0, "c": 2.0}
    assert first_delta(delta, ("a", "b", "c")) == 0.0
    assert first_delta(delta, ("z", "a"), "sum") == 3.0
    assert first_delta(delta, ["a"], "") == 7.0
    assert first_delta(delta, ("z",)) is None
    assert first_delta({"a": -2}, ("a",)) == -2.0


def test_first_delta_returns_non_finite_values_as_spec_6_5() -> None:
    """SPEC §6.5 returns delta[key]: NaN and infinities are returned, and a histogram mean over them is NaN."""
    nan = first_delta({"a": float("nan")}, ("a",))
    assert nan is not None
    assert math.isnan(nan)
    assert first_delta({"a": float("-inf")}, ("a",)) == -math.inf
    mean = mean_from_histogram({"h|sum": 3.0, "h|count": float("nan")}, ("h",))
    assert mean is not None
    assert math.isnan(mean)


@pytest.mark.parametrize(
    ("args", "error", "fragment"),
    [
        (({"a": 1}, "a"), ContractTypeError, "wrap a single name"),
        (({"a": 1}, ("a", 1)), ContractTypeError, "candidates"),
        (({"a": 1}, ("a",), 1), ContractTypeError, "part"),
        (([("a", 1)], ("a",)), ContractTypeError, "delta must be a mapping"),
        (({"a": 1}, ("a|b",), "sum"), CounterSnapshotError, "must not contain"),
        (({"a": "1"}, ("a",)), CounterSnapshotError, "must be a number"),
        (({"a": True}, ("a",)), CounterSnapshotError, "must be a number"),
    ],
)
def test_first_delta_rejects_bad_arguments(
    args: tuple[Any, ...], error: type[ContractError], fragment: str
) -> None:
    """A bare str candidate, non-str names or parts, non-mapping deltas and non-numbers raise."""
    with pytest.raises(error, match=fragment):
        first_delta(*args)


@pytest.mark.parametrize(
    ("delta", "expected"),
    [
        ({"h|sum": 400.0, "h|count": 4.0}, 100.0),
        ({"h|sum": 1.0, "h|count": 3.0}, 1.0 / 3.0),
        ({"h|sum": 400.0, "h|count": 0.0}, None),
        ({"h|sum": 400.0, "h|count": -1.0}, None),
        ({"h|sum": 400.0}, None),
        ({"h|count": 4.0}, None),
        ({}, None),
    ],
)
def test_mean_from_histogram(delta: dict[str | tuple[str, int], float], expected: float | None) -> None:
    """The mean is sum/count, and None without both parts or with a count <= 0."""
    assert mean_from_histogram(delta, ("h",)) == expected


def test_mean_from_histogram_rejects_a_bare_str() -> None:
    """A bare str as candidates is a ContractTypeError."""
    with pytest.raises(ContractTypeError):
        mean_from_histogram({}, "h")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------------- engine metrics

SPEC_START: AggregatedCounters = {
    "vllm:prompt_tokens": 1000,
    "vllm:generation_tokens": 2000,
    "vllm:request_prompt_tokens|sum": 1000,
    "vllm:request_prompt_tokens|count": 10,
    "vllm:request_generation_tokens|sum": 2000,
    "vllm:request_generation_tokens|count": 10,
    "vllm:request_success|finished_reason=stop": 5,
    "vllm:request_success|finished_reason=length": 2,
    "vllm:request_success|finished_reason=abort": 0,
}
SPEC_END: AggregatedCounters = {
    "vllm:prompt_tokens": 1400,
    "vllm:generation_tokens": 2600,
    "vllm:request_prompt_tokens|sum": 1400,
    "vllm:request_prompt_tokens|count": 14,
    "vllm:request_generation_tokens|sum": 2600,
    "vllm:request_generation_tokens|count": 14,
    "vllm:request_success|finished_reason=stop": 7,
    "vllm:request_success|finished_reason=length": 3,
    "vllm:request_success|finished_reason=abort": 1,
}


def test_engine_step_metrics_spec_example() -> None:
    """SPEC §6.6 table: tokens, exact mean lengths and ok/failed outcomes, in the SPEC's key order."""
    result = compute_engine_step_metrics(SPEC_START, SPEC_END)
    assert list(result.items()) == [
        ("vllm/prompt_tokens", 400.0),
        ("vllm/generation_tokens", 600.0),
        ("vllm/prompt_length_mean", 100.0),
        ("vllm/generation_length_mean", 150.0),
        ("vllm/generations_ok", 3.0),
        ("vllm/generations_failed", 1.0),
    ]
    assert all(type(v) is float for v in result.values())


def test_engine_step_metrics_same_snapshot_has_zeros_but_no_means() -> None:
    """compute(x, x) gives 0.0 tokens and outcomes but no means (the count delta is 0)."""
    assert compute_engine_step_metrics(SPEC_END, SPEC_END) == {
        "vllm/prompt_tokens": 0.0,
        "vllm/generation_tokens": 0.0,
        "vllm/generations_ok": 0.0,
        "vllm/generations_failed": 0.0,
    }
    assert compute_engine_step_metrics({}, {}) == {}


def test_engine_step_metrics_omit_a_restarted_series() -> None:
    """A series that went backwards is omitted, the others are still reported."""
    result = compute_engine_step_metrics(SPEC_START, {**SPEC_END, "vllm:prompt_tokens": 10})
    assert "vllm/prompt_tokens" not in result
    assert result["vllm/generation_tokens"] == 600.0


def test_engine_step_metrics_unknown_and_empty_reasons_count_as_failed() -> None:
    """Reasons outside stop/length (timeout, empty) are failed, so ok + failed is the total."""
    end = {
        **SPEC_END,
        "vllm:request_success|finished_reason=timeout": 4,
        "vllm:request_success|finished_reason=": 2,
    }
    result = compute_engine_step_metrics(SPEC_START, end)
    assert result["vllm/generations_ok"] == 3.0
    assert result["vllm/generations_failed"] == 7.0


def test_engine_step_metrics_omit_mean_when_count_shrank() -> None:
    """A histogram whose sum grew but count shrank has no mean."""
    end = {**SPEC_END, "vllm:request_prompt_tokens|count": 5}
    assert "vllm/prompt_length_mean" not in compute_engine_step_metrics(SPEC_START, end)


def test_engine_step_metrics_use_end_keys_only() -> None:
    """Keys only in start are ignored, new keys report their full value, tuple keys are not outcomes."""
    start: AggregatedCounters = {"vllm:prompt_tokens": 5, "vllm:request_success|finished_reason=stop": 3}
    end: AggregatedCounters = {
        "vllm:generation_tokens": 9,
        ("vllm:request_success|finished_reason=stop", 1): 4,
    }
    assert compute_engine_step_metrics(start, end) == {"vllm/generation_tokens": 9.0}


def test_step_metrics_reject_positions_beyond_a_list_index() -> None:
    """A vector position above sys.maxsize cannot come from a list and is rejected, never a ValueError."""
    for position in (sys.maxsize + 1, 10**5000):
        end: AggregatedCounters = {(SPEC_DECODE_ACCEPTED_PER_POS, position): 1.0}
        for compute in (compute_engine_step_metrics, compute_spec_decode_metrics):
            with pytest.raises(CounterSnapshotError, match="position >= 1") as info:
                compute({}, end)
            assert_contract_error(info.value)
    largest: AggregatedCounters = {(SPEC_DECODE_ACCEPTED_PER_POS, sys.maxsize): 2.0}
    assert (
        compute_spec_decode_metrics({}, largest)[f"vllm/{SPEC_DECODE_ACCEPTED_PER_POS}-{sys.maxsize}"] == 2.0
    )


@pytest.mark.parametrize("compute", [compute_engine_step_metrics, compute_spec_decode_metrics])
@pytest.mark.parametrize(
    ("counters", "error", "fragment"),
    [
        ({"a": float("nan")}, CounterSnapshotError, "finite"),
        ({"a": -0.5}, CounterSnapshotError, ">= 0"),
        ({"a": True}, CounterSnapshotError, "not bool"),
        ({"a": None}, CounterSnapshotError, "not bool"),
        ({1: 1.0}, CounterSnapshotError, "must be a str or a \\(name, position >= 1\\) tuple"),
        ({("a", 0): 1.0}, CounterSnapshotError, "position >= 1"),
        ({("a", True): 1.0}, CounterSnapshotError, "position >= 1"),
        ({("a", 1, 2): 1.0}, CounterSnapshotError, "position >= 1"),
        ({(1, 1): 1.0}, CounterSnapshotError, "position >= 1"),
        ([("a", 1.0)], ContractTypeError, "must be a mapping"),
    ],
)
def test_step_metrics_validate_both_snapshots(
    compute: Callable[[Any, Any], dict[str, float]],
    counters: Any,
    error: type[ContractError],
    fragment: str,
) -> None:
    """Both functions reject bad keys and values in either snapshot, naming the argument."""
    for start, end, argument in ((counters, {}, "start_counters"), ({}, counters, "end_counters")):
        with pytest.raises(error, match=fragment) as info:
            compute(start, end)
        assert argument in str(info.value)
        assert_contract_error(info.value)


def test_step_metrics_accept_numpy_positions_and_values() -> None:
    """numpy ints are ints: as positions and as values."""
    start = {(PER_POS, np.int64(1)): np.int64(1), DRAFTS: np.float64(1)}
    end = {(PER_POS, 1): 3.0, DRAFTS: 3}
    result = compute_spec_decode_metrics(start, end)  # type: ignore[arg-type]
    assert result[f"vllm/{PER_POS}-1"] == 2.0
    assert result["vllm/spec_acceptance_rate-pos-1"] == 1.0


# ---------------------------------------------------------------------------------------------------- spec decode


def test_spec_decode_metrics_spec_example() -> None:
    """SPEC §6.7 table: D=100, T=300, A=240 give length 3.4, rate 0.8 and per-position rates 0.9/0.8/0.7."""
    start: AggregatedCounters = {
        DRAFTS: 100,
        DRAFT_TOKENS: 300,
        ACCEPTED: 200,
        (PER_POS, 1): 75,
        (PER_POS, 2): 70,
        (PER_POS, 3): 55,
    }
    end: AggregatedCounters = {
        DRAFTS: 200,
        DRAFT_TOKENS: 600,
        ACCEPTED: 440,
        (PER_POS, 1): 165,
        (PER_POS, 2): 150,
        (PER_POS, 3): 125,
    }
    result = compute_spec_decode_metrics(start, end)
    expected = [
        ("vllm/spec_num_drafts", 100.0),
        ("vllm/spec_num_draft_tokens", 300.0),
        ("vllm/spec_num_accepted_tokens", 240.0),
        ("vllm/spec_acceptance_length", 3.4),
        ("vllm/spec_acceptance_rate", 0.8),
        ("vllm/vllm:spec_decode_num_accepted_tokens_per_pos-1", 90.0),
        ("vllm/vllm:spec_decode_num_accepted_tokens_per_pos-2", 80.0),
        ("vllm/vllm:spec_decode_num_accepted_tokens_per_pos-3", 70.0),
        ("vllm/spec_acceptance_rate-pos-1", 0.9),
        ("vllm/spec_acceptance_rate-pos-2", 0.8),
        ("vllm/spec_acceptance_rate-pos-3", 0.7),
    ]
    assert [k for k, _ in result.items()] == [k for k, _ in expected]
    for (_, value), (_, want) in zip(result.items(), expected, strict=True):
        assert math.isclose(value, want, rel_tol=1e-12)
    assert all(type(v) is float for v in result.values())


def test_spec_decode_metrics_without_drafts() -> None:
    """No drafts: the five keys are present, length 1.0, rate 0.0, counts but no per-position rates."""
    result = compute_spec_decode_metrics({}, {(PER_POS, 1): 4.0})
    assert result == {
        "vllm/spec_num_drafts": 0.0,
        "vllm/spec_num_draft_tokens": 0.0,
        "vllm/spec_num_accepted_tokens": 0.0,
        "vllm/spec_acceptance_length": 1.0,
        "vllm/spec_acceptance_rate": 0.0,
        f"vllm/{PER_POS}-1": 4.0,
    }
    assert compute_spec_decode_metrics({}, {}) == {k: v for k, v in result.items() if "per_pos" not in k}


def test_spec_decode_metrics_keep_negative_deltas_over_the_key_union() -> None:
    """Deltas cover the union of keys and stay negative (unlike engine step metrics)."""
    result = compute_spec_decode_metrics({DRAFTS: 10, ACCEPTED: 5, (PER_POS, 1): 5}, {DRAFTS: 4})
    assert result["vllm/spec_num_drafts"] == -6.0
    assert result["vllm/spec_num_accepted_tokens"] == -5.0
    assert result["vllm/spec_acceptance_length"] == 1.0
    assert result[f"vllm/{PER_POS}-1"] == -5.0
    assert "vllm/spec_acceptance_rate-pos-1" not in result


def test_spec_decode_rates_only_for_the_accepted_per_position_family() -> None:
    """Other tuple families get count keys, sorted by (metric, pos), but no per-position rate."""
    end: AggregatedCounters = {
        DRAFTS: 10,
        ("vllm:spec_decode_z", 2): 1,
        ("vllm:spec_decode_a", 1): 3,
        (PER_POS, 2): 5,
    }
    result = compute_spec_decode_metrics({}, end)
    assert list(result)[5:] == [
        "vllm/vllm:spec_decode_a-1",
        f"vllm/{PER_POS}-2",
        "vllm/vllm:spec_decode_z-2",
        "vllm/spec_acceptance_rate-pos-2",
    ]
    assert result["vllm/spec_acceptance_rate-pos-2"] == 0.5


def test_step_functions_do_not_mutate_inputs() -> None:
    """Inputs are deep-equal before and after every call."""
    start, end = dict(SPEC_START), dict(SPEC_END)
    workers: list[dict[str, Any]] = [{DRAFTS: 1, PER_POS: [1, 2]}]
    compute_engine_step_metrics(start, end)
    compute_spec_decode_metrics(start, end)
    aggregate_spec_decode_counters(workers)
    CounterSnapshot.from_worker_dict(workers[0])
    assert (start, end, workers) == (SPEC_START, SPEC_END, [{DRAFTS: 1, PER_POS: [1, 2]}])


def test_errors_are_contract_errors_of_the_listed_builtins() -> None:
    """CounterSnapshotError is a ValueError and ContractTypeError a TypeError, as §0.3 lists."""
    assert issubclass(CounterSnapshotError, ValueError)
    assert issubclass(ContractTypeError, TypeError)
    with pytest.raises(ValueError, match="finite"):
        aggregate_spec_decode_counters([{DRAFTS: float("nan")}])


def test_huge_inputs_give_bounded_messages() -> None:
    """A huge key or value is summarised, never dumped."""
    key = "vllm:spec_decode_" + "x" * 100_000
    with pytest.raises(CounterSnapshotError) as info:
        CounterSnapshot.from_worker_dict({key: ["y" * 100_000]})  # type: ignore[list-item]
    assert_contract_error(info.value)
    assert len(str(info.value)) < 1000
    assert isinstance(info.value.key, str)
    assert len(info.value.key) == 200


def test_snapshot_values_is_a_mapping() -> None:
    """values behaves as a read-only Mapping with repr like a dict."""
    snapshot = CounterSnapshot.from_worker_dict({"vllm:prompt_tokens": 1})
    assert isinstance(snapshot.values, Mapping)
    assert repr(snapshot) == "CounterSnapshot(values={'vllm:prompt_tokens': 1.0})"


def test_spec_decode_ratios_use_fractional_denominators() -> None:
    """Drafts and draft tokens between 0 and 1 still divide (the guards are > 0, not > 1)."""
    result = compute_spec_decode_metrics({}, {DRAFTS: 0.5, DRAFT_TOKENS: 0.25, ACCEPTED: 0.125})
    assert result["vllm/spec_acceptance_length"] == 1.0 + 0.125 / 0.5
    assert result["vllm/spec_acceptance_rate"] == 0.125 / 0.25


def test_distinct_snapshots_hash_differently() -> None:
    """The hash depends on the values, so different snapshots spread over hash buckets."""
    hashes = {hash(CounterSnapshot.from_worker_dict({"vllm:prompt_tokens": n})) for n in range(4)}
    assert len(hashes) == 4
