"""Import-light core: the package root, config, CLI and other non-tensor modules never import torch or vLLM.

Each check runs in a fresh interpreter so modules imported by other tests cannot hide a regression (SPEC §0.2).
The cold-start pins (third release) say which heavy modules each entry point may load: ``import rl_contracts.config``
and the ``validate``, ``rules`` and ``schema`` commands no numpy, torch, prometheus_client, vLLM or (on a pipe)
rich; ``--version`` and ``--help`` none of them and no recipe code.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

LIGHT_MODULES = [
    "rl_contracts",
    "rl_contracts.errors",
    "rl_contracts.checks",
    "rl_contracts.protocols",
    "rl_contracts.config",
    "rl_contracts.config.rules.preflight",
    "rl_contracts.refit",
    "rl_contracts.splice",
    "rl_contracts.multimodal",
    "rl_contracts.prompts",
    "rl_contracts.metrics",
    "rl_contracts.weights",
    "rl_contracts.vllm_arguments",
    "rl_contracts.cli",
]

TENSOR_MODULES = [
    "rl_contracts.routed_experts",
    "rl_contracts.codec",
    "rl_contracts.chat",
    "rl_contracts.logprobs",
    "rl_contracts.vllm_utils",
    "rl_contracts.rollouts",
]


def _imported_after(statement: str) -> set[str]:
    probe = f"import sys\n{statement}\nprint(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


@pytest.mark.parametrize("module", LIGHT_MODULES)
def test_light_module_imports_neither_torch_nor_vllm(module: str) -> None:
    """Importing a config-path module leaves torch and vllm unimported."""
    loaded = _imported_after(f"import {module}")
    assert module in loaded
    assert "torch" not in loaded
    assert "vllm" not in loaded


def test_config_validation_and_cli_help_run_without_torch() -> None:
    """Validating a config and building the CLI parser never pull torch in."""
    loaded = _imported_after(
        "from rl_contracts.cli import build_parser\n"
        "build_parser()\n"
        "from rl_contracts.config import assert_reload_refit_config_supported\n"
        "assert_reload_refit_config_supported({'vllm_cfg': {'refit_with_reload_api': False}})"
    )
    assert "torch" not in loaded


@pytest.mark.parametrize("module", TENSOR_MODULES)
def test_no_module_imports_vllm(module: str) -> None:
    """Tensor modules import torch, but no library module ever imports vLLM."""
    loaded = _imported_after(f"import {module}")
    assert "torch" in loaded
    assert "vllm" not in loaded


# ---------------------------------------------------------------------------------------------- cold start

HEAVY = frozenset({"numpy", "torch", "prometheus_client", "vllm", "rich", "pydantic", "omegaconf", "yaml"})
RECIPE_LIBRARIES = frozenset({"pydantic", "omegaconf", "yaml"})
RECIPE = str(Path(__file__).parent / "data" / "recipes" / "grpo_qwen3_8b.yaml")
_CLI_PROBE = """
import sys
modules_file, sys.argv = sys.argv[1], ["rl-contracts", *sys.argv[2:]]
try:
    from rl_contracts.cli import console_main
    console_main()
except SystemExit:
    pass
with open(modules_file, "w", encoding="utf-8") as out:
    out.write(" ".join(sorted(sys.modules)))
