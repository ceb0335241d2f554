"""``rl-contracts validate --fix`` / ``--unsafe-fixes`` / ``--diff``, as ruff's.

- ``--fix`` applies the safe fixes (``--unsafe-fixes`` adds the unsafe ones) to the files provenance names, then
  validates every recipe again; the report shows what remains and the exit status is that report's (0 when
  nothing remains).  One line per fix (applied, hidden or declined with its reason) and a count go to stderr,
  so stdout stays the report in every format.
- ``--diff`` prints the unified diff of every file the fixes would change and writes nothing; exit status 1 when
  there is a change, else 0 (2 when a file cannot be read).

The fixes are computed by :func:`rl_contracts.config.fixes.plan_fixes`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ContractError
from .report import FileReport, shown_path

if TYPE_CHECKING:
    from ..config.fixes import FixPlan

__all__ = ["FixOutcome", "fixes_table", "run_fixes"]


@dataclass(frozen=True)
class FixOutcome:
    """After ``--fix``: the reports of the second validation; after ``--diff``: no reports, the exit status."""

    reports: list[FileReport] | None
    status: int | None = None


def _where(file: str | None, line: int | None) -> str:
    if file is None:
        return "--set"
    return shown_path(file) + ("" if line is None else f":{line}")


def _lines(plan: FixPlan, *, dry_run: bool) -> list[str]:
    verb = "would fix" if dry_run else "fixed"
    lines = [
        f"{verb} {fix.code} {fix.path} in {_where(fix.file, fix.line)}: {fix.description}"
        + (" (unsafe)" if fix.safety == "unsafe" else "")
        for fix in plan.applied
    ]
    lines.extend(
        f"not fixed {fix.code} {fix.path}: {fix.description}: an unsafe fix (--unsafe-fixes applies it)"
        for fix in plan.hidden
    )
    lines.extend(
        f"not fixed {fix.code} {fix.path} ({fix.description}): {fix.reason}" for fix in plan.declined
    )
    lines.extend(f"pending {fix.code} {fix.path} ({fix.description}): {fix.reason}" for fix in plan.pending)
    count, files = len(plan.applied), len(plan.changes)
    summary = (
        f"{'would apply' if dry_run else 'applied'} {count} fix{'es' if count != 1 else ''} in {files} "
        f"file{'s' if files != 1 else ''}"
    )
    if plan.hidden:
        summary += f"; {len(plan.hidden)} unsafe not applied (--unsafe-fixes)"
    if plan.declined:
        summary += f"; {len(plan.declined)} declined"
    if plan.pending:
        summary += f"; {len(plan.pending)} pending (run again)"
    lines.append(summary)
    return lines


def fixes_table() -> str:
    """The fixes page's table of the rules that have a fix, from the registry (a test keeps README equal to it)."""
    from ..config.rules.registry import RULES

    rows = ["| Code | Rule | Fix | Finding |", "|---|---|---|---|"]
    rows.extend(
        f"| {rule.code} | {rule.name} | {rule.fix_safety} | {rule.summary} |"
        for rule in RULES
        if rule.fix_safety is not None
    )
    return "\n".join(rows)


def run_fixes(
    args: argparse.Namespace,
    check: Callable[[Sequence[str]], list[FileReport]],
    options: dict[str, Any],
    write: Callable[[Callable[[], object]], None],
) -> FixOutcome:
    """Plan the fixes of ``args.files`` (``options``: :func:`~rl_contracts.config.fixes.plan_fixes`'s validation
    options); print the diff (``--diff``) or write the files and validate them again with ``check``."""
    from ..config.fixes import plan_fixes, write_fixes

    plan = plan_fixes(args.files, unsafe_fixes=args.unsafe_fixes, **options)
    if args.diff:
        text = "".join(change.diff(shown_path(change.file)) for change in plan.changes)
        write(lambda: sys.stdout.write(text))
        for line in _lines(plan, dry_run=True):
            print(line, file=sys.stderr)
        if plan.unreadable:
            return FixOutcome(None, 2)
        return FixOutcome(None, 1 if plan.changes else 0)
    try:
        write_fixes(plan)
    except (ContractError, OSError) as exc:
        print(f"rl-contracts validate: cannot write the fixes: {exc}", file=sys.stderr)
        return FixOutcome(None, 2)
    for line in _lines(plan, dry_run=False):
        print(line, file=sys.stderr)
    return FixOutcome(check(args.files))
