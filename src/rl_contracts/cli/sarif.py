"""``rl-contracts validate --format sarif``: one SARIF 2.1.0 log per run, for code scanning dashboards.

The log has one run.  Its tool driver lists every rule of the registry (``id`` the code, ``name``, short and full
description, help text from the rule documentation, the default level, and whether it has a fix and how safe it
is).  Each issue is one result: its rule, level, message (``{path}: {reason}``), the file and line of the
``defaults:`` chain that set the value (the recipe given when the library supplied it or a ``--set`` override
wrote it), the dotted path as a logical location, the recipe validated and the algorithm it was checked as
(``null`` for a fragment) as properties, and the fix as text replacements where the rule has one.  Rules that were
skipped are tool execution notifications of the invocation.  The run's ``properties.recipes`` lists every recipe
given with its algorithm, so a file without results says what it was checked as too.

File locations are relative to the working directory (``uriBaseId`` ``%SRCROOT%``, defined in
``originalUriBaseIds``) when below it, else absolute ``file:`` URIs.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..config.finding import Finding
from ..config.loading.provenance import OVERRIDE_SOURCE
from ..config.rule import Rule
from .report import FileReport

__all__ = [
    "SARIF_SCHEMA_URI",
    "SARIF_VERSION",
    "ResultFix",
    "TextReplacement",
    "result_fix",
    "sarif_log",
    "sarif_text",
]

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
"""The ``$schema`` of the log: the OASIS SARIF 2.1.0 schema as SchemaStore publishes it."""

_ROOT_ID = "%SRCROOT%"
_INFORMATION_URI = "https://pypi.org/project/rl-contracts/"
_LEVELS = {"error": "error", "warning": "warning", "skipped": "note"}


@dataclass(frozen=True)
class TextReplacement:
    """Replace the text from ``(start_line, start_column)`` to ``(end_line, end_column)`` (1-based, the end
    exclusive) of ``file`` with ``text``; an insertion has an empty region."""

    file: str
    start_line: int
    start_column: int
    end_line: int
    end_column: int
    text: str


@dataclass(frozen=True)
class ResultFix:
    """The fix of one result: what it does, and its text replacements."""

    description: str
    replacements: tuple[TextReplacement, ...]


def _position(text: str, offset: int) -> tuple[int, int]:
    """The 1-based line and column of a character offset."""
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, column


def result_fix(report: FileReport, issue: Finding) -> ResultFix | None:
    """The fix of one issue as SARIF wants it, computed on the files as they are now (nothing is written): the
    changed lines of the file before the fix replaced by those after it; ``None`` when the issue's rule has no fix
    or this finding cannot be fixed (:func:`rl_contracts.config.fixes.edit_for` declines)."""
    from ..config.fixes import FileChange, edit_for

    if issue.fix is None:
        return None
    change = edit_for(report.file, issue)
    if not isinstance(change, FileChange):
        return None
    before = change.before.splitlines(keepends=True)
    after = change.after.splitlines(keepends=True)
    head = 0
    while head < min(len(before), len(after)) and before[head] == after[head]:
        head += 1
    tail = 0
    while tail < min(len(before), len(after)) - head and before[-1 - tail] == after[-1 - tail]:
        tail += 1
    start = sum(len(line) for line in before[:head])
    end = sum(len(line) for line in before[: len(before) - tail])
    first, last = _position(change.before, start), _position(change.before, end)
    text = "".join(after[head : len(after) - tail])
    replacement = TextReplacement(change.file, first[0], first[1], last[0], last[1], text)
    return ResultFix(issue.fix.description, (replacement,))


def _uri(path: str) -> tuple[str, str | None]:
    """A file's URI and its base id: relative to the working directory below it, else an absolute file URI."""
    absolute = Path(os.path.abspath(path))
    try:
        relative = absolute.relative_to(Path.cwd())
    except ValueError:
        return absolute.as_uri(), None
    return quote(relative.as_posix()), _ROOT_ID


def _artifact(path: str) -> dict[str, Any]:
    uri, base = _uri(path)
    return {"uri": uri, "uriBaseId": base} if base else {"uri": uri}


def _help(rule: Rule) -> str:
    """The rule's documentation as one text: what it checks, why it matters, the fix, the reference site."""
    parts = [rule.what_it_checks or rule.summary, rule.why_it_matters, rule.fix]
    if rule.fix_safety is not None:
        parts.append(
            f"rl-contracts validate --fix{' --unsafe-fixes' if rule.fix_safety == 'unsafe' else ''} fixes it."
        )
    parts.append(f"Checked by the reference: {rule.reference}.")
    return "\n\n".join(part.strip() for part in parts if part.strip())


def _rule(rule: Rule) -> dict[str, Any]:
    properties: dict[str, Any] = {"severity": rule.severity, "reference": rule.reference}
    if rule.fix_safety is not None:
        properties["fix"] = rule.fix_safety
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": (rule.what_it_checks or rule.summary).strip()},
        "help": {"text": _help(rule)},
        "defaultConfiguration": {"level": _LEVELS.get(rule.severity, "warning")},
        "properties": properties,
    }


def _file_of(issue: Finding, report: FileReport) -> str:
    return report.file if issue.source in (None, OVERRIDE_SOURCE) else issue.source or report.file


