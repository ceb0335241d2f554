"""The inputs and results of preflight: options and the report of findings and skipped rules."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, get_args

from ...._internal.messages import render, render_list
from ....checks import require_bool
from ....errors import ConfigContractError, ContractTypeError
from ...finding import Finding

__all__ = [
    "ENTRYPOINTS",
    "Entrypoint",
    "PreflightOptions",
    "PreflightReport",
]

Entrypoint = Literal["grpo", "grpo-gym", "grpo-sc"]
"""The trainer script a recipe is launched with (PREFLIGHT.md §1): ``examples/run_grpo.py``,
``examples/nemo_gym/run_grpo_nemo_gym.py`` or ``examples/run_grpo_single_controller.py``."""


@dataclass(frozen=True)
class PreflightOptions:
    """What preflight knows beyond the recipe: ``entrypoint`` (None: detected), ``vllm_version`` (P21, N3),
    ``environ`` (None: ``os.environ``), ``model_config`` (N2, N7), ``gpu_capability`` (N3); a rule whose input is
    None is skipped.  ``ContractTypeError``/``ConfigContractError`` for a field of the wrong type or value."""

    entrypoint: Entrypoint | None = None
    vllm_version: tuple[int, int] | None = None
    ignore_tp_accuracy_check: bool = False
    environ: Mapping[str, str] | None = None
    model_config: Mapping[str, Any] | None = None
    gpu_capability: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        if self.entrypoint is not None:
            if not isinstance(self.entrypoint, str):
                raise ContractTypeError.for_value("entrypoint", "a string or None", self.entrypoint)
            if self.entrypoint not in ENTRYPOINTS:
                raise ConfigContractError(
                    f"entrypoint must be one of {render_list(ENTRYPOINTS)}, got {render(self.entrypoint)}",
                    value=render(self.entrypoint),
                )
        for name in ("vllm_version", "gpu_capability"):
            _check_pair(name, getattr(self, name))
        require_bool(self.ignore_tp_accuracy_check, "ignore_tp_accuracy_check")
        for name in ("environ", "model_config"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, Mapping):
                raise ContractTypeError.for_value(name, "a mapping or None", value)


ENTRYPOINTS: Final[tuple[Entrypoint, ...]] = get_args(Entrypoint)
"""Every entrypoint, in the order PREFLIGHT.md names them."""


def _check_pair(name: str, value: object) -> None:
    if value is None:
        return
    if not (
        isinstance(value, tuple)
        and len(value) == 2
        and all(isinstance(part, int) and not isinstance(part, bool) for part in value)
    ):
        raise ContractTypeError.for_value(name, "a (major, minor) tuple of two ints or None", value)
    if min(value) < 0:
        raise ConfigContractError(
            f"{name} must be a (major, minor) tuple of non-negative ints, got {render(value)}",
            value=render(value),
        )


@dataclass(frozen=True)
class PreflightReport:
    """The result of :func:`~rl_contracts.config.rules.preflight.preflight`: errors and warnings, and the rules
    that could not run (``skipped`` findings); ``in_scope`` False (not a GRPO recipe) means no rule ran."""

    in_scope: bool
    entrypoint: Entrypoint | None
    findings: tuple[Finding, ...]
    skipped: tuple[Finding, ...]

    @property
    def errors(self) -> tuple[Finding, ...]:
        """The findings of severity ``error``."""
        return tuple(f for f in self.findings if f.severity == "error")

    def summary(self) -> str:
        """One line: the entrypoint, then the counts of errors, warnings and skipped rules (``str(report)``).

        >>> print(PreflightReport(False, None, (), ()))
        preflight: not a GRPO recipe, no rule ran
        """
        if not self.in_scope:
            return "preflight: not a GRPO recipe, no rule ran"
        errors = len(self.errors)
        warnings = len(self.findings) - errors
        skipped = len(self.skipped)
        return (
            f"preflight ({self.entrypoint}): {errors} error{'s' * (errors != 1)}, {warnings} "
            f"warning{'s' * (warnings != 1)}, {skipped} rule{'s' * (skipped != 1)} skipped"
        )

    def __str__(self) -> str:
        return self.summary()
