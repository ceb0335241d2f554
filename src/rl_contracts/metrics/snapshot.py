"""``CounterSnapshot``: one worker's kept engine counters and the engine they were read from, from any of its three
sources: worker dicts, the objects ``vllm.LLM.get_metrics()`` returns, Prometheus text (SPEC §6.3).

An engine is named by the process that read its counters and by the labels of its series (``engine``,
``model_name``, ...; every label but ``finished_reason`` and the per-position ``position``).  vLLM keeps one
Prometheus registry per process, and a second ``LLM`` in a process replaces the first one's series with its own
(both then report the same series, labelled ``engine="0"``), so two snapshots of one process whose series share an
``engine`` label, or carry equal labels, are the same counters read twice, never two engines: aggregation refuses
them (:func:`~rl_contracts.metrics.aggregate_spec_decode_counters`).  A page or a list of metric objects holding
several ``engine`` labels is one snapshot whose :meth:`CounterSnapshot.per_engine` parts are the engines, so that
deltas are taken per engine.
"""

from __future__ import annotations

import math
import os
import socket
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Annotated, Any, Final, NamedTuple

from pydantic import (
    BaseModel,
    ConfigDict,
    PrivateAttr,
    WithJsonSchema,
    field_serializer,
    field_validator,
    model_validator,
)
from typing_extensions import Self

from .._internal.counter_series import EnginePart
from .._internal.counter_values import FrozenCounters
from .._internal.messages import render, shorten, type_name
from .._internal.prometheus_text import read_prometheus_text
from .._internal.vllm_metric_objects import read_vllm_metrics
from .._internal.worker_dicts import read_worker_dict
from ..checks import is_collection, real_or_none
from ..errors import ContractTypeError, CounterSnapshotError
from ..protocols import MetricLike
from .names import ENGINE_LABEL, WorkerCounters

__all__ = ["CounterSnapshot", "EngineIdentity", "PrometheusPage", "parse_prometheus_text", "this_process"]


def this_process() -> str:
    """The name of the calling process, ``"<hostname>:<pid>"``: the default ``process`` of a snapshot.

    A restarted process has a new pid, so a restarted engine gets a new identity; pass a stable name (the DP rank,
    the Ray actor's name) to the snapshot constructors instead when a restart must be matched to the engine it
    replaced and reported as a reset.
    """
    return f"{socket.gethostname()}:{os.getpid()}"


class EngineIdentity(BaseModel):
    """The engine a snapshot was read from: ``process`` and the ``labels`` of its series (frozen, hashable).

    ``labels`` is a sorted tuple of distinct ``(name, value)`` pairs: the labels of every kept series except
    ``finished_reason`` and ``position``.  A process running data-parallel engines reports one snapshot holding
    all of them, e.g. ``(("engine", "0"), ("engine", "1"), ("model_name", "qwen3"))``.

    >>> EngineIdentity(process="dp-3", labels=[("model_name", "qwen3"), ("engine", "0")]).labels
    (('engine', '0'), ('model_name', 'qwen3'))
    """

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    process: str
    """The process that read the counters: ``"<hostname>:<pid>"`` by default, or a name the caller gives."""
    labels: tuple[tuple[str, str], ...] = ()
    """Sorted, distinct ``(label, value)`` pairs of the engine's series."""

    @field_validator("process", mode="before")
    @classmethod
    def _validate_process(cls, value: object) -> str:
        if not isinstance(value, str) or not value:
            raise ValueError(f"process must be a non-empty str, got {type_name(value)} {render(value)}")
        return value

    @field_validator("labels", mode="before")
    @classmethod
    def _validate_labels(cls, value: object) -> tuple[tuple[str, str], ...]:
        if isinstance(value, Mapping) or not is_collection(value):  # not text, not a 0-d array
            raise ValueError(f"labels must be (name, value) pairs, got {type_name(value)}")
        pairs: set[tuple[str, str]] = set()
        for pair in value:
            if not (
                isinstance(pair, tuple | list) and len(pair) == 2 and all(isinstance(p, str) for p in pair)
            ):
                raise ValueError(f"every label must be a (str, str) pair, got {render(pair)}")
            pairs.add((pair[0], pair[1]))
        return tuple(sorted(pairs))

    def describe(self) -> str:
        """The identity as messages show it: ``process {label="value", ...}``, shortened to 200 characters."""
        labels = ", ".join(f'{name}="{value}"' for name, value in self.labels)
        return shorten(f"{self.process} {{{labels}}}", 200)

    def claims(self) -> tuple[tuple[str, object], ...]:
        """What two snapshots of one fleet may not share: the whole identity, and each ``engine`` label value of
        its process (an engine of one process read twice, whatever its other labels)."""
        engines = [value for name, value in self.labels if name == ENGINE_LABEL]
        return ((self.process, self.labels), *((self.process, (ENGINE_LABEL, e)) for e in engines))


