"""Engine counters and per-step engine and speculative-decoding metrics (SPEC §6).

The trainer takes a counter snapshot from each DP leader before a generation step and another after it,
aggregates each set across workers (:func:`aggregate_spec_decode_counters`), then derives step metrics from the
difference (:func:`compute_engine_step_metrics`, :func:`compute_spec_decode_metrics`).  A worker's snapshot is a
:class:`CounterSnapshot`, built from a worker dict, from the objects ``vllm.LLM.get_metrics()`` returns, or from a
server's Prometheus ``/metrics`` page.  Every counter value is checked to be finite and ``>= 0``; a bad one raises
:class:`~rl_contracts.errors.CounterSnapshotError` naming the key and the value.

Metric names always match exactly, never by prefix; candidate tuples list aliases in order so that a vLLM rename
can be absorbed by adding a name.  This module imports neither torch nor vLLM (``prometheus_client`` is imported
only when Prometheus text is parsed).
"""

from __future__ import annotations

import math
import numbers
import re
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Annotated, Any, Final, TypeAlias

from pydantic import BaseModel, ConfigDict, WithJsonSchema, field_serializer, field_validator

from ._messages import render, render_name, shorten, type_name
from .checks import int_or_none, is_int
from .errors import ContractTypeError, CounterSnapshotError
from .protocols import MetricLike

__all__ = [
    "COUNTER_KEY_SEP",
    "FINISHED_REASON_LABEL",
    "GENERATION_LENGTH_HISTOGRAMS",
    "GENERATION_TOKEN_COUNTERS",
    "HISTOGRAM_COUNT_PART",
    "HISTOGRAM_SUM_PART",
    "KEPT_COUNTER_NAMES",
    "OK_FINISH_REASONS",
    "PROMPT_LENGTH_HISTOGRAMS",
    "PROMPT_TOKEN_COUNTERS",
    "REQUEST_SUCCESS_COUNTERS",
    "SPEC_DECODE_ACCEPTED_PER_POS",
    "SPEC_DECODE_NUM_ACCEPTED_TOKENS",
    "SPEC_DECODE_NUM_DRAFTS",
    "SPEC_DECODE_NUM_DRAFT_TOKENS",
    "AggregatedCounters",
    "CounterSnapshot",
    "WorkerCounters",
    "aggregate_spec_decode_counters",
    "compute_engine_step_metrics",
    "compute_spec_decode_metrics",
    "encode_counter_key",
    "first_delta",
    "is_kept",
    "mean_from_histogram",
]

# --------------------------------------------------------------------------------------------------------------
# Names (§6.1)

COUNTER_KEY_SEP: Final[str] = "|"
"""Separator between a metric name and a part in a flat counter key."""
HISTOGRAM_SUM_PART: Final[str] = "sum"
"""Part of a histogram's running sum: ``"<name>|sum"``."""
HISTOGRAM_COUNT_PART: Final[str] = "count"
"""Part of a histogram's observation count: ``"<name>|count"``."""
FINISHED_REASON_LABEL: Final[str] = "finished_reason"
"""The one label kept in keys (``"<name>|finished_reason=<reason>"``); every other label is summed over."""

PROMPT_TOKEN_COUNTERS: Final[tuple[str, ...]] = ("vllm:prompt_tokens",)
"""Counter candidates for prefill tokens."""
GENERATION_TOKEN_COUNTERS: Final[tuple[str, ...]] = ("vllm:generation_tokens",)
"""Counter candidates for generated tokens."""
PROMPT_LENGTH_HISTOGRAMS: Final[tuple[str, ...]] = ("vllm:request_prompt_tokens",)
"""Histogram candidates for per-request prompt length."""
GENERATION_LENGTH_HISTOGRAMS: Final[tuple[str, ...]] = ("vllm:request_generation_tokens",)
"""Histogram candidates for per-request generation length."""
REQUEST_SUCCESS_COUNTERS: Final[tuple[str, ...]] = ("vllm:request_success",)
"""Counter candidates for finished requests, labelled ``finished_reason``."""
KEPT_COUNTER_NAMES: Final[tuple[str, ...]] = (
    *PROMPT_TOKEN_COUNTERS,
    *GENERATION_TOKEN_COUNTERS,
    *PROMPT_LENGTH_HISTOGRAMS,
    *GENERATION_LENGTH_HISTOGRAMS,
    *REQUEST_SUCCESS_COUNTERS,
)
"""The engine series a snapshot keeps besides the spec-decode family, in the order above."""

