"""The ``rl-contracts`` help pages and usage errors, run through the real parser (``rl_contracts.cli.main``).

The help output is part of the user-facing contract: it names the program, describes it, lists COMMAND with one line
per sub-command, and documents every option with its metavar and default.  ``COLUMNS`` is fixed so that argparse
wraps the same way on every terminal, and colour is turned off (Python 3.14 colours help on a terminal).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rl_contracts.cli import build_parser, main
from rl_contracts.cli import metrics as metrics_cli
from rl_contracts.cli import rules as rules_cli
from rl_contracts.cli import schema as schema_cli
from rl_contracts.cli import validate as validate_cli

README = Path(__file__).resolve().parents[1] / "docs" / "recipes" / "index.md"  # the synopsis

TOP_USAGE = "usage: rl-contracts [-h] [--version] COMMAND ..."
METRICS_USAGE = "usage: rl-contracts metrics [-h] [--interval S] [--count N] [--json] [--timeout S] URL"

TOP_HELP = f"""{TOP_USAGE}

Fail-closed contracts between RL trainers and vLLM.

positional arguments:
  COMMAND
    validate  validate recipe YAML files (schema, cross-field, reload-refit and preflight rules)
    rules     list every finding code with its summary and where the reference checks it
    rule      print one rule's page: what it checks, why it matters, a failing example, the fix
    schema    print the JSON Schema of the vLLM generation section or of a whole recipe
    metrics   print per-interval engine and spec-decode metrics of a running vLLM server

options:
  -h, --help  show this help message and exit
  --version   print rl-contracts VERSION and exit
"""

METRICS_HELP = f"""{METRICS_USAGE}

Scrape a vLLM server's Prometheus page every S seconds and print, for each interval, the engine
step metrics (tokens, mean lengths, ok/failed generations) and the spec-decode metrics (acceptance
length and rate, per position). Exit status 2 when the page cannot be fetched or is not a vLLM
metrics page.

positional arguments:
  URL           the server's metrics page, e.g. http://127.0.0.1:8000/metrics

options:
  -h, --help    show this help message and exit
  --interval S  seconds between scrapes (default: 5)
  --count N     number of intervals to print after the first scrape (default: until interrupted)
  --json        print one JSON object per interval and line
  --timeout S   seconds to wait for the server on each scrape (default: 10)
"""

VALIDATE_USAGE = """usage: rl-contracts validate [-h] [--section DOTTED] [--strict]
                             [--format {human,json,github,sarif} | --json] [--set KEY=VALUE]
                             [--entrypoint {grpo,grpo-gym,grpo-sc}] [--algorithm NAME]
                             [--vllm-version X.Y] [--ignore-tp-accuracy-check]
                             [--model-config CONFIG.json] [--gpu-capability MAJOR.MINOR]
                             [--select CODES] [--ignore CODES] [--root DIR] [--fix]
                             [--unsafe-fixes] [--diff] [--baseline FILE] [--write-baseline FILE]
                             FILE [FILE ...]"""

VALIDATE_HELP = (
    VALIDATE_USAGE
    + """

Load each recipe (defaults inheritance, --set overrides, interpolation), validate its vLLM
generation section and run the preflight start-up rules, and report every issue with its code and
source line. Exit status: 0 all valid or skipped, 1 any invalid, 2 any unreadable file or a usage
error.

positional arguments:
  FILE                  recipe YAML file(s), checked in order

options:
  -h, --help            show this help message and exit
  --section DOTTED      dotted path of the section to validate (default policy.generation, else a
                        top-level generation; an explicit one must exist)
  --strict              treat unknown keys as errors (dead keys stay warnings)
  --format {human,json,github,sarif}
                        report format: human tables, one JSON array, GitHub workflow commands, or
                        one SARIF 2.1.0 log (default: human)
  --json                the same as --format json
  --set KEY=VALUE       override a value after composition, as the launcher does (repeatable;
                        ++KEY=VALUE adds a key)
  --entrypoint {grpo,grpo-gym,grpo-sc}
                        the trainer script the recipe runs with (default: detected from the
                        recipe)
  --algorithm NAME      check every section as this NeMo RL algorithm's recipe (default: detected
                        from the top-level sections of a whole recipe): grpo, grpo-sc, sft, dpo,
                        rm, ppo, distillation, xtoken-distillation, eval
  --vllm-version X.Y    vLLM version for the version-dependent rules (default: the installed
                        vLLM's, else they are skipped)
  --ignore-tp-accuracy-check
                        as NRL_IGNORE_TP_ACCURACY_CHECK: skip the TP >= 4 batch-size check (P19)
  --model-config CONFIG.json
                        the model's Hugging Face config.json (unlocks the rules that need the
                        model: N2, N7)
  --gpu-capability MAJOR.MINOR
                        compute capability of the generation GPUs (unlocks N3)
  --select CODES        report only these codes or families, comma-separated (P7,W; default: all)
  --ignore CODES        do not report these codes or families, comma-separated (wins over
                        --select)
  --root DIR            folder that defaults parents may come from (default: the git work tree
                        holding each recipe, else its folder); a parent outside it is refused (V7)
  --fix                 apply the safe fixes to the recipe files, then report what remains
  --unsafe-fixes        with --fix or --diff: apply the unsafe fixes too (removals of dead keys,
                        value changes)
  --diff                print the diff of every file the fixes would change; write nothing
  --baseline FILE       report and fail only on findings not in this baseline; list its entries
                        that no longer occur
  --write-baseline FILE
                        record the current findings in FILE (with --baseline: shrink it to the
                        entries that still occur)
