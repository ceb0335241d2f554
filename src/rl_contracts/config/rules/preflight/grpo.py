"""Preflight rules that ``grpo.setup`` asserts (grpo and grpo-gym): sampling, validation, batching, loss and
NeMo-Gym prerequisites (P5-P12)."""

from __future__ import annotations

import math

from ...._internal.config_absent import ABSENT
from ...._internal.messages import render
from ...finding import SuggestedFix
from ...rule import Rule, checks
from .context import ALL_ENTRIES, LEGACY_ENTRIES, Context
from .facts import GENERATION, VLLM_CFG, gym, is_async, is_vllm, megatron
from .reader import MAX_RECIPE_INT

__all__ = [
    "P5",
    "P6",
    "P7",
    "P8",
    "P9",
    "P10",
    "P11",
    "P12",
    "check_forced_on_policy_ratio",
    "check_fused_linear_logprobs",
    "check_gym_prerequisites",
    "check_kl_reference",
    "check_multimodal_dedup",
    "check_prompt_batching",
    "check_validation_counts",
    "check_validation_sampling",
]

_SAMPLING = ("temperature", "top_p", "top_k")


P5 = Rule(
    "P5",
    "validation-sampling-needs-gym",
    summary="validation sampling that differs from training needs vLLM with NeMo-Gym",
    reference="algorithms/grpo.py:setup ~376-735 (S1)",
    what_it_checks=(
        "That validation sampling (`val_temperature`, `val_top_p`, `val_top_k`) differing from training "
        "sampling runs on vLLM with NeMo-Gym (the only path that honours it), and that `val_top_k` is then "
        "null or 0."
    ),
    why_it_matters="`grpo.py:setup` (~376-735) fails an assertion after Ray, the tokenizer and the data are set up (S1).",
    example="""\
policy:
  generation:
    val_temperature: 0.5
""",
    fix="Make the `val_*` keys equal to the training keys, or run vLLM with `env.should_use_nemo_gym: true`.",
)


@checks(P5, entries=LEGACY_ENTRIES)
def check_validation_sampling(context: Context) -> None:
    """:data:`P5`; an absent ``val_*`` key equals its training key, an absent training key is null."""
    reader = context.reader
    pairs: list[tuple[str, object, object]] = []
    effective: dict[str, object] = {}
    for name in _SAMPLING:
        train = reader.value(f"{GENERATION}.{name}")
        train = None if train is ABSENT else train
        val_path = f"{GENERATION}.val_{name}"
        val = reader.value(val_path) if reader.present(val_path) else train
        effective[name] = val
        if val != train:
            pairs.append((name, val, train))
    if not pairs:
        return
    shown = ", ".join(f"val_{name}={render(val)} vs {name}={render(train)}" for name, val, train in pairs)
    if not (is_vllm(reader) and gym(reader)):
        context.error_at(
            f"{GENERATION}.val_{pairs[0][0]}",
            f"validation sampling differs from training ({shown}); only the vLLM NeMo-Gym path honours it: make "
            "val_* equal to the training keys or use backend vllm with env.should_use_nemo_gym=true.",
        )
    val_top_k = effective["top_k"]
    if val_top_k:
        context.error(
            f"{GENERATION}.val_top_k",
            val_top_k,
            f"val_top_k={render(val_top_k)} cannot be honoured; set it to null.",
        )


P6 = Rule(
    "P6",
    "validation-counts-inconsistent",
    summary="validation generations and early-stop settings are inconsistent",
    reference="algorithms/grpo.py:setup ~376-735 (S1)",
    what_it_checks=(
        "That `grpo.val_num_generations_per_prompt` is at least 1 (more than 1 for the `pass_k` early-stop "
        "metric) and that a `stop_at_validation_metric` has a `stop_at_validation_threshold`."
    ),
    why_it_matters="`grpo.py:setup` fails an assertion at start-up (S1).",
    example="""\
grpo:
  val_num_generations_per_prompt: 0
""",
    fix="Set `val_num_generations_per_prompt` to 1 or more, and give the early-stop metric its threshold.",
)


