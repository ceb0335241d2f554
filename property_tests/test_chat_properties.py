"""Properties of chat token information (weight versions too), routed-experts attachment, the dynamic dump and
tool-call normalisation (SPEC §2.2.2, §3.5, §4.3, §5; §7)."""

from __future__ import annotations

import copy
import json
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
    normalize_tool_call_arguments,
)
from rl_contracts.codec import decode_routed_experts
from rl_contracts.errors import (
    ChatResponseContractError,
    ContractError,
    ContractTypeError,
    RoutedExpertsError,
    SpliceError,
    WeightVersionError,
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
    hostile_tool_call_histories,
    routed_chat_exchanges,
    tool_call_histories,
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


@given(chat_exchanges())
def test_token_information_carries_the_weight_versions_of_every_output(exchange: tuple[Any, Any]) -> None:
    """SPEC §4.3: an output with spans gives its message a new list of span dicts; one without leaves it unset."""
    response, request_output = exchange
    attach_token_information_to_chat_response_choices(response, request_output)
    outputs = {o.index: o for o in request_output.outputs}
    for choice in response.choices:
        raw = getattr(outputs[choice.index], "weight_versions", None)
        if raw is None:
            assert not hasattr(choice.message, "weight_versions")
            continue
        expected = [
            dict(span)
            if isinstance(span, dict)
            else dict(zip(("version", "start", "end"), span, strict=True))
            for span in raw
        ]
        assert choice.message.weight_versions == expected
        assert choice.message.weight_versions is not raw
        assert [span["end"] for span in expected][-1:] == (
            [len(outputs[choice.index].token_ids)] if raw else []
        )


_TOKEN_ERRORS = {"weight_versions_overrun": WeightVersionError, "weight_versions_form": ContractTypeError}


@given(hostile_chat_exchanges())
def test_failed_token_information_leaves_the_response_exactly_as_it_was(case: tuple[Any, Any, str]) -> None:
    """Inv. 1, 2: a broken exchange raises a bounded, picklable error of its class; nothing changes."""
    response, request_output, how = case
    before, request_before = copy.deepcopy(response), pickle.dumps(request_output)
    with pytest.raises(_TOKEN_ERRORS.get(how, ChatResponseContractError)) as info:
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
    """Inv. 19: every non-None dynamic field of choice i (weight versions too) is at its place in the dump, by identity."""
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
    for output in request_output.outputs:
        output.weight_versions = [("v1", 0, len(output.token_ids))] if output.token_ids else []
    attach_token_information_to_chat_response_choices(response, request_output)
    dump = model_dump_chat_response_with_dynamic_message_fields(response)
    for choice, dumped in zip(response.choices, dump["choices"], strict=True):
        for name in (*DYNAMIC_MESSAGE_FIELDS, "weight_versions"):
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


def _normalized(messages: list[Any], end: int) -> list[Any]:
    """The oracle of SPEC §2.2.2, written independently: a normalised deep copy of ``messages``."""
    result = copy.deepcopy(messages)
    for message in result[:end]:
        calls = message.get("tool_calls")
        if not isinstance(calls, list):
            continue
        for call in calls:
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict) and isinstance(function.get("arguments"), str):
                try:
                    parsed = json.loads(function["arguments"])
                except (ValueError, RecursionError):
                    parsed = None
                function["arguments"] = parsed if isinstance(parsed, dict) else {}
    return result


@given(tool_call_histories(), st.data())
def test_tool_call_arguments_become_mappings_before_the_index(
    messages: list[Any], data: st.DataObject
) -> None:
    """SPEC §2.2.2: string arguments before ``before_index`` become their JSON object or {}; nothing else changes."""
    before_index = data.draw(st.one_of(st.none(), st.integers(0, len(messages))), label="before_index")
    expected = _normalized(messages, len(messages) if before_index is None else before_index)
    normalize_tool_call_arguments(messages, before_index)
    assert messages == expected
    normalize_tool_call_arguments(messages, before_index)  # idempotent
    assert messages == expected


@given(hostile_tool_call_histories())
def test_rejected_tool_call_normalisation_changes_nothing(case: tuple[Any, Any, str]) -> None:
    """Inv. 1, 2: a broken call raises a bounded, picklable error of its class and mutates nothing."""
    messages, before_index, how = case
    before = repr(messages)  # a read-only function (mappingproxy) cannot be deep-copied
    expected: type[ContractError] = SpliceError if how == "before_index_range" else ContractTypeError
    with pytest.raises(expected) as info:
        normalize_tool_call_arguments(messages, before_index)
    assert_contract_error(info.value)
    assert repr(messages) == before
