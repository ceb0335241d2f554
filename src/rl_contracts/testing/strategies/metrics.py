"""Hypothesis strategies for the metrics contracts (SPEC §6; invariants 22–26 of §7).

- :func:`counter_values`, :func:`counter_keys`, :func:`worker_counters` and :func:`counter_snapshots`: one worker's
  counters, as the reference's worker dicts (with unkept junk the library must skip) or as ``CounterSnapshot``;
- :func:`aggregated_counter_pairs`: ``(start, end)`` aggregated snapshots with growing, constant, reset, new and
  vanished series;
- :func:`vllm_metric_objects`: ``SimpleNamespace`` stand-ins for ``LLM.get_metrics()`` (Counter, Gauge, Histogram,
  Vector), one object per label set and engine;
- :func:`prometheus_pages` and :func:`render_prometheus_text`: a vLLM-style ``/metrics`` page for such objects,
  classic, with OpenMetrics family names, or OpenMetrics (:data:`SPELLINGS`);
- :func:`engine_fleet_steps`: start and end snapshots of a fleet of named engines, some of which restarted, with
  the per-engine delta computed by hand (:class:`EngineFleetStep`).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Literal, NamedTuple

from hypothesis import strategies as st

from ...metrics import AggregatedCounters, CounterSnapshot, encode_counter_key, names

__all__ = [
    "FINISH_REASONS",
    "KEPT_COUNTER_FAMILIES",
    "KEPT_HISTOGRAM_FAMILIES",
    "SPELLINGS",
    "UNKEPT_METRIC_NAMES",
    "EngineFleetStep",
    "Spelling",
    "aggregated_counter_pairs",
    "counter_keys",
    "counter_snapshots",
    "counter_values",
    "engine_fleet_steps",
    "prometheus_pages",
    "render_prometheus_text",
    "vllm_metric_objects",
    "worker_counters",
]

KEPT_COUNTER_FAMILIES: tuple[str, ...] = (
    *names.PROMPT_TOKEN_COUNTERS,
    *names.GENERATION_TOKEN_COUNTERS,
    names.SPEC_DECODE_NUM_DRAFTS,
    names.SPEC_DECODE_NUM_DRAFT_TOKENS,
    names.SPEC_DECODE_NUM_ACCEPTED_TOKENS,
)
"""Kept scalar counter families (besides ``vllm:request_success``)."""
KEPT_HISTOGRAM_FAMILIES: tuple[str, ...] = (
    *names.PROMPT_LENGTH_HISTOGRAMS,
    *names.GENERATION_LENGTH_HISTOGRAMS,
)
"""Kept histogram families."""
FINISH_REASONS: tuple[str, ...] = ("stop", "length", "abort", "error", "repetition", "timeout", "", "odd|x=y")
"""vLLM's finish reasons, one it may add later, an empty one, and one holding the key separators."""
UNKEPT_METRIC_NAMES: tuple[str, ...] = (
    "vllm:prompt_tokens_cached",
    "vllm:prompt_tokens_recomputed",
    "vllm:prompt_tokens_by_source",
    "vllm:num_preemptions",
    "vllm:num_requests_running",
    "vllm:kv_cache_usage_perc",
    "vllm:e2e_request_latency_seconds",
    "other_metric",
)
"""Near-miss siblings, gauges and latency histograms that a snapshot must drop."""

_OUTCOME_KEYS = tuple(
    encode_counter_key(name, f"{names.FINISHED_REASON_LABEL}={reason}")
    for name in names.REQUEST_SUCCESS_COUNTERS
    for reason in FINISH_REASONS
)
_SCALAR_KEYS = (
    *KEPT_COUNTER_FAMILIES,
    *(
        encode_counter_key(h, p)
        for h in KEPT_HISTOGRAM_FAMILIES
        for p in (names.HISTOGRAM_SUM_PART, names.HISTOGRAM_COUNT_PART)
    ),
    *_OUTCOME_KEYS,
)
_MAX_POSITIONS = 5


