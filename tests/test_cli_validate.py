"""Tests of ``rl-contracts validate``, ``rules``, ``schema`` and ``--version`` (SPEC §1.8, PREFLIGHT.md §1).

Fixtures: ``tests/data/cli/base.yaml`` passes every check (preflight included); its children each break one thing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rl_contracts import __version__
from rl_contracts.cli import main
from rl_contracts.cli.report import NO_ALGORITHM, OUT_OF_SCOPE, shown_path
from rl_contracts.cli.validate import validate_files
from rl_contracts.config.rules.registry import RULES as CODES
from rl_contracts.config.section.json_schema import generation_json_schema, recipe_json_schema

CLI = Path(__file__).parent / "data" / "cli"
RECIPES = Path(__file__).parent / "data" / "recipes"
BUNDLED = Path(__file__).parents[1] / "src" / "rl_contracts" / "recipes" / "grpo_qwen3_moe.yaml"
VALID = str(CLI / "base.yaml")
CHILD = str(CLI / "child_recipe.yaml")
DEAD = str(CLI / "dead_key.yaml")
UNKNOWN = str(CLI / "unknown_key.yaml")
EVAL = str(CLI / "eval.yaml")
SKIPPED = str(RECIPES / "sft_llama.yaml")
SYNTAX = str(RECIPES / "broken" / "syntax_error.yaml")
ISSUE_KEYS = ["severity", "code", "path", "value", "missing", "reason", "source", "line"]
REPORT_KEYS = ["file", "section", "status", "entrypoint", "algorithm", "issues", "skipped"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    """Run the CLI in-process and return its exit status and stdout."""
    status = main(list(argv))
    return status, capsys.readouterr().out


def plain(text: str) -> str:
    """``text`` without ANSI escape sequences (bold, dim: ``NO_COLOR`` keeps styles that are not colours)."""
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[dict[str, Any]]]:
    """Run ``validate --format json`` and return the exit status and the parsed array."""
    status, out = run(capsys, "validate", "--format", "json", *argv)
    parsed = json.loads(out)
    assert isinstance(parsed, list)
    return status, parsed


def line_of(path: str, fragment: str) -> int:
    """The 1-based line of ``path`` that contains ``fragment``."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return next(number for number, line in enumerate(lines, start=1) if fragment in line)


def child(tmp_path: Path, text: str, name: str = "r.yaml") -> str:
    """Write a child recipe of base.yaml whose body is ``text`` (YAML) and return its path (base.yaml is copied
    beside it: a parent outside the recipe's folder would be refused as V7)."""
    path = tmp_path / name
    if not (tmp_path / "base.yaml").exists():
        shutil.copyfile(VALID, tmp_path / "base.yaml")
    path.write_text(f"defaults: base.yaml\n{text}", encoding="utf-8")
    return str(path)


# ---------------------------------------------------------------------------------------------- exit codes


@pytest.mark.parametrize(
    ("files", "status"),
    [
        ([VALID], 0),
        ([SKIPPED], 0),
        ([DEAD], 0),
        ([UNKNOWN], 0),
        ([EVAL], 0),
        ([VALID, SKIPPED, DEAD], 0),
        ([CHILD], 1),
        ([VALID, CHILD], 1),
        ([SYNTAX], 2),
        ([str(RECIPES / "absent.yaml")], 2),
        ([str(RECIPES)], 2),
        ([CHILD, SYNTAX, VALID], 2),
        ([str(RECIPES / "broken" / "cycle_a.yaml")], 2),
        ([str(RECIPES / "broken" / "missing_parent.yaml")], 2),
    ],
)
@pytest.mark.parametrize("fmt", ["human", "json", "github"])
def test_exit_status(capsys: pytest.CaptureFixture[str], files: list[str], status: int, fmt: str) -> None:
    """2 for any load error, else 1 for any invalid file, else 0, in every output format."""
    assert run(capsys, "validate", "--format", fmt, *files)[0] == status


def test_strict_fails_on_unknown_keys_not_on_dead_ones(capsys: pytest.CaptureFixture[str]) -> None:
    """``--strict`` makes the unknown key K2 an error (exit 1); a dead key (W2) and a skipped file stay passing."""
    assert run(capsys, "validate", "--strict", UNKNOWN)[0] == 1
    assert run(capsys, "validate", "--strict", DEAD)[0] == 0
    assert run(capsys, "validate", "--strict", SKIPPED)[0] == 0


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    """``--version`` prints ``rl-contracts {version}`` and exits 0."""
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out == f"rl-contracts {__version__}\n"