SPEC_DECODE_NUM_DRAFTS: Final[str] = "vllm:spec_decode_num_drafts"
"""Counter of draft batches."""
SPEC_DECODE_NUM_DRAFT_TOKENS: Final[str] = "vllm:spec_decode_num_draft_tokens"
"""Counter of proposed draft tokens."""
SPEC_DECODE_NUM_ACCEPTED_TOKENS: Final[str] = "vllm:spec_decode_num_accepted_tokens"
"""Counter of accepted draft tokens."""
SPEC_DECODE_ACCEPTED_PER_POS: Final[str] = "vllm:spec_decode_num_accepted_tokens_per_pos"
"""Vector of accepted draft tokens per draft position (index i is position i, 0-based, as vLLM)."""

OK_FINISH_REASONS: Final[frozenset[str]] = frozenset({"stop", "length"})
"""Finish reasons that count as a successful generation (running to ``max_tokens`` is normal in RL).

Every other reason (vLLM's ``abort``, ``error``, ``repetition`` and any added later) counts as failed.
"""

WorkerCounters: TypeAlias = Mapping[str, float | Sequence[float]]
"""One worker's flat snapshot: counter key to scalar, or to a per-position vector (0-based)."""
AggregatedCounters: TypeAlias = dict[str | tuple[str, int], float]
"""Counters summed over workers; vector positions become ``(name, position)`` keys, 1-based."""

_KEPT_NAME_SET: Final = frozenset(KEPT_COUNTER_NAMES)
_MAX_PROMETHEUS_POSITION: Final = 4095
"""Largest ``position`` label accepted on a Prometheus page, so a hostile page cannot allocate a huge vector."""
_DECIMAL = re.compile(r"[0-9]+")
_MAX_POSITION: Final = sys.maxsize
"""Largest position in an aggregated key: a position is a list index + 1, and output keys print it in decimal."""

# --------------------------------------------------------------------------------------------------------------
# Keys (§6.2)


def encode_counter_key(name: str, part: str) -> str:
    """Encode a histogram component or a label into a flat counter key: ``name + "|" + part``.

    ``part`` is not escaped and may itself contain ``|`` or ``=``.  Raises ``ContractTypeError`` when either
    argument is not a ``str``, and ``CounterSnapshotError`` when ``name`` is empty or contains ``|``.

    Divergence: the reference does not validate ``name``.

    >>> encode_counter_key("vllm:request_success", "finished_reason=stop")
    'vllm:request_success|finished_reason=stop'
    """
    _require_str(name, "name")
    _require_str(part, "part")
    if not name or COUNTER_KEY_SEP in name:
        raise CounterSnapshotError(
            f"counter name must be non-empty and must not contain '{COUNTER_KEY_SEP}', got {render(name)}; "
            "pass the bare metric name and put the component in part",
            key=shorten(name, 200),
        )
    return name + COUNTER_KEY_SEP + part


def is_kept(metric_name: str) -> bool:
    """Whether a snapshot key belongs to a family the driver consumes.

    The base is the key up to the first ``|``; it is kept when it contains ``"spec_decode"`` or is exactly one of
    :data:`KEPT_COUNTER_NAMES`.  Raises ``ContractTypeError`` for a non-``str``.

    >>> is_kept("vllm:request_prompt_tokens|count"), is_kept("vllm:prompt_tokens_cached")
    (True, False)
    """
    _require_str(metric_name, "metric_name")
    base = metric_name.partition(COUNTER_KEY_SEP)[0]
    return "spec_decode" in base or base in _KEPT_NAME_SET


# --------------------------------------------------------------------------------------------------------------
# Value checks shared by every entry point


def _require_str(value: object, argument: str) -> None:
    if not isinstance(value, str):
        raise ContractTypeError.for_value(argument, "a str", value)


def _key_text(key: object) -> str:
    return shorten(key, 200) if isinstance(key, str) else render(key)


def _as_number(value: object) -> float | None:
    """``float(value)`` for a real number that is not a bool (``inf`` when it overflows), else ``None``."""
    if isinstance(value, bool) or not (is_int(value) or isinstance(value, numbers.Real)):
        return None
    try:
        return float(value)  # type: ignore[arg-type]
    except OverflowError:
        return math.inf


