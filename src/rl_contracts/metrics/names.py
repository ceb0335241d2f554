"""Metric names, counter-key parts and the snapshot type aliases (SPEC §6.1, §0.6).

Candidate tuples list aliases in order, so that a vLLM rename can be absorbed by adding a name; names always
match exactly, never by prefix.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final, TypeAlias

__all__ = [
    "COUNTER_KEY_SEP",
    "FINISHED_REASON_LABEL",
    "GENERATION_LENGTH_HISTOGRAMS",
    "GENERATION_TOKEN_COUNTERS",
    "HISTOGRAM_COUNT_PART",
    "HISTOGRAM_SUM_PART",
    "KEPT_COUNTER_NAMES",
    "MAX_SPEC_DECODE_POSITIONS",
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
]

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