# ---------------------------------------------------------------------------------------------- usage errors


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["validate"], "the following arguments are required: FILE"),
        (["validate", "--section", "", VALID], "argument --section: expected a dotted path"),
        (["validate", "--section", "policy..generation", VALID], "got 'policy..generation'"),
        (["validate", "--bogus", VALID], "unrecognized arguments: --bogus"),
        (["validate", "--format", "xml", VALID], "argument --format: invalid choice: 'xml'"),
        (["validate", "--json", "--format", "github", VALID], "not allowed with argument"),
        (["validate", "--set", "noequals", VALID], "argument --set: expected KEY=VALUE"),
        (["validate", "--set", "=1", VALID], "got '=1'"),
        (["validate", "--set", "a..b=1", VALID], "got 'a..b=1'"),
        (["validate", "--entrypoint", "sft", VALID], "argument --entrypoint: invalid choice: 'sft'"),
        (
            ["validate", "--vllm-version", "latest", VALID],
            "expected a vLLM version X.Y such as 0.32, got 'latest'",
        ),
        (["validate", "--vllm-version", "0", VALID], "got '0'"),
        (["validate", "--gpu-capability", "9", VALID], "expected a compute capability MAJOR.MINOR"),
        (["validate", "--gpu-capability", "sm90", VALID], "got 'sm90'"),
        (["validate", "--select", "X9", VALID], "unknown code 'X9'"),
        (["validate", "--select", "P99", VALID], "unknown code 'P99'"),
        (["validate", "--ignore", "P,Q", VALID], "unknown code 'Q'"),
        (["validate", "--ignore", ",", VALID], "expected codes such as P7,W"),
        (["rules", "--format", "github"], "argument --format: invalid choice: 'github'"),
        (["schema", "--recipe", "--bogus"], "unrecognized arguments: --bogus"),
        (["schema", "extra"], "unrecognized arguments: extra"),
        (["nonsense"], "invalid choice: 'nonsense'"),
        ([], "the following arguments are required: COMMAND"),
    ],
)
def test_invalid_arguments_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str], fragment: str) -> None:
    """Bad usage exits with status 2 and a usage message naming the argument and the bad value, no traceback."""
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "usage:" in err
    assert fragment in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (None, "cannot read"),
        ("{not json", "is not JSON"),
        ("[1, 2]", "must hold a JSON object (a Hugging Face config.json), got a list"),
    ],
)
def test_bad_model_config_exits_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str | None, fragment: str
) -> None:
    """``--model-config`` must name a readable JSON object; anything else is a usage error naming the file."""
    path = tmp_path / "config.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(SystemExit) as info:
        main(["validate", "--model-config", str(path), VALID])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "argument --model-config" in err
    assert fragment in err
    assert str(path) in err


# ---------------------------------------------------------------------------------------------- JSON output


def test_json_report_shape(capsys: pytest.CaptureFixture[str]) -> None:
    """One object per file in argument order with the report keys; every issue has code, source and line."""
    files = [VALID, CHILD, SKIPPED, SYNTAX, EVAL]
    status, reports = run_json(capsys, *files)
    assert status == 2
    assert [r["file"] for r in reports] == files
    assert [r["status"] for r in reports] == ["valid", "invalid", "skipped", "error", "valid"]
    assert [r["section"] for r in reports] == [
        "policy.generation",
        "policy.generation",
        "policy.generation",
        "policy.generation",
        "generation",
    ]
    for report in reports:
        assert list(report) == REPORT_KEYS
        for issue in report["issues"]:
            assert list(issue) == ISSUE_KEYS
            assert isinstance(issue["code"], str)
            assert issue["code"] in {code.code for code in CODES}
    assert reports[0]["issues"] == []
    assert reports[0]["entrypoint"] == "grpo"
    assert [r["algorithm"] for r in reports] == ["grpo", "grpo", None, None, None]


def test_json_child_issues_have_provenance(capsys: pytest.CaptureFixture[str]) -> None:
    """The child's own mistakes point at its lines; the inherited value preflight rejects points at the parent."""
    _, [report] = run_json(capsys, CHILD)
    by_path = {issue["path"]: issue for issue in report["issues"]}
    typo = by_path["policy.generation.vllm_cfg.gpu_memory_utilisation"]
    assert (typo["code"], typo["severity"], typo["value"], typo["missing"]) == ("K1", "error", 0.3, False)
    assert (typo["source"], typo["line"]) == (CHILD, line_of(CHILD, "gpu_memory_utilisation"))
    assert "did you mean 'gpu_memory_utilization'?" in typo["reason"]
    misplaced = by_path["policy.generation.vllm_cfg.limit_mm_per_prompt"]
    assert (misplaced["code"], misplaced["value"]) == ("P28", {"image": 2})
    assert (misplaced["source"], misplaced["line"]) == (CHILD, line_of(CHILD, "limit_mm_per_prompt"))
    assert "policy.generation.vllm_kwargs.limit_mm_per_prompt" in misplaced["reason"]
    batch = by_path["policy.train_global_batch_size"]
    assert (batch["code"], batch["value"]) == ("P9", 512)
    assert os.path.samefile(batch["source"], VALID)
    assert batch["line"] == line_of(VALID, "train_global_batch_size")
    assert "64 x 16 = 1024" in batch["reason"]