def _engine_of(labels: tuple[tuple[str, str], ...], process: object) -> EngineIdentity:
    """The identity of counters read by ``process`` (``None``: :func:`this_process`) with series ``labels``.

    ``labels`` come sorted and distinct from the readers.  Raises ``ContractTypeError`` for a ``process`` that is
    not a ``str`` or ``None``, ``CounterSnapshotError`` for an empty one.
    """
    if process is None:
        process = this_process()
    elif not isinstance(process, str):
        raise ContractTypeError.for_value("process", "a str naming the engine's process, or None", process)
    elif not process:
        raise CounterSnapshotError(
            "process must be a non-empty str naming the engine's process (a DP rank, an actor name, a URL)",
            value=render(process),
        )
    return EngineIdentity.model_construct(process=process, labels=labels)


def _instant(taken_at: object) -> float:
    """``taken_at`` as a finite float (seconds since the epoch).

    Raises ``ContractTypeError`` for a non-number (a bool included), ``CounterSnapshotError`` for NaN or an
    infinity.
    """
    number = real_or_none(taken_at)
    if number is None:
        raise ContractTypeError.for_value("taken_at", "a number of seconds (time.time())", taken_at)
    if not math.isfinite(number):
        raise CounterSnapshotError(
            f"taken_at must be a finite number of seconds (time.time()), got {type_name(taken_at)} "
            f"{render(taken_at)}",
            value=render(taken_at),
        )
    return number + 0.0


def _instant_or_now(taken_at: object) -> float:
    """:func:`_instant` of ``taken_at``, or ``time.time()`` when it is ``None``."""
    return time.time() if taken_at is None else _instant(taken_at)


_VALUES_JSON_SCHEMA: Final = {
    "type": "object",
    "additionalProperties": {
        "anyOf": [
            {"type": "number", "minimum": 0},
            {"type": "array", "items": {"type": "number", "minimum": 0}},
        ]
    },
}


