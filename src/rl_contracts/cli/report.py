"""The report of ``rl-contracts validate`` in its three formats: human, JSON and GitHub workflow commands.

- **human**: one header per file (status, file, section, the algorithm it was checked as (``algorithm: grpo``, or
  ``no algorithm`` for a fragment), counts, and "not a GRPO recipe: preflight skipped" for a valid or skipped file
  out of preflight's scope) and a table of its issues and skipped rules
  (severity, code, path, source:line, value, reason).  On a terminal the table fits the width (long cells fold
  inside their column; below 100 columns each issue is stacked on several lines).  When stdout is not a terminal
  (a CI log, a pipe) nothing wraps or truncates: one line per issue, the columns padded to a common width.  The
  last line sums up files by status and issues by severity.
- **json**: one array, one object per file (SPEC §1.8): ``file``, ``section``, ``status``, ``entrypoint``,
  ``algorithm`` (``null`` when none was given or detected), ``issues`` (``severity``, ``code``, ``path``,
  ``value`` as JSON, ``missing``, ``reason``, ``source``, ``line``) and ``skipped`` (``code``, ``path``,
  ``reason``).
- **github**: one ``::error``/``::warning`` workflow command per issue at its source file and line, one
  ``::notice`` per skipped rule, then the summary line.

Recipe text (keys, values, reasons, file names) is escaped in every format, so that it can never start an output
line, a terminal sequence or a workflow command: human output writes control characters as Python escapes
(:func:`~rl_contracts._internal.messages.printable`), JSON is ASCII with JSON's escapes, and github keeps GitHub's own
escaping (``%25``, ``%0D``, ``%0A``; ``%3A``, ``%2C`` in properties) and writes other control characters as
``\\xNN``.

Paths shown (human, github) are normalised (``a/b/../c.yaml`` is ``a/c.yaml``) and relative to the working
directory when below it; JSON keeps the paths as ``load_recipe`` reports them.

rich is imported only where its output could differ from the plain text (a terminal, or text that rich would
change): on a pipe or a CI log :func:`plain_report` writes the same characters without it, which saves a
pre-commit hook about 25 ms of CPU per run.
"""

from __future__ import annotations

import builtins
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from .._internal.messages import printable
from ..config.finding import Finding
from ..config.loading.provenance import OVERRIDE_SOURCE

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

__all__ = [
    "NO_ALGORITHM",
    "OUT_OF_SCOPE",
    "FileReport",
    "Status",
    "exit_status",
    "github_commands",
    "json_report",
    "plain_report",
    "print_human",
    "shown_path",
    "stdout_console",
    "summary",
]

Status = Literal["valid", "invalid", "skipped", "error"]

_PIPE_WIDTH = 120
_TABLE_MIN_WIDTH = 100
_VALUE_COLUMN = 24
_STATUS_WORDS: dict[Status, str] = {
    "valid": "valid",
    "invalid": "invalid",
    "skipped": "skipped",
    "error": "unreadable",
}
_STYLES: dict[str, str] = {
    "valid": "bold green",
    "invalid": "bold red",
    "skipped": "bold yellow",
    "error": "bold red",
    "warning": "yellow",
    "note": "cyan",
}
_SKIPPED = "skipped"
OUT_OF_SCOPE = "not a GRPO recipe: preflight skipped"
"""The header note of a valid or skipped file that preflight did not check (PREFLIGHT.md §1, scope)."""
NO_ALGORITHM = "no algorithm"
"""The header's word for a file checked as no algorithm's whole recipe (a fragment; its note N8 says why)."""


@dataclass(frozen=True)
class FileReport:
    """The outcome of validating one recipe file: its status, issues (warnings included) and skipped rules.

    ``entrypoint`` is the trainer entrypoint preflight assumed, for a valid or an invalid file alike; None when the
    recipe is not a GRPO recipe (preflight did not check it) and for an unreadable file.  ``algorithm`` is the
    NeMo RL algorithm whose whole recipe was checked (given or detected); None for a fragment (its note N8 is among
    ``skipped``) and for an unreadable file.
    """

    file: str
    section: str
    status: Status
    issues: tuple[Finding, ...]
    skipped: tuple[Finding, ...] = field(default=())
    entrypoint: str | None = None
    algorithm: str | None = None

    @property
    def errors(self) -> int:
        """The number of error issues."""
        return sum(issue.severity == "error" for issue in self.issues)

    @property
    def warnings(self) -> int:
        """The number of warning issues."""
        return sum(issue.severity == "warning" for issue in self.issues)

    def as_json(self) -> dict[str, Any]:
        """The JSON object of this file (see the module docstring for its keys)."""
        return {
            "file": self.file,
            "section": self.section,
            "status": self.status,
            "entrypoint": self.entrypoint,
            "algorithm": self.algorithm,
            "issues": [
                {
                    "severity": issue.severity,
                    "code": issue.code,
                    "path": issue.path,
                    "value": issue.json_value,
                    "missing": issue.missing,
                    "reason": issue.reason,
                    "source": issue.source,
                    "line": issue.line,
                }
                for issue in self.issues
            ],
            "skipped": [{"code": s.code, "path": s.path or None, "reason": s.reason} for s in self.skipped],
        }


