"""Properties of chat token information, routed-experts attachment and the dynamic dump (SPEC §3.5, §5; §7)."""

from __future__ import annotations

import copy
import math
import pickle
from collections import Counter
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from rl_contracts.chat import (
    DYNAMIC_MESSAGE_FIELDS,
    VLLM_LOGPROB_FLOOR,
    attach_routed_experts_to_chat_response_choices,
    attach_token_information_to_chat_response_choices,
    model_dump_chat_response_with_dynamic_message_fields,
)
from rl_contracts.codec import decode_routed_experts
from rl_contracts.errors import (
    ChatResponseContractError,
    RoutedExpertsError,
)
from rl_contracts.routed_experts import pad_and_align_routed_expert_indices
from rl_contracts.testing import assert_contract_error
from rl_contracts.testing.strategies import (
    ChatChoiceModel,
    ChatMessageModel,
    ChatResponseModel,
    RecordingLogger,
    chat_exchanges,
    hostile_chat_exchanges,
    hostile_routed_chat_exchanges,
    routed_chat_exchanges,
)

CARRY_DTYPES = st.sampled_from([torch.int8, torch.int16, torch.int32])


def _by_index(response: Any) -> dict[int, dict[str, Any]]:
    """Every choice's dynamic message fields, keyed by choice index."""
    return {
        choice.index: {name: getattr(choice.message, name, None) for name in DYNAMIC_MESSAGE_FIELDS}
        for choice in response.choices
    }


@given(chat_exchanges())
def test_token_information_is_consistent_for_every_choice(exchange: tuple[Any, Any]) -> None:
    """Inv. 18: equal lengths, finite log-probs >= -9999 (the floored sampled ones), a distinct prompt list each."""
    response, request_output = exchange
    attach_token_information_to_chat_response_choices(response, request_output)
    outputs = {o.index: o for o in request_output.outputs}
    prompt_lists = [choice.message.prompt_token_ids for choice in response.choices]
    assert len({id(p) for p in prompt_lists}) == len(prompt_lists)
    for choice in response.choices:
        message, output = choice.message, outputs[choice.index]
        assert message.prompt_token_ids == request_output.prompt_token_ids
        assert message.prompt_token_ids is not request_output.prompt_token_ids
        assert message.generation_token_ids == list(output.token_ids)
        assert len(message.generation_token_ids) == len(message.generation_log_probs)
        for value, token_id, entry in zip(
            message.generation_log_probs, output.token_ids, output.logprobs, strict=True
        ):
            assert math.isfinite(value)
            assert value >= VLLM_LOGPROB_FLOOR
            assert value == max(float(entry[token_id].logprob), VLLM_LOGPROB_FLOOR)


@given(chat_exchanges(), st.randoms(use_true_random=False))
def test_token_information_is_invariant_under_permuting_choices(exchange: tuple[Any, Any], rng: Any) -> None:
    """Attaching to the same choices in another order gives every choice the same token information."""
    response, request_output = exchange
    shuffled = copy.deepcopy(response)
    rng.shuffle(shuffled.choices)
    attach_token_information_to_chat_response_choices(response, request_output)
    attach_token_information_to_chat_response_choices(shuffled, request_output)
    assert _by_index(response) == _by_index(shuffled)


@given(hostile_chat_exchanges())
def test_failed_token_information_leaves_the_response_exactly_as_it_was(case: tuple[Any, Any, str]) -> None:
    """Inv. 1, 2: a broken exchange raises a bounded, picklable ChatResponseContractError; nothing changes."""
    response, request_output, _ = case
    before, request_before = copy.deepcopy(response), pickle.dumps(request_output)
    with pytest.raises(ChatResponseContractError) as info:
        attach_token_information_to_chat_response_choices(response, request_output)
    assert_contract_error(info.value)
    assert response == before
    assert pickle.dumps(request_output) == request_before


def _routes_of(
    request_output: Any, output: Any, dtype: torch.dtype, routes_start: int
) -> torch.Tensor | None:
    count = len(request_output.prompt_token_ids) + len(output.token_ids)
    routes, _ = pad_and_align_routed_expert_indices(
        request_output,
        output,
        valid_length=count,
        padded_length=count,
        device="cpu",
        require_complete_routed_experts=True,
        return_stats=True,
        routed_experts_dtype=dtype,
        routes_start=routes_start,
    )
    return routes


