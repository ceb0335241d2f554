"""Properties of rl_contracts.metrics: SPEC §7 invariants 1, 2 and 22–26."""

from __future__ import annotations

import copy
import math
import pickle
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from rl_contracts.errors import ContractError, ContractTypeError, CounterSnapshotError
from rl_contracts.metrics import (
    COUNTER_KEY_SEP,
    FINISHED_REASON_LABEL,
    OK_FINISH_REASONS,
    REQUEST_SUCCESS_COUNTERS,
    SPEC_DECODE_ACCEPTED_PER_POS,
    SPEC_DECODE_NUM_ACCEPTED_TOKENS,
    SPEC_DECODE_NUM_DRAFT_TOKENS,
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
from rl_contracts.testing.strategies import (
    FINISH_REASONS,
    KEPT_COUNTER_FAMILIES,
    KEPT_HISTOGRAM_FAMILIES,
    SPELLINGS,
    UNKEPT_METRIC_NAMES,
    Spelling,
    aggregated_counter_pairs,
    counter_snapshots,
    counter_values,
    prometheus_pages,
    render_prometheus_text,
    vllm_metric_objects,
    worker_counters,
)

PER_POS = SPEC_DECODE_ACCEPTED_PER_POS
ENGINE_KEYS = {
    "vllm/prompt_tokens",
    "vllm/generation_tokens",
    "vllm/prompt_length_mean",
    "vllm/generation_length_mean",
    "vllm/generations_ok",
    "vllm/generations_failed",
}
HEADLINE_KEYS = [
    "vllm/spec_num_drafts",
    "vllm/spec_num_draft_tokens",
    "vllm/spec_num_accepted_tokens",
    "vllm/spec_acceptance_length",
    "vllm/spec_acceptance_rate",
]
OUTCOME_PREFIX = REQUEST_SUCCESS_COUNTERS[0] + COUNTER_KEY_SEP + FINISHED_REASON_LABEL + "="

names = st.one_of(
    st.sampled_from((*KEPT_COUNTER_FAMILIES, *KEPT_HISTOGRAM_FAMILIES, *UNKEPT_METRIC_NAMES, PER_POS)),
    st.text(min_size=1).filter(lambda s: COUNTER_KEY_SEP not in s),
)


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def _oplus(a: AggregatedCounters, b: AggregatedCounters) -> AggregatedCounters:
    return {key: a.get(key, 0.0) + b.get(key, 0.0) for key in {**a, **b}}


# ---------------------------------------------------------------------------------------------------- 22


@given(names, st.text())
def test_key_encoding_splits_back_and_keeps_keptness(name: str, part: str) -> None:
    """Invariant 22: the key splits back into [name, part] and is kept exactly when the name is."""
    key = encode_counter_key(name, part)
    assert key.split("|", 1) == [name, part]
    assert is_kept(key) == is_kept(name)


# ---------------------------------------------------------------------------------------------------- 23


@given(st.lists(worker_counters(), max_size=5))
def test_aggregation_keys_are_kept_and_positions_run_from_one(workers: list[dict[str, Any]]) -> None:
    """Invariant 23: every result key is kept and vector positions run from 1 to the longest vector's length."""
    result = aggregate_spec_decode_counters(workers)
    longest = max((len(w[PER_POS]) for w in workers if PER_POS in w), default=0)
    positions = sorted(k[1] for k in result if isinstance(k, tuple))
    assert positions == list(range(1, longest + 1))
    assert all(is_kept(k if isinstance(k, str) else k[0]) for k in result)
    assert all(type(v) is float and v >= 0 for v in result.values())


@given(
    st.lists(worker_counters(), max_size=5).flatmap(lambda ws: st.tuples(st.just(ws), st.permutations(ws)))
)
def test_aggregation_is_independent_of_worker_order(
    pair: tuple[list[dict[str, Any]], list[dict[str, Any]]],
) -> None:
    """Invariant 23: permuting the workers gives an exactly equal result for whole-number inputs."""
    workers, permuted = pair
    assert aggregate_spec_decode_counters(workers) == aggregate_spec_decode_counters(permuted)


@given(st.lists(worker_counters(), max_size=4), st.lists(worker_counters(), max_size=4))
def test_aggregation_preserves_sums(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> None:
    """Invariant 23: agg(a + b) == agg(a) ⊕ agg(b) key-wise, and agg([]) == {}."""
    assert aggregate_spec_decode_counters(a + b) == _oplus(
        aggregate_spec_decode_counters(a), aggregate_spec_decode_counters(b)
    )
    assert aggregate_spec_decode_counters([]) == {}


@given(st.lists(worker_counters(integer_valued=False), max_size=4))
def test_aggregation_of_snapshots_equals_aggregation_of_dicts(workers: list[dict[str, Any]]) -> None:
    """Invariant 23: a CounterSnapshot aggregates exactly like the worker dict it was built from."""
    snapshots = [CounterSnapshot.from_worker_dict(w) for w in workers]
    assert aggregate_spec_decode_counters(snapshots) == aggregate_spec_decode_counters(workers)


# ---------------------------------------------------------------------------------------------------- 24


@st.composite
def engine_split(draw: st.DrawFn) -> tuple[list[SimpleNamespace], SimpleNamespace]:
    """One metric object and the same series split over 1-4 engines (any other label unchanged)."""
    extra = draw(st.sampled_from([{}, {FINISHED_REASON_LABEL: draw(st.sampled_from(FINISH_REASONS))}]))
    base = {"model_name": draw(st.text(max_size=3)), **extra}
    engines = draw(st.integers(1, 4))
    labels = [{**base, "engine": str(e)} for e in range(engines)]
    kind = draw(st.sampled_from(["counter", "histogram", "vector"]))
    count = st.integers(0, 10**6)
    if kind == "counter":
        name = draw(st.sampled_from(KEPT_COUNTER_FAMILIES + REQUEST_SUCCESS_COUNTERS))
        values = [draw(count) for _ in labels]
        parts = [
            SimpleNamespace(name=name, labels=lab, value=v) for lab, v in zip(labels, values, strict=True)
        ]
        merged = SimpleNamespace(name=name, labels=base, value=sum(values))
    elif kind == "histogram":
        name = draw(st.sampled_from(KEPT_HISTOGRAM_FAMILIES))
        pairs = [(draw(count), float(draw(count))) for _ in labels]
        parts = [
            SimpleNamespace(name=name, labels=lab, count=c, sum=s, buckets={})
            for lab, (c, s) in zip(labels, pairs, strict=True)
        ]
        merged = SimpleNamespace(
            name=name, labels=base, count=sum(c for c, _ in pairs), sum=sum(s for _, s in pairs), buckets={}
        )
    else:
        vectors = [draw(st.lists(count, max_size=5)) for _ in labels]
        width = max(len(v) for v in vectors)
        total = [sum(v[i] for v in vectors if i < len(v)) for i in range(width)]
        parts = [
            SimpleNamespace(name=PER_POS, labels=lab, values=v)
            for lab, v in zip(labels, vectors, strict=True)
        ]
        merged = SimpleNamespace(name=PER_POS, labels=base, values=total)
    return draw(st.permutations(parts)), merged


@given(engine_split())
def test_engine_label_is_summed_over(split: tuple[list[SimpleNamespace], SimpleNamespace]) -> None:
    """Invariant 24: objects differing only in their engine label equal one object holding the summed values."""
    parts, merged = split
    assert CounterSnapshot.from_vllm_metrics(parts) == CounterSnapshot.from_vllm_metrics([merged])


@given(vllm_metric_objects(), st.sampled_from(SPELLINGS))
def test_prometheus_page_gives_the_snapshot_of_its_objects(
    objects: list[SimpleNamespace], spelling: Spelling
) -> None:
    """Invariant 24 and §6.3: a rendered /metrics page, classic, with OpenMetrics family names or OpenMetrics,
    parses to the same snapshot as the metric objects it shows, so no kept counter is dropped."""
    page = render_prometheus_text(objects, spelling=spelling)
    assert CounterSnapshot.from_prometheus_text(page) == CounterSnapshot.from_vllm_metrics(objects)


@given(vllm_metric_objects(), st.sampled_from(SPELLINGS[1:]))
def test_openmetrics_spelled_pages_name_each_vllm_family_once(
    objects: list[SimpleNamespace], spelling: Spelling
) -> None:
    """§6.3: with OpenMetrics family names, the vllm: families of a page are its metric names, each once (the
    untyped half that the text parser splits off a counter is no family of its own)."""
    page = parse_prometheus_text(render_prometheus_text(objects, spelling=spelling))
    assert page.vllm_families == tuple(dict.fromkeys(m.name for m in objects if m.name.startswith("vllm:")))


@given(prometheus_pages())
def test_prometheus_snapshots_hold_only_kept_valid_values(page: str) -> None:
    """Invariant 23: every key of a parsed page is kept and every value finite and >= 0."""
    snapshot = CounterSnapshot.from_prometheus_text(page)
    for key, value in snapshot.values.items():
        assert is_kept(key)
        assert all(math.isfinite(v) and v >= 0 for v in (value if isinstance(value, tuple) else (value,)))


# ---------------------------------------------------------------------------------------------------- 25


@given(aggregated_counter_pairs())
def test_engine_step_metrics_are_non_negative_known_keys(
    pair: tuple[AggregatedCounters, AggregatedCounters],
) -> None:
    """Invariant 25: the keys are among the six outputs and every value is >= 0, counter resets included."""
    start, end = pair
    result = compute_engine_step_metrics(start, end)
    assert set(result) <= ENGINE_KEYS
    assert all(type(v) is float and v >= 0 for v in result.values())


@given(aggregated_counter_pairs())
def test_ok_plus_failed_equals_the_finished_request_delta(
    pair: tuple[AggregatedCounters, AggregatedCounters],
) -> None:
    """Invariant 25: generations_ok + generations_failed is the sum of the non-negative finished_reason deltas."""
    start, end = pair
    result = compute_engine_step_metrics(start, end)
    deltas = {
        k: v - start.get(k, 0.0)
        for k, v in end.items()
        if isinstance(k, str) and k.startswith(OUTCOME_PREFIX) and v >= start.get(k, 0.0)
    }
    if deltas:
        ok = sum(d for k, d in deltas.items() if k[len(OUTCOME_PREFIX) :] in OK_FINISH_REASONS)
        assert _close(result["vllm/generations_ok"], ok)
        assert _close(result["vllm/generations_ok"] + result["vllm/generations_failed"], sum(deltas.values()))
    else:
        assert "vllm/generations_ok" not in result
        assert "vllm/generations_failed" not in result


@given(aggregated_counter_pairs())
def test_series_absent_from_end_never_appear(pair: tuple[AggregatedCounters, AggregatedCounters]) -> None:
    """Invariant 25: a series absent from end is never reported, whatever start holds."""
    start, end = pair
    result = compute_engine_step_metrics(start, end)
    series = {
        "vllm/prompt_tokens": ["vllm:prompt_tokens"],
        "vllm/generation_tokens": ["vllm:generation_tokens"],
        "vllm/prompt_length_mean": ["vllm:request_prompt_tokens|sum", "vllm:request_prompt_tokens|count"],
        "vllm/generation_length_mean": [
            "vllm:request_generation_tokens|sum",
            "vllm:request_generation_tokens|count",
        ],
    }
    for output, keys in series.items():
        if any(k not in end for k in keys):
            assert output not in result
    if not any(isinstance(k, str) and k.startswith(OUTCOME_PREFIX) for k in end):
        assert "vllm/generations_ok" not in result


@given(aggregated_counter_pairs(resets=False))
def test_monotone_prompt_tokens_equal_end_minus_start(
    pair: tuple[AggregatedCounters, AggregatedCounters],
) -> None:
    """Invariant 25: without resets, vllm/prompt_tokens is end - start of its series."""
    start, end = pair
    result = compute_engine_step_metrics(start, end)
    if "vllm:prompt_tokens" in end:
        assert result["vllm/prompt_tokens"] == end["vllm:prompt_tokens"] - start.get(
            "vllm:prompt_tokens", 0.0
        )
    else:
        assert "vllm/prompt_tokens" not in result


@given(aggregated_counter_pairs())
def test_same_snapshot_has_no_means_and_zero_spec_totals(
    pair: tuple[AggregatedCounters, AggregatedCounters],
) -> None:
    """Invariants 25 and 26: compute(x, x) has no mean keys, D = T = A = 0, length 1.0 and rate 0.0."""
    _, end = pair
    engine = compute_engine_step_metrics(end, end)
    assert "vllm/prompt_length_mean" not in engine
    assert "vllm/generation_length_mean" not in engine
    assert all(v == 0.0 for v in engine.values())
    spec = compute_spec_decode_metrics(end, end)
    assert [spec[k] for k in HEADLINE_KEYS] == [0.0, 0.0, 0.0, 1.0, 0.0]
    assert compute_engine_step_metrics({}, {}) == {}


# ---------------------------------------------------------------------------------------------------- 26


@given(aggregated_counter_pairs(integer_valued=False))
def test_spec_decode_headline_keys_and_rate(pair: tuple[AggregatedCounters, AggregatedCounters]) -> None:
    """Invariant 26: the five scalar keys come first and the rate is A / T when T > 0."""
    start, end = pair
    result = compute_spec_decode_metrics(start, end)
    assert list(result)[:5] == HEADLINE_KEYS
    tokens = end.get(SPEC_DECODE_NUM_DRAFT_TOKENS, 0.0) - start.get(SPEC_DECODE_NUM_DRAFT_TOKENS, 0.0)
    accepted = end.get(SPEC_DECODE_NUM_ACCEPTED_TOKENS, 0.0) - start.get(SPEC_DECODE_NUM_ACCEPTED_TOKENS, 0.0)
    if tokens > 0:
        assert _close(result["vllm/spec_acceptance_rate"], accepted / tokens)
    assert all(type(v) is float for v in result.values())


@given(
    st.integers(1, 10**6),
    st.lists(st.integers(0, 10**6), min_size=1, max_size=6),
    st.fixed_dictionaries(
        {},
        optional={
            SPEC_DECODE_NUM_DRAFTS: counter_values(),
            SPEC_DECODE_NUM_ACCEPTED_TOKENS: counter_values(),
        },
    ),
    st.lists(counter_values(integer_valued=False), min_size=6, max_size=6),
)
def test_acceptance_length_is_one_plus_the_per_position_rates(
    drafts: int, per_position: list[int], base: dict[str, float], starts: list[float]
) -> None:
    """Invariant 26: when the per-position deltas sum to A, length == 1 + Σ per-position rates."""
    start: AggregatedCounters = {key: value for key, value in base.items()}
    start.update({(PER_POS, i + 1): starts[i] for i in range(len(per_position))})
    accepted = float(sum(per_position))
    end: AggregatedCounters = {
        SPEC_DECODE_NUM_DRAFTS: start.get(SPEC_DECODE_NUM_DRAFTS, 0.0) + drafts,
        SPEC_DECODE_NUM_ACCEPTED_TOKENS: start.get(SPEC_DECODE_NUM_ACCEPTED_TOKENS, 0.0) + accepted,
        **{(PER_POS, i + 1): starts[i] + n for i, n in enumerate(per_position)},
    }
    result = compute_spec_decode_metrics(start, end)
    rates = [result[f"vllm/spec_acceptance_rate-pos-{i + 1}"] for i in range(len(per_position))]
    assert math.isclose(result["vllm/spec_acceptance_length"], 1.0 + sum(rates), rel_tol=1e-9)
    assert math.isclose(result["vllm/spec_acceptance_length"], 1.0 + accepted / drafts, rel_tol=1e-9)


# ---------------------------------------------------------------------------------------------------- snapshots


@given(counter_snapshots(integer_valued=False))
def test_snapshots_round_trip_through_json_and_pickle(snapshot: CounterSnapshot) -> None:
    """Snapshots cross process boundaries: JSON and pickle give an equal snapshot with equal hash."""
    for clone in (
        CounterSnapshot.model_validate_json(snapshot.model_dump_json()),
        pickle.loads(pickle.dumps(snapshot)),
        CounterSnapshot(values=snapshot.to_worker_dict()),
    ):
        assert clone == snapshot
        assert hash(clone) == hash(snapshot)
        assert list(clone.values) == list(snapshot.values)


# ---------------------------------------------------------------------------------------------------- 1 and 2

hashable_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=10**300, max_value=10**320),
    st.floats(),
    st.text(max_size=30),
    st.binary(max_size=5),
    st.sampled_from((*KEPT_COUNTER_FAMILIES, PER_POS, "vllm:request_success|finished_reason=stop")),
    st.text(min_size=3000, max_size=3000),
)
leaves = st.one_of(
    hashable_leaves,
    st.builds(np.array, st.one_of(st.integers(0, 9), st.floats(0, 9), st.booleans())),  # 0-d arrays
    st.builds(np.array, st.lists(st.booleans(), max_size=3)),
)
hostile = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(
            st.one_of(hashable_leaves, st.tuples(hashable_leaves, hashable_leaves)), inner, max_size=4
        ),
        st.builds(
            SimpleNamespace,
            name=inner,
            labels=inner,
            value=inner,
            values=inner,
            count=inner,
            sum=inner,
        ),
    ),
    max_leaves=12,
)