class CounterSnapshot(BaseModel):
    """One worker's kept engine counters at one instant (frozen, hashable, JSON- and pickle-safe).

    ``values`` maps each kept key (a metric name, ``name|sum``/``name|count`` for histograms, or
    ``name|finished_reason=<reason>``) to a finite float ``>= 0``, or to a tuple of them for the per-position
    spec-decode vector (index i is position i, 0-based, as vLLM).  Bools are rejected.  ``values`` is a read-only
    mapping.

    ``engine`` (an :class:`~rl_contracts.metrics.EngineIdentity`: the process that read the counters and the
    labels of its series) and ``taken_at`` (``time.time()`` when they were read) say where and when; the
    Prometheus and vLLM-object constructors always set both (the process defaults to
    :func:`~rl_contracts.metrics.this_process`), :meth:`from_worker_dict` only when given a ``process``.  They
    travel through :func:`~rl_contracts.metrics.aggregate_spec_decode_counters`, so that the step functions take
    deltas per engine and refuse swapped snapshots.  Equality and the hash compare ``values`` only: two snapshots
    holding the same counters are equal wherever and whenever they were read.

    Build snapshots with :meth:`from_worker_dict`, :meth:`from_vllm_metrics` or :meth:`from_prometheus_text`:
    they raise :class:`~rl_contracts.errors.CounterSnapshotError` (``.key``, ``.value``) for a bad value and
    ``ContractTypeError`` for an argument of the wrong type.  Direct construction (``CounterSnapshot(values=...)``,
    ``model_validate``, ``model_validate_json``) applies the same rules to every key (an unkept key is an error
    there) and, like every pydantic model (SPEC §0.3), reports a violation as a pydantic ``ValidationError`` (a
    ``ValueError``) carrying the same message.  ``model_copy(update=...)`` skips validation, as everywhere in
    pydantic; do not use it to change values.

    >>> CounterSnapshot.from_worker_dict({"vllm:prompt_tokens": 5, "vllm:num_requests_running": 2}).values
    {'vllm:prompt_tokens': 5.0}
    """

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    values: Annotated[Mapping[str, float | tuple[float, ...]], WithJsonSchema(_VALUES_JSON_SCHEMA)]
    """Kept counter key to a finite value ``>= 0`` or a per-position tuple of them."""
    engine: EngineIdentity | None = None
    """The engine the counters were read from; ``None`` for a worker dict without a ``process``."""
    taken_at: float | None = None
    """When the counters were read (seconds since the epoch, ``time.time()``); required with ``engine``."""
    _parts: tuple[CounterSnapshot, ...] = PrivateAttr(default=())
    """The snapshot per ``engine`` label when its series carried several (see :meth:`per_engine`)."""

    def per_engine(self) -> tuple[CounterSnapshot, ...]:
        """The snapshot split into one snapshot per engine: per value of the ``engine`` label when a Prometheus
        page or the metric objects carried several (series without the label form one more part), else
        ``(self,)``.

        Each part names its engine (the process and the labels of its own series) and has this ``taken_at``; the
        parts' values sum to ``values``.  Per-engine deltas read these, so that a counter that went back on one
        engine is a reset, never netted against growth on another.  The split survives pickling and
        ``model_copy``, not JSON (a snapshot read back from JSON is one engine).
        """
        return self._parts or (self,)

    @classmethod
    def _read(
        cls,
        values: FrozenCounters,
        labels: tuple[tuple[str, str], ...],
        parts: tuple[EnginePart, ...],
        process: object,
        taken_at: object,
    ) -> CounterSnapshot:
        """A snapshot read from a live source, with its engine, its instant and its per-engine parts."""
        engine, at = _engine_of(labels, process), _instant_or_now(taken_at)
        snapshot = cls.model_construct(values=values, engine=engine, taken_at=at)
        snapshot._parts = tuple(
            cls.model_construct(
                values=part.values,
                engine=EngineIdentity.model_construct(process=engine.process, labels=part.labels),
                taken_at=at,
            )
            for part in parts
        )
        return snapshot

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CounterSnapshot):
            return NotImplemented
        return self.values == other.values

    def __hash__(self) -> int:
        return hash(self.values)

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        """``values``, then ``engine`` and ``taken_at`` when set: a worker dict's snapshot reads as before."""
        for name, value in super().__repr_args__():
            if name == "values" or value is not None:
                yield name, value

    @field_validator("taken_at", mode="plain")
    @classmethod
    def _validate_taken_at(cls, value: object) -> float | None:
        if value is None:
            return None
        try:
            return _instant(value)
        except ContractTypeError as err:  # pydantic reports ValueErrors only
            raise ValueError(err.message) from err

    @model_validator(mode="after")
    def _engine_needs_an_instant(self) -> Self:
        if self.engine is not None and self.taken_at is None:
            raise ValueError("a snapshot with an engine needs taken_at, the time its counters were read")
        return self

    @field_validator("values", mode="plain")
    @classmethod
    def _validate_values(cls, value: object) -> Mapping[str, float | tuple[float, ...]]:
        try:
            return read_worker_dict(value, drop_unkept=False, where="snapshot", argument="d")
        except ContractTypeError as err:  # pydantic reports ValueErrors only
            raise ValueError(err.message) from err

    @field_serializer("values")
    def _serialize_values(
        self, values: Mapping[str, float | tuple[float, ...]]
    ) -> dict[str, float | list[float]]:
        return self.to_worker_dict()

    def to_worker_dict(self) -> dict[str, float | list[float]]:
        """A fresh dict in the reference's worker format (vectors as lists)."""
        return {key: list(value) if isinstance(value, tuple) else value for key, value in self.values.items()}

    @classmethod
    def from_worker_dict(
        cls, d: WorkerCounters, *, process: str | None = None, taken_at: float | None = None
    ) -> CounterSnapshot:
        """Build a snapshot from a worker dict, dropping unkept keys without looking at their values.

        Kept values must be finite numbers ``>= 0`` (not bool), or lists/tuples of them.  A worker dict carries no
        labels, so the snapshot has an engine only when ``process`` names the worker that reported it (then
        ``engine=EngineIdentity(process=process)`` and ``taken_at`` defaults to now); without one it aggregates as
        the reference does, and its deltas cannot be taken per engine.  Raises ``ContractTypeError`` when ``d`` is
        not a mapping, a key is not a ``str``, ``process`` is not a ``str`` or ``None`` or ``taken_at`` not a
        number, ``CounterSnapshotError`` for a bad kept value, an empty ``process`` or a non-finite ``taken_at``.
        """
        values = read_worker_dict(d, drop_unkept=True, where="worker dict", argument="d")
        if process is None:
            return cls.model_construct(
                values=values, engine=None, taken_at=None if taken_at is None else _instant(taken_at)
            )
        return cls.model_construct(
            values=values, engine=_engine_of((), process), taken_at=_instant_or_now(taken_at)
        )

    @classmethod
    def from_vllm_metrics(
        cls, metrics: Iterable[MetricLike], *, process: str | None = None, taken_at: float | None = None
    ) -> CounterSnapshot:
        """Build a snapshot from the objects ``LLM.get_metrics()`` returns, summing over every label but one.

        For each object whose name is kept: the key is its ``name``, or ``name|finished_reason=<reason>`` when it
        has that label.  An object with ``values`` (a list or tuple) contributes a vector; one with ``value`` a
        scalar; one with both ``count`` and ``sum`` the scalars ``key|count`` and ``key|sum`` (buckets are
        ignored).  Objects with the same key add up: scalars add, vectors add element-wise (the shorter padded
        with zeros).  Unkept objects are skipped without inspecting anything but their name.

        The snapshot's ``engine`` is ``process`` (default: :func:`~rl_contracts.metrics.this_process`, the process
        calling this, which is where ``get_metrics()`` read the counters when the snapshot is built right there)
        with the labels of the kept objects; ``taken_at`` defaults to now.  Build it where ``get_metrics()`` ran
        (in the Ray actor), or pass the engine's own name as ``process`` when the objects were shipped elsewhere:
        snapshots of several engines built in one process with the default would be refused as one engine read
        twice, which is what two ``LLM`` objects in one process are (vLLM keeps one registry per process).
        Objects of several ``engine`` labels (data-parallel engines in one ``LLM``) are kept apart too
        (:meth:`per_engine`).

        Raises ``ContractTypeError`` when ``metrics`` is not an iterable of objects (a ``str``, a mapping or a 0-d
        array included), ``process`` is not a ``str`` or ``taken_at`` not a number, and ``CounterSnapshotError``
        for an object with a non-``str`` name or a kept name holding ``|``, with non-mapping labels or a
        non-``str`` label, for a kept object with none of the value attributes, for a bad value, for a key that
        receives both a scalar and a vector, an empty ``process`` or a non-finite ``taken_at``.

        Divergence: the reference's worker flattening keeps only the last object for each name, so data-parallel
        engines in one process undercount.

        >>> from types import SimpleNamespace as O
        >>> CounterSnapshot.from_vllm_metrics([
        ...     O(name="vllm:prompt_tokens", labels={"engine": "0"}, value=100),
        ...     O(name="vllm:prompt_tokens", labels={"engine": "1"}, value=50),
        ... ]).values
        {'vllm:prompt_tokens': 150.0}
        """
        return cls._read(*read_vllm_metrics(metrics), process, taken_at)

    @classmethod
    def from_prometheus_text(
        cls, text: str, *, process: str | None = None, taken_at: float | None = None
    ) -> CounterSnapshot:
        """Build a snapshot from a Prometheus or OpenMetrics page, such as a vLLM server's ``/metrics``.

        The snapshot of :func:`~rl_contracts.metrics.parse_prometheus_text`, which describes the rules and the
        errors.  ``process`` names the engine's process (pass the URL the page was scraped from; the default is
        :func:`~rl_contracts.metrics.this_process`, right for a page rendered in this process) and the labels of
        the kept samples complete the ``engine``; ``taken_at`` defaults to now.

        >>> page = '# TYPE vllm:prompt_tokens counter\\nvllm:prompt_tokens_total{engine="0"} 7\\n# EOF\\n'
        >>> CounterSnapshot.from_prometheus_text(page).values
        {'vllm:prompt_tokens': 7.0}
        """
        return parse_prometheus_text(text, process=process, taken_at=taken_at).snapshot


