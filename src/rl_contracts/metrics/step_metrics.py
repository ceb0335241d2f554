"""Per-step engine and speculative-decoding metrics from two aggregated counter snapshots (SPEC §6.6, §6.7)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Final

from .._internal.counter_values import counter_value, key_text
from .._internal.messages import render
from ..checks import int_or_none
from ..errors import ContractTypeError, CounterSnapshotError
from .aggregation import FleetCounters
from .deltas import StepDelta, first_delta, mean_from_histogram, per_engine_delta
from .names import (
    FINISHED_REASON_LABEL,
    GENERATION_LENGTH_HISTOGRAMS,
    GENERATION_TOKEN_COUNTERS,
    OK_FINISH_REASONS,
    PROMPT_LENGTH_HISTOGRAMS,
    PROMPT_TOKEN_COUNTERS,
    REQUEST_SUCCESS_COUNTERS,
    SPEC_DECODE_ACCEPTED_PER_POS,
    SPEC_DECODE_NUM_ACCEPTED_TOKENS,
    SPEC_DECODE_NUM_DRAFT_TOKENS,
    SPEC_DECODE_NUM_DRAFTS,
    AggregatedCounters,
    encode_counter_key,
)

__all__ = ["ENGINES_RESET_KEY", "compute_engine_step_metrics", "compute_spec_decode_metrics"]

ENGINES_RESET_KEY: Final = "vllm/engines_reset"
"""Output key of the number of engines that restarted during the step (per-engine deltas only; present only when
at least one did).  Their series are in no other output value."""

_MAX_POSITION: Final = sys.maxsize
"""Largest position in an aggregated key: a position is a list index + 1, and output keys print it in decimal."""

_Delta = dict[str | tuple[str, int], float]


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
    ``vllm/generations_ok`` (reasons in :data:`~rl_contracts.metrics.OK_FINISH_REASONS`) and
    ``vllm/generations_failed`` (every other reason, an empty one included).  Both outcome keys appear, even at
    0.0, once any ``finished_reason`` key is in the delta.  ``({}, {})`` gives ``{}``.

    Per engine: when both arguments are what :func:`~rl_contracts.metrics.aggregate_spec_decode_counters`
    returned for snapshots that name their engine (a :class:`~rl_contracts.metrics.FleetCounters` with
    ``snapshots``; ``from_vllm_metrics`` and ``from_prometheus_text`` always name it), the delta is
    :func:`~rl_contracts.metrics.per_engine_delta`'s: each engine's delta, summed over the engines that did not
    restart.  An engine whose series went backwards restarted during the step: none of its series is counted, and
    ``vllm/engines_reset`` (:data:`ENGINES_RESET_KEY`, the number of such engines) ends the output.  Engines
    matched by identity and an end snapshot not taken before its start are required (see ``per_engine_delta``).
    Plain dicts keep the delta of the totals described above.

    Raises ``ContractTypeError`` when an argument is not a mapping; ``CounterSnapshotError`` for a key that is not
    a ``str`` or ``(str, int >= 1)`` or a value that is not a finite number ``>= 0`` (bools included), and, per
    engine, for engines on one side only, two snapshots of one engine, swapped snapshots or a changed aggregate.

    Divergence: the reference accepts negative, NaN and bool values in the snapshots it receives.

    >>> compute_engine_step_metrics({"vllm:prompt_tokens": 1000}, {"vllm:prompt_tokens": 1400})
    {'vllm/prompt_tokens': 400.0}
    """
    start = _checked_counters(start_counters, "start_counters")
    end = _checked_counters(end_counters, "end_counters")
    step = _per_engine(start_counters, end_counters)
    delta = _growth(start, end) if step is None else step.delta
    metrics: dict[str, float] = {}
    for output, found in (
        ("vllm/prompt_tokens", first_delta(delta, PROMPT_TOKEN_COUNTERS)),
        ("vllm/generation_tokens", first_delta(delta, GENERATION_TOKEN_COUNTERS)),
        ("vllm/prompt_length_mean", mean_from_histogram(delta, PROMPT_LENGTH_HISTOGRAMS)),
        ("vllm/generation_length_mean", mean_from_histogram(delta, GENERATION_LENGTH_HISTOGRAMS)),
    ):
        if found is not None:
            metrics[output] = float(found)
    metrics.update(_outcomes(delta))
    metrics.update(_resets(step))
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

    Per engine (both arguments aggregated from snapshots naming their engine, as in
    :func:`compute_engine_step_metrics`): the delta is the sum of each engine's delta, every value ``>= 0``, and
    an engine that restarted during the step is left out and counted in a final ``vllm/engines_reset``.

    Raises as :func:`compute_engine_step_metrics`, and ``CounterSnapshotError`` naming both figures when the
    per-position acceptance counts of the step do not sum to its accepted-token delta (every accepted draft token
    is counted at exactly one position, so one of the two series under-counts: a vector read from one DP rank, a
    corrupt snapshot).

    Divergence: the reference accepts such a vector; and it derives a per-position rate from every tuple key; this derives it only from the
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
    step = _per_engine(start_counters, end_counters)
    if step is None:
        delta = {key: end.get(key, 0.0) - start.get(key, 0.0) for key in {**start, **end}}
    else:
        delta = step.delta
    _check_acceptance_vector(delta, (start, end))
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
    metrics.update(_resets(step))
    return metrics


