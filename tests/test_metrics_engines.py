"""Unit tests of per-engine deltas: engine identities, restarts reported as resets, duplicates and swaps refused.

The three metric faults of issue 24 are reproduced with stand-ins: an engine restart hidden by the sum, two engines
of one process read from one registry, and start/end snapshots passed in the wrong order.
"""

from __future__ import annotations

import copy
import os
import pickle
import re
import socket
from types import SimpleNamespace as NS
from typing import Any

import numpy as np
import pydantic
import pytest

from rl_contracts.errors import ContractTypeError, CounterSnapshotError
from rl_contracts.metrics import (
    ENGINES_RESET_KEY,
    CounterSnapshot,
    EngineIdentity,
    EngineReset,
    FleetCounters,
    aggregate_spec_decode_counters,
    compute_engine_step_metrics,
    compute_spec_decode_metrics,
    parse_prometheus_text,
    per_engine_delta,
    this_process,
)
from rl_contracts.testing import assert_contract_error

GEN = "vllm:generation_tokens"
PROMPT = "vllm:prompt_tokens"
STOP = "vllm:request_success|finished_reason=stop"
ABORT = "vllm:request_success|finished_reason=abort"
DRAFTS = "vllm:spec_decode_num_drafts"
ACCEPTED = "vllm:spec_decode_num_accepted_tokens"
PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos"


def worker(process: str, at: float, **values: Any) -> CounterSnapshot:
    """A snapshot of one named engine at instant ``at``; keyword names map to the counters above."""
    keys = {"gen": GEN, "prompt": PROMPT, "stop": STOP, "abort": ABORT, "drafts": DRAFTS, "per_pos": PER_POS}
    return CounterSnapshot.from_worker_dict(
        {keys[k]: v for k, v in values.items()}, process=process, taken_at=at
    )


def objects(engine: str, model: str, **values: float) -> list[NS]:
    """``LLM.get_metrics()`` stand-ins: one Counter per value, labelled with the engine and the model name."""
    names = {"gen": GEN, "prompt": PROMPT}
    return [
        NS(name=names[k], labels={"engine": engine, "model_name": model}, value=v) for k, v in values.items()
    ]


def _error(call: Any) -> CounterSnapshotError:
    with pytest.raises(CounterSnapshotError) as info:
        call()
    assert_contract_error(info.value)
    return info.value


# ---------------------------------------------------------------------------------------------------- fault 1


def test_a_restart_on_one_engine_is_a_reset_not_folded_into_the_others() -> None:
    """Issue 24 fault 1: engine 0 1000->1100 while engine 1 restarts 900->850 gives 100 and one reset, not 50."""
    start = aggregate_spec_decode_counters([worker("e0", 1.0, gen=1000), worker("e1", 1.0, gen=900)])
    end = aggregate_spec_decode_counters([worker("e0", 2.0, gen=1100), worker("e1", 2.0, gen=850)])
    assert compute_engine_step_metrics(dict(start), dict(end)) == {
        "vllm/generation_tokens": 50.0
    }  # the fault
    assert compute_engine_step_metrics(start, end) == {
        "vllm/generation_tokens": 100.0,
        ENGINES_RESET_KEY: 1.0,
    }
    step = per_engine_delta(start, end)
    assert step.delta == {GEN: 100.0}
    assert [engine.process for engine in step.engines] == ["e0"]
    e1 = EngineIdentity(process="e1")
    assert step.resets == (EngineReset(e1, e1, GEN, 900.0, 850.0),)


def test_the_sum_of_totals_hides_the_restart_that_per_engine_deltas_report() -> None:
    """When the other engines outgrow the restarted one, the totals' delta is a plausible wrong number."""
    start = [worker("e0", 1.0, gen=1000, stop=10), worker("e1", 1.0, gen=900, stop=9)]
    end = [worker("e0", 2.0, gen=1400, stop=14), worker("e1", 2.0, gen=850, stop=1)]
    totals = compute_engine_step_metrics(
        dict(aggregate_spec_decode_counters(start)), dict(aggregate_spec_decode_counters(end))
    )
    assert totals["vllm/generation_tokens"] == 350.0  # 400 on e0, e1 unknown: folded into a plausible 350
    per_engine = compute_engine_step_metrics(
        aggregate_spec_decode_counters(start), aggregate_spec_decode_counters(end)
    )
    assert per_engine == {
        "vllm/generation_tokens": 400.0,
        "vllm/generations_ok": 4.0,
        "vllm/generations_failed": 0.0,
        ENGINES_RESET_KEY: 1.0,
    }


