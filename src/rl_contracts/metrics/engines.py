"""Engine identities: which engine a counter snapshot was read from, so that deltas are taken per engine.

An engine is named by the process that read its counters and by the labels of its series (``engine``,
``model_name``, ...; every label but ``finished_reason`` and the per-position ``position``).  vLLM keeps one
Prometheus registry per process, and a second ``LLM`` in a process replaces the first one's series with its own
(both then report the same series, labelled ``engine="0"``), so two snapshots of one process whose series share an
``engine`` label, or carry equal labels, are the same counters read twice, never two engines: aggregation refuses
them (:func:`~rl_contracts.metrics.aggregate_spec_decode_counters`).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable, Mapping

from pydantic import BaseModel, ConfigDict, field_validator

from .._messages import render, shorten, type_name
from .names import FINISHED_REASON_LABEL

__all__ = ["ENGINE_LABEL", "NOT_IDENTITY_LABELS", "EngineIdentity", "this_process"]

ENGINE_LABEL = "engine"
"""vLLM's label holding the engine index (``"0"``, ``"1"``, ... within one process)."""

NOT_IDENTITY_LABELS: frozenset[str] = frozenset({FINISHED_REASON_LABEL, "position"})
"""Labels that split one engine's series rather than name the engine."""


def this_process() -> str:
    """The name of the calling process, ``"<hostname>:<pid>"``: the default ``process`` of a snapshot.

    A restarted process has a new pid, so a restarted engine gets a new identity; pass a stable name (the DP rank,
    the Ray actor's name) to the snapshot constructors instead when a restart must be matched to the engine it
    replaced and reported as a reset.
    """
    return f"{socket.gethostname()}:{os.getpid()}"


class EngineIdentity(BaseModel):
    """The engine a snapshot was read from: ``process`` and the ``labels`` of its series (frozen, hashable).

    ``labels`` is a sorted tuple of distinct ``(name, value)`` pairs: the labels of every kept series except
    ``finished_reason`` and ``position``.  A process running data-parallel engines reports one snapshot holding
    all of them, e.g. ``(("engine", "0"), ("engine", "1"), ("model_name", "qwen3"))``.

    >>> EngineIdentity(process="dp-3", labels=[("model_name", "qwen3"), ("engine", "0")]).labels
    (('engine', '0'), ('model_name', 'qwen3'))
    """

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    process: str
    """The process that read the counters: ``"<hostname>:<pid>"`` by default, or a name the caller gives."""
    labels: tuple[tuple[str, str], ...] = ()
    """Sorted, distinct ``(label, value)`` pairs of the engine's series."""

    @field_validator("process", mode="before")
    @classmethod
    def _validate_process(cls, value: object) -> str:
        if not isinstance(value, str) or not value:
            raise ValueError(f"process must be a non-empty str, got {type_name(value)} {render(value)}")
        return value

    @field_validator("labels", mode="before")
    @classmethod
    def _validate_labels(cls, value: object) -> tuple[tuple[str, str], ...]:
        if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
            raise ValueError(f"labels must be (name, value) pairs, got {type_name(value)}")
        pairs: set[tuple[str, str]] = set()
        for pair in value:
            if not (
                isinstance(pair, tuple | list) and len(pair) == 2 and all(isinstance(p, str) for p in pair)
            ):
                raise ValueError(f"every label must be a (str, str) pair, got {render(pair)}")
            pairs.add((pair[0], pair[1]))
        return tuple(sorted(pairs))

    def describe(self) -> str:
        """The identity as messages show it: ``process {label="value", ...}``, shortened to 200 characters."""
        labels = ", ".join(f'{name}="{value}"' for name, value in self.labels)
        return shorten(f"{self.process} {{{labels}}}", 200)

    def claims(self) -> tuple[tuple[str, object], ...]:
        """What two snapshots of one fleet may not share: the whole identity, and each ``engine`` label value of
        its process (an engine of one process read twice, whatever its other labels)."""
        engines = [value for name, value in self.labels if name == ENGINE_LABEL]
        return ((self.process, self.labels), *((self.process, (ENGINE_LABEL, e)) for e in engines))
