"""The static arithmetic NeMo RL asserts only after Ray and the workers have started (P33-P36), checked on the
resolved whole recipe, each reported at the key to change.

Every check reads only values that are ints ≥ 1 (a missing or mistyped value is the schema's finding, not these);
defaults are NeMo RL's when a key is absent.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from ..._internal.messages import render
from ..finding import Finding, SuggestedFix
from ..rule import Rule, checks
from .recipe_schema import finding

__all__ = ["P33", "P34", "P35", "P36", "arithmetic_findings"]

P33 = Rule(
    "P33",
    "step-batch-not-divisible",
    summary="prompts x generations per step is not a multiple of policy.train_global_batch_size",
    reference="distributed/batched_data_dict.py:shard_by_batch_size, at the first policy.train (S6)",
    what_it_checks=(
        "For GRPO, PPO and distillation: that `num_prompts_per_step` x `num_generations_per_prompt` (the samples "
        "of one step) is a multiple of `policy.train_global_batch_size` (NeMo RL's defaults where a key is absent)."
    ),
    why_it_matters=(
        "The step's batch is cut into global batches with an assertion that the sizes divide: the run fails at "
        "its first training step, after generation has run."
    ),
    example="""\
policy:
  train_global_batch_size: 6
""",
    fix="Set policy.train_global_batch_size to a divisor of prompts x generations (or change the step's size).",
)
P34 = Rule(
    "P34",
    "micro-batch-not-dividing",
    summary="a global batch size is not a multiple of its micro-batch size",
    reference="models/policy/workers: the per-rank batch split into micro-batches (S6)",
    what_it_checks=(
        "With fixed micro-batches (no dynamic batching, no sequence packing): that `train_global_batch_size` is a "
        "multiple of `train_micro_batch_size` (policy, PPO's value model), and that the validation batch of SFT, "
        "DPO and RM (`val_global_batch_size`) is a multiple of `val_micro_batch_size`."
    ),
    why_it_matters=(
        "Each worker asserts that its share of the global batch splits into whole micro-batches: the run fails "
        "at its first training (or validation) step."
    ),
    example="""\
policy:
  train_micro_batch_size: 3
""",
    fix="Make the global batch size a multiple of the micro-batch size.",
)
P35 = Rule(
    "P35",
    "dynamic-batching-exclusions",
    summary="dynamic batching together with sequence packing, or with pipeline parallelism",
    reference="models/policy/lm_policy.py:Policy.__init__ (S4)",
    what_it_checks=(
        "That `policy.dynamic_batching` (and PPO's `value.dynamic_batching`) is not enabled together with "
        "`sequence_packing`, nor with a Megatron `pipeline_model_parallel_size` above 1."
    ),
    why_it_matters="The policy asserts both when it builds its workers, after Ray has started.",
    example="""\
policy:
  dynamic_batching:
    enabled: true
    train_mb_tokens: 4096
    sequence_length_round: 64
  sequence_packing:
    enabled: true
    train_mb_tokens: 4096
    algorithm: modified_first_fit_decreasing
""",
    fix="Enable one of dynamic batching and sequence packing; dynamic batching needs pipeline_model_parallel_size 1.",
)
P36 = Rule(
    "P36",
    "checkpoint-save-period-zero",
    summary="checkpointing is enabled with save_period 0",
    reference="algorithms/*.py: (step + 1) % save_period at the first step (S6)",
    what_it_checks="That `checkpointing.save_period` is at least 1 while `checkpointing.enabled` is true.",
    why_it_matters=(
        "The training loop takes the step modulo `save_period` to decide whether to save: a ZeroDivisionError at "
        "the end of the first step."
    ),
    example="""\
checkpointing:
  enabled: true
  save_period: 0
""",
    fix="Set save_period to at least 1, or disable checkpointing.",
    fix_safety="unsafe",
)

_STEP_SECTIONS: Final[Mapping[str, tuple[str, int, int]]] = {
    "grpo": ("grpo", 32, 16),
    "ppo": ("ppo", 32, 16),
    "distillation": ("distillation", 128, 1),
}
"""The section of a step's size per algorithm, with NeMo RL's defaults of prompts per step and generations."""

_VALIDATION_SECTIONS: Final[Mapping[str, tuple[str, int, int]]] = {
    "sft": ("sft", 32, 1),
    "dpo": ("dpo", 8, 1),
    "rm": ("rm", 32, 1),
}
"""The section of a validation batch per algorithm, with NeMo RL's defaults of its global and micro batch sizes."""


def _get(document: Mapping[Any, Any], *keys: str) -> object:
    holder: object = document
    for key in keys:
        if not isinstance(holder, Mapping):
            return None
        holder = holder.get(key)
    return holder


def _count(document: Mapping[Any, Any], *keys: str, default: int | None = None) -> int | None:
    """The int ≥ 1 at ``keys``; ``default`` when the key is absent; ``None`` for anything else."""
    holder = _get(document, *keys[:-1])
    if isinstance(holder, Mapping) and keys[-1] not in holder:
        return default
    value = _get(document, *keys)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


