"""Trainer glue: one GRPO-style step on a real vLLM engine, with the library at every hand-off.

The step, in the order a trainer runs it (:func:`grpo_step` chains them; each piece is usable alone):

1. :func:`start_engine`: ``vllm.LLM(**engine_kwargs(recipe, seed=...))``, nothing hand-written;
   :func:`check_tokenizers_match` then rejects a learner tokenizer that is not the engine's.
2. :func:`generate_rollouts`: label the weights (``llm.llm_engine.set_weight_version``), snapshot the engine's
   counters, ``LLM.generate`` with ``SamplingParams(**sampling_kwargs(recipe), n=...)``, snapshot again; then
   :func:`rollout_batch` checks every row (prompt, weight version, sampled-token logprobs, finish reason) and builds
   the ``[B, T]`` tensors, and :func:`engine_step_metrics` takes the per-engine delta of the two snapshots.
3. :func:`learner_logprobs`: the learner (transformers, float32, the same weights) scores the batch's tokens in the
   batch's coordinates; :func:`check_logprob_agreement` fails the step when the two policies differ.
4. :func:`group_advantages` and :func:`policy_loss`: GRPO's group-normalised advantages and clipped surrogate.
5. :func:`next_turn_prompts`: the second turn's prompt of every sequence through :func:`splice_turn` (the model's
   exact tokens, then the template's new turn), ready for the next ``generate``.

Neither vLLM nor transformers is imported when this module is imported (only inside :func:`start_engine` and
:func:`load_learner`), so it imports where they are absent.  ``tests/vllm/test_grpo_step.py`` runs it on the tiny
local MoE model and injects one fault at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from rl_contracts.config import LoadedRecipe
from rl_contracts.logprobs import MismatchBounds, MismatchReport, check_logprob_agreement
from rl_contracts.metrics import CounterSnapshot, aggregate_spec_decode_counters, compute_engine_step_metrics
from rl_contracts.prompts import check_tokenizers_match
from rl_contracts.rollouts import RolloutBatch, rollout_batch
from rl_contracts.splice import splice_turn
from rl_contracts.vllm_arguments import engine_kwargs, sampling_kwargs

__all__ = [
    "Rollouts",
    "StepResult",
    "engine_step_metrics",
    "generate_rollouts",
    "group_advantages",
    "grpo_step",
    "learner_logprobs",
    "load_learner",
    "next_turn_prompts",
    "policy_loss",
    "start_engine",
]

Reward = Callable[[RolloutBatch], torch.Tensor]
"""A reward function: one float per sequence of the batch (``[B]``)."""


@dataclass(frozen=True)
class Rollouts:
    """One checked ``generate`` call: the learner's batch, vLLM's outputs and the engine's step metrics."""

    batch: RolloutBatch
    request_outputs: list[Any]
    """vLLM's ``RequestOutput``\\ s, in prompt order (kept for the next turn and for re-checking)."""
    before: CounterSnapshot
    """The engine's counters just before ``generate``."""
    after: CounterSnapshot
    """The engine's counters just after it."""
    metrics: dict[str, float]
    """:func:`engine_step_metrics` of ``before`` and ``after``."""


@dataclass(frozen=True)
class StepResult:
    """What :func:`grpo_step` produced: the rollouts, the agreement report, the loss and the next prompts."""

    rollouts: Rollouts
    agreement: MismatchReport
    advantages: torch.Tensor
    """``[B]`` group-normalised advantages."""
    loss: torch.Tensor
    """The scalar clipped-surrogate loss, already back-propagated and applied by the optimizer."""
    next_prompts: list[list[int]]
    """Each sequence's second-turn prompt (:func:`next_turn_prompts`)."""


def start_engine(recipe: LoadedRecipe, *, seed: int, **overrides: Any) -> Any:
    """``vllm.LLM`` built from the recipe's generation section only (:func:`engine_kwargs`); ``overrides`` win.

    Raises what :func:`engine_kwargs` raises (``ContractTypeError``, ``ConfigContractError``) before vLLM starts.
    """
    from vllm import LLM  # imported here: the module itself imports without vLLM

    return LLM(**engine_kwargs(recipe, seed=seed, overrides=overrides or None))


