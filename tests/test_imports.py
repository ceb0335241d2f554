"""Import-light core: the package root, config, CLI and other non-tensor modules never import torch or vLLM.

Each check runs in a fresh interpreter so modules imported by other tests cannot hide a regression (SPEC §0.2).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

LIGHT_MODULES = [
    "rl_contracts",
    "rl_contracts.errors",
    "rl_contracts.checks",
    "rl_contracts.protocols",
    "rl_contracts.config",
    "rl_contracts.config.preflight",
    "rl_contracts.refit",
    "rl_contracts.splice",
    "rl_contracts.multimodal",
    "rl_contracts.prompts",
    "rl_contracts.metrics",
    "rl_contracts.weights",
    "rl_contracts.cli",
]

TENSOR_MODULES = [
    "rl_contracts.routed_experts",
    "rl_contracts.codec",
    "rl_contracts.chat",
    "rl_contracts.logprobs",
    "rl_contracts.vllm_utils",
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