def test_json_values_are_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Values keep their JSON type: numbers, null, objects; never Python ``repr`` strings."""
    misplaced = child(
        tmp_path, "policy:\n  generation:\n    vllm_cfg:\n      limit_mm_per_prompt: {audio: 1}\n"
    )
    dead = child(
        tmp_path, "policy:\n  generation:\n    vllm_cfg:\n      enforce_monotonicity: null\n", "d.yaml"
    )
    schema = child(tmp_path, "policy:\n  generation:\n    stop_token_ids: [1, -2]\n", "s.yaml")
    _, reports = run_json(capsys, misplaced, dead, schema)
    values = [[(i["path"].rsplit(".", 1)[-1], i["value"]) for i in report["issues"]] for report in reports]
    assert values == [
        [("limit_mm_per_prompt", {"audio": 1})],
        [("enforce_monotonicity", None)],
        [("stop_token_ids[1]", -2)],
    ]
    assert [i["missing"] for report in reports for i in report["issues"]] == [False, False, False]


def test_json_missing_key(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A required key that is absent is reported with value null, ``missing: true`` and no line."""
    base = Path(VALID).read_text(encoding="utf-8").replace("  use_multiple_dataloader: false\n", "")
    path = tmp_path / "r.yaml"
    path.write_text(base, encoding="utf-8")
    _, [report] = run_json(capsys, str(path))
    [issue] = [i for i in report["issues"] if i["path"] == "data.use_multiple_dataloader"]
    assert (issue["code"], issue["value"], issue["missing"], issue["line"]) == ("P1", None, True, None)


def test_json_load_error_is_one_v1_issue(capsys: pytest.CaptureFixture[str]) -> None:
    """A load error is a single V1 error issue with an empty path, at the file and line of the syntax error."""
    _, [report] = run_json(capsys, SYNTAX)
    [issue] = report["issues"]
    assert (issue["code"], issue["severity"], issue["path"]) == ("V1", "error", "")
    assert (issue["source"], issue["line"]) == (SYNTAX, 6)
    assert "line 6, column 16" in issue["reason"]
    assert report["skipped"] == []


def test_json_alias(capsys: pytest.CaptureFixture[str]) -> None:
    """``--json`` prints exactly what ``--format json`` prints."""
    _, aliased = run(capsys, "validate", "--json", CHILD, VALID)
    _, explicit = run(capsys, "validate", "--format", "json", CHILD, VALID)
    assert aliased == explicit
    assert aliased == json.dumps(json.loads(aliased), indent=2) + "\n"


def test_skipped_rules_in_json(capsys: pytest.CaptureFixture[str]) -> None:
    """Rules that need an input nobody gave are listed as skipped with their reason; they never fail the run."""
    status, [report] = run_json(capsys, VALID)
    assert status == 0
    codes = [rule["code"] for rule in report["skipped"]]
    assert "N7" in codes
    [n7] = [rule for rule in report["skipped"] if rule["code"] == "N7"]
    assert "--model-config" in n7["reason"]
    assert list(n7) == ["code", "path", "reason"]


# ---------------------------------------------------------------------------------------------- preflight options


def codes_of(capsys: pytest.CaptureFixture[str], *argv: str) -> list[str]:
    """The issue codes of one file's JSON report."""
    _, [report] = run_json(capsys, *argv)
    return [issue["code"] for issue in report["issues"]]


def skipped_of(capsys: pytest.CaptureFixture[str], *argv: str) -> list[str]:
    """The skipped-rule codes of one file's JSON report."""
    _, [report] = run_json(capsys, *argv)
    return [rule["code"] for rule in report["skipped"]]


def test_set_overrides_apply_after_composition(capsys: pytest.CaptureFixture[str]) -> None:
    """``--set`` changes the composed recipe before validation, as the launcher's overrides do."""
    status, [report] = run_json(capsys, "--set", "policy.generation.vllm_cfg.tensor_parallel_size=3", VALID)
    assert status == 1
    assert [(i["code"], i["path"], i["value"]) for i in report["issues"] if i["code"] == "P17"] == [
        ("P17", "policy.generation.vllm_cfg.tensor_parallel_size", 3)
    ]
    fixed = ["--set", "policy.train_global_batch_size=1024"]
    assert "P9" not in codes_of(capsys, *fixed, CHILD)
    later = ["--set", "++grpo.batch_multiplier=1.5", "--set", "++grpo.batch_multiplier=1"]
    assert run(capsys, "validate", *later, VALID)[0] == 0
    assert "P7" in codes_of(capsys, "--set", "++grpo.batch_multiplier=1.5", VALID)


