"""The ``validate`` sub-command of ``rl-contracts`` (SPEC §1.8, PREFLIGHT.md §1).

``rl-contracts validate FILE... [--section DOTTED] [--strict] [--format human|json|github] [--json]
[--set KEY=VALUE]... [--entrypoint grpo|grpo-gym|grpo-sc] [--vllm-version X.Y] [--ignore-tp-accuracy-check]
[--model-config CONFIG.json] [--gpu-capability MAJOR.MINOR] [--select CODES] [--ignore CODES] [--root DIR]
[--fix] [--unsafe-fixes] [--diff] [--baseline FILE] [--write-baseline FILE]`` loads every
recipe in argument order with :func:`~rl_contracts.config.load_recipe` (composition, schema, cross-field,
reload-refit and preflight rules) and reports each one in the chosen format (:mod:`rl_contracts.cli.report`,
:mod:`rl_contracts.cli.sarif`); ``--fix``/``--diff`` are :mod:`.fixing`'s, ``--baseline``/``--write-baseline``
:mod:`.baselines`'.  Exit status: 2 when any file could not be read or the arguments are invalid (a usage error,
never a traceback), else 1 when any file is invalid, else 0; warnings and skipped rules never fail the run.

Building the parser imports no recipe code (``rl-contracts --help`` and ``--version`` stay fast, SPEC §0.2): the
loader, the catalogue and the report (rich) are imported when an argument is checked or the command runs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ContractError, RecipeError, RecipeLoadError
from . import startup

if TYPE_CHECKING:
    from ..config.rules.preflight import PreflightOptions
    from .report import FileReport

__all__ = [
    "ALGORITHM_CHOICES",
    "DEFAULT_SECTION",
    "add_baseline_arguments",
    "add_fix_arguments",
    "code_list",
    "dotted",
    "gpu_capability",
    "model_config",
    "override",
    "register",
    "run_validate",
    "validate_files",
    "vllm_version",
    "write",
]

ALGORITHM_CHOICES = (
    "grpo",
    "grpo-sc",
    "sft",
    "dpo",
    "rm",
    "ppo",
    "distillation",
    "xtoken-distillation",
    "eval",
)
"""The algorithms ``--algorithm`` names: ``rl_contracts.config.section.recipe.ALGORITHMS``, written out so that the
parser is built without importing the models (a test holds the two equal)."""

DEFAULT_SECTION = "policy.generation"
"""``rl_contracts.config.DEFAULT_SECTION``, written here so that the parser's help needs no recipe code (a test
keeps the two equal)."""

_OVERRIDE = re.compile(r"(\+\+|\+)?[^=\s.+][^=\s.]*(\.[^=\s.]+)*=.*", re.S)


def validate_files(
    files: Sequence[str],
    *,
    section: str | None = None,
    strict: bool = False,
    overrides: Sequence[str] = (),
    preflight_options: PreflightOptions | None = None,
    select: Collection[str] = (),
    ignore: Collection[str] = (),
    root: str | None = None,
    algorithm: str | None = None,
) -> list[FileReport]:
    """Run :func:`~rl_contracts.config.load_recipe` on every file, in order, and report each outcome.

    Never raises for bad recipe content or unreadable files: a ``RecipeError`` becomes an ``"invalid"`` report, a
    ``RecipeLoadError`` an ``"error"`` report with one issue whose path is empty (at the file and line of the chain
    where reading failed), coded as the error is (``V1``; ``V6`` a loading limit; ``V7`` a parent outside ``root``).
    """
    from ..config import load_recipe
    from ..config.finding import Finding
    from .report import FileReport

    reports = []
    shown_section = DEFAULT_SECTION if section is None else section
    for file in files:
        try:
            recipe = load_recipe(
                file,
                section=section,
                strict=strict,
                overrides=overrides,
                preflight_options=preflight_options,
                select=select,
                ignore=ignore,
                root=root,
                algorithm=algorithm,
            )
        except RecipeError as exc:
            reports.append(
                FileReport(
                    file,
                    exc.section or shown_section,
                    "invalid",
                    tuple(exc.issues or ()),
                    tuple(exc.skipped or ()),
                    exc.entrypoint,
                    exc.algorithm,
                )
            )
        except RecipeLoadError as exc:
            issue = Finding.for_load_error(exc, file=file)
            reports.append(FileReport(file, shown_section, "error", (issue,)))
        else:
            reports.append(
                FileReport(
                    file,
                    recipe.section,
                    recipe.status,
                    recipe.issues,
                    recipe.skipped,
                    recipe.entrypoint,
                    recipe.algorithm,
                )
            )
    return reports


def write(emit: Callable[[], object]) -> None:
    """Run an output function; a closed pipe (``rl-contracts validate ... | head``) ends the output quietly."""
    try:
        emit()
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def run_validate(args: argparse.Namespace) -> int:
    """The ``validate`` command: report every file in the chosen format and return the §1.8 exit status."""
    from ..config import load_recipe  # noqa: F401  (imported here, with the collector paused: see .startup)
    from ..config.rules.preflight import PreflightOptions, installed_vllm_version
    from .report import exit_status, github_commands, json_report, plain_report, print_human, stdout_console

    version = args.vllm_version if args.vllm_version is not None else installed_vllm_version()
    options = PreflightOptions(
        entrypoint=args.entrypoint,
        vllm_version=version,
        ignore_tp_accuracy_check=args.ignore_tp_accuracy_check,
        model_config=args.model_config,
        gpu_capability=args.gpu_capability,
    )
    checked: dict[str, Any] = {
        "section": args.section,
        "strict": args.strict,
        "overrides": args.overrides,
        "preflight_options": options,
        "select": args.select,
        "ignore": args.ignore,
        "root": args.root,
        "algorithm": args.algorithm,
    }
    if args.unsafe_fixes and not (args.fix or args.diff):
        print("rl-contracts validate: error: --unsafe-fixes needs --fix or --diff", file=sys.stderr)
        return 2
    if args.fix or args.diff:
        from .fixing import run_fixes  # the fix engine, the baselines and SARIF load only when asked for

        startup.imports_done()
        fixed = run_fixes(args, lambda files: validate_files(files, **checked), checked, write)
        if fixed.reports is None:
            return fixed.status or 0
        reports = fixed.reports
    else:
        # The first file creates its algorithm's models (imported on first use), so the collector stays paused
        # until it is checked; every later file's garbage is collected as it goes.
        reports = validate_files(args.files[:1], **checked)
        startup.imports_done()
        reports += validate_files(args.files[1:], **checked)
    if args.baseline is not None or args.write_baseline is not None:
        from .baselines import apply_baseline

        baselined = apply_baseline(reports, baseline=args.baseline, write=args.write_baseline)
        for note in baselined.notes:
            print(note, file=sys.stderr)
        if baselined.failed:
            return 2
        reports = baselined.reports
    if args.format == "sarif":
        from .. import __version__
        from ..config.rules.registry import RULES as CODES
        from .sarif import result_fix, sarif_text

        text = sarif_text(reports, CODES, version=__version__, fix_for=result_fix)
        write(lambda: sys.stdout.write(text + "\n"))
    elif args.format == "json":
        text = json_report(reports)
        write(lambda: sys.stdout.write(text + "\n"))
    elif args.format == "github":
        text = "\n".join(github_commands(reports))
        write(lambda: sys.stdout.write(text + "\n"))
    elif (plain := plain_report(reports)) is not None:  # the same characters as rich's, without importing it
        write(lambda: sys.stdout.write(plain))
    else:
        write(lambda: print_human(stdout_console(), reports))
    return exit_status(reports)


# ---------------------------------------------------------------------------------------------- argument types


def dotted(text: str) -> str:
    """``--section`` argument type: a dotted path of non-empty keys (``policy.generation``)."""
    if not text or any(not part for part in text.split(".")):
        raise argparse.ArgumentTypeError(f"expected a dotted path such as {DEFAULT_SECTION}, got {text!r}")
    return text


def override(text: str) -> str:
    """``--set`` argument type: ``KEY=VALUE`` or ``++KEY=VALUE`` with a dotted key; the value is YAML (may be
    empty)."""
    if _OVERRIDE.fullmatch(text) is None:
        raise argparse.ArgumentTypeError(
            f"expected KEY=VALUE with a dotted KEY such as policy.generation.vllm_cfg.tensor_parallel_size=2 "
            f"(or ++KEY=VALUE to add a key), got {text!r}"
        )
    return text


def vllm_version(text: str) -> tuple[int, int]:
    """``--vllm-version`` argument type: ``X.Y`` or ``X.Y.Z`` (``0.32``) as ``(major, minor)``."""
    from ..config.rules.preflight import parse_vllm_version

    try:
        return parse_vllm_version(text)
    except ContractError:
        raise argparse.ArgumentTypeError(f"expected a vLLM version X.Y such as 0.32, got {text!r}") from None


def gpu_capability(text: str) -> tuple[int, int]:
    """``--gpu-capability`` argument type: a CUDA compute capability ``MAJOR.MINOR`` (``9.0``)."""
    match = re.fullmatch(r"(\d{1,2})\.(\d{1,2})", text.strip())
    if match is None:
        raise argparse.ArgumentTypeError(
            f"expected a compute capability MAJOR.MINOR such as 9.0, got {text!r}"
        )
    return int(match.group(1)), int(match.group(2))


def model_config(text: str) -> Mapping[str, Any]:
    """``--model-config`` argument type: the path of a Hugging Face ``config.json``, read as a JSON object."""
    try:
        with open(text, encoding="utf-8") as stream:
            loaded = json.load(stream)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise argparse.ArgumentTypeError(f"cannot read {text!r}: {reason}") from None
    except (ValueError, RecursionError) as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not JSON: {str(exc)[:200]}") from None
    if not isinstance(loaded, dict):
        raise argparse.ArgumentTypeError(
            f"{text!r} must hold a JSON object (a Hugging Face config.json), got a {type(loaded).__name__}"
        )
    return loaded


def code_list(text: str) -> list[str]:
    """``--select``/``--ignore`` argument type: comma-separated codes (``P7``) or families (``P``, ``W``).

    Fail closed: a pattern that matches no code of :data:`~rl_contracts.config.rules.registry.RULES` is a usage error,
    so a mistyped ``--ignore`` never hides the wrong findings and a mistyped ``--select`` never selects nothing.
    Each pattern is checked by :func:`~rl_contracts.config.rules.registry.check_patterns`, as ``load_recipe``'s
    ``select``/``ignore`` are.
    """
    from ..config.rules.registry import check_patterns

    patterns = [part.strip() for part in text.split(",") if part.strip()]
    if not patterns:
        raise argparse.ArgumentTypeError(f"expected codes such as P7,W or families such as P, got {text!r}")
    try:
        return list(check_patterns(patterns, "--select/--ignore"))
    except ContractError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


class _Codes(argparse.Action):
    """``--select``/``--ignore``: repeatable; the patterns of every occurrence accumulate into one tuple."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, (*getattr(namespace, self.dest, ()), *values))