def counter_values(*, integer_valued: bool = True) -> st.SearchStrategy[float]:
    """Valid counter values: finite floats ``>= 0`` (whole numbers by default, so sums are exact)."""
    if integer_valued:
        return st.integers(0, 10**9).map(float)
    return st.floats(0.0, 1e12, allow_nan=False, allow_infinity=False)


def counter_keys() -> st.SearchStrategy[str]:
    """Kept scalar keys: counter names, ``name|sum``/``name|count`` and ``name|finished_reason=<reason>``."""
    return st.sampled_from(_SCALAR_KEYS)


def _junk() -> st.SearchStrategy[object]:
    return st.one_of(st.none(), st.booleans(), st.text(max_size=5), st.just(float("nan")), st.just(-1.0))


def worker_counters(
    *, integer_valued: bool = True, with_unkept: bool = True
) -> st.SearchStrategy[dict[str, float | list[float]]]:
    """One worker's dict in the reference's format (invariant 23).

    Kept scalar keys map to valid values, the per-position key (sometimes) to a list of them, and then the
    accepted-token counter to the list's sum (vLLM counts every accepted token at exactly one position); with
    ``with_unkept`` the dict also holds unkept keys whose values are junk (``None``, bools, NaN, -1, text), which
    every consumer must skip without inspecting.
    """
    values = counter_values(integer_valued=integer_valued)
    kept = st.dictionaries(counter_keys(), values, max_size=8)
    vector = st.one_of(st.none(), st.lists(values, max_size=_MAX_POSITIONS))
    unkept = (
        st.dictionaries(st.sampled_from(UNKEPT_METRIC_NAMES), _junk(), max_size=3)
        if with_unkept
        else st.just({})
    )

    def build(
        parts: tuple[dict[str, float], list[float] | None, dict[str, object]],
    ) -> dict[str, float | list[float]]:
        scalars, per_pos, junk = parts
        result: dict[str, float | list[float]] = dict(scalars)
        if per_pos is not None:
            result[names.SPEC_DECODE_ACCEPTED_PER_POS] = per_pos
            result[names.SPEC_DECODE_NUM_ACCEPTED_TOKENS] = float(sum(per_pos))
        result.update(junk)  # type: ignore[arg-type]  # junk values are the point
        return result

    return st.tuples(kept, vector, unkept).map(build)


def counter_snapshots(*, integer_valued: bool = True) -> st.SearchStrategy[CounterSnapshot]:
    """Valid :class:`CounterSnapshot` objects (built with ``from_worker_dict``)."""
    return worker_counters(integer_valued=integer_valued).map(CounterSnapshot.from_worker_dict)


_AGGREGATED_KEYS: tuple[str | tuple[str, int], ...] = (
    *_SCALAR_KEYS,
    *((names.SPEC_DECODE_ACCEPTED_PER_POS, position) for position in range(1, _MAX_POSITIONS + 1)),
)


@st.composite
def aggregated_counter_pairs(
    draw: st.DrawFn, *, resets: bool = True, integer_valued: bool = True
) -> tuple[AggregatedCounters, AggregatedCounters]:
    """``(start, end)`` aggregated snapshots (invariants 25 and 26).

    Each drawn key is in ``start``, ``end`` or both; a series present in both grows, stays or, with ``resets``,
    goes backwards (an engine restart).  Whole numbers by default.  Where per-position keys are drawn, the
    accepted-token counter of each side is their sum, as vLLM counts it.
    """
    values = counter_values(integer_valued=integer_valued)
    keys = draw(st.lists(st.sampled_from(_AGGREGATED_KEYS), unique=True, max_size=12))
    modes = ["grow", "same", "new", "vanished", *(["reset"] if resets else [])]
    start: AggregatedCounters = {}
    end: AggregatedCounters = {}
    for key in keys:
        mode = draw(st.sampled_from(modes))
        before = draw(values)
        if mode != "new":
            start[key] = before
        if mode == "grow":
            end[key] = before + draw(values)
        elif mode == "same":
            end[key] = before
        elif mode == "new":
            end[key] = draw(values)
        elif mode == "reset":
            end[key] = draw(st.floats(0.0, before)) if before > 0 else 0.0
    if any(isinstance(key, tuple) for key in keys):
        for side in (start, end):
            side[names.SPEC_DECODE_NUM_ACCEPTED_TOKENS] = sum(
                v for k, v in side.items() if isinstance(k, tuple)
            )
    return start, end


