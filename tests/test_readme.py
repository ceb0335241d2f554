"""README runs as written: its set-up commands, every Python block, every shell block, the outputs it shows, its
table of codes, and its tables of modules and entry points match the package.

- The first block holds exactly the two set-up commands, and CI (``.ci/run``) runs README's test command verbatim.
- Every ``python`` block runs in a fresh interpreter from an empty working directory, so it can only use the
  installed package (and paths that exist there), never files of the checkout.
- Every ``bash`` line runs from a copy of the checkout's layout (a temporary folder whose entries link to the
  checkout's), with the venv's scripts first on ``PATH``.  It must exit 0, or the status its trailing
  ``# exits N`` comment names, with no traceback.  Not run, by kind: install commands (``pip install``, and the
  CI scripts, which build virtual environments and install vLLM); the whole-suite ``pytest`` commands, which are
  run with ``--collect-only`` instead (running the suite inside itself, or the hours-long nightly profile, is not
  a test); ``mypy`` and ``mutmut``, which are checked to be installed and configured (the type check is CI's job,
  and mutation testing takes hours).
- A ``bash`` block of one command followed directly by a ``text`` block shows that command's output: the test
  compares it with the real output.
- The table of codes is ``rl-contracts rules``'s catalogue (``rl_contracts.cli.rules.markdown_table``).
- The package layout table of Development lists exactly the modules under ``src/rl_contracts``, and every entry
  point "What it checks" names is in its module's ``__all__``.
"""

from __future__ import annotations

import importlib
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from rl_contracts.cli.rules import markdown_table

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
BIN = os.path.dirname(sys.executable)


@dataclass(frozen=True)
class Block:
    """A fenced code block of README: its language, text, line number and the block right after it (if any)."""

    language: str
    text: str
    line: int
    output: str | None


def _blocks() -> list[Block]:
    fence = re.compile(r"^```(\w*)\n(.*?)^```\n", re.S | re.M)
    found = list(fence.finditer(README))
    blocks = []
    for index, match in enumerate(found):
        after = found[index + 1] if index + 1 < len(found) else None
        adjacent = after is not None and README[match.end() : after.start()].strip() == ""
        output = after.group(2) if after is not None and adjacent and after.group(1) == "text" else None
        line = README.count("\n", 0, match.start()) + 1
        blocks.append(Block(match.group(1), match.group(2), line, output))
    return blocks


BLOCKS = _blocks()
PYTHON = [block for block in BLOCKS if block.language == "python"]
SHELL = [block for block in BLOCKS if block.language == "bash"]


def _setup_commands() -> list[str]:
    return [line for line in SHELL[0].text.splitlines() if line.strip()]


def test_readme_starts_with_exactly_two_setup_commands() -> None:
    """The first code block holds an install-and-validate command and an install-and-test command."""
    assert BLOCKS[0] == SHELL[0]
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


@pytest.mark.parametrize("block", PYTHON, ids=[f"line{block.line}" for block in PYTHON])
def test_python_block_runs(block: Block, tmp_path: Path) -> None:
    """The Python block runs as written, from an empty folder, with the installed package only."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-c", block.text],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"README line {block.line}:\n{done.stdout}{done.stderr}"


@dataclass(frozen=True)
class Command:
    """One shell line of README, without its trailing comment, and the exit status that comment names."""

    text: str
    status: int
    line: int


def _commands() -> list[Command]:
    commands = []
    for block in SHELL[1:]:  # the first block is the set-up commands
        for offset, raw in enumerate(block.text.splitlines(), start=1):
            code, _, comment = raw.partition("  #")
            if not code.strip():
                continue
            status = re.search(r"exits (\d+)", comment)
            commands.append(Command(code.strip(), int(status.group(1)) if status else 0, block.line + offset))
    return commands


COMMANDS = _commands()
INSTALLERS = ("pip install", "bash .ci/run", "bash .ci/vllm_tier")
CONFIGURED = {"mypy": "[mypy]", "mutmut": "[tool.mutmut]"}


def _program(command: str) -> str:
    words = [
        word for word in shlex.split(command) if "=" not in word.split("/")[0]
    ]  # drop VAR=value prefixes
    return words[0]


def checkout_copy(tmp_path: Path) -> Path:
    """A folder whose entries link to the checkout's, so commands see its layout but write elsewhere."""
    for entry in ROOT.iterdir():
        if entry.name not in (".git", ".venv"):
            (tmp_path / entry.name).symlink_to(entry)
    return tmp_path


def run_shell(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run one README command with bash, the venv's scripts first on ``PATH``."""
    env = {**os.environ, "PATH": BIN + os.pathsep + os.environ.get("PATH", "")}
    env.pop("COLUMNS", None)
    return subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )


@pytest.mark.parametrize("command", COMMANDS, ids=[f"line{c.line}" for c in COMMANDS])
def test_shell_command_runs(command: Command, tmp_path: Path) -> None:
    """The shell line runs as written (see the module docstring for the kinds that are checked differently)."""
    if command.text.startswith(INSTALLERS):
        assert "install" in command.text or (ROOT / command.text.split()[1]).is_file()
        return
    program = _program(command.text)
    if program in CONFIGURED:
        assert shutil.which(program, path=BIN) is not None
        config = (ROOT / ("mypy.ini" if program == "mypy" else "pyproject.toml")).read_text(encoding="utf-8")
        assert CONFIGURED[program] in config
        return
    text = command.text
    if program == "pytest":
        text = text.split("#")[0].strip() + " --collect-only -q"
    done = run_shell(text, checkout_copy(tmp_path))
    assert done.returncode == command.status, (
        f"README line {command.line}: {text}\n{done.stdout}{done.stderr}"
    )
    assert "Traceback" not in done.stdout + done.stderr


SHOWN = [block for block in SHELL if block.output is not None]


@pytest.mark.parametrize("block", SHOWN, ids=[f"line{block.line}" for block in SHOWN])
def test_shown_output_is_the_real_output(block: Block, tmp_path: Path) -> None:
    """A command shown with its output prints exactly that output (lines compared without trailing spaces)."""
    [command] = [line for line in block.text.splitlines() if line.strip()]
    done = run_shell(command.partition("  #")[0], checkout_copy(tmp_path))
    assert block.output is not None
    shown = [line.rstrip() for line in done.stdout.splitlines()]
    hint = f"README line {block.line}: paste the real output of: {command}"
    assert shown == block.output.splitlines(), hint


def test_readme_lists_every_code() -> None:
    """README's table of codes is the catalogue's, row for row (``rl-contracts rules --format markdown``)."""
    assert markdown_table() + "\n" in README, "paste the output of: rl-contracts rules --format markdown"


def _entry_point_rows() -> list[tuple[str, list[str]]]:
    section = README.split("\n## What it checks\n", 1)[1].split("\n### ", 1)[0]
    rows = re.findall(r"^\| [^|]+ \| `(rl_contracts[\w.]*)` \| (.*) \|$", section, re.M)
    return [(module, re.findall(r"`(\w+)`", names)) for module, names in rows]


def test_what_it_checks_names_real_entry_points() -> None:
    """Every entry point README's "What it checks" table names is a public name of the module it lists."""
    rows = _entry_point_rows()
    assert len(rows) >= 10
    for module, names in rows:
        imported = importlib.import_module(module)
        missing = [name for name in names if name not in getattr(imported, "__all__", ())]
        assert not missing, f"README's What it checks: {module} has no public {missing}"