def _counter_value(value: object, key: object, where: str) -> float:
    """Check one counter value (finite, ``>= 0``, a number but not a bool) and return it as a float."""
    number = _as_number(value)
    if number is None:
        raise CounterSnapshotError(
            f"{where} counter '{_key_text(key)}' must be an int or float (not bool), got {type_name(value)} "
            f"{render(value)}",
            key=_key_text(key),
            value=render(value),
        )
    if not math.isfinite(number) or number < 0:
        raise CounterSnapshotError(
            f"{where} counter '{_key_text(key)}' must be finite and >= 0, got {render(value)}; engine counters "
            "only grow, so the snapshot is corrupt or was not read from a counter",
            key=_key_text(key),
            value=render(value),
        )
    return number + 0.0  # normalises -0.0


def _counter_vector(value: Sequence[object], key: object, where: str) -> tuple[float, ...]:
    result = []
    for index, item in enumerate(value):
        try:
            result.append(_counter_value(item, key, where))
        except CounterSnapshotError as err:
            raise CounterSnapshotError(
                f"{err.message} (at position {index})", key=err.key, value=err.value
            ) from None
    return tuple(result)


def _is_plain_sequence(value: object) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str | bytes | bytearray)


def _is_vector(value: object) -> bool:
    return isinstance(value, list | tuple)


def _check_sum(key: object, total: float, where: str) -> None:
    if not math.isfinite(total):
        raise CounterSnapshotError(
            f"{where} counter '{_key_text(key)}' overflows when summed ({render(total)}); the inputs are not "
            "engine counters",
            key=_key_text(key),
            value=render(total),
        )


class _FrozenCounters(Mapping[str, "float | tuple[float, ...]"]):
    """A read-only, hashable, picklable mapping of already validated counter values."""

    __slots__ = ("_data",)

    def __init__(self, data: dict[str, float | tuple[float, ...]]) -> None:
        self._data = data

    def __getitem__(self, key: str) -> float | tuple[float, ...]:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        return hash(frozenset(self._data.items()))

    def __repr__(self) -> str:
        return repr(self._data)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_FrozenCounters, (dict(self._data),))


def _snapshot_values(
    values: object, *, drop_unkept: bool, where: str = "snapshot", argument: str = "d"
) -> _FrozenCounters:
    """Validate a worker-format mapping into snapshot values (scalars as floats, vectors as tuples).

    Raises ``ContractTypeError`` for a non-mapping or a non-``str`` key (only with ``drop_unkept``; otherwise
    every key must be a kept ``str`` and any other key is a ``CounterSnapshotError``).
    """
    if not isinstance(values, Mapping):
        raise ContractTypeError(
            f"{where} must be a mapping of counter keys to values, got {type_name(values)}",
            argument=argument,
            expected="Mapping[str, float | Sequence[float]]",
            actual=type_name(values),
        )
    result: dict[str, float | tuple[float, ...]] = {}
    for key, value in values.items():
        if drop_unkept:
            if not isinstance(key, str):
                raise ContractTypeError(
                    f"{where} has a key that is not a str: {type_name(key)} {render(key)}",
                    argument=argument,
                    expected="str",
                    actual=type_name(key),
                )
            if not is_kept(key):
                continue
        elif not isinstance(key, str) or not key or not is_kept(key):
            raise CounterSnapshotError(
                f"snapshot key {render(key)} is not a kept counter key (a non-empty str naming a spec-decode "
                f"family or one of {list(KEPT_COUNTER_NAMES)}); build snapshots with from_worker_dict to drop "
                "other keys",
                key=_key_text(key),
                value=render(value),
            )
        result[key] = (
            _counter_vector(value, key, where) if _is_vector(value) else _counter_value(value, key, where)
        )
    return _FrozenCounters(result)