def exit_status(reports: Sequence[FileReport]) -> int:
    """2 when any file had a load error, else 1 when any file is invalid, else 0 (warnings and skipped rules
    never fail the run)."""
    statuses = {report.status for report in reports}
    if "error" in statuses:
        return 2
    return 1 if "invalid" in statuses else 0


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def summary(reports: Sequence[FileReport]) -> str:
    """The last line of the human and github output: files by status, then issues by severity and skipped rules.

    Example: ``3 files: 1 valid, 1 invalid, 1 skipped; 2 errors, 0 warnings, 4 rules skipped``.
    """
    by_status = [
        f"{n} {word}"
        for status, word in _STATUS_WORDS.items()
        if (n := sum(report.status == status for report in reports))
    ]
    errors = sum(report.errors for report in reports)
    warnings = sum(report.warnings for report in reports)
    skipped = sum(len(report.skipped) for report in reports)
    files = f"{_count(len(reports), 'file')}: {', '.join(by_status)}"
    return f"{files}; {_count(errors, 'error')}, {_count(warnings, 'warning')}, {_count(skipped, 'rule')} skipped"


def shown_path(path: str) -> str:
    """A file path as the human and github formats show it: normalised, relative to the working directory when
    below it."""
    normal = os.path.normpath(path)
    if os.path.isabs(normal):
        try:
            relative = os.path.relpath(normal)
        except ValueError:  # another drive (Windows)
            return normal
        if not relative.startswith(os.pardir):
            return relative
    return normal


def _file_of(issue: Finding, report: FileReport) -> str:
    """The file an issue is shown at: its source, or the recipe given when the library supplied the value (no
    source) or a ``--set`` override did."""
    return shown_path(report.file if issue.source in (None, OVERRIDE_SOURCE) else issue.source)


def _where(issue: Finding, report: FileReport) -> str:
    """``source:line`` of an issue (``--set`` for a value an override wrote; see :func:`_file_of`)."""
    source = OVERRIDE_SOURCE if issue.source == OVERRIDE_SOURCE else _file_of(issue, report)
    return source if issue.line is None else f"{source}:{issue.line}"


# ---------------------------------------------------------------------------------------------- json


def json_report(reports: Sequence[FileReport]) -> str:
    """The JSON array of every file's object, indented by 2.

    ASCII only (``ensure_ascii``): every control character, and every non-ASCII one, of a key or value is a
    ``\\uXXXX`` (or ``\\n``) escape inside its string, so no line of the output can begin with recipe text.
    """
    return json.dumps([report.as_json() for report in reports], indent=2, ensure_ascii=True)


# ---------------------------------------------------------------------------------------------- github


