"""The batch-level rollout hand-off on a real ``generate`` call (``rl_contracts.rollouts``), on every release.

The learner's token prompts go to ``LLM.generate`` with ``n=2`` and ``logprobs=0``; ``rollout_batch`` checks the
real ``RequestOutput``\\ s and builds the learner's tensors. The same engine then scores every whole sequence with
``prompt_logprobs=0``, which is what a learner on the same weights computes, and the batch's log-probabilities must
agree with it under the batch's loss mask. On 0.32 the trainer labels the weights (``llm.llm_engine
.set_weight_version``), and every generated token's code names that label. Expected values come from the objects
vLLM returned, never from the code under test.

With ``RL_CONTRACTS_VLLM_RECORD`` set to a directory, 0.32 writes what it saw there as
``generate_rollout_batch.json`` (the recording ``tests/test_rollouts.py`` replays).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
from pathlib import Path
from typing import Any

import pytest
import torch
import vllm
from vllm import SamplingParams

from rl_contracts.errors import RolloutBatchError, RolloutPromptError, RolloutWeightVersionError
from rl_contracts.rollouts import NO_VERSION, rollout_batch, sampled_logprobs

pytestmark = pytest.mark.vllm

PROMPTS = [[1, 40, 41, 42, 43], [1, 60, 61, 62, 63, 64, 65]]
PARAMS: dict[str, Any] = {"n": 2, "max_tokens": 6, "temperature": 1.0, "seed": 11, "logprobs": 0}
VERSION = "r1"
TOLERANCE = 1e-3
"""Largest |engine - learner| log-prob difference accepted: the same float32 weights, prefill against decode."""
RECORD_ENV = "RL_CONTRACTS_VLLM_RECORD"
LABELLED = tuple(int(part) for part in vllm.__version__.split(".")[:2]) >= (0, 32)
"""vLLM labels sampled tokens with weight versions from 0.32 on."""


@pytest.fixture(scope="module")
def generated(moe_llm: Any) -> list[Any]:
    """One real generate of the learner's prompts (labelled ``r1`` where the release labels weights)."""
    if LABELLED:
        moe_llm.llm_engine.set_weight_version(VERSION)
    outputs: list[Any] = moe_llm.generate(
        [{"prompt_token_ids": prompt} for prompt in PROMPTS], SamplingParams(**PARAMS), use_tqdm=False
    )
    return outputs


def _learner_logprobs(llm: Any, sequences: list[list[int]], prompt_lengths: list[int]) -> list[list[float]]:
    """The same weights' log-prob of every generated token, from ``prompt_logprobs`` over the whole sequence."""
    params = SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=0)
    outputs = llm.generate([{"prompt_token_ids": s} for s in sequences], params, use_tqdm=False)
    return [
        [output.prompt_logprobs[t][sequence[t]].logprob for t in range(start, len(sequence))]
        for output, sequence, start in zip(outputs, sequences, prompt_lengths, strict=True)
    ]


def test_a_real_generate_becomes_a_learner_batch_that_agrees_with_the_same_weights(
    moe_llm: Any, generated: list[Any]
) -> None:
    """The batch holds vLLM's tokens and sampled log-probs per (row, choice); they agree with the same weights'
    log-probs under the loss mask; on 0.32 every generated token is coded with the label the trainer set."""
    batch = rollout_batch(PROMPTS, generated, n=2, allowed_versions={VERSION} if LABELLED else None)
    completions = [
        (row, c) for row, output in enumerate(generated) for c in sorted(output.outputs, key=_index)
    ]
    assert len(batch) == len(completions) == 4
    for index, (row, completion) in enumerate(completions):
        tokens = list(completion.token_ids)
        start, end = len(PROMPTS[row]), len(PROMPTS[row]) + len(tokens)
        assert batch.token_ids[index, :end].tolist() == PROMPTS[row] + tokens
        assert batch.loss_mask[index].tolist() == [
            float(start <= t < end) for t in range(batch.token_ids.shape[1])
        ]
        raw = [entry[token].logprob for token, entry in zip(tokens, completion.logprobs, strict=True)]
        assert batch.generation_logprobs[index, start:end].tolist() == pytest.approx(raw, abs=1e-6)
        assert sampled_logprobs(completion) == pytest.approx(raw, abs=1e-6)
        assert batch.finish_reasons[index] == completion.finish_reason
        codes = batch.version_codes[index, start:end].tolist()
        assert codes == ([0] * len(tokens) if LABELLED else [NO_VERSION] * len(tokens))
    assert batch.version_labels == ((VERSION,) if LABELLED else ())

    sequences = [PROMPTS[row] + list(c.token_ids) for row, c in completions]
    learner_rows = _learner_logprobs(moe_llm, sequences, [len(PROMPTS[row]) for row, _ in completions])
    learner = torch.zeros_like(batch.generation_logprobs)
    for index, row_values in enumerate(learner_rows):
        start = int(batch.prompt_lengths[index])
        learner[index, start : start + len(row_values)] = torch.tensor(row_values)
    mask = batch.loss_mask.bool()
    assert float((learner - batch.generation_logprobs).abs()[mask].max()) < TOLERANCE
    if importlib.util.find_spec("rl_contracts.logprobs") is not None:  # SPEC §9, once merged
        report = importlib.import_module("rl_contracts.logprobs").check_logprob_agreement(
            batch.generation_logprobs, learner, batch.loss_mask
        )
        assert report.tokens == int(mask.sum())
    if LABELLED:
        _record(generated, completions, learner_rows)


