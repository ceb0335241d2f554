"""Preflight rules of the trainer scripts beyond ``grpo.setup``: legacy async GRPO (P23), the single-controller
path (P24, P26) and the NeMo-Gym script (P27)."""

from __future__ import annotations

from collections.abc import Mapping

from ...._internal.config_absent import ABSENT
from ...._internal.messages import render
from ...rule import Rule, checks
from .context import LEGACY_ENTRIES, SC_ENTRIES, Context
from .facts import GENERATION, VLLM_CFG, VLLM_KWARGS, backend, gym, is_vllm

__all__ = [
    "P23",
    "P24",
    "P26",
    "P27",
    "check_gym_script",
    "check_legacy_async",
    "check_single_controller_batch",
    "check_single_controller_gates",
]

_ASYNC_BACKENDS = ("vllm", "megatron", "trtllm", "dynamo")


P23 = Rule(
    "P23",
    "legacy-async-grpo-conflict",
    summary="legacy async GRPO with a backend or feature it excludes",
    reference="algorithms/grpo.py:async_grpo_train ~4114-4180, examples/run_grpo.py after setup (S5)",
    what_it_checks=(
        "That legacy async GRPO (`grpo.async_grpo.enabled`) runs on a backend and with features it supports: "
        "vLLM with the async engine (or megatron, trtllm, dynamo), importance-sampling correction, no "
        "colocation except with megatron, no dynamic sampling, reward scaling or shaping, one dataloader."
    ),
    why_it_matters=(
        "`grpo.py:async_grpo_train` (~4114-4180) fails an assertion or raises `NotImplementedError` only "
        "after every model is loaded (S5)."
    ),
    example="""\
grpo:
  async_grpo:
    enabled: true
""",
    fix="Meet the condition the issue names, or turn async GRPO off.",
)


@checks(P23, entries=LEGACY_ENTRIES)
def check_legacy_async(context: Context) -> None:
    """:data:`P23`; a warning for ``max_trajectory_age_steps > 1`` without in-flight weight updates."""
    reader = context.reader
    if not reader.flag("grpo.async_grpo.enabled"):
        return
    name = backend(reader)
    if name not in _ASYNC_BACKENDS:
        context.error_at(
            f"{GENERATION}.backend",
            f"grpo.async_grpo.enabled=true supports backends vllm, megatron, trtllm and dynamo, got {render(name)}; "
            "change the backend or disable async GRPO.",
        )
    if name == "vllm" and not reader.flag(f"{VLLM_CFG}.async_engine"):
        context.error_at(
            f"{VLLM_CFG}.async_engine",
            "grpo.async_grpo.enabled=true needs policy.generation.vllm_cfg.async_engine=true; enable it.",
        )
    if not reader.flag("loss_fn.use_importance_sampling_correction"):
        context.error_at(
            "loss_fn.use_importance_sampling_correction",
            "grpo.async_grpo.enabled=true needs loss_fn.use_importance_sampling_correction=true (rollouts are "
            "off-policy); enable it.",
        )
    if name != "megatron" and reader.flag(f"{GENERATION}.colocated.enabled"):
        context.error_at(
            f"{GENERATION}.colocated.enabled",
            f"grpo.async_grpo.enabled=true with backend {render(name)} needs non-colocated generation; set "
            "policy.generation.colocated.enabled=false and give generation its own resources.",
        )
    for path in (
        "grpo.use_dynamic_sampling",
        "grpo.reward_scaling.enabled",
        "grpo.reward_shaping.enabled",
        "data.use_multiple_dataloader",
    ):
        if reader.flag(path):
            context.error_at(
                path, f"grpo.async_grpo.enabled=true does not support {path}=true; set it to false."
            )
    if reader.flag("policy.router_replay.enabled") and reader.flag("data_plane.enabled"):
        context.error_at(
            "data_plane.enabled",
            "grpo.async_grpo.enabled=true with policy.router_replay.enabled=true does not support "
            "data_plane.enabled=true; disable the data plane.",
        )
    age = reader.integer("grpo.async_grpo.max_trajectory_age_steps")
    if age > 1 and not reader.flag("grpo.async_grpo.in_flight_weight_updates"):
        context.warning(
            "grpo.async_grpo.max_trajectory_age_steps",
            age,
            f"grpo.async_grpo.max_trajectory_age_steps={age} without in_flight_weight_updates: generation waits "
            "for each refit, so trajectories rarely get that old; enable in_flight_weight_updates or set it to 1.",
        )


