"""Reading a Prometheus ``/metrics`` page: the counter snapshot it holds and the ``vllm:`` families it names."""

from __future__ import annotations

from typing import NamedTuple

from ._prometheus_text import read_prometheus_text
from ._reading import engine_of, instant_or_now
from .snapshot import CounterSnapshot

__all__ = ["PrometheusPage", "parse_prometheus_text"]


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
    now (see :class:`~rl_contracts.metrics.CounterSnapshot`).

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
    values, families, labels = read_prometheus_text(text)
    snapshot = CounterSnapshot.model_construct(
        values=values, engine=engine_of(labels, process), taken_at=instant_or_now(taken_at)
    )
    return PrometheusPage(snapshot, families)
