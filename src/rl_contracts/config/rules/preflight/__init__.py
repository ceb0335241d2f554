"""Preflight: the cross-section start-up rules of NeMo RL's GRPO trainers, checked from the recipe alone by
:func:`preflight`, which never raises on a malformed document; docs/development/index.md lists the modules."""

from ...._internal.config_absent import ABSENT
from ...finding import Finding
from .engine import PREFLIGHT_RULES, preflight
from .report import ENTRYPOINTS, Entrypoint, PreflightOptions, PreflightReport
from .version import installed_vllm_version, parse_vllm_version

PREFLIGHT_CODES = PREFLIGHT_RULES
"""The rules preflight runs (P1-P27, P29-P31, W1, N1-N7) in code order: an alias of :data:`.engine.PREFLIGHT_RULES`."""

SkippedRule = Finding
"""A rule that could not run: a :class:`~rl_contracts.config.finding.Finding` of severity ``skipped``."""

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
