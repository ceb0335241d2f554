"""Validating the 16 sample recipes: with preflight, without it, and OmegaConf's own composition (the floor).

Run from the repository root (the samples are read from ``../shared/nemo_rl_recipes``)::

    python benchmarks/bench_validate.py [--rounds N]

Three cases, each over all 16 files per round, interleaved round by round so that machine noise hits them alike;
the figure is the median round:

- **floor**: what a trainer does with OmegaConf alone: ``OmegaConf.load`` every file of the ``defaults:`` chain,
  ``OmegaConf.merge`` parents and child, ``OmegaConf.to_container(resolve=True)``;
- **validate, no preflight**: ``load_recipe(path, run_preflight=False)`` (composition with provenance, resolution
  leaf by leaf, schema, cross-field and reload-refit rules, key classes);
- **validate**: ``load_recipe(path)``, preflight included.

Goals (issue 13): preflight adds at most 25% to a validate run, and a whole validate is at most 3x the floor.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from rl_contracts.config import load_recipe, register_resolvers
from rl_contracts.errors import RecipeError

__all__ = ["SAMPLES", "main"]

SAMPLES = Path(__file__).resolve().parents[1] / ".." / "shared" / "nemo_rl_recipes"


def _compose(path: Path) -> DictConfig:
    """OmegaConf alone: the file merged onto its ``defaults:`` parents, depth-first, left to right."""
    loaded = OmegaConf.load(path)
    assert isinstance(loaded, DictConfig)
    parents = loaded.pop("defaults", None)
    names = [] if parents is None else [parents] if isinstance(parents, str) else list(parents)
    configs = [_compose(path.parent / name) for name in names]
    merged = OmegaConf.merge(*configs, loaded) if configs else loaded
    assert isinstance(merged, DictConfig)
    return merged


def floor(files: list[Path]) -> None:
    """Compose and resolve every file with OmegaConf alone."""
    for path in files:
        OmegaConf.to_container(_compose(path), resolve=True)


def validate(files: list[Path], *, preflight: bool) -> None:
    """``load_recipe`` every file; an invalid recipe (a ``RecipeError``) counts like a valid one."""
    for path in files:
        with contextlib.suppress(RecipeError):
            load_recipe(path, run_preflight=preflight, root=SAMPLES)


def _time(run: Callable[[], Any]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def main() -> None:
    """Measure the three cases and print them side by side."""
    parser = argparse.ArgumentParser(description="Time validate over the 16 sample recipes.")
    parser.add_argument("--rounds", type=int, default=15, help="rounds of all 16 files per case (default 15)")
    rounds = parser.parse_args().rounds
    files = sorted(SAMPLES.rglob("*.yaml"))
    if len(files) != 16:
        raise SystemExit(f"expected the 16 sample recipes under {SAMPLES}, found {len(files)}")
    register_resolvers()
    cases: dict[str, Callable[[], None]] = {
        "floor: OmegaConf load + merge + resolve": lambda: floor(files),
        "validate, no preflight": lambda: validate(files, preflight=False),
        "validate (with preflight)": lambda: validate(files, preflight=True),
    }
    for run in cases.values():  # warm-up: imports, resolver registration, pydantic's first validations
        run()
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(rounds):
        for name, run in cases.items():
            times[name].append(_time(run))
    median = {name: statistics.median(values) for name, values in times.items()}
    base, plain, full = median.values()
    print(f"16 sample recipes, median of {rounds} rounds")
    print(f"{'case':<42} {'time':>9} {'per file':>9} {'x floor':>8}")
    for name, seconds in median.items():
        print(f"{name:<42} {seconds * 1e3:7.1f}ms {seconds * 1e3 / 16:7.2f}ms {seconds / base:7.2f}x")
    print(f"preflight adds {100 * (full / plain - 1):.1f}% to validate (goal <= 25%)")
    print(f"validate is {full / base:.2f}x the floor (goal <= 3x)")


if __name__ == "__main__":
    main()