def test_real_faults_name_the_row_and_choice(moe_llm: Any, generated: list[Any]) -> None:
    """A learner prompt that is not what vLLM prefilled, a label the rollout does not allow, and a generate without
    logprobs each fail with the row (and the choice) named."""
    wrong = [PROMPTS[0], PROMPTS[1][:-1]]
    with pytest.raises(RolloutPromptError) as prompt_error:
        rollout_batch(wrong, generated)
    assert (prompt_error.value.row, prompt_error.value.first_mismatch_index) == (1, len(PROMPTS[1]) - 1)
    if LABELLED:
        with pytest.raises(RolloutWeightVersionError) as version_error:
            rollout_batch(PROMPTS, generated, allowed_versions={"r0"})
        assert (version_error.value.row, version_error.value.choice, version_error.value.version) == (
            0,
            0,
            VERSION,
        )
    else:
        with pytest.raises(RolloutWeightVersionError, match="carries no weight_versions"):
            rollout_batch(PROMPTS, generated, allowed_versions={VERSION})
    no_logprobs = moe_llm.generate(
        [{"prompt_token_ids": PROMPTS[0]}], SamplingParams(max_tokens=2, temperature=0.0), use_tqdm=False
    )
    with pytest.raises(RolloutBatchError, match=r"SamplingParams\(logprobs=0\)") as logprob_error:
        rollout_batch(PROMPTS[:1], no_logprobs)
    assert (logprob_error.value.row, logprob_error.value.choice, logprob_error.value.check) == (
        0,
        0,
        "logprobs",
    )


def _index(completion: Any) -> int:
    index: int = completion.index
    return index


def _record(
    generated: list[Any], completions: list[tuple[int, Any]], learner_rows: list[list[float]]
) -> None:
    """Write ``generate_rollout_batch.json`` into ``$RL_CONTRACTS_VLLM_RECORD`` when it is set."""
    directory = os.environ.get(RECORD_ENV)
    if not directory:
        return
    data = {
        "meta": {
            "vllm_version": vllm.__version__,
            "model": "tiny qwen3_moe: 4 experts, top-2, 2 MoE layers, random weights, local BPE tokenizer",
            "procedure": f"llm.llm_engine.set_weight_version({VERSION!r}), then LLM.generate of token prompts; "
            "learner_logprobs: the same engine's prompt_logprobs=0 over each prompt + generated sequence",
        },
        "prompts": PROMPTS,
        "sampling": PARAMS,
        "agreement_tolerance": TOLERANCE,
        "request_outputs": [
            {
                "prompt_token_ids": list(output.prompt_token_ids),
                "finished": bool(output.finished),
                "outputs": [
                    {
                        "index": c.index,
                        "token_ids": list(c.token_ids),
                        "finish_reason": c.finish_reason,
                        "weight_versions": [
                            {"version": s.version, "start": s.start, "end": s.end} for s in c.weight_versions
                        ],
                        "logprobs": [{str(t): lp.logprob for t, lp in entry.items()} for entry in c.logprobs],
                    }
                    for c in sorted(output.outputs, key=_index)
                ],
            }
            for output in generated
        ],
        "learner_logprobs": learner_rows,
    }
    assert len(learner_rows) == len(completions)
    (Path(directory) / "generate_rollout_batch.json").write_text(json.dumps(data, indent=1) + "\n")