P24 = Rule(
    "P24",
    "single-controller-prerequisites",
    summary="the single-controller path needs the data plane, no validation, one dataloader and vLLM/SGLang",
    reference="single_controller_utils/setup.py ~129-199, ~505-560, single_controller_utils/config.py ~678, examples/run_grpo_single_controller.py ~95 (S0-S1)",
    what_it_checks=(
        "That the single-controller path (`examples/run_grpo_single_controller.py`) has the data plane on, "
        "validation off, one dataloader, and a vLLM or SGLang backend (vLLM with NeMo-Gym)."
    ),
    why_it_matters=(
        "`single_controller_utils/setup.py` (~129-199, ~505-560) raises a `ValueError`/`NotImplementedError` "
        "at config load or start-up (S0-S1)."
    ),
    example="""\
grpo:
  async_grpo: null
  val_at_start: true
data_plane:
  enabled: true
async_rl:
  min_groups_for_streaming_train: 8
""",
    fix="Turn validation off (`val_period: 0`, `val_at_start`/`val_at_end` false) or meet the condition named.",
)


@checks(P24, entries=SC_ENTRIES)
def check_single_controller_gates(context: Context) -> None:
    """(grpo-sc) the data plane on, validation and multiple dataloaders off, backend vllm or sglang."""
    reader = context.reader
    if not reader.flag("data_plane.enabled"):
        context.error_at(
            "data_plane.enabled",
            "the single-controller path needs the TransferQueue data plane; set data_plane.enabled=true.",
        )
    period = reader.integer("grpo.val_period")
    if period > 0:
        context.error_at(
            "grpo.val_period",
            f"the single-controller path does not support validation, but grpo.val_period={period}; set it to 0.",
        )
    for path in ("grpo.val_at_start", "grpo.val_at_end", "data.use_multiple_dataloader"):
        if reader.flag(path):
            context.error_at(
                path, f"the single-controller path does not support {path}=true; set it to false."
            )
    name = backend(reader)
    if name not in ("vllm", "sglang"):
        context.error_at(
            f"{GENERATION}.backend",
            f"the single-controller path supports backends vllm and sglang, got {render(name)}; change it.",
        )
    elif gym(reader) and name != "vllm":
        context.error_at(
            f"{GENERATION}.backend",
            "env.should_use_nemo_gym=true on the single-controller path needs backend 'vllm'; change it.",
        )


P26 = Rule(
    "P26",
    "single-controller-settings-invalid",
    summary="single-controller batch, sampler, checkpoint metric or KL settings that cannot run",
    reference="single_controller_utils/setup.py ~129-199, ~505-560, single_controller_utils/config.py ~678, examples/run_grpo_single_controller.py ~95 (S1)",
    what_it_checks=(
        "That the single-controller batch settings can run: `num_prompts_per_step` at least "
        "`async_rl.min_groups_for_streaming_train`, prompts x generations == `train_global_batch_size`, the "
        "`ready_first` sampler with importance sampling and without forced on-policy ratio, a `train:` "
        "checkpoint metric, and reference logprobs when the KL penalty is on."
    ),
    why_it_matters="`single_controller_utils/config.py` (~678) and `setup.py` raise a `ValueError` at start-up (S1).",
    example="""\
grpo:
  async_grpo: null
data_plane:
  enabled: true
""",
    fix=(
        "Raise `num_prompts_per_step` or lower `async_rl.min_groups_for_streaming_train` (default 32), or "
        "meet the condition named."
    ),
)