def _labels(engine: int, extra: dict[str, str]) -> dict[str, str]:
    return {"model_name": "tiny", "engine": str(engine), **extra}


@st.composite
def vllm_metric_objects(draw: st.DrawFn, *, max_engines: int = 3) -> list[SimpleNamespace]:
    """``SimpleNamespace`` stand-ins for ``LLM.get_metrics()`` with 1..``max_engines`` engines (invariant 24).

    Counters (``value``: int), gauges (``value``: float, unkept names only), histograms (``count``, ``sum``,
    ``buckets``) and the per-position vector (``values``), one object per family, label set and engine, in a
    random order.  Every kept value is a whole number, so sums over engines are exact.
    """
    engines = range(draw(st.integers(1, max_engines)))
    count = st.integers(0, 10**6)
    objects: list[SimpleNamespace] = []
    for name in draw(st.lists(st.sampled_from(KEPT_COUNTER_FAMILIES + UNKEPT_METRIC_NAMES[:4]), unique=True)):
        objects += [SimpleNamespace(name=name, labels=_labels(e, {}), value=draw(count)) for e in engines]
    for reason in draw(st.lists(st.sampled_from(FINISH_REASONS), unique=True)):
        labels = {names.FINISHED_REASON_LABEL: reason}
        objects += [
            SimpleNamespace(
                name=names.REQUEST_SUCCESS_COUNTERS[0], labels=_labels(e, labels), value=draw(count)
            )
            for e in engines
        ]
    for name in draw(st.lists(st.sampled_from(UNKEPT_METRIC_NAMES[4:6]), unique=True)):
        objects += [
            SimpleNamespace(name=name, labels=_labels(e, {}), value=draw(st.floats(0, 1, allow_nan=False)))
            for e in engines
        ]
    for name in draw(
        st.lists(st.sampled_from((*KEPT_HISTOGRAM_FAMILIES, UNKEPT_METRIC_NAMES[6])), unique=True)
    ):
        for e in engines:
            n = draw(count)
            objects.append(
                SimpleNamespace(
                    name=name, labels=_labels(e, {}), count=n, sum=float(draw(count)), buckets={"+Inf": n}
                )
            )
    if draw(
        st.booleans()
    ):  # the accepted-token counter of an engine is then its vector's sum, as vLLM counts
        vectors = [draw(st.lists(count, min_size=1, max_size=_MAX_POSITIONS)) for _ in engines]
        objects = [o for o in objects if o.name != names.SPEC_DECODE_NUM_ACCEPTED_TOKENS]
        for e, vector in zip(engines, vectors, strict=True):
            objects.append(
                SimpleNamespace(name=names.SPEC_DECODE_ACCEPTED_PER_POS, labels=_labels(e, {}), values=vector)
            )
            objects.append(
                SimpleNamespace(
                    name=names.SPEC_DECODE_NUM_ACCEPTED_TOKENS, labels=_labels(e, {}), value=sum(vector)
                )
            )
    return draw(st.permutations(objects))


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _sample(name: str, labels: dict[str, str], value: float) -> str:
    body = ",".join(f'{key}="{_escape(text)}"' for key, text in labels.items())
    return f"{name}{{{body}}} {value!r}\n"


