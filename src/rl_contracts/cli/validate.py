"""The ``validate`` and ``schema`` sub-commands of ``rl-contracts`` (SPEC §1.8).

``rl-contracts validate FILE... [--section DOTTED] [--json] [--strict]`` loads every recipe in argument order and
reports each one: a header with its status (VALID, INVALID, SKIPPED or ERROR) and a table of issues (severity, path,
value, reason), or one JSON array with ``--json``.  Exit status: 2 when any file could not be read (or the arguments
were invalid), else 1 when any file is invalid, else 0; warnings and skipped files never fail the run.

``rl-contracts schema`` prints ``VllmConfig``'s JSON Schema (by alias, validation mode, indent 2, sorted keys).

Colour is used only on a terminal (rich turns it off when the output is piped or ``NO_COLOR`` is set), and long
cells wrap inside their column so the report stays readable in a narrow terminal.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rich import box
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from ..config.models import config_json_schema
from ..config.recipe import DEFAULT_SECTION, ConfigIssue, load_recipe
from ..errors import RecipeError, RecipeLoadError

__all__ = ["FileReport", "exit_status", "register", "run_schema", "run_validate", "validate_files"]

Status = Literal["valid", "invalid", "skipped", "error"]

_PIPE_WIDTH = 120
_TABLE_MIN_WIDTH = 100
_STYLES: dict[str, str] = {
    "valid": "bold green",
    "invalid": "bold red",
    "skipped": "bold yellow",
    "error": "bold red",
    "warning": "yellow",
}


@dataclass(frozen=True)
class FileReport:
    """The outcome of validating one recipe file: its status and issues (warnings included)."""

    file: str
    section: str
    status: Status
    issues: tuple[ConfigIssue, ...]

    def as_json(self) -> dict[str, Any]:
        """The §1.8 JSON object: ``file``, ``section``, ``status`` and ``issues`` (severity, path, value, reason)."""
        return {
            "file": self.file,
            "section": self.section,
            "status": self.status,
            "issues": [
                {"severity": i.severity, "path": i.path, "value": i.value, "reason": i.reason}
                for i in self.issues
            ],
        }


def validate_files(
    files: Sequence[str], *, section: str | None = None, strict: bool = False
) -> list[FileReport]:
    """Run :func:`~rl_contracts.config.load_recipe` on every file, in order, and report each outcome.

    Never raises for bad recipe content or unreadable files: a ``RecipeError`` becomes an ``"invalid"`` report, a
    ``RecipeLoadError`` an ``"error"`` report with one issue whose path is empty.
    """
    reports = []
    shown_section = DEFAULT_SECTION if section is None else section
    for file in files:
        try:
            recipe = load_recipe(file, section=section, strict=strict)
        except RecipeError as exc:
            reports.append(FileReport(file, shown_section, "invalid", tuple(exc.issues or ())))
        except RecipeLoadError as exc:
            issue = ConfigIssue(path="", value=exc.value or "", reason=exc.message, severity="error")
            reports.append(FileReport(file, shown_section, "error", (issue,)))
        else:
            reports.append(FileReport(file, recipe.section, recipe.status, recipe.issues))
    return reports


def exit_status(reports: Sequence[FileReport]) -> int:
    """2 when any file had a load error, else 1 when any file is invalid, else 0."""
    statuses = {report.status for report in reports}
    if "error" in statuses:
        return 2
    return 1 if "invalid" in statuses else 0


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _print_report(console: Console, report: FileReport) -> None:
    errors = sum(issue.severity == "error" for issue in report.issues)
    warnings = len(report.issues) - errors
    header = Text()
    header.append(f"{report.status.upper():<8}", style=_STYLES[report.status])
    header.append(" ")
    header.append(report.file, style="bold")
    if report.status != "error":
        header.append(f"  [{report.section}]", style="dim")
    counts = [_count(n, noun) for n, noun in ((errors, "error"), (warnings, "warning")) if n]
    if counts and report.status != "error":
        header.append("  " + ", ".join(counts))
    console.print(header)
    if report.status == "error":
        for issue in report.issues:
            console.print(Padding(Text(issue.reason, style=_STYLES["error"]), (0, 0, 0, 2)))
        return
    if not report.issues:
        return
    wide = console.width >= _TABLE_MIN_WIDTH
    console.print(_issue_table(report.issues, console.width) if wide else _issue_list(report.issues))


def _issue_table(issues: Sequence[ConfigIssue], width: int) -> Table:
    """The issues as a four-column table (severity, path, value, reason) that fits ``width`` columns.

    Path and value get fixed widths (the path up to half the free space), so only the reason column wraps: it
    keeps at least (width - 44) // 2 >= 28 columns, so the severity column never has to shrink.  Long cells fold,
    never cut (the path column folds its header too: a path can be shorter than "path").
    """
    value_width = min(max(len(issue.value) for issue in issues), 24)
    free = width - len("severity") - value_width - 6  # 6: the gaps between the four columns
    path_width = min(max(len(issue.path) for issue in issues), free // 2)  # free >= 62 at 100 columns
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)  # default padding (0, 1)
    table.add_column("severity")
    table.add_column("path", overflow="fold", width=path_width)
    table.add_column("value", width=max(value_width, len("value")))
    table.add_column("reason")
    for issue in issues:
        table.add_row(
            Text(issue.severity, style=_STYLES[issue.severity]),
            Text(issue.path),
            Text(issue.value, overflow="fold"),
            Text(issue.reason, overflow="fold"),
        )
    return table


def _issue_list(issues: Sequence[ConfigIssue]) -> Table:
    """The same columns stacked per issue (severity, then path, value and reason lines) for narrow terminals."""
    table = Table.grid(padding=(0, 1))
    table.add_column(no_wrap=True)
    table.add_column()
    for issue in issues:
        details = Text(issue.path, style="bold", overflow="fold")
        details.append(f"\nvalue:  {issue.value}\nreason: {issue.reason}")
        table.add_row(Text(issue.severity, style=_STYLES[issue.severity]), details)
    return table


class _Console(Console):
    """rich's console, except that a closed stdout raises ``BrokenPipeError`` for :func:`_write` to handle.

    rich's own handler exits with status 1, which would turn a valid run piped into ``head`` into a failure.
    """

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError


def _console() -> Console:
    """A console on stdout: colour only on a terminal; 120 columns when piped unless ``COLUMNS`` says otherwise."""
    console = _Console()  # on sys.stdout; only Text and fixed headers are printed, so no highlighting applies
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = _PIPE_WIDTH
    return console


def _print_human(reports: Sequence[FileReport]) -> None:
    console = _console()
    for index, report in enumerate(reports):
        if index:
            console.print()
        _print_report(console, report)
    if len(reports) > 1:
        words = {"valid": "valid", "invalid": "invalid", "skipped": "skipped", "error": "unreadable"}
        tally = {word: sum(r.status == status for r in reports) for status, word in words.items()}
        parts = [f"{n} {word}" for word, n in tally.items() if n]
        console.print()
        console.print(Text(f"{len(reports)} files: " + ", ".join(parts), style="bold"))


def _write(emit: Callable[[], object]) -> None:
    """Run an output function; a closed pipe (``rl-contracts validate ... | head``) ends the output quietly."""
    try:
        emit()
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def run_validate(args: argparse.Namespace) -> int:
    """The ``validate`` command: report every file (human or ``--json``) and return the §1.8 exit status."""
    reports = validate_files(args.files, section=args.section, strict=args.strict)
    if args.json:
        text = json.dumps([report.as_json() for report in reports], indent=2)
        _write(lambda: sys.stdout.write(text + "\n"))
    else:
        _write(lambda: _print_human(reports))
    return exit_status(reports)


def run_schema(args: argparse.Namespace) -> int:
    """The ``schema`` command: print ``VllmConfig``'s JSON Schema and return 0."""
    del args
    text = json.dumps(config_json_schema(), indent=2, sort_keys=True)
    _write(lambda: sys.stdout.write(text + "\n"))
    return 0