@checks(P6, entries=LEGACY_ENTRIES)
def check_validation_counts(context: Context) -> None:
    """The validation counts and early-stop settings of :data:`P6`."""
    reader = context.reader
    k = reader.integer("grpo.val_num_generations_per_prompt")
    if k < 1:
        context.error_at(
            "grpo.val_num_generations_per_prompt",
            f"grpo.val_num_generations_per_prompt={k} must be >= 1; set it to 1 or more.",
        )
    metric = reader.opt_text("grpo.stop_at_validation_metric")
    if metric == "pass_k" and k <= 1:
        context.error_at(
            "grpo.val_num_generations_per_prompt",
            f"grpo.stop_at_validation_metric='pass_k' needs grpo.val_num_generations_per_prompt > 1, got {k}; "
            "raise it or stop on another metric.",
        )
    if metric is not None and reader.value("grpo.stop_at_validation_threshold") is None:
        context.error_at(
            "grpo.stop_at_validation_threshold",
            f"grpo.stop_at_validation_metric={render(metric)} needs grpo.stop_at_validation_threshold, which is "
            "null; set a threshold or set the metric to null.",
        )


P7 = Rule(
    "P7",
    "prompt-batching-invalid",
    summary="batch_multiplier without dynamic sampling, or prompts not divisible across dataloaders",
    reference="algorithms/grpo.py:setup ~376-735 (S1)",
    what_it_checks=(
        "That `grpo.batch_multiplier` is 1 unless dynamic sampling is on, and that with several dataloaders "
        "`num_prompts_per_step` is a multiple of `data.num_prompts_per_dataloader` (both scaled by the "
        "multiplier under dynamic sampling)."
    ),
    why_it_matters="`grpo.py:setup` fails an assertion at start-up (S1).",
    example="""\
grpo:
  batch_multiplier: 2.0
""",
    fix="Set `batch_multiplier: 1`, or enable `grpo.use_dynamic_sampling`.",
    fix_safety="unsafe",
)


@checks(P7, entries=LEGACY_ENTRIES)
def check_prompt_batching(context: Context) -> None:
    """:data:`P7` (the prompts are scaled by the multiplier only under dynamic sampling)."""
    reader = context.reader
    dynamic = reader.flag("grpo.use_dynamic_sampling")
    multiplier = reader.number("grpo.batch_multiplier")
    if not dynamic and multiplier != 1:
        context.error_at(
            "grpo.batch_multiplier",
            f"grpo.batch_multiplier={render(multiplier)} needs grpo.use_dynamic_sampling=true; set "
            "batch_multiplier=1 or enable dynamic sampling.",
            fix=SuggestedFix(action="set", value=1, description="set grpo.batch_multiplier to 1"),
        )
    if not reader.flag("data.use_multiple_dataloader"):
        return
    n = reader.count("grpo.num_prompts_per_step")
    d = reader.integer("data.num_prompts_per_dataloader")
    scale = ""
    if dynamic:
        products = (n * multiplier, d * multiplier)  # the trainer scales both and truncates to ints
        if multiplier <= 0 or not all(math.isfinite(p) and abs(p) <= MAX_RECIPE_INT for p in products):
            context.error_at(
                "grpo.batch_multiplier",
                f"grpo.batch_multiplier={render(multiplier)} scales num_prompts_per_step={n} and "
                f"num_prompts_per_dataloader={d} out of range (it must be > 0 and keep both below "
                f"{MAX_RECIPE_INT}); lower it.",
            )
            return
        n, d = int(products[0]), int(products[1])
        scale = f" (both scaled by grpo.batch_multiplier={render(multiplier)})"
    if d <= 0 or n % d != 0:
        context.error_at(
            "data.num_prompts_per_dataloader",
            f"grpo.num_prompts_per_step={n} is not a positive multiple of data.num_prompts_per_dataloader={d}"
            f"{scale}; make num_prompts_per_step a multiple of num_prompts_per_dataloader.",
        )


P8 = Rule(
    "P8",
    "fused-logprobs-conflict",
    summary="fused linear logprobs need sequence packing off and no top-k/top-p filter",
    reference="algorithms/grpo.py:setup ~376-735 (S1)",
    what_it_checks=(
        "That Megatron's fused linear logprobs (`megatron_cfg.use_fused_linear_logprobs`) run with sequence "
        "packing present and off and with no top-k/top-p filter in generation."
    ),
    why_it_matters=(
        "`grpo.py:setup` fails an assertion at start-up (S1): the fused kernel computes logprobs over the "
        "full vocabulary."
    ),
    example="""\
policy:
  megatron_cfg:
    enabled: true
    use_fused_linear_logprobs: true
  dtensor_cfg:
    enabled: false
  generation:
    top_k: 50
    val_top_k: 50
""",
    fix="Turn `use_fused_linear_logprobs` off, or sample without a top-k/top-p filter.",
)


