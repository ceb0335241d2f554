"""Start-up time of the ``rl-contracts`` console script, each run a fresh interpreter, beside its floors.

Run from the repository root::

    python benchmarks/bench_cli_start.py [--runs N] [--recipe FILE] [--samples DIR]

Six cases, each run ``N`` times (default 21) as a subprocess of the interpreter running this script, interleaved
run by run (the order rotates) so that machine noise hits them alike; the figure is the median wall time:

- **bare interpreter**: ``python -c pass``;
- **floor**: ``python -c "import pydantic, omegaconf, yaml"``, the libraries a recipe check cannot do without;
- **pydantic in use** (context, no goal): the floor plus defining and validating a one-field pydantic model
  (``import pydantic`` is lazy: the floor imports almost none of the model machinery a validation needs);
- ``rl-contracts --version``;
- ``rl-contracts validate FILE``, by default ``tests/data/recipes/grpo_qwen3_8b.yaml`` (a child of
  ``grpo_base.yaml``: composition, a resolver, schema, cross-field and preflight rules), output discarded;
- ``rl-contracts validate --root DIR FILE...``: every sample recipe under ``DIR`` (by default the 16 of
  ``../shared/nemo_rl_recipes``) in one call, as a pre-commit hook over a recipe folder runs it; left out when
  ``DIR`` holds none.

``rl-contracts`` is the console script beside the interpreter (what a pre-commit hook runs), else
``python -m rl_contracts.cli``.  Goals (issue 20, kept by issue 29 for whole recipes): validate one recipe at most
2x the floor, ``--version`` at most 1.2x the bare interpreter plus 50 ms; the all-samples call is printed beside the
floor, per call and per file.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["DEFAULT_RECIPE", "DEFAULT_SAMPLES", "PYDANTIC_IN_USE", "cli_command", "main", "time_once"]

PYDANTIC_IN_USE = "import pydantic, omegaconf, yaml\nclass Model(pydantic.BaseModel):\n    x: int\nModel.model_validate({'x': 1})"
"""The floor plus what the first validation of any pydantic model costs (the ``pydantic in use`` case)."""

DEFAULT_RECIPE = Path(__file__).resolve().parents[1] / "tests" / "data" / "recipes" / "grpo_qwen3_8b.yaml"

DEFAULT_SAMPLES = Path(__file__).resolve().parents[2] / "shared" / "nemo_rl_recipes"
"""The sample recipes validated in one call (the folder ``bench_validate.py`` reads)."""


def cli_command() -> list[str]:
    """The ``rl-contracts`` console script beside ``sys.executable``, else ``python -m rl_contracts.cli``."""
    script = shutil.which("rl-contracts", path=os.path.dirname(sys.executable))
    return [script] if script is not None else [sys.executable, "-m", "rl_contracts.cli"]


def time_once(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall time and CPU time (user + system of the child) in seconds of one run of ``command``, stdout and
    stderr discarded; raises ``CalledProcessError`` if it exits non-zero."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    """Measure the cases and print their medians and the ratios against the goals."""
    parser = argparse.ArgumentParser(description="Time rl-contracts start-up against a bare interpreter.")
    parser.add_argument("--runs", type=int, default=21, help="runs of each case (default 21)")
    parser.add_argument("--recipe", type=Path, default=DEFAULT_RECIPE, help="recipe for validate")
    parser.add_argument(
        "--samples", type=Path, default=DEFAULT_SAMPLES, help="folder of the recipes validated in one call"
    )
    args = parser.parse_args()
    if args.runs < 1:
        raise SystemExit(f"--runs must be at least 1, got {args.runs}")
    if not args.recipe.is_file():
        raise SystemExit(f"--recipe {args.recipe} is not a file")
    cli = cli_command()
    cases = {
        "bare interpreter: python -c pass": [sys.executable, "-c", "pass"],
        "floor: python -c 'import pydantic, omegaconf, yaml'": [
            sys.executable,
            "-c",
            "import pydantic, omegaconf, yaml",
        ],
        "pydantic in use: floor + a model validated": [
            sys.executable,
            "-c",
            PYDANTIC_IN_USE,
        ],
        "rl-contracts --version": [*cli, "--version"],
        "rl-contracts validate FILE": [*cli, "validate", str(args.recipe)],
    }
    samples = sorted(str(path) for path in args.samples.rglob("*.yaml")) if args.samples.is_dir() else []
    all_samples = f"rl-contracts validate (all {len(samples)} samples)"
    if samples:
        cases[all_samples] = [*cli, "validate", "--root", str(args.samples), *samples]
    commands = list(cases.values())
    # Bytecode is cached as for any installed package (a PYTHONDONTWRITEBYTECODE=1 shell would otherwise make every
    # run compile the package from source); the warm-up run writes it and warms the file cache.
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    for command in commands:
        time_once(command, env)
    walls: list[list[float]] = [[] for _ in commands]
    cpus: list[list[float]] = [[] for _ in commands]
    for run in range(args.runs):
        for offset in range(len(commands)):
            index = (run + offset) % len(commands)
            wall, cpu = time_once(commands[index], env)
            walls[index].append(wall)
            cpus[index].append(cpu)
    wall_medians = [statistics.median(sample) for sample in walls]
    cpu_medians = [statistics.median(sample) for sample in cpus]
    print(f"{args.runs} runs of each case, interleaved; medians; rl-contracts is {' '.join(cli)}")
    print(f"  {'case':<52} {'wall':>9} {'CPU':>9}   wall min-max")
    for name, wall, cpu, sample in zip(cases, wall_medians, cpu_medians, walls, strict=True):
        print(
            f"  {name:<52} {wall * 1000:6.1f} ms {cpu * 1000:6.1f} ms   "
            f"{min(sample) * 1000:.1f}-{max(sample) * 1000:.1f} ms"
        )
    for label, (bare, floor, in_use, version, validate, *every) in (
        ("wall", wall_medians),
        ("CPU", cpu_medians),
    ):
        version_goal = 1.2 * bare + 0.050
        print(
            f"{label:>4}: validate / floor {validate / floor:.2f}x (goal <= 2x), / pydantic in use "
            f"{validate / in_use:.2f}x (pydantic in use / floor {in_use / floor:.2f}x); --version {version * 1000:.1f} ms "
            f"against 1.2 x bare + 50 ms = {version_goal * 1000:.1f} ms: {version / version_goal:.2f} of it "
            f"(goal <= 1), {version / bare:.2f}x bare"
        )
        if every:
            print(
                f"{label:>4}: all {len(samples)} samples in one call {every[0] * 1000:.1f} ms = {every[0] / floor:.2f}x "
                f"the floor, {every[0] / len(samples) * 1000:.1f} ms per file = {every[0] / len(samples) / floor:.2f}x "
                "the floor"
            )


if __name__ == "__main__":
    main()
