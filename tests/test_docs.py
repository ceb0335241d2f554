"""README.md and the documentation pages (docs/**/*.md) run as written and show what they print.

Fenced blocks, by language:

- ``python`` with ``>>>`` lines: a doctest session; every output is compared (``...`` matches anything).
- ``python`` without: a script, run in a fresh interpreter from an empty folder with the installed package only.
  A ``text`` block right after it shows its standard output, compared line by line; without one it prints nothing.
- ``bash``: its lines run in order, with bash, in one fresh folder that holds the checkout's entries (linked) and a
  copy of ``docs/examples/recipes`` as ``recipes/``, the venv's scripts first on ``PATH``.  A line exits 0, or the
  status its trailing ``# exits N`` comment names, without a traceback.  A ``text`` block right after the block
  shows the last line's standard output; a ``json`` block shows it as JSON: the whole output or one value inside
  it (so a page may show one result of a SARIF log).  Not run: installs and the CI scripts (they build
  environments), the whole-suite ``pytest`` (collected instead), ``mypy`` and ``mutmut`` (checked configured).
- ``yaml``: parses.  ``console``, ``text`` on its own and the rest are shown, not run.

The pages a user reads cite no file of the checkout's test data and no specification outside the repository.
"""

from __future__ import annotations

import doctest
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]  # PyYAML (an omegaconf dependency), no stubs installed

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
BIN = os.path.dirname(sys.executable)
GENERATED = ("_build", "apidocs", "_generated", "recipes/rules")


def pages() -> list[Path]:
    """README.md and every hand-written page of docs/ (generated pages are checked by the docs build)."""
    found = [ROOT / "README.md"]
    for path in sorted(DOCS.rglob("*.md")):
        relative = path.relative_to(DOCS).as_posix()
        if not relative.startswith(GENERATED):
            found.append(path)
    return found


@dataclass(frozen=True)
class Block:
    """A fenced block: its page, language, text and line, and the block right after it (language, text)."""

    page: Path
    language: str
    text: str
    line: int
    shown: tuple[str, str] | None

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)} line {self.line}"


_FENCE = re.compile(r"^(`{3,})(\w*)[^\n]*\n(.*?)^\1[ \t]*\n", re.S | re.M)


def blocks(page: Path) -> list[Block]:
    """The page's fenced blocks in order (MyST directives such as ``{toctree}`` are not code blocks)."""
    text = page.read_text(encoding="utf-8")
    found = list(_FENCE.finditer(text))
    result = []
    for index, match in enumerate(found):
        after = found[index + 1] if index + 1 < len(found) else None
        adjacent = after is not None and text[match.end() : after.start()].strip() == ""
        shown = (after.group(2), after.group(3)) if after is not None and adjacent else None
        line = text.count("\n", 0, match.start()) + 1
        result.append(Block(page, match.group(2), match.group(3), line, shown))
    return result


ALL = [block for page in pages() for block in blocks(page)]
DOCTESTS = [b for b in ALL if b.language == "python" and re.search(r"^>>> ", b.text, re.M)]
SCRIPTS = [b for b in ALL if b.language == "python" and b not in DOCTESTS]
SHELL = [b for b in ALL if b.language == "bash"]
YAML = [b for b in ALL if b.language == "yaml"]


def _ids(selected: list[Block]) -> list[str]:
    return [f"{b.page.relative_to(ROOT).as_posix()}:{b.line}" for b in selected]


def test_the_pages_have_examples() -> None:
    """The collection finds the examples (a changed fence syntax cannot silently skip them all)."""
    assert len(pages()) >= 25
    assert len(SCRIPTS) + len(DOCTESTS) >= 15
    assert len(SHELL) >= 10


DOCTEST_PAGES = sorted({block.page for block in DOCTESTS})


@pytest.mark.parametrize("page", DOCTEST_PAGES, ids=[p.relative_to(ROOT).as_posix() for p in DOCTEST_PAGES])
def test_doctest_blocks(page: Path) -> None:
    """Every ``>>>`` statement runs and prints exactly the output written under it; the sessions of one page run
    in order in one namespace, as a reader follows them."""
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    failed = []
    for block in (b for b in DOCTESTS if b.page == page):
        test = parser.get_doctest(block.text, namespace, block.where, str(block.page), block.line)
        before = runner.failures
        runner.run(test, clear_globs=False)
        namespace.update(test.globs)  # a DocTest runs in a copy of the namespace it is given
        if runner.failures > before:
            failed.append(block.where)
    assert failed == [], f"see the doctest report above: {failed}"


def _run_python(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )


@pytest.mark.parametrize("block", SCRIPTS, ids=_ids(SCRIPTS))
def test_python_block(block: Block, tmp_path: Path) -> None:
    """The script runs from an empty folder and prints exactly the ``text`` block shown after it (or nothing)."""
    done = _run_python(block.text, tmp_path)
    assert done.returncode == 0, f"{block.where}:\n{done.stdout}{done.stderr}"
    printed = [line.rstrip() for line in done.stdout.splitlines()]
    if block.shown is not None and block.shown[0] == "text":
        assert printed == block.shown[1].splitlines(), f"{block.where}: paste the block's real output"
    else:
        assert printed == [], f"{block.where} prints output the page does not show: add a text block"


@dataclass(frozen=True)
class Command:
    """One shell line, without its trailing comment, and the exit status that comment names."""

    text: str
    status: int


def commands(block: Block) -> list[Command]:
    result = []
    for raw in block.text.splitlines():
        code, _, comment = raw.partition("  #")
        if code.strip() and not code.lstrip().startswith("#"):
            status = re.search(r"exits (\d+)", comment)
            result.append(Command(code.strip(), int(status.group(1)) if status else 0))
    return result


INSTALLERS = ("pip install", "python3 -m venv", "bash .ci/", "apt-get")
CONFIGURED = {"mypy": ("mypy.ini", "[mypy]"), "mutmut": ("pyproject.toml", "[tool.mutmut]")}


def workspace(tmp_path: Path) -> Path:
    """The checkout's entries, linked, and a private copy of the example recipes as ``recipes/``."""
    for entry in ROOT.iterdir():
        if entry.name not in (".git", ".venv", ".venv-docs", "recipes"):
            (tmp_path / entry.name).symlink_to(entry)
    shutil.copytree(DOCS / "examples" / "recipes", tmp_path / "recipes")
    return tmp_path


def run_shell(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run one command with bash, the venv's scripts first on ``PATH``, no terminal width."""
    env = {**os.environ, "PATH": BIN + os.pathsep + os.environ.get("PATH", "")}
    env.pop("COLUMNS", None)
    return subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def _program(command: str) -> str:
    return next(word for word in shlex.split(command) if "=" not in word.split("/")[0])


def _contains(output: Any, shown: Any) -> bool:
    """``shown`` is ``output`` or a value somewhere inside it."""
    if output == shown:
        return True
    if isinstance(output, dict):
        return any(_contains(value, shown) for value in output.values())
    if isinstance(output, list):
        return any(_contains(value, shown) for value in output)
    return False


@pytest.mark.parametrize("block", SHELL, ids=_ids(SHELL))
def test_shell_block(block: Block, tmp_path: Path) -> None:
    """Each line runs as written (see the module docstring); the last one prints what the page shows."""
    cwd = workspace(tmp_path)
    done = None
    for command in commands(block):
        if command.text.startswith(INSTALLERS):
            continue
        program = _program(command.text)
        if program in CONFIGURED:
            assert shutil.which(program, path=BIN) is not None
            config, section = CONFIGURED[program]
            assert section in (ROOT / config).read_text(encoding="utf-8")
            continue
        text = command.text
        if program == "pytest" and not re.search(r"\.py\b", text):
            text = text.split("#")[0].strip() + " --collect-only -q"
        done = run_shell(text, cwd)
        assert done.returncode == command.status, f"{block.where}: {text}\n{done.stdout}{done.stderr}"
        assert "Traceback" not in done.stdout + done.stderr, f"{block.where}: {text}\n{done.stderr}"
    if block.shown is None or done is None:
        return
    language, shown = block.shown
    if language == "text":
        printed = [line.rstrip() for line in done.stdout.splitlines()]
        assert printed == shown.splitlines(), f"{block.where}: paste the real output of: {text}"
    elif language == "json":
        assert _contains(json.loads(done.stdout), json.loads(shown)), (
            f"{block.where}: not in the output of {text}"
        )


@pytest.mark.parametrize("block", YAML, ids=_ids(YAML))
def test_yaml_block_parses(block: Block) -> None:
    """A YAML example (a recipe fragment, a pre-commit or workflow file) is valid YAML."""
    yaml.safe_load(block.text)


@pytest.mark.parametrize("page", pages(), ids=[p.relative_to(ROOT).as_posix() for p in pages()])
def test_page_cites_nothing_a_user_lacks(page: Path) -> None:
    """No citation of the project's specification files; test data paths only on the development pages."""
    text = page.read_text(encoding="utf-8")
    assert not re.search(r"\b(SPEC|PREFLIGHT)(\.md)?\b ?§?", text), f"{page}: cites SPEC/PREFLIGHT"
    if "development" not in page.parts:
        assert "tests/data" not in text, f"{page}: shows a path of the checkout's test data"
