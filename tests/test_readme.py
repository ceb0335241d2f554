"""README's set-up commands are the ones CI runs, and its quickstarts name real entry points.

README's blocks themselves (Python, shell, shown outputs) run in ``tests/test_docs.py`` with every docs page.
"""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _setup_commands() -> list[str]:
    first = re.search(r"^```(\w*)\n(.*?)^```\n", README, re.S | re.M)
    assert first is not None
    assert first.group(1) == "bash", "README starts with a bash block of set-up commands"
    return [line for line in first.group(2).splitlines() if line.strip()]


def test_readme_starts_with_exactly_two_setup_commands() -> None:
    """The first code block holds an install-and-validate command and an install-and-test command."""
    commands = _setup_commands()
    assert len(commands) == 2
    assert "rl-contracts validate" in commands[0]
    assert commands[1].endswith("pytest")


def test_ci_runs_the_readme_test_command() -> None:
    """.ci/run contains README's test command as one line, so CI tests what a new user types."""
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert _setup_commands()[1] in [line.strip() for line in ci_lines]


def test_bundled_recipe_named_in_readme_exists() -> None:
    """The recipe the first command validates ships inside the package."""
    path = _setup_commands()[0].split()[-1]
    assert (ROOT / path).is_file()
    assert path.startswith("src/rl_contracts/recipes/")


def test_readme_is_a_landing_page() -> None:
    """README stays short (at most 250 lines) and links into the docs instead of holding them."""
    assert len(README.splitlines()) <= 250
    for link in re.findall(r"\]\(((?:docs/|CHANGELOG|LICENSE)[^)#]*)", README):
        assert (ROOT / link).is_file(), f"README links to a missing file: {link}"


def test_readme_names_real_entry_points() -> None:
    """Every ``name`` README's table of failures gives as what stops it is public in one of the modules."""
    modules = [
        "rl_contracts.prompts",
        "rl_contracts.rollouts",
        "rl_contracts.splice",
        "rl_contracts.multimodal",
        "rl_contracts.routed_experts",
        "rl_contracts.weights",
        "rl_contracts.logprobs",
        "rl_contracts.metrics",
    ]
    public = {name for module in modules for name in importlib.import_module(module).__all__}
    table = README.split("| What goes wrong silently |", 1)[1].split("\n\n", 1)[0]
    named = {name for name in re.findall(r"`(\w+)(?:\(|`)", table) if not name.startswith("rl")}
    assert named, "the table names entry points"
    assert named <= public, f"README names {sorted(named - public)}, which no module exports"


def test_rule_counts_named_in_prose_are_the_catalogues() -> None:
    """README and the docs front page name the rule count ``rl-contracts rules --format json`` lists ("N rules")."""
    done = subprocess.run(
        [sys.executable, "-m", "rl_contracts.cli", "rules", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    count = len(json.loads(done.stdout))
    for page in (README, (ROOT / "docs" / "index.md").read_text(encoding="utf-8")):
        named = [int(n) for n in re.findall(r"\b(\d+) rules\b(?! skipped)", page)]
        assert named, "the page names the number of rules"
        assert set(named) == {count}
