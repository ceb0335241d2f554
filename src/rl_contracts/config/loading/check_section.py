"""The section check of ``load_recipe`` (rules V4 and V5): find the generation section, validate it as
``VllmConfig``, and add pydantic's errors (V3; C2 for a range) and its checks' findings (C-rules, reload refit,
unknown keys) to the recipe's issues at their full path.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import ValidationError

from ..._internal.config_absent import ABSENT
from ..._internal.config_base import FINDINGS, V3
from ..._internal.config_examples import generation_example
from ..._internal.config_paths import Keys, dotted_path, is_under, keys_in, lookup
from ..._internal.messages import render_name, shorten
from ...errors import MAX_MESSAGE_CHARS
from ..finding import Finding
from ..rule import Rule, checks
from ..rules.refit_support import reload_refit_violation
from ..rules.unknown_keys import K2, unknown_keys
from ..section.cross_field import C2
from ..section.generation import VllmConfig
from .issues import IssueReport
from .parsing import kind
from .resolve import Resolution

__all__ = ["DEFAULT_SECTION", "EVALUATION_SECTION", "V4", "V5", "check_section", "default_section"]

V4 = Rule(
    "V4",
    "section-missing",
    summary="the selected section is missing, or its backend is missing or not a string",
    reference="grpo.py:setup (S1)",
    what_it_checks="That the selected section exists and is a mapping, and that its `backend` is present and a string.",
    why_it_matters=(
        "`grpo.py:setup` (S1) reads `policy.generation.backend` to pick the generation backend and crashes "
        "with a `KeyError` or `TypeError` when it is missing or not a string."
    ),
    example=generation_example("backend: null"),
    fix=(
        "Set `policy.generation.backend` (`vllm` to have it validated), or pass `--section` to select another "
        "section."
    ),
)
V5 = Rule(
    "V5",
    "section-not-validated",
    summary="the recipe has no generation section, or its backend is not validated",
    reference="never",
    severity="warning",
    what_it_checks=(
        "Whether the recipe has a generation section whose backend rl_contracts validates (only `vllm`); a "
        "recipe without one (SFT, DPO, reward models) or with another backend is reported as skipped."
    ),
    why_it_matters=(
        "Nothing fails in the trainer: this warning says that the section was not checked, so a broken "
        "non-vLLM section goes unnoticed until its own backend starts."
    ),
    example=generation_example("backend: sglang"),
    fix=(
        "Nothing to fix for a recipe that is not a vLLM generation recipe; use `--select`/`--ignore V5` to "
        "silence it."
    ),
)

DEFAULT_SECTION = "policy.generation"
"""The section :func:`~rl_contracts.config.load_recipe` selects when ``section`` is ``None`` and the recipe has it."""

EVALUATION_SECTION = "generation"
"""The section :func:`~rl_contracts.config.load_recipe` selects when ``section`` is ``None`` and only this one
exists (eval configs)."""


_RANGE_ERRORS = frozenset({"greater_than", "greater_than_equal", "less_than", "less_than_equal"})
"""Pydantic's error types of a value outside its range: findings of rule C2; its other errors are V3's."""


def _message(text: str) -> str:
    return shorten(text.removeprefix("Value error, "), MAX_MESSAGE_CHARS)


def _typo_hint(data: dict[Any, Any], keys: Sequence[Any]) -> str:
    """For a missing key, a hint naming a present key that looks like a misspelling of it."""
    found, holder = lookup(data, keys[:-1])
    if not (found and isinstance(holder, dict) and keys and isinstance(keys[-1], str)):
        return ""
    present = [key for key in holder if isinstance(key, str) and key != keys[-1]]
    match = difflib.get_close_matches(keys[-1], present, n=1, cutoff=0.8)
    return f"; found unknown key '{render_name(match[0])}' (a misspelling?)" if match else ""


def _validation_issues(
    report: IssueReport,
    section: Keys,
    data: dict[Any, Any],
    error: ValidationError | None,
    findings: list[Finding],
    failed: list[str],
) -> None:
    """The issues of validating the section: pydantic's errors (V3, a range C2) and the rules' findings, but none
    at or below a ``failed`` path (already reported as V2); a missing key with a typo hint, else the value as
    written (``value`` when it is not in ``data``)."""
    invalid = [
        (
            tuple(line["loc"]),
            C2.code if line["type"] in _RANGE_ERRORS else V3.code,
            line["msg"],
            ABSENT if line["type"] == "missing" else line.get("input"),
        )
        for line in (error.errors() if error is not None else ())
    ]
    invalid += [(keys_in(f.path, data), f.code, f.message, f.value) for f in findings]
    for keys, code, why, value in invalid:
        if is_under(dotted_path((*section, *keys), report.document), failed):
            continue
        found, written = lookup(data, keys)
        if not found and value is ABSENT:
            report.add((*section, *keys), code, _message(why) + _typo_hint(data, keys), "error")
        else:
            report.add((*section, *keys), code, _message(why), "error", written if found else value)


def _config_issues(
    report: IssueReport, section: Keys, data: dict[Any, Any], strict: bool, failed: list[str]
) -> VllmConfig | None:
    """Validate the resolved section; add its validation, reload-refit and key issues; the model when valid.

    Issues at or below a ``failed`` path (already reported as V2) are suppressed.
    """
    findings: list[Finding] = []
    try:
        config = VllmConfig.model_validate(data, context={FINDINGS: findings})
    except ValidationError as exc:
        _validation_issues(report, section, data, exc, findings, failed)
        return None
    if findings:
        _validation_issues(report, section, data, None, findings, failed)
        return None
    for finding in [*filter(None, [reload_refit_violation(config)]), *unknown_keys(config)]:
        severity = "error" if strict and finding.code == K2.code else finding.severity
        keys = (*section, *keys_in(finding.path, data))
        report.add(keys, finding.code, finding.message, severity, finding.value, fix=finding.fix)
    return config


def default_section(composed: dict[Any, Any], resolution: Resolution) -> str | None:
    """``policy.generation`` when the recipe has it (or a ``policy`` that is not a mapping), else a top-level
    ``generation`` mapping (or one that failed resolution, so that its failure is reported), else ``None``."""
    policy = composed.get("policy")
    if policy is not None and (not isinstance(policy, dict) or policy.get("generation") is not None):
        return DEFAULT_SECTION
    failed = any(failure.path == EVALUATION_SECTION for failure in resolution.failures)
    return (
        EVALUATION_SECTION
        if failed or isinstance(resolution.document.get(EVALUATION_SECTION), dict)
        else None
    )


def _locate(report: IssueReport, resolution: Resolution, section: Keys) -> dict[Any, Any] | None:
    """The resolved section mapping; ``None`` when it is missing, null or failed (issues added for the last two
    and for a non-mapping on the way)."""
    above = [failure for failure in resolution.failures if is_under(dotted_path(section), [failure.path])]
    for failure in above:
        report.add_failure(failure)
    if above:
        return None
    holder: Any = resolution.document
    for depth, key in enumerate(section):
        if not isinstance(holder, dict):
            where = section[:depth]
            what = f"{dotted_path(where)} must be a mapping (it holds {dotted_path(section)}), got a {kind(holder)}"
            report.add(where, V4.code, what, "error", holder)
            return None
        holder = holder.get(key)
        if holder is None:
            return None
    if not isinstance(holder, dict):
        what = f"section {dotted_path(section)} must be a mapping, got a {kind(holder)}"
        report.add(section, V4.code, what, "error", holder)
        return None
    return holder


@checks(V4, V5)
def check_section(
    report: IssueReport,
    resolution: Resolution,
    section: str,
    *,
    explicit: bool,
    strict: bool,
    whole: str | None = None,
) -> tuple[Literal["valid", "skipped"], VllmConfig | None]:
    """Validate the selected section (``explicit``: named by the caller), adding its issues to ``report``; the
    status and the model (``None`` when skipped or invalid).  When the whole recipe of algorithm ``whole`` is
    checked, the recipe is never skipped: a missing generation section is no issue (SFT, DPO, ...)."""
    keys = tuple(section.split("."))
    data = _locate(report, resolution, keys)
    if data is None:
        if explicit and not report.has_errors():
            report.add(keys, V4.code, f"section {render_name(section)} not found", "error")
        if explicit or whole is not None or report.has_errors():
            return "valid", None
        why = (
            f"no generation section ({DEFAULT_SECTION} or a top-level {EVALUATION_SECTION} mapping): not a "
            "generation recipe; pass --section DOTTED.PATH to validate another section"
        )
        report.add(keys, V5.code, why, "warning")
        return "skipped", None
    backend_keys = (*keys, "backend")
    backend = data.get("backend")
    failed = resolution.failed_under(section)
    if isinstance(backend, str) and backend != "vllm":  # not validated, so its failed leaves do not matter
        why = f"backend '{render_name(backend)}' is not validated (only 'vllm' is)"
        report.add(backend_keys, V5.code, why, "warning", backend)
        return ("skipped" if whole is None else "valid"), None
    for failure in failed:
        report.add_failure(failure)
    if any(failure.path == dotted_path(backend_keys) for failure in failed):
        return "valid", None
    if backend is None:
        why = "backend is required (set backend: vllm to validate this section)"
        report.add(backend_keys, V4.code, why, "error", ABSENT if "backend" not in data else None)
        return "valid", None
    if not isinstance(backend, str):
        why = f"backend must be a string such as 'vllm', got {kind(backend)}"
        report.add(backend_keys, V4.code, why, "error", backend)
        return "valid", None
    return "valid", _config_issues(report, keys, data, strict, [failure.path for failure in failed])