def _dotted(text: str) -> str:
    """``--section`` argument type: a dotted path of non-empty keys (``policy.generation``)."""
    if not text or any(not part for part in text.split(".")):
        raise argparse.ArgumentTypeError(f"expected a dotted path such as {DEFAULT_SECTION}, got {text!r}")
    return text


def register(commands: Any) -> None:
    """Add ``validate`` and ``schema`` to ``commands`` (an argparse sub-parsers action); each sets ``run``."""
    validate = commands.add_parser(
        "validate",
        help="validate recipe YAML files (schema, cross-field and reload-refit rules)",
        description=(
            "Load each recipe (defaults inheritance, interpolation), validate its vLLM generation section and "
            "report every issue. Exit status: 0 all valid or skipped, 1 any invalid, 2 any unreadable file."
        ),
    )
    validate.add_argument("files", nargs="+", metavar="FILE", help="recipe YAML file(s), checked in order")
    validate.add_argument(
        "--section",
        type=_dotted,
        metavar="DOTTED",
        help=f"dotted path of the section to validate (default {DEFAULT_SECTION}; an explicit one must exist)",
    )
    validate.add_argument("--json", action="store_true", help="print one JSON array instead of tables")
    validate.add_argument("--strict", action="store_true", help="treat unknown keys as errors")
    validate.set_defaults(run=run_validate)
    schema = commands.add_parser(
        "schema",
        help="print the JSON Schema of the vLLM generation section",
        description="Print VllmConfig's JSON Schema (by alias, validation mode) to stdout.",
    )
    schema.set_defaults(run=run_schema)
