"""Preflight rules of sampling agreement: a truncated support no learner renormalises over (P30) and a
distillation teacher that scores at other sampling parameters than the student generates with (P31)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Final

from ...._internal.config_absent import ABSENT
from ...._internal.messages import render
from ...finding import Finding
from ...rule import Rule, checks
from .context import ALL_ENTRIES, SC_ENTRIES, Context
from .facts import GENERATION, VLLM_CFG, is_vllm, megatron
from .reader import MissingKey, Reader, Unresolved, WrongShape
from .report import PreflightOptions

__all__ = [
    "P30",
    "P31",
    "check_distillation_scoring",
    "check_truncated_support",
    "distillation_scoring_findings",
]

_SAMPLING: Final = ("temperature", "top_p", "top_k")
_UNSET_SAMPLING: Final[dict[str, object]] = {"temperature": 1.0, "top_p": 1.0, "top_k": None}
"""How a worker without a ``generation`` section scores: no temperature, no filter."""

P30 = Rule(
    "P30",
    "truncated-support-not-renormalised",
    summary="processed logprobs under top-p/top-k against a learner that does not renormalise, with IS correction",
    reference="algorithms/loss/utils.py:prepare_loss_input, algorithms/grpo.py:setup ~682 (never; single controller)",
    what_it_checks=(
        "That a single-controller recipe sampling with a top-p/top-k filter (`policy.generation.top_p` < 1 or "
        "`top_k` > 0) and returning processed logprobs (`vllm_cfg.logprobs_mode: processed_logprobs`) does not "
        "apply importance-sampling correction (`loss_fn.use_importance_sampling_correction`) with Megatron's "
        "fused linear logprobs (`megatron_cfg.use_fused_linear_logprobs`), which compute the learner's logprobs "
        "from unfiltered logits. NeMo RL's other learner paths rebuild the filter from `policy.generation` and "
        "renormalise over it; `grpo.setup` refuses the fused path with a filter (P8), but the single-controller "
        "script never calls it."
    ),
    why_it_matters=(
        "vLLM's processed logprobs are renormalised over the kept support, log(p/S); the fused learner gives "
        "log p. Every importance weight carries log S < 0 (top_p 0.95: about -0.04), a small signed bias that "
        "passes mult_prob_error < 1.05 and silently reweights training (never reported)."
    ),
    example="""\
grpo:
  async_grpo: null
  val_period: 0
data_plane:
  enabled: true
async_rl:
  min_groups_for_streaming_train: 1
policy:
  dtensor_cfg:
    enabled: false
  megatron_cfg:
    enabled: true
    use_fused_linear_logprobs: true
  generation:
    top_p: 0.95
    val_top_p: 0.95
    vllm_cfg:
      logprobs_mode: processed_logprobs
loss_fn:
  use_importance_sampling_correction: true
""",
    fix=(
        "Turn `use_fused_linear_logprobs` off (the learner then renormalises over the top-p/top-k support), "
        "sample without a filter, or return raw logprobs (`logprobs_mode: raw_logprobs`)."
    ),
)


@checks(P30, entries=SC_ENTRIES)
def check_truncated_support(context: Context) -> None:
    """:data:`P30`: one error at ``use_fused_linear_logprobs`` (an absent ``logprobs_mode`` is raw)."""
    reader = context.reader
    if not (is_vllm(reader) and reader.value(f"{VLLM_CFG}.logprobs_mode") == "processed_logprobs"):
        return
    if not reader.flag("loss_fn.use_importance_sampling_correction"):
        return
    fused = "policy.megatron_cfg.use_fused_linear_logprobs"
    if not (megatron(reader) and reader.flag(fused)):
        return
    top_p, top_k = reader.opt_number(f"{GENERATION}.top_p"), reader.opt_integer(f"{GENERATION}.top_k")
    kept = [f"top_p={render(top_p)}"] if top_p is not None and top_p < 1.0 else []
    kept += [f"top_k={render(top_k)}"] if top_k is not None and top_k > 0 else []
    if not kept:
        return
    context.error_at(
        fused,
        f"{GENERATION} samples with {', '.join(kept)} and vLLM returns processed logprobs, renormalised over the "
        "kept support (log(p/S)), while the fused linear logprobs give the learner's log p over the full "
        "vocabulary: every importance weight of loss_fn.use_importance_sampling_correction carries log S < 0. "
        "Turn use_fused_linear_logprobs off (the learner then renormalises over the support), sample without "
        "top-p/top-k, or set logprobs_mode: raw_logprobs.",
    )


P31 = Rule(
    "P31",
    "teacher-scores-at-other-sampling",
    summary="a distillation teacher scores at other sampling parameters than the student generates with",
    reference="algorithms/distillation.py:setup (teacher Policy), policy workers get_topk_logits/train (never)",
    what_it_checks=(
        "That `teacher.generation.{temperature, top_p, top_k}` equal `policy.generation`'s; a teacher without a "
        "`generation` section scores at temperature 1 without a filter, so the student must generate that way."
    ),
    why_it_matters=(
        "The student's logits are scaled and filtered by `policy.generation`, the teacher's by its own section: "
        "the distillation loss then matches two distributions taken at different temperatures or supports, a "
        "silent bias nothing reports (slime #2085)."
    ),
    example="""\
policy:
  generation:
    temperature: 0.8
    val_temperature: 0.8
teacher:
  generation:
    temperature: 1.0
""",
    fix="Give `teacher.generation` the student's `temperature`, `top_p` and `top_k` (a YAML anchor keeps them "
    "equal), or generate with the teacher's.",
)


@checks(P31, entries=ALL_ENTRIES)
def check_distillation_scoring(context: Context) -> None:
    """:data:`P31` with a ``teacher`` mapping: one error per differing sampling key, at the teacher's path."""
    reader = context.reader
    if reader.mapping("teacher") is None or reader.mapping(GENERATION) is None:
        return
    section = reader.mapping("teacher.generation")
    for name in _SAMPLING:
        student = _sampling_value(reader.value(f"{GENERATION}.{name}"), name)
        path = f"teacher.generation.{name}"
        teacher = _sampling_value(ABSENT if section is None else reader.value(path), name)
        if student == teacher:
            continue
        context.error(
            path if section is not None else "teacher.generation",
            teacher if section is not None else ABSENT,
            f"the teacher scores at {name}={render(teacher)} but the student generates at {GENERATION}.{name}="
            f"{render(student)}: the distillation loss compares distributions taken at different sampling "
            f"parameters. Set {path} to {render(student)} (or generate at {render(teacher)}).",
        )


def distillation_scoring_findings(
    document: Mapping[str, Any], *, unresolved: Collection[str] = ()
) -> list[Finding]:
    """P31's findings over a resolved distillation recipe, which preflight never runs; a malformed or unresolved
    value yields nothing (the whole-recipe schema reports it)."""
    context = Context(Reader(document, unresolved=unresolved), "grpo", PreflightOptions(), {}, code=P31.code)
    try:
        check_distillation_scoring(context)
    except (MissingKey, Unresolved, WrongShape):
        return []
    return context.findings


def _sampling_value(value: object, name: str) -> object:
    """A sampling key as the workers read it: absent is vLLM's default, ``top_k`` null or <= 0 is off (null),
    numbers as floats (1 and 1.0 are one temperature)."""
    if value is ABSENT:
        return _UNSET_SAMPLING[name]
    if name == "top_k":
        return None if isinstance(value, int) and not isinstance(value, bool) and value <= 0 else value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return value
