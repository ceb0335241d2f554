"""``validate --fix`` / ``--unsafe-fixes`` / ``--diff`` and the fix API: byte-for-byte outputs, idempotence,
provenance-directed edits in a ``defaults:`` chain, and what is never fixed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rl_contracts.cli import main
from rl_contracts.cli.fixing import fixes_table
from rl_contracts.config.fixes import plan_fixes
from rl_contracts.config.rules.registry import RULES

DATA = Path(__file__).parent / "data" / "fixes"
FIXABLE = {rule.code: rule.fix_safety for rule in RULES if rule.fix_safety is not None}


def copy(tmp_path: Path, folder: Path, *names: str) -> Path:
    """Copy the named files of a data folder into ``tmp_path``."""
    for name in names:
        shutil.copyfile(folder / name, tmp_path / name)
    return tmp_path


def fix(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run ``rl-contracts validate`` with ``argv``; its status, stdout and stderr."""
    status = main(["validate", *argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_the_registry_declares_the_fixable_rules() -> None:
    """K1, K3 and P28 have safe fixes; W2 and the value rules P7, P9, P36 unsafe ones; no other rule claims a fix."""
    assert FIXABLE == {
        "K1": "safe",
        "K3": "safe",
        "P28": "safe",
        "W2": "unsafe",
        "P7": "unsafe",
        "P9": "unsafe",
        "P36": "unsafe",
    }


@pytest.mark.parametrize("name", ["k1.yaml", "p28.yaml", "w2.yaml", "p28_taken.yaml"])
def test_fragments_are_fixed_byte_for_byte_and_a_second_fix_changes_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """Each fragment becomes its expected file exactly; a second --fix leaves it as it is."""
    copy(tmp_path, DATA / "fragments", name)
    monkeypatch.chdir(tmp_path)
    status, _, err = fix(capsys, "--fix", "--unsafe-fixes", name)
    expected = (DATA / "fragments" / "expected" / name).read_bytes()
    assert (tmp_path / name).read_bytes() == expected
    if name == "p28_taken.yaml":
        assert status == 1
        assert "would overwrite it" in err
    else:
        assert status == 0  # nothing remains
    fix(capsys, "--fix", "--unsafe-fixes", name)
    assert (tmp_path / name).read_bytes() == expected


@pytest.mark.parametrize(("unsafe", "expected"), [(False, "expected_safe"), (True, "expected_unsafe")])
def test_chain_fixes_go_to_the_file_that_set_the_value(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    unsafe: bool,
    expected: str,
) -> None:
    """In a two-file chain, each edit lands in the file provenance names (P9 and W2 in the parent), and the
    report afterwards shows what remains: the unsafe findings without --unsafe-fixes, the ambiguous typo always."""
    copy(tmp_path, DATA / "chain", "base.yaml", "child.yaml")
    monkeypatch.chdir(tmp_path)
    argv = ["--fix", "--format", "json", "child.yaml"] + (["--unsafe-fixes"] if unsafe else [])
    status, out, err = fix(capsys, *argv)
    for name in ("base.yaml", "child.yaml"):
        assert (tmp_path / name).read_bytes() == (DATA / "chain" / expected / name).read_bytes(), name
    remaining = {issue["code"] for issue in json.loads(out)[0]["issues"]}
    assert status == 1
    assert "K1" in remaining  # ensor_parallel_size has two candidates: never guessed
    assert ({"P7", "P9"} <= remaining) is not unsafe
    assert "W2" in remaining if not unsafe else "W2" not in remaining
    assert (
        "not fixed P9" in err
        if not unsafe
        else "fixed P9 policy.train_global_batch_size in base.yaml:32" in err
    )
    before = {name: (tmp_path / name).read_bytes() for name in ("base.yaml", "child.yaml")}
    fix(capsys, *argv)
    assert before == {name: (tmp_path / name).read_bytes() for name in ("base.yaml", "child.yaml")}


def test_diff_prints_the_change_and_writes_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--diff prints a unified diff per changed file, leaves every file as it was, and exits 1."""
    copy(tmp_path, DATA / "chain", "base.yaml", "child.yaml")
    monkeypatch.chdir(tmp_path)
    before = {name: (tmp_path / name).read_bytes() for name in ("base.yaml", "child.yaml")}
    status, out, _ = fix(capsys, "--diff", "--unsafe-fixes", "child.yaml")
    assert status == 1
    assert before == {name: (tmp_path / name).read_bytes() for name in ("base.yaml", "child.yaml")}
    assert "--- a/base.yaml\n+++ b/base.yaml\n" in out
    assert (
        "-  train_global_batch_size: 512  # = 32 x 16\n+  train_global_batch_size: 1024  # = 32 x 16\n" in out
    )
    assert "--- a/child.yaml\n+++ b/child.yaml\n" in out
    status, out, _ = fix(capsys, "--diff", str(DATA / "fragments" / "expected" / "k1.yaml"))
    assert (status, out) == (0, "")


def test_a_set_override_is_never_fixed_in_a_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A finding on a value --set wrote is declined with the reason, and no file changes."""
    copy(tmp_path, DATA / "fragments" / "expected", "k1.yaml")
    monkeypatch.chdir(tmp_path)
    before = (tmp_path / "k1.yaml").read_bytes()
    status, _, err = fix(
        capsys, "--fix", "--set", "++policy.generation.vllm_cfg.kv_cache_dtyp=fp8", "k1.yaml"
    )
    assert status == 1
    assert "was set by --set: change the override, not a file" in err
    assert (tmp_path / "k1.yaml").read_bytes() == before


def test_unsafe_fixes_alone_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """--unsafe-fixes without --fix or --diff exits 2 with one line."""
    status, _, err = fix(capsys, "--unsafe-fixes", str(DATA / "fragments" / "k1.yaml"))
    assert status == 2
    assert err.strip() == "rl-contracts validate: error: --unsafe-fixes needs --fix or --diff"


def test_plan_fixes_computes_without_writing(tmp_path: Path) -> None:
    """The library API returns the changes and the fixes (hidden unsafe ones apart) and touches no file."""
    copy(tmp_path, DATA / "chain", "base.yaml", "child.yaml")
    before = (tmp_path / "base.yaml").read_bytes(), (tmp_path / "child.yaml").read_bytes()
    plan = plan_fixes([str(tmp_path / "child.yaml")])
    assert before == ((tmp_path / "base.yaml").read_bytes(), (tmp_path / "child.yaml").read_bytes())
    assert [(fix.code, fix.safety) for fix in plan.applied] == [("K1", "safe"), ("P28", "safe")]
    assert {fix.code for fix in plan.hidden} == {"P7", "P9", "W2"}
    [change] = plan.changes
    assert change.file == str(tmp_path / "child.yaml")
    assert change.after.encode() == (DATA / "chain" / "expected_safe" / "child.yaml").read_bytes()


def test_readme_fixes_table_is_the_registry() -> None:
    """The fixes page's table of fixes is generated from the registry's fix_safety fields."""
    readme = (Path(__file__).parents[1] / "docs" / "recipes" / "fixes.md").read_text(encoding="utf-8")
    assert fixes_table() + "\n" in readme


def test_a_parent_named_two_ways_is_one_file(tmp_path: Path) -> None:
    """Two recipes naming the same parent by different spellings share one copy: one change, made once."""
    copy(tmp_path, DATA / "chain", "base.yaml")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "child.yaml").write_text("defaults: ../base.yaml\n")
    (tmp_path / "other.yaml").write_text("defaults: ./base.yaml\n")
    plan = plan_fixes([str(tmp_path / "sub" / "child.yaml"), str(tmp_path / "other.yaml")], unsafe_fixes=True)
    [change] = plan.changes
    assert Path(change.file).resolve() == (tmp_path / "base.yaml").resolve()
    assert "distributed_executor_backend" not in change.after
    assert [fix.code for fix in plan.applied] == ["W2"]


# --- the three defects of issue 28: every fix accounted for, SARIF fixes that never overlap, tabs ---------------

K1_THEN_P28 = """\
defaults: grpo_base.yaml
policy:
  generation:
    vllm_cfg:
      limit_mm_per_prompt:
        image: 2
      gpu_memory_utilisation: 0.5
"""


def _recipe(tmp_path: Path, text: str) -> Path:
    shutil.copyfile(
        Path(__file__).parent / "data" / "recipes" / "grpo_base.yaml", tmp_path / "grpo_base.yaml"
    )
    (tmp_path / "r.yaml").write_text(text, encoding="utf-8")
    return tmp_path / "r.yaml"


def test_k1_and_p28_in_one_section_are_both_accounted_for_and_a_second_run_finds_none(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--diff`` lists the K1 rename and the P28 move; when the rounds run out the rest is pending, never dropped."""
    recipe = _recipe(tmp_path, K1_THEN_P28)
    monkeypatch.chdir(tmp_path)
    status, out, err = fix(capsys, "r.yaml", "--diff")
    assert status == 1
    assert "would fix K1 policy.generation.vllm_cfg.gpu_memory_utilisation" in err
    assert "would fix P28 policy.generation.vllm_cfg.limit_mm_per_prompt" in err
    assert "+      gpu_memory_utilization: 0.5" in out
    cut_short = plan_fixes([str(recipe)], root=str(tmp_path), max_rounds=0)
    assert sorted(item.code for item in cut_short.pending) == ["K1", "P28"]
    assert all("run again" in item.reason for item in cut_short.pending)
    assert fix(capsys, "r.yaml", "--fix")[0] == 0
    again = plan_fixes([str(recipe)], root=str(tmp_path))
    assert (again.changes, again.applied, again.declined, again.pending) == ((), (), (), ())


def test_sarif_fixes_of_one_file_never_overlap(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The P28 move's region covers the K1 key: only the first fix is emitted, the other says it waits."""
    _recipe(tmp_path, K1_THEN_P28)
    monkeypatch.chdir(tmp_path)
    _, out, _ = fix(capsys, "r.yaml", "--format", "sarif")
    results = json.loads(out)["runs"][0]["results"]
    regions = [
        (replacement["deletedRegion"]["startLine"], replacement["deletedRegion"]["endLine"])
        for result in results
        for item in result.get("fixes", ())
        for change in item["artifactChanges"]
        for replacement in change["replacements"]
    ]
    assert len(regions) == 1
    waiting = [result for result in results if "fixPending" in result["properties"]]
    assert [result["ruleId"] for result in waiting] == ["P28"]
    assert "K1 policy.generation.vllm_cfg.gpu_memory_utilisation" in waiting[0]["properties"]["fixPending"]


def test_a_tab_after_a_colon_is_read_by_the_fixer_as_by_the_loader(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The loader accepts ``key:<TAB>value``, so the fixer edits it too (the tab stays)."""
    recipe = _recipe(
        tmp_path,
        "defaults: grpo_base.yaml\npolicy:\n  generation:\n    vllm_cfg:\n      gpu_memory_utilisation:\t0.5\n",
    )
    monkeypatch.chdir(tmp_path)
    status, _, err = fix(capsys, "r.yaml", "--fix")
    assert "declined" not in err
    assert status == 0
    assert recipe.read_text(encoding="utf-8").endswith("      gpu_memory_utilization:\t0.5\n")