"""

# Entry point -> the heavy modules it may import (SPEC §0.2).  The CLI runs write to a pipe, where the human report
# needs no rich (it prints through rich on a terminal only).
ENTRY_POINTS: dict[str, tuple[list[str] | str, frozenset[str]]] = {
    "import rl_contracts": ("import rl_contracts", frozenset()),
    "import rl_contracts.config": ("import rl_contracts.config", RECIPE_LIBRARIES),
    "rl-contracts --version": (["--version"], frozenset()),
    "rl-contracts --help": (["--help"], frozenset()),
    "rl-contracts validate --help": (["validate", "--help"], frozenset()),
    "rl-contracts metrics --help": (["metrics", "--help"], frozenset()),
    "rl-contracts validate": (["validate", RECIPE], RECIPE_LIBRARIES),
    "rl-contracts validate --format json": (["validate", "--format", "json", RECIPE], RECIPE_LIBRARIES),
    "rl-contracts validate --select": (["validate", "--select", "P,W", RECIPE], RECIPE_LIBRARIES),
    "rl-contracts rules": (["rules"], RECIPE_LIBRARIES),
    "rl-contracts rule": (["rule", "P19"], RECIPE_LIBRARIES),
    "rl-contracts schema": (["schema", "--recipe"], RECIPE_LIBRARIES),
}


def _loaded_by(entry: list[str] | str, tmp_path: Path) -> set[str]:
    """The modules in ``sys.modules`` after running ``entry`` (a statement, or CLI arguments) in a fresh
    interpreter whose stdout is a pipe."""
    if isinstance(entry, str):
        return _imported_after(entry)
    out = tmp_path / "modules.txt"
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    subprocess.run(
        [sys.executable, "-c", _CLI_PROBE, str(out), *entry], capture_output=True, check=True, env=env
    )
    return set(out.read_text(encoding="utf-8").split())


@pytest.mark.parametrize("name", list(ENTRY_POINTS))
def test_entry_point_imports_only_its_heavy_modules(name: str, tmp_path: Path) -> None:
    """Each entry point imports only the heavy modules pinned for it; --version and --help load no recipe code."""
    entry, allowed = ENTRY_POINTS[name]
    loaded = _loaded_by(entry, tmp_path)
    assert "rl_contracts" in loaded
    assert sorted(HEAVY & loaded - allowed) == []
    if (
        not allowed
    ):  # parser-only runs: the CLI's own modules and the error classes, nothing of the recipe code
        assert sorted(m for m in loaded if m.startswith("rl_contracts.config")) == []


def test_the_parsers_default_section_is_the_loaders() -> None:
    """The section named in ``validate --help`` (written in the CLI to keep recipe code out of it) is the loader's."""
    from rl_contracts.cli.validate import DEFAULT_SECTION as SHOWN
    from rl_contracts.config import DEFAULT_SECTION

    assert SHOWN == DEFAULT_SECTION


# ---------------------------------------------------------------------------------------------- private modules

PRIVATE_MODULES = sorted(
    f"rl_contracts._internal.{path.stem}"
    for path in (Path(__file__).parents[1] / "src" / "rl_contracts" / "_internal").glob("*.py")
    if path.stem != "__init__"
)


@pytest.mark.parametrize("module", PRIVATE_MODULES)
def test_every_private_module_imports_first(module: str) -> None:
    """A private module imported before anything else loads (no module meets a half-imported one)."""
    assert module in _imported_after(f"import {module}")


def test_metrics_stage_names_are_each_stages_all() -> None:
    """The package's lazily loaded names are exactly each stage's ``__all__``; the package loads ``names`` only."""
    import importlib

    import rl_contracts.metrics as metrics

    for stage, names in metrics.STAGE_NAMES.items():
        assert tuple(importlib.import_module(f"rl_contracts.metrics.{stage}").__all__) == names
    staged = [name for names in metrics.STAGE_NAMES.values() for name in names]
    assert sorted(metrics.__all__) == sorted(
        [*metrics.names.__all__, *staged]
    )  # the spelled-out list stays in step
    loaded = _imported_after("import rl_contracts.metrics")
    assert "rl_contracts.metrics.names" in loaded
    assert "rl_contracts.metrics.snapshot" not in loaded


@pytest.mark.parametrize(
    ("old", "new"),
    [("keys", "names"), ("engines", "snapshot"), ("prometheus", "snapshot"), ("engine_deltas", "deltas")],
)
def test_moved_metrics_modules_resolve_with_a_warning(old: str, new: str) -> None:
    """An old submodule of rl_contracts.metrics is the module that holds its names now, with a DeprecationWarning
    naming it; an unknown name stays an AttributeError."""
    import rl_contracts.metrics as metrics

    with pytest.warns(DeprecationWarning, match=f"rl_contracts.metrics.{new}"):
        module = getattr(metrics, old)
    assert module.__name__ == f"rl_contracts.metrics.{new}"
    with pytest.raises(AttributeError):
        metrics.no_such_name  # noqa: B018


def test_config_public_names_each_have_a_home() -> None:
    """Every name in ``rl_contracts.config.__all__`` loads from its stage on first access (none is left out)."""
    import rl_contracts.config as config

    assert sorted(config._HOME) == sorted(config.__all__)
    for name in config.__all__:
        assert getattr(config, name) is not None