@given(routed_chat_exchanges(), CARRY_DTYPES)
def test_attached_envelopes_decode_to_the_aligned_routes(
    exchange: tuple[Any, Any, int], dtype: torch.dtype
) -> None:
    """Inv. 17: each envelope decodes to pad-and-align of its output with valid = padded = prompt + generated."""
    response, request_output, routes_start = exchange
    attach_routed_experts_to_chat_response_choices(
        response, request_output, device="cpu", routed_experts_dtype=dtype, routes_start=routes_start
    )
    outputs = {o.index: o for o in request_output.outputs}
    for choice in response.choices:
        decoded = decode_routed_experts(choice.message.routed_experts, dtype)
        expected = _routes_of(request_output, outputs[choice.index], dtype, routes_start)
        assert expected is not None
        assert decoded.dtype == expected.dtype
        assert torch.equal(decoded, expected)


@given(routed_chat_exchanges(), st.randoms(use_true_random=False))
def test_routed_experts_are_invariant_under_permuting_choices(
    exchange: tuple[Any, Any, int], rng: Any
) -> None:
    """Attaching routes to permuted choices gives each choice the same envelope and the same fallback warning."""
    response, request_output, routes_start = exchange
    shuffled = copy.deepcopy(response)
    rng.shuffle(shuffled.choices)
    loggers = RecordingLogger(), RecordingLogger()
    for target, logger in zip((response, shuffled), loggers, strict=True):
        attach_routed_experts_to_chat_response_choices(
            target, request_output, device="cpu", logger=logger, routes_start=routes_start
        )
    assert _by_index(response) == _by_index(shuffled)
    assert Counter(loggers[0].calls) == Counter(loggers[1].calls)
    for target, logger in zip((response, shuffled), loggers, strict=True):
        logged = {args[0] for _, args in logger.calls}
        assert [args[0] for _, args in logger.calls] == [c.index for c in target.choices if c.index in logged]


@given(hostile_routed_chat_exchanges())
def test_failed_routed_attachment_leaves_the_response_exactly_as_it_was(
    case: tuple[Any, Any, int, str],
) -> None:
    """Inv. 1, 2: a broken routed exchange raises a bounded, picklable error and the response is unchanged."""
    response, request_output, routes_start, _ = case
    before, request_before = copy.deepcopy(response), pickle.dumps(request_output)
    with pytest.raises((ChatResponseContractError, RoutedExpertsError)) as info:
        attach_routed_experts_to_chat_response_choices(
            response, request_output, device="cpu", routed_experts_dtype=torch.int8, routes_start=routes_start
        )
    assert_contract_error(info.value)
    assert response == before
    assert pickle.dumps(request_output) == request_before


def _plain_dump(response: Any) -> dict[str, Any]:
    return {"choices": [{"index": c.index, "message": {"role": c.message.role}} for c in response.choices]}


@given(routed_chat_exchanges(), st.booleans())
def test_dump_carries_every_dynamic_field_by_identity(exchange: tuple[Any, Any, int], pydantic: bool) -> None:
    """Inv. 19: every non-None dynamic field of choice i is at ``dump["choices"][i]["message"][field]``, by identity."""
    response, request_output, routes_start = exchange
    indices = {choice.index for choice in response.choices}
    request_output.outputs = [
        o for o in request_output.outputs if o.index in indices
    ]  # token info matches exactly
    if pydantic:
        response = ChatResponseModel(
            choices=[
                ChatChoiceModel(index=c.index, message=ChatMessageModel(content=c.message.content))
                for c in response.choices
            ]
        )
    else:
        response.model_dump = lambda: _plain_dump(response)
    attach_routed_experts_to_chat_response_choices(
        response, request_output, device="cpu", routes_start=routes_start
    )
    attach_token_information_to_chat_response_choices(response, request_output)
    dump = model_dump_chat_response_with_dynamic_message_fields(response)
    for choice, dumped in zip(response.choices, dump["choices"], strict=True):
        for name in DYNAMIC_MESSAGE_FIELDS:
            value = getattr(choice.message, name, None)
            assert value is not None
            assert dumped["message"][name] is value


@given(chat_exchanges())
def test_a_response_without_choices_only_matches_empty_outputs(exchange: tuple[Any, Any]) -> None:
    """A response without choices passes iff there are no outputs (token information needs an exact match)."""
    _, request_output = exchange
    response = SimpleNamespace(id="empty")
    outputs = sorted(o.index for o in request_output.outputs)
    error: ChatResponseContractError | None = None
    try:
        attach_token_information_to_chat_response_choices(response, request_output)
    except ChatResponseContractError as caught:
        error = caught
    assert (error is None) == (not outputs)
    assert error is None or error.unexpected_output_indices == outputs
    assert response == SimpleNamespace(id="empty")