@pytest.mark.parametrize(
    ("before", "after", "key", "values"),
    [
        ({"gen": 5, "stop": 2}, {"gen": 5}, STOP, (2.0, 0.0)),  # a series gone is 0 at the end
        ({"per_pos": [4, 3]}, {"per_pos": [5, 1]}, (PER_POS, 2), (3.0, 1.0)),  # 1-based vector position
        ({"per_pos": [4, 3]}, {"per_pos": [5]}, (PER_POS, 2), (3.0, 0.0)),
    ],
)
def test_the_reset_names_the_first_series_that_went_backwards(
    before: dict[str, Any], after: dict[str, Any], key: object, values: tuple[float, float]
) -> None:
    """Missing series and vector positions count as 0; the reset names the series and both values."""
    step = per_engine_delta([worker("e", 1.0, **before)], [worker("e", 2.0, **after)])
    assert step.delta == {}
    assert step.engines == ()
    [reset] = step.resets
    assert (reset.key, reset.start, reset.end) == (key, *values)


def test_spec_decode_metrics_per_engine_leave_the_reset_engine_out() -> None:
    """Spec-decode metrics sum the engines that did not restart and end with vllm/engines_reset."""
    start = aggregate_spec_decode_counters(
        [worker("a", 1, drafts=10, per_pos=[5]), worker("b", 1, drafts=50)]
    )
    end = aggregate_spec_decode_counters([worker("a", 2, drafts=20, per_pos=[9]), worker("b", 2, drafts=3)])
    spec = compute_spec_decode_metrics(start, end)
    assert spec["vllm/spec_num_drafts"] == 10.0
    assert spec[f"vllm/{PER_POS}-1"] == 4.0
    assert spec["vllm/spec_acceptance_rate-pos-1"] == 0.4
    assert list(spec)[-1] == ENGINES_RESET_KEY
    assert spec[ENGINES_RESET_KEY] == 1.0
    legacy = compute_spec_decode_metrics(dict(start), dict(end))
    assert legacy["vllm/spec_num_drafts"] == -37.0  # the reference's union delta keeps the negative total
    assert ENGINES_RESET_KEY not in legacy


def test_every_engine_reset_leaves_no_plausible_zero() -> None:
    """When every engine restarted, no token or outcome value is reported, only the reset count."""
    start = aggregate_spec_decode_counters([worker("a", 1, gen=9, stop=3, abort=0)])
    end = aggregate_spec_decode_counters([worker("a", 2, gen=2, stop=1, abort=0)])
    assert compute_engine_step_metrics(start, end) == {ENGINES_RESET_KEY: 1.0}
    legacy = compute_engine_step_metrics(dict(start), dict(end))
    assert legacy["vllm/generations_ok"] == 0.0  # the totals' delta: a plausible idle step


def test_an_engine_whose_labels_changed_was_replaced() -> None:
    """One engine of a process with other labels at the end (another model name) is a reset with ``previous``."""
    start = [CounterSnapshot.from_vllm_metrics(objects("0", "old", gen=5), process="url", taken_at=1)]
    end = [CounterSnapshot.from_vllm_metrics(objects("0", "new", gen=50), process="url", taken_at=2)]
    step = per_engine_delta(start, end)
    assert step.delta == {}
    [reset] = step.resets
    assert reset.previous.labels == (("engine", "0"), ("model_name", "old"))
    assert reset.engine.labels == (("engine", "0"), ("model_name", "new"))
    assert (reset.key, reset.start, reset.end) == (None, None, None)