class _Accumulator:
    """Sums scalars and per-position vectors by flat key, refusing a key that gets both kinds."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.scalars: dict[str, float] = {}
        self.vectors: dict[str, dict[int, float]] = {}
        self.order: dict[str, None] = {}

    def _claim(self, key: str, other: Mapping[str, object]) -> None:
        """Record ``key`` in first-seen order; ``other`` is the store of the other kind, which must not hold it."""
        if key in other:
            raise CounterSnapshotError(
                f"{self.where} counter '{shorten(key, 200)}' is reported both as a scalar and as a per-position "
                "vector; one series cannot be both",
                key=shorten(key, 200),
            )
        self.order.setdefault(key)

    def add_scalar(self, key: str, value: object) -> None:
        number = _counter_value(value, key, self.where)
        self._claim(key, self.vectors)
        self.scalars[key] = self.scalars.get(key, 0.0) + number

    def add_position(self, key: str, position: int, value: object) -> None:
        number = _counter_value(value, key, self.where)
        self._claim(key, self.scalars)
        slots = self.vectors.setdefault(key, {})
        slots[position] = slots.get(position, 0.0) + number

    def add_vector(self, key: str, values: Sequence[object]) -> None:
        numbers_ = _counter_vector(values, key, self.where)
        self._claim(key, self.scalars)
        slots = self.vectors.setdefault(key, {})
        for position, number in enumerate(numbers_):
            slots[position] = slots.get(position, 0.0) + number

    def result(self) -> _FrozenCounters:
        out: dict[str, float | tuple[float, ...]] = {}
        for key in self.order:
            if key in self.scalars:
                total = self.scalars[key]
                _check_sum(key, total, self.where)
                out[key] = total
            else:
                slots = self.vectors[key]
                vector = [0.0] * max((position + 1 for position in slots), default=0)
                for position, total in slots.items():
                    _check_sum(key, total, self.where)
                    vector[position] = total
                out[key] = tuple(vector)
        return _FrozenCounters(out)


def _series_key(name: str, labels: Mapping[str, object]) -> str:
    """The snapshot key of a series: its name, plus ``|finished_reason=<reason>`` when that label is present."""
    if FINISHED_REASON_LABEL not in labels:
        return name
    return encode_counter_key(name, f"{FINISHED_REASON_LABEL}={labels[FINISHED_REASON_LABEL]}")


def _flat_key(name: str, labels: object, where: str) -> str:
    """:func:`_series_key` after checking that ``labels`` is a mapping whose ``finished_reason`` is a ``str``.

    Prometheus samples need no check: the parser only produces ``dict[str, str]`` labels.
    """
    if not isinstance(labels, Mapping):
        raise CounterSnapshotError(
            f"{where} '{shorten(name, 200)}' must have labels as a mapping of label names to strings, got "
            f"{type_name(labels)}",
            key=shorten(name, 200),
            value=render(labels),
        )
    if FINISHED_REASON_LABEL in labels:
        reason = labels[FINISHED_REASON_LABEL]
        if not isinstance(reason, str):
            raise CounterSnapshotError(
                f"{where} '{shorten(name, 200)}' has a {FINISHED_REASON_LABEL} label that is not a str: "
                f"{render(reason)}",
                key=shorten(name, 200),
                value=render(reason),
            )
    return _series_key(name, labels)


def _check_metric_name(name: object, where: str) -> str:
    if not isinstance(name, str) or not name or COUNTER_KEY_SEP in name:
        raise CounterSnapshotError(
            f"{where} name must be a non-empty str without '{COUNTER_KEY_SEP}', got {type_name(name)} "
            f"{render(name)}",
            key=_key_text(name),
        )
    return name


# --------------------------------------------------------------------------------------------------------------
# CounterSnapshot (§6.3)

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
            return _snapshot_values(value, drop_unkept=False)
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
        return cls.model_construct(values=_snapshot_values(d, drop_unkept=True, where="worker dict"))

    @classmethod
    def from_vllm_metrics(cls, metrics: Iterable[MetricLike]) -> CounterSnapshot:
        """Build a snapshot from the objects ``LLM.get_metrics()`` returns, summing over every label but one.

        For each object whose name is kept: the key is its ``name``, or ``name|finished_reason=<reason>`` when it
        has that label.  An object with ``values`` (a list or tuple) contributes a vector; one with ``value`` a
        scalar; one with both ``count`` and ``sum`` the scalars ``key|count`` and ``key|sum`` (buckets are
        ignored).  Objects with the same key add up: scalars add, vectors add element-wise (the shorter padded
        with zeros).  Unkept objects are skipped without inspecting anything but their name.

        Raises ``ContractTypeError`` when ``metrics`` is not an iterable of objects (or is a ``str`` or mapping),
        and ``CounterSnapshotError`` for an object without a str name, with non-mapping labels or a non-``str``
        ``finished_reason``, for a kept object with none of the value attributes, for a bad value, and for a key
        that receives both a scalar and a vector.

        Divergence: the reference's worker flattening keeps only the last object for each name, so data-parallel
        engines in one process undercount.

        >>> from types import SimpleNamespace as O
        >>> CounterSnapshot.from_vllm_metrics([
        ...     O(name="vllm:prompt_tokens", labels={"engine": "0"}, value=100),
        ...     O(name="vllm:prompt_tokens", labels={"engine": "1"}, value=50),
        ... ]).values
        {'vllm:prompt_tokens': 150.0}
        """
        if isinstance(metrics, str | bytes | bytearray | Mapping) or not isinstance(metrics, Iterable):
            raise ContractTypeError.for_value(
                "metrics", "an iterable of vLLM metric objects (from LLM.get_metrics())", metrics
            )
        accumulator = _Accumulator("vLLM metric")
        for index, metric in enumerate(metrics):
            where = f"metrics[{index}]"
            name = _check_metric_name(getattr(metric, "name", None), where)
            if not is_kept(name):
                continue
            key = _flat_key(name, getattr(metric, "labels", None), f"metric {where}")
            values = getattr(metric, "values", None)
            value = getattr(metric, "value", None)
            count, total = getattr(metric, "count", None), getattr(metric, "sum", None)
            if values is not None:
                if not _is_vector(values):
                    raise CounterSnapshotError(
                        f"metric {where} '{shorten(key, 200)}' has values of type {type_name(values)}; a vLLM "
                        "Vector holds a list of per-position counts",
                        key=shorten(key, 200),
                        value=render(values),
                    )
                accumulator.add_vector(key, values)
            elif value is not None:
                accumulator.add_scalar(key, value)
            elif count is not None and total is not None:
                accumulator.add_scalar(key + COUNTER_KEY_SEP + HISTOGRAM_COUNT_PART, count)
                accumulator.add_scalar(key + COUNTER_KEY_SEP + HISTOGRAM_SUM_PART, total)
            else:
                raise CounterSnapshotError(
                    f"metric {where} '{shorten(key, 200)}' ({type_name(metric)}) has none of 'values', 'value' "
                    "or 'count' and 'sum'; expected a vLLM Counter, Gauge, Histogram or Vector",
                    key=shorten(key, 200),
                )
        return cls.model_construct(values=accumulator.result())

    @classmethod
    def from_prometheus_text(cls, text: str) -> CounterSnapshot:
        """Build a snapshot from Prometheus text exposition, such as a vLLM server's ``/metrics`` page.

        The text is parsed with ``prometheus_client``'s parser and only families named ``vllm:...`` are read.
        Counter families contribute their ``<family>_total`` samples (``_created`` is ignored); histogram families
        their ``_count`` and ``_sum`` samples as ``key|count`` and ``key|sum`` (``_bucket`` and ``_created`` are
        ignored); gauge, summary, info, stateset and untyped families are ignored.  The counter family
        ``vllm:spec_decode_num_accepted_tokens_per_pos`` becomes a vector indexed by its ``position`` label
        (missing positions are 0, the length is the largest position + 1).  Keys and the sum over every label but
        ``finished_reason`` are as in :meth:`from_vllm_metrics`.

        Raises ``ContractTypeError`` when ``text`` is not a ``str``, and ``CounterSnapshotError`` "could not parse
        Prometheus text: {reason}" for text the parser rejects or a sample that appears twice with the same
        labels; ``CounterSnapshotError`` also for a bad value, or a per-position sample whose ``position`` label is
        missing, not a non-negative decimal, or above 4095 (a bound against hostile pages).
        """
        snapshot, _ = _parse_prometheus(text)
        return snapshot


def _parse_prometheus(text: object) -> tuple[CounterSnapshot, int]:
    """Parse Prometheus text into a snapshot; also return how many ``vllm:`` families the text holds."""
    _require_str(text, "text")
    from prometheus_client.parser import text_string_to_metric_families

    try:
        families = list(text_string_to_metric_families(text))  # type: ignore[arg-type]
    except (RecursionError, MemoryError):
        raise
    except Exception as err:  # the parser raises ValueError, but also bare IndexError/TypeError on odd input
        reason = render_name(str(err) or type(err).__name__)
        raise CounterSnapshotError(f"could not parse Prometheus text: {reason}") from None
    accumulator = _Accumulator("Prometheus")
    seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    vllm_families = 0
    for family in families:
        name = family.name
        if not name.startswith("vllm:"):
            continue
        vllm_families += 1
        if family.type == "counter":
            parts: dict[str, str | None] = {name + "_total": None}
        elif family.type == "histogram":
            parts = {name + "_count": HISTOGRAM_COUNT_PART, name + "_sum": HISTOGRAM_SUM_PART}
        else:
            continue
        if not is_kept(_check_metric_name(name, "Prometheus family")):
            continue
        vector = family.type == "counter" and name == SPEC_DECODE_ACCEPTED_PER_POS
        for sample in family.samples:
            if sample.name not in parts:
                continue
            identity = (sample.name, tuple(sorted(sample.labels.items())))
            if identity in seen:
                raise CounterSnapshotError(
                    f"could not parse Prometheus text: duplicate sample {render_name(sample.name)} with labels "
                    f"{render(sample.labels)}",
                    key=shorten(name, 200),
                    value=render(sample.value),
                )
            seen.add(identity)
            key = _series_key(name, sample.labels)
            part = parts[sample.name]
            if part is not None:
                accumulator.add_scalar(key + COUNTER_KEY_SEP + part, sample.value)
            elif vector:
                accumulator.add_position(key, _position(sample.labels, key), sample.value)
            else:
                accumulator.add_scalar(key, sample.value)
    return CounterSnapshot.model_construct(values=accumulator.result()), vllm_families


def _position(labels: Mapping[str, str], key: str) -> int:
    raw = labels.get("position")
    if raw is None or not _DECIMAL.fullmatch(raw) or int(raw) > _MAX_PROMETHEUS_POSITION:
        raise CounterSnapshotError(
            f"Prometheus counter '{shorten(key, 200)}' needs a 'position' label holding a decimal from 0 to "
            f"{_MAX_PROMETHEUS_POSITION}, got {render(raw)}",
            key=shorten(key, 200),
            value=render(raw),
        )
    return int(raw)


# --------------------------------------------------------------------------------------------------------------
# Aggregation (§6.4)


def aggregate_spec_decode_counters(
    worker_metrics: Sequence[CounterSnapshot | WorkerCounters],
) -> AggregatedCounters:
    """Aggregate vLLM engine counters from multiple workers into one counter dictionary.

    Each report is a :class:`CounterSnapshot` or a worker dict.  For each kept ``(name, value)`` pair (unkept
    pairs are skipped without looking at the value): a scalar is added to ``result[name]``; a vector (list or
    tuple) adds its element ``i`` to ``result[(name, i + 1)]``, so positions are 1-based.  Returns a new dict of
    floats with keys in first-seen order; ``[]`` gives ``{}``.

    Raises ``ContractTypeError`` when ``worker_metrics`` is not a sequence (or is a ``str``), a report is neither
    a snapshot nor a mapping, or a key is not a ``str``; ``CounterSnapshotError`` for a value that is not a finite
    number ``>= 0`` (bools included), a name that is a scalar in one report and a vector in another, or a sum that
    overflows.

    Divergence: the reference sums whatever it receives, including NaN, negative numbers and bools.

    >>> aggregate_spec_decode_counters([
    ...     {"vllm:spec_decode_num_drafts": 100, "vllm:spec_decode_num_accepted_tokens_per_pos": [50, 30]},
    ...     {"vllm:spec_decode_num_drafts": 50, "other_metric": 5},
    ... ])
    {'vllm:spec_decode_num_drafts': 150.0, ('vllm:spec_decode_num_accepted_tokens_per_pos', 1): 50.0, \
('vllm:spec_decode_num_accepted_tokens_per_pos', 2): 30.0}
    """
    if not _is_plain_sequence(worker_metrics):
        raise ContractTypeError.for_value(
            "worker_metrics", "a list of worker counter snapshots", worker_metrics
        )
    result: AggregatedCounters = {}
    vector_names: dict[str, bool] = {}
    for index, report in enumerate(worker_metrics):
        where = f"worker_metrics[{index}]"
        if isinstance(report, CounterSnapshot):
            values = report.values
        elif isinstance(report, Mapping):
            values = _snapshot_values(report, drop_unkept=True, where=where, argument="worker_metrics")
        else:
            raise ContractTypeError(
                f"{where} must be a CounterSnapshot or a mapping of counter names to values, got "
                f"{type_name(report)}",
                argument="worker_metrics",
                expected="CounterSnapshot | Mapping[str, float | list[float]]",
                actual=type_name(report),
            )
        for name, value in values.items():
            is_vector = isinstance(value, tuple)
            if vector_names.setdefault(name, is_vector) != is_vector:
                raise CounterSnapshotError(
                    f"{where} counter '{shorten(name, 200)}' is a {'vector' if is_vector else 'scalar'} here but a "
                    f"{'scalar' if is_vector else 'vector'} in an earlier report; workers run different vLLM "
                    "versions or the snapshot is corrupt",
                    key=shorten(name, 200),
                    value=render(value),
                )
            if isinstance(value, tuple):
                for position, number in enumerate(value, start=1):
                    key = (name, position)
                    result[key] = result.get(key, 0.0) + number
            else:
                result[name] = result.get(name, 0.0) + value
    for result_key, total in result.items():
        _check_sum(result_key, total, "aggregated")
    return result


# --------------------------------------------------------------------------------------------------------------
# Deltas and step metrics (§6.5 – §6.7)


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
        _require_str(name, "candidates[i]")
    return tuple(candidates)


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
    is not a finite number (negative values are legal deltas).
    """
    if not isinstance(delta, Mapping):
        raise ContractTypeError.for_value("delta", "a mapping of counter keys to floats", delta)
    names = _candidate_names(candidates)
    if part is not None:
        _require_str(part, "part")
    for name in names:
        key = name if part is None else encode_counter_key(name, part)
        if key in delta:
            value = delta[key]
            number = _as_number(value)
            if number is None or not math.isfinite(number):
                raise CounterSnapshotError(
                    f"delta['{shorten(key, 200)}'] must be a finite number (not bool), got {type_name(value)} "
                    f"{render(value)}",
                    key=shorten(key, 200),
                    value=render(value),
                )
            return number
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


