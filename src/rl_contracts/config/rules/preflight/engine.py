"""Run every applicable preflight rule over one composed, resolved recipe."""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from typing import Any

from ...._internal.messages import render, type_name
from ....errors import ContractTypeError
from ...finding import Finding
from ...rule import Check, Rule, collect_checks
from . import cluster, generation, grpo, loss, policy, runtime, sampling, scripts
from .context import Context
from .facts import GYM_FORCED, detect_entrypoint, in_scope
from .reader import MissingKey, Reader, Unresolved, WrongShape
from .report import PreflightOptions, PreflightReport

__all__ = ["PREFLIGHT_CHECKS", "PREFLIGHT_RULES", "preflight"]

PREFLIGHT_CHECKS: tuple[Check, ...] = tuple(
    sorted(
        collect_checks(policy, grpo, cluster, generation, scripts, runtime, loss, sampling),
        key=lambda check: check.rules[0].order,
    )
)
"""Every preflight check in code order (P1..P27, P29..P31, W1, N1..N7)."""

PREFLIGHT_RULES: tuple[Rule, ...] = tuple(rule for check in PREFLIGHT_CHECKS for rule in check.rules)
"""The rules preflight runs, in code order (P28 and W2 are the unknown-key rules'; they are not run here)."""

_FIRST = ("P1", "P13", "P25")
_EXECUTION: tuple[Check, ...] = tuple(
    sorted(
        PREFLIGHT_CHECKS,
        key=lambda check: _FIRST.index(check.rules[0].code) if check.rules[0].code in _FIRST else len(_FIRST),
    )
)
"""The order checks run in: P1 (it claims the absent required keys), P13/P25 (the split P17/P18 read), the rest;
findings are reported in code order."""
_ORDER = {rule.code: index for index, rule in enumerate(PREFLIGHT_RULES)}


def _shape_message(error: WrongShape) -> str:
    shown = "null" if error.value is None else f"{type_name(error.value)} {render(error.value)}"
    return f"{error.path} must be {error.expected}, got {shown}; fix the value at {error.path}."


def preflight(
    document: Mapping[str, Any],
    options: PreflightOptions | None = None,
    *,
    unresolved: Collection[str] = (),
) -> PreflightReport:
    """Check one composed, resolved recipe (plain containers; the dotted paths of leaves that failed resolution in
    ``unresolved``) against every start-up rule of PREFLIGHT.md that applies to its entrypoint.

    Never raises on a malformed document: a wrong shape is a finding at its path, a rule reading an unresolved
    path a skipped finding, and a recipe out of scope (no ``grpo`` mapping) ``in_scope=False``.  Raises
    ``ContractTypeError`` for ``options`` or ``unresolved`` of the wrong type.

    >>> preflight({"sft": {}}).in_scope
    False
    """
    if options is None:
        options = PreflightOptions()
    elif not isinstance(options, PreflightOptions):
        raise ContractTypeError.for_value("options", "a PreflightOptions or None", options)
    if isinstance(unresolved, str | bytes) or not isinstance(unresolved, Collection):
        raise ContractTypeError.for_value(
            "unresolved", "a collection of dotted paths (not a string)", unresolved
        )
    if not all(isinstance(path, str) for path in unresolved):
        raise ContractTypeError.for_value("unresolved", "a collection of dotted-path strings", unresolved)
    if not isinstance(document, Mapping) or not in_scope(document):
        return PreflightReport(False, None, (), ())
    entrypoint = options.entrypoint or detect_entrypoint(document)
    reader = Reader(document, unresolved=unresolved, forced=GYM_FORCED if entrypoint == "grpo-gym" else None)
    context = Context(reader, entrypoint, options, os.environ if options.environ is None else options.environ)
    for registered in _EXECUTION:
        if registered.entries is None or entrypoint not in registered.entries:
            continue
        context.code = registered.rules[0].code
        try:
            registered.function(context)
        except Unresolved as signal:
            context.skip(f"reads {signal.path}, which did not resolve", signal.path)
        except WrongShape as signal:
            context.once(signal.path, signal.value, _shape_message(signal))
        except MissingKey as signal:
            context.missing(signal.path)
    return PreflightReport(True, entrypoint, _in_order(context.findings), _in_order(context.skipped))


def _in_order(findings: list[Finding]) -> tuple[Finding, ...]:
    """``findings`` in code order, without repeats of a code, path and message (the first one kept)."""
    kept: dict[tuple[str, str, str], Finding] = {}
    for finding in findings:
        kept.setdefault((finding.code, finding.path, finding.message), finding)
    return tuple(sorted(kept.values(), key=lambda finding: _ORDER[finding.code]))
