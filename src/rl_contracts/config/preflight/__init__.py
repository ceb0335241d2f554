"""Preflight: the cross-section start-up rules of NeMo RL's GRPO trainers, checked from the recipe alone.

:func:`preflight` runs every rule of PREFLIGHT.md that applies to the recipe's entrypoint over one composed,
resolved document and returns a :class:`PreflightReport` of findings and skipped rules; it imports neither
torch nor vLLM and never raises on a malformed document.  Modules, by concern:

- :mod:`.report`: options, findings, skipped rules, the report;
- :mod:`.derived`: entrypoint detection and the derived values the rules share;
- :mod:`.rules_policy`, :mod:`.rules_grpo`, :mod:`.layout`, :mod:`.rules_generation`, :mod:`.rules_scripts`,
  :mod:`.rules_runtime`: the rules, one function each;
- :mod:`.codes`: :data:`PREFLIGHT_CODES`, read from the rule catalogue;
- :mod:`.version`: the vLLM version P21 depends on.
"""

from .codes import PREFLIGHT_CODES
from .engine import preflight
from .report import ABSENT, ENTRYPOINTS, Entrypoint, Finding, PreflightOptions, PreflightReport, SkippedRule
from .version import installed_vllm_version, parse_vllm_version

__all__ = [
    "ABSENT",
    "ENTRYPOINTS",
    "PREFLIGHT_CODES",
    "Entrypoint",
    "Finding",
    "PreflightOptions",
    "PreflightReport",
    "SkippedRule",
    "installed_vllm_version",
    "parse_vllm_version",
    "preflight",
]
