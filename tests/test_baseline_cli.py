"""The baseline workflow of ``validate``: write, pass, a new finding fails, a fixed one is listed, the file
shrinks, and an unusable baseline is exit status 2 with one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rl_contracts.cli import main

DATA = Path(__file__).parent / "data"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run ``rl-contracts validate``; status, stdout, stderr."""
    status = main(["validate", *argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A trainer repository with a valid recipe and the README's child recipe (3 errors), as the cwd."""
    (tmp_path / "recipes").mkdir()
    shutil.copyfile(DATA / "cli" / "base.yaml", tmp_path / "recipes" / "base.yaml")
    shutil.copyfile(DATA / "cli" / "child_recipe.yaml", tmp_path / "recipes" / "child_recipe.yaml")
    monkeypatch.chdir(tmp_path)
    return tmp_path


RECIPES = ("recipes/base.yaml", "recipes/child_recipe.yaml")


def test_baseline_workflow(capsys: pytest.CaptureFixture[str], repo: Path) -> None:
    """Write a baseline, pass against it, fail on a new finding only, list a fixed one, then shrink the file."""
    assert run(capsys, *RECIPES)[0] == 1
    status, _, err = run(capsys, "--write-baseline", "baseline.json", *RECIPES)
    assert status == 0
    assert "wrote 3 baseline entries to baseline.json" in err
    entries = json.loads((repo / "baseline.json").read_text())["findings"]
    assert {(e["file"], e["code"]) for e in entries} == {
        ("recipes/child_recipe.yaml", c) for c in ("K1", "P28", "P9")
    }

    status, out, err = run(capsys, "--baseline", "baseline.json", *RECIPES)
    assert status == 0
    assert "3 findings are in the baseline baseline.json" in err

    child = repo / "recipes" / "child_recipe.yaml"
    text = child.read_text().replace("gpu_memory_utilisation", "gpu_memory_utilization")  # K1 fixed
    child.write_text(text + "      tensor_paralel_size: 2\n      enable_thinking: true\n")  # new K1 and W2
    status, out, err = run(capsys, "--baseline", "baseline.json", "--format", "json", *RECIPES)
    assert status == 1
    new = sorted((issue["code"], issue["path"]) for report in json.loads(out) for issue in report["issues"])
    assert new == [
        ("K1", "policy.generation.vllm_cfg.tensor_paralel_size"),
        ("W2", "policy.generation.vllm_cfg.enable_thinking"),
    ]
    gone = "baseline entry no longer occurs: recipes/child_recipe.yaml K1 policy.generation.vllm_cfg.gpu_memory_utilisation"
    assert gone in err

    status, _, err = run(capsys, "--baseline", "baseline.json", "--write-baseline", "baseline.json", *RECIPES)
    assert status == 1  # the new findings still fail
    shrunk = json.loads((repo / "baseline.json").read_text())["findings"]
    assert {e["code"] for e in shrunk} == {"P28", "P9"}


def test_shrinking_keeps_entries_of_recipes_not_checked(
    capsys: pytest.CaptureFixture[str], repo: Path
) -> None:
    """A run over some files (pre-commit) neither reports the others' entries as gone nor drops them."""
    run(capsys, "--write-baseline", "baseline.json", *RECIPES)
    status, _, err = run(
        capsys, "--baseline", "baseline.json", "--write-baseline", "baseline.json", RECIPES[0]
    )
    assert status == 0
    assert "no longer occurs" not in err
    assert len(json.loads((repo / "baseline.json").read_text())["findings"]) == 3


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (None, "cannot be read"),
        ("not json", "is not JSON"),
        ('{"rl_contracts_baseline": 99, "findings": []}', "has format version 99"),
        ('{"rl_contracts_baseline": 1, "findings": [{}]}', "is malformed"),
    ],
)
def test_an_unusable_baseline_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str], repo: Path, content: str | None, fragment: str
) -> None:
    """Missing, non-JSON, version-mismatched and malformed baselines are exit 2 with one stderr line."""
    if content is not None:
        (repo / "baseline.json").write_text(content)
    status, _, err = run(capsys, "--baseline", "baseline.json", *RECIPES)
    assert status == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert fragment in lines[0]


def test_one_baselined_finding_reads_in_the_singular(capsys: pytest.CaptureFixture[str], repo: Path) -> None:
    """A baseline holding one finding says "1 finding is", not "1 findings are"."""
    child = repo / "recipes" / "child_recipe.yaml"
    assert run(capsys, "--write-baseline", "baseline.json", "recipes/child_recipe.yaml")[0] == 0
    document = json.loads((repo / "baseline.json").read_text())
    document["findings"] = document["findings"][:1]
    (repo / "baseline.json").write_text(json.dumps(document))
    status, _, err = run(capsys, "--baseline", "baseline.json", str(child.relative_to(repo)))
    assert "1 finding is in the baseline baseline.json" in err
    assert status == 1  # the two findings left out of the baseline are new
