"""The real NeMo RL recipes of ../shared/nemo_rl_recipes pass every preflight rule, except the defect PREFLIGHT.md
§7 names (router replay with enable_prefix_caching=false is P21 under vLLM 0.32 only)."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from rl_contracts.config import load_recipe
from rl_contracts.config.rules.preflight import PreflightOptions, preflight

RECIPES = Path(__file__).resolve().parents[1] / ".." / "shared" / "nemo_rl_recipes"
FILES = sorted(RECIPES.rglob("*.yaml")) if RECIPES.is_dir() else []
R3_RECIPE = "recipes/llm/grpo-qwen3-30ba3b-8n8g-megatron-cp2-r3.yaml"
OUT_OF_SCOPE = {"sft.yaml", "evals/eval.yaml", "distillation_math.yaml"}
ENTRYPOINTS = {
    "recipes/llm/grpo-llama3.1-8b-instruct-2n8g-async-1off-single-controller-streaming2.yaml": "grpo-sc"
}

pytestmark = pytest.mark.skipif(not FILES, reason="../shared/nemo_rl_recipes is not beside the checkout")


def resolved(path: Path) -> dict[str, Any]:
    """The composed recipe, resolved leaf by leaf as preflight receives it."""
    loader: Any = load_recipe  # run_preflight=False where load_recipe already runs preflight itself
    keywords: dict[str, Any] = (
        {"run_preflight": False} if "run_preflight" in inspect.signature(loader).parameters else {}
    )
    keywords["root"] = RECIPES  # the corpus is not a git work tree: its top folder is the root
    document = loader(path, **keywords).document
    container = OmegaConf.to_container(OmegaConf.create(document), resolve=True, throw_on_missing=False)
    assert isinstance(container, dict)
    return {str(key): value for key, value in container.items()}


def name(path: Path) -> str:
    """The recipe's path relative to the sample folder."""
    return path.relative_to(RECIPES).as_posix()


@pytest.mark.parametrize("version", [None, (0, 30), (0, 32)], ids=["no-version", "0.30", "0.32"])
@pytest.mark.parametrize("path", FILES, ids=[name(p) for p in FILES])
def test_real_recipe_passes_preflight(path: Path, version: tuple[int, int] | None) -> None:
    """Each real GRPO recipe gets no error, at its runner's entrypoint; only the R3 recipe fails P21 on 0.32."""
    report = preflight(resolved(path), PreflightOptions(vllm_version=version, environ={}))
    if name(path) in OUT_OF_SCOPE:
        assert not report.in_scope
        return
    assert report.entrypoint == ENTRYPOINTS.get(name(path), "grpo")
    errors = [(f.code, f.path) for f in report.errors]
    if name(path) == R3_RECIPE and version == (0, 32):
        assert errors == [("P21", "policy.generation.vllm_cfg.enable_prefix_caching")]
        assert "enable_prefix_caching=false" in report.errors[0].message
    else:
        assert errors == [], [f.message for f in report.errors]


def test_r3_recipe_reports_version_skip_without_version() -> None:
    """Without a vLLM version the R3 recipe's version-dependent P21 checks are a skipped note."""
    report = preflight(resolved(RECIPES / R3_RECIPE), PreflightOptions(environ={}))
    assert "P21" in {s.code for s in report.skipped}
