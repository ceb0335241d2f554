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
only when Prometheus text is parsed).  Its modules, one per stage: ``names`` (names and keys, §6.1, §6.2),
``snapshot`` (snapshots, engine identities and their three sources, a ``/metrics`` page included, §6.3),
``aggregation`` (§6.4), ``deltas`` (per-engine deltas and reading them, §6.5) and ``step_metrics`` (§6.6, §6.7).
The old submodules ``keys``, ``engines``, ``prometheus`` and ``engine_deltas`` resolve, as attributes of this
package, to the module that holds their names now, with a ``DeprecationWarning``.  Importing the package loads
``names`` only; every other public name loads its stage on first access, so that the private readers under
``rl_contracts._internal``, which build on ``names``, never meet a half-imported stage.

>>> from rl_contracts.metrics import CounterSnapshot, aggregate_spec_decode_counters, compute_engine_step_metrics
>>> before = CounterSnapshot.from_worker_dict({"vllm:generation_tokens": 100, "vllm:num_requests_running": 3})
>>> after = CounterSnapshot.from_worker_dict({"vllm:generation_tokens": 160})
>>> compute_engine_step_metrics(
...     aggregate_spec_decode_counters([before]), aggregate_spec_decode_counters([after])
... )
{'vllm/generation_tokens': 60.0}
"""

from __future__ import annotations

import importlib
import warnings
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .names import COUNTER_KEY_SEP as COUNTER_KEY_SEP
from .names import ENGINE_LABEL as ENGINE_LABEL
from .names import FINISHED_REASON_LABEL as FINISHED_REASON_LABEL
from .names import GENERATION_LENGTH_HISTOGRAMS as GENERATION_LENGTH_HISTOGRAMS
from .names import GENERATION_TOKEN_COUNTERS as GENERATION_TOKEN_COUNTERS
from .names import HISTOGRAM_COUNT_PART as HISTOGRAM_COUNT_PART
from .names import HISTOGRAM_SUM_PART as HISTOGRAM_SUM_PART
from .names import KEPT_COUNTER_NAMES as KEPT_COUNTER_NAMES
from .names import MAX_SPEC_DECODE_POSITIONS as MAX_SPEC_DECODE_POSITIONS
from .names import NOT_IDENTITY_LABELS as NOT_IDENTITY_LABELS
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
from .names import encode_counter_key as encode_counter_key
from .names import is_kept as is_kept

if TYPE_CHECKING:
    from .aggregation import POSITION_PROCESS as POSITION_PROCESS
    from .aggregation import FleetCounters as FleetCounters
    from .aggregation import aggregate_spec_decode_counters as aggregate_spec_decode_counters
    from .deltas import EngineReset as EngineReset
    from .deltas import StepDelta as StepDelta
    from .deltas import first_delta as first_delta
    from .deltas import mean_from_histogram as mean_from_histogram
    from .deltas import per_engine_delta as per_engine_delta
    from .snapshot import CounterSnapshot as CounterSnapshot
    from .snapshot import EngineIdentity as EngineIdentity
    from .snapshot import PrometheusPage as PrometheusPage
    from .snapshot import parse_prometheus_text as parse_prometheus_text
    from .snapshot import this_process as this_process
    from .step_metrics import ENGINES_RESET_KEY as ENGINES_RESET_KEY
    from .step_metrics import compute_engine_step_metrics as compute_engine_step_metrics
    from .step_metrics import compute_spec_decode_metrics as compute_spec_decode_metrics

STAGE_NAMES: dict[str, tuple[str, ...]] = {
    "snapshot": (
        "CounterSnapshot",
        "EngineIdentity",
        "PrometheusPage",
        "parse_prometheus_text",
        "this_process",
    ),
    "aggregation": ("POSITION_PROCESS", "FleetCounters", "aggregate_spec_decode_counters"),
    "deltas": ("EngineReset", "StepDelta", "first_delta", "mean_from_histogram", "per_engine_delta"),
    "step_metrics": ("ENGINES_RESET_KEY", "compute_engine_step_metrics", "compute_spec_decode_metrics"),
}
"""The public names of each stage after ``names``, loaded on first access (each stage's ``__all__``)."""

MOVED_MODULES: dict[str, str] = {
    "keys": "names",
    "engines": "snapshot",
    "prometheus": "snapshot",
    "engine_deltas": "deltas",
}
"""The one migration table: an old submodule of this package -> the module that holds its public names now."""

__all__ = [
    "COUNTER_KEY_SEP",
    "ENGINES_RESET_KEY",
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
    "POSITION_PROCESS",
    "PROMPT_LENGTH_HISTOGRAMS",
    "PROMPT_TOKEN_COUNTERS",
    "REQUEST_SUCCESS_COUNTERS",
    "SPEC_DECODE_ACCEPTED_PER_POS",
    "SPEC_DECODE_NUM_ACCEPTED_TOKENS",
    "SPEC_DECODE_NUM_DRAFTS",
    "SPEC_DECODE_NUM_DRAFT_TOKENS",
    "AggregatedCounters",
    "CounterSnapshot",
    "EngineIdentity",
    "EngineReset",
    "FleetCounters",
    "PrometheusPage",
    "StepDelta",
    "WorkerCounters",
    "aggregate_spec_decode_counters",
    "compute_engine_step_metrics",
    "compute_spec_decode_metrics",
    "encode_counter_key",
    "first_delta",
    "is_kept",
    "mean_from_histogram",
    "parse_prometheus_text",
    "per_engine_delta",
    "this_process",
]
"""Spelled out (documentation tools read it statically); ``names.__all__`` plus every stage's names, as a test checks."""

_HOME = {name: stage for stage, stage_names in STAGE_NAMES.items() for name in stage_names}


def __getattr__(name: str) -> Any:
    """A stage's public name or the stage module itself, loaded on first access; an old submodule
    (:data:`MOVED_MODULES`) as the module that holds its names now, with a ``DeprecationWarning``.  Any other
    missing name is an ``AttributeError``."""
    if name in _HOME:
        value = getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
        globals()[name] = value
        return value
    if name in STAGE_NAMES:
        return importlib.import_module(f"{__name__}.{name}")
    new = MOVED_MODULES.get(name)
    if new is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"{__name__}.{name} moved: its names are in {__name__}.{new}; import them from {__name__}",
        DeprecationWarning,
        stacklevel=2,
    )
    module: ModuleType = importlib.import_module(f"{__name__}.{new}")
    return module


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, *STAGE_NAMES})
