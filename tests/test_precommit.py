"""The pre-commit hook definition (``.pre-commit-hooks.yaml``) runs ``rl-contracts validate`` on recipe files.

pre-commit installs the package (``language: python``) and runs ``entry`` with the staged files that match
``files`` and ``types``, as paths relative to the repository root.  These tests read the hook from the YAML and run
its entry the same way, through the installed console script, on a small trainer repository in a temporary folder.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

ROOT = Path(__file__).resolve().parents[1]
BASE = ROOT / "tests" / "data" / "recipes" / "grpo_base.yaml"


def hook() -> dict[str, Any]:
    """The single hook of ``.pre-commit-hooks.yaml``."""
    hooks = OmegaConf.to_container(OmegaConf.load(ROOT / ".pre-commit-hooks.yaml"))
    assert isinstance(hooks, list)
    [only] = hooks
    assert isinstance(only, dict)
    return only


def test_hook_definition() -> None:
    """One hook, id rl-contracts-validate, a python hook whose entry is the validate command, on YAML files."""
    definition = hook()
    assert definition["id"] == "rl-contracts-validate"
    assert definition["entry"] == "rl-contracts validate"
    assert definition["language"] == "python"
    assert definition["types"] == ["yaml"]
    assert set(definition) <= {"id", "name", "description", "entry", "language", "files", "types"}


@pytest.mark.parametrize(
    ("path", "matched"),
    [
        ("examples/configs/grpo_math_1B.yaml", True),
        ("examples/configs/recipes/llm/grpo-llama3.1-8b.yaml", True),
        ("configs/evals/eval.yml", True),
        ("recipes/grpo.yaml", True),
        ("src/rl_contracts/recipes/grpo_qwen3_moe.yaml", True),
        (".github/workflows/ci.yaml", False),
        (".pre-commit-config.yaml", False),
        ("docker-compose.yaml", False),
        ("configs/README.md", False),
        ("myconfigs/x.yaml", False),
    ],
)
def test_files_pattern_selects_recipe_folders(path: str, matched: bool) -> None:
    """``files`` (pre-commit's ``re.search``) takes YAML under a configs/ or recipes/ folder, nothing else."""
    assert (re.search(hook()["files"], path) is not None) is matched


def run_entry(repo: Path, *files: str) -> subprocess.CompletedProcess[str]:
    """Run the hook's entry, as pre-commit does, with ``files`` relative to ``repo``."""
    program, *arguments = shlex.split(hook()["entry"])
    found = shutil.which(program, path=os.path.dirname(sys.executable)) or shutil.which(program)
    if found is None:
        pytest.skip(f"the {program} console script is not installed")
    return subprocess.run(
        [found, *arguments, *files], cwd=repo, capture_output=True, text=True, timeout=120, check=False
    )


def trainer_repo(tmp_path: Path, generation: dict[str, Any]) -> Path:
    """A trainer repository with one recipe, configs/recipe.yaml, inheriting the test base recipe."""
    (tmp_path / "configs").mkdir()
    (tmp_path / ".git").mkdir()  # a work tree: its recipes may inherit from any file inside it
    shutil.copyfile(BASE, tmp_path / "base.yaml")
    recipe = {"defaults": "../base.yaml", "policy": {"generation": generation}}
    (tmp_path / "configs" / "recipe.yaml").write_text(json.dumps(recipe), encoding="utf-8")
    return tmp_path


def test_entry_passes_a_valid_recipe(tmp_path: Path) -> None:
    """A valid staged recipe: the hook exits 0 and reports it VALID."""
    done = run_entry(trainer_repo(tmp_path, {"temperature": 0.7}), "configs/recipe.yaml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("VALID    configs/recipe.yaml")
    assert done.stderr == ""


def test_entry_fails_an_invalid_recipe(tmp_path: Path) -> None:
    """An invalid staged recipe: the hook exits 1 (pre-commit fails the commit) and names the offending path."""
    done = run_entry(trainer_repo(tmp_path, {"top_p": 1.5}), "configs/recipe.yaml")
    assert done.returncode == 1
    assert done.stdout.startswith("INVALID  configs/recipe.yaml")
    assert "policy.generation.top_p" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr
