"""Where and when a snapshot's counters were read: the ``process`` and ``taken_at`` arguments of its constructors."""

from __future__ import annotations

import math
import time

from .._messages import render, type_name
from ..errors import ContractTypeError, CounterSnapshotError
from ._values import as_number
from .engines import EngineIdentity, this_process

__all__ = ["engine_of", "instant", "instant_or_now"]


def engine_of(labels: tuple[tuple[str, str], ...], process: object) -> EngineIdentity:
    """The identity of counters read by ``process`` (``None``: :func:`this_process`) with series ``labels``.

    ``labels`` come sorted and distinct from the readers.  Raises ``ContractTypeError`` for a ``process`` that is
    not a ``str`` or ``None``, ``CounterSnapshotError`` for an empty one.
    """
    if process is None:
        process = this_process()
    elif not isinstance(process, str):
        raise ContractTypeError.for_value("process", "a str naming the engine's process, or None", process)
    elif not process:
        raise CounterSnapshotError(
            "process must be a non-empty str naming the engine's process (a DP rank, an actor name, a URL)",
            value=render(process),
        )
    return EngineIdentity.model_construct(process=process, labels=labels)


def instant(taken_at: object) -> float:
    """``taken_at`` as a finite float (seconds since the epoch).

    Raises ``ContractTypeError`` for a non-number (a bool included), ``CounterSnapshotError`` for NaN or an
    infinity.
    """
    number = as_number(taken_at)
    if number is None:
        raise ContractTypeError.for_value("taken_at", "a number of seconds (time.time())", taken_at)
    if not math.isfinite(number):
        raise CounterSnapshotError(
            f"taken_at must be a finite number of seconds (time.time()), got {type_name(taken_at)} "
            f"{render(taken_at)}",
            value=render(taken_at),
        )
    return number + 0.0


def instant_or_now(taken_at: object) -> float:
    """:func:`instant` of ``taken_at``, or ``time.time()`` when it is ``None``."""
    return time.time() if taken_at is None else instant(taken_at)