@checks(P8, entries=LEGACY_ENTRIES)
def check_fused_linear_logprobs(context: Context) -> None:
    """:data:`P8`: sequence packing present and off, ``top_k`` null or ≤ 0, ``top_p`` null or 1.0."""
    reader = context.reader
    if not (megatron(reader) and reader.flag("policy.megatron_cfg.use_fused_linear_logprobs")):
        return
    packing = "policy.sequence_packing.enabled"
    if not reader.present(packing):
        context.missing(packing)
    elif reader.flag(packing):
        context.error_at(
            packing,
            "policy.megatron_cfg.use_fused_linear_logprobs=true is incompatible with sequence packing; set "
            "policy.sequence_packing.enabled=false or use_fused_linear_logprobs=false.",
        )
    top_k = reader.opt_number(f"{GENERATION}.top_k")
    top_p = reader.opt_number(f"{GENERATION}.top_p")
    if top_k is not None and top_k > 0:
        context.error_at(
            f"{GENERATION}.top_k",
            f"policy.megatron_cfg.use_fused_linear_logprobs=true cannot apply the top_k={render(top_k)} filter "
            "at training time; set top_k to null or use_fused_linear_logprobs=false.",
        )
    if top_p is not None and top_p != 1.0:
        context.error_at(
            f"{GENERATION}.top_p",
            f"policy.megatron_cfg.use_fused_linear_logprobs=true cannot apply the top_p={render(top_p)} filter "
            "at training time; set top_p to 1.0 or use_fused_linear_logprobs=false.",
        )


P9 = Rule(
    "P9",
    "force-on-policy-ratio-batch-mismatch",
    summary="force_on_policy_ratio needs train_global_batch_size == prompts x generations",
    reference="algorithms/grpo.py:setup ~376-735 (S1)",
    what_it_checks=(
        "That `loss_fn.force_on_policy_ratio` comes with `policy.train_global_batch_size` == "
        "`num_prompts_per_step` x `num_generations_per_prompt` (one optimizer step per rollout batch)."
    ),
    why_it_matters="`grpo.py:setup` fails an assertion at start-up (S1).",
    example="""\
loss_fn:
  force_on_policy_ratio: true
policy:
  train_global_batch_size: 16
""",
    fix="Set `train_global_batch_size` to prompts x generations (here 32), or `force_on_policy_ratio: false`.",
    fix_safety="unsafe",
)


@checks(P9, entries=LEGACY_ENTRIES)
def check_forced_on_policy_ratio(context: Context) -> None:
    """:data:`P9` (the batch is not scaled by ``batch_multiplier``)."""
    reader = context.reader
    if not reader.flag("loss_fn.force_on_policy_ratio"):
        return
    n = reader.count("grpo.num_prompts_per_step")
    g = reader.count("grpo.num_generations_per_prompt")
    gbs = reader.integer("policy.train_global_batch_size")
    if gbs != n * g:
        context.error_at(
            "policy.train_global_batch_size",
            f"loss_fn.force_on_policy_ratio=true needs policy.train_global_batch_size == {n} x {g} = {n * g}, "
            f"got {gbs}; set train_global_batch_size to {n * g} or force_on_policy_ratio=false.",
            fix=SuggestedFix(
                action="set", value=n * g, description=f"set policy.train_global_batch_size to {n * g}"
            ),
        )


P10 = Rule(
    "P10",
    "kl-without-reference-logprobs",
    summary="KL penalty without reference logprobs, or KL-in-reward against missing logprobs",
    reference="algorithms/grpo.py:setup ~376-735 (S1)",
    what_it_checks=(
        "That skipping the reference-policy logprobs comes with a zero KL penalty (mind its 0.01 default), "
        "and that KL in the reward is not computed against logprobs that are never filled in."
    ),
    why_it_matters=(
        "`grpo.py:setup` fails an assertion at start-up (S1); without it the KL term would be computed "
        "against zeros and silently skew the advantages."
    ),
    example="""\
grpo:
  skip_reference_policy_logprobs_calculation: true
""",
    fix="Set `loss_fn.reference_policy_kl_penalty: 0`, or compute the reference logprobs.",
)


@checks(P10, entries=LEGACY_ENTRIES)
def check_kl_reference(context: Context) -> None:
    """:data:`P10` (the KL penalty defaults to 0.01)."""
    reader = context.reader
    penalty = reader.number("loss_fn.reference_policy_kl_penalty")
    if reader.flag("grpo.skip_reference_policy_logprobs_calculation") and penalty != 0:
        context.error_at(
            "loss_fn.reference_policy_kl_penalty",
            f"grpo.skip_reference_policy_logprobs_calculation=true with loss_fn.reference_policy_kl_penalty="
            f"{render(penalty)} (the default is 0.01): the KL term needs reference logprobs; set the penalty to 0 "
            "or compute reference logprobs.",
        )
    if (
        reader.flag("loss_fn.use_kl_in_reward")
        and penalty != 0
        and reader.flag("loss_fn.force_on_policy_ratio")
        and reader.value("grpo.seq_logprob_error_threshold") is None
    ):
        context.error_at(
            "loss_fn.use_kl_in_reward",
            f"loss_fn.use_kl_in_reward=true with reference_policy_kl_penalty={render(penalty)}, "
            "force_on_policy_ratio=true and grpo.seq_logprob_error_threshold=null computes the KL against "
            "zeros; set seq_logprob_error_threshold, force_on_policy_ratio=false or use_kl_in_reward=false.",
        )