def test_data_parallel_engines_of_one_process_are_one_snapshot() -> None:
    """One process reporting engines 0 and 1 is one engine snapshot whose identity holds both engine labels."""
    metrics = objects("0", "m", gen=7) + objects("1", "m", gen=3)
    snapshot = CounterSnapshot.from_vllm_metrics(metrics, process="p", taken_at=0)
    assert snapshot.values == {GEN: 10.0}
    assert snapshot.engine == EngineIdentity(
        process="p", labels=(("engine", "0"), ("engine", "1"), ("model_name", "m"))
    )


# ---------------------------------------------------------------------------------------------------- fault 2


def test_two_engines_of_one_process_read_from_one_registry_are_refused() -> None:
    """Issue 24 fault 2: both LLMs of a process report the last one's engine="0" series; summing them would give
    twice that engine's counts (10 tokens, 2 generations for 34 tokens in 4 requests), so aggregation refuses."""
    registry = objects("0", "second", gen=5)  # what get_metrics() of either LLM returns
    first, second = CounterSnapshot.from_vllm_metrics(registry), CounterSnapshot.from_vllm_metrics(registry)
    err = _error(lambda: aggregate_spec_decode_counters([first, second]))
    for fragment in ("worker_metrics[0] and worker_metrics[1]", "same engine", "one Prometheus registry"):
        assert fragment in err.message
    assert err.key == first.engine.describe()  # type: ignore[union-attr]


def test_one_process_reporting_engine_zero_twice_is_refused_whatever_the_other_labels() -> None:
    """A snapshot taken before the second LLM existed and one after it both claim engine 0 of the process."""
    before_second = CounterSnapshot.from_vllm_metrics(objects("0", "first", gen=5))
    after_second = CounterSnapshot.from_vllm_metrics(objects("0", "second", gen=1))
    _error(lambda: aggregate_spec_decode_counters([before_second, after_second]))


def test_the_default_process_is_this_one_and_other_processes_are_told_apart() -> None:
    """The default process is hostname:pid; the same series read by two named processes aggregate."""
    assert this_process() == f"{socket.gethostname()}:{os.getpid()}"
    registry = objects("0", "m", gen=5)
    assert CounterSnapshot.from_vllm_metrics(registry).engine.process == this_process()  # type: ignore[union-attr]
    shipped = [CounterSnapshot.from_vllm_metrics(registry, process=f"rank{r}") for r in range(2)]
    assert aggregate_spec_decode_counters(shipped) == {GEN: 10.0}
    dp = [CounterSnapshot.from_vllm_metrics(objects(e, "m", gen=5), process="p") for e in "01"]
    assert aggregate_spec_decode_counters(dp) == {GEN: 10.0}  # two engine labels of one process


def test_worker_dicts_without_process_are_engines_by_position() -> None:
    """Worker dicts and snapshots without engines keep SPEC §6.4's plain sum; the position in the list is the
    engine, so a restart on one is a reset, never netted against growth on another (issue 30 item 7)."""
    start = aggregate_spec_decode_counters([{GEN: 10}, {GEN: 10}])
    end = aggregate_spec_decode_counters([CounterSnapshot.from_worker_dict({GEN: 13}), {GEN: 9}])
    assert start == {GEN: 20.0}
    assert [s.engine.process for s in end.snapshots or ()] == ["worker_metrics[0]", "worker_metrics[1]"]  # type: ignore[union-attr]
    assert compute_engine_step_metrics(dict(start), dict(end)) == {"vllm/generation_tokens": 2.0}  # the fault
    assert compute_engine_step_metrics(start, end) == {
        "vllm/generation_tokens": 3.0,
        "vllm/engines_reset": 1.0,
    }
    two = [CounterSnapshot.from_worker_dict({GEN: 1}, process="w") for _ in range(2)]
    _error(lambda: aggregate_spec_decode_counters(two))


# ---------------------------------------------------------------------------------------------------- fault 3