def add_fix_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--fix``, ``--unsafe-fixes`` and ``--diff`` to the ``validate`` parser."""
    parser.add_argument(
        "--fix",
        action="store_true",
        help="apply the safe fixes to the recipe files, then report what remains",
    )
    parser.add_argument(
        "--unsafe-fixes",
        action="store_true",
        help="with --fix or --diff: apply the unsafe fixes too (removals of dead keys, value changes)",
    )
    parser.add_argument(
        "--diff",
        action="store_true",
        help="print the diff of every file the fixes would change; write nothing",
    )


def add_baseline_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--baseline FILE`` and ``--write-baseline FILE`` to the ``validate`` parser."""
    parser.add_argument(
        "--baseline",
        metavar="FILE",
        help="report and fail only on findings not in this baseline; list its entries that no longer occur",
    )
    parser.add_argument(
        "--write-baseline",
        metavar="FILE",
        help="record the current findings in FILE (with --baseline: shrink it to the entries that still occur)",
    )


def register(commands: Any) -> None:
    """Add ``validate`` to ``commands`` (an argparse sub-parsers action); it sets ``run``."""
    validate = commands.add_parser(
        "validate",
        help="validate recipe YAML files (schema, cross-field, reload-refit and preflight rules)",
        description=(
            "Load each recipe (defaults inheritance, --set overrides, interpolation), validate its vLLM "
            "generation section and run the preflight start-up rules, and report every issue with its code and "
            "source line. Exit status: 0 all valid or skipped, 1 any invalid, 2 any unreadable file or a "
            "usage error."
        ),
    )
    validate.add_argument("files", nargs="+", metavar="FILE", help="recipe YAML file(s), checked in order")
    validate.add_argument(
        "--section",
        type=dotted,
        metavar="DOTTED",
        help=(
            f"dotted path of the section to validate (default {DEFAULT_SECTION}, else a top-level generation; "
            "an explicit one must exist)"
        ),
    )
    validate.add_argument(
        "--strict", action="store_true", help="treat unknown keys as errors (dead keys stay warnings)"
    )
    formats = validate.add_mutually_exclusive_group()
    formats.add_argument(
        "--format",
        choices=("human", "json", "github", "sarif"),
        default="human",
        help=(
            "report format: human tables, one JSON array, GitHub workflow commands, or one SARIF 2.1.0 log "
            "(default: human)"
        ),
    )
    formats.add_argument(
        "--json", action="store_const", const="json", dest="format", help="the same as --format json"
    )
    validate.add_argument(
        "--set",
        action="append",
        type=override,
        default=[],
        dest="overrides",
        metavar="KEY=VALUE",
        help="override a value after composition, as the launcher does (repeatable; ++KEY=VALUE adds a key)",
    )
    validate.add_argument(
        "--entrypoint",
        choices=("grpo", "grpo-gym", "grpo-sc"),
        help="the trainer script the recipe runs with (default: detected from the recipe)",
    )
    validate.add_argument(
        "--algorithm",
        choices=ALGORITHM_CHOICES,
        metavar="NAME",
        help="check every section as this NeMo RL algorithm's recipe (default: detected from the top-level "
        "sections of a whole recipe): " + ", ".join(ALGORITHM_CHOICES),
    )
    validate.add_argument(
        "--vllm-version",
        type=vllm_version,
        metavar="X.Y",
        help="vLLM version for the version-dependent rules (default: the installed vLLM's, else they are skipped)",
    )
    validate.add_argument(
        "--ignore-tp-accuracy-check",
        action="store_true",
        help="as NRL_IGNORE_TP_ACCURACY_CHECK: skip the TP >= 4 batch-size check (P19)",
    )
    validate.add_argument(
        "--model-config",
        type=model_config,
        metavar="CONFIG.json",
        help="the model's Hugging Face config.json (unlocks the rules that need the model: N2, N7)",
    )
    validate.add_argument(
        "--gpu-capability",
        type=gpu_capability,
        metavar="MAJOR.MINOR",
        help="compute capability of the generation GPUs (unlocks N3)",
    )
    validate.add_argument(
        "--select",
        action=_Codes,
        type=code_list,
        default=(),
        metavar="CODES",
        help="report only these codes or families, comma-separated (P7,W; default: all)",
    )
    validate.add_argument(
        "--ignore",
        action=_Codes,
        type=code_list,
        default=(),
        metavar="CODES",
        help="do not report these codes or families, comma-separated (wins over --select)",
    )
    validate.add_argument(
        "--root",
        metavar="DIR",
        help=(
            "folder that defaults parents may come from (default: the git work tree holding each recipe, else "
            "its folder); a parent outside it is refused (V7)"
        ),
    )
    add_fix_arguments(validate)
    add_baseline_arguments(validate)
    validate.set_defaults(run=run_validate)
