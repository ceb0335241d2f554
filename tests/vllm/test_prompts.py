"""Rollout prompts (SPEC §4.1, invariant 20) against the token ids vLLM really prefilled.

vLLM's ``RequestOutput.prompt_token_ids`` is what the engine prefilled after its own processing (BOS, chat
template). The learner's ids must equal it exactly; a BOS added or dropped, or a placeholder run expanded twice,
must be rejected.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from vllm import SamplingParams

from rl_contracts.errors import RolloutPromptMismatchError
from rl_contracts.prompts import validate_rollout_prompt

pytestmark = pytest.mark.vllm

BOS, IMAGE = 1, 7
GREEDY = SamplingParams(max_tokens=2, temperature=0.0)
_WORDS = ["learner", "prompt", "engine", "prefill", "token", "hello", "world", "the", "fox", "12"]
texts = st.lists(st.sampled_from(_WORDS), min_size=1, max_size=10).map(" ".join)


def first_mismatch(expected: list[int], actual: list[int]) -> int | None:
    """The first differing index, or the shorter length when one is a prefix of the other (None when equal)."""
    for index, (left, right) in enumerate(zip(expected, actual, strict=False)):
        if left != right:
            return index
    return None if len(expected) == len(actual) else min(len(expected), len(actual))


def check_mismatch(expected: list[int], actual: list[int]) -> RolloutPromptMismatchError:
    """``validate_rollout_prompt`` rejects ``expected`` against the prefilled ``actual`` with exact attributes."""
    with pytest.raises(RolloutPromptMismatchError) as info:
        validate_rollout_prompt(expected, actual)
    error = info.value
    assert error.expected_length == len(expected)
    assert error.actual_length == len(actual)
    assert error.first_mismatch_index == first_mismatch(expected, actual)
    assert "Refusing to train on a different prompt" in str(error)
    return error


def prefilled(llm: Any, prompt: Any) -> list[int]:
    [output] = llm.generate([prompt], GREEDY, use_tqdm=False)
    return list(output.prompt_token_ids)


@settings(max_examples=8, deadline=None)
@given(text=texts)
def test_text_prompt_bos_added_by_vllm(spec_llm: Any, text: str) -> None:
    """vLLM prepends BOS to a text prompt: the ids with BOS pass, the learner ids without it are rejected at 0."""
    tokenizer = spec_llm.get_tokenizer()
    engine_ids = prefilled(spec_llm, text)
    with_bos = tokenizer(text).input_ids
    without_bos = tokenizer(text, add_special_tokens=False).input_ids
    assert engine_ids[0] == BOS
    validate_rollout_prompt(with_bos, engine_ids)
    error = check_mismatch(without_bos, engine_ids)
    assert error.first_mismatch_index == 0


def test_chat_prompt_double_bos_rejected(spec_llm: Any) -> None:
    """Re-tokenizing the rendered chat template with special tokens doubles the BOS vLLM prefilled once."""
    tokenizer = spec_llm.get_tokenizer()
    messages = [{"role": "user", "content": "hello world"}]
    [output] = spec_llm.chat(messages, GREEDY, use_tqdm=False)
    engine_ids = list(output.prompt_token_ids)
    rendered = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    exact = tokenizer(rendered, add_special_tokens=False).input_ids
    doubled = tokenizer(rendered).input_ids
    assert engine_ids[:2] != [BOS, BOS]
    assert doubled[:2] == [BOS, BOS]
    for same in (exact, tuple(exact), np.array(exact, dtype=np.int64), torch.tensor(exact)):
        validate_rollout_prompt(same, engine_ids)
    validate_rollout_prompt(exact, np.array(engine_ids))
    error = check_mismatch(doubled, engine_ids)
    assert error.first_mismatch_index == 1


@settings(max_examples=10, deadline=None)
@given(
    ids=st.lists(st.integers(8, 263), min_size=1, max_size=48),
    edit=st.sampled_from(["none", "append", "drop", "replace", "prepend_bos"]),
    position=st.integers(0, 47),
)
def test_token_id_prompt_prefilled_unchanged(spec_llm: Any, ids: list[int], edit: str, position: int) -> None:
    """Token-id prompts are prefilled verbatim; the check passes iff the learner ids equal them (invariant 20)."""
    engine_ids = prefilled(spec_llm, {"prompt_token_ids": ids})
    assert engine_ids == ids
    learner = list(ids)
    where = position % len(learner)
    if edit == "append":
        learner.append(BOS)
    elif edit == "drop":
        del learner[where]
    elif edit == "replace":
        learner[where] = 300 + learner[where] % 50
    elif edit == "prepend_bos":
        learner.insert(0, BOS)
    if learner == engine_ids:
        validate_rollout_prompt(learner, engine_ids)
        validate_rollout_prompt(torch.tensor(learner), tuple(engine_ids))
    else:
        check_mismatch(learner, engine_ids)
    with pytest.raises(RolloutPromptMismatchError) as info:
        validate_rollout_prompt(learner, None)
    assert info.value.actual_length is None
    assert info.value.first_mismatch_index is None


def test_placeholder_expanded_twice_rejected(spec_llm: Any) -> None:
    """Ids that already hold an expanded image run, expanded again (NeMo RL #4182), no longer match the learner.

    The tiny text model has no media processor, so the second expansion is applied to the submitted ids here;
    the ids compared are the ones vLLM really prefilled.
    """
    tokenizer = spec_llm.get_tokenizer()
    assert tokenizer.convert_tokens_to_ids("<image>") == IMAGE
    messages = [{"role": "user", "content": "<image>" * 4 + " describe the picture"}]
    rendered = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    learner = tokenizer(rendered, add_special_tokens=False).input_ids
    assert learner.count(IMAGE) == 4
    start = learner.index(IMAGE)
    expanded_again = learner[:start] + [IMAGE] * 16 + learner[start + 4 :]
    engine_ids = prefilled(spec_llm, {"prompt_token_ids": expanded_again})
    assert engine_ids == expanded_again
    error = check_mismatch(learner, engine_ids)
    assert error.first_mismatch_index == start + 4
    assert error.actual_length == len(learner) + 12
    validate_rollout_prompt(learner, prefilled(spec_llm, {"prompt_token_ids": learner}))