def test_swapped_snapshots_are_an_error_not_an_idle_step() -> None:
    """Issue 24 fault 3: end and start passed in the wrong order raise, instead of generations_ok 0.0."""
    start = aggregate_spec_decode_counters([worker("e", 1.0, gen=10, stop=2, abort=0)])
    end = aggregate_spec_decode_counters([worker("e", 2.5, gen=30, stop=5, abort=0)])
    assert compute_engine_step_metrics(dict(end), dict(start))["vllm/generations_ok"] == 0.0  # the fault
    for function in (compute_engine_step_metrics, compute_spec_decode_metrics):
        err = _error(lambda f=function: f(end, start))
        assert "swapped" in err.message
        assert "1.500000 s before its start snapshot" in err.message
    assert (
        compute_engine_step_metrics(end, end)["vllm/generation_tokens"] == 0.0
    )  # one instant: a 0-length step


def test_snapshots_read_in_order_by_default_are_never_swapped() -> None:
    """Default instants follow the order in which snapshots are built."""
    first = CounterSnapshot.from_vllm_metrics(objects("0", "m", gen=1))
    second = CounterSnapshot.from_vllm_metrics(objects("0", "m", gen=4))
    assert first.taken_at is not None
    assert second.taken_at is not None
    assert first.taken_at <= second.taken_at
    assert per_engine_delta([first], [second]).delta == {GEN: 3.0}


# ---------------------------------------------------------------------------------------------------- matching


def test_engines_on_one_side_only_are_listed() -> None:
    """An engine missing from the end, or new at the end, is an error naming it and how to keep names stable."""
    start = [worker("a", 1, gen=1), worker("b", 1, gen=1)]
    err = _error(lambda: per_engine_delta(start, [worker("a", 2, gen=2)]))
    assert "only in start_counters ['b {}']" in err.message
    assert "process=<DP rank or actor name>" in err.message
    err = _error(lambda: per_engine_delta(start[:1], [worker("a", 2, gen=2), worker("c", 2, gen=2)]))
    assert "only in end_counters ['c {}']" in err.message


def test_a_changed_fleet_counters_is_refused() -> None:
    """Items changed after aggregation are not read two ways."""
    start = aggregate_spec_decode_counters([worker("a", 1, gen=1)])
    end = aggregate_spec_decode_counters([worker("a", 2, gen=5)])
    end[GEN] = 100.0
    err = _error(lambda: compute_engine_step_metrics(start, end))
    assert "changed after aggregate_spec_decode_counters" in err.message


def test_per_engine_delta_arguments() -> None:
    """Lists of snapshots work like their aggregate; plain dicts, foreign items and engineless snapshots raise."""
    start, end = [worker("a", 1, gen=1)], [worker("a", 2, gen=5)]
    assert per_engine_delta(start, end) == per_engine_delta(
        aggregate_spec_decode_counters(start), aggregate_spec_decode_counters(end)
    )
    with pytest.raises(ContractTypeError, match="plain mapping of totals") as info:
        per_engine_delta({GEN: 1.0}, end)  # type: ignore[arg-type]
    assert_contract_error(info.value)
    with pytest.raises(ContractTypeError, match=r"start_counters\[0\] must be a CounterSnapshot"):
        per_engine_delta([{GEN: 1.0}], end)  # type: ignore[list-item]
    with pytest.raises(ContractTypeError, match="start_counters must be"):
        per_engine_delta("abc", end)  # type: ignore[arg-type]
    err = _error(lambda: per_engine_delta([CounterSnapshot.from_worker_dict({GEN: 1})], end))
    assert "names no engine" in err.message
    err = _error(lambda: per_engine_delta(aggregate_spec_decode_counters([{GEN: 1}]), end))
    assert "worker_metrics[0]" in err.message
    assert "a worker dict's engine is its position" in err.message


# ---------------------------------------------------------------------------------------------------- types


def test_fleet_counters_is_the_plain_dict_and_keeps_its_snapshots() -> None:
    """It equals the plain dict of its items, pickles and copies with its snapshots; dict() drops them."""
    snapshots = [worker("a", 1, gen=1, per_pos=[2]), worker("b", 1, gen=3)]
    fleet = aggregate_spec_decode_counters(snapshots)
    assert isinstance(fleet, FleetCounters)
    assert fleet == {GEN: 4.0, (PER_POS, 1): 2.0}
    assert repr(fleet) == repr(dict(fleet))
    assert fleet.snapshots == tuple(snapshots)
    for twin in (pickle.loads(pickle.dumps(fleet)), copy.copy(fleet), copy.deepcopy(fleet)):
        assert isinstance(twin, FleetCounters)
        assert twin == fleet
        assert twin.snapshots is not None
        assert [s.engine for s in twin.snapshots] == [s.engine for s in snapshots]
    assert type(dict(fleet)) is dict
    assert type(fleet.copy()) is dict


