"""The ``rules`` and ``rule`` sub-commands of ``rl-contracts``: every finding code, and one rule's page.

``rl-contracts rules`` prints :data:`rl_contracts.config.rules.registry.RULES` in catalogue order as a plain table
(code, severity, summary, where NeMo RL checks it); ``--format json`` prints one JSON array of every rule's record
(:func:`rule_json`), ``--format markdown`` README's table of codes (:func:`markdown_table`; a test keeps README
equal to it).  ``rl-contracts rule CODE`` (or its kebab-case name) prints the rule's page (:func:`rule_page`):
what it checks, why it matters, a failing example and the fix; ``--format json`` its record.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from typing import TYPE_CHECKING, Any

from .validate import write

if TYPE_CHECKING:
    from ..config.rule import Rule

__all__ = [
    "markdown_table",
    "register",
    "rule_argument",
    "rule_json",
    "rule_page",
    "rules_lines",
    "run_rule",
    "run_rules",
]

_PAGE_WIDTH = 100
_OPTION_FLAGS = {"vllm_version": "--vllm-version", "gpu_capability": "--gpu-capability"}

_HEADINGS = ("code", "severity", "summary", "reference")


def rules_lines() -> list[str]:
    """The plain table: a heading line and one line per code, the first two columns padded, never wrapped."""
    from ..config.rules.registry import RULES as CODES  # not at import: the parser imports no recipe code

    code_width = max(len(_HEADINGS[0]), *(len(code.code) for code in CODES))
    severity_width = max(len(_HEADINGS[1]), *(len(code.severity) for code in CODES))
    rows = [_HEADINGS, *((c.code, c.severity, c.summary, c.reference) for c in CODES)]
    return [
        f"{code:<{code_width}}  {severity:<{severity_width}}  {summary} [{reference}]"
        for code, severity, summary, reference in rows
    ]


def markdown_table() -> str:
    """The codes as README's Markdown table (``| Code | Severity | Finding | Checked by the reference |``)."""
    from ..config.rules.registry import RULES as CODES

    lines = ["| Code | Severity | Finding | Checked by the reference |", "|---|---|---|---|"]
    for code in CODES:
        cells = (code.code, code.severity, code.summary, code.reference)
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines)


def _options_text(rule: Rule) -> str:
    """The ``validate`` arguments the example needs (``--vllm-version 0.30``), or ``""``."""
    parts = []
    for name, value in rule.example_options.items():
        if name in _OPTION_FLAGS and isinstance(value, tuple):
            parts.append(f"{_OPTION_FLAGS[name]} {'.'.join(str(part) for part in value)}")
        elif name == "model_config":
            parts.append(f"--model-config config.json holding {json.dumps(value, sort_keys=True)}")
        else:
            parts.append(f"{name}={value!r}")
    return ", ".join(parts)


def _paragraph(text: str) -> list[str]:
    return textwrap.wrap(
        text, _PAGE_WIDTH, initial_indent="  ", subsequent_indent="  ", break_on_hyphens=False
    ) or ["  -"]


def _checked_by(rule: Rule) -> str:
    """Where the rule's checks live, ``rl_contracts/config/rules/preflight/loss.py:check_loss_options``."""
    from ..config.rules.registry import checks_of

    return ", ".join(check.location for check in checks_of(rule.code)) or "-"


def rule_page(rule: Rule) -> str:
    """The page of ``rule`` as ``rl-contracts rule CODE`` prints it: heading, then What it checks, Why it matters
    (with the reference site and where the check lives here), Example (the failing recipe fragment) and Fix."""
    given = _options_text(rule)
    own = rule.example.startswith("defaults:")  # V7, N8: the example names its parents, nothing is merged
    merged = ("it names its own defaults" if own else "merged over a recipe that passes every rule") + (
        f", validated with {given}" if given else ""
    )
    lines = [
        f"{rule.code} {rule.name} ({rule.severity})",
        rule.summary,
        "",
        "What it checks",
        *_paragraph(rule.what_it_checks),
        "",
        "Why it matters",
        *_paragraph(rule.why_it_matters),
        *_paragraph(f"Reference: {rule.reference}."),
        *_paragraph(f"Checked by: {_checked_by(rule)}."),
        "",
        "Example",
        *_paragraph(f"A minimal failing recipe{'' if own else ' fragment'} ({merged}):"),
        "",
        *(f"    {line}" for line in rule.example.splitlines()),
        "",
        "Fix",
        *_paragraph(rule.fix),
    ]
    return "\n".join(lines)


def rule_json(rule: Rule) -> dict[str, Any]:
    """The record of ``rule`` as JSON: its code, name, family, severity, summary, reference, the four parts of its
    documentation, the example's options, ``fix_safety`` and ``checked_by`` (where its checks live)."""
    return {
        "code": rule.code,
        "severity": rule.severity,
        "summary": rule.summary,
        "reference": rule.reference,
        "name": rule.name,
        "family": rule.family,
        "what_it_checks": rule.what_it_checks,
        "why_it_matters": rule.why_it_matters,
        "example": rule.example,
        "example_options": {
            name: list(value) if isinstance(value, tuple) else value
            for name, value in rule.example_options.items()
        },
        "fix": rule.fix,
        "fix_safety": rule.fix_safety,
        "checked_by": _checked_by(rule),
    }


def rule_argument(text: str) -> Rule:
    """``rule`` argument type: a code (``P19``, any case) or a rule's kebab-case name; else a usage error."""
    from ..config.rules.registry import RULES as CODES
    from ..config.rules.registry import rule_for

    found = rule_for(text.upper()) or next((rule for rule in CODES if rule.name == text), None)
    if found is None:
        raise argparse.ArgumentTypeError(
            f"unknown rule {text!r}: expected a code such as P19 or a rule name listed by 'rl-contracts rules'"
        )
    return found


def run_rule(args: argparse.Namespace) -> int:
    """The ``rule`` command: print one rule's page (human or JSON) and return 0."""
    rule: Rule = args.rule
    text = json.dumps(rule_json(rule), indent=2) if args.format == "json" else rule_page(rule)
    write(lambda: sys.stdout.write(text + "\n"))
    return 0


def run_rules(args: argparse.Namespace) -> int:
    """The ``rules`` command: print every code (plain, JSON or Markdown) and return 0."""
    from ..config.rules.registry import RULES as CODES

    if args.format == "markdown":
        text = markdown_table()
    elif args.format == "json":
        text = json.dumps([rule_json(rule) for rule in CODES], indent=2)
    else:
        text = "\n".join(rules_lines())
    write(lambda: sys.stdout.write(text + "\n"))
    return 0


def register(commands: Any) -> None:
    """Add ``rules`` and ``rule`` to ``commands`` (an argparse sub-parsers action); each sets ``run``."""
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
    rule = commands.add_parser(
        "rule",
        help="print one rule's page: what it checks, why it matters, a failing example, the fix",
        description=(
            "Print the documentation of one rule: what it checks, why it matters (what happens in the trainer, and "
            "when), a minimal failing recipe fragment, and the fix."
        ),
    )
    rule.add_argument(
        "rule", type=rule_argument, metavar="CODE", help="a code such as P19, or the rule's name"
    )
    rule.add_argument(
        "--format",
        choices=("human", "json"),
        default="human",
        help="the page as text, or the rule's record as one JSON object (default: human)",
    )
    rule.set_defaults(run=run_rule)
