"""Preflight rules of the policy side: required keys (P1), training backend (P2-P4), training placement (P18),
the TP batch-variance check (P19) and router replay's policy side (P20)."""

from __future__ import annotations

from ...._internal.messages import render, type_name
from ...rule import Rule, checks
from .context import ALL_ENTRIES, LEGACY_ENTRIES, Context
from .facts import VLLM_CFG, dtensor, is_vllm, megatron, train_parallel
from .reader import Unresolved, WrongShape

__all__ = [
    "P1",
    "P2",
    "P3",
    "P4",
    "P18",
    "P19",
    "P20",
    "check_backend",
    "check_draft",
    "check_dtensor_v1",
    "check_required",
    "check_router_replay_policy",
    "check_tp_batch_variance",
    "check_training_placement",
]

_REQUIRED = (
    "cluster.num_nodes",
    "cluster.gpus_per_node",
    "policy.generation.colocated.enabled",
    "data.use_multiple_dataloader",
    "policy.train_global_batch_size",
)


def _require(context: Context, path: str) -> None:
    try:
        if not context.reader.present(path):
            context.missing(path)
    except WrongShape as signal:
        context.once(
            signal.path,
            signal.value,
            f"{signal.path} must be a mapping holding {path}, got {type_name(signal.value)} {render(signal.value)}; "
            "fix its shape.",
        )
    except Unresolved as signal:
        context.skip(f"cannot tell whether {path} exists: {signal.path} did not resolve", signal.path)


P1 = Rule(
    "P1",
    "required-key-missing",
    summary="a key the trainer indexes directly is absent (KeyError at start-up)",
    reference="algorithms/grpo.py:setup, vllm/vllm_worker.py ~583 (S1-S3)",
    what_it_checks=(
        "That the keys the trainer indexes directly are present: `cluster.num_nodes`, "
        "`cluster.gpus_per_node`, `policy.generation.colocated.enabled`, `data.use_multiple_dataloader`, "
        "`policy.train_global_batch_size`, `policy.draft.enabled` (grpo, grpo-sc), and for vLLM "
        "`vllm_cfg.precision`, `vllm_cfg.enforce_eager` and `vllm_cfg.kv_cache_dtype`; other rules report an "
        "absent key they must read as P1 too."
    ),
    why_it_matters=(
        "The trainer crashes with a `KeyError` in `grpo.py:setup` or `vllm_worker.py` ~583 (S1-S3), after Ray "
        "and possibly the workers started; an absent `train_global_batch_size` only at the first training "
        "step."
    ),
    example="""\
cluster:
  _override_: true
  num_nodes: 1
""",
    fix="Add the key the issue names.",
)


@checks(P1, entries=ALL_ENTRIES)
def check_required(context: Context) -> None:
    """Every key of :data:`P1` the trainer indexes without a default must exist."""
    for path in _REQUIRED:
        _require(context, path)
    if context.entrypoint in ("grpo", "grpo-sc"):
        _require(context, "policy.draft.enabled")
    if is_vllm(context.reader):
        _require(context, f"{VLLM_CFG}.precision")
        _require(context, f"{VLLM_CFG}.enforce_eager")
        if context.entrypoint in LEGACY_ENTRIES:
            _require(context, f"{VLLM_CFG}.kv_cache_dtype")


P2 = Rule(
    "P2",
    "one-training-backend",
    summary="exactly one training backend (megatron_cfg or dtensor_cfg) must be enabled",
    reference="models/policy/lm_policy.py:Policy.__init__ ~121-240 (S4)",
    what_it_checks=(
        "That exactly one training backend is enabled: `policy.megatron_cfg.enabled` or "
        "`policy.dtensor_cfg.enabled`, not both and not neither."
    ),
    why_it_matters=(
        "`Policy.__init__` (`models/policy/lm_policy.py` ~121-240) raises a `ValueError` when the policy "
        "workers start (S4), after vLLM loaded the model when colocated."
    ),
    example="""\
policy:
  dtensor_cfg:
    enabled: false
""",
    fix="Enable exactly one of `megatron_cfg` and `dtensor_cfg`.",
)


@checks(P2, entries=ALL_ENTRIES)
def check_backend(context: Context) -> None:
    """``policy.megatron_cfg.enabled`` and ``policy.dtensor_cfg.enabled`` must differ."""
    mega, dt = megatron(context.reader), dtensor(context.reader)
    if mega == dt:
        context.error(
            "policy.megatron_cfg.enabled",
            mega,
            f"policy.megatron_cfg.enabled and policy.dtensor_cfg.enabled are both {str(mega).lower()}; "
            "enable exactly one training backend.",
        )