def test_snapshot_equality_ignores_where_and_when() -> None:
    """Equal counters are equal snapshots whatever their engine and instant; the hash follows."""
    a = CounterSnapshot.from_worker_dict({GEN: 1}, process="a", taken_at=1)
    b = CounterSnapshot.from_worker_dict({GEN: 1})
    assert a == b
    assert hash(a) == hash(b)
    assert repr(b) == "CounterSnapshot(values={'vllm:generation_tokens': 1.0})"
    assert "engine=EngineIdentity(process='a', labels=())" in repr(a)
    assert "taken_at=1.0" in repr(a)


def test_from_worker_dict_without_process_keeps_only_an_instant_given() -> None:
    """Without process there is no engine; taken_at alone is kept when given."""
    assert CounterSnapshot.from_worker_dict({GEN: 1}).taken_at is None
    snapshot = CounterSnapshot.from_worker_dict({GEN: 1}, taken_at=3)
    assert (snapshot.engine, snapshot.taken_at) == (None, 3.0)


@pytest.mark.parametrize(
    ("kwargs", "error", "fragment"),
    [
        ({"process": 3}, ContractTypeError, "process must be a str"),
        ({"process": ""}, CounterSnapshotError, "non-empty str"),
        ({"taken_at": True}, ContractTypeError, "taken_at must be a number"),
        ({"taken_at": "1"}, ContractTypeError, "taken_at must be a number"),
        ({"taken_at": float("nan")}, CounterSnapshotError, "finite"),
        ({"taken_at": float("inf")}, CounterSnapshotError, "finite"),
    ],
)
@pytest.mark.parametrize(
    "build",
    [
        lambda **kw: CounterSnapshot.from_vllm_metrics([], **kw),
        lambda **kw: CounterSnapshot.from_prometheus_text("", **kw),
        lambda **kw: parse_prometheus_text("", **kw),
        lambda **kw: CounterSnapshot.from_worker_dict({}, **{"process": "p", **kw}),
    ],
)
def test_process_and_taken_at_arguments_are_checked(
    build: Any, kwargs: dict[str, Any], error: type[Exception], fragment: str
) -> None:
    """A bad process or instant raises a bounded contract error naming it, from every constructor."""
    with pytest.raises(error, match=fragment) as info:
        build(**kwargs)
    assert_contract_error(info.value)


@pytest.mark.parametrize(
    "labels",
    [{"engine": 0}, {1: "x"}, {"engine": None}],
)
def test_labels_that_are_not_strings_cannot_name_an_engine(labels: dict[Any, Any]) -> None:
    """A kept series whose labels are not strings is a CounterSnapshotError (vLLM's labels are strings)."""
    err = _error(lambda: CounterSnapshot.from_vllm_metrics([NS(name=GEN, labels=labels, value=1)]))
    assert "is not a str" in err.message


