"""Tests of ``rl-contracts validate`` and ``rl-contracts schema`` (SPEC §1.8): output formats and exit codes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rl_contracts.cli import main
from rl_contracts.cli.validate import validate_files
from rl_contracts.config import VllmConfig, config_json_schema
from rl_contracts.testing.strategies import minimal_vllm_generation

DATA = Path(__file__).parent / "data" / "recipes"
BUNDLED = Path(__file__).parents[1] / "src" / "rl_contracts" / "recipes" / "grpo_qwen3_moe.yaml"
VALID = str(DATA / "grpo_base.yaml")
INVALID = str(DATA / "broken" / "schema_errors.yaml")
SYNTAX = str(DATA / "broken" / "syntax_error.yaml")
SKIPPED = str(DATA / "sft_llama.yaml")
TYPO = str(DATA / "broken" / "typo_key.yaml")
ISSUE_KEYS = ["severity", "path", "value", "reason"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    """Run the CLI in-process and return its exit status and stdout."""
    status = main(list(argv))
    return status, capsys.readouterr().out


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[dict[str, Any]]]:
    """Run ``validate --json`` and return the exit status and the parsed array."""
    status, out = run(capsys, "validate", "--json", *argv)
    parsed = json.loads(out)
    assert isinstance(parsed, list)
    return status, parsed


# ---------------------------------------------------------------------------------------------- exit codes


@pytest.mark.parametrize(
    ("files", "status"),
    [
        ([VALID], 0),
        ([SKIPPED], 0),
        ([TYPO], 0),
        ([VALID, SKIPPED, TYPO], 0),
        ([INVALID], 1),
        ([VALID, INVALID], 1),
        ([SYNTAX], 2),
        ([str(DATA / "absent.yaml")], 2),
        ([str(DATA)], 2),
        ([INVALID, SYNTAX, VALID], 2),
        ([str(DATA / "broken" / "cycle_a.yaml")], 2),
        ([str(DATA / "broken" / "missing_parent.yaml")], 2),
        ([str(DATA / "broken" / "list_section.yaml")], 2),
    ],
)
@pytest.mark.parametrize("as_json", [False, True])
def test_exit_status(
    capsys: pytest.CaptureFixture[str], files: list[str], status: int, as_json: bool
) -> None:
    """2 for any load error, else 1 for any invalid file, else 0, in both output formats."""
    assert run(capsys, "validate", *(["--json"] if as_json else []), *files)[0] == status


def test_strict_fails_on_unknown_keys(capsys: pytest.CaptureFixture[str]) -> None:
    """``--strict`` turns the typo warning into an error (exit 1) but never fails a skipped file."""
    assert run(capsys, "validate", "--strict", TYPO)[0] == 1
    assert run(capsys, "validate", "--strict", SKIPPED)[0] == 0


@pytest.mark.parametrize(
    "argv",
    [
        ["validate"],
        ["validate", "--section", "", VALID],
        ["validate", "--section", "policy..generation", VALID],
        ["validate", "--bogus", VALID],
        ["schema", "extra"],
        ["nonsense"],
        [],
    ],
)
def test_invalid_arguments_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    """Bad usage exits with status 2 (argparse) and a usage message on stderr."""
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert "usage:" in capsys.readouterr().err


def test_explicit_section(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """``--section`` selects another dotted path; a missing explicit section is invalid (exit 1)."""
    path = tmp_path / "r.yaml"
    generation = minimal_vllm_generation(val_temperature="${.temperature}")
    path.write_text(json.dumps({"other": {"generation": generation}}))  # JSON is YAML
    status, reports = run_json(capsys, "--section", "other.generation", str(path))
    assert (status, reports[0]["status"], reports[0]["section"]) == (0, "valid", "other.generation")
    status, reports = run_json(capsys, "--section", "policy.generation", str(path))
    assert (status, reports[0]["status"]) == (1, "invalid")
    assert reports[0]["issues"][0]["reason"] == "section policy.generation not found"


# ---------------------------------------------------------------------------------------------- JSON output


def test_json_report_shape(capsys: pytest.CaptureFixture[str]) -> None:
    """``--json`` prints one array with one object per file, in argument order, with the §1.8 keys."""
    files = [VALID, INVALID, SKIPPED, SYNTAX, TYPO]
    status, reports = run_json(capsys, *files)
    assert status == 2
    assert [r["file"] for r in reports] == files
    assert [r["status"] for r in reports] == ["valid", "invalid", "skipped", "error", "valid"]
    for report in reports:
        assert list(report) == ["file", "section", "status", "issues"]
        assert report["section"] == "policy.generation"
        for issue in report["issues"]:
            assert list(issue) == ISSUE_KEYS
            assert all(isinstance(issue[key], str) for key in ISSUE_KEYS)
    assert reports[0]["issues"] == []
    assert {i["path"] for i in reports[1]["issues"]} >= {
        "policy.generation.top_p",
        "policy.generation.stop_token_ids[2]",
    }
    assert reports[2]["issues"] == [
        {
            "severity": "warning",
            "path": "policy.generation",
            "value": "<missing>",
            "reason": "no generation section (not a generation recipe)",
        }
    ]
    assert reports[4]["issues"][0]["reason"].endswith("did you mean 'gpu_memory_utilization'?")


def test_json_load_error_is_one_issue_with_an_empty_path(capsys: pytest.CaptureFixture[str]) -> None:
    """A load error appears as a single error issue whose path is empty and whose reason has line and column."""
    _, reports = run_json(capsys, SYNTAX)
    [issue] = reports[0]["issues"]
    assert (issue["severity"], issue["path"]) == ("error", "")
    assert "line 6, column 16" in issue["reason"]


def test_json_strict_reports_errors(capsys: pytest.CaptureFixture[str]) -> None:
    """Under ``--strict`` the unknown key is an error issue and the file is invalid."""
    status, reports = run_json(capsys, "--strict", TYPO)
    assert (status, reports[0]["status"]) == (1, "invalid")
    assert [i["severity"] for i in reports[0]["issues"]] == ["error"]


# ---------------------------------------------------------------------------------------------- human output


def test_human_report_headers_and_table(capsys: pytest.CaptureFixture[str]) -> None:
    """Each file gets a status header; issues are listed with severity, path, value and reason."""
    status, out = run(capsys, "validate", VALID, INVALID, SKIPPED, SYNTAX)
    assert status == 2
    lines = out.splitlines()
    headers = [line.split()[0] for line in lines if line.split() and line.split()[0].isupper()]
    assert headers == ["VALID", "INVALID", "SKIPPED", "ERROR"]
    for column in ("severity", "path", "value", "reason"):
        assert column in out
    assert "policy.generation.top_p" in out
    assert "line 6, column 16" in out
    assert "4 files: 1 valid, 1 invalid, 1 skipped, 1 unreadable" in out


def test_human_output_has_no_colour_codes_when_piped(capsys: pytest.CaptureFixture[str]) -> None:
    """Captured (non-TTY) output carries no ANSI escape sequences and no traceback."""
    _, out = run(capsys, "validate", VALID, INVALID, SYNTAX, TYPO)
    assert "\x1b[" not in out
    assert "Traceback" not in out


@pytest.mark.parametrize("columns", [40, 60, 100, 160])
def test_human_output_fits_the_terminal_width(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, columns: int
) -> None:
    """No line is wider than ``COLUMNS`` and every word of every reason is still printed."""
    monkeypatch.setenv("COLUMNS", str(columns))
    _, out = run(capsys, "validate", INVALID, str(DATA / "broken" / "unresolved.yaml"))
    assert max(len(line.rstrip()) for line in out.splitlines()) <= columns
    for word in ("filtering.", "top_k=0.", "division", "mandatory"):
        assert word in out


def test_human_output_is_120_columns_when_piped(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without ``COLUMNS`` piped output uses 120 columns, so the table keeps its four columns."""
    monkeypatch.delenv("COLUMNS", raising=False)
    _, out = run(capsys, "validate", INVALID)
    assert max(len(line.rstrip()) for line in out.splitlines()) <= 120
    assert any(line.split()[:3] == ["severity", "path", "value"] for line in out.splitlines() if line.strip())


