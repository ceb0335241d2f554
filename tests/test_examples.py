"""``examples/`` runs as a trainer would run it, outside this repository, and README shows one of its tests verbatim."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def _readme_section() -> str:
    """The docs page of the strategies (README's section until it became a page)."""
    return (ROOT / "docs" / "testing.md").read_text()


def test_readme_example_is_an_example_test_verbatim() -> None:
    """The strategies page shows ``examples/test_replay_mask.py`` itself (included from the file, never a copy)."""
    assert re.findall(r"```\{literalinclude\} (\S+)", _readme_section()) == [
        "../examples/test_replay_mask.py"
    ]
    assert "```python" not in _readme_section()


def test_readme_names_every_example_file() -> None:
    """Every Python file in ``examples/`` is named on the strategies page."""
    section = _readme_section()
    files = sorted(p.name for p in EXAMPLES.glob("*.py"))
    assert len(files) >= 3
    assert [name for name in files if f"`{name}`" not in section] == []


def test_examples_pass_outside_the_repository(tmp_path: Path) -> None:
    """A copy of ``examples/`` passes with ``--hypothesis-profile=rl-contracts-ci`` and leaves no ``.hypothesis/``."""
    copy = tmp_path / "examples"
    shutil.copytree(EXAMPLES, copy, ignore=shutil.ignore_patterns("__pycache__"))
    env = {k: v for k, v in os.environ.items() if k not in ("RL_CONTRACTS_HYPOTHESIS_PROFILE", "PYTHONPATH")}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "examples",
            "-q",
            "-p",
            "no:cacheprovider",
            "--hypothesis-profile=rl-contracts-ci",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    tests = len(re.findall(r"^def test_", "".join(p.read_text() for p in copy.glob("test_*.py")), re.M))
    assert f"{tests} passed" in result.stdout
    assert not (tmp_path / ".hypothesis").exists()
    assert not (copy / ".hypothesis").exists()