class PrometheusPage(NamedTuple):
    """What :func:`parse_prometheus_text` reads from one page."""

    snapshot: CounterSnapshot
    """The kept counters of the page."""
    vllm_families: tuple[str, ...]
    """The names of the page's ``vllm:`` families in page order, of every type, kept or not (empty for a page
    that is not a vLLM engine's)."""


def parse_prometheus_text(
    text: str, *, process: str | None = None, taken_at: float | None = None
) -> PrometheusPage:
    """Parse Prometheus text exposition, or OpenMetrics, into a counter snapshot and the page's ``vllm:`` families.

    A page that ends with a ``# EOF`` line is OpenMetrics and is parsed with ``prometheus_client``'s OpenMetrics
    parser; any other page with its Prometheus text parser.  Only families named ``vllm:...`` are read:

    - counter families contribute their ``<family>_total`` samples (``_created`` is ignored), under
      ``# TYPE vllm:x_total counter`` (the classic spelling) and ``# TYPE vllm:x counter`` (the OpenMetrics
      spelling) alike: the text parser splits the latter into an empty counter and an untyped ``vllm:x_total``
      family, which is read as the counter, so a kept counter is never dropped;
    - histogram families contribute ``_count`` and ``_sum`` as ``key|count`` and ``key|sum`` (``_bucket`` and
      ``_created`` are ignored);
    - gauge, summary, info, stateset, gauge-histogram and other untyped families are ignored;
    - the counter ``vllm:spec_decode_num_accepted_tokens_per_pos`` becomes a vector indexed by its ``position``
      label (missing positions are 0, the length is the largest position + 1).

    Keys and the sum over every label but ``finished_reason`` are as in ``CounterSnapshot.from_vllm_metrics``.
    The OpenMetrics parser keeps the first of two timestamp-less samples of one series (its rule); the text
    parser's duplicates are refused below.

    The snapshot's ``engine`` is ``process`` (the URL the page was scraped from, say; default
    :func:`~rl_contracts.metrics.this_process`) with the labels of the kept samples, and ``taken_at`` defaults to
    now (see :class:`~rl_contracts.metrics.CounterSnapshot`).  Samples of several ``engine`` labels are kept apart
    too (:meth:`~rl_contracts.metrics.CounterSnapshot.per_engine`), so that each engine's delta is its own.

    Raises ``ContractTypeError`` when ``text`` is not a ``str``, and ``CounterSnapshotError`` "could not parse
    Prometheus text: {reason}" for text the parser rejects or a sample that sets a series twice; also for a bad
    value, a native histogram, or a per-position sample whose ``position`` label is missing, not a non-negative
    decimal, or above 4095 (:data:`~rl_contracts.metrics.MAX_SPEC_DECODE_POSITIONS`, the bound every snapshot
    source follows, so that a hostile page cannot allocate a huge vector).

    >>> page = parse_prometheus_text(
    ...     "# TYPE vllm:num_requests_running gauge\\nvllm:num_requests_running 2\\n"
    ...     "# TYPE vllm:generation_tokens counter\\nvllm:generation_tokens_total 48\\n"
    ... )
    >>> page.snapshot.values, page.vllm_families
    ({'vllm:generation_tokens': 48.0}, ('vllm:num_requests_running', 'vllm:generation_tokens'))
    """
    values, families, labels, parts = read_prometheus_text(text)
    return PrometheusPage(CounterSnapshot._read(values, labels, parts, process, taken_at), families)
