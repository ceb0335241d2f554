"""Metric names, flat counter keys and the snapshot type aliases (SPEC §6.1, §6.2, §0.6).

Candidate tuples list aliases in order, so that a vLLM rename can be absorbed by adding a name; names always
match exactly, never by prefix.  A flat key is a metric name plus, after ``|``, a histogram part or the one kept
label (:func:`encode_counter_key`); :func:`is_kept` says which keys a snapshot keeps.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final, TypeAlias

from .._internal.messages import render, shorten
from ..checks import require_str
from ..errors import CounterSnapshotError

__all__ = [
    "COUNTER_KEY_SEP",
    "ENGINE_LABEL",
    "FINISHED_REASON_LABEL",
    "GENERATION_LENGTH_HISTOGRAMS",
    "GENERATION_TOKEN_COUNTERS",
    "HISTOGRAM_COUNT_PART",
    "HISTOGRAM_SUM_PART",
    "KEPT_COUNTER_NAMES",
    "MAX_SPEC_DECODE_POSITIONS",
    "NOT_IDENTITY_LABELS",
    "OK_FINISH_REASONS",
    "PROMPT_LENGTH_HISTOGRAMS",
    "PROMPT_TOKEN_COUNTERS",
    "REQUEST_SUCCESS_COUNTERS",
    "SPEC_DECODE_ACCEPTED_PER_POS",
    "SPEC_DECODE_NUM_ACCEPTED_TOKENS",
    "SPEC_DECODE_NUM_DRAFTS",
    "SPEC_DECODE_NUM_DRAFT_TOKENS",
    "AggregatedCounters",
    "WorkerCounters",
    "encode_counter_key",
    "is_kept",
]

COUNTER_KEY_SEP: Final[str] = "|"
"""Separator between a metric name and a part in a flat counter key."""
HISTOGRAM_SUM_PART: Final[str] = "sum"
"""Part of a histogram's running sum: ``"<name>|sum"``."""
HISTOGRAM_COUNT_PART: Final[str] = "count"
"""Part of a histogram's observation count: ``"<name>|count"``."""
FINISHED_REASON_LABEL: Final[str] = "finished_reason"
"""The one label kept in keys (``"<name>|finished_reason=<reason>"``); every other label is summed over."""
ENGINE_LABEL: Final[str] = "engine"
"""vLLM's label holding the engine index (``"0"``, ``"1"``, ... within one process)."""
NOT_IDENTITY_LABELS: Final[frozenset[str]] = frozenset({FINISHED_REASON_LABEL, "position"})
"""Labels that split one engine's series rather than name the engine."""

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

MAX_SPEC_DECODE_POSITIONS: Final[int] = 4096
"""The most positions a per-position vector may hold in a snapshot (positions 0 to 4095), from every source alike.

A Prometheus page names positions in a label, so a hostile page could otherwise allocate a vector of any length;
the same bound applies to vLLM metric objects and worker dicts, so one engine's counters never pass from one
source and fail from another.  vLLM's draft lengths are a few tokens.
"""

OK_FINISH_REASONS: Final[frozenset[str]] = frozenset({"stop", "length"})
"""Finish reasons that count as a successful generation (running to ``max_tokens`` is normal in RL).

Every other reason (vLLM's ``abort``, ``error``, ``repetition`` and any added later) counts as failed.
"""

WorkerCounters: TypeAlias = Mapping[str, float | Sequence[float]]
"""One worker's flat snapshot: counter key to scalar, or to a per-position vector (0-based)."""
AggregatedCounters: TypeAlias = dict[str | tuple[str, int], float]
"""Counters summed over workers; vector positions become ``(name, position)`` keys, 1-based."""

_KEPT_NAME_SET: Final = frozenset(KEPT_COUNTER_NAMES)


def encode_counter_key(name: str, part: str) -> str:
    """Encode a histogram component or a label into a flat counter key: ``name + "|" + part``.

    ``part`` is not escaped and may itself contain ``|`` or ``=``.  Raises ``ContractTypeError`` when either
    argument is not a ``str``, and ``CounterSnapshotError`` when ``name`` is empty or contains ``|``.

    Divergence: the reference does not validate ``name``.

    >>> encode_counter_key("vllm:request_success", "finished_reason=stop")
    'vllm:request_success|finished_reason=stop'
    """
    require_str(name, "name")
    require_str(part, "part")
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
    :data:`~rl_contracts.metrics.KEPT_COUNTER_NAMES`.  Raises ``ContractTypeError`` for a non-``str``.

    >>> is_kept("vllm:request_prompt_tokens|count"), is_kept("vllm:prompt_tokens_cached")
    (True, False)
    """
    require_str(metric_name, "metric_name")
    base = metric_name.partition(COUNTER_KEY_SEP)[0]
    return "spec_decode" in base or base in _KEPT_NAME_SET
