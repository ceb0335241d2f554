"""``examples/grpo_step.py`` on real vLLM 0.32: one GRPO step on the tiny MoE model, then one fault at a time.

The engine comes from ``tests/data/grpo_step.yaml`` through ``engine_kwargs`` only; the learner is transformers on
the same weights in float32.  The clean step must pass every check, with the engine's step metrics equal to what
``generate`` returned and a second turn vLLM prefills exactly.  Then each fault a trainer meets is injected into
that step's real objects and must raise its own error class.  0.32 only: the step labels weight versions.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
from vllm import SamplingParams

from rl_contracts.config import LoadedRecipe, load_recipe
from rl_contracts.errors import (
    CounterSnapshotError,
    LogprobMismatchError,
    RolloutPromptError,
    RolloutWeightVersionError,
    SpliceError,
    TokenizerMismatchError,
)
from rl_contracts.logprobs import check_logprob_agreement
from rl_contracts.prompts import check_tokenizers_match
from rl_contracts.rollouts import RolloutBatch, rollout_batch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from grpo_step import (
    StepResult,
    engine_step_metrics,
    grpo_step,
    learner_logprobs,
    load_learner,
    next_turn_prompts,
    start_engine,
)

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import transformers  # type: ignore[import-not-found, unused-ignore]

pytestmark = [pytest.mark.vllm, pytest.mark.vllm_releases("0.32")]

RECIPE = Path(__file__).resolve().parents[1] / "data" / "grpo_step.yaml"
N = 2
VERSION = "step-1"
CONVERSATIONS = [
    [{"role": "user", "content": "the quick brown fox"}],
    [{"role": "user", "content": "hello world"}],
]
FOLLOW_UP = {"role": "user", "content": "and then?"}
_KEEP_ALIVE: list[Any] = []
"""The engine lives until the process ends: on 0.32 freeing an in-process engine tears down vLLM's global state."""


def _model_dir() -> Path:
    path = Path(os.environ.get("RL_CONTRACTS_VLLM_MODELS", "")) / "moe"
    if not (path / "config.json").is_file():
        pytest.fail(f"tiny model 'moe' is missing at {path}; run the tier with `bash .ci/vllm_tier`")
    return path


def _show(capsys: pytest.CaptureFixture[str], fault: str, error: BaseException) -> None:
    """Print the fault and the error it raised to the terminal, past pytest's capture (the README's table)."""
    with capsys.disabled():
        print(f"\ngrpo step fault: {fault}: {type(error).__name__}: {error}")


def _even_token_reward(batch: RolloutBatch) -> torch.Tensor:
    """A toy reward: the number of generated tokens with an even id."""
    even = (batch.token_ids % 2 == 0).float() * batch.loss_mask
    return even.sum(dim=1)


@pytest.fixture(scope="module")
def recipe() -> LoadedRecipe:
    """The step's recipe with ``policy.model_name`` set to the tiny MoE model."""
    return load_recipe(RECIPE, run_preflight=False, overrides=[f"policy.model_name={_model_dir()}"])


@pytest.fixture(scope="module")
def step(recipe: LoadedRecipe) -> tuple[Any, Any, Any, StepResult]:
    """The engine, the learner (a copy taken before its update), its tokenizer, and one clean step."""
    llm = start_engine(recipe, seed=0)
    _KEEP_ALIVE.append(llm)
    learner = load_learner(_model_dir())
    before_update = copy.deepcopy(learner)
    tokenizer = transformers.AutoTokenizer.from_pretrained(_model_dir())
    config = transformers.GenerationConfig.from_pretrained(_model_dir())
    result = grpo_step(
        llm,
        recipe,
        learner,
        tokenizer,
        torch.optim.SGD(learner.parameters(), lr=1e-2),
        CONVERSATIONS,
        _even_token_reward,
        n=N,
        weight_version=VERSION,
        follow_up=FOLLOW_UP,
        generation_config=config,
    )
    return llm, before_update, tokenizer, result


def test_the_clean_step_passes_and_its_figures_are_vllms(
    step: tuple[Any, Any, Any, StepResult], capsys: pytest.CaptureFixture[str]
) -> None:
    """Every check passes; the metrics are the tokens ``generate`` returned; the second turn is prefilled as is."""
    llm, _, tokenizer, result = step
    batch, outputs = result.rollouts.batch, result.rollouts.request_outputs
    completions = [c for output in outputs for c in sorted(output.outputs, key=lambda c: c.index)]
    assert len(batch) == len(completions) == N * len(CONVERSATIONS)
    assert batch.version_labels == (VERSION,)
    assert result.agreement.tokens == sum(len(c.token_ids) for c in completions)
    assert result.agreement.abs_diff_max is not None
    assert result.agreement.abs_diff_max < 1e-3
    metrics = result.rollouts.metrics
    with capsys.disabled():
        print(
            f"\ngrpo step: {len(batch)} sequences, {result.agreement.tokens} tokens, "
            f"mult_prob_error={result.agreement.mult_prob_error}, max|diff|={result.agreement.abs_diff_max}, "
            f"metrics={metrics}, loss={float(result.loss):.4f}"
        )
    assert metrics["vllm/generation_tokens"] == float(sum(len(c.token_ids) for c in completions))
    assert metrics["vllm/generations_ok"] == float(len(completions))
    assert torch.isfinite(result.loss)
    assert result.advantages.shape == (len(batch),)
    first = result.next_prompts[0]
    prefix = batch.token_ids[0, : int(batch.lengths[0])].tolist()
    assert first[: len(prefix)] == prefix
    assert tokenizer.decode(first[len(prefix) :]).endswith("<|user|>and then?</s><|assistant|>")
    second = llm.generate(
        [{"prompt_token_ids": p} for p in result.next_prompts],
        SamplingParams(max_tokens=1, logprobs=0),
        use_tqdm=False,
    )
    assert len(rollout_batch(result.next_prompts, second)) == len(batch)


