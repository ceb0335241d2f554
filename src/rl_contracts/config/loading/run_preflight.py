"""Preflight inside ``load_recipe``: run the cross-section rules over the resolved document and add each finding
to the recipe's issues, with its provenance."""

from __future__ import annotations

from ..._internal.config_base import V3
from ..._internal.config_paths import split_path
from ..rules.preflight import Entrypoint, PreflightOptions, SkippedRule, preflight
from .check_section import V4
from .issues import IssueReport
from .resolve import V2, Resolution

__all__ = ["preflight_issues"]


def preflight_issues(
    report: IssueReport, resolution: Resolution, options: PreflightOptions | None
) -> tuple[tuple[SkippedRule, ...], Entrypoint | None]:
    """Run preflight over the resolved document; its findings become issues with provenance, except at a path
    the section check already rejected (V2, V3, V4)."""
    result = preflight(resolution.document, options, unresolved=resolution.unresolved)
    rejected = {issue.path for issue in report.issues if issue.code in (V2.code, V3.code, V4.code)}
    for finding in result.findings:
        if finding.path not in rejected:
            report.add(
                split_path(finding.path),
                finding.code,
                finding.message,
                finding.severity,
                finding.value,
                path=finding.path,
                fix=finding.fix,
            )
    return result.skipped, result.entrypoint
