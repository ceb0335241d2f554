"""Deprecated: preflight moved to :mod:`rl_contracts.config.rules.preflight` (README, "Moved modules").

Importing this module emits a ``DeprecationWarning`` and re-exports the public names of the new module.
"""

import warnings

from .rules.preflight import (
    ABSENT,
    ENTRYPOINTS,
    PREFLIGHT_CODES,
    PREFLIGHT_RULES,
    Entrypoint,
    Finding,
    PreflightOptions,
    PreflightReport,
    SkippedRule,
    installed_vllm_version,
    parse_vllm_version,
    preflight,
)

__all__ = [
    "ABSENT",
    "ENTRYPOINTS",
    "PREFLIGHT_CODES",
    "PREFLIGHT_RULES",
    "Entrypoint",
    "Finding",
    "PreflightOptions",
    "PreflightReport",
    "SkippedRule",
    "installed_vllm_version",
    "parse_vllm_version",
    "preflight",
]

warnings.warn(
    "rl_contracts.config.preflight moved to rl_contracts.config.rules.preflight; import from there",
    DeprecationWarning,
    stacklevel=2,
)