def _check_error(err: ContractError) -> None:
    assert isinstance(err, ContractTypeError | CounterSnapshotError)
    assert isinstance(err, TypeError if isinstance(err, ContractTypeError) else ValueError)
    assert_contract_error(err)


CALLS: list[Callable[[Any, Any], object]] = [
    lambda a, _: encode_counter_key(a, "sum"),
    lambda a, b: encode_counter_key(a, b),
    lambda a, _: is_kept(a),
    lambda a, _: CounterSnapshot.from_worker_dict(a),
    lambda a, _: CounterSnapshot.from_vllm_metrics(a),
    lambda a, _: CounterSnapshot.from_vllm_metrics([a]),
    lambda a, _: CounterSnapshot.from_prometheus_text(a),
    lambda a, _: parse_prometheus_text(a),
    lambda a, b: aggregate_spec_decode_counters([a, b]),
    lambda a, _: aggregate_spec_decode_counters(a),
    lambda a, b: first_delta(a, b),
    lambda a, b: first_delta(a, ("vllm:prompt_tokens",), b),
    lambda a, b: mean_from_histogram(a, b),
    lambda a, b: compute_engine_step_metrics(a, b),
    lambda a, b: compute_spec_decode_metrics(a, b),
]


@given(st.sampled_from(range(len(CALLS))), hostile, hostile)
def test_hostile_inputs_raise_only_bounded_contract_errors(index: int, a: Any, b: Any) -> None:
    """Invariants 1 and 2: any input raises only picklable, bounded ContractErrors and is never mutated."""
    before = copy.deepcopy((a, b))
    try:
        CALLS[index](a, b)
    except ContractError as err:
        _check_error(err)
    assert repr((a, b)) == repr(before)


def _mutated_page(data: st.DataObject) -> str:
    page = data.draw(prometheus_pages())
    at = data.draw(st.integers(0, len(page)))
    return page[:at] + data.draw(st.text(max_size=10)) + page[at + data.draw(st.integers(0, 10)) :]


@given(st.data())
def test_damaged_prometheus_pages_raise_only_counter_snapshot_errors(data: st.DataObject) -> None:
    """Invariant 1: a damaged /metrics page either parses or raises a bounded CounterSnapshotError."""
    try:
        snapshot = CounterSnapshot.from_prometheus_text(_mutated_page(data))
    except CounterSnapshotError as err:
        _check_error(err)
    else:
        assert all(is_kept(k) for k in snapshot.values)