"""
)

SCHEMA_HELP = """usage: rl-contracts schema [-h] [--recipe] [--algorithm NAME]

Print VllmConfig's JSON Schema (by alias, validation mode), or with --recipe the schema of a whole
recipe file (with --algorithm NAME: every section of that algorithm typed), for an editor's YAML
language server.

options:
  -h, --help        show this help message and exit
  --recipe          the whole-recipe schema (generation and preflight sections typed, the rest
                    open)
  --algorithm NAME  the schema of a recipe of this NeMo RL algorithm, every section typed (implies
                    --recipe): grpo, grpo-sc, sft, dpo, rm, ppo, distillation, xtoken-
                    distillation, eval
"""

RULES_HELP = """usage: rl-contracts rules [-h] [--format {human,json,markdown}]

List every code that validate reports (V, C, R, K, P, W and N families), one line each: code,
severity, summary and [where NeMo RL checks the same thing, or never].

options:
  -h, --help            show this help message and exit
  --format {human,json,markdown}
                        plain lines, one JSON array, or README's Markdown table (default: human)
"""

RULE_HELP = """usage: rl-contracts rule [-h] [--format {human,json}] CODE

Print the documentation of one rule: what it checks, why it matters (what happens in the trainer,
and when), a minimal failing recipe fragment, and the fix.

positional arguments:
  CODE                  a code such as P19, or the rule's name

options:
  -h, --help            show this help message and exit
  --format {human,json}
                        the page as text, or the rule's record as one JSON object (default: human)
"""


@pytest.fixture(autouse=True)
def plain_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 100-column terminal without colour, so the help text is the same everywhere."""
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("PYTHON_COLORS", raising=False)


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[object, str, str]:
    """Run ``main(argv)`` expecting argparse to exit; return the exit code, stdout and stderr."""
    with pytest.raises(SystemExit) as info:
        main(argv)
    captured = capsys.readouterr()
    return info.value.code, captured.out, captured.err