def _enabled(document: Mapping[Any, Any], *keys: str) -> bool:
    return _get(document, *keys, "enabled") is True


def _fixed_micro_batches(document: Mapping[Any, Any], model: str) -> bool:
    return not _enabled(document, model, "dynamic_batching") and not _enabled(
        document, model, "sequence_packing"
    )


def _step_batch(document: Mapping[Any, Any], algorithm: str) -> Iterator[Finding]:
    if algorithm not in _STEP_SECTIONS:
        return
    section, prompts_default, generations_default = _STEP_SECTIONS[algorithm]
    prompts = _count(document, section, "num_prompts_per_step", default=prompts_default)
    generations = _count(document, section, "num_generations_per_prompt", default=generations_default)
    batch = _count(document, "policy", "train_global_batch_size")
    if prompts is None or generations is None or batch is None or (prompts * generations) % batch == 0:
        return
    samples = prompts * generations
    reason = (
        f"policy.train_global_batch_size={render(batch)} does not divide the {render(samples)} samples of a step "
        f"({section}.num_prompts_per_step={render(prompts)} x {section}.num_generations_per_prompt={render(generations)}): the "
        "first training step fails its batch-split assertion; use a divisor of the step's samples"
    )
    yield finding(("policy", "train_global_batch_size"), P33.code, "error", reason, batch)


def _micro_batches(document: Mapping[Any, Any], algorithm: str) -> Iterator[Finding]:
    models = ("policy", "value") if algorithm == "ppo" else ("policy",)
    for model in models:
        if not _fixed_micro_batches(document, model):
            continue
        batch = _count(document, model, "train_global_batch_size")
        micro = _count(document, model, "train_micro_batch_size")
        if batch is not None and micro is not None and batch % micro != 0:
            reason = (
                f"{model}.train_global_batch_size={render(batch)} is not a multiple of {model}.train_micro_batch_size={render(micro)}: "
                "each worker's share of a global batch must split into whole micro-batches"
            )
            yield finding((model, "train_micro_batch_size"), P34.code, "error", reason, micro)
    if algorithm in _VALIDATION_SECTIONS and _fixed_micro_batches(document, "policy"):
        section, batch_default, micro_default = _VALIDATION_SECTIONS[algorithm]
        batch = _count(document, section, "val_global_batch_size", default=batch_default)
        micro = _count(document, section, "val_micro_batch_size", default=micro_default)
        if batch is not None and micro is not None and batch % micro != 0:
            reason = (
                f"{section}.val_global_batch_size={render(batch)} is not a multiple of {section}.val_micro_batch_size="
                f"{micro}: validation splits each batch into whole micro-batches"
            )
            yield finding((section, "val_micro_batch_size"), P34.code, "error", reason, micro)


def _dynamic_batching(document: Mapping[Any, Any], algorithm: str) -> Iterator[Finding]:
    models = ("policy", "value") if algorithm == "ppo" else ("policy",)
    for model in models:
        if not _enabled(document, model, "dynamic_batching"):
            continue
        where = (model, "dynamic_batching", "enabled")
        if _enabled(document, model, "sequence_packing"):
            reason = (
                f"{model}.dynamic_batching and {model}.sequence_packing are both enabled; the policy accepts only one "
                "(disable one of them)"
            )
            yield finding(where, P35.code, "error", reason, True)
        stages = _count(document, model, "megatron_cfg", "pipeline_model_parallel_size")
        if _enabled(document, model, "megatron_cfg") and stages is not None and stages > 1:
            reason = (
                f"{model}.dynamic_batching needs a single pipeline stage, but megatron_cfg.pipeline_model_parallel_size="
                f"{stages}; disable dynamic batching or set the pipeline size to 1"
            )
            yield finding(where, P35.code, "error", reason, True)


def _save_period(document: Mapping[Any, Any]) -> Iterator[Finding]:
    period = _get(document, "checkpointing", "save_period")
    if _enabled(document, "checkpointing") and period == 0 and not isinstance(period, bool):
        reason = (
            "checkpointing is enabled with save_period=0: the training loop takes the step modulo save_period "
            "(ZeroDivisionError at the first step); set it to at least 1"
        )
        fix = SuggestedFix(action="set", value=1, description="set checkpointing.save_period to 1")
        yield finding(("checkpointing", "save_period"), P36.code, "error", reason, 0, fix)


@checks(P33, P34, P35, P36)
def arithmetic_findings(document: Mapping[Any, Any], algorithm: str) -> list[Finding]:
    """The P33-P36 findings of the resolved ``document`` of ``algorithm`` (see the module)."""
    return [
        *_step_batch(document, algorithm),
        *_micro_batches(document, algorithm),
        *_dynamic_batching(document, algorithm),
        *_save_period(document),
    ]
