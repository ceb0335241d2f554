"""Engine counters and per-step engine and speculative-decoding metrics (SPEC §6).

The trainer takes a counter snapshot from each DP leader before a generation step and another after it,
aggregates each set across workers (:func:`aggregate_spec_decode_counters`), then derives step metrics from the
difference (:func:`compute_engine_step_metrics`, :func:`compute_spec_decode_metrics`).  A worker's snapshot is a
:class:`CounterSnapshot`, built from a worker dict, from the objects ``vllm.LLM.get_metrics()`` returns, or from a
server's Prometheus ``/metrics`` page (:func:`parse_prometheus_text`).  Every counter value is checked to be finite
and ``>= 0``; a bad one raises :class:`~rl_contracts.errors.CounterSnapshotError` naming the key and the value.

Metric names always match exactly, never by prefix; candidate tuples list aliases in order so that a vLLM rename
can be absorbed by adding a name.  This package imports neither torch nor vLLM (``prometheus_client`` is imported
only when Prometheus text is parsed).  Its modules, one per concern: ``names`` (§6.1), ``keys`` (§6.2),
``snapshot`` (§6.3), ``prometheus`` (reading a ``/metrics`` page), ``aggregation`` (§6.4), ``deltas`` (§6.5) and
``step_metrics`` (§6.6, §6.7).

>>> before = CounterSnapshot.from_worker_dict({"vllm:generation_tokens": 100, "vllm:num_requests_running": 3})
>>> after = CounterSnapshot.from_worker_dict({"vllm:generation_tokens": 160})
>>> compute_engine_step_metrics(
...     aggregate_spec_decode_counters([before]), aggregate_spec_decode_counters([after])
... )
{'vllm/generation_tokens': 60.0}
"""

from __future__ import annotations

from .aggregation import aggregate_spec_decode_counters
from .deltas import first_delta, mean_from_histogram
from .keys import encode_counter_key, is_kept
from .names import (
    COUNTER_KEY_SEP,
    FINISHED_REASON_LABEL,
    GENERATION_LENGTH_HISTOGRAMS,
    GENERATION_TOKEN_COUNTERS,
    HISTOGRAM_COUNT_PART,
    HISTOGRAM_SUM_PART,
    KEPT_COUNTER_NAMES,
    OK_FINISH_REASONS,
    PROMPT_LENGTH_HISTOGRAMS,
    PROMPT_TOKEN_COUNTERS,
    REQUEST_SUCCESS_COUNTERS,
    SPEC_DECODE_ACCEPTED_PER_POS,
    SPEC_DECODE_NUM_ACCEPTED_TOKENS,
    SPEC_DECODE_NUM_DRAFT_TOKENS,
    SPEC_DECODE_NUM_DRAFTS,
    AggregatedCounters,
    WorkerCounters,
)
from .prometheus import PrometheusPage, parse_prometheus_text
from .snapshot import CounterSnapshot
from .step_metrics import compute_engine_step_metrics, compute_spec_decode_metrics

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
    "PrometheusPage",
    "WorkerCounters",
    "aggregate_spec_decode_counters",
    "compute_engine_step_metrics",
    "compute_spec_decode_metrics",
    "encode_counter_key",
    "first_delta",
    "is_kept",
    "mean_from_histogram",
    "parse_prometheus_text",
]