@checks(P26, entries=SC_ENTRIES)
def check_single_controller_batch(context: Context) -> None:
    """(grpo-sc) the batch, sampler, checkpoint-metric and KL-reference conditions of :data:`P26`."""
    reader = context.reader
    n = reader.count("grpo.num_prompts_per_step")
    g = reader.count("grpo.num_generations_per_prompt")
    groups = reader.count("async_rl.min_groups_for_streaming_train")
    if n < groups:
        context.error_at(
            "grpo.num_prompts_per_step",
            f"grpo.num_prompts_per_step={n} < async_rl.min_groups_for_streaming_train={groups} (the default is "
            "32): the streaming trainer would never start a batch; raise num_prompts_per_step or lower it.",
        )
    gbs = reader.integer("policy.train_global_batch_size")
    if n * g != gbs:
        context.error_at(
            "policy.train_global_batch_size",
            f"the single-controller path needs policy.train_global_batch_size == {n} x {g} = {n * g}, got {gbs}; "
            f"set it to {n * g}.",
        )
    if reader.text("async_rl.sampler.name") == "ready_first":
        if not reader.flag("loss_fn.use_importance_sampling_correction"):
            context.error_at(
                "loss_fn.use_importance_sampling_correction",
                "async_rl.sampler.name='ready_first' needs loss_fn.use_importance_sampling_correction=true; "
                "enable it.",
            )
        if reader.flag("loss_fn.force_on_policy_ratio"):
            context.error_at(
                "loss_fn.force_on_policy_ratio",
                "async_rl.sampler.name='ready_first' is off-policy and excludes loss_fn.force_on_policy_ratio=true; "
                "set it to false.",
            )
    if reader.flag("checkpointing.enabled"):
        metric = reader.opt_text("checkpointing.metric_name")
        if metric is not None and not metric.startswith("train:"):
            context.error_at(
                "checkpointing.metric_name",
                f"checkpointing.metric_name={render(metric)}: the single-controller path has no validation, so the "
                "metric must start with 'train:'; use a train: metric or set it to null.",
            )
    penalty = reader.number("loss_fn.reference_policy_kl_penalty")
    if penalty != 0 and reader.flag("grpo.skip_reference_policy_logprobs_calculation"):
        context.error_at(
            "loss_fn.reference_policy_kl_penalty",
            f"loss_fn.reference_policy_kl_penalty={render(penalty)} (the default is 0.01) needs reference "
            "logprobs, but grpo.skip_reference_policy_logprobs_calculation=true; set the penalty to 0 or compute "
            "them.",
        )


P27 = Rule(
    "P27",
    "gym-script-prerequisites",
    summary="the NeMo-Gym script needs gym, no max_val_samples and a video limit mapping",
    reference="examples/nemo_gym/run_grpo_nemo_gym.py ~148-210 (S1, before Ray)",
    what_it_checks=(
        "That the NeMo-Gym script (`examples/nemo_gym/run_grpo_nemo_gym.py`) runs with NeMo-Gym on, "
        "`grpo.max_val_samples: null` and, with `vllm_cfg.video`, a `vllm_kwargs.limit_mm_per_prompt.video` "
        "mapping."
    ),
    why_it_matters="The script fails an assertion or raises a `ValueError` before Ray starts (S1, ~148-210).",
    example="""\
env:
  should_use_nemo_gym: true
""",
    fix="Set `grpo.max_val_samples: null` (its 256 default fails), or the condition named.",
)


@checks(P27, entries=frozenset({"grpo-gym"}))
def check_gym_script(context: Context) -> None:
    """(grpo-gym) gym on, ``grpo.max_val_samples`` null, and with ``vllm_cfg.video`` a video limit mapping."""
    reader = context.reader
    if not gym(reader):
        context.error_at(
            "env.should_use_nemo_gym",
            "the NeMo-Gym script needs env.should_use_nemo_gym=true; set it or use examples/run_grpo.py.",
        )
    samples = reader.value("grpo.max_val_samples")
    if samples is not None:
        context.error_at(
            "grpo.max_val_samples",
            f"the NeMo-Gym script rejects grpo.max_val_samples={render(samples)} (absent means 256); set it to "
            "null.",
        )
    if is_vllm(reader) and reader.value(f"{VLLM_CFG}.video") not in (None, False, ABSENT):
        limit = reader.value(f"{VLLM_KWARGS}.limit_mm_per_prompt.video")
        if not isinstance(limit, Mapping):
            context.error_at(
                f"{VLLM_KWARGS}.limit_mm_per_prompt.video",
                f"vllm_cfg.video is set, so {VLLM_KWARGS}.limit_mm_per_prompt.video must be a mapping (e.g. "
                f"{{count: 1, num_frames: 32}}), got {render(limit)}; set it.",
            )