def test_a_prompt_changed_after_generation(
    step: tuple[Any, Any, Any, StepResult], capsys: pytest.CaptureFixture[str]
) -> None:
    """The learner's prompt of row 1 lost its last token after ``generate``: the hand-off names row 1."""
    result = step[3]
    prompts = [list(o.prompt_token_ids) for o in result.rollouts.request_outputs]
    prompts[1] = prompts[1][:-1]
    with pytest.raises(RolloutPromptError) as info:
        rollout_batch(prompts, result.rollouts.request_outputs, n=N)
    _show(capsys, "prompt changed after generation", info.value)
    assert info.value.row == 1


def test_a_stale_weight_version(
    step: tuple[Any, Any, Any, StepResult], capsys: pytest.CaptureFixture[str]
) -> None:
    """The trainer moved on to ``step-2`` but the engine was never refit: its ``step-1`` tokens are refused."""
    result = step[3]
    prompts = [list(o.prompt_token_ids) for o in result.rollouts.request_outputs]
    with pytest.raises(RolloutWeightVersionError) as info:
        rollout_batch(prompts, result.rollouts.request_outputs, n=N, allowed_versions={"step-2"})
    _show(capsys, "stale weight version", info.value)
    assert (info.value.row, info.value.choice, info.value.version) == (0, 0, VERSION)


def test_perturbed_learner_weights(
    step: tuple[Any, Any, Any, StepResult], capsys: pytest.CaptureFixture[str]
) -> None:
    """The learner holds other weights than the engine (noise on every matrix): every sequence disagrees."""
    before_update, batch = step[1], step[3].rollouts.batch
    perturbed = copy.deepcopy(before_update)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for parameter in perturbed.parameters():
            if parameter.ndim == 2:
                parameter.add_(torch.randn(parameter.shape, generator=generator) * parameter.std())
        learned = learner_logprobs(perturbed, batch)
    with pytest.raises(LogprobMismatchError) as info:
        check_logprob_agreement(batch.generation_logprobs, learned, batch.loss_mask)
    _show(capsys, "perturbed learner weights", info.value)
    assert info.value.likely_cause == "uniform"


def test_off_by_one_learner_logprobs(
    step: tuple[Any, Any, Any, StepResult], capsys: pytest.CaptureFixture[str]
) -> None:
    """The learner's logprobs one position late (an unsliced leading entry): cause "shift"."""
    before_update, batch = step[1], step[3].rollouts.batch
    with torch.no_grad():
        learned = learner_logprobs(before_update, batch)
    late = torch.cat([torch.zeros_like(learned[:, :1]), learned[:, :-1]], dim=1)
    check_logprob_agreement(batch.generation_logprobs, learned, batch.loss_mask)  # the learner copy agrees
    with pytest.raises(LogprobMismatchError) as info:
        check_logprob_agreement(batch.generation_logprobs, late, batch.loss_mask)
    _show(capsys, "off-by-one learner logprobs", info.value)
    assert info.value.likely_cause == "shift"


def test_swapped_metric_snapshots(
    step: tuple[Any, Any, Any, StepResult], capsys: pytest.CaptureFixture[str]
) -> None:
    """The end snapshot passed as the start: an error, not a plausible idle step."""
    rollouts = step[3].rollouts
    with pytest.raises(CounterSnapshotError, match="swapped") as info:
        engine_step_metrics(rollouts.after, rollouts.before)
    _show(capsys, "swapped metric snapshots", info.value)


def test_a_template_that_leaves_the_last_turn_open(
    step: tuple[Any, Any, Any, StepResult], capsys: pytest.CaptureFixture[str]
) -> None:
    """A chat template without the final assistant message's terminator: the second turn is refused."""
    tokenizer, batch = transformers.AutoTokenizer.from_pretrained(_model_dir()), step[3].rollouts.batch
    tokenizer.chat_template = tokenizer.chat_template.replace(
        "{{ eos_token }}",
        "{% if not (loop.last and message['role'] == 'assistant') %}{{ eos_token }}{% endif %}",
    )
    with pytest.raises(SpliceError, match="left open") as info:
        next_turn_prompts(tokenizer, CONVERSATIONS, batch, FOLLOW_UP)
    _show(capsys, "open last turn", info.value)


def test_a_retrained_tokenizer(
    step: tuple[Any, Any, Any, StepResult], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The learner's tokenizer files with two ordinary tokens' ids swapped (same size): the vocabulary differs."""
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        if (_model_dir() / name).is_file():
            shutil.copy(_model_dir() / name, tmp_path / name)
    data = json.loads((tmp_path / "tokenizer.json").read_text())
    vocab = data["model"]["vocab"]
    first, second = [
        token for token, index in sorted(vocab.items(), key=lambda item: item[1]) if index >= 100
    ][:2]
    vocab[first], vocab[second] = vocab[second], vocab[first]
    (tmp_path / "tokenizer.json").write_text(json.dumps(data))
    retrained = transformers.AutoTokenizer.from_pretrained(tmp_path)
    check_tokenizers_match(step[2], step[0].get_tokenizer())
    with pytest.raises(TokenizerMismatchError) as info:
        check_tokenizers_match(retrained, step[0].get_tokenizer())
    _show(capsys, "retrained tokenizer", info.value)
    assert info.value.components == ("vocabulary",)
