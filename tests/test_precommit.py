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


def hooks() -> list[dict[str, Any]]:
    """Every hook of ``.pre-commit-hooks.yaml``, in order."""
    loaded = OmegaConf.to_container(OmegaConf.load(ROOT / ".pre-commit-hooks.yaml"))
    assert isinstance(loaded, list)
    assert all(isinstance(item, dict) for item in loaded)
    return loaded


def hook(hook_id: str = "rl-contracts-validate") -> dict[str, Any]:
    """The hook with ``hook_id``."""
    [found] = [item for item in hooks() if item["id"] == hook_id]
    return found


def test_hook_definition() -> None:
    """Two hooks: rl-contracts-validate runs the validate command, rl-contracts-fix its --fix variant (as ruff's
    hook with --fix); both python hooks on the same YAML files."""
    assert [item["id"] for item in hooks()] == ["rl-contracts-validate", "rl-contracts-fix"]
    assert hook()["entry"] == "rl-contracts validate"
    assert hook("rl-contracts-fix")["entry"] == "rl-contracts validate --fix"
    for definition in hooks():
        assert definition["language"] == "python"
        assert definition["types"] == ["yaml"]
        assert definition["files"] == hook()["files"]
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


def run_entry(
    repo: Path, *files: str, hook_id: str = "rl-contracts-validate"
) -> subprocess.CompletedProcess[str]:
    """Run a hook's entry, as pre-commit does, with ``files`` relative to ``repo``."""
    program, *arguments = shlex.split(hook(hook_id)["entry"])
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


def test_fix_entry_fixes_a_misspelled_override(tmp_path: Path) -> None:
    """The --fix hook renames a misspelled key in the staged file and exits 0 (nothing remains), so pre-commit
    fails the commit on the modified file and the user stages the fix."""
    repo = trainer_repo(tmp_path, {"vllm_cfg": {"gpu_memory_utilisation": 0.3}})
    done = run_entry(repo, "configs/recipe.yaml", hook_id="rl-contracts-fix")
    assert done.returncode == 0, done.stdout + done.stderr
    fixed = json.loads((repo / "configs" / "recipe.yaml").read_text(encoding="utf-8"))
    assert fixed["policy"]["generation"]["vllm_cfg"] == {"gpu_memory_utilization": 0.3}
    assert "fixed K1" in done.stderr
