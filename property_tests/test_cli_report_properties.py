"""``rl-contracts validate``'s human report without rich equals rich's, wherever it is used.

On a stdout that is no terminal, ``plain_report`` builds the report without importing rich (the CLI starts
faster); ``print_human`` on the console ``stdout_console`` gives is the reference.  For every report whose text
is printable, the two write the same characters; for any other (tabs, control or other non-printable
characters, which rich's text changes) ``plain_report`` declines and the CLI prints through rich.
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rl_contracts._internal.messages import printable
from rl_contracts.cli.report import (
    NO_ALGORITHM,
    FileReport,
    json_report,
    plain_report,
    print_human,
    stdout_console,
)
from rl_contracts.cli.validate import ALGORITHM_CHOICES
from rl_contracts.config import ConfigIssue
from rl_contracts.config.rules.preflight import SkippedRule

TEXT = st.text(max_size=40)
CELL = st.one_of(TEXT, st.text(st.characters(codec="ascii"), max_size=20))

ISSUES = st.builds(
    ConfigIssue,
    path=CELL,
    value=CELL,
    message=CELL,
    severity=st.sampled_from(["error", "warning"]),
    code=st.sampled_from(["C1", "K1", "P19", "W2", "V1"]),
    source=st.none() | CELL | st.just("--set"),
    line=st.none() | st.integers(1, 10_000),
)
SKIPPED = st.builds(
    SkippedRule,
    code=st.sampled_from(["N1", "N7", "N8", "P21"]),
    message=CELL,
    path=CELL,
    severity=st.just("skipped"),
)
REPORTS = st.builds(
    FileReport,
    file=CELL.filter(bool),
    section=CELL,
    status=st.sampled_from(["valid", "invalid", "skipped", "error"]),
    issues=st.lists(ISSUES, max_size=4).map(tuple),
    skipped=st.lists(SKIPPED, max_size=3).map(tuple),
    entrypoint=st.none() | st.sampled_from(["grpo", "grpo-sc"]),
    algorithm=st.none() | st.sampled_from(ALGORITHM_CHOICES),
)


class _Pipe(io.StringIO):
    """A stdout that is no terminal and encodes everything (as a UTF-8 pipe does)."""

    encoding = "utf-8"


def _outputs(reports: list[FileReport], monkeypatch: Any) -> tuple[str | None, str]:
    pipe = _Pipe()
    with monkeypatch.context() as patch:
        patch.setattr("sys.stdout", pipe)
        plain = plain_report(reports)
        print_human(stdout_console(), reports)
    return plain, pipe.getvalue()


def _texts(reports: list[FileReport]) -> list[str]:
    """Every text a report shows."""
    texts = []
    for report in reports:
        texts += [report.file, report.section]
        texts += [t for i in report.issues for t in (i.path, i.value, i.reason, i.source or "")]
        texts += [t for r in report.skipped for t in (r.reason, r.path or "")]
    return texts


@pytest.fixture(autouse=True)
def _no_terminal_forcing(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "COLUMNS"):
        monkeypatch.delenv(name, raising=False)


@given(st.lists(REPORTS, min_size=1, max_size=3))
def test_plain_report_is_richs_output_or_declines(reports: list[FileReport]) -> None:
    """Invariant: plain_report gives exactly rich's characters on a pipe, and declines only for non-printable
    text."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        plain, rich = _outputs(reports, monkeypatch)
    if plain is None:
        assert not all(text.isprintable() for text in _texts(reports))
    else:
        assert plain == rich


@given(st.lists(REPORTS, min_size=1, max_size=3))
def test_every_format_names_each_files_algorithm(reports: list[FileReport]) -> None:
    """Invariant: the JSON object of each file holds its algorithm (null for none), and the human header of each
    readable file names it (``algorithm: NAME``, or ``no algorithm``); an unreadable file's header names none."""
    assert [item["algorithm"] for item in json.loads(json_report(reports))] == [r.algorithm for r in reports]
    with pytest.MonkeyPatch.context() as monkeypatch:
        _, text = _outputs(reports, monkeypatch)
    headers = [
        line for line in text.splitlines() if line.startswith(("VALID", "INVALID", "SKIPPED", "ERROR"))
    ]
    assert len(headers) == len(reports)
    for report, header in zip(reports, headers, strict=True):
        start = f"{report.status.upper():<8} {printable(report.file)}"
        named = NO_ALGORITHM if report.algorithm is None else f"algorithm: {report.algorithm}"
        if report.status == "error":
            assert header == start
        else:
            assert header.startswith(f"{start}  [{printable(report.section)}]  {named}")


def test_plain_report_declines_where_rich_may_see_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """FORCE_COLOR or TTY_COMPATIBLE (which can make rich treat a pipe as a terminal) send the report to rich."""
    report = FileReport("a.yaml", "policy.generation", "valid", ())
    monkeypatch.setattr("sys.stdout", _Pipe())
    assert plain_report([report]) is not None
    for name, value in (("FORCE_COLOR", "1"), ("TTY_COMPATIBLE", "1")):
        monkeypatch.setenv(name, value)
        assert plain_report([report]) is None
        monkeypatch.delenv(name)