P3 = Rule(
    "P3",
    "draft-model-needs-megatron",
    summary="a draft model needs Megatron and no sequence packing",
    reference="models/policy/lm_policy.py:Policy.__init__ ~121-240 (S4)",
    what_it_checks="That a draft model (`policy.draft.enabled`) trains with Megatron and without sequence packing.",
    why_it_matters="`Policy.__init__` raises a `ValueError` when the policy workers start (S4).",
    example="""\
policy:
  draft:
    enabled: true
""",
    fix=(
        "Train with `megatron_cfg.enabled: true` and `sequence_packing.enabled: false`, or disable the draft "
        "model."
    ),
)


@checks(P3, entries=ALL_ENTRIES)
def check_draft(context: Context) -> None:
    """``policy.draft.enabled`` needs ``policy.megatron_cfg.enabled`` and not ``policy.sequence_packing.enabled``."""
    reader = context.reader
    if not reader.flag("policy.draft.enabled"):
        return
    if not megatron(reader):
        context.error_at(
            "policy.draft.enabled",
            "policy.draft.enabled=true but policy.megatron_cfg.enabled is false: the draft model trains only with "
            "Megatron; enable policy.megatron_cfg or set policy.draft.enabled=false.",
        )
    if reader.flag("policy.sequence_packing.enabled"):
        context.error_at(
            "policy.sequence_packing.enabled",
            "policy.draft.enabled=true with policy.sequence_packing.enabled=true: the draft model does not support "
            "sequence packing; set policy.sequence_packing.enabled=false or disable the draft model.",
        )


P4 = Rule(
    "P4",
    "dtensor-v1-unsupported-feature",
    summary="DTensor v1 supports neither LoRA nor dp_replicate_size > 1",
    reference="models/policy/lm_policy.py:Policy.__init__ ~121-240 (S4)",
    what_it_checks=(
        "That DTensor v1 (`dtensor_cfg._v2` not true, without Megatron) is not asked for LoRA "
        "(`lora_cfg.enabled`) or `dp_replicate_size` > 1, which only DTensor v2 supports."
    ),
    why_it_matters="`Policy.__init__` fails with an `AssertionError`/`ValueError` when the policy workers start (S4).",
    example="""\
policy:
  dtensor_cfg:
    _v2: false
    lora_cfg:
      enabled: true
""",
    fix="Set `policy.dtensor_cfg._v2: true`.",
)


@checks(P4, entries=ALL_ENTRIES)
def check_dtensor_v1(context: Context) -> None:
    """:data:`P4` with DTensor (not Megatron) and ``dtensor_cfg._v2`` not true (``dp_replicate_size``: 1)."""
    reader = context.reader
    if not dtensor(reader) or megatron(reader) or reader.flag("policy.dtensor_cfg._v2"):
        return
    if reader.flag("policy.dtensor_cfg.lora_cfg.enabled"):
        context.error_at(
            "policy.dtensor_cfg.lora_cfg.enabled",
            "policy.dtensor_cfg.lora_cfg.enabled=true needs the DTensor v2 worker, but policy.dtensor_cfg._v2 is "
            "not true; set policy.dtensor_cfg._v2: true.",
        )
    replicate = reader.integer("policy.dtensor_cfg.dp_replicate_size", 1)
    if replicate > 1:
        context.error_at(
            "policy.dtensor_cfg.dp_replicate_size",
            f"policy.dtensor_cfg.dp_replicate_size={replicate} needs the DTensor v2 worker, but "
            "policy.dtensor_cfg._v2 is not true; set policy.dtensor_cfg._v2: true (or dp_replicate_size: 1).",
        )


P18 = Rule(
    "P18",
    "training-world-not-divisible",
    summary="the training world is not a positive multiple of PP x CP x TP",
    reference="models/policy/lm_policy.py:Policy.__init__ ~121-240 (S4)",
    what_it_checks=(
        "That the training world (training nodes x GPUs per node) is a positive multiple of PP x CP x TP of "
        "the training backend."
    ),
    why_it_matters="`Policy.__init__` raises a `ValueError` when the policy workers start (S4).",
    example="""\
policy:
  dtensor_cfg:
    tensor_parallel_size: 3
""",
    fix="Choose training parallel sizes whose product divides the training GPUs.",
)


@checks(P18, entries=ALL_ENTRIES)
def check_training_placement(context: Context) -> None:
    """:data:`P18` with Megatron or DTensor and a known layout."""
    parallel = train_parallel(context.reader)
    if parallel is None:
        return
    split = context.layout()
    if split is None:
        return
    world = split.train_nodes * split.train_gpn
    mp = parallel.pp * parallel.cp * parallel.tp
    if world % mp != 0:
        context.error(
            parallel.tp_path,
            parallel.tp,
            f"the training world of {world} GPUs ({split.train_nodes} x {split.train_gpn}) is not a positive "
            f"multiple of PP({parallel.pp}) x CP({parallel.cp}) x TP({parallel.tp}) = {mp}; change the training "
            "parallel sizes, cluster.num_nodes/gpus_per_node or the generation resources so that it is.",
        )


