"""Property tests of per-engine deltas (issue 24): restarts reported per engine, never folded into the others.

Fleets come from ``rl_contracts.testing.strategies.engine_fleet_steps``, which computes the expected per-engine
delta by hand.
"""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rl_contracts.errors import CounterSnapshotError
from rl_contracts.metrics import (
    ENGINES_RESET_KEY,
    CounterSnapshot,
    aggregate_spec_decode_counters,
    compute_engine_step_metrics,
    compute_spec_decode_metrics,
    parse_prometheus_text,
    per_engine_delta,
)
from rl_contracts.testing import assert_contract_error
from rl_contracts.testing.strategies import EngineFleetStep, engine_fleet_steps

ACCEPTED = "vllm:spec_decode_num_accepted_tokens"
PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos"


def _process(snapshot: CounterSnapshot) -> str:
    """The process that names a drawn snapshot's engine (every drawn snapshot has one)."""
    return snapshot.engine.process if snapshot.engine is not None else ""


@given(engine_fleet_steps())
def test_the_per_engine_delta_sums_exactly_the_engines_that_did_not_restart(step: EngineFleetStep) -> None:
    """The delta equals the hand sum over engines without a restart; every restarted engine is a reset, once."""
    result = per_engine_delta(step.start, step.end)
    assert result.delta == step.delta
    assert {reset.engine.process for reset in result.resets} == step.reset
    assert len(result.resets) == len(step.reset)
    assert {engine.process for engine in result.engines} == {_process(s) for s in step.end} - step.reset
    assert all(value >= 0 for value in result.delta.values())
    for reset in result.resets:
        assert reset.start is not None
        assert reset.end is not None
        assert reset.end < reset.start


@given(engine_fleet_steps())
def test_step_metrics_per_engine_equal_the_totals_delta_of_the_engines_that_did_not_restart(
    step: EngineFleetStep,
) -> None:
    """Aggregated with engines, both step functions give what the reference's delta of totals gives for the
    engines that did not restart, plus vllm/engines_reset (last) exactly when some engine restarted."""
    kept = [s for s in step.start if _process(s) not in step.reset]
    by_process = {_process(s): s for s in step.end}
    start_kept = dict(aggregate_spec_decode_counters(kept))
    end_kept = dict(aggregate_spec_decode_counters([by_process[_process(s)] for s in kept]))
    start, end = aggregate_spec_decode_counters(step.start), aggregate_spec_decode_counters(step.end)
    for function in (compute_engine_step_metrics, compute_spec_decode_metrics):
        expected = function(start_kept, end_kept)
        if step.reset:
            expected[ENGINES_RESET_KEY] = float(len(step.reset))
        result = function(start, end)
        assert result == pytest.approx(expected, rel=1e-9)
        assert list(result) == list(expected)


@given(engine_fleet_steps(resets=False))
def test_without_restarts_per_engine_and_totals_agree(step: EngineFleetStep) -> None:
    """With no restart, the per-engine metrics equal the reference's delta of the totals, key for key."""
    start, end = aggregate_spec_decode_counters(step.start), aggregate_spec_decode_counters(step.end)
    for function in (compute_engine_step_metrics, compute_spec_decode_metrics):
        assert function(start, end) == pytest.approx(function(dict(start), dict(end)), rel=1e-9)


@given(engine_fleet_steps(), st.booleans())
def test_swapped_snapshots_always_raise(step: EngineFleetStep, aggregated: bool) -> None:
    """End snapshots passed as the start (taken later) raise a bounded CounterSnapshotError, never a delta."""
    start, end = (
        (aggregate_spec_decode_counters(step.start), aggregate_spec_decode_counters(step.end))
        if aggregated
        else (step.start, step.end)
    )
    with pytest.raises(CounterSnapshotError, match="swapped") as info:
        per_engine_delta(end, start)
    assert_contract_error(info.value)


@given(engine_fleet_steps(), st.data())
def test_a_snapshot_counted_twice_is_always_refused(step: EngineFleetStep, data: st.DataObject) -> None:
    """Any fleet with one engine's snapshot repeated (another read of the same engine) is refused."""
    twice = data.draw(st.sampled_from(step.start))
    again = CounterSnapshot.from_worker_dict(twice.to_worker_dict(), process=_process(twice))
    with pytest.raises(CounterSnapshotError, match="same engine") as info:
        aggregate_spec_decode_counters([*step.start, again])
    assert_contract_error(info.value)