def _fix(fix: ResultFix) -> dict[str, Any]:
    changes: dict[str, list[dict[str, Any]]] = {}
    for part in fix.replacements:
        region = {
            "startLine": part.start_line,
            "startColumn": part.start_column,
            "endLine": part.end_line,
            "endColumn": part.end_column,
        }
        replacement: dict[str, Any] = {"deletedRegion": region}
        if part.text:
            replacement["insertedContent"] = {"text": part.text}
        changes.setdefault(part.file, []).append(replacement)
    return {
        "description": {"text": fix.description},
        "artifactChanges": [
            {"artifactLocation": _artifact(file), "replacements": replacements}
            for file, replacements in changes.items()
        ],
    }


def _result(
    issue: Finding, report: FileReport, index: dict[str, int], fix: ResultFix | None
) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": _artifact(_file_of(issue, report))}
    if issue.line is not None:
        physical["region"] = {"startLine": issue.line}
    location: dict[str, Any] = {"physicalLocation": physical}
    if issue.path:
        location["logicalLocations"] = [{"fullyQualifiedName": issue.path, "kind": "member"}]
    result: dict[str, Any] = {
        "ruleId": issue.code,
        "level": _LEVELS[issue.severity],
        "message": {"text": f"{issue.path}: {issue.reason}" if issue.path else issue.reason},
        "locations": [location],
        "properties": {
            "recipe": _artifact(report.file)["uri"],
            "algorithm": report.algorithm,
            "value": None if issue.missing else issue.json_value,
            "missing": issue.missing,
            "setBy": "--set" if issue.source == OVERRIDE_SOURCE else None,
        },
    }
    if issue.code in index:
        result["ruleIndex"] = index[issue.code]
    if fix is not None:
        result["fixes"] = [_fix(fix)]
    return result


def _notifications(reports: Sequence[FileReport]) -> list[dict[str, Any]]:
    notes = []
    for report in reports:
        for rule in report.skipped:
            message = f"{rule.path}: {rule.reason}" if rule.path else rule.reason
            notes.append(
                {
                    "descriptor": {"id": rule.code},
                    "level": "note",
                    "message": {"text": f"{rule.code} skipped: {message}"},
                    "locations": [{"physicalLocation": {"artifactLocation": _artifact(report.file)}}],
                }
            )
    return notes


def _overlapped(
    fix: ResultFix, taken: dict[str, list[tuple[tuple[int, int], tuple[int, int], str]]]
) -> str | None:
    """The finding (``"K1 policy..."``) whose fix already emitted for the same file touches a region of ``fix``,
    else ``None``: SARIF consumers apply every fix of a file at once, so their regions must not overlap."""
    for item in fix.replacements:
        start, end = (item.start_line, item.start_column), (item.end_line, item.end_column)
        for other_start, other_end, owner in taken.get(os.path.realpath(item.file), ()):
            if start <= other_end and other_start <= end:
                return owner
    return None


def sarif_log(
    reports: Sequence[FileReport],
    rules: Sequence[Rule],
    *,
    version: str,
    fix_for: Callable[[FileReport, Finding], ResultFix | None] | None = None,
) -> dict[str, Any]:
    """The SARIF 2.1.0 log of one ``validate`` run: the ``rules`` as the driver's rules, one result per issue of
    ``reports`` (with its fix when ``fix_for`` returns one), the skipped rules as notifications.  The fixes of one
    file never overlap: a fix whose region touches one emitted before it is left out, and its result's
    ``properties.fixPending`` says which fix it waits for ("run again")."""
    index = {rule.code: position for position, rule in enumerate(rules)}
    taken: dict[str, list[tuple[tuple[int, int], tuple[int, int], str]]] = {}
    results = []
    for report in reports:
        for issue in report.issues:
            fix = None if fix_for is None else fix_for(report, issue)
            waits = None if fix is None else _overlapped(fix, taken)
            if fix is not None and waits is None:
                for item in fix.replacements:
                    start, end = (item.start_line, item.start_column), (item.end_line, item.end_column)
                    taken.setdefault(os.path.realpath(item.file), []).append(
                        (start, end, f"{issue.code} {issue.path}")
                    )
            result = _result(issue, report, index, None if waits else fix)
            if waits:
                result["properties"]["fixPending"] = (
                    f"its fix overlaps the fix of {waits} in the same file; apply that one and run again"
                )
            results.append(result)
    failed = any(report.status == "error" for report in reports)
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "rl-contracts",
                "version": version,
                "informationUri": _INFORMATION_URI,
                "rules": [_rule(rule) for rule in rules],
            }
        },
        "columnKind": "unicodeCodePoints",
        "originalUriBaseIds": {_ROOT_ID: {"uri": Path.cwd().as_uri().rstrip("/") + "/"}},
        "invocations": [
            {"executionSuccessful": not failed, "toolExecutionNotifications": _notifications(reports)}
        ],
        "results": results,
        "properties": {
            "recipes": [
                {"recipe": _artifact(report.file)["uri"], "algorithm": report.algorithm} for report in reports
            ]
        },
    }
    return {"$schema": SARIF_SCHEMA_URI, "version": SARIF_VERSION, "runs": [run]}


def sarif_text(
    reports: Sequence[FileReport],
    rules: Sequence[Rule],
    *,
    version: str,
    fix_for: Callable[[FileReport, Finding], ResultFix | None] | None = None,
) -> str:
    """:func:`sarif_log` as JSON text, indented by 2."""
    return json.dumps(sarif_log(reports, rules, version=version, fix_for=fix_for), indent=2)
