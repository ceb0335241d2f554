"""Token information and routed experts attached to a real vLLM ``ChatCompletionResponse`` (SPEC §3.5, §5).

The response is built with vLLM's own protocol types from the same chat request whose ``RequestOutput`` (real
``Logprob`` dicts, token ids, routed experts) is attached; invariants 17, 18 and 19. Token information is checked on
every release, routed experts on the releases whose CPU build returns them (0.30).
"""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from vllm import SamplingParams
from vllm.entrypoints.openai.chat_completion.protocol import (
    ChatCompletionResponse,
    ChatCompletionResponseChoice,
    ChatMessage,
)
from vllm.entrypoints.serve.engine.protocol import UsageInfo
from vllm.logprobs import Logprob

from rl_contracts.chat import (
    VLLM_LOGPROB_FLOOR,
    attach_routed_experts_to_chat_response_choices,
    attach_token_information_to_chat_response_choices,
    model_dump_chat_response_with_dynamic_message_fields,
)
from rl_contracts.codec import decode_routed_experts
from rl_contracts.errors import ChatResponseContractError
from rl_contracts.routed_experts import pad_and_align_routed_expert_indices

pytestmark = pytest.mark.vllm

_WORDS = ["route", "every", "token", "to", "the", "same", "expert", "hello", "world", "cache", "draft", "!"]
messages_strategy = st.lists(st.sampled_from(_WORDS), min_size=1, max_size=10).map(
    lambda words: [{"role": "user", "content": " ".join(words)}]
)
# (n, temperature): vLLM rejects greedy sampling with n > 1.
n_and_temperature = st.sampled_from([(1, 0.0), (2, 0.8), (1, 1.0), (2, 1.0)])


def chat_response(request_output: Any, *, reverse: bool) -> Any:
    """A real ``ChatCompletionResponse`` for ``request_output``, as vLLM's chat endpoint shapes it."""
    choices = [
        ChatCompletionResponseChoice(
            index=output.index,
            message=ChatMessage(role="assistant", content=output.text),
            finish_reason=output.finish_reason,
            token_ids=list(output.token_ids),
        )
        for output in request_output.outputs
    ]
    if reverse:
        choices.reverse()
    generated = sum(len(output.token_ids) for output in request_output.outputs)
    prompt = len(request_output.prompt_token_ids)
    return ChatCompletionResponse(
        model="tiny",
        choices=choices,
        usage=UsageInfo(prompt_tokens=prompt, completion_tokens=generated, total_tokens=prompt + generated),
        prompt_token_ids=list(request_output.prompt_token_ids),
    )


@settings(max_examples=10, deadline=None)
@given(
    messages=messages_strategy,
    n_temperature=n_and_temperature,
    max_tokens=st.integers(1, 6),
    top_logprobs=st.integers(0, 3),
    reverse=st.booleans(),
)
def test_token_information_equals_vllm_logprobs(
    moe_llm: Any,
    messages: list[dict[str, str]],
    n_temperature: tuple[int, float],
    max_tokens: int,
    top_logprobs: int,
    reverse: bool,
) -> None:
    """Attached ids equal vLLM's and each attached log-prob is vLLM's selected-token ``Logprob`` (inv. 18, 19)."""
    n, temperature = n_temperature
    params = SamplingParams(
        n=n, temperature=temperature, max_tokens=max_tokens, logprobs=top_logprobs, seed=5
    )
    [request_output] = moe_llm.chat(messages, params, use_tqdm=False)
    response = chat_response(request_output, reverse=reverse)

    assert attach_token_information_to_chat_response_choices(response, request_output) is response

    by_index = {output.index: output for output in request_output.outputs}
    prompt_lists = []
    for choice in response.choices:
        output = by_index[choice.index]
        message = choice.message
        assert message.prompt_token_ids == list(request_output.prompt_token_ids)
        prompt_lists.append(message.prompt_token_ids)
        assert message.generation_token_ids == list(output.token_ids)
        assert len(message.generation_log_probs) == len(output.token_ids) == len(output.logprobs)
        for position, token_id in enumerate(output.token_ids):
            entry = output.logprobs[position]
            selected = entry[token_id]
            assert isinstance(selected, Logprob)
            assert len(entry) in (top_logprobs, top_logprobs + 1)  # the sampled token plus the top-k
            attached = message.generation_log_probs[position]
            assert type(attached) is float
            assert math.isfinite(attached)
            assert attached == max(selected.logprob, VLLM_LOGPROB_FLOOR)
    assert len({id(ids) for ids in prompt_lists}) == len(prompt_lists)

    dump = model_dump_chat_response_with_dynamic_message_fields(response)
    for position, choice in enumerate(response.choices):
        dumped = dump["choices"][position]["message"]
        assert dumped["generation_log_probs"] is choice.message.generation_log_probs
        assert dumped["generation_token_ids"] is choice.message.generation_token_ids
        assert dumped["prompt_token_ids"] is choice.message.prompt_token_ids


@pytest.mark.vllm_releases("0.30")
@settings(max_examples=6, deadline=None)
@given(
    messages=messages_strategy,
    n_temperature=n_and_temperature,
    max_tokens=st.integers(1, 6),
    reverse=st.booleans(),
)
def test_routed_experts_attach_to_a_real_chat_response(
    moe_llm: Any,
    messages: list[dict[str, str]],
    n_temperature: tuple[int, float],
    max_tokens: int,
    reverse: bool,
) -> None:
    """Each choice's envelope decodes to the routes aligned from its own real output, over prompt + generation."""
    n, temperature = n_temperature
    params = SamplingParams(n=n, temperature=temperature, max_tokens=max_tokens, seed=5)
    [request_output] = moe_llm.chat(messages, params, use_tqdm=False)
    response = chat_response(request_output, reverse=reverse)
    by_index = {output.index: output for output in request_output.outputs}
    assert attach_routed_experts_to_chat_response_choices(response, request_output, device="cpu") is response
    for choice in response.choices:
        output = by_index[choice.index]
        valid = len(request_output.prompt_token_ids) + len(output.token_ids)
        expected = pad_and_align_routed_expert_indices(
            request_output, output, valid_length=valid, padded_length=valid, device="cpu"
        )
        assert expected is not None
        decoded = decode_routed_experts(choice.message.routed_experts, torch.int16)
        assert torch.equal(decoded, expected)
        assert decoded.shape[0] == valid


def test_token_information_without_logprobs_leaves_real_response_untouched(moe_llm: Any) -> None:
    """A real output generated without log-probs is rejected and the real response is left exactly as it was."""
    messages = [{"role": "user", "content": "hello world"}]
    [request_output] = moe_llm.chat(messages, SamplingParams(max_tokens=3, ignore_eos=True), use_tqdm=False)
    assert request_output.outputs[0].logprobs is None
    response = chat_response(request_output, reverse=False)
    before = response.model_dump()
    with pytest.raises(ChatResponseContractError, match="did not include logprobs"):
        attach_token_information_to_chat_response_choices(response, request_output)
    assert response.model_dump() == before
    assert getattr(response.choices[0].message, "generation_token_ids", None) is None