def same_headings(text: str) -> str:
    """Python 3.10 calls the options section "optional arguments"; 3.11+ calls it "options"."""
    return text.replace("\noptional arguments:\n", "\noptions:\n")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--help"], TOP_HELP),
        (["validate", "--help"], VALIDATE_HELP),
        (["schema", "--help"], SCHEMA_HELP),
        (["rules", "--help"], RULES_HELP),
        (["rule", "--help"], RULE_HELP),
        (["metrics", "--help"], METRICS_HELP),
    ],
)
def test_help_pages(argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Every help page, exactly: program name, description, COMMAND list, every option with metavar and default."""
    code, out, err = run_cli(argv, capsys)
    assert (code, err) == (0, "")
    assert same_headings(out) == expected


def test_top_level_help_lists_every_command_under_command(capsys: pytest.CaptureFixture[str]) -> None:
    """``-h`` is ``--help``; the COMMAND entry is followed by one indented line per sub-command, in order."""
    code, out, _ = run_cli(["-h"], capsys)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == TOP_USAGE
    start = lines.index("  COMMAND")
    names = [line.split()[0] for line in lines[start + 1 : start + 6]]
    assert names == ["validate", "rules", "rule", "schema", "metrics"]


@pytest.mark.parametrize(
    ("option", "text", "attribute", "default"),
    [
        ("--interval S", "seconds between scrapes (default: 5)", "interval", 5.0),
        (
            "--count N",
            "number of intervals to print after the first scrape (default: until interrupted)",
            "count",
            None,
        ),
        ("--timeout S", "seconds to wait for the server on each scrape (default: 10)", "timeout", 10.0),
    ],
)
def test_metrics_help_states_the_real_defaults(
    option: str, text: str, attribute: str, default: float | None, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each option's help line names its metavar and the default the parser actually applies."""
    _, out, _ = run_cli(["metrics", "--help"], capsys)
    assert re.search(rf"^  {re.escape(option)} +{re.escape(text)}$", out, re.MULTILINE)
    args = build_parser().parse_args(["metrics", "http://127.0.0.1:8000/metrics"])
    assert getattr(args, attribute) == default


def test_missing_command_exits_2_naming_command(capsys: pytest.CaptureFixture[str]) -> None:
    """No sub-command: status 2, the usage line and an error naming COMMAND on stderr, nothing on stdout."""
    code, out, err = run_cli([], capsys)
    assert (code, out) == (2, "")
    assert err == f"{TOP_USAGE}\nrl-contracts: error: the following arguments are required: COMMAND\n"


def test_unknown_command_exits_2_listing_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown sub-command is rejected as an invalid COMMAND choice that lists the three commands."""
    code, out, err = run_cli(["lint"], capsys)
    assert (code, out) == (2, "")
    assert err.startswith(f"{TOP_USAGE}\n")
    last = err.splitlines()[-1]
    assert last.startswith("rl-contracts: error: argument COMMAND: invalid choice: 'lint' (choose from ")
    assert all(name in last for name in ("validate", "rules", "schema", "metrics"))


def test_metrics_without_url_exits_2_naming_url(capsys: pytest.CaptureFixture[str]) -> None:
    """``rl-contracts metrics`` without a URL: status 2 with the sub-command's usage and an error naming URL."""
    code, out, err = run_cli(["metrics"], capsys)
    assert (code, out) == (2, "")
    assert err == f"{METRICS_USAGE}\nrl-contracts metrics: error: the following arguments are required: URL\n"


@pytest.mark.parametrize(
    ("argv", "command", "run"),
    [
        (["validate", "recipe.yaml"], "validate", validate_cli.run_validate),
        (["schema"], "schema", schema_cli.run_schema),
        (["rules"], "rules", rules_cli.run_rules),
        (["metrics", "http://127.0.0.1:8000/metrics"], "metrics", metrics_cli.run),
    ],
)
def test_parsed_arguments_name_the_command(argv: list[str], command: str, run: object) -> None:
    """``build_parser()`` records the chosen sub-command as ``args.command`` and its runner as ``args.run``."""
    args = build_parser().parse_args(argv)
    assert args.command == command
    assert args.run is run


def usage_tokens(synopsis: str) -> list[str]:
    """The bracketed options and bare arguments of a synopsis; ``X [X ...]`` is written ``X...``; no ``[-h]``."""
    synopsis = re.sub(r"(\w+) \[\1 \.\.\.\]", r"\1...", " ".join(synopsis.split()))
    return sorted(t for t in re.findall(r"\[[^\]]*\]|\S+", synopsis) if t != "[-h]")


def readme_synopses() -> dict[str, str]:
    """The command lines of README's "Command line" block by sub-command (indented lines continue a command)."""
    section = README.read_text(encoding="utf-8").split("## Command line", 1)[1]
    block = section.split("```text\n", 1)[1].split("```", 1)[0]
    commands: list[str] = []
    for line in block.splitlines():
        if line.startswith(" ") and commands:
            commands[-1] += " " + line.strip()
        elif line.strip():
            commands.append(line.strip())
    return {line.split()[1]: line for line in commands}


def test_readme_synopsis_agrees_with_the_parser(capsys: pytest.CaptureFixture[str]) -> None:
    """Every command line in the README's "Command line" block has the options and metavars of the real usage."""
    synopses = readme_synopses()
    assert sorted(synopses) == ["--version", "metrics", "rule", "rules", "schema", "validate"]
    assert synopses.pop("--version") == "rl-contracts --version"
    for command, synopsis in synopses.items():
        code, out, _ = run_cli([command, "--help"], capsys)
        assert code == 0
        usage = out.split("\n\n", 1)[0].removeprefix("usage: ")
        assert usage.startswith(f"rl-contracts {command}")
        assert usage_tokens(usage) == usage_tokens(synopsis), command


def test_version_help_line(capsys: pytest.CaptureFixture[str]) -> None:
    """``--version`` prints the program name and version on stdout and exits 0."""
    code, out, err = run_cli(["--version"], capsys)
    assert (code, err) == (0, "")
    assert re.fullmatch(r"rl-contracts \d+\.\d+\.\d+\S*\n", out)
