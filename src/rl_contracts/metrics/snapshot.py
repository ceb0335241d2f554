"""``CounterSnapshot``: one worker's kept engine counters, from any of its three sources (SPEC §6.3)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Annotated, Any, Final

from pydantic import BaseModel, ConfigDict, WithJsonSchema, field_serializer, field_validator, model_validator
from typing_extensions import Self

from ..errors import ContractTypeError
from ..protocols import MetricLike
from ._prometheus_text import read_prometheus_text
from ._reading import engine_of, instant, instant_or_now
from ._vllm_metrics import read_vllm_metrics
from ._worker_dicts import read_worker_dict
from .engines import EngineIdentity
from .names import WorkerCounters

__all__ = ["CounterSnapshot"]

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
            return instant(value)
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
                values=values, engine=None, taken_at=None if taken_at is None else instant(taken_at)
            )
        return cls.model_construct(
            values=values, engine=engine_of((), process), taken_at=instant_or_now(taken_at)
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
        values, labels = read_vllm_metrics(metrics)
        return cls.model_construct(
            values=values, engine=engine_of(labels, process), taken_at=instant_or_now(taken_at)
        )

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
        values, _, labels = read_prometheus_text(text)
        return cls.model_construct(
            values=values, engine=engine_of(labels, process), taken_at=instant_or_now(taken_at)
        )