def _checked_counters(counters: object, argument: str) -> dict[str | tuple[str, int], float]:
    """Validate an aggregated snapshot (keys ``str`` or ``(str, int >= 1)``, values finite ``>= 0``)."""
    if not isinstance(counters, Mapping):
        raise ContractTypeError.for_value(
            argument, "a mapping of counter keys to floats (from aggregate_spec_decode_counters)", counters
        )
    result: dict[str | tuple[str, int], float] = {}
    for key, value in counters.items():
        checked: str | tuple[str, int]
        position = int_or_none(key[1]) if isinstance(key, tuple) and len(key) == 2 else None
        if isinstance(key, str):
            checked = key
        elif position is not None and isinstance(key[0], str) and 1 <= position <= _MAX_POSITION:
            checked = (key[0], position)
        else:
            raise CounterSnapshotError(
                f"{argument} key {render(key)} must be a str or a (name, position >= 1) tuple, as "
                "aggregate_spec_decode_counters returns (a position is at most sys.maxsize)",
                key=_key_text(key),
                value=render(value),
            )
        result[checked] = _counter_value(value, key, argument)
    return result


def compute_engine_step_metrics(
    start_counters: AggregatedCounters,
    end_counters: AggregatedCounters,
) -> dict[str, float]:
    """Compute per-step vLLM engine token, sequence-length and outcome metrics (the engine's own accounting).

    The delta covers the keys of ``end_counters`` only: ``end[k] - start.get(k, 0.0)``, kept only when it is
    ``>= 0`` (a series that went backwards because its engine restarted is omitted, never negative; a key new in
    ``end`` reports its full value).  Output, in this order, each only when its series is present (an absent series
    is omitted, never a plausible 0.0): ``vllm/prompt_tokens``, ``vllm/generation_tokens``,
    ``vllm/prompt_length_mean``, ``vllm/generation_length_mean`` (``None`` means no request finished, so omitted),
    ``vllm/generations_ok`` (reasons in :data:`OK_FINISH_REASONS`) and ``vllm/generations_failed`` (every other
    reason, an empty one included).  Both outcome keys appear, even at 0.0, once any ``finished_reason`` key is in
    the delta.  ``({}, {})`` gives ``{}``.

    Raises ``ContractTypeError`` when an argument is not a mapping; ``CounterSnapshotError`` for a key that is not
    a ``str`` or ``(str, int >= 1)`` or a value that is not a finite number ``>= 0`` (bools included).

    Divergence: the reference accepts negative, NaN and bool values in the snapshots it receives.
    """
    start = _checked_counters(start_counters, "start_counters")
    end = _checked_counters(end_counters, "end_counters")
    delta: dict[str | tuple[str, int], float] = {}
    for key, value in end.items():
        before = start.get(key, 0.0)
        if value >= before:
            delta[key] = value - before
    metrics: dict[str, float] = {}
    for output, found in (
        ("vllm/prompt_tokens", first_delta(delta, PROMPT_TOKEN_COUNTERS)),
        ("vllm/generation_tokens", first_delta(delta, GENERATION_TOKEN_COUNTERS)),
        ("vllm/prompt_length_mean", mean_from_histogram(delta, PROMPT_LENGTH_HISTOGRAMS)),
        ("vllm/generation_length_mean", mean_from_histogram(delta, GENERATION_LENGTH_HISTOGRAMS)),
    ):
        if found is not None:
            metrics[output] = float(found)
    for name in REQUEST_SUCCESS_COUNTERS:
        prefix = encode_counter_key(name, FINISHED_REASON_LABEL + "=")
        outcomes = [
            (k[len(prefix) :], v) for k, v in delta.items() if isinstance(k, str) and k.startswith(prefix)
        ]
        if outcomes:
            metrics["vllm/generations_ok"] = float(sum(v for r, v in outcomes if r in OK_FINISH_REASONS))
            metrics["vllm/generations_failed"] = float(
                sum(v for r, v in outcomes if r not in OK_FINISH_REASONS)
            )
            break
    return metrics


