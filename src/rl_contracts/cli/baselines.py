"""``rl-contracts validate --baseline FILE`` and ``--write-baseline FILE``: gate CI on new findings only.

- ``--write-baseline FILE`` records every finding of the run (errors and warnings; never a file that cannot be
  read) in FILE, then reports against it: the run passes unless a file cannot be read.
- ``--baseline FILE`` reports, and fails on, only the findings that are not in FILE; the entries of the recipes
  checked that no longer occur are listed on stderr (fixed since).
- Both, with the same FILE or not: the baseline shrinks to the entries that still occur (plus those of recipes
  not checked this run, so a pre-commit run on changed files keeps the rest), and new findings still fail.

A baseline that cannot be read, is malformed or has another format version is a usage error: one line on stderr
and exit status 2, never an empty baseline (:func:`~rl_contracts.config.baseline.read_baseline`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ..config.baseline import (
    Baseline,
    BaselineEntry,
    compare_baseline,
    entry_for,
    read_baseline,
    write_baseline,
)
from ..config.finding import Finding
from ..errors import BaselineError
from .report import FileReport, shown_path

__all__ = ["BaselineOutcome", "apply_baseline"]


@dataclass(frozen=True)
class BaselineOutcome:
    """The reports less the baselined findings, the lines for stderr, and whether the baseline was unusable
    (exit status 2)."""

    reports: list[FileReport]
    notes: list[str]
    failed: bool = False


def _findings(reports: Sequence[FileReport]) -> list[tuple[str, Finding]]:
    return [(report.file, issue) for report in reports if report.status != "error" for issue in report.issues]


def _without(reports: Sequence[FileReport], known: set[int]) -> list[FileReport]:
    """Each report less the known findings; an invalid file without remaining errors is valid."""
    out = []
    for report in reports:
        issues = tuple(issue for issue in report.issues if id(issue) not in known)
        status = report.status
        if status == "invalid" and not any(issue.severity == "error" for issue in issues):
            status = "valid"
        out.append(replace(report, issues=issues, status=status))
    return out


def apply_baseline(
    reports: Sequence[FileReport], *, baseline: str | None, write: str | None
) -> BaselineOutcome:
    """Filter ``reports`` through the ``baseline`` file and/or write the ``write`` file (see the module
    docstring); never raises for a bad baseline file."""
    if baseline is None and write is None:
        return BaselineOutcome(list(reports), [])
    findings = _findings(reports)
    recipes = [report.file for report in reports if report.status != "error"]
    notes: list[str] = []
    try:
        if baseline is not None:
            accepted = read_baseline(baseline)
        else:
            root = Path(write or ".").absolute().parent
            accepted = Baseline(root, tuple(entry_for(recipe, finding, root) for recipe, finding in findings))
        comparison = compare_baseline(accepted, findings, recipes)
        if write is not None:
            root = Path(write).absolute().parent
            if baseline is not None:
                entries = [
                    *(entry_for(recipe, finding, root) for recipe, finding in comparison.known),
                    *_rebased(comparison.untouched, accepted.root, root),
                ]
            else:
                entries = list(accepted.entries)
            write_baseline(write, entries)
            notes.append(f"wrote {len(entries)} baseline entries to {shown_path(write)}")
    except BaselineError as exc:
        return BaselineOutcome(list(reports), [f"rl-contracts validate: {exc}"], failed=True)
    if baseline is not None:
        for entry in comparison.gone:
            notes.append(
                f"baseline entry no longer occurs: {entry.file} {entry.code} {entry.path} "
                "(--write-baseline with --baseline drops it)"
            )
        if comparison.known:
            notes.append(f"{len(comparison.known)} findings are in the baseline {shown_path(baseline)}")
    known = {id(finding) for _, finding in comparison.known}
    return BaselineOutcome(_without(reports, known), notes)


def _rebased(entries: Sequence[BaselineEntry], old: Path, new: Path) -> list[BaselineEntry]:
    """Entries of another baseline folder, their files made relative to ``new``."""
    out: list[BaselineEntry] = []
    for entry in entries:
        file = Path(entry.file)
        absolute = file if file.is_absolute() else old / file
        try:
            relative = absolute.resolve().relative_to(new.resolve()).as_posix()
        except ValueError:
            relative = absolute.as_posix()
        out.append(replace(entry, file=relative))
    return out
