"""torch is an extra: without it the tensor helpers say which extra to install, and nothing else needs it."""

from __future__ import annotations

import subprocess
import sys

import pytest

# A finder that makes ``import torch`` fail as it does where torch is not installed.
_NO_TORCH = """
import importlib.abc, sys
class NoTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, NoTorch())
"""


def _without_torch(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _NO_TORCH + code], capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.parametrize(
    "module",
    [
        "rl_contracts.routed_experts",
        "rl_contracts.codec",
        "rl_contracts.chat",
        "rl_contracts.rollouts",
        "rl_contracts.logprobs",
        "rl_contracts.vllm_utils",
    ],
)
def test_tensor_helper_without_torch_names_the_extra(module: str) -> None:
    """Importing a tensor helper without torch raises ModuleNotFoundError naming ``rl-contracts[torch]``."""
    done = _without_torch(
        f"""
try:
    import {module}
except ModuleNotFoundError as err:
    print(err.name, "|", err)
"""
    )
    assert done.returncode == 0, done.stderr
    name, _, message = done.stdout.strip().partition(" | ")
    assert name == "torch"
    assert 'pip install "rl-contracts[torch]"' in message
    assert "need torch, which is not installed" in message


def test_the_rest_runs_without_torch() -> None:
    """The configuration layer, the CLI and the token-level helpers import and run with torch unavailable."""
    done = _without_torch(
        """
import rl_contracts, rl_contracts.config, rl_contracts.splice, rl_contracts.multimodal, rl_contracts.prompts
import rl_contracts.weights, rl_contracts.metrics, rl_contracts.vllm_arguments, rl_contracts.cli
from importlib.resources import files
from rl_contracts.config import load_recipe
print(load_recipe(str(files("rl_contracts") / "recipes" / "grpo_qwen3_moe.yaml")).model_name)
"""
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Qwen/Qwen3-30B-A3B"