Spelling = Literal["prometheus", "openmetrics-names", "openmetrics"]
"""How :func:`render_prometheus_text` writes a page: ``"prometheus"`` declares counters as ``<name>_total`` (as
``prometheus_client``'s text exposition does), ``"openmetrics-names"`` as ``<name>`` with ``_total`` samples (the
OpenMetrics spelling in a classic text page), ``"openmetrics"`` likewise and ends the page with ``# EOF``."""
SPELLINGS: tuple[Spelling, ...] = ("prometheus", "openmetrics-names", "openmetrics")
"""Every :data:`Spelling`."""


def render_prometheus_text(
    metrics: Sequence[SimpleNamespace], *, noise: bool = True, spelling: Spelling = "prometheus"
) -> str:
    """Render metric objects as a vLLM server's ``/metrics`` page in one of the :data:`SPELLINGS`.

    Counters become ``<name>_total`` samples with ``<name>_created`` samples (a gauge family of their own in the
    ``"prometheus"`` spelling, part of the counter family otherwise), vectors a counter family with a ``position``
    label, histograms ``_bucket``/``_count``/``_sum`` samples, gauges plain samples.  Families are grouped in
    first-seen order.  With ``noise``, non-vLLM process families are added in front.
    """
    families: dict[tuple[str, str], list[SimpleNamespace]] = {}
    for metric in metrics:
        if hasattr(metric, "values"):
            kind = "vector"
        elif hasattr(metric, "count"):
            kind = "histogram"
        else:
            kind = "counter" if metric.name not in UNKEPT_METRIC_NAMES[4:6] else "gauge"
        families.setdefault((kind, metric.name), []).append(metric)
    lines = []
    if noise:
        counter = "python_gc_collections" + ("_total" if spelling == "prometheus" else "")
        lines.append(
            "# HELP process_open_fds Number of open file descriptors.\n# TYPE process_open_fds gauge\n"
        )
        lines.append(f"process_open_fds 34.0\n# TYPE {counter} counter\n")
        lines.append('python_gc_collections_total{generation="0"} 1527.0\n')
    for (kind, name), members in families.items():
        if kind in ("counter", "vector"):
            lines += _counter_family(name, kind, members, spelling)
        elif kind == "histogram":
            lines.append(f"# HELP {name} A histogram.\n# TYPE {name} histogram\n")
            for m in members:
                lines.append(_sample(f"{name}_bucket", {**m.labels, "le": "+Inf"}, float(m.count)))
                lines.append(_sample(f"{name}_count", m.labels, float(m.count)))
                lines.append(_sample(f"{name}_sum", m.labels, float(m.sum)))
        else:
            lines.append(f"# TYPE {name} gauge\n")
            lines += [_sample(name, m.labels, float(m.value)) for m in members]
    if spelling == "openmetrics":
        lines.append("# EOF\n")
    return "".join(lines)


def _counter_family(name: str, kind: str, members: list[SimpleNamespace], spelling: Spelling) -> list[str]:
    series = [
        (labels, value)
        for m in members
        for labels, value in (
            [(m.labels, m.value)]
            if kind == "counter"
            else [({**m.labels, "position": str(i)}, v) for i, v in enumerate(m.values)]
        )
    ]
    declared = f"{name}_total" if spelling == "prometheus" else name
    lines = [f"# HELP {declared} A counter.\n# TYPE {declared} counter\n"]
    for labels, value in series:
        lines.append(_sample(f"{name}_total", labels, float(value)))
        if spelling != "prometheus":  # OpenMetrics groups the _total and _created samples of a series
            lines.append(_sample(f"{name}_created", labels, 1.7e9))
    if spelling == "prometheus":
        lines.append(f"# TYPE {name}_created gauge\n")
        lines += [_sample(f"{name}_created", labels, 1.7e9) for labels, _ in series]
    return lines


def prometheus_pages(*, spellings: Sequence[Spelling] = SPELLINGS) -> st.SearchStrategy[str]:
    """Rendered ``/metrics`` pages of :func:`vllm_metric_objects` in one of ``spellings``, with non-vLLM noise."""
    return st.tuples(vllm_metric_objects(), st.sampled_from(spellings)).map(
        lambda drawn: render_prometheus_text(drawn[0], spelling=drawn[1])
    )