P19 = Rule(
    "P19",
    "tensor-parallel-batch-sizes-differ",
    summary="train TP >= 4 needs train_micro_batch_size == logprob_batch_size",
    reference="models/policy/lm_policy.py:Policy.__init__ ~121-240 (S4)",
    what_it_checks=(
        "That training TP of 4 or more runs with `train_micro_batch_size` == `logprob_batch_size` "
        "(batch-variant numerics), unless `force_on_policy_ratio`, `--ignore-tp-accuracy-check` or "
        "`NRL_IGNORE_TP_ACCURACY_CHECK` bypasses it."
    ),
    why_it_matters="`Policy.__init__` fails an assertion when the policy workers start (S4).",
    example="""\
policy:
  logprob_batch_size: 4
  dtensor_cfg:
    tensor_parallel_size: 4
""",
    fix="Make both batch sizes equal, use TP of 2 or less, or set one of the bypasses.",
)


@checks(P19, entries=ALL_ENTRIES)
def check_tp_batch_variance(context: Context) -> None:
    """:data:`P19` for a present ``logprob_batch_size``; ``force_on_policy_ratio`` bypasses it off grpo-sc."""
    reader = context.reader
    parallel = train_parallel(reader)
    if parallel is None or parallel.tp < 4:
        return
    if not reader.present("policy.logprob_batch_size"):
        return
    logprob = reader.opt_integer("policy.logprob_batch_size")
    if context.options.ignore_tp_accuracy_check or context.environ.get("NRL_IGNORE_TP_ACCURACY_CHECK"):
        return
    if context.entrypoint in LEGACY_ENTRIES and reader.flag("loss_fn.force_on_policy_ratio"):
        return
    micro = reader.integer("policy.train_micro_batch_size")
    if micro != logprob:
        context.error_at(
            "policy.logprob_batch_size",
            f"training TP={parallel.tp} (>= 4) with policy.train_micro_batch_size={micro} != "
            f"policy.logprob_batch_size={render(logprob)}: batch-size-dependent numerics make the logprobs disagree. Fix "
            "one of: make the two sizes equal; use training TP <= 2; set loss_fn.force_on_policy_ratio=true; or "
            "bypass with --ignore-tp-accuracy-check (NRL_IGNORE_TP_ACCURACY_CHECK=1).",
        )


P20 = Rule(
    "P20",
    "router-replay-prerequisites",
    summary="router replay needs vLLM, Megatron and no virtual pipeline parallelism",
    reference="megatron/router_replay.py:validate_router_replay_config ~53 (S4 / never)",
    what_it_checks=(
        "That router replay (`policy.router_replay.enabled`) runs with vLLM generation, Megatron training and "
        "no virtual pipeline parallelism."
    ),
    why_it_matters=(
        "`megatron/router_replay.py:validate_router_replay_config` (~53) raises a `ValueError` when the "
        "policy workers start (S4); with DTensor the reference never checks, and routes are captured but "
        "never replayed."
    ),
    example="""\
policy:
  router_replay:
    enabled: true
""",
    fix=(
        "Train with Megatron (`megatron_cfg.enabled: true`, `dtensor_cfg.enabled: false`), or disable router "
        "replay."
    ),
)


@checks(P20, entries=ALL_ENTRIES)
def check_router_replay_policy(context: Context) -> None:
    """:data:`P20` (DTensor never replays)."""
    reader = context.reader
    if not reader.flag("policy.router_replay.enabled"):
        return
    if not is_vllm(reader):
        context.error_at(
            "policy.generation.backend",
            f"policy.router_replay.enabled=true needs policy.generation.backend='vllm', got "
            f"{render(reader.value('policy.generation.backend'))}; use vLLM or disable router replay.",
        )
    if not megatron(reader):
        context.error(
            "policy.megatron_cfg.enabled",
            False,
            "policy.router_replay.enabled=true but policy.megatron_cfg.enabled is false: only Megatron replays the "
            "routes (DTensor silently trains without replay); enable Megatron or disable router replay.",
        )
        return
    vpp = reader.opt_integer("policy.megatron_cfg.virtual_pipeline_model_parallel_size")
    if vpp not in (None, 1):
        context.error_at(
            "policy.megatron_cfg.virtual_pipeline_model_parallel_size",
            f"policy.router_replay.enabled=true with virtual_pipeline_model_parallel_size={vpp}: router replay "
            "does not support virtual pipeline stages; set it to null or 1, or disable router replay.",
        )
