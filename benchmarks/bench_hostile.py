"""Validating untrusted recipes: the 16 sample recipes, a generated 20,000-key recipe, and hostile files, with time
and peak memory, each beside OmegaConf's own load and resolve of the same file (the floor).

Run from the repository root::

    python benchmarks/bench_hostile.py [FOLDER] [--rounds N]

``FOLDER`` holds the sample recipes (default: ``$RL_CONTRACTS_RECIPE_CORPUS``, else ``../shared/nemo_rl_recipes``
when present; the samples are skipped when there is none).  Time is the median of ``--rounds`` rounds; peak memory
is measured in one more round under ``tracemalloc`` (Python allocations, so it omits C-level buffers).  The hostile
files are refused (V6): their rows show that refusing costs milliseconds where OmegaConf alone would not return.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import os
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from rl_contracts.config import load_recipe, register_resolvers
from rl_contracts.errors import RecipeError, RecipeLoadError
from rl_contracts.testing.strategies import minimal_vllm_generation

__all__ = ["big_recipe", "hostile_recipes", "main"]

DEFAULT_CORPUS = Path(__file__).resolve().parents[1] / ".." / "shared" / "nemo_rl_recipes"


def big_recipe(keys: int = 20_000) -> str:
    """A valid recipe (JSON, which is YAML) with ``keys`` leaf keys in mappings of 10, plus a generation section."""
    sections = {f"section{i}": {f"key{j}": i * 10 + j for j in range(10)} for i in range(keys // 10)}
    return json.dumps({"policy": {"generation": minimal_vllm_generation()}, **sections}, indent=1)


def hostile_recipes() -> dict[str, str]:
    """Small files that expand into gigabytes or overflow the stack, by name."""
    doubling = "p0: 'abcdefghij'\n" + "".join(
        f"p{i}: '" + f"${{.p{i - 1}}}" * 10 + "'\n" for i in range(1, 11)
    )
    aliases = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    aliases += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    return {
        "10 levels of '${.prev}' x 10 (10**11 characters)": doubling,
        "${mul:ab,500000000} (1 GB string)": "a: ${mul:ab,500000000}\n",
        "alias bomb, 10**9 nodes": "\n".join(aliases) + "\n",
        "30,000 nested lists": "a: " + "[" * 30_000 + "]" * 30_000 + "\n",
    }


_UNCAPPED: dict[str, Any] = (
    {"max_yaml_expanded_nodes": None}
    if "max_yaml_expanded_nodes" in inspect.signature(OmegaConf.load).parameters
    else {}
)


def _floor(path: Path) -> None:
    """OmegaConf alone, without its 10,000-node cap (2.4), which refuses the 20,000-key recipe."""
    OmegaConf.to_container(OmegaConf.load(path, **_UNCAPPED), resolve=True)


def _validate(path: Path, root: Path | None) -> None:
    with contextlib.suppress(RecipeError, RecipeLoadError):
        load_recipe(path, root=root)


def _each(run: Callable[[Path], None], paths: list[Path]) -> None:
    for path in paths:
        run(path)


def _measure(run: Callable[[], Any], rounds: int) -> tuple[float, float]:
    """(median seconds, peak MiB of Python allocations)."""
    run()  # warm-up
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    tracemalloc.start()
    try:
        run()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return statistics.median(times), peak / 2**20


def _row(name: str, measured: tuple[float, float], floor: tuple[float, float] | None) -> str:
    seconds, peak = measured
    ratio = f"{seconds / floor[0]:6.2f}x" if floor else "     - "
    return f"{name:<52} {seconds * 1e3:10.1f}ms {peak:8.1f}MiB  {ratio}"


def main() -> None:
    """Measure every case and print time, peak memory and the ratio to the floor."""
    parser = argparse.ArgumentParser(description="Time and memory of validate on honest and hostile recipes.")
    parser.add_argument("folder", nargs="?", help="folder of the sample recipes")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds per case (default 3)")
    args = parser.parse_args()
    corpus_env = os.environ.get("RL_CONTRACTS_RECIPE_CORPUS")
    corpus = Path(args.folder or corpus_env or DEFAULT_CORPUS)
    register_resolvers()
    print(f"{'case':<52} {'time':>12} {'peak':>11}  x floor")
    samples = sorted(corpus.rglob("*.yaml")) if corpus.is_dir() else []
    if samples:
        os.environ.setdefault("HF_HOME", "/tmp/hf_home")
        floor_samples = _measure(lambda: _each(_floor_chain, samples), args.rounds)
        print(_row(f"floor: OmegaConf, {len(samples)} sample recipes", floor_samples, None))
        validated = _measure(lambda: _each(lambda path: _validate(path, corpus), samples), args.rounds)
        print(_row(f"validate, {len(samples)} sample recipes", validated, floor_samples))
    else:
        print(f"(no sample recipes under {corpus}: skipped)")
    with tempfile.TemporaryDirectory() as folder:
        big = Path(folder) / "big.yaml"
        big.write_text(big_recipe(), encoding="utf-8")
        floor_big = _measure(lambda: _floor(big), args.rounds)
        print(_row("floor: OmegaConf, 20,000-key recipe", floor_big, None))
        print(
            _row(
                "validate, 20,000-key recipe", _measure(lambda: _validate(big, None), args.rounds), floor_big
            )
        )
        for name, text in hostile_recipes().items():
            path = Path(folder) / "hostile.yaml"
            path.write_text(text, encoding="utf-8")
            refuse = _measure(lambda file=path: _validate(file, None), args.rounds)  # type: ignore[misc]
            print(_row(f"refuse: {name}", refuse, None))


def _floor_chain(path: Path) -> None:
    """OmegaConf alone on a sample: the file merged onto its ``defaults`` parents, then resolved."""
    loaded: Any = OmegaConf.load(path)
    parents = loaded.pop("defaults", None)
    names = [] if parents is None else [parents] if isinstance(parents, str) else list(parents)
    configs = [_chain(path.parent / name) for name in names]
    OmegaConf.to_container(OmegaConf.merge(*configs, loaded) if configs else loaded, resolve=True)


def _chain(path: Path) -> Any:
    loaded: Any = OmegaConf.load(path)
    parents = loaded.pop("defaults", None)
    names = [] if parents is None else [parents] if isinstance(parents, str) else list(parents)
    configs = [_chain(path.parent / name) for name in names]
    return OmegaConf.merge(*configs, loaded) if configs else loaded


if __name__ == "__main__":
    main()
