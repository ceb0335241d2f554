"""The inputs and results of preflight: options, findings, skipped rules and the report."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

__all__ = [
    "ABSENT",
    "Entrypoint",
    "Finding",
    "PreflightOptions",
    "PreflightReport",
    "SkippedRule",
]

Entrypoint = Literal["grpo", "grpo-gym", "grpo-sc"]
"""The trainer script a recipe is launched with (PREFLIGHT.md §1): ``examples/run_grpo.py``,
``examples/nemo_gym/run_grpo_nemo_gym.py`` or ``examples/run_grpo_single_controller.py``."""


@dataclass(frozen=True)
class PreflightOptions:
    """What preflight knows beyond the recipe.

    ``entrypoint`` None: detected from the recipe; ``vllm_version`` None: the version-dependent parts of P21 (and
    N3) are reported skipped; ``environ`` None: ``os.environ`` (read for ``NRL_IGNORE_TP_ACCURACY_CHECK``);
    ``model_config``: a Hugging Face ``config.json`` (unlocks N2, N7); ``gpu_capability``: the compute
    capability of the generation GPUs (unlocks N3).
    """

    entrypoint: Entrypoint | None = None
    vllm_version: tuple[int, int] | None = None
    ignore_tp_accuracy_check: bool = False
    environ: Mapping[str, str] | None = None
    model_config: Mapping[str, Any] | None = None
    gpu_capability: tuple[int, int] | None = None


class _Absent:
    """The type of :data:`ABSENT`; a single instance."""

    _instance: _Absent | None = None

    def __new__(cls) -> _Absent:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "<absent>"

    def __reduce__(self) -> str:
        return "ABSENT"


ABSENT: Final = _Absent()
"""The ``value`` of a finding whose key is absent from the recipe (``repr`` ``<absent>``)."""


@dataclass(frozen=True)
class Finding:
    """One violated rule: its code, the dotted path of the offending value, the value (or :data:`ABSENT`),
    a message saying what is wrong with the values and then the fix (at most 2,000 characters), and its
    severity."""

    code: str
    path: str
    value: object
    message: str
    severity: Literal["error", "warning"]


@dataclass(frozen=True)
class SkippedRule:
    """A rule that could not run, and why; ``path`` is the input it could not read (an unresolved leaf), if any."""

    code: str
    reason: str
    path: str | None = None


@dataclass(frozen=True)
class PreflightReport:
    """The result of :func:`~rl_contracts.config.preflight.preflight`.

    ``in_scope`` False (not a GRPO recipe) means no rule ran: ``entrypoint`` is None and both tuples are empty.
    """

    in_scope: bool
    entrypoint: Entrypoint | None
    findings: tuple[Finding, ...]
    skipped: tuple[SkippedRule, ...]

    @property
    def errors(self) -> tuple[Finding, ...]:
        """The findings of severity ``error``."""
        return tuple(f for f in self.findings if f.severity == "error")