def _is_acceptance_key(key: str | tuple[str, int]) -> bool:
    return key == SPEC_DECODE_NUM_ACCEPTED_TOKENS or (
        isinstance(key, tuple) and key[0] == SPEC_DECODE_ACCEPTED_PER_POS
    )


def _check_acceptance_vector(delta: _Delta, snapshots: tuple[_Delta, _Delta]) -> None:
    """Refuse a step whose per-position accepted counts do not sum to the accepted-token delta (both present),
    beyond the rounding of float subtraction at the counters' magnitude (none for whole counters below 2**53)."""
    positions = [v for k, v in delta.items() if isinstance(k, tuple) and k[0] == SPEC_DECODE_ACCEPTED_PER_POS]
    accepted = delta.get(SPEC_DECODE_NUM_ACCEPTED_TOKENS)
    if not positions or accepted is None:
        return
    total = sum(positions)
    values = (v for counters in snapshots for k, v in counters.items() if _is_acceptance_key(k))
    scale = max(values, default=0.0)
    if abs(total - accepted) > 4 * (len(positions) + 1) * sys.float_info.epsilon * max(scale, 1.0):
        raise CounterSnapshotError(
            f"the step's per-position acceptance counts ({SPEC_DECODE_ACCEPTED_PER_POS}, {len(positions)} "
            f"positions) sum to {render(total)} but its accepted-token delta ({SPEC_DECODE_NUM_ACCEPTED_TOKENS}) is "
            f"{render(accepted)}: every accepted draft token counts at exactly one position, so one series "
            "under-counts (a vector from one DP rank only, or a corrupt snapshot); read both from every engine",
            key=SPEC_DECODE_ACCEPTED_PER_POS,
            value=render(total),
        )


def _per_engine(start_counters: object, end_counters: object) -> StepDelta | None:
    """The per-engine delta when both arguments carry engine snapshots, else ``None`` (the totals' delta)."""
    if all(isinstance(c, FleetCounters) and c.snapshots is not None for c in (start_counters, end_counters)):
        return per_engine_delta(start_counters, end_counters)  # type: ignore[arg-type]
    return None


def _resets(step: StepDelta | None) -> dict[str, float]:
    """``{"vllm/engines_reset": n}`` when ``n > 0`` engines restarted during the step, else nothing."""
    return {ENGINES_RESET_KEY: float(len(step.resets))} if step is not None and step.resets else {}


def _checked_counters(counters: object, argument: str) -> _Delta:
    """Validate an aggregated snapshot (keys ``str`` or ``(str, int >= 1)``, values finite ``>= 0``)."""
    if not isinstance(counters, Mapping):
        raise ContractTypeError.for_value(
            argument, "a mapping of counter keys to floats (from aggregate_spec_decode_counters)", counters
        )
    return {
        _checked_key(key, value, argument): counter_value(value, key, argument)
        for key, value in counters.items()
    }


def _checked_key(key: object, value: object, argument: str) -> str | tuple[str, int]:
    if isinstance(key, str):
        return key
    position = int_or_none(key[1]) if isinstance(key, tuple) and len(key) == 2 else None
    if position is not None and isinstance(key[0], str) and 1 <= position <= _MAX_POSITION:  # type: ignore[index]
        return (key[0], position)  # type: ignore[index]
    raise CounterSnapshotError(
        f"{argument} key {render(key)} must be a str or a (name, position >= 1) tuple, as "
        "aggregate_spec_decode_counters returns (a position is at most sys.maxsize)",
        key=key_text(key),
        value=render(value),
    )


def _growth(start: _Delta, end: _Delta) -> _Delta:
    """``end - start`` over the keys of ``end``, omitting every series that went backwards (an engine restart)."""
    return {key: value - start.get(key, 0.0) for key, value in end.items() if value >= start.get(key, 0.0)}


def _outcomes(delta: _Delta) -> dict[str, float]:
    """``generations_ok`` and ``generations_failed`` from the first success family with ``finished_reason`` keys."""
    for name in REQUEST_SUCCESS_COUNTERS:
        prefix = encode_counter_key(name, FINISHED_REASON_LABEL + "=")
        outcomes = [
            (k[len(prefix) :], v) for k, v in delta.items() if isinstance(k, str) and k.startswith(prefix)
        ]
        if outcomes:
            return {
                "vllm/generations_ok": float(sum(v for r, v in outcomes if r in OK_FINISH_REASONS)),
                "vllm/generations_failed": float(sum(v for r, v in outcomes if r not in OK_FINISH_REASONS)),
            }
    return {}
