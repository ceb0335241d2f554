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
    per_engine_delta,
)
from rl_contracts.testing import assert_contract_error
from rl_contracts.testing.strategies import EngineFleetStep, engine_fleet_steps


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