@given(engine_fleet_steps(), st.data())
def test_the_result_does_not_depend_on_the_order_of_engines(
    step: EngineFleetStep, data: st.DataObject
) -> None:
    """Permuting the start snapshots changes neither the delta nor the resets; fleets pickle unchanged."""
    permuted = data.draw(st.permutations(step.start))
    first, second = per_engine_delta(step.start, step.end), per_engine_delta(permuted, step.end)
    assert first.delta == second.delta
    assert first.resets == second.resets
    fleet = aggregate_spec_decode_counters(step.start)
    assert pickle.loads(pickle.dumps(fleet)).snapshots == fleet.snapshots


# ------------------------------------------------------------------------------- issue 30: counters that cannot hide

_GEN = "vllm:generation_tokens"
_ENGINE_STEPS = st.lists(
    st.tuples(st.integers(0, 10**6), st.integers(-(10**6), 10**6)), min_size=1, max_size=4
).map(lambda steps: [(start, max(start + change, 0)) for start, change in steps])
"""Per engine, its generation-token counter before and after the step (it may go back: a restart)."""


def _expected(steps: list[tuple[int, int]]) -> dict[str, float]:
    """What the step must report: the growth of the engines that did not go back, and how many did."""
    grown = [end - start for start, end in steps if end >= start]
    resets = len(steps) - len(grown)
    return {
        **({"vllm/generation_tokens": float(sum(grown))} if grown else {}),
        **({ENGINES_RESET_KEY: float(resets)} if resets else {}),
    }


def _page(values: list[int]) -> str:
    lines = [f'vllm:generation_tokens_total{{engine="{e}"}} {v}' for e, v in enumerate(values)]
    return "# TYPE vllm:generation_tokens counter\n" + "\n".join(lines) + "\n"


@given(_ENGINE_STEPS, st.sampled_from(["prometheus", "worker_dicts"]))
def test_no_decrease_on_any_engine_is_hidden_by_growth_on_another(
    steps: list[tuple[int, int]], source: str
) -> None:
    """Issue 30 item 7: for engines read from one Prometheus page (one identity per engine label) or as the
    seed's worker dicts (one identity per list position), the step reports exactly the growth of the engines that
    did not go back and counts every engine that went back in vllm/engines_reset; no decrease is netted."""
    starts, ends = [s for s, _ in steps], [e for _, e in steps]
    if source == "prometheus":
        before = [parse_prometheus_text(_page(starts), process="p", taken_at=1.0).snapshot]
        after = [parse_prometheus_text(_page(ends), process="p", taken_at=2.0).snapshot]
        start, end = aggregate_spec_decode_counters(before), aggregate_spec_decode_counters(after)
    else:
        start = aggregate_spec_decode_counters([{_GEN: v} for v in starts])
        end = aggregate_spec_decode_counters([{_GEN: v} for v in ends])
    assert compute_engine_step_metrics(start, end) == _expected(steps)
    parts = [part for snapshot in end.snapshots or () for part in snapshot.per_engine()]
    scalars = [part.values.get(_GEN, 0.0) for part in parts]
    assert all(isinstance(value, float) for value in scalars)
    assert sum(value for value in scalars if isinstance(value, float)) == end.get(_GEN, 0.0)


@given(
    st.lists(st.lists(st.integers(0, 1000), min_size=1, max_size=4), min_size=1, max_size=3),
    st.integers(0, 3),
    st.integers(1, 1000),
)
def test_an_acceptance_vector_off_its_accepted_delta_is_always_refused(
    vectors: list[list[int]], engine: int, shortfall: int
) -> None:
    """Issue 30 item 7: the step's per-position acceptance counts sum to its accepted-token delta, or the step is
    a CounterSnapshotError naming both; a consistent fleet always passes."""
    start = aggregate_spec_decode_counters([{ACCEPTED: 0, PER_POS: [0] * len(v)} for v in vectors])
    good: list[dict[str, float | list[float]]] = [
        {ACCEPTED: sum(v), PER_POS: [float(x) for x in v]} for v in vectors
    ]
    end = aggregate_spec_decode_counters(good)
    assert compute_spec_decode_metrics(start, end)["vllm/spec_num_accepted_tokens"] == float(
        sum(map(sum, vectors))
    )
    bad = [dict(w) for w in good]
    bad[engine % len(bad)][ACCEPTED] = sum(vectors[engine % len(bad)]) + shortfall
    with pytest.raises(CounterSnapshotError) as info:
        compute_spec_decode_metrics(start, aggregate_spec_decode_counters(bad))
    assert_contract_error(info.value)
    assert "accepted-token delta" in info.value.message
