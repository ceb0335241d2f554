"""``CounterSnapshot``: one worker's kept engine counters, from any of its three sources (SPEC §6.3)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated, Final

from pydantic import BaseModel, ConfigDict, WithJsonSchema, field_serializer, field_validator

from ..errors import ContractTypeError
from ..protocols import MetricLike
from ._prometheus_text import read_prometheus_text
from ._vllm_metrics import read_vllm_metrics
from ._worker_dicts import read_worker_dict
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
    def from_worker_dict(cls, d: WorkerCounters) -> CounterSnapshot:
        """Build a snapshot from a worker dict, dropping unkept keys without looking at their values.

        Kept values must be finite numbers ``>= 0`` (not bool), or lists/tuples of them.  Raises
        ``ContractTypeError`` when ``d`` is not a mapping or a key is not a ``str``, ``CounterSnapshotError`` for
        a bad kept value.
        """
        return cls.model_construct(
            values=read_worker_dict(d, drop_unkept=True, where="worker dict", argument="d")
        )

    @classmethod
    def from_vllm_metrics(cls, metrics: Iterable[MetricLike]) -> CounterSnapshot:
        """Build a snapshot from the objects ``LLM.get_metrics()`` returns, summing over every label but one.

        For each object whose name is kept: the key is its ``name``, or ``name|finished_reason=<reason>`` when it
        has that label.  An object with ``values`` (a list or tuple) contributes a vector; one with ``value`` a
        scalar; one with both ``count`` and ``sum`` the scalars ``key|count`` and ``key|sum`` (buckets are
        ignored).  Objects with the same key add up: scalars add, vectors add element-wise (the shorter padded
        with zeros).  Unkept objects are skipped without inspecting anything but their name.

        Raises ``ContractTypeError`` when ``metrics`` is not an iterable of objects (a ``str``, a mapping or a 0-d
        array included), and ``CounterSnapshotError`` for an object without a str name, with non-mapping labels
        or a non-``str`` ``finished_reason``, for a kept object with none of the value attributes, for a bad
        value, and for a key that receives both a scalar and a vector.

        Divergence: the reference's worker flattening keeps only the last object for each name, so data-parallel
        engines in one process undercount.

        >>> from types import SimpleNamespace as O
        >>> CounterSnapshot.from_vllm_metrics([
        ...     O(name="vllm:prompt_tokens", labels={"engine": "0"}, value=100),
        ...     O(name="vllm:prompt_tokens", labels={"engine": "1"}, value=50),
        ... ]).values
        {'vllm:prompt_tokens': 150.0}
        """
        return cls.model_construct(values=read_vllm_metrics(metrics))

    @classmethod
    def from_prometheus_text(cls, text: str) -> CounterSnapshot:
        """Build a snapshot from a Prometheus or OpenMetrics page, such as a vLLM server's ``/metrics``.

        The snapshot of :func:`~rl_contracts.metrics.parse_prometheus_text`, which describes the rules and the
        errors.

        >>> page = '# TYPE vllm:prompt_tokens counter\\nvllm:prompt_tokens_total{engine="0"} 7\\n# EOF\\n'
        >>> CounterSnapshot.from_prometheus_text(page).values
        {'vllm:prompt_tokens': 7.0}
        """
        return cls.model_construct(values=read_prometheus_text(text)[0])