class EngineFleetStep(NamedTuple):
    """A step of a fleet of named engines, drawn by :func:`engine_fleet_steps`."""

    start: list[CounterSnapshot]
    """One snapshot per engine before the step (``process`` ``"dp<i>"``, taken at 1.0)."""
    end: list[CounterSnapshot]
    """One snapshot per engine after it (taken at 2.0), in another order than ``start``."""
    reset: frozenset[str]
    """The processes of the engines that restarted: at least one of their series is lower at the end."""
    delta: dict[str | tuple[str, int], float]
    """The sum over the other engines of ``end - start`` per series, computed by hand (1-based positions)."""


@st.composite
def engine_fleet_steps(draw: st.DrawFn, *, max_engines: int = 4, resets: bool = True) -> EngineFleetStep:
    """Start and end snapshots of 1 to ``max_engines`` named engines (whole numbers), some restarted.

    Every engine's series grow or stay (its accepted-token counter is its per-position vector's sum, and absent
    without one), except, with ``resets``, those of engines that restarted, where one scalar
    series is lower at the end or gone (a restart; its other series keep growing, so only the drop reveals it).
    ``delta`` is the per-engine delta summed by hand over the engines that did not restart, for
    :func:`~rl_contracts.metrics.per_engine_delta` and the step functions.
    """
    values = counter_values()
    count = draw(st.integers(1, max_engines))
    start: list[CounterSnapshot] = []
    end: list[CounterSnapshot] = []
    reset: set[str] = set()
    delta: dict[str | tuple[str, int], float] = {}
    for index in range(count):
        process = f"dp{index}"
        keys = draw(st.lists(counter_keys(), unique=True, min_size=1, max_size=5))
        before = {key: draw(values) for key in keys}
        after = {key: value + draw(values) for key, value in before.items()}
        vector_before = draw(st.lists(values, max_size=3))
        vector_after = [value + draw(values) for value in vector_before]
        if vector_before:  # vLLM counts every accepted token at exactly one position
            before[names.SPEC_DECODE_NUM_ACCEPTED_TOKENS] = float(sum(vector_before))
            after[names.SPEC_DECODE_NUM_ACCEPTED_TOKENS] = float(sum(vector_after))
        else:  # and an engine without the vector has no accepted-token counter either
            before.pop(names.SPEC_DECODE_NUM_ACCEPTED_TOKENS, None)
            after.pop(names.SPEC_DECODE_NUM_ACCEPTED_TOKENS, None)
        keys = list(before)
        restarted = bool(keys) and resets and draw(st.booleans())
        if restarted:
            key = draw(st.sampled_from(keys))
            before[key] += 1.0
            dropped = draw(st.integers(0, int(before[key]) - 1).map(float) | st.none())
            if dropped is None:
                del after[key]
            else:
                after[key] = dropped
            reset.add(process)
        else:
            for key, value in after.items():
                delta[key] = delta.get(key, 0.0) + (value - before[key])
            for position, (old, new) in enumerate(zip(vector_before, vector_after, strict=True), start=1):
                slot = (names.SPEC_DECODE_ACCEPTED_PER_POS, position)
                delta[slot] = delta.get(slot, 0.0) + (new - old)
        for snapshots, scalars, vector, at in (
            (start, before, vector_before, 1.0),
            (end, after, vector_after, 2.0),
        ):
            counters: dict[str, float | list[float]] = dict(scalars)
            if vector:
                counters[names.SPEC_DECODE_ACCEPTED_PER_POS] = vector
            snapshots.append(CounterSnapshot.from_worker_dict(counters, process=process, taken_at=at))
    order = draw(st.permutations(range(count)))
    return EngineFleetStep(start, [end[i] for i in order], frozenset(reset), delta)
