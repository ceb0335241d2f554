"""README starts with the two set-up commands, and CI runs README's test command verbatim."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _setup_commands() -> list[str]:
    match = re.search(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert match is not None, "README must start with a bash block of set-up commands"
    return [line for line in match.group(1).splitlines() if line.strip()]


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