def test_a_set_value_is_reported_at_set(capsys: pytest.CaptureFixture[str]) -> None:
    """An issue at a value ``--set`` wrote has source ``--set`` (JSON, human); github puts it on the recipe."""
    setting = ["--set", "policy.generation.top_p=3", VALID]
    _, [report] = run_json(capsys, *setting)
    (issue,) = [i for i in report["issues"] if i["path"] == "policy.generation.top_p"]
    assert (issue["code"], issue["source"], issue["line"]) == ("C1", "--set", None)
    _, out = run(capsys, "validate", *setting)
    (row,) = [line for line in out.splitlines() if "policy.generation.top_p " in line]
    assert row.split()[:4] == ["error", "C1", "policy.generation.top_p", "--set"]
    _, out = run(capsys, "validate", "--format", "github", *setting)
    assert f"::error file={shown_path(VALID)},title=rl-contracts C1::policy.generation.top_p: " in out


def test_set_of_an_absent_key_is_k1_with_the_other_issues(capsys: pytest.CaptureFixture[str]) -> None:
    """``KEY=VALUE`` for a key the recipe lacks is not applied and is K1 (exit 1, issue 24), suggesting ``++`` and
    the close key, reported with the recipe's other issues."""
    status, [report] = run_json(
        capsys, "--set", "policy.generation.top_pp=0.5", "--set", "policy.generation.top_p=3", VALID
    )
    assert (status, report["status"]) == (1, "invalid")
    issues = {issue["path"]: issue for issue in report["issues"]}
    missing = issues["policy.generation.top_pp"]
    assert (missing["code"], missing["source"], missing["value"]) == (
        "K1",
        "--set",
        "policy.generation.top_pp=0.5",
    )
    assert "use ++ to add a key" in missing["reason"]
    assert "did you mean 'top_p'?" in missing["reason"]
    assert issues["policy.generation.top_p"]["code"] == "C1"


def test_entrypoint_option(capsys: pytest.CaptureFixture[str]) -> None:
    """``--entrypoint grpo-sc`` applies the single-controller rules (P24 needs data_plane.enabled)."""
    assert "P24" in codes_of(capsys, "--entrypoint", "grpo-sc", VALID)
    assert "P24" not in codes_of(capsys, "--entrypoint", "grpo", VALID)


def test_ignore_tp_accuracy_check(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """P19 (TP >= 4 with different micro and logprob batch sizes) fires, and the flag bypasses it."""
    path = child(
        tmp_path, "policy:\n  dtensor_cfg:\n    tensor_parallel_size: 4\n  train_micro_batch_size: 2\n"
    )
    assert "P19" in codes_of(capsys, path)
    assert "P19" not in codes_of(capsys, "--ignore-tp-accuracy-check", path)


def test_model_config_and_gpu_capability_unlock_n_rules(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Without ``--model-config`` N7 is skipped; with a dense model's config.json it runs (and passes)."""
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2"}), encoding="utf-8"
    )
    assert "N7" in skipped_of(capsys, VALID)
    assert "N7" not in skipped_of(capsys, "--model-config", str(config), VALID)
    assert run(capsys, "validate", "--model-config", str(config), "--gpu-capability", "9.0", VALID)[0] == 0


def test_vllm_version_option(capsys: pytest.CaptureFixture[str]) -> None:
    """Without a vLLM version P21's version-dependent part of a router-replay recipe is skipped; 0.32 runs it."""
    r3 = str(RECIPES / "router_replay.yaml")
    assert "P21" in skipped_of(capsys, r3)
    assert "P21" not in skipped_of(capsys, "--vllm-version", "0.32", r3)
    assert "P21" in codes_of(capsys, "--vllm-version", "0.32", r3)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], ["K1", "P28", "P9"]),
        (["--select", "K"], ["K1"]),
        (["--select", "P9,K1"], ["K1", "P9"]),
        (["--select", "P", "--select", "K"], ["K1", "P28", "P9"]),
        (["--ignore", "K,P9"], ["P28"]),
        (["--select", "K,P", "--ignore", "K1,P28"], ["P9"]),
    ],
)
def test_select_and_ignore(capsys: pytest.CaptureFixture[str], argv: list[str], expected: list[str]) -> None:
    """``--select``/``--ignore`` filter issues by code or family; repeated options accumulate; ignore wins."""
    assert codes_of(capsys, *argv, CHILD) == expected


