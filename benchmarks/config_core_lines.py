"""Lines of the config linter core, the figure issue 28 sets a goal for (docs/development/config-core.md).

Run from the repository root::

    python benchmarks/config_core_lines.py

The core is every ``.py`` file under ``src/rl_contracts/config`` plus ``src/rl_contracts/_internal/config_*.py``,
without the whole-recipe models and checks (:data:`WHOLE_RECIPE`), which another issue added.  Lines are counted
as ``wc -l`` counts them.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["WHOLE_RECIPE", "core_files", "line_count", "main"]

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "rl_contracts"

WHOLE_RECIPE = frozenset(
    [
        *(
            f"config/section/{name}.py"
            for name in (
                "algorithm", "training", "policy", "dtensor", "megatron", "loss_fn", "grpo", "ppo", "supervised",
                "distillation", "async_rl", "data", "data_plane", "logger", "cluster", "checkpointing", "eval",
                "variants", "recipe", "key_paths",
            )
        ),
        "config/loading/check_recipe.py",
        "config/rules/recipe_schema.py",
        "config/rules/recipe_keys.py",
        "config/rules/recipe_arithmetic.py",
    ]
)  # fmt: skip
"""The whole-recipe modules, relative to the package."""


def core_files(package: Path = PACKAGE) -> tuple[list[Path], list[Path]]:
    """The linter core's files and the whole-recipe files, each sorted."""
    files = sorted([*package.glob("config/**/*.py"), *package.glob("_internal/config_*.py")])
    whole = [file for file in files if file.relative_to(package).as_posix() in WHOLE_RECIPE]
    return [file for file in files if file not in whole], whole


def line_count(files: list[Path]) -> int:
    """The newline count of ``files`` together (``wc -l``)."""
    return sum(file.read_bytes().count(b"\n") for file in files)


def main() -> None:
    core, whole = core_files()
    print(f"linter core: {line_count(core):,} lines in {len(core)} files")
    print(f"whole-recipe modules (left out): {line_count(whole):,} lines in {len(whole)} files")


if __name__ == "__main__":
    main()