def compute_spec_decode_metrics(
    start_counters: AggregatedCounters,
    end_counters: AggregatedCounters,
) -> dict[str, float]:
    """Compute delta and derived metrics for speculative decoding.

    The delta covers the union of keys, ``end.get(k, 0.0) - start.get(k, 0.0)``, and keeps negative values (unlike
    :func:`compute_engine_step_metrics`; both semantics are the reference's).  With ``D``, ``T`` and ``A`` the
    deltas of drafts, draft tokens and accepted tokens (0.0 when absent), the output is, in this order:
    ``vllm/spec_num_drafts`` (D), ``vllm/spec_num_draft_tokens`` (T), ``vllm/spec_num_accepted_tokens`` (A),
    ``vllm/spec_acceptance_length`` (``1 + A / D``, 1.0 when ``D <= 0``), ``vllm/spec_acceptance_rate``
    (``A / T``, 0.0 when ``T <= 0``) - these five always - then ``vllm/{metric}-{pos}`` for every tuple key sorted
    by ``(metric, pos)``, then, only when ``D > 0``, ``vllm/spec_acceptance_rate-pos-{pos}`` =
    ``delta[(SPEC_DECODE_ACCEPTED_PER_POS, pos)] / D`` sorted by position.  Division by zero never happens.

    Raises as :func:`compute_engine_step_metrics`.

    Divergence: the reference derives a per-position rate from every tuple key; this derives it only from the
    accepted-per-position family, the only vector vLLM emits, so results agree in practice.

    >>> m = compute_spec_decode_metrics(
    ...     {"vllm:spec_decode_num_drafts": 100, "vllm:spec_decode_num_accepted_tokens": 200},
    ...     {"vllm:spec_decode_num_drafts": 200, "vllm:spec_decode_num_accepted_tokens": 440},
    ... )
    >>> m["vllm/spec_acceptance_length"]
    3.4
    """
    start = _checked_counters(start_counters, "start_counters")
    end = _checked_counters(end_counters, "end_counters")
    delta = {key: end.get(key, 0.0) - start.get(key, 0.0) for key in {**start, **end}}
    drafts = delta.get(SPEC_DECODE_NUM_DRAFTS, 0.0)
    draft_tokens = delta.get(SPEC_DECODE_NUM_DRAFT_TOKENS, 0.0)
    accepted = delta.get(SPEC_DECODE_NUM_ACCEPTED_TOKENS, 0.0)
    metrics = {
        "vllm/spec_num_drafts": float(drafts),
        "vllm/spec_num_draft_tokens": float(draft_tokens),
        "vllm/spec_num_accepted_tokens": float(accepted),
        "vllm/spec_acceptance_length": 1.0 + accepted / drafts if drafts > 0 else 1.0,
        "vllm/spec_acceptance_rate": accepted / draft_tokens if draft_tokens > 0 else 0.0,
    }
    positions = sorted(key for key in delta if isinstance(key, tuple))
    for metric, position in positions:
        metrics[f"vllm/{metric}-{position}"] = float(delta[(metric, position)])
    if drafts > 0:
        for metric, position in positions:
            if metric == SPEC_DECODE_ACCEPTED_PER_POS:
                metrics[f"vllm/spec_acceptance_rate-pos-{position}"] = delta[(metric, position)] / drafts
    return metrics
