"""The ``rules`` sub-command of ``rl-contracts``: every finding code, one line each.

``rl-contracts rules`` prints :data:`rl_contracts.config.rules.registry.RULES` in catalogue order as a plain table (code,
severity, summary, where NeMo RL checks it); ``--format json`` prints one JSON array of objects with the same
keys, ``--format markdown`` README's table of codes (:func:`markdown_table`; a test keeps README equal to it).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..config.rules.registry import RULES as CODES
from .validate import write

__all__ = ["markdown_table", "register", "rules_lines", "run_rules"]

_HEADINGS = ("code", "severity", "summary", "reference")


def rules_lines() -> list[str]:
    """The plain table: a heading line and one line per code, the first two columns padded, never wrapped."""
    code_width = max(len(_HEADINGS[0]), *(len(code.code) for code in CODES))
    severity_width = max(len(_HEADINGS[1]), *(len(code.severity) for code in CODES))
    rows = [_HEADINGS, *((c.code, c.severity, c.summary, c.reference) for c in CODES)]
    return [
        f"{code:<{code_width}}  {severity:<{severity_width}}  {summary} [{reference}]"
        for code, severity, summary, reference in rows
    ]


def markdown_table() -> str:
    """The codes as README's Markdown table (``| Code | Severity | Finding | Checked by the reference |``)."""
    lines = ["| Code | Severity | Finding | Checked by the reference |", "|---|---|---|---|"]
    for code in CODES:
        cells = (code.code, code.severity, code.summary, code.reference)
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines)


def run_rules(args: argparse.Namespace) -> int:
    """The ``rules`` command: print every code (plain, JSON or Markdown) and return 0."""
    if args.format == "markdown":
        text = markdown_table()
    elif args.format == "json":
        text = json.dumps(
            [
                {"code": c.code, "severity": c.severity, "summary": c.summary, "reference": c.reference}
                for c in CODES
            ],
            indent=2,
        )
    else:
        text = "\n".join(rules_lines())
    write(lambda: sys.stdout.write(text + "\n"))
    return 0


def register(commands: Any) -> None:
    """Add ``rules`` to ``commands`` (an argparse sub-parsers action); it sets ``run``."""
    rules = commands.add_parser(
        "rules",
        help="list every finding code with its summary and where the reference checks it",
        description=(
            "List every code that validate reports (V, C, R, K, P, W and N families), one line each: code, "
            "severity, summary and [where NeMo RL checks the same thing, or never]."
        ),
    )
    rules.add_argument(
        "--format",
        choices=("human", "json", "markdown"),
        default="human",
        help="plain lines, one JSON array, or README's Markdown table (default: human)",
    )
    rules.set_defaults(run=run_rules)
