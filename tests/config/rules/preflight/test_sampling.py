"""P30 (a truncated support no learner renormalises over) and P31 (a teacher scoring at other sampling parameters),
over ``tests/data/preflight/base.yaml`` (a recipe that passes every rule)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from rl_contracts.config.rules.preflight import ABSENT, PreflightOptions, preflight
from rl_contracts.config.rules.preflight.context import Context
from rl_contracts.config.rules.preflight.reader import Reader
from rl_contracts.config.rules.preflight.sampling import check_distillation_scoring

Recipe = Callable[..., dict[str, Any]]
"""The ``recipe`` fixture of ``conftest.py``: the base recipe with dotted-path overrides."""

NO_ENV = PreflightOptions(environ={})
SC: dict[str, object] = {
    "grpo.async_grpo": None,
    "data_plane.enabled": True,
    "grpo.val_period": 0,
    "async_rl.min_groups_for_streaming_train": 1,
}
FUSED_PROCESSED_IS: dict[str, object] = {
    "policy.megatron_cfg.enabled": True,
    "policy.megatron_cfg.use_fused_linear_logprobs": True,
    "policy.dtensor_cfg.enabled": False,
    "policy.generation.top_p": 0.95,
    "policy.generation.val_top_p": 0.95,
    "policy.generation.vllm_cfg.logprobs_mode": "processed_logprobs",
    "loss_fn.use_importance_sampling_correction": True,
}


def p30(document: Mapping[str, Any], options: PreflightOptions = NO_ENV) -> list[tuple[str, str]]:
    return [(f.path, f.message) for f in preflight(document, options).findings if f.code == "P30"]


def test_single_controller_fused_learner_under_top_p_with_processed_logprobs_is_p30(recipe: Recipe) -> None:
    """The single-controller path never runs grpo.setup's P8 assertion: P30 names the fused path and the bias."""
    findings = p30(recipe(SC, FUSED_PROCESSED_IS))
    assert [path for path, _ in findings] == ["policy.megatron_cfg.use_fused_linear_logprobs"]
    message = findings[0][1]
    assert "top_p=0.95" in message
    assert "log S < 0" in message
    assert "raw_logprobs" in message


@pytest.mark.parametrize(
    "change",
    [
        {"policy.generation.vllm_cfg.logprobs_mode": "raw_logprobs"},
        {"policy.generation.vllm_cfg.logprobs_mode": ABSENT},  # the worker leaves vLLM's raw_logprobs
        {"loss_fn.use_importance_sampling_correction": False},
        {"policy.megatron_cfg.use_fused_linear_logprobs": False},  # the learner renormalises over the filter
        {"policy.generation.top_p": 1.0, "policy.generation.val_top_p": 1.0},
        {  # top_k 0 is off
            "policy.generation.top_p": None,
            "policy.generation.val_top_p": None,
            "policy.generation.top_k": 0,
            "policy.generation.val_top_k": 0,
        },
    ],
)
def test_p30_needs_every_part_of_the_bias(change: Mapping[str, object], recipe: Recipe) -> None:
    """Raw logprobs, no IS correction, a renormalising learner or no filter: no P30."""
    assert p30(recipe(SC, FUSED_PROCESSED_IS, change)) == []


def test_top_k_alone_truncates(recipe: Recipe) -> None:
    """top_k > 0 with top_p 1 is a truncated support too."""
    only_k = {
        "policy.generation.top_p": 1.0,
        "policy.generation.val_top_p": 1.0,
        "policy.generation.top_k": 20,
    }
    findings = p30(recipe(SC, FUSED_PROCESSED_IS, only_k, {"policy.generation.val_top_k": 20}))
    assert len(findings) == 1
    assert "top_k=20" in findings[0][1]


def test_p30_leaves_the_legacy_entrypoints_to_p8(recipe: Recipe) -> None:
    """grpo.setup refuses the fused path with a filter (P8); P30 does not report the same recipe twice."""
    report = preflight(recipe(FUSED_PROCESSED_IS), NO_ENV)
    codes = {f.code for f in report.findings}
    assert "P8" in codes
    assert "P30" not in codes


def distillation(student: Mapping[str, object], teacher: Mapping[str, object] | None) -> Context:
    """P31 run over a distillation-shaped document (preflight's scope is GRPO recipes, so the check is called)."""
    document: dict[str, Any] = {
        "policy": {"generation": {"backend": "vllm", **student}},
        "teacher": {"model_name": "teacher"} if teacher is None else {"generation": dict(teacher)},
    }
    context = Context(Reader(document), "grpo", NO_ENV, {}, code="P31")
    check_distillation_scoring(context)
    return context


def test_a_teacher_at_another_temperature_is_p31_at_its_key() -> None:
    """teacher.generation.temperature 1.0 against the student's 0.8: one error naming both and the fix."""
    context = distillation(
        {"temperature": 0.8, "top_p": 1.0, "top_k": None}, {"temperature": 1, "top_p": 1.0}
    )
    assert [(f.code, f.path) for f in context.findings] == [("P31", "teacher.generation.temperature")]
    message = context.findings[0].message
    assert "the teacher scores at temperature=1.0" in message
    assert "policy.generation.temperature=0.8" in message


def test_a_teacher_without_generation_scores_at_temperature_one_without_a_filter() -> None:
    """No teacher.generation: temperature 1, top-p 1 and no top-k, so a student at top_k 20 differs."""
    context = distillation({"temperature": 1.0, "top_p": 1.0, "top_k": 20}, None)
    assert [f.path for f in context.findings] == ["teacher.generation"]
    assert "top_k=None" in context.findings[0].message
    assert distillation({"temperature": 1, "top_p": 1, "top_k": -1}, None).findings == []


def test_equal_scoring_passes_and_grpo_recipes_have_no_teacher(recipe: Recipe) -> None:
    """Equal parameters (1 equals 1.0; top_k null, 0 and -1 are all off) pass; a GRPO recipe has no teacher."""
    student = {"temperature": 0.7, "top_p": 0.9, "top_k": 0}
    assert distillation(student, {"temperature": 0.7, "top_p": 0.9, "top_k": None}).findings == []
    assert not [f for f in preflight(recipe(), NO_ENV).findings if f.code == "P31"]