def test_narrow_layout_stacks_the_columns(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Below 100 columns each issue prints its path, then ``value:`` and ``reason:`` lines."""
    monkeypatch.setenv("COLUMNS", "60")
    _, out = run(capsys, "validate", TYPO)
    assert "policy.generation.vllm_cfg.gpu_memory_utilisation" in out
    assert "value:  0.9" in out
    assert "reason: unknown key (not validated)" in out


# ---------------------------------------------------------------------------------------------- schema


def test_schema_prints_the_sorted_json_schema(capsys: pytest.CaptureFixture[str]) -> None:
    """``schema`` prints VllmConfig's schema by alias in validation mode, indent 2, sorted keys, and exits 0."""
    status, out = run(capsys, "schema")
    assert status == 0
    expected = VllmConfig.model_json_schema(by_alias=True, mode="validation")
    assert json.loads(out) == expected == config_json_schema()
    assert out == json.dumps(expected, indent=2, sort_keys=True) + "\n"
    assert "_pad_token_id" in json.loads(out)["properties"]


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
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("VALID")
    assert done.stderr == ""


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


# ---------------------------------------------------------------------------------------------- details


def write_recipe(tmp_path: Path, name: str, generation: dict[str, Any]) -> str:
    """Write a recipe inheriting grpo_base.yaml whose ``policy.generation`` overrides ``generation``."""
    path = tmp_path / name
    path.write_text(json.dumps({"defaults": VALID, "policy": {"generation": generation}}))
    return str(path)


def test_validate_files_defaults(tmp_path: Path) -> None:
    """``validate_files`` is not strict by default and reports the section it was asked for, even for errors."""
    [typo] = validate_files([TYPO])
    assert (typo.section, typo.status, [i.severity for i in typo.issues]) == (
        "policy.generation",
        "valid",
        ["warning"],
    )
    reports = validate_files([SYNTAX, INVALID], section="other.generation")
    assert [(r.section, r.status) for r in reports] == [
        ("other.generation", "error"),
        ("other.generation", "invalid"),
    ]


def test_json_load_error_issue_is_complete(capsys: pytest.CaptureFixture[str]) -> None:
    """A syntax error's single issue has an empty path and an empty value; the JSON is indented by 2."""
    _, out = run(capsys, "validate", "--json", SYNTAX)
    [report] = json.loads(out)
    assert out == json.dumps([report], indent=2) + "\n"
    [issue] = report["issues"]
    assert (issue["path"], issue["value"], issue["severity"]) == ("", "", "error")
    assert issue["reason"].startswith(f"{SYNTAX}: YAML syntax error at line 6, column 16")


@pytest.mark.parametrize(
    ("generation", "counts"),
    [
        ({}, ""),
        ({"stop_token_ids": [-1]}, "  1 error"),
        ({"stop_token_ids": [-1, -2]}, "  2 errors"),
        ({"bogus_a": 1}, "  1 warning"),
        ({"bogus_a": 1, "bogus_b": 2}, "  2 warnings"),
    ],
)
def test_human_header_counts(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, generation: dict[str, Any], counts: str
) -> None:
    """The header is the padded status, the file, the section and the error and warning counts (singular for 1)."""
    path = write_recipe(tmp_path, "r.yaml", generation)
    status, out = run(capsys, "validate", path)
    word = "INVALID" if "error" in counts else "VALID"
    assert out.splitlines()[0] == f"{word:<8} {path}  [policy.generation]{counts}"
    assert "files:" not in out  # no summary for a single file
    assert status == (1 if "error" in counts else 0)


def test_human_error_header_and_summary(capsys: pytest.CaptureFixture[str]) -> None:
    """An unreadable file's header has no section or counts, its reason is indented; two files get a summary."""
    _, out = run(capsys, "validate", SYNTAX, VALID)
    lines = out.splitlines()
    assert lines[0] == f"ERROR    {SYNTAX}"
    assert lines[1].startswith(f"  {SYNTAX}: YAML syntax error")
    assert lines[-1] == "2 files: 1 valid, 1 unreadable"


def test_human_table_layout(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Columns start after fixed gaps; the path takes at most half the free width and long cells fold, never cut."""
    monkeypatch.setenv("COLUMNS", "120")
    key = "k" * 70
    path = write_recipe(tmp_path, "r.yaml", {"vllm_cfg": {key: "v" * 40}})
    _, out = run(capsys, "validate", path)
    lines = out.splitlines()
    header, rule, row = lines[1], lines[2], lines[3]
    value_width = 24
    path_width = (120 - len("severity") - value_width - 6) // 2
    assert header.startswith("severity   path ")
    assert header.index("value") == 11 + path_width + 3
    assert header.index("reason") == header.index("value") + value_width + 3
    assert set(rule.rstrip()) == {"─"}
    assert rule.startswith("─")
    assert row.startswith("warning    policy.generation.vllm_cfg.kkk")
    assert "…" not in out
    folded_path = "".join(line[11 : 11 + path_width].strip() for line in lines[3:])
    assert folded_path == f"policy.generation.vllm_cfg.{key}"
    start = header.index("value")
    assert "".join(line[start : start + value_width].strip() for line in lines[3:]) == repr("v" * 40)


def test_narrow_layout_folds_long_paths(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Below 100 columns each issue is the severity, then its path (folded, never cut), value and reason lines."""
    monkeypatch.setenv("COLUMNS", "60")
    key = "k" * 70
    path = write_recipe(tmp_path, "r.yaml", {"vllm_cfg": {key: 1}})
    _, out = run(capsys, "validate", path)
    lines = out.splitlines()
    start = lines.index(next(line for line in lines if line.startswith("warning ")))
    assert "…" not in out
    assert lines[start].startswith("warning policy.generation.vllm_cfg.kkk")
    body = [line[8:].rstrip() for line in lines[start:]]
    value_line = next(i for i, line in enumerate(body) if line.startswith("value:"))
    assert "".join(body[:value_line]) == f"policy.generation.vllm_cfg.{key}"
    assert body[value_line : value_line + 2] == ["value:  1", "reason: unknown key (not validated)"]
    assert all(line.startswith("        ") for line in lines[start + 1 : start + value_line + 2])


def test_colours_on_a_terminal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """With colour forced, statuses, severities, file names, sections and the summary carry their styles."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.setenv("COLUMNS", "120")
    bad = write_recipe(tmp_path, "bad.yaml", {"stop_token_ids": [-1]})
    _, out = run(capsys, "validate", TYPO, SYNTAX, bad, SKIPPED)
    lines = out.splitlines()
    dim_section = "\x1b[2m  [policy.generation]\x1b[0m"
    assert lines[0] == f"\x1b[1;32mVALID   \x1b[0m \x1b[1m{TYPO}\x1b[0m{dim_section}  1 warning"
    assert any(line.startswith("\x1b[33mwarning \x1b[0m   policy.generation") for line in lines)
    assert f"\x1b[1;31mERROR   \x1b[0m \x1b[1m{SYNTAX}\x1b[0m" in lines
    assert any(line.startswith(f"  \x1b[1;31m{SYNTAX}: YAML syntax error") for line in lines)
    assert f"\x1b[1;31mINVALID \x1b[0m \x1b[1m{bad}\x1b[0m{dim_section}  1 error" in lines
    assert any(
        line.startswith("\x1b[1;31merror   \x1b[0m   policy.generation.stop_token_ids[0]") for line in lines
    )
    assert any(line.startswith("\x1b[1;33mSKIPPED \x1b[0m") for line in lines)
    assert lines[-1] == "\x1b[1m4 files: 1 valid, 1 invalid, 1 skipped, 1 unreadable\x1b[0m"
    monkeypatch.setenv("COLUMNS", "60")
    _, out = run(capsys, "validate", TYPO)
    assert "\x1b[33mwarning\x1b[0m \x1b[1mpolicy.generation.vllm_cfg.gpu_memory_utilisation" in out


def test_bad_section_message(capsys: pytest.CaptureFixture[str]) -> None:
    """A malformed --section names the expected form and the given value."""
    with pytest.raises(SystemExit):
        main(["validate", "--section", "policy..generation", VALID])
    expected = (
        "argument --section: expected a dotted path such as policy.generation, got 'policy..generation'"
    )
    assert capsys.readouterr().err.splitlines()[-1].endswith(expected)


def test_closed_pipe_ends_quietly() -> None:
    """When the reader of stdout has gone, the script ends with its exit status and no traceback."""
    with subprocess.Popen(
        [_console_script(), "validate", VALID, INVALID],
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


def test_error_reason_is_indented_and_folded(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """An unreadable file's reason is indented by 2 and folded at the full width, with no padding around it."""
    bad = tmp_path / ("a" * 150 + ".yaml")
    bad.write_text("policy: [1\n")
    [report] = validate_files([str(bad)])
    reason = report.issues[0].reason
    _, out = run(capsys, "validate", str(bad))
    lines = out.splitlines()
    first = lines.index("  " + reason[:118])  # the header before it wraps too: the file name is long
    assert lines[0].startswith("ERROR ")
    assert all(line.startswith("  ") and line.strip() for line in lines[first:])
    assert (
        " ".join(line.strip() for line in lines[first:]).replace(reason[:118] + " ", reason[:118]) == reason
    )


@pytest.mark.parametrize(("columns", "table"), [(99, False), (100, True)])
def test_table_from_100_columns(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, columns: int, table: bool
) -> None:
    """The four-column table is used from 100 columns on, the stacked list below."""
    monkeypatch.setenv("COLUMNS", str(columns))
    _, out = run(capsys, "validate", TYPO)
    assert out.splitlines()[1].startswith("severity ") is table
    assert ("value:  0.9" in out) is not table


def test_header_with_errors_and_warnings(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A file with both errors and warnings lists both counts, separated by a comma."""
    parent = DATA / "broken" / "reload_refit_colocated.yaml"
    path = tmp_path / "r.yaml"
    path.write_text(json.dumps({"defaults": str(parent), "policy": {"generation": {"bogus_a": 1}}}))
    _, out = run(capsys, "validate", str(path))
    assert out.splitlines()[0] == f"INVALID  {path}  [policy.generation]  1 error, 1 warning"


GOLDEN_GENERATION: dict[str, Any] = {
    "colocated": {"enabled": True, "resources": {"gpus_per_node": None, "num_nodes": None}},
    "vllm_cfg": {"refit_with_reload_api": True, "reset_encoder_cache_after_weight_updates": "v" * 30},
}
GOLDEN_TABLE = """\
INVALID  r.yaml  [policy.generation]  1 error, 1 warning
severity   path                              value                      reason
────────────────────────────────────────────────────────────────────────────────────────────────────
error      policy.generation.colocated.ena   True                       policy.generation.vllm_cfg.r
           bled                                                         efit_with_reload_api=true is
                                                                        not supported yet with
                                                                        colocated vLLM refit.
                                                                        Support for the colocated
                                                                        IPC/ZMQ reload-refit path
                                                                        will be added later. Set
                                                                        refit_with_reload_api=false
                                                                        for now.
warning    policy.generation.vllm_cfg.rese   'vvvvvvvvvvvvvvvvvvvvvvv   unknown key (not validated);
           t_encoder_cache_after_weight_up   vvvvvvv'                   did you mean
           dates                                                        'reset_encoder_cache_after_w
                                                                        eight_update'?
"""
GOLDEN_LIST = """\
INVALID  r.yaml  [policy.generation]  1 error, 1 warning
error   policy.generation.colocated.enabled
        value:  True
        reason:
        policy.generation.vllm_cfg.refit_with_reload_api=tru
        e is not supported yet with colocated vLLM refit.
        Support for the colocated IPC/ZMQ reload-refit path
        will be added later. Set refit_with_reload_api=false
        for now.
warning policy.generation.vllm_cfg.reset_encoder_cache_after
        _weight_updates
        value:  'vvvvvvvvvvvvvvvvvvvvvvvvvvvvvv'
        reason: unknown key (not validated); did you mean
        'reset_encoder_cache_after_weight_update'?
"""


@pytest.mark.parametrize(("columns", "expected"), [(100, GOLDEN_TABLE), (60, GOLDEN_LIST)])
def test_human_report_golden(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    columns: int,
    expected: str,
) -> None:
    """The full human report of a fixed recipe: long paths, values and words fold inside their column (never
    cut, never an ellipsis), one line per issue row with no blank lines between issues."""
    monkeypatch.setenv("COLUMNS", str(columns))
    monkeypatch.chdir(tmp_path)
    write_recipe(tmp_path, "r.yaml", GOLDEN_GENERATION)
    status, out = run(capsys, "validate", "r.yaml")
    assert status == 1
    assert "".join(line.rstrip() + "\n" for line in out.splitlines()) == expected


def test_very_narrow_terminal_never_cuts_the_severity(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Even at 14 columns each issue starts with its whole severity word; the details take what is left."""
    monkeypatch.setenv("COLUMNS", "14")
    monkeypatch.chdir(tmp_path)
    write_recipe(tmp_path, "r.yaml", GOLDEN_GENERATION)
    _, out = run(capsys, "validate", "r.yaml")
    lines = out.splitlines()
    body = lines[lines.index("error   policy") :]
    assert [line for line in body if not line.startswith(" ")] == ["error   policy", "warning policy"]
    assert all(len(line.rstrip()) <= 14 for line in lines)
    assert "".join(line[8:].strip() for line in body).startswith(
        "policy.generation.colocated.enabledvalue:True"
    )


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["validate", VALID], 0),
        (["validate", INVALID], 1),
        (["validate", "--json", VALID], 0),
        (["validate", "--json", INVALID], 1),
        (["schema"], 0),
    ],
)
def test_closed_stdout_is_redirected_to_devnull(
    monkeypatch: pytest.MonkeyPatch, argv: list[str], expected: int
) -> None:
    """When the reader of stdout has gone, the human report, ``--json`` and ``schema`` still return their exit
    status (rich's own handler would exit 1 even for a valid file), and
    stdout's file descriptor now points at the null device, so the interpreter's final flush cannot fail."""
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