def test_labels_of_unkept_series_and_outcome_labels_are_not_identity() -> None:
    """Gauges, finished_reason and the page's position label do not name the engine."""
    page = (
        '# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{engine="0",x="y"} 1\n'
        "# TYPE vllm:request_success_total counter\n"
        'vllm:request_success_total{engine="0",finished_reason="stop"} 2\n'
        f'# TYPE {PER_POS}_total counter\n{PER_POS}_total{{engine="0",position="1"}} 3\n'
    )
    snapshot = CounterSnapshot.from_prometheus_text(page, process="u")
    assert snapshot.engine == EngineIdentity(process="u", labels=(("engine", "0"),))


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"process": ""}, "non-empty str"),
        ({"process": 1}, "non-empty str"),
        ({"process": "p", "labels": "ab"}, "(name, value) pairs"),
        ({"process": "p", "labels": {"a": "b"}}, "(name, value) pairs"),
        (
            {"process": "p", "labels": np.array(1)},
            "(name, value) pairs",
        ),  # 0-d: iterating it raises TypeError
        ({"process": "p", "labels": [("a", 1)]}, "(str, str) pair"),
        ({"process": "p", "labels": [("a", "b", "c")]}, "(str, str) pair"),
    ],
)
def test_engine_identity_validation(kwargs: dict[str, Any], fragment: str) -> None:
    """Direct construction of an identity validates its process and labels (pydantic ValidationError)."""
    with pytest.raises(pydantic.ValidationError, match=re.escape(fragment)):
        EngineIdentity(**kwargs)


def test_engine_identity_sorts_dedupes_and_describes_within_bounds() -> None:
    """Labels are sorted and distinct; describe() is bounded and quotes every label."""
    identity = EngineIdentity(process="p" * 500, labels=[("b", "2"), ("a", "1"), ("b", "2")])
    assert identity.labels == (("a", "1"), ("b", "2"))
    assert len(identity.describe()) == 200
    assert EngineIdentity(process="h:1", labels=[("engine", "0")]).describe() == 'h:1 {engine="0"}'
    assert identity == pickle.loads(pickle.dumps(identity))


def test_a_snapshot_with_an_engine_needs_an_instant() -> None:
    """Direct construction with an engine and no taken_at is refused (a per-engine delta needs the order)."""
    with pytest.raises(pydantic.ValidationError, match="needs taken_at"):
        CounterSnapshot(values={}, engine=EngineIdentity(process="p"))
    with pytest.raises(pydantic.ValidationError, match="taken_at must be a number"):
        CounterSnapshot(values={}, taken_at="soon")
    built = CounterSnapshot(values={GEN: 2}, engine=EngineIdentity(process="p"), taken_at=5)
    assert per_engine_delta([built], [built]).delta == {GEN: 0.0}


# ------------------------------------------------------------------------------- issue 30: counters that cannot hide


def _page(gen: dict[str, int], stop: dict[str, int] | None = None) -> str:
    """A vLLM ``/metrics`` page of one process serving data-parallel engines, one ``engine`` label each."""
    lines = ["# TYPE vllm:generation_tokens counter"]
    lines += [f'vllm:generation_tokens_total{{engine="{e}",model_name="m"}} {v}' for e, v in gen.items()]
    lines.append("# TYPE vllm:request_success counter")
    for e, v in (stop or {}).items():
        lines.append(f'vllm:request_success_total{{engine="{e}",finished_reason="stop",model_name="m"}} {v}')
    return "\n".join(lines) + "\n"


def test_a_prometheus_decrease_on_one_engine_label_is_a_reset_not_netted() -> None:
    """One page, engine="0" +100 while engine="1" goes 900 -> 850: 100 generated tokens and one reset, never the
    50 of the page's totals."""
    start = parse_prometheus_text(
        _page({"0": 1000, "1": 900}), process="http://h:8000", taken_at=1.0
    ).snapshot
    end = parse_prometheus_text(_page({"0": 1100, "1": 850}), process="http://h:8000", taken_at=2.0).snapshot
    assert end.values == {GEN: 1950.0}  # SPEC §6.3: the snapshot sums over the engine label
    assert [part.engine.labels for part in end.per_engine()] == [  # type: ignore[union-attr]
        (("engine", "0"), ("model_name", "m")),
        (("engine", "1"), ("model_name", "m")),
    ]
    before, after = aggregate_spec_decode_counters([start]), aggregate_spec_decode_counters([end])
    assert compute_engine_step_metrics(before, after) == {
        "vllm/generation_tokens": 100.0,
        ENGINES_RESET_KEY: 1.0,
    }
    [reset] = per_engine_delta(before, after).resets
    assert (reset.engine.labels[0], reset.start, reset.end) == (("engine", "1"), 900.0, 850.0)


