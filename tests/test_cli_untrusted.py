"""``rl-contracts validate`` on hostile recipes: recipe text never starts an output line, a terminal sequence or
a GitHub workflow command in any format, and extreme numbers give findings, not tracebacks (issue 21)."""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from rl_contracts._internal.messages import CONTROL_CHARACTERS, printable
from rl_contracts.cli import main
from rl_contracts.cli.report import github_commands, print_human
from rl_contracts.cli.validate import validate_files

BASE = Path(__file__).parent / "data" / "cli" / "base.yaml"
INJECTED = "\n::error file=pwned.yaml,line=1::injected\r\x1b[31m\x07\x85\u2028\x1b]0;title\x07"
"""Text a hostile recipe puts in keys, values and file names: a newline then a workflow command, CR, an ANSI
colour, BEL, NEL, LINE SEPARATOR and an OSC sequence."""
YAML_INJECTED = '"k\\n::error file=pwned.yaml,line=1::injected\\r\\e[31m\\a\\N\\L\\e]0;title\\a"'
""":data:`INJECTED` as a YAML double-quoted scalar (behind a ``k``)."""
COMMAND_LINE = re.compile(r"::(error|warning|notice) ")


@pytest.fixture(autouse=True)
def _base_beside_the_recipes(tmp_path: Path) -> None:
    """The parent recipe, copied beside the hostile ones (a parent must lie inside the recipe's root, V7)."""
    shutil.copyfile(BASE, tmp_path / BASE.name)


def hostile_recipe(tmp_path: Path, *, name: str = "recipe.yaml") -> Path:
    """A child of the passing CLI recipe with two hostile unknown keys (warnings) and a hostile string where
    preflight reads an int (an error), written under ``name``."""
    path = tmp_path / name
    path.write_text(
        f"defaults: base.yaml\n"
        "policy:\n"
        "  generation:\n"
        f"    {YAML_INJECTED}: 1\n"
        "    vllm_cfg:\n"
        f"      {YAML_INJECTED}: [1, 2]\n"
        "grpo:\n"
        f"  val_period: {YAML_INJECTED}\n",
        encoding="utf-8",
    )
    return path


def _output(capsys: pytest.CaptureFixture[str], fmt: str, *files: Path) -> tuple[int, str]:
    status = main(["validate", "--format", fmt, *map(str, files)])
    return status, capsys.readouterr().out


def _assert_no_raw_controls(text: str) -> None:
    """No control character of the recipe survives but the newlines that end the library's own lines."""
    assert not CONTROL_CHARACTERS.search(text.replace("\n", "")), repr(CONTROL_CHARACTERS.findall(text)[:5])


@pytest.fixture
def hostile(tmp_path: Path) -> list[Path]:
    """A hostile recipe under a plain name and one under a file name holding the injected text."""
    return [
        hostile_recipe(tmp_path),
        hostile_recipe(tmp_path, name="r" + INJECTED.replace("/", "") + ".yaml"),
    ]


def test_human_output_escapes_recipe_text(capsys: pytest.CaptureFixture[str], hostile: list[Path]) -> None:
    """Human output (piped) holds no raw control character and no line starts with recipe text: the injected
    command appears escaped inside a line the library starts."""
    status, out = _output(capsys, "human", *hostile)
    assert status == 1
    _assert_no_raw_controls(out)
    assert not any(line.lstrip().startswith("::") for line in out.splitlines())
    assert "k\\n::error file=pwned.yaml,line=1::injected\\r\\x1b[31m\\x07\\x85\\u2028" in out


@pytest.mark.parametrize("width", [160, 80])
def test_terminal_output_escapes_recipe_text(tmp_path: Path, width: int) -> None:
    """On a terminal (wide table or narrow stacked list) recipe text is escaped and, once rich's own colour
    sequences are removed, no raw control character is left and no line starts with a workflow command."""
    reports = validate_files([str(hostile_recipe(tmp_path))])
    buffer = io.StringIO()
    print_human(Console(file=buffer, force_terminal=True, width=width, color_system="standard"), reports)
    text = re.sub(r"\x1b\[[0-9;]*m", "", buffer.getvalue())
    _assert_no_raw_controls(text)
    assert not any(line.lstrip().startswith("::") for line in text.splitlines())


def test_json_output_escapes_recipe_text(capsys: pytest.CaptureFixture[str], hostile: list[Path]) -> None:
    """JSON output is ASCII: control characters are JSON escapes inside strings, every line starts with the
    indentation and a JSON token, and the parsed paths hold the recipe's key exactly."""
    status, out = _output(capsys, "json", *hostile)
    assert status == 1
    assert out.isascii()
    _assert_no_raw_controls(out)
    assert all(re.match(r'\s*([\[\]{}"0-9-]|true|false|null)', line) for line in out.splitlines())
    parsed = json.loads(out)
    paths = {issue["path"] for report in parsed for issue in report["issues"]}
    assert f"policy.generation.k{INJECTED}" in paths
    assert {report["file"] for report in parsed} == {str(path) for path in hostile}