def test_ignoring_every_error_passes(capsys: pytest.CaptureFixture[str]) -> None:
    """A file whose every error is ignored is valid (exit 0), and ignored skipped rules are not listed."""
    assert run(capsys, "validate", "--ignore", "K1,P28,P9", CHILD)[0] == 0
    assert skipped_of(capsys, "--ignore", "N", CHILD) == []


# ---------------------------------------------------------------------------------------------- github output


def test_github_commands(capsys: pytest.CaptureFixture[str]) -> None:
    """One workflow command per issue at its source file and line, a notice per skipped rule, then the summary."""
    status, out = run(capsys, "validate", "--format", "github", CHILD)
    assert status == 1
    lines = out.splitlines()
    typo_line = line_of(CHILD, "gpu_memory_utilisation")
    assert (
        f"::error file={shown_path(CHILD)},line={typo_line},title=rl-contracts K1::"
        "policy.generation.vllm_cfg.gpu_memory_utilisation: "
    ) in "\n".join(lines)
    batch = [line for line in lines if "title=rl-contracts P9" in line]
    assert batch == [
        f"::error file={shown_path(VALID)},line={line_of(VALID, 'train_global_batch_size')},title=rl-contracts P9::"
        + batch[0].split("::", 2)[2]
    ]
    assert batch[0].split("::", 2)[2].startswith("policy.train_global_batch_size: ")
    assert any(
        line.startswith(f"::notice file={shown_path(CHILD)},title=rl-contracts N7 skipped::")
        for line in lines
    )
    assert lines[-1].startswith("1 file: 1 invalid; ")
    assert all(line.startswith(("::error ", "::warning ", "::notice ")) for line in lines[:-1])