def test_vllm_metric_objects_of_two_engine_labels_are_two_engines() -> None:
    """``get_metrics()`` of an LLM with two DP engines: a decrease on one is its reset, whatever the other did."""
    start = CounterSnapshot.from_vllm_metrics(
        objects("0", "m", gen=1000) + objects("1", "m", gen=900), taken_at=1
    )
    end = CounterSnapshot.from_vllm_metrics(
        objects("0", "m", gen=1100) + objects("1", "m", gen=850), taken_at=2
    )
    step = per_engine_delta([start], [end])
    assert (step.delta, len(step.resets)) == ({GEN: 100.0}, 1)
    assert len(end.per_engine()) == 2
    assert pickle.loads(pickle.dumps(end)).per_engine() == end.per_engine()
    one = CounterSnapshot.from_vllm_metrics(objects("0", "m", gen=5))
    assert one.per_engine() == (one,)


def test_the_seed_path_reports_a_restart_on_one_worker() -> None:
    """Worker dicts from get_metrics() aggregated by the seed's function: engine 0 +100, engine 1 900 -> 850 is
    100 tokens and a reset, not 50 (the reference's delta of the sums)."""
    start = aggregate_spec_decode_counters([{GEN: 1000}, {GEN: 900}])
    end = aggregate_spec_decode_counters([{GEN: 1100}, {GEN: 850}])
    assert compute_engine_step_metrics(dict(start), dict(end)) == {
        "vllm/generation_tokens": 50.0
    }  # the fault
    assert compute_engine_step_metrics(start, end) == {
        "vllm/generation_tokens": 100.0,
        ENGINES_RESET_KEY: 1.0,
    }
    assert compute_spec_decode_metrics(start, end)[ENGINES_RESET_KEY] == 1.0


def test_the_seed_path_refuses_swapped_worker_dicts() -> None:
    """Start and end worker lists passed swapped raise instead of reporting an idle step (generations_ok 0.0)."""
    start = aggregate_spec_decode_counters([{GEN: 10, STOP: 2, ABORT: 0}, {GEN: 5, STOP: 1}])
    end = aggregate_spec_decode_counters([{GEN: 30, STOP: 5, ABORT: 0}, {GEN: 9, STOP: 3}])
    assert compute_engine_step_metrics(dict(end), dict(start))["vllm/generations_ok"] == 0.0  # the fault
    for function in (compute_engine_step_metrics, compute_spec_decode_metrics):
        assert "swapped" in _error(lambda f=function: f(end, start)).message


def test_worker_lists_of_different_lengths_are_an_error() -> None:
    """A worker's position is its engine, so start and end lists of different lengths cannot be matched."""
    start = aggregate_spec_decode_counters([{GEN: 10}, {GEN: 5}])
    end = aggregate_spec_decode_counters([{GEN: 30}])
    err = _error(lambda: compute_engine_step_metrics(start, end))
    assert "worker_metrics[1]" in err.message
    assert "equal length" in err.message


def test_an_acceptance_vector_that_disagrees_with_the_accepted_delta_is_refused() -> None:
    """A per-position vector under-counted by the DP size (speculators #1095) is an error naming both figures."""
    start = aggregate_spec_decode_counters([{ACCEPTED: 0, PER_POS: [0, 0]}, {ACCEPTED: 0, PER_POS: [0, 0]}])
    whole = aggregate_spec_decode_counters(
        [{ACCEPTED: 60, PER_POS: [40, 20]}, {ACCEPTED: 60, PER_POS: [40, 20]}]
    )
    assert compute_spec_decode_metrics(start, whole)["vllm/spec_num_accepted_tokens"] == 120.0
    halved = aggregate_spec_decode_counters(
        [{ACCEPTED: 60, PER_POS: [20, 10]}, {ACCEPTED: 60, PER_POS: [20, 10]}]
    )
    for before, after in ((start, halved), (dict(start), dict(halved))):
        err = _error(lambda b=before, a=after: compute_spec_decode_metrics(b, a))
        assert "sum to 60.0" in err.message
        assert "accepted-token delta (vllm:spec_decode_num_accepted_tokens) is 120.0" in err.message
        assert err.key == PER_POS
