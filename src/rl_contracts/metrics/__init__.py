"""Engine counters and per-step engine and speculative-decoding metrics (SPEC §6).

The trainer takes a counter snapshot from each DP leader before a generation step and another after it,
aggregates each set across workers (:func:`aggregate_spec_decode_counters`), then derives step metrics from the
difference (:func:`compute_engine_step_metrics`, :func:`compute_spec_decode_metrics`).  A worker's snapshot is a
:class:`CounterSnapshot`, built from a worker dict, from the objects ``vllm.LLM.get_metrics()`` returns, or from a
server's Prometheus ``/metrics`` page (:func:`parse_prometheus_text`).  Every counter value is checked to be finite
and ``>= 0``; a bad one raises :class:`~rl_contracts.errors.CounterSnapshotError` naming the key and the value.

Snapshots name the engine they were read from (:class:`EngineIdentity`: the process and the series' labels) and
when (``taken_at``); aggregation keeps them (:class:`FleetCounters`), so the step functions take the delta of each
engine and sum those (:func:`per_engine_delta`): an engine that restarted during the step is reported
(``vllm/engines_reset``) instead of folded into the others, and two snapshots of one engine or swapped start and
end snapshots are errors.

Metric names always match exactly, never by prefix; candidate tuples list aliases in order so that a vLLM rename
can be absorbed by adding a name.  This package imports neither torch nor vLLM (``prometheus_client`` is imported
only when Prometheus text is parsed).  Its modules, one per concern: ``names`` (§6.1), ``keys`` (§6.2),
``snapshot`` (§6.3), ``engines`` (engine identities), ``prometheus`` (reading a ``/metrics`` page),
``aggregation`` (§6.4), ``deltas`` (§6.5), ``engine_deltas`` (per-engine deltas) and ``step_metrics`` (§6.6, §6.7).

>>> before = CounterSnapshot.from_worker_dict({"vllm:generation_tokens": 100, "vllm:num_requests_running": 3})
>>> after = CounterSnapshot.from_worker_dict({"vllm:generation_tokens": 160})
>>> compute_engine_step_metrics(
...     aggregate_spec_decode_counters([before]), aggregate_spec_decode_counters([after])
... )
{'vllm/generation_tokens': 60.0}
"""

from __future__ import annotations

from . import aggregation, deltas, engine_deltas, engines, keys, names, prometheus, snapshot, step_metrics
from .aggregation import FleetCounters as FleetCounters
from .aggregation import aggregate_spec_decode_counters as aggregate_spec_decode_counters
from .deltas import first_delta as first_delta
from .deltas import mean_from_histogram as mean_from_histogram
from .engine_deltas import EngineReset as EngineReset
from .engine_deltas import StepDelta as StepDelta
from .engine_deltas import per_engine_delta as per_engine_delta
from .engines import ENGINE_LABEL as ENGINE_LABEL
from .engines import NOT_IDENTITY_LABELS as NOT_IDENTITY_LABELS
from .engines import EngineIdentity as EngineIdentity
from .engines import this_process as this_process
from .keys import encode_counter_key as encode_counter_key
from .keys import is_kept as is_kept
from .names import COUNTER_KEY_SEP as COUNTER_KEY_SEP
from .names import FINISHED_REASON_LABEL as FINISHED_REASON_LABEL
from .names import GENERATION_LENGTH_HISTOGRAMS as GENERATION_LENGTH_HISTOGRAMS
from .names import GENERATION_TOKEN_COUNTERS as GENERATION_TOKEN_COUNTERS
from .names import HISTOGRAM_COUNT_PART as HISTOGRAM_COUNT_PART
from .names import HISTOGRAM_SUM_PART as HISTOGRAM_SUM_PART
from .names import KEPT_COUNTER_NAMES as KEPT_COUNTER_NAMES
from .names import MAX_SPEC_DECODE_POSITIONS as MAX_SPEC_DECODE_POSITIONS
from .names import OK_FINISH_REASONS as OK_FINISH_REASONS
from .names import PROMPT_LENGTH_HISTOGRAMS as PROMPT_LENGTH_HISTOGRAMS
from .names import PROMPT_TOKEN_COUNTERS as PROMPT_TOKEN_COUNTERS
from .names import REQUEST_SUCCESS_COUNTERS as REQUEST_SUCCESS_COUNTERS
from .names import SPEC_DECODE_ACCEPTED_PER_POS as SPEC_DECODE_ACCEPTED_PER_POS
from .names import SPEC_DECODE_NUM_ACCEPTED_TOKENS as SPEC_DECODE_NUM_ACCEPTED_TOKENS
from .names import SPEC_DECODE_NUM_DRAFT_TOKENS as SPEC_DECODE_NUM_DRAFT_TOKENS
from .names import SPEC_DECODE_NUM_DRAFTS as SPEC_DECODE_NUM_DRAFTS
from .names import AggregatedCounters as AggregatedCounters
from .names import WorkerCounters as WorkerCounters
from .prometheus import PrometheusPage as PrometheusPage
from .prometheus import parse_prometheus_text as parse_prometheus_text
from .snapshot import CounterSnapshot as CounterSnapshot
from .step_metrics import ENGINES_RESET_KEY as ENGINES_RESET_KEY
from .step_metrics import compute_engine_step_metrics as compute_engine_step_metrics
from .step_metrics import compute_spec_decode_metrics as compute_spec_decode_metrics

__all__ = [
    *aggregation.__all__,
    *deltas.__all__,
    *engine_deltas.__all__,
    *engines.__all__,
    *keys.__all__,
    *names.__all__,
    *prometheus.__all__,
    *snapshot.__all__,
    *step_metrics.__all__,
]