def load_learner(model: str | Path) -> Any:
    """The learner: ``transformers.AutoModelForCausalLM`` on the engine's weights, in float32, in eval mode."""
    import transformers  # type: ignore[import-not-found, unused-ignore]

    return transformers.AutoModelForCausalLM.from_pretrained(str(model), dtype=torch.float32).eval()


def engine_step_metrics(before: CounterSnapshot, after: CounterSnapshot) -> dict[str, float]:
    """The engine's own accounting of the step: per-engine deltas of the two snapshots, summed.

    Raises ``CounterSnapshotError`` for snapshots passed in the wrong order (``after`` taken before ``before``),
    never a plausible idle step; an engine that restarted in between is reported as ``vllm/engines_reset``.
    """
    return compute_engine_step_metrics(
        aggregate_spec_decode_counters([before]), aggregate_spec_decode_counters([after])
    )


def generate_rollouts(
    llm: Any,
    recipe: LoadedRecipe,
    prompts: Sequence[Sequence[int]],
    *,
    n: int,
    weight_version: str,
    allowed_versions: Sequence[str] | None = None,
) -> Rollouts:
    """Generate ``n`` completions per token prompt with the recipe's sampling, and hand them off to the learner.

    ``weight_version`` labels the engine's current weights (``llm.llm_engine.set_weight_version``, vLLM 0.32+);
    ``allowed_versions`` (default: that label only) is what the learner accepts.  Every row is checked by
    :func:`rollout_batch`.

    Raises:
        RolloutPromptError, RolloutWeightVersionError, RolloutBatchError: as :func:`rollout_batch`, naming the row
            and choice.
        CounterSnapshotError: as :func:`engine_step_metrics`.
    """
    llm.llm_engine.set_weight_version(weight_version)
    from vllm import SamplingParams

    params = SamplingParams(**sampling_kwargs(recipe), n=n)
    before = CounterSnapshot.from_vllm_metrics(llm.get_metrics())
    outputs = list(llm.generate([{"prompt_token_ids": list(p)} for p in prompts], params, use_tqdm=False))
    after = CounterSnapshot.from_vllm_metrics(llm.get_metrics())
    allowed = [weight_version] if allowed_versions is None else list(allowed_versions)
    batch = rollout_batch(prompts, outputs, n=n, allowed_versions=allowed)
    return Rollouts(batch, outputs, before, after, engine_step_metrics(before, after))


def learner_logprobs(model: Any, batch: RolloutBatch) -> torch.Tensor:
    """The learner's ``log p(token_t | tokens_<t)`` at every position ``t`` of the batch, ``[B, T]`` float32.

    One batched forward over ``batch.token_ids`` (right-padded, with its attention mask): the logits at ``t - 1``
    score the token at ``t``, so the result is in the coordinates of ``batch.generation_logprobs`` and
    ``batch.loss_mask``; position 0 (no context) and positions outside the loss mask hold 0.0.  Gradients flow when
    called outside ``torch.no_grad()``.
    """
    ids = batch.token_ids
    attention = (torch.arange(ids.shape[1])[None, :] < batch.lengths[:, None]).long()
    logits = model(input_ids=ids, attention_mask=attention).logits.float()
    scored = torch.log_softmax(logits[:, :-1], dim=-1).gather(2, ids[:, 1:, None])[:, :, 0]
    result = torch.cat([torch.zeros_like(scored[:, :1]), scored], dim=1)
    return result * batch.loss_mask


def group_advantages(rewards: torch.Tensor, n: int) -> torch.Tensor:
    """GRPO's advantages: each reward minus its group's mean, over the group's standard deviation (+1e-6).

    ``rewards`` is ``[B]`` with the ``n`` completions of one prompt adjacent (the order :func:`rollout_batch`
    returns).
    """
    groups = rewards.reshape(-1, n)
    centred = groups - groups.mean(dim=1, keepdim=True)
    return (centred / (groups.std(dim=1, keepdim=True) + 1e-6)).reshape(-1)


