"""Real NeMo RL recipes pass every preflight rule, except the defect PREFLIGHT.md §7 names (router replay with
enable_prefix_caching=false is P21 under vLLM 0.32 only).

The sweep reads the external recipe corpus (``--recipe-corpus`` / ``RL_CONTRACTS_RECIPE_CORPUS``, conftest.py; CI
passes NeMo RL's samples) and skips without one; the router-replay structure is also checked on the project's own
``tests/data/recipes/router_replay.yaml``.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from rl_contracts.config import load_recipe
from rl_contracts.config.rules.preflight import PreflightOptions, preflight

R3_FIXTURE = Path(__file__).parent / "data" / "recipes" / "router_replay.yaml"
R3_RECIPE = "recipes/llm/grpo-qwen3-30ba3b-8n8g-megatron-cp2-r3.yaml"
OUT_OF_SCOPE = {"sft.yaml", "evals/eval.yaml", "distillation_math.yaml"}
ENTRYPOINTS = {
    "recipes/llm/grpo-llama3.1-8b-instruct-2n8g-async-1off-single-controller-streaming2.yaml": "grpo-sc"
}


def resolved(path: Path, root: Path | None = None) -> dict[str, Any]:
    """The composed recipe, resolved leaf by leaf as preflight receives it (``root``: where its parents may come
    from, for a corpus outside a git work tree)."""
    loader: Any = load_recipe  # run_preflight=False where load_recipe already runs preflight itself
    keywords: dict[str, Any] = (
        {"run_preflight": False} if "run_preflight" in inspect.signature(loader).parameters else {}
    )
    keywords["root"] = root
    document = loader(path, **keywords).document
    container = OmegaConf.to_container(OmegaConf.create(document), resolve=True, throw_on_missing=False)
    assert isinstance(container, dict)
    return {str(key): value for key, value in container.items()}


@pytest.mark.parametrize("version", [None, (0, 30), (0, 32)], ids=["no-version", "0.30", "0.32"])
def test_real_recipe_passes_preflight(
    corpus_recipe: Path, recipe_corpus: Path, version: tuple[int, int] | None
) -> None:
    """Each real GRPO recipe gets no error, at its runner's entrypoint; only the R3 recipe fails P21 on 0.32."""
    path = corpus_recipe
    report = preflight(resolved(path, recipe_corpus), PreflightOptions(vllm_version=version, environ={}))
    name = path.relative_to(recipe_corpus).as_posix()
    if name in OUT_OF_SCOPE:
        assert not report.in_scope
        return
    assert report.entrypoint == ENTRYPOINTS.get(name, "grpo")
    errors = [(f.code, f.path) for f in report.errors]
    if name == R3_RECIPE and version == (0, 32):
        assert errors == [("P21", "policy.generation.vllm_cfg.enable_prefix_caching")]
        assert "enable_prefix_caching=false" in report.errors[0].message
    else:
        assert errors == [], [f.message for f in report.errors]


def test_r3_recipe_reports_version_skip_without_version() -> None:
    """Without a vLLM version the R3 recipe's version-dependent P21 checks are a skipped note."""
    report = preflight(resolved(R3_FIXTURE), PreflightOptions(environ={}))
    assert "P21" in {s.code for s in report.skipped}


@pytest.mark.parametrize("version", [None, (0, 30), (0, 32)], ids=["no-version", "0.30", "0.32"])
def test_r3_fixture_fails_only_p21_on_vllm_0_32(version: tuple[int, int] | None) -> None:
    """The router-replay fixture, like NeMo RL's R3 recipe, passes preflight except P21 under vLLM 0.32."""
    report = preflight(resolved(R3_FIXTURE), PreflightOptions(vllm_version=version, environ={}))
    assert report.entrypoint == "grpo"
    expected = [("P21", "policy.generation.vllm_cfg.enable_prefix_caching")] if version == (0, 32) else []
    assert [(f.code, f.path) for f in report.errors] == expected