def _escape_data(text: str) -> str:
    """A workflow command's message, escaped as GitHub's runner reads it back (``%``, CR and LF), then every other
    control character as :func:`~rl_contracts._internal.messages.printable` writes it (ESC, BEL, NEL, U+2028, ...), so recipe
    text can neither end the command's line nor colour or move the log viewer's output."""
    return printable(text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def _escape_property(text: str) -> str:
    """A workflow command's property value: the message escapes plus ``:`` and ``,``."""
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _command(kind: str, properties: dict[str, str], message: str) -> str:
    props = ",".join(f"{key}={_escape_property(value)}" for key, value in properties.items())
    return f"::{kind} {props}::{_escape_data(message)}"


def github_commands(reports: Sequence[FileReport]) -> list[str]:
    """One GitHub Actions workflow command per issue and skipped rule, then the summary line.

    An issue is ``::error file={source},line={line},title=rl-contracts {code}::{path}: {reason}`` (``::warning``
    for a warning; no ``line`` when it is unknown; the recipe given when the source is unknown or ``--set``); a
    skipped rule is a ``::notice`` on the recipe given.  Property values and messages are escaped per GitHub's
    workflow-command rules (``%``, CR, LF; and ``:``, ``,`` in properties), and other control characters as
    ``\\xNN``, so each command is one line that starts with ``::`` and the library's own command name.
    """
    lines = []
    for report in reports:
        for issue in report.issues:
            properties = {"file": _file_of(issue, report)}
            if issue.line is not None:
                properties["line"] = str(issue.line)
            properties["title"] = f"rl-contracts {issue.code}"
            message = f"{issue.path}: {issue.reason}" if issue.path else issue.reason
            lines.append(_command(issue.severity, properties, message))
        for rule in report.skipped:
            properties = {"file": shown_path(report.file), "title": f"rl-contracts {rule.code} skipped"}
            message = f"{rule.path}: {rule.reason}" if rule.path else rule.reason
            lines.append(_command("notice", properties, message))
    lines.append(summary(reports))
    return lines


# ---------------------------------------------------------------------------------------------- human


class _Row(NamedTuple):
    """One line of the issue table: an issue, or a skipped rule (severity ``skipped``, no value)."""

    severity: str
    code: str
    path: str
    where: str
    value: str
    reason: str


def _rows(report: FileReport) -> list[_Row]:
    """The table rows of a report, every cell that can hold recipe text escaped with :func:`printable`."""
    rows = [
        _Row(
            issue.severity,
            printable(issue.code),
            printable(issue.path),
            printable(_where(issue, report)),
            printable(issue.value),
            printable(issue.reason),
        )
        for issue in report.issues
    ]
    rows.extend(
        _Row(_SKIPPED, rule.code, printable(rule.path or ""), "", "", printable(rule.reason))
        for rule in report.skipped
    )
    return rows


def _style(severity: str) -> str:
    return _STYLES["note" if severity == _SKIPPED else severity]


def _header_parts(report: FileReport) -> list[tuple[str, str | None]]:
    """The pieces of a file's header line, each with its style (None: unstyled)."""
    parts: list[tuple[str, str | None]] = [
        (f"{report.status.upper():<8}", _STYLES[report.status]),
        (" ", None),
        (printable(report.file), "bold"),
    ]
    if report.status == "error":
        return parts
    parts.append((f"  [{printable(report.section)}]", "dim"))
    algorithm = NO_ALGORITHM if report.algorithm is None else f"algorithm: {printable(report.algorithm)}"
    parts.append((f"  {algorithm}", "dim"))
    counts = [_count(n, noun) for n, noun in ((report.errors, "error"), (report.warnings, "warning")) if n]
    if report.skipped:
        counts.append(f"{_count(len(report.skipped), 'rule')} skipped")
    if counts:
        parts.append(("  " + ", ".join(counts), None))
    if report.entrypoint is None and report.status != "invalid":
        parts.append((f"  {OUT_OF_SCOPE}", "dim"))
    return parts


def _header(report: FileReport) -> Text:
    from rich.text import Text

    header = Text()
    for text, style in _header_parts(report):
        header.append(text, style=style)
    return header


_COLUMNS = ("severity", "code", "path", "source", "value", "reason")


def _plain_lines(rows: Sequence[_Row]) -> list[str]:
    """The table for a non-terminal: a header and one line per row, never wrapped or cut.

    Every column but the last (reason) is padded to its longest cell; the value column to at most 24 characters
    (a longer value pushes the rest of its own line right).
    """
    cells = [(r.severity, r.code, r.path, r.where, r.value, r.reason) for r in rows]
    widths = [max(len(column), *(len(row[i]) for row in cells)) for i, column in enumerate(_COLUMNS[:-1])]
    widths[4] = min(widths[4], _VALUE_COLUMN)
    lines = []
    for row in [_COLUMNS, *cells]:
        padded = [cell.ljust(width) for cell, width in zip(row[:-1], widths, strict=True)]
        lines.append("  ".join([*padded, row[-1]]).rstrip())
    return lines


def _issue_table(rows: Sequence[_Row], width: int) -> Table:
    """The rows as a table that fits ``width`` columns: path (with its source:line below it, dim) and value get
    fixed widths (the path up to half the free space), so mostly the reason wraps; long cells fold, never cut."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    code_width = max(len("code"), *(len(row.code) for row in rows))
    value_width = max(len("value"), min(max(len(row.value) for row in rows), _VALUE_COLUMN))
    free = width - len("severity") - code_width - value_width - 8  # 8: the gaps between the five columns
    longest = max(max(len(row.path), len(row.where)) for row in rows)
    path_width = max(len("path / source"), min(longest, free // 2))
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)  # default padding (0, 1)
    table.add_column("severity", no_wrap=True)
    table.add_column("code", no_wrap=True)
    table.add_column("path / source", overflow="fold", width=path_width)
    table.add_column("value", width=value_width)
    table.add_column("reason")
    for row in rows:
        path = Text(row.path, overflow="fold")
        if row.where:
            path.append(("\n" if row.path else "") + row.where, style="dim")
        table.add_row(
            Text(row.severity, style=_style(row.severity)),
            Text(row.code),
            path,
            Text(row.value, overflow="fold"),
            Text(row.reason, overflow="fold"),
        )
    return table


def _issue_list(rows: Sequence[_Row]) -> Table:
    """The same cells stacked per row (severity and code, then path, source, value and reason lines) for narrow
    terminals."""
    from rich.table import Table
    from rich.text import Text

    table = Table.grid(padding=(0, 1))
    table.add_column(no_wrap=True)
    table.add_column()
    for row in rows:
        details = Text(overflow="fold")
        details.append(f"{row.code} {row.path}".rstrip(), style="bold")
        if row.where:
            details.append(f"\nat:     {row.where}")
        if row.severity != _SKIPPED:
            details.append(f"\nvalue:  {row.value}")
        details.append(f"\nreason: {row.reason}")
        table.add_row(Text(row.severity, style=_style(row.severity)), details)
    return table


def _print_report(console: Console, report: FileReport) -> None:
    from rich.padding import Padding
    from rich.text import Text

    rows = _rows(report)
    if not console.is_terminal:
        for line in [_header(report), *map(Text, _plain_lines(rows) if rows else ())]:
            console.print(line, soft_wrap=True)
        return
    console.print(_header(report))
    if report.status == "error":
        for issue in report.issues:
            console.print(Padding(Text(printable(issue.reason), style=_STYLES["error"]), (0, 0, 0, 2)))
        return
    if rows:
        wide = console.width >= _TABLE_MIN_WIDTH
        console.print(_issue_table(rows, console.width) if wide else _issue_list(rows))


def stdout_console() -> Console:
    """A console on stdout for :func:`print_human`: colour only on a terminal; 120 columns when piped unless
    ``COLUMNS`` says otherwise (the human report never wraps when piped, whatever the width).  A closed stdout
    raises ``BrokenPipeError`` (rich's own handler exits with status 1, which would turn a valid run piped into
    ``head`` into a failure)."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            raise BrokenPipeError

    console = _Console()  # on sys.stdout; only Text and fixed headers are printed, so no highlighting applies
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = _PIPE_WIDTH
    return console


def print_human(console: Console, reports: Sequence[FileReport]) -> None:
    """Print every file's header and table, a blank line between files, and the summary line last."""
    from rich.text import Text

    for report in reports:
        _print_report(console, report)
        console.print()
    console.print(Text(summary(reports), style="bold"), soft_wrap=not console.is_terminal)


def _stdout_is_plain() -> bool:
    """Whether rich would see no terminal on stdout, decided without importing rich and on the safe side: False
    whenever an environment variable rich reads could make it a terminal or rich might render for Jupyter."""
    if (
        "FORCE_COLOR" in os.environ
        or os.environ.get("TTY_COMPATIBLE", "")
        or hasattr(builtins, "get_ipython")
    ):
        return False
    isatty = getattr(sys.stdout, "isatty", None)
    try:
        return isatty is not None and not isatty()
    except ValueError:  # a closed stdout
        return False


def plain_report(reports: Sequence[FileReport]) -> str | None:
    """The human report as :func:`print_human` writes it on a stdout that is no terminal, built without rich; or
    None when rich is needed to produce the same output: stdout may be a terminal (see the module docstring), a
    cell holds a character that rich's text would change (a tab, a control or other non-printable character), or
    stdout's encoding cannot write the text."""
    if not _stdout_is_plain():
        return None
    lines = []
    for report in reports:
        lines.append("".join(text for text, _ in _header_parts(report)))
        rows = _rows(report)
        if rows:
            lines.extend(_plain_lines(rows))
        lines.append("")
    lines.append(summary(reports))
    if not all(line.isprintable() for line in lines):
        return None
    text = "\n".join(lines) + "\n"
    try:
        text.encode(sys.stdout.encoding or "utf-8")
    except (UnicodeEncodeError, LookupError):
        return None
    return text
