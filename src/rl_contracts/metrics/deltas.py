"""A step's counter delta: taken per engine and summed, with engines that restarted reported, not folded in; and
read by candidate names, the first present series and histogram means (SPEC §6.5).

The delta of summed counters hides a restart: engine 0 going 1000 -> 1100 while engine 1 restarts 900 -> 850
sums to 1900 -> 1950, a plausible step of 50.  Taken per engine, engine 0 counts 100 and engine 1 is a *reset*:
one of its series went backwards, so its counters restarted at an unknown moment of the step and none of its
series is counted.  Start and end snapshots are matched by engine identity; a process whose one engine carries
other labels at the end (a server restarted with another model name) was replaced, which is a reset too.  An end
snapshot taken before its start snapshot (the arguments swapped) is an error, never a plausible idle step.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from .._internal.messages import render, render_list, shorten, type_name
from ..checks import real_or_none, require_str
from ..errors import ContractTypeError, CounterSnapshotError
from .aggregation import POSITION_PROCESS, FleetCounters, aggregate_spec_decode_counters
from .names import HISTOGRAM_COUNT_PART, HISTOGRAM_SUM_PART, encode_counter_key
from .snapshot import CounterSnapshot, EngineIdentity

__all__ = ["EngineReset", "StepDelta", "first_delta", "mean_from_histogram", "per_engine_delta"]

_Key = str | tuple[str, int]


class EngineReset(NamedTuple):
    """An engine that restarted between the start and the end snapshot: a series went backwards, or its process's
    one engine carries other labels at the end (``previous != engine``; then ``key``, ``start`` and ``end`` are
    ``None``)."""

    engine: EngineIdentity
    """The engine that restarted, as the end snapshot names it."""
    previous: EngineIdentity
    """The engine as the start snapshot names it (equal to ``engine`` unless its labels changed)."""
    key: str | tuple[str, int] | None
    """Its first series (in the end snapshot's order) that went backwards; vector positions are 1-based."""
    start: float | None
    """That series' value in the start snapshot."""
    end: float | None
    """Its value in the end snapshot (0.0 when the series is gone)."""


class StepDelta(NamedTuple):
    """What :func:`per_engine_delta` returns."""

    delta: dict[str | tuple[str, int], float]
    """The sum over the counted engines of ``end - start`` per series (all ``>= 0``; vector positions 1-based,
    as :func:`~rl_contracts.metrics.aggregate_spec_decode_counters`), in first-seen order."""
    engines: tuple[EngineIdentity, ...]
    """The engines counted, in the end snapshots' order."""
    resets: tuple[EngineReset, ...]
    """The engines that restarted during the step; none of their series is in ``delta``."""


def per_engine_delta(
    start_counters: FleetCounters | Sequence[CounterSnapshot],
    end_counters: FleetCounters | Sequence[CounterSnapshot],
) -> StepDelta:
    """The step's counter delta taken per engine, then summed over the engines that did not restart.

    Each argument is what :func:`~rl_contracts.metrics.aggregate_spec_decode_counters` returned (a worker dict is
    the engine at its position in the list), or a list of snapshots that name their engine.  Each snapshot is
    split per ``engine`` label (:meth:`~rl_contracts.metrics.CounterSnapshot.per_engine`); start and end engines
    are matched by identity, and a process with one unmatched engine on each side (its labels changed: a server
    restarted with another model name) was replaced, which is a reset.  Per engine, over the union of its series
    (a missing series counts as 0): when any series is lower at the end, the engine restarted during the step and
    is reported in ``resets`` (its first such series and both values) and left out of ``delta``; otherwise
    ``end - start`` of every series is added to ``delta``.

    Raises ``ContractTypeError`` for an argument that is neither; ``CounterSnapshotError`` for a listed snapshot
    without an engine, two snapshots of one engine, a ``FleetCounters`` changed after aggregation, engines on one
    side only (listed: an engine that stopped, was added, restarted in a new process under the default pid-based
    name, or worker lists of different lengths), or an end snapshot taken before its start (the arguments
    swapped).

    >>> from rl_contracts.metrics import CounterSnapshot as S
    >>> start = [S.from_worker_dict({"vllm:generation_tokens": n}, process=p) for p, n in (("e0", 1000), ("e1", 900))]
    >>> end = [S.from_worker_dict({"vllm:generation_tokens": n}, process=p) for p, n in (("e0", 1100), ("e1", 850))]
    >>> step = per_engine_delta(start, end)
    >>> step.delta, [reset.engine.process for reset in step.resets]
    ({'vllm:generation_tokens': 100.0}, ['e1'])
    """
    starts = _engine_snapshots(start_counters, "start_counters")
    ends = _engine_snapshots(end_counters, "end_counters")
    delta: dict[_Key, float] = {}
    counted: list[EngineIdentity] = []
    resets: list[EngineReset] = []
    pairs, replaced = _match(starts, ends)
    for engine, start, end in pairs:
        before, after = _flat(start), _flat(end)
        reset = _first_backwards(engine, before, after)
        if reset is not None:
            resets.append(reset)
            continue
        counted.append(engine)
        for key in {**after, **before}:
            delta[key] = delta.get(key, 0.0) + (after.get(key, 0.0) - before.get(key, 0.0))
    resets += (EngineReset(engine, previous, None, None, None) for previous, engine in replaced)
    return StepDelta(delta, tuple(counted), tuple(resets))


def _first_backwards(
    engine: EngineIdentity, before: dict[_Key, float], after: dict[_Key, float]
) -> EngineReset | None:
    """The first series of one engine that is lower at the end (end order, then start-only series), or None."""
    for key in {**after, **before}:
        start, end = before.get(key, 0.0), after.get(key, 0.0)
        if end < start:
            return EngineReset(engine, engine, key, start, end)
    return None


_Engine = tuple[EngineIdentity, float, CounterSnapshot]
"""A snapshot with the engine and the instant it names."""


def _engine_snapshots(counters: object, argument: str) -> dict[EngineIdentity, _Engine]:
    """The engine snapshots behind one argument of :func:`per_engine_delta`, by engine, in order: each snapshot
    split per ``engine`` label (:meth:`~rl_contracts.metrics.CounterSnapshot.per_engine`)."""
    snapshots = _snapshots(counters, argument)
    engines: dict[EngineIdentity, _Engine] = {}
    for index, snapshot in enumerate(snapshots):
        if snapshot.engine is None or snapshot.taken_at is None:
            raise CounterSnapshotError(
                f"{argument}[{index}] names no engine or no instant (a snapshot built without process= or "
                "taken_at), so its delta cannot be taken per engine; pass process= to from_worker_dict, or "
                "aggregate it with aggregate_spec_decode_counters, which names it by its position"
            )
        for part in snapshot.per_engine():
            assert part.engine is not None
            assert part.taken_at is not None
            engines[part.engine] = (part.engine, part.taken_at, part)
    return engines


def _snapshots(counters: object, argument: str) -> Sequence[CounterSnapshot]:
    """The engine snapshots behind one argument of :func:`per_engine_delta` (see there for the errors)."""
    if isinstance(counters, FleetCounters):
        snapshots = counters.snapshots
        if snapshots is None:
            raise CounterSnapshotError(
                f"{argument} is a FleetCounters built without its snapshots, so its delta cannot be taken per "
                "engine; pass what aggregate_spec_decode_counters returns"
            )
        if dict(aggregate_spec_decode_counters(snapshots)) != dict(counters):
            raise CounterSnapshotError(
                f"{argument} was changed after aggregate_spec_decode_counters: its items no longer equal the sum "
                "of its engine snapshots; aggregate again, or pass dict(counters) for the delta of the totals"
            )
        return snapshots
    if isinstance(counters, Mapping):
        raise ContractTypeError(
            f"{argument} is a plain mapping of totals, which names no engine; pass what "
            "aggregate_spec_decode_counters returns for snapshots with engines, or the list of those snapshots",
            argument=argument,
            expected="FleetCounters | Sequence[CounterSnapshot]",
            actual=type_name(counters),
        )
    if not isinstance(counters, Sequence) or isinstance(counters, str | bytes):
        raise ContractTypeError.for_value(
            argument, "FleetCounters or a sequence of CounterSnapshot", counters
        )
    for index, snapshot in enumerate(counters):
        if not isinstance(snapshot, CounterSnapshot):
            raise ContractTypeError.for_value(f"{argument}[{index}]", "a CounterSnapshot", snapshot)
    aggregate_spec_decode_counters(counters)  # refuses two snapshots of one engine
    return counters


def _match(
    starts: dict[EngineIdentity, _Engine], ends: dict[EngineIdentity, _Engine]
) -> tuple[
    list[tuple[EngineIdentity, CounterSnapshot, CounterSnapshot]], list[tuple[EngineIdentity, EngineIdentity]]
]:
    """Pair start and end snapshots by engine, in end order, checking that each end follows its start; also
    pair, as replaced ``(previous, engine)``, the one unmatched start and end engine of a process.

    Other engines on one side only are an error.
    """
    missing = [engine for engine in ends if engine not in starts]
    gone = [engine for engine in starts if engine not in ends]
    replaced = _replaced(gone, missing)
    missing = [engine for engine in missing if engine not in {new for _, new in replaced}]
    gone = [engine for engine in gone if engine not in {old for old, _ in replaced}]
    if missing or gone:
        raise CounterSnapshotError(
            "start and end snapshots do not name the same engines: only in start_counters "
            f"{_engines(gone)}, only in end_counters {_engines(missing)}. Snapshot the same engines before and "
            "after the step; an engine restarted in a new process has a new default name (its pid): pass "
            "process=<DP rank or actor name> to the snapshot constructors so that a restart is matched and "
            "reported as a reset"
            + (
                "; a worker dict's engine is its position in the list aggregated: pass start and end lists of "
                "equal length, in the same order"
                if any(engine.process.startswith(POSITION_PROCESS) for engine in gone + missing)
                else ""
            ),
            key=shorten(_engines(gone + missing), 200),
        )
    pairs = []
    for previous, engine in replaced:
        _check_order(engine, starts[previous][1], ends[engine][1])
    for engine, end_at, end in ends.values():
        if engine not in starts:
            continue
        _, start_at, start = starts[engine]
        _check_order(engine, start_at, end_at)
        pairs.append((engine, start, end))
    return pairs, replaced


def _replaced(
    gone: list[EngineIdentity], missing: list[EngineIdentity]
) -> list[tuple[EngineIdentity, EngineIdentity]]:
    """``(start engine, end engine)`` for every process with exactly one unmatched engine on each side."""
    old: dict[str, list[EngineIdentity]] = {}
    new: dict[str, list[EngineIdentity]] = {}
    for engines, side in ((gone, old), (missing, new)):
        for engine in engines:
            side.setdefault(engine.process, []).append(engine)
    return [
        (old[process][0], engines[0])
        for process, engines in new.items()
        if len(engines) == 1 and len(old.get(process, ())) == 1
    ]


def _check_order(engine: EngineIdentity, start_at: float, end_at: float) -> None:
    """Refuse an end snapshot read before its start snapshot: the two arguments were swapped."""
    if end_at < start_at:
        raise CounterSnapshotError(
            f"the end snapshot of engine {engine.describe()} was taken {start_at - end_at:.6f} s before its "
            "start snapshot: start_counters and end_counters are swapped; pass the snapshots taken before "
            "the step first",
            key=engine.describe(),
            value=render(end_at),
        )


def _engines(engines: Sequence[EngineIdentity]) -> str:
    return render_list([engine.describe() for engine in engines])


def _flat(snapshot: CounterSnapshot) -> dict[_Key, float]:
    """One snapshot in the aggregated format: scalars as they are, vector element i under ``(name, i + 1)``."""
    flat: dict[_Key, float] = {}
    for name, value in snapshot.values.items():
        if isinstance(value, tuple):
            flat.update(((name, position), number) for position, number in enumerate(value, start=1))
        else:
            flat[name] = value
    return flat


def first_delta(
    delta: Mapping[str | tuple[str, int], float],
    candidates: tuple[str, ...] | list[str],
    part: str | None = None,
) -> float | None:
    """Return the delta for the first candidate name present, else ``None``.

    The key of a candidate is ``encode_counter_key(name, part)`` when ``part is not None`` (so ``part=""`` gives
    ``"name|"``), else ``name``.  A present ``0.0`` is returned.  Raises ``ContractTypeError`` when ``delta`` is
    not a mapping, ``candidates`` is not a tuple or list of ``str`` (a bare ``str`` included) or ``part`` is not a
    ``str`` or ``None``; ``CounterSnapshotError`` when a candidate is not a valid counter name, or the value found
    is not a number (a bool included).  Any number is returned as a float, negative (a legal delta), NaN and
    infinite values included: SPEC §6.5 returns ``delta[key]``, and the step functions never build such a delta.

    >>> first_delta({"vllm:request_prompt_tokens|sum": 0.0}, ("vllm:request_prompt_tokens",), "sum")
    0.0
    """
    if not isinstance(delta, Mapping):
        raise ContractTypeError.for_value("delta", "a mapping of counter keys to floats", delta)
    names = _candidate_names(candidates)
    if part is not None:
        require_str(part, "part")
    for name in names:
        key = name if part is None else encode_counter_key(name, part)
        if key in delta:
            return _number(key, delta[key])
    return None


def mean_from_histogram(
    delta: Mapping[str | tuple[str, int], float],
    candidates: tuple[str, ...] | list[str],
) -> float | None:
    """Mean of a histogram over the step, from its ``sum``/``count`` delta (exact: no bucket interpolation).

    Returns ``None`` when either part is absent or the count delta is ``<= 0``: the engine served no request in the
    step (e.g. a step spent in training), which is not a zero-length sequence.  Raises as :func:`first_delta`.
    """
    total = first_delta(delta, candidates, HISTOGRAM_SUM_PART)
    count = first_delta(delta, candidates, HISTOGRAM_COUNT_PART)
    if total is None or count is None or count <= 0:
        return None
    return total / count


def _candidate_names(candidates: object) -> tuple[str, ...]:
    if not isinstance(candidates, tuple | list):
        raise ContractTypeError(
            f"candidates must be a tuple of metric names, got {type_name(candidates)}"
            + ("; wrap a single name as (name,)" if isinstance(candidates, str) else ""),
            argument="candidates",
            expected="tuple[str, ...]",
            actual=type_name(candidates),
        )
    for name in candidates:
        require_str(name, "candidates[i]")
    return tuple(candidates)


def _number(key: str, value: object) -> float:
    number = real_or_none(value)
    if number is None:
        raise CounterSnapshotError(
            f"delta['{shorten(key, 200)}'] must be a number (not bool), got {type_name(value)} "
            f"{render(value)}",
            key=shorten(key, 200),
            value=render(value),
        )
    return number