def policy_loss(
    learner: torch.Tensor, batch: RolloutBatch, advantages: torch.Tensor, *, clip: float = 0.2
) -> torch.Tensor:
    """GRPO's clipped surrogate, ``-mean(min(r A, clip(r, 1 - clip, 1 + clip) A))`` over the loss mask, where
    ``r = exp(learner - generation)`` is the token's ratio to the policy that sampled it."""
    ratio = torch.exp(learner - batch.generation_logprobs)
    advantage = advantages[:, None]
    surrogate = torch.minimum(ratio * advantage, torch.clamp(ratio, 1 - clip, 1 + clip) * advantage)
    return -(surrogate * batch.loss_mask).sum() / batch.loss_mask.sum()


def next_turn_prompts(
    tokenizer: Any,
    conversations: Sequence[Sequence[Mapping[str, Any]]],
    batch: RolloutBatch,
    follow_up: Mapping[str, Any],
    *,
    generation_config: Any = None,
) -> list[list[int]]:
    """Each sequence's second-turn prompt: its exact first-turn tokens, then the template's ``follow_up`` turn.

    ``conversations[row]`` is the first turn's messages of that row; the reply is the sequence's generated text.
    :func:`splice_turn` (turn-count check on) renders the history and keeps the model's tokens as they were.

    Raises:
        SpliceError: as :func:`splice_turn`, e.g. a chat template that leaves the last assistant turn open (the
            next prompt would hold that turn twice).
    """
    prompts = []
    for index in range(len(batch)):
        row, length = int(batch.rows[index]), int(batch.lengths[index])
        model_prefix = batch.token_ids[index, :length].tolist()
        generated = model_prefix[int(batch.prompt_lengths[index]) :]
        reply = tokenizer.decode(generated, skip_special_tokens=True)
        messages = [*conversations[row], {"role": "assistant", "content": reply}, dict(follow_up)]
        splice = splice_turn(tokenizer, messages, model_prefix, generation_config=generation_config)
        prompts.append(list(splice.token_ids))
    return prompts


def grpo_step(
    llm: Any,
    recipe: LoadedRecipe,
    learner: Any,
    learner_tokenizer: Any,
    optimizer: torch.optim.Optimizer,
    conversations: Sequence[Sequence[Mapping[str, Any]]],
    reward: Reward,
    *,
    n: int,
    weight_version: str,
    follow_up: Mapping[str, Any],
    bounds: MismatchBounds = MismatchBounds(),  # noqa: B008 (a frozen model: never mutated)
    generation_config: Any = None,
) -> StepResult:
    """One GRPO step: check the tokenizers, generate and hand off, check agreement, update, splice the next turn.

    The first-turn prompts are the learner tokenizer's chat template of ``conversations`` (with the generation
    prompt).  Every check runs before the optimizer changes the learner, so a failing step leaves it untouched.

    Raises:
        TokenizerMismatchError: the learner's tokenizer is not the engine's.
        LogprobMismatchError: the learner's and the engine's logprobs disagree beyond ``bounds``.
        What :func:`generate_rollouts` and :func:`next_turn_prompts` raise.
    """
    check_tokenizers_match(learner_tokenizer, llm.get_tokenizer())
    prompts = [
        _ids(learner_tokenizer.apply_chat_template(list(c), add_generation_prompt=True))
        for c in conversations
    ]
    rollouts = generate_rollouts(llm, recipe, prompts, n=n, weight_version=weight_version)
    batch = rollouts.batch
    learned = learner_logprobs(learner, batch)
    agreement = check_logprob_agreement(
        batch.generation_logprobs, learned.detach(), batch.loss_mask, bounds=bounds
    )
    next_prompts = next_turn_prompts(
        learner_tokenizer, conversations, batch, follow_up, generation_config=generation_config
    )
    advantages = group_advantages(reward(batch), n)
    loss = policy_loss(learned, batch, advantages)
    optimizer.zero_grad()
    loss.backward()  # type: ignore[no-untyped-call, unused-ignore]
    optimizer.step()
    return StepResult(rollouts, agreement, advantages, loss.detach(), next_prompts)


def _ids(rendered: Any) -> list[int]:
    """Token ids of ``apply_chat_template(tokenize=True)`` (a list, or a ``BatchEncoding`` in transformers 5)."""
    ids = rendered["input_ids"] if isinstance(rendered, Mapping) or hasattr(rendered, "keys") else rendered
    return [int(token) for token in ids]