def test_github_output_keeps_github_escaping(capsys: pytest.CaptureFixture[str], hostile: list[Path]) -> None:
    """Each line is one of the library's workflow commands (or the summary): CR and LF are %0D/%0A, ``%`` is
    %25, ``:``/``,`` in the file property are %3A/%2C, and other control characters are ``\\xNN`` escapes."""
    status, out = _output(capsys, "github", *hostile)
    assert status == 1
    _assert_no_raw_controls(out)
    lines = out.splitlines()
    assert all(COMMAND_LINE.match(line) for line in lines[:-1])
    assert lines[-1].startswith("2 files: ")
    assert any("%0A::error file=pwned.yaml,line=1::injected%0D\\x1b[31m\\x07\\x85\\u2028" in x for x in lines)
    hostile_file = [line for line in lines if "/r%0A" in line]
    assert hostile_file
    assert all("%3A%3Aerror file=pwned.yaml%2Cline=1%3A%3Ainjected%0D" in line for line in hostile_file)


def test_github_escapes_percent_before_controls(tmp_path: Path) -> None:
    """A literal ``%0A`` in a key stays literal (``%250A``): GitHub's runner cannot decode it into a newline."""
    path = tmp_path / "percent.yaml"
    path.write_text(
        'defaults: base.yaml\npolicy:\n  generation:\n    "a%0A::error::b": 1\n', encoding="utf-8"
    )
    lines = github_commands(validate_files([str(path)]))
    assert any("a%250A::error::b" in line for line in lines)
    assert all(COMMAND_LINE.match(line) for line in lines[:-1])


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("a\nb", "a\\nb"),
        ("a\r\nb", "a\\r\\nb"),
        ("\x1b[2J\x07", "\\x1b[2J\\x07"),
        ("\x00\x7f\x9b", "\\x00\\x7f\\x9b"),
        ("\u2028\u2029\u202e\u2066", "\\u2028\\u2029\\u202e\\u2066"),
        ("tab\there", "tab\\there"),
        ("plain ünïcødé \\ ok", "plain ünïcødé \\ ok"),
    ],
)
def test_printable_escapes_every_control_character(text: str, shown: str) -> None:
    """printable() writes C0, DEL, C1, line/paragraph separators and bidi controls as escapes, keeps the rest."""
    assert printable(text) == shown
    assert len(printable(text).splitlines()) <= 1


HEX = "0x" + "f" * 4000
"""A hex int of 4,817 decimal digits (YAML reads it; ``str()`` of it raises)."""
NUMBERS: dict[str, str] = {
    "batch_multiplier .inf": "grpo:\n  use_dynamic_sampling: true\n  batch_multiplier: .inf\n",
    "batch_multiplier .nan": "grpo:\n  use_dynamic_sampling: true\n  batch_multiplier: .nan\n",
    "batch_multiplier -.inf": "grpo:\n  use_dynamic_sampling: true\n  batch_multiplier: -.inf\n",
    "huge cluster": f"cluster:\n  num_nodes: {HEX}\n",
    "huge vLLM TP": f"policy:\n  generation:\n    vllm_cfg:\n      tensor_parallel_size: {HEX}\n",
    "huge forced-ratio batch": f"loss_fn:\n  force_on_policy_ratio: true\ngrpo:\n  num_prompts_per_step: {HEX}\n",
    "huge resolver product": "policy:\n  generation:\n    max_new_tokens: ${mul:" + HEX + ",2}\n",
    "negative parallel pair": (
        "policy:\n  dtensor_cfg:\n    tensor_parallel_size: -1\n    context_parallel_size: -1\n"
    ),
    "nan temperature": "policy:\n  generation:\n    temperature: .nan\n",
}


@pytest.mark.parametrize("case", NUMBERS, ids=list(NUMBERS))
@pytest.mark.parametrize("fmt", ["human", "json", "github"])
def test_extreme_numbers_are_findings_in_every_format(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, case: str, fmt: str
) -> None:
    """Each extreme number is an invalid recipe (exit 1) with bounded output, never a traceback."""
    path = tmp_path / "numbers.yaml"
    path.write_text(f"defaults: base.yaml\n{NUMBERS[case]}", encoding="utf-8")
    status, out = _output(capsys, fmt, path)
    assert status == 1
    assert len(out) < 20_000
