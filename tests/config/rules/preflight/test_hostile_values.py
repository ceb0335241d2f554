"""Preflight on hostile numbers: every size is checked against its minimum on its own (no two out-of-range
values cancel out), and inf, nan, huge ints and negative sizes give a finding, never a traceback (issue 21)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from rl_contracts.config.rules.preflight import PreflightOptions, preflight
from rl_contracts.errors import MAX_MESSAGE_CHARS

Recipe = Callable[..., dict[str, Any]]
"""The ``recipe`` fixture of ``conftest.py``: the base recipe with dotted-path overrides."""

NO_ENV = PreflightOptions(environ={})
PG = "policy.generation"
VC = f"{PG}.vllm_cfg"
RES = f"{PG}.colocated.resources"
HUGE = 16**4000
"""An int of 4,817 decimal digits: YAML reads hex ints of any length, and ``str()`` of it raises ValueError."""
SINGLE_CONTROLLER: dict[str, object] = {
    "grpo.async_grpo": None,
    "grpo.val_period": 0,
    "data_plane.enabled": True,
    "async_rl.min_groups_for_streaming_train": 8,
}
DYNAMIC: dict[str, object] = {
    "grpo.use_dynamic_sampling": True,
    "data.use_multiple_dataloader": True,
    "data.num_prompts_per_dataloader": 4,
}


CANCELLING: dict[str, tuple[dict[str, object], str]] = {
    "megatron pp and cp -1 (product 1)": (
        {
            "policy.megatron_cfg.enabled": True,
            "policy.dtensor_cfg.enabled": False,
            "policy.megatron_cfg.pipeline_model_parallel_size": -1,
            "policy.megatron_cfg.context_parallel_size": -1,
        },
        "policy.megatron_cfg.pipeline_model_parallel_size",
    ),
    "dtensor tp and cp -1": (
        {"policy.dtensor_cfg.tensor_parallel_size": -1, "policy.dtensor_cfg.context_parallel_size": -1},
        "policy.dtensor_cfg.tensor_parallel_size",
    ),
    "vllm tp and pp -1": (
        {f"{VC}.tensor_parallel_size": -1, f"{VC}.pipeline_parallel_size": -1},
        f"{VC}.tensor_parallel_size",
    ),
    "vllm ep -2": ({f"{VC}.expert_parallel_size": -2}, f"{VC}.expert_parallel_size"),
    "reward model -1 nodes adds a node": (
        {
            "data.train": {"env_name": "reward_model"},
            "env.reward_model.resources": {"num_nodes": -1, "gpus_per_node": 1},
            "cluster.num_nodes": 2,
        },
        "env.reward_model.resources.num_nodes",
    ),
    "reward model -2 GPUs adds GPUs": (
        {
            "data.train": {"env_name": "reward_model"},
            "env.reward_model.resources": {"num_nodes": 1, "gpus_per_node": -2},
        },
        "env.reward_model.resources.gpus_per_node",
    ),
    "teacher -1 nodes adds a node": (
        {
            "on_policy_distillation": {
                "enabled": True,
                "non_colocated_teachers": {"enabled": True},
                "teacher_model_by_agent_name": {"math": "t1"},
                "default_teacher_cfg": {"num_nodes": -1},
            },
            "cluster.num_nodes": 2,
            f"{VC}.async_engine": True,
        },
        "on_policy_distillation.default_teacher_cfg.num_nodes",
    ),
    "teacher 0 GPUs": (
        {
            "on_policy_distillation": {
                "enabled": True,
                "non_colocated_teachers": {"enabled": True},
                "teacher_model_by_agent_name": {"math": "t1"},
                "teacher_overrides": {"t1": {"gpus_per_node": 0}},
            },
            "cluster.num_nodes": 2,
            f"{VC}.async_engine": True,
        },
        "on_policy_distillation.teacher_overrides.t1.gpus_per_node",
    ),
    "single controller -1 generation nodes": (
        {
            **SINGLE_CONTROLLER,
            "cluster.num_nodes": 2,
            f"{PG}.colocated.enabled": False,
            f"{RES}.gpus_per_node": 8,
            f"{RES}.num_nodes": -1,
        },
        f"{RES}.num_nodes",
    ),
    "forced ratio with -8 prompts x -4 generations = 32": (
        {
            "loss_fn.force_on_policy_ratio": True,
            "grpo.num_prompts_per_step": -8,
            "grpo.num_generations_per_prompt": -4,
        },
        "grpo.num_prompts_per_step",
    ),
    "single controller -8 x -4 = 32": (
        {**SINGLE_CONTROLLER, "grpo.num_prompts_per_step": -8, "grpo.num_generations_per_prompt": -4},
        "grpo.num_prompts_per_step",
    ),
    "dynamic sampling with a negative multiplier": (
        {**DYNAMIC, "grpo.batch_multiplier": -1.0},
        "grpo.batch_multiplier",
    ),
}


@pytest.mark.parametrize("case", CANCELLING, ids=list(CANCELLING))
def test_out_of_range_sizes_never_cancel_out(case: str, recipe: Recipe) -> None:
    """Each out-of-range size is an error at its own path, whatever the other sizes make of a product or sum."""
    layer, path = CANCELLING[case]
    report = preflight(recipe(layer), NO_ENV)
    assert path in {finding.path for finding in report.errors}, report.errors


NUMERIC_PATHS: tuple[str, ...] = (
    "cluster.num_nodes",
    "cluster.gpus_per_node",
    "grpo.num_prompts_per_step",
    "grpo.num_generations_per_prompt",
    "grpo.val_num_generations_per_prompt",
    "grpo.batch_multiplier",
    "grpo.val_period",
    "data.num_prompts_per_dataloader",
    "loss_fn.reference_policy_kl_penalty",
    "policy.train_global_batch_size",
    "policy.train_micro_batch_size",
    "policy.logprob_batch_size",
    "policy.max_total_sequence_length",
    "policy.dtensor_cfg.tensor_parallel_size",
    "policy.dtensor_cfg.context_parallel_size",
    "policy.dtensor_cfg.dp_replicate_size",
    f"{PG}.top_k",
    f"{PG}.top_p",
    f"{VC}.tensor_parallel_size",
    f"{VC}.pipeline_parallel_size",
    f"{VC}.expert_parallel_size",
    f"{VC}.max_model_len",
    "async_rl.min_groups_for_streaming_train",
    f"{RES}.gpus_per_node",
    f"{RES}.num_nodes",
)
HOSTILE: dict[str, object] = {
    "inf": float("inf"),
    "-inf": float("-inf"),
    "nan": float("nan"),
    "huge": HUGE,
    "-huge": -HUGE,
    "2**63": 2**63,
    "1e308": 1e308,
    "zero": 0,
    "minus one": -1,
}
CONTEXTS: dict[str, tuple[dict[str, object], ...]] = {
    "grpo": (),
    "dynamic sampling, forced ratio": (DYNAMIC, {"loss_fn.force_on_policy_ratio": True}),
    "non-colocated, two nodes": (
        {
            "cluster.num_nodes": 2,
            f"{PG}.colocated.enabled": False,
            f"{RES}.num_nodes": 1,
            f"{RES}.gpus_per_node": 8,
        },
    ),
    "single controller": (SINGLE_CONTROLLER, {f"{PG}.colocated.enabled": False, f"{RES}.gpus_per_node": 4}),
}


@pytest.mark.parametrize("context", CONTEXTS, ids=list(CONTEXTS))
@pytest.mark.parametrize("value", HOSTILE, ids=list(HOSTILE))
def test_hostile_numbers_give_findings_not_tracebacks(context: str, value: str, recipe: Recipe) -> None:
    """Every hostile number at every numeric path a rule reads yields a report whose messages are bounded; a
    non-finite float, and an int beyond 64 bits, read by a rule is an error at its path."""
    for path in NUMERIC_PATHS:
        report = preflight(recipe(*CONTEXTS[context], {path: HOSTILE[value]}), NO_ENV)
        assert all(len(finding.message) <= MAX_MESSAGE_CHARS for finding in report.findings)
        assert all(len(item.reason) <= MAX_MESSAGE_CHARS for item in report.skipped)
        if value in ("inf", "-inf", "nan", "huge", "-huge", "2**63") and path in _ALWAYS_READ:
            assert path in {finding.path for finding in report.errors}, (path, report.errors)


_ALWAYS_READ = frozenset(
    {
        "cluster.num_nodes",
        "cluster.gpus_per_node",
        f"{VC}.tensor_parallel_size",
    }
)
"""Paths every context's rules read (so a hostile value there is always reported)."""


@pytest.mark.parametrize("value", ["inf", "nan", "-inf", "1e308"])
def test_batch_multiplier_out_of_range_under_dynamic_sampling_is_p7(value: str, recipe: Recipe) -> None:
    """batch_multiplier .inf/.nan/1e308 under dynamic sampling is a P7 error at grpo.batch_multiplier (it raised
    OverflowError or ValueError from int() before)."""
    report = preflight(recipe(DYNAMIC, {"grpo.batch_multiplier": HOSTILE.get(value, 1e308)}), NO_ENV)
    assert ("P7", "grpo.batch_multiplier") in {(f.code, f.path) for f in report.errors}


def test_huge_int_message_is_bounded_and_names_the_range(recipe: Recipe) -> None:
    """An int of thousands of digits is reported with a bounded rendering and the 64-bit range it must be in."""
    report = preflight(recipe({"cluster.gpus_per_node": HUGE}), NO_ENV)
    (finding,) = [f for f in report.errors if f.path == "cluster.gpus_per_node"]
    assert "bits>" in finding.message
    assert "signed 64-bit range" in finding.message
    assert len(finding.message) < 400
