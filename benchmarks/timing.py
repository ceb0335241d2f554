"""Timing shared by the benchmarks (run as scripts from this folder, so ``from timing import ...`` works)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

__all__ = ["median_seconds"]


def median_seconds(function: Callable[[], object], repeat: int, warmup: int = 2) -> float:
    """Median wall time of ``function()`` over ``repeat`` runs after ``warmup`` runs."""
    samples = []
    for index in range(warmup + repeat):
        start = time.perf_counter()
        result = function()
        elapsed = time.perf_counter() - start
        del result
        if index >= warmup:
            samples.append(elapsed)
    return statistics.median(samples)