def test_github_escaping(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Properties escape ``%``, ``:``, ``,``, CR and LF; messages escape ``%``, CR and LF (GitHub's rules)."""
    folder = tmp_path / "a,b:c%d"
    folder.mkdir()
    path = child(folder, "policy:\n  generation:\n    vllm_cfg:\n      'odd%key': 1\n")
    _, out = run(capsys, "validate", "--format", "github", path)
    [warning] = [line for line in out.splitlines() if line.startswith("::warning ")]
    assert "a%2Cb%3Ac%25d" in warning.split("::")[1]
    assert "policy.generation.vllm_cfg.odd%25key: " in warning
    assert "%0A" not in warning.split("::")[1]


def test_github_load_error(capsys: pytest.CaptureFixture[str]) -> None:
    """A syntax error annotates the line of the file where it is, with code V1 and the reason as message."""
    _, out = run(capsys, "validate", "--format", "github", SYNTAX)
    first = out.splitlines()[0]
    assert first.startswith(
        f"::error file={shown_path(SYNTAX)},line=6,title=rl-contracts V1::{SYNTAX}: YAML syntax"
    )


# ---------------------------------------------------------------------------------------------- human output


def test_human_piped_output(capsys: pytest.CaptureFixture[str]) -> None:
    """Piped: a header per file, one line per issue and skipped rule (never wrapped), the summary last."""
    status, out = run(capsys, "validate", VALID, CHILD, SKIPPED, SYNTAX)
    assert status == 2
    lines = out.splitlines()
    headers = [line.split()[0] for line in lines if line.split() and line.split()[0].isupper()]
    assert headers == ["VALID", "INVALID", "SKIPPED", "ERROR"]
    assert (
        lines[-1]
        == "4 files: 1 valid, 1 invalid, 1 skipped, 1 unreadable; 4 errors, 1 warning, 5 rules skipped"
    )
    assert "\x1b[" not in out
    assert "Traceback" not in out
    columns = next(line for line in lines if line.startswith("severity"))
    assert columns.split() == ["severity", "code", "path", "source", "value", "reason"]


def test_human_piped_rows_are_one_line_each(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A long path, value and reason stay on their row's single line (no wrap, no cut), whatever COLUMNS says."""
    key = "k" * 150
    path = child(
        tmp_path,
        f"policy:\n  generation:\n    vllm_cfg:\n      {key}: '{'v' * 80}'\n",
        name="x" * 120 + ".yaml",
    )
    os.environ["COLUMNS"] = "40"
    try:
        _, out = run(capsys, "validate", path)
    finally:
        del os.environ["COLUMNS"]
    lines = out.splitlines()
    assert lines[0].startswith(f"VALID    {path}  [policy.generation]  algorithm: grpo  1 warning")
    [row] = [line for line in lines if line.startswith("warning ")]
    assert f"policy.generation.vllm_cfg.{key}" in row
    assert repr("v" * 80) in row
    assert row.endswith("unknown key (not validated)")
    assert f"{path}:{line_of(path, key)}" in row
    assert "…" not in out


def test_human_columns_are_aligned_when_piped(capsys: pytest.CaptureFixture[str]) -> None:
    """Each column of the piped table starts at the same offset on every row."""
    _, out = run(capsys, "validate", CHILD)
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("severity"))
    header = lines[start]
    rows = [line for line in lines[start + 1 :] if line.startswith(("error ", "warning "))]
    assert len(rows) == 3
    for column in ("code", "path", "source", "value"):
        offset = header.index(column)
        assert all(row[offset - 2 : offset] == "  " and row[offset] != " " for row in rows), column


def test_human_header_counts(capsys: pytest.CaptureFixture[str]) -> None:
    """The header is the padded status, the file, the section, the algorithm, and the error, warning and skipped
    counts."""
    _, out = run(capsys, "validate", CHILD)
    assert (
        out.splitlines()[0]
        == f"INVALID  {CHILD}  [policy.generation]  algorithm: grpo  3 errors, 2 rules skipped"
    )
    _, out = run(capsys, "validate", SYNTAX)
    assert out.splitlines()[0] == f"ERROR    {SYNTAX}"


def test_an_invalid_file_reports_its_section_and_entrypoint(capsys: pytest.CaptureFixture[str]) -> None:
    """An invalid evaluation config is shown at ``[generation]``; an invalid GRPO recipe has its entrypoint."""
    bad_eval = ["--set", "generation.top_p=2.0", EVAL]
    _, [report] = run_json(capsys, *bad_eval)
    assert (report["status"], report["section"], report["entrypoint"]) == ("invalid", "generation", None)
    _, out = run(capsys, "validate", *bad_eval)
    assert out.splitlines()[0].startswith(f"INVALID  {EVAL}  [generation]  ")
    _, [report] = run_json(capsys, CHILD)
    assert (report["status"], report["section"], report["entrypoint"]) == (
        "invalid",
        "policy.generation",
        "grpo",
    )
    _, [report] = run_json(capsys, "--entrypoint", "grpo-sc", CHILD)
    assert report["entrypoint"] == "grpo-sc"


def test_out_of_scope_note(capsys: pytest.CaptureFixture[str]) -> None:
    """A valid or skipped file that is not a GRPO recipe says that preflight skipped it; a GRPO recipe does not."""
    _, out = run(capsys, "validate", EVAL, SKIPPED, VALID)
    headers = [line for line in out.splitlines() if line.startswith(("VALID", "SKIPPED"))]
    assert headers[0] == f"VALID    {EVAL}  [generation]  {NO_ALGORITHM}  1 rule skipped  {OUT_OF_SCOPE}"
    assert headers[1].endswith(f"  1 warning, 1 rule skipped  {OUT_OF_SCOPE}")
    assert OUT_OF_SCOPE == "not a GRPO recipe: preflight skipped"
    assert headers[2] == f"VALID    {VALID}  [policy.generation]  algorithm: grpo  2 rules skipped"


def test_every_format_names_the_algorithm(capsys: pytest.CaptureFixture[str]) -> None:
    """Each file says which algorithm it was checked as: detected (``algorithm: grpo``, JSON ``"grpo"``), given
    with ``--algorithm`` (also for an invalid file), or none for a fragment (``no algorithm``, JSON ``null``)."""
    _, reports = run_json(capsys, VALID, SKIPPED)
    assert [(r["status"], r["algorithm"]) for r in reports] == [("valid", "grpo"), ("skipped", None)]
    _, [given] = run_json(capsys, "--algorithm", "sft", SKIPPED)
    assert (given["status"], given["algorithm"]) == ("invalid", "sft")
    assert "N8" not in {note["code"] for note in given["skipped"]}
    _, out = run(capsys, "validate", "--algorithm", "sft", SKIPPED)
    assert out.splitlines()[0].startswith(f"INVALID  {SKIPPED}  [policy.generation]  algorithm: sft  ")
    _, out = run(capsys, "validate", SKIPPED)
    assert out.splitlines()[0].startswith(f"SKIPPED  {SKIPPED}  [policy.generation]  {NO_ALGORITHM}  ")


def test_a_fragment_says_the_whole_recipe_checks_were_skipped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A recipe that is no algorithm's whole recipe gets the skipped note N8 (it never fails the run), naming the
    algorithm its sections suggest and the sections it lacks; ``--ignore N8`` silences it."""
    _, [report] = run_json(capsys, SKIPPED)
    [note] = [note for note in report["skipped"] if note["code"] == "N8"]
    assert note["path"] is None
    assert note["reason"] == (
        "no algorithm detected: the sections of sft lack cluster, checkpointing, logger (a fragment): "
        "whole-recipe checks skipped (pass --algorithm sft to run them)"
    )
    bare = tmp_path / "generation_only.yaml"
    bare.write_text("policy:\n  generation:\n    backend: sglang\n", encoding="utf-8")
    status, [report] = run_json(capsys, str(bare))
    assert (status, report["algorithm"]) == (0, None)
    assert [note["reason"] for note in report["skipped"] if note["code"] == "N8"] == [
        "no algorithm detected from the top-level sections: whole-recipe checks skipped "
        "(pass --algorithm NAME to run them)"
    ]
    _, [report] = run_json(capsys, "--ignore", "N8", str(bare))
    assert report["skipped"] == []
    _, out = run(capsys, "validate", "--format", "github", str(bare))
    assert "::notice file=" in out
    assert "title=rl-contracts N8 skipped::no algorithm detected" in out


def test_human_summary_for_one_file(capsys: pytest.CaptureFixture[str]) -> None:
    """Even one file gets the summary line, warnings counted."""
    _, out = run(capsys, "validate", DEAD)
    assert out.splitlines()[-1] == "1 file: 1 valid; 0 errors, 1 warning, 2 rules skipped"


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make rich treat the captured stdout as a colourless terminal."""
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("TERM", "xterm")


@pytest.mark.usefixtures("terminal")
@pytest.mark.parametrize("columns", [40, 60, 100, 160])
def test_terminal_output_fits_the_width(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, columns: int
) -> None:
    """On a terminal no line is wider than ``COLUMNS`` and every word of every reason is still printed."""
    monkeypatch.setenv("COLUMNS", str(columns))
    _, out = run(capsys, "validate", CHILD, str(RECIPES / "broken" / "unresolved.yaml"))
    out = plain(out)
    assert max(len(line.rstrip()) for line in out.splitlines()) <= columns
    flat = re.sub(r"\s+", "", out)
    for word in ("gpu_memory_utilization", "1024", "mandatory"):
        assert word in flat


@pytest.mark.usefixtures("terminal")
def test_terminal_table_has_every_column(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """From 100 columns the terminal table has severity, code, path/source, value and reason columns."""
    monkeypatch.setenv("COLUMNS", "140")
    out = plain(run(capsys, "validate", CHILD)[1])
    assert out.splitlines()[1].split() == ["severity", "code", "path", "/", "source", "value", "reason"]
    assert any(line.startswith("error      K1") for line in out.splitlines())


@pytest.mark.usefixtures("terminal")
def test_narrow_terminal_stacks_the_cells(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Below 100 columns each issue is stacked: severity, code and path, then at:, value: and reason: lines."""
    monkeypatch.setenv("COLUMNS", "99")
    out = plain(run(capsys, "validate", CHILD)[1])
    assert "error   K1 policy.generation.vllm_cfg.gpu_memory_utilisation" in out
    assert f"at:     {shown_path(CHILD)}:{line_of(CHILD, 'gpu_memory_utilisation')}" in out
    assert "value:  0.3" in out
    assert "skipped N7" in out


# ---------------------------------------------------------------------------------------------- rules and schema


def test_rules_lists_every_code(capsys: pytest.CaptureFixture[str]) -> None:
    """``rules`` prints a heading and one line per catalogue code, in order, with summary and reference."""
    status, out = run(capsys, "rules")
    assert status == 0
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["code", "severity", "summary"]
    assert [line.split()[0] for line in lines[1:]] == [code.code for code in CODES]
    for line, code in zip(lines[1:], CODES, strict=True):
        assert line.endswith(f"{code.summary} [{code.reference}]")
        assert line.split()[1] == code.severity
    assert {"V1", "C1", "R2", "K1", "K2", "P1", "P28", "W1", "W2", "N7"} <= {code.code for code in CODES}


def test_rules_markdown(capsys: pytest.CaptureFixture[str]) -> None:
    """``rules --format markdown`` prints a heading row, a rule and one row per code, ``|`` escaped."""
    _, out = run(capsys, "rules", "--format", "markdown")
    lines = out.splitlines()
    assert lines[:2] == ["| Code | Severity | Finding | Checked by the reference |", "|---|---|---|---|"]
    assert [line.split(" | ")[0].removeprefix("| ") for line in lines[2:]] == [code.code for code in CODES]
    assert (
        lines[2] == f"| {CODES[0].code} | {CODES[0].severity} | {CODES[0].summary} | {CODES[0].reference} |"
    )


def test_rules_json(capsys: pytest.CaptureFixture[str]) -> None:
    """``rules --format json`` is one array of {code, severity, summary, reference, ...} in catalogue order, each
    with the rule's name and the four parts of its documentation."""
    _, out = run(capsys, "rules", "--format", "json")
    listed = json.loads(out)
    assert [
        {key: entry[key] for key in ("code", "severity", "summary", "reference")} for entry in listed
    ] == [
        {"code": c.code, "severity": c.severity, "summary": c.summary, "reference": c.reference}
        for c in CODES
    ]
    assert [(entry["name"], entry["fix"]) for entry in listed] == [(c.name, c.fix) for c in CODES]


@pytest.mark.parametrize(
    ("argv", "expected"), [([], generation_json_schema()), (["--recipe"], recipe_json_schema())]
)
def test_schema_prints_the_sorted_json_schema(
    capsys: pytest.CaptureFixture[str], argv: list[str], expected: dict[str, Any]
) -> None:
    """``schema`` and ``schema --recipe`` print their schema, indent 2, sorted keys, with $schema and $id; exit 0."""
    status, out = run(capsys, "schema", *argv)
    assert status == 0
    assert out == json.dumps(expected, indent=2, sort_keys=True) + "\n"
    assert json.loads(out)["$schema"] == "https://json-schema.org/draft/2020-12/schema"


# ---------------------------------------------------------------------------------------------- console script


def _console_script() -> str:
    found = shutil.which("rl-contracts", path=os.path.dirname(sys.executable)) or shutil.which("rl-contracts")
    if found is None:
        pytest.skip("the rl-contracts console script is not installed")
    return found


def test_installed_console_script_validates_the_bundled_recipe() -> None:
    """The installed ``rl-contracts`` script validates the shipped recipe: exit 0 and a VALID header."""
    done = subprocess.run(
        [_console_script(), "validate", str(BUNDLED)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("VALID")
    assert done.stderr == ""


@pytest.mark.parametrize("argv", [["--version"], ["-m", "rl_contracts.cli", "--version"]])
def test_version_through_the_script_and_module(argv: list[str]) -> None:
    """``rl-contracts --version`` and ``python -m rl_contracts.cli --version`` print the version and exit 0."""
    command = [_console_script(), *argv] if argv[0] != "-m" else [sys.executable, *argv]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"rl-contracts {__version__}\n", "")


def test_installed_console_script_never_prints_a_traceback(tmp_path: Path) -> None:
    """Bad input through the real script exits 2 with a one-line reason and no traceback."""
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"policy:\n  generation: [1\n")
    done = subprocess.run(
        [_console_script(), "validate", str(bad), str(tmp_path / "absent.yaml")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stdout + done.stderr
    assert "YAML syntax error at line 3, column 1" in done.stdout
    assert "no such file" in done.stdout


def test_closed_pipe_ends_quietly() -> None:
    """When the reader of stdout has gone, the script ends with its exit status and no traceback."""
    with subprocess.Popen(
        [_console_script(), "validate", VALID, CHILD],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdout is not None
        assert proc.stderr is not None
        proc.stdout.close()
        err = proc.stderr.read()
        assert proc.wait(timeout=120) == 1
    assert err == ""


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["validate", VALID], 0),
        (["validate", CHILD], 1),
        (["validate", "--json", CHILD], 1),
        (["validate", "--format", "github", CHILD], 1),
        (["schema"], 0),
        (["rules"], 0),
    ],
)
def test_closed_stdout_is_redirected_to_devnull(
    monkeypatch: pytest.MonkeyPatch, argv: list[str], expected: int
) -> None:
    """When the reader of stdout has gone, every format still returns its exit status and stdout now points at
    the null device, so the interpreter's final flush cannot fail."""
    read_fd, write_fd = os.pipe()
    os.close(read_fd)
    with os.fdopen(write_fd, "w") as stream:
        monkeypatch.setattr(sys, "stdout", stream)
        status = main(argv)
        assert os.path.samestat(os.fstat(write_fd), os.stat(os.devnull))
        stream.write("more output\n")
        stream.flush()
        monkeypatch.undo()
    assert status == expected


def test_validate_files_defaults() -> None:
    """``validate_files`` is not strict by default and reports the section it was asked for, even for errors."""
    [unknown] = validate_files([UNKNOWN])
    assert (unknown.section, unknown.status, [i.code for i in unknown.issues]) == (
        "policy.generation",
        "valid",
        ["K2"],
    )
    reports = validate_files([SYNTAX], section="other.generation")
    assert [(r.section, r.status) for r in reports] == [("other.generation", "error")]