_PENALTIES = (
    "penalize_duplicated_reasoning",
    "penalize_empty_final_answer",
    "penalize_unwanted_tokens",
    "penalize_malformed_think_tag",
)


P11 = Rule(
    "P11",
    "gym-prerequisites-missing",
    summary="NeMo-Gym prerequisites: reward penalties need gym; gym needs async rollouts and the HTTP server",
    reference="algorithms/grpo.py:setup ~376-735 (S1)",
    what_it_checks=(
        "That reward penalties (`reward_penalties.penalize_*`) run with NeMo-Gym, and that NeMo-Gym outside "
        "its own script has async rollouts and, on vLLM, `vllm_cfg.expose_http_server: true`."
    ),
    why_it_matters="`grpo.py:setup` raises a `ValueError` or fails an assertion at start-up (S1).",
    example="""\
reward_penalties:
  penalize_empty_final_answer: true
""",
    fix="Enable `env.should_use_nemo_gym` (and its prerequisites), or turn the penalty off.",
)


@checks(P11, entries=ALL_ENTRIES)
def check_gym_prerequisites(context: Context) -> None:
    """:data:`P11` (grpo-gym forces async rollouts and the HTTP server)."""
    reader = context.reader
    on_gym = gym(reader)
    if context.entrypoint in LEGACY_ENTRIES and not on_gym:
        for name in _PENALTIES:
            if reader.flag(f"reward_penalties.{name}"):
                context.error_at(
                    f"reward_penalties.{name}",
                    f"reward_penalties.{name}=true applies only to NeMo-Gym rollouts but env.should_use_nemo_gym "
                    "is false; set env.should_use_nemo_gym=true or turn the penalty off.",
                )
    if not on_gym or context.entrypoint == "grpo-gym":
        return
    if not is_async(reader):
        context.error_at(
            f"{VLLM_CFG}.async_engine",
            "env.should_use_nemo_gym=true needs async rollouts; set policy.generation.vllm_cfg.async_engine=true "
            "(or launch with examples/nemo_gym/run_grpo_nemo_gym.py).",
        )
    if is_vllm(reader) and not reader.flag(f"{VLLM_CFG}.expose_http_server"):
        context.error_at(
            f"{VLLM_CFG}.expose_http_server",
            "env.should_use_nemo_gym=true needs the vLLM HTTP server; set "
            "policy.generation.vllm_cfg.expose_http_server=true.",
        )


P12 = Rule(
    "P12",
    "multimodal-dedup-unsupported",
    summary="multimodal deduplication needs vLLM and no data plane",
    reference="algorithms/grpo.py:setup ~376-735 (S1)",
    what_it_checks=(
        "That multimodal deduplication (`grpo.deduplicate_multimodal_data`) runs on vLLM without the data "
        "plane."
    ),
    why_it_matters="`grpo.py:setup` raises `NotImplementedError` at start-up (S1).",
    example="""\
grpo:
  deduplicate_multimodal_data: true
data_plane:
  enabled: true
""",
    fix="Turn deduplication off, or the data plane off.",
)


@checks(P12, entries=LEGACY_ENTRIES)
def check_multimodal_dedup(context: Context) -> None:
    """``grpo.deduplicate_multimodal_data`` needs the vLLM backend and ``data_plane.enabled`` false."""
    reader = context.reader
    if not reader.flag("grpo.deduplicate_multimodal_data"):
        return
    if not is_vllm(reader):
        context.error_at(
            "grpo.deduplicate_multimodal_data",
            f"grpo.deduplicate_multimodal_data=true needs backend 'vllm', got "
            f"{render(reader.value('policy.generation.backend'))}; use vLLM or set it to false.",
        )
    if reader.flag("data_plane.enabled"):
        context.error_at(
            "grpo.deduplicate_multimodal_data",
            "grpo.deduplicate_multimodal_data=true is not implemented with data_plane.enabled=true; set one of "
            "them to false.",
        )
