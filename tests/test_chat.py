"""Token information (weight versions too) and routed experts on OpenAI-style chat responses, the dynamic-field
dump, and tool-call normalisation (SPEC §2.2.2, §3.5, §4.3, §5)."""

from __future__ import annotations

import base64
import copy
import io
import json
import math
import re
from pathlib import Path
from types import MappingProxyType, SimpleNamespace
from typing import Any, Literal

import numpy as np
import pytest
import torch
from pydantic import BaseModel, ConfigDict

from rl_contracts.chat import (
    DYNAMIC_MESSAGE_FIELDS,
    ROUTED_EXPERTS_FALLBACK_WARNING,
    VLLM_LOGPROB_FLOOR,
    attach_routed_experts_to_chat_response_choices,
    attach_token_information_to_chat_response_choices,
    model_dump_chat_response_with_dynamic_message_fields,
    normalize_tool_call_arguments,
)
from rl_contracts.errors import (
    ChatResponseContractError,
    ContractError,
    ContractTypeError,
    RoutedExpertsError,
    SpliceError,
    WeightVersionError,
)
from rl_contracts.testing import assert_contract_error
from rl_contracts.testing.strategies import ChatResponseModel, RecordingLogger, RefusingMessage

DATA = Path(__file__).parent / "data"

# --- builders ----------------------------------------------------------------------------------------------------


def _logprobs(values: list[dict[int, float]]) -> list[dict[int, SimpleNamespace]]:
    return [{tid: SimpleNamespace(logprob=v, rank=1) for tid, v in entry.items()} for entry in values]


def _output(
    index: int, token_ids: list[int] | None, logprobs: list[dict[int, float]] | None, **extra: Any
) -> Any:
    return SimpleNamespace(
        index=index, token_ids=token_ids, logprobs=None if logprobs is None else _logprobs(logprobs), **extra
    )


def _exchange(
    outputs: list[Any], choice_order: list[int] | None = None, prompt: list[int] | None = None
) -> tuple[Any, Any]:
    """A response whose choices (in ``choice_order``, default output order) match ``outputs`` by index."""
    order = [o.index for o in outputs] if choice_order is None else choice_order
    choices = [
        SimpleNamespace(index=i, message=SimpleNamespace(role="assistant", content=f"c{i}"), logprobs=None)
        for i in order
    ]
    request_output = SimpleNamespace(
        prompt_token_ids=[1, 2, 3] if prompt is None else prompt, outputs=outputs
    )
    return SimpleNamespace(id="chatcmpl-1", choices=choices), request_output


def _spec_example() -> tuple[Any, Any]:
    return _exchange([_output(0, [7, 8], [{7: -0.5}, {8: -10000.0, 9: -1.0}]), _output(1, [], None)])


def _message(response: Any, index: int) -> Any:
    return next(choice.message for choice in response.choices if choice.index == index)


# --- constants ---------------------------------------------------------------------------------------------------


def test_constants_have_the_spec_values() -> None:
    """The floor is -9999.0 and the dynamic fields are the four SPEC names in order."""
    assert VLLM_LOGPROB_FLOOR == -9999.0
    assert isinstance(VLLM_LOGPROB_FLOOR, float)
    assert DYNAMIC_MESSAGE_FIELDS == (
        "routed_experts",
        "prompt_token_ids",
        "generation_token_ids",
        "generation_log_probs",
    )


# --- attach_token_information_to_chat_response_choices (§5.1) ----------------------------------------------------


def test_token_information_spec_example() -> None:
    """The SPEC example: ids attached, -10000.0 floored to -9999.0, and an empty choice gets [] and []."""
    response, request_output = _spec_example()
    assert attach_token_information_to_chat_response_choices(response, request_output) is response
    first, second = _message(response, 0), _message(response, 1)
    assert first.prompt_token_ids == [1, 2, 3]
    assert first.generation_token_ids == [7, 8]
    assert first.generation_log_probs == [-0.5, -9999.0]
    assert (second.generation_token_ids, second.generation_log_probs) == ([], [])
    assert first.role == "assistant"
    assert first.content == "c0"


def test_prompt_ids_are_a_fresh_list_per_choice() -> None:
    """Every choice gets its own new list equal to the engine prompt, never the request output's list."""
    response, request_output = _spec_example()
    attach_token_information_to_chat_response_choices(response, request_output)
    first, second = _message(response, 0).prompt_token_ids, _message(response, 1).prompt_token_ids
    assert first == second == request_output.prompt_token_ids
    assert first is not second
    assert first is not request_output.prompt_token_ids


def test_choices_are_matched_by_index_not_position() -> None:
    """Choices listed in another order than the outputs still get their own output's tokens."""
    outputs = [_output(2, [5], [{5: -1.0}]), _output(0, [6, 7], [{6: -2.0}, {7: -3.0}])]
    response, request_output = _exchange(outputs, choice_order=[0, 2])
    attach_token_information_to_chat_response_choices(response, request_output)
    assert _message(response, 0).generation_token_ids == [6, 7]
    assert _message(response, 0).generation_log_probs == [-2.0, -3.0]
    assert _message(response, 2).generation_token_ids == [5]


@pytest.mark.parametrize(
    ("value", "stored"),
    [
        (-0.25, -0.25),
        (0.0, 0.0),
        (-math.inf, VLLM_LOGPROB_FLOOR),
        (-1e300, VLLM_LOGPROB_FLOOR),
        (VLLM_LOGPROB_FLOOR, VLLM_LOGPROB_FLOOR),
        (-9998.5, -9998.5),
        (np.float32(-1.5), -1.5),
        (-3, -3.0),
        ("-0.5", -0.5),
    ],
)
def test_log_probs_are_floored_at_minus_9999(value: Any, stored: float) -> None:
    """``-inf`` and anything below -9999 become -9999.0; other finite values are kept as floats."""
    response, request_output = _exchange(
        [SimpleNamespace(index=0, token_ids=[4], logprobs=[{4: SimpleNamespace(logprob=value)}])]
    )
    attach_token_information_to_chat_response_choices(response, request_output)
    result = _message(response, 0).generation_log_probs
    assert result == [stored]
    assert type(result[0]) is float


def test_any_mapping_works_as_a_position_entry() -> None:
    """Position entries may be any Mapping (here read-only proxies), not only dicts."""
    entries = [
        MappingProxyType({7: SimpleNamespace(logprob=-1.0)}),
        MappingProxyType({8: SimpleNamespace(logprob=-1e5)}),
    ]
    response, request_output = _exchange([SimpleNamespace(index=0, token_ids=[7, 8], logprobs=entries)])
    attach_token_information_to_chat_response_choices(response, request_output)
    assert _message(response, 0).generation_log_probs == [-1.0, -9999.0]


def test_numpy_token_ids_and_int_subclass_indices_are_accepted() -> None:
    """numpy token ids and numpy-int indices work; the attached ids are plain ints."""
    output = SimpleNamespace(
        index=np.int64(0), token_ids=np.array([7, 8]), logprobs=_logprobs([{7: -1.0}, {8: -2.0}])
    )
    response, request_output = _exchange([output], choice_order=[0], prompt=np.array([1, 2]).tolist())
    attach_token_information_to_chat_response_choices(response, request_output)
    ids = _message(response, 0).generation_token_ids
    assert ids == [7, 8]
    assert {type(i) for i in ids} == {int}


def test_token_information_on_a_pydantic_response() -> None:
    """A pydantic response whose message allows extra fields gets the attributes, and its dump carries them."""
    response = ChatResponseModel.with_choices([0, 1])
    _, request_output = _spec_example()
    attach_token_information_to_chat_response_choices(response, request_output)
    dump = response.model_dump()
    assert dump["choices"][0]["message"]["generation_log_probs"] == [-0.5, -9999.0]
    assert dump["choices"][1]["message"]["generation_token_ids"] == []


def _exchange_with(change: str) -> tuple[Any, Any]:
    """The SPEC example plus a third choice (index 2) that is broken in the way ``change`` names."""
    response, request_output = _exchange(
        [
            _output(0, [7, 8], [{7: -0.5}, {8: -10000.0, 9: -1.0}]),
            _output(1, [], None),
            _output(2, [5, 6], [{5: -1.0}, {6: -2.0, 1: -0.1}]),
        ]
    )
    third = request_output.outputs[2]
    if change == "prompt_none":
        request_output.prompt_token_ids = None
    elif change == "prompt_missing":
        del request_output.prompt_token_ids
    elif change == "prompt_floats":
        request_output.prompt_token_ids = [1.0, 2.0]
    elif change == "output_index_str":
        third.index = "2"
    elif change == "output_index_bool":
        third.index = True
    elif change == "output_index_missing":
        del third.index
    elif change == "output_index_duplicate":
        request_output.outputs.append(_output(2, [], None))
    elif change == "choice_index_float":
        response.choices[2].index = 2.0
    elif change == "choice_index_duplicate":
        response.choices.append(SimpleNamespace(index=0, message=SimpleNamespace()))
    elif change == "unmatched":
        response.choices[2].index = 5
    elif change == "token_ids_none":
        third.token_ids = None
    elif change == "token_ids_missing":
        del third.token_ids
    elif change == "token_ids_floats":
        third.token_ids = [5.0, 6.0]
    elif change == "logprobs_none":
        third.logprobs = None
    elif change == "logprobs_missing":
        del third.logprobs
    elif change == "logprobs_short":
        third.logprobs = third.logprobs[:1]
    elif change == "logprobs_not_sequence":
        third.logprobs = {0: third.logprobs[0]}
    elif change == "entry_not_mapping":
        third.logprobs[1] = [SimpleNamespace(logprob=-1.0)] * 10
    elif change == "sampled_absent":
        del third.logprobs[1][6]
    elif change == "sampled_none":
        third.logprobs[1][6] = None
    elif change == "logprob_missing":
        third.logprobs[1][6] = SimpleNamespace(rank=1)
    elif change == "logprob_text":
        third.logprobs[1][6] = SimpleNamespace(logprob="abc")
    elif change == "logprob_nan":
        third.logprobs[1][6] = SimpleNamespace(logprob=float("nan"))
    elif change == "logprob_inf":
        third.logprobs[1][6] = SimpleNamespace(logprob=float("inf"))
    elif change == "logprob_huge_int":
        third.logprobs[1][6] = SimpleNamespace(logprob=10**400)
    elif change == "no_message":
        response.choices[2].message = None
    elif change == "outputs_not_sequence":
        request_output.outputs = 3
    elif change == "choices_not_sequence":
        response.choices = "abc"
    else:
        raise AssertionError(change)
    return response, request_output


TOKEN_ERRORS: list[tuple[str, str, dict[str, Any]]] = [
    ("prompt_none", "did not include prompt_token_ids", {}),
    ("prompt_missing", "did not include prompt_token_ids", {}),
    ("prompt_floats", "prompt_token_ids[0] must be an int", {}),
    ("output_index_str", "output index must be an int, got str", {}),
    ("output_index_bool", "output index must be an int, got bool", {}),
    ("output_index_missing", "output index must be an int, got NoneType", {}),
    ("output_index_duplicate", "duplicate generation output indices", {"choice_index": 2}),
    ("choice_index_float", "choice index must be an int, got float", {}),
    ("choice_index_duplicate", "duplicate response choice indices", {"choice_index": 0}),
    (
        "unmatched",
        "missing_choice_indices=[5], unexpected_output_indices=[2]",
        {"missing_choice_indices": [5], "unexpected_output_indices": [2]},
    ),
    ("token_ids_none", "choice_idx=2 did not include token_ids", {"choice_index": 2}),
    ("token_ids_missing", "choice_idx=2 did not include token_ids", {"choice_index": 2}),
    ("token_ids_floats", "token_ids[0] must be an int", {"choice_index": 2}),
    ("logprobs_none", "choice_idx=2 did not include logprobs", {"choice_index": 2, "token_count": 2}),
    ("logprobs_missing", "choice_idx=2 did not include logprobs", {"choice_index": 2, "token_count": 2}),
    (
        "logprobs_short",
        "choice_idx=2, token_count=2, logprob_count=1",
        {"choice_index": 2, "token_count": 2, "logprob_count": 1},
    ),
    ("logprobs_not_sequence", "logprobs for choice_idx=2", {}),
    ("entry_not_mapping", "choice_idx=2, token_id=6", {"choice_index": 2, "token_id": 6}),
    ("sampled_absent", "did not include the selected token", {"choice_index": 2, "token_id": 6}),
    ("sampled_none", "did not include the selected token", {"choice_index": 2, "token_id": 6}),
    ("logprob_missing", "position=1, token_id=6, logprob=None", {"choice_index": 2, "token_id": 6}),
    ("logprob_text", "position=1, token_id=6, logprob='abc'", {"choice_index": 2, "token_id": 6}),
    ("logprob_huge_int", "not a number for the selected token", {"choice_index": 2, "token_id": 6}),
    ("logprob_nan", "position=1, token_id=6, logprob=nan", {"choice_index": 2, "token_id": 6}),
    ("logprob_inf", "position=1, token_id=6, logprob=inf", {"choice_index": 2, "token_id": 6}),
    ("no_message", "choice_idx=2 has no message object", {"choice_index": 2}),
    ("outputs_not_sequence", "final_request_output.outputs", {}),
    ("choices_not_sequence", "response.choices", {}),
]


@pytest.mark.parametrize(
    ("change", "text", "attributes"), TOKEN_ERRORS, ids=[case[0] for case in TOKEN_ERRORS]
)
def test_token_information_errors_leave_the_response_untouched(
    change: str, text: str, attributes: dict[str, Any]
) -> None:
    """Each broken exchange raises ChatResponseContractError with SPEC's key fragment; no choice is modified."""
    response, request_output = _exchange_with(change)
    before = copy.deepcopy(response)
    with pytest.raises(ChatResponseContractError) as info:
        attach_token_information_to_chat_response_choices(response, request_output)
    assert text in str(info.value)
    for name, value in attributes.items():
        assert getattr(info.value, name) == value
    assert isinstance(info.value, RuntimeError)
    assert_contract_error(info.value)
    assert response == before


def test_complete_message_texts_match_the_spec_templates() -> None:
    """Full messages equal the SPEC templates for a missing prompt, a mismatched count and a non-finite log-prob."""
    for change, expected in [
        (
            "prompt_none",
            "vLLM was asked to return token information for the OpenAI-compatible chat endpoint but the final "
            "request output did not include prompt_token_ids.",
        ),
        (
            "logprobs_short",
            "vLLM returned mismatched generation token IDs and log probabilities for the OpenAI-compatible chat "
            "endpoint: choice_idx=2, token_count=2, logprob_count=1.",
        ),
        (
            "logprob_nan",
            "vLLM returned a non-finite log probability for the selected token while attaching token information "
            "to the OpenAI-compatible chat response: choice_idx=2, position=1, token_id=6, logprob=nan.",
        ),
    ]:
        response, request_output = _exchange_with(change)
        with pytest.raises(ChatResponseContractError) as info:
            attach_token_information_to_chat_response_choices(response, request_output)
        assert str(info.value) == expected


def test_nan_for_the_sampled_token_raises_and_the_response_stays_untouched() -> None:
    """The SPEC example: a NaN log-prob raises (the reference lets it through) and nothing is attached."""
    response, request_output = _spec_example()
    request_output.outputs[0].logprobs[1][8] = SimpleNamespace(logprob=float("nan"))
    with pytest.raises(ChatResponseContractError, match="non-finite"):
        attach_token_information_to_chat_response_choices(response, request_output)
    assert not hasattr(_message(response, 0), "generation_log_probs")
    assert not hasattr(_message(response, 1), "prompt_token_ids")


def test_refused_third_field_restores_every_attribute() -> None:
    """A message refusing its 3rd field makes the call raise with every earlier assignment undone or deleted."""
    response, request_output = _spec_example()
    response.choices[0].message.prompt_token_ids = ["old"]
    response.choices[1].message = RefusingMessage("generation_log_probs", role="assistant", content="c1")
    before = copy.deepcopy(response)
    with pytest.raises(ChatResponseContractError) as info:
        attach_token_information_to_chat_response_choices(response, request_output)
    for fragment in (
        "could not set message.generation_log_probs",
        "choice_idx=1",
        "message refuses attribute 'generation_log_probs'",
        "every attribute already set was restored",
    ):
        assert fragment in str(info.value)
    assert info.value.choice_index == 1
    assert isinstance(info.value.__cause__, AttributeError)
    assert response == before
    assert response.choices[0].message.prompt_token_ids == ["old"]
    assert not hasattr(response.choices[1].message, "prompt_token_ids")


class _FrozenMessage(BaseModel):
    model_config = ConfigDict(frozen=True)
    role: str = "assistant"


class _IgnoringMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")
    role: str = "assistant"


@pytest.mark.parametrize("message_cls", [_FrozenMessage, _IgnoringMessage])
def test_pydantic_messages_that_refuse_new_fields_fail_atomically(message_cls: type[BaseModel]) -> None:
    """A frozen or extra='ignore' pydantic message raises ChatResponseContractError and earlier choices are restored."""
    response, request_output = _spec_example()
    response.choices[1].message = message_cls()
    before = copy.deepcopy(response)
    with pytest.raises(ChatResponseContractError, match=r"could not set message\.prompt_token_ids"):
        attach_token_information_to_chat_response_choices(response, request_output)
    assert response == before


class _ScriptedMessage:
    """A message whose assignments fail for one field and whose deletes fail too (nothing can be restored)."""

    def __init__(self) -> None:
        object.__setattr__(self, "role", "assistant")

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "generation_token_ids":
            raise AttributeError(name)
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        raise AttributeError(name)


def test_unrestorable_attributes_are_reported() -> None:
    """When even restoring fails, the error says how many attributes could not be restored."""
    response, request_output = _spec_example()
    response.choices[0].message = _ScriptedMessage()
    with pytest.raises(
        ChatResponseContractError, match=r"1 of the 1 attribute\(s\) already set could not be restored"
    ):
        attach_token_information_to_chat_response_choices(response, request_output)


class _LateRefusingMessage(_ScriptedMessage):
    """Like ``_ScriptedMessage`` but refuses only the third field, so two unrestorable fields are set first."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "generation_log_probs":
            raise AttributeError(name)
        object.__setattr__(self, name, value)


def test_every_unrestorable_attribute_is_counted() -> None:
    """Two set attributes that cannot be deleted again are both counted in the error message."""
    response, request_output = _spec_example()
    response.choices[0].message = _LateRefusingMessage()
    with pytest.raises(ChatResponseContractError) as caught:
        attach_token_information_to_chat_response_choices(response, request_output)
    assert "; 2 of the 2 attribute(s) already set could not be restored." in str(caught.value)
    assert caught.value.choice_index == 0


# --- attach_routed_experts_to_chat_response_choices (§3.5) -------------------------------------------------------


def _envelope_rows(envelope: str) -> list[list[list[int]]]:
    """Decode an ``nrlre1`` envelope independently of rl_contracts.codec."""
    match = re.fullmatch(r"nrlre1:(int8|int16|int32):(\d+)x(\d+)x(\d+):([A-Za-z0-9+/]*={0,2})", envelope)
    assert match is not None, envelope
    dtype, tokens, layers, topk, payload = match.groups()
    array = np.frombuffer(base64.b64decode(payload), dtype=np.dtype(dtype).newbyteorder("<"))
    rows: list[list[list[int]]] = array.reshape(int(tokens), int(layers), int(topk)).tolist()
    return rows


def _legacy_exchange(*outputs: Any) -> tuple[Any, Any]:
    response, request_output = _exchange(list(outputs))
    request_output.prompt_routed_experts = np.array([[[10]], [[11]]], dtype=np.uint8)
    return response, request_output


def test_routed_experts_spec_examples() -> None:
    """Choices 0 and 1 (listed in reverse) decode to the SPEC rows; matching is by index."""
    response, request_output = _legacy_exchange(
        SimpleNamespace(index=0, token_ids=[200], routed_experts=np.array([[[30]]], dtype=np.uint8)),
        SimpleNamespace(
            index=1, token_ids=[201, 202], routed_experts=np.array([[[31]], [[32]]], dtype=np.uint8)
        ),
    )
    response.choices.reverse()
    logger = RecordingLogger()
    result = attach_routed_experts_to_chat_response_choices(
        response, request_output, device="cpu", logger=logger
    )
    assert result is response
    assert _message(response, 0).routed_experts.startswith("nrlre1:int16:4x1x1:")
    assert _envelope_rows(_message(response, 0).routed_experts) == [[[10]], [[11]], [[30]], [[0]]]
    assert _envelope_rows(_message(response, 1).routed_experts) == [[[10]], [[11]], [[31]], [[32]], [[0]]]
    assert logger.calls == []


def test_missing_generation_routes_fall_back_to_sentinel_rows_and_are_logged() -> None:
    """2 generated tokens without routes: n=5, E=4, R=2; the logger gets (0, 2, 2, 4) and rows 2–3 are -1."""
    response, request_output = _legacy_exchange(SimpleNamespace(index=0, token_ids=[201, 202]))
    logger = RecordingLogger()
    attach_routed_experts_to_chat_response_choices(response, request_output, device="cpu", logger=logger)
    assert logger.calls == [(ROUTED_EXPERTS_FALLBACK_WARNING, (0, 2, 2, 4))]
    assert ROUTED_EXPERTS_FALLBACK_WARNING % (0, 2, 2, 4) == (
        "R3 router replay fallback: vLLM returned incomplete routed_experts for chat choice_idx=0, "
        "missing_token_routes=2, actual_routes=2, expected_routes=4. Megatron will use its own router for those "
        "missing token routes."
    )
    assert _envelope_rows(_message(response, 0).routed_experts) == [[[10]], [[11]], [[-1]], [[-1]], [[0]]]


@pytest.mark.parametrize(("dtype", "prefix"), [(torch.int8, "nrlre1:int8:"), (torch.int32, "nrlre1:int32:")])
def test_routed_experts_carry_dtype_is_the_envelope_dtype(dtype: torch.dtype, prefix: str) -> None:
    """The requested carry dtype is the envelope dtype, values unchanged."""
    response, request_output = _legacy_exchange(
        SimpleNamespace(index=0, token_ids=[200], routed_experts=np.array([[[30]]], dtype=np.uint8))
    )
    attach_routed_experts_to_chat_response_choices(
        response, request_output, device="cpu", routed_experts_dtype=dtype
    )
    assert _message(response, 0).routed_experts.startswith(prefix)
    assert _envelope_rows(_message(response, 0).routed_experts) == [[[10]], [[11]], [[30]], [[0]]]


def test_empty_legacy_prompt_routes_do_not_hide_the_generation_routes() -> None:
    """A 1-token prompt has zero legacy prompt rows; the generation rows are still copied after them."""
    response, request_output = _exchange(
        [
            SimpleNamespace(
                index=0, token_ids=[200, 201], routed_experts=np.array([[[30]], [[31]]], dtype=np.uint8)
            )
        ],
        prompt=[5],
    )
    request_output.prompt_routed_experts = np.zeros((0, 1, 1), dtype=np.uint8)
    attach_routed_experts_to_chat_response_choices(response, request_output, device="cpu")
    assert _envelope_rows(_message(response, 0).routed_experts) == [[[30]], [[31]], [[0]]]


def test_outputs_without_a_choice_are_ignored() -> None:
    """An output whose index matches no choice is ignored (only missing choices are errors)."""
    response, request_output = _legacy_exchange(
        SimpleNamespace(index=0, token_ids=[200], routed_experts=np.array([[[30]]], dtype=np.uint8)),
        SimpleNamespace(index=7, token_ids=[1], routed_experts=None),
    )
    response.choices = response.choices[:1]
    attach_routed_experts_to_chat_response_choices(response, request_output, device="cpu")
    assert _envelope_rows(_message(response, 0).routed_experts)[2] == [[30]]


def _routed_with(change: str) -> tuple[Any, Any]:
    response, request_output = _legacy_exchange(
        SimpleNamespace(index=0, token_ids=[200], routed_experts=np.array([[[30]]], dtype=np.uint8)),
        SimpleNamespace(index=1, token_ids=[201], routed_experts=np.array([[[31]]], dtype=np.uint8)),
        SimpleNamespace(index=2, token_ids=[202], routed_experts=np.array([[[32]]], dtype=np.uint8)),
    )
    third = request_output.outputs[2]
    if change == "missing_output":
        request_output.outputs = request_output.outputs[1:]
    elif change == "no_routes":
        request_output.prompt_routed_experts = None
        third.routed_experts = None
    elif change == "too_many":
        third.routed_experts = np.zeros((3, 1, 1), dtype=np.uint8)
    elif change == "float_routes":
        third.routed_experts = np.zeros((1, 1, 1), dtype=np.float32)
    elif change == "output_index_duplicate":
        request_output.outputs.append(SimpleNamespace(index=2, token_ids=[], routed_experts=None))
    elif change == "output_index_none":
        third.index = None
    elif change == "choice_index_duplicate":
        response.choices.append(SimpleNamespace(index=2, message=SimpleNamespace()))
    elif change == "choice_index_str":
        response.choices[2].index = "2"
    elif change == "no_message":
        response.choices[2].message = None
    elif change == "refuses":
        response.choices[2].message = RefusingMessage("routed_experts")
    elif change == "token_ids_text":
        third.token_ids = "abc"
    else:
        raise AssertionError(change)
    return response, request_output


ROUTED_ERRORS: list[tuple[str, type[ContractError], str, dict[str, Any]]] = [
    (
        "missing_output",
        ChatResponseContractError,
        "missing_choice_indices=[0]",
        {"missing_choice_indices": [0], "unexpected_output_indices": None},
    ),
    (
        "no_routes",
        ChatResponseContractError,
        "did not include routed_experts: choice_idx=2",
        {"choice_index": 2},
    ),
    ("too_many", RoutedExpertsError, "too many routed_experts routes", {"routes": 5, "expected": 3}),
    ("float_routes", RoutedExpertsError, "routed_experts must hold integer expert ids", {}),
    (
        "output_index_duplicate",
        ChatResponseContractError,
        "duplicate generation output indices",
        {"choice_index": 2},
    ),
    ("output_index_none", ChatResponseContractError, "output index must be an int, got NoneType", {}),
    ("choice_index_duplicate", ChatResponseContractError, "duplicate response choice indices", {}),
    ("choice_index_str", ChatResponseContractError, "choice index must be an int, got str", {}),
    ("no_message", ChatResponseContractError, "choice_idx=2 has no message object", {"choice_index": 2}),
    ("refuses", ChatResponseContractError, "could not set message.routed_experts", {"choice_index": 2}),
    ("token_ids_text", ChatResponseContractError, "not a sequence of ints", {"choice_index": 2}),
]


def test_routed_experts_message_texts_match_the_spec_templates() -> None:
    """Full messages equal the SPEC templates for an unmatched choice and an output without routes."""
    for change, expected in [
        (
            "missing_output",
            "vLLM was asked to return routed experts for the OpenAI-compatible chat endpoint but response choices "
            "could not be matched to generation outputs: missing_choice_indices=[0].",
        ),
        (
            "no_routes",
            "vLLM was asked to return routed experts for the OpenAI-compatible chat endpoint but the generation "
            "output did not include routed_experts: choice_idx=2.",
        ),
    ]:
        response, request_output = _routed_with(change)
        with pytest.raises(ChatResponseContractError) as info:
            attach_routed_experts_to_chat_response_choices(response, request_output, device="cpu")
        assert str(info.value) == expected


@pytest.mark.parametrize(
    ("change", "cls", "text", "attributes"), ROUTED_ERRORS, ids=[case[0] for case in ROUTED_ERRORS]
)
def test_routed_experts_errors_leave_the_response_untouched(
    change: str, cls: type[ContractError], text: str, attributes: dict[str, Any]
) -> None:
    """Each broken exchange raises the SPEC error before any mutation; the logger is never called."""
    response, request_output = _routed_with(change)
    if change != "no_routes":
        request_output.outputs[0].routed_experts = None  # choice 0 would need a fallback warning
    before = copy.deepcopy(response)
    logger = RecordingLogger()
    with pytest.raises(cls) as info:
        attach_routed_experts_to_chat_response_choices(response, request_output, device="cpu", logger=logger)
    assert text in str(info.value)
    for name, value in attributes.items():
        assert getattr(info.value, name) == value
    assert_contract_error(info.value)
    assert response == before
    assert logger.calls == ([] if change != "refuses" else [(ROUTED_EXPERTS_FALLBACK_WARNING, (0, 1, 2, 3))])


def test_unmatched_choice_is_reported_even_when_another_choice_would_fail_alignment() -> None:
    """Divergence: every choice is matched before any alignment, so the unmatched choice is what is reported."""
    response, request_output = _routed_with("too_many")
    response.choices.append(SimpleNamespace(index=9, message=SimpleNamespace()))
    with pytest.raises(ChatResponseContractError, match=r"missing_choice_indices=\[9\]"):
        attach_routed_experts_to_chat_response_choices(response, request_output, device="cpu")


@pytest.mark.parametrize("dtype", [torch.int64, torch.uint8, torch.float32, "int16", None])
def test_routed_experts_rejects_non_envelope_dtypes(dtype: Any) -> None:
    """Only int8/int16/int32 are accepted; the message lists exactly those three."""
    response, request_output = _routed_with("too_many")
    with pytest.raises(RoutedExpertsError) as info:
        attach_routed_experts_to_chat_response_choices(
            response, request_output, device="cpu", routed_experts_dtype=dtype
        )
    assert str(info.value).startswith("Unsupported routed_experts carry dtype ")
    assert str(info.value).endswith("; expected one of ['int16', 'int32', 'int8'].")


@pytest.mark.parametrize(
    ("routes_start", "cls"), [(-1, RoutedExpertsError), (True, ContractTypeError), (1.0, ContractTypeError)]
)
def test_routes_start_is_checked_even_without_choices(routes_start: Any, cls: type[ContractError]) -> None:
    """A bad ``routes_start`` raises even when there is no choice to align."""
    response = SimpleNamespace(choices=[])
    with pytest.raises(cls, match="routes_start"):
        attach_routed_experts_to_chat_response_choices(
            response, SimpleNamespace(outputs=[]), device="cpu", routes_start=routes_start
        )


@pytest.mark.parametrize(
    ("device", "cls", "fragment"),
    [
        (None, ContractTypeError, "device must be"),
        (0, ContractTypeError, "got int"),
        ("gpu!", RoutedExpertsError, "'gpu!'"),
    ],
)
def test_device_is_checked_even_without_choices(device: Any, cls: type[ContractError], fragment: str) -> None:
    """A bad ``device`` raises even when there is no choice to align, and the response stays untouched."""
    response = SimpleNamespace(choices=[])
    with pytest.raises(cls, match=re.escape(fragment)):
        attach_routed_experts_to_chat_response_choices(response, SimpleNamespace(outputs=[]), device=device)
    assert response == SimpleNamespace(choices=[])


HUGE = 10**5000
"""An int whose decimal form Python refuses to build (more than 4,300 digits)."""
HUGE_TEXT = "<int of 16610 bits>"


def test_huge_negative_routes_start_keeps_a_bounded_message() -> None:
    """A negative routes_start beyond Python's int-to-str limit raises RoutedExpertsError carrying the value."""
    with pytest.raises(RoutedExpertsError, match=f"routes_start must be >= 0, got {HUGE_TEXT}") as info:
        attach_routed_experts_to_chat_response_choices(
            SimpleNamespace(choices=[]), SimpleNamespace(outputs=[]), device="cpu", routes_start=-HUGE
        )
    assert info.value.routes_start == -HUGE


@pytest.mark.parametrize(
    ("token_ids", "logprobs", "message", "text"),
    [
        (None, None, True, "choice_idx=IDX did not include token_ids."),
        ([HUGE], None, True, "choice_idx=IDX did not include logprobs."),
        ([5], [], True, "choice_idx=IDX, token_count=1, logprob_count=0."),
        ([HUGE], [{}], True, f"choice_idx=IDX, token_id={HUGE_TEXT}."),
        (
            [5],
            [{5: SimpleNamespace(logprob="x")}],
            True,
            "choice_idx=IDX, position=0, token_id=5, logprob='x'.",
        ),
        (
            [5],
            [{5: SimpleNamespace(logprob=math.nan)}],
            True,
            "choice_idx=IDX, position=0, token_id=5, logprob=nan.",
        ),
        ([], None, False, "choice_idx=IDX has no message object"),
        ([2.5], None, True, "token_ids for choice_idx=IDX that are not a sequence of ints"),
    ],
    ids=["token_ids", "logprobs", "count", "sampled", "not_a_number", "nan", "message", "ids"],
)
def test_token_information_errors_render_huge_indices(
    token_ids: Any, logprobs: Any, message: bool, text: str
) -> None:
    """A choice index or token id beyond Python's int-to-str limit is rendered, never a ValueError."""
    choice = SimpleNamespace(index=HUGE, message=SimpleNamespace() if message else None)
    output = SimpleNamespace(index=HUGE, token_ids=token_ids, logprobs=logprobs)
    with pytest.raises(ChatResponseContractError) as info:
        attach_token_information_to_chat_response_choices(
            SimpleNamespace(choices=[choice]), SimpleNamespace(prompt_token_ids=[1], outputs=[output])
        )
    assert text.replace("IDX", HUGE_TEXT) in str(info.value)
    assert info.value.choice_index == HUGE
    assert_contract_error(info.value)


@pytest.mark.parametrize(
    ("message", "text"),
    [
        (True, "did not include routed_experts: choice_idx=IDX."),
        (False, "choice_idx=IDX has no message object"),
    ],
    ids=["no_routes", "no_message"],
)
def test_routed_experts_errors_render_huge_indices(message: bool, text: str) -> None:
    """A choice index beyond Python's int-to-str limit is rendered in the routed-experts errors too."""
    choice = SimpleNamespace(index=HUGE, message=SimpleNamespace() if message else None)
    output = SimpleNamespace(index=HUGE, token_ids=[5])
    with pytest.raises(ChatResponseContractError) as info:
        attach_routed_experts_to_chat_response_choices(
            SimpleNamespace(choices=[choice]),
            SimpleNamespace(prompt_token_ids=[1], outputs=[output]),
            device="cpu",
        )
    assert text.replace("IDX", HUGE_TEXT) in str(info.value)
    assert_contract_error(info.value)


@pytest.mark.parametrize(
    ("logger", "actual"),
    [(object(), "object"), (SimpleNamespace(warning="not callable"), "SimpleNamespace"), ("log", "str")],
)
def test_logger_without_warning_is_rejected(logger: Any, actual: str) -> None:
    """A logger without a callable ``warning`` raises ContractTypeError before anything else, naming the logger."""
    response, request_output = _legacy_exchange(
        SimpleNamespace(index=0, token_ids=[200], routed_experts=np.array([[[30]]], dtype=np.uint8))
    )
    before = copy.deepcopy(response)
    with pytest.raises(ContractTypeError) as info:
        attach_routed_experts_to_chat_response_choices(response, request_output, device="cpu", logger=logger)
    assert "logger" in str(info.value)
    assert f"got {actual}" in str(info.value)
    assert (info.value.argument, info.value.expected, info.value.actual) == ("logger", "LoggerLike", actual)
    assert_contract_error(info.value)
    assert response == before


def _routes_without_prompt_or_tokens(prompt: Any, token_ids: Any) -> tuple[Any, Any]:
    """One choice whose output has 2 full-sequence routes, with ``prompt_token_ids``/``token_ids`` as given."""
    output = SimpleNamespace(index=0, routed_experts=np.array([[[30]], [[31]]], dtype=np.uint8))
    if token_ids != "absent":
        output.token_ids = token_ids
    response, request_output = _exchange([output])
    if prompt == "absent":
        del request_output.prompt_token_ids
    else:
        request_output.prompt_token_ids = prompt
    return response, request_output


@pytest.mark.parametrize(
    ("prompt", "token_ids", "rows", "warnings"),
    [
        # n = 0 + 3: E = 2 = R, nothing missing.
        (None, [200, 201, 202], [[[30]], [[31]], [[0]]], []),
        ("absent", [200, 201, 202], [[[30]], [[31]], [[0]]], []),
        # n = 3 + 0: E = 2 = R.
        ([1, 2, 3], None, [[[30]], [[31]], [[0]]], []),
        ([1, 2, 3], "absent", [[[30]], [[31]], [[0]]], []),
        # n = 4 + 0: E = 3, R = 2, one sentinel row.
        ([1, 2, 3, 4], None, [[[30]], [[31]], [[-1]], [[0]]], [(0, 1, 2, 3)]),
        # n = 0 + 2: E = 1, R = 2; the tolerated final-token route is dropped.
        (None, [200, 201], [[[30]], [[0]]], []),
    ],
    ids=[
        "prompt_none",
        "prompt_absent",
        "tokens_none",
        "tokens_absent",
        "tokens_none_missing",
        "prompt_none_two",
    ],
)
def test_missing_prompt_or_generated_ids_count_as_zero_tokens(
    prompt: Any, token_ids: Any, rows: list[Any], warnings: list[tuple[int, ...]]
) -> None:
    """``n = len(prompt_token_ids or []) + len(token_ids or [])``: a missing or None list counts 0 tokens."""
    response, request_output = _routes_without_prompt_or_tokens(prompt, token_ids)
    logger = RecordingLogger()
    attach_routed_experts_to_chat_response_choices(response, request_output, device="cpu", logger=logger)
    assert _envelope_rows(_message(response, 0).routed_experts) == rows
    assert logger.calls == [(ROUTED_EXPERTS_FALLBACK_WARNING, values) for values in warnings]


def test_no_prompt_and_no_generated_ids_make_two_routes_surplus() -> None:
    """With neither id list, n = 0 and E = 0: two routes exceed the one tolerated final route and raise."""
    response, request_output = _routes_without_prompt_or_tokens(None, None)
    with pytest.raises(RoutedExpertsError) as info:
        attach_routed_experts_to_chat_response_choices(response, request_output, device="cpu")
    assert (info.value.routes, info.value.expected, info.value.valid_length) == (2, 0, 0)


def test_empty_response_is_returned_unchanged() -> None:
    """A response without choices (missing or None) is returned as it is."""
    for response in (SimpleNamespace(), SimpleNamespace(choices=None)):
        assert (
            attach_routed_experts_to_chat_response_choices(response, SimpleNamespace(), device="cpu")
            is response
        )
        assert (
            attach_token_information_to_chat_response_choices(response, SimpleNamespace(prompt_token_ids=[]))
            is response
        )


def _recorded() -> tuple[dict[str, Any], list[np.ndarray[Any, Any]]]:
    raw = json.loads((DATA / "chat_completion_routed_experts.json").read_text())
    routes = [
        np.load(io.BytesIO(base64.b64decode(c["routed_experts"])), allow_pickle=False) for c in raw["choices"]
    ]
    return raw, routes


@pytest.mark.parametrize("routes_start", [0, 3])
def test_recorded_vllm_response_round_trips_through_the_envelope(routes_start: int) -> None:
    """Real vLLM routes (10 prompt + 6 generated tokens, 15 rows) decode to the routes plus one default row."""
    raw, routes = _recorded()
    response = ChatResponseModel.model_validate(raw)
    outputs = [
        SimpleNamespace(index=c["index"], token_ids=c["token_ids"], routed_experts=r[routes_start:])
        for c, r in zip(raw["choices"], routes, strict=True)
    ]
    request_output = SimpleNamespace(
        prompt_token_ids=raw["prompt_token_ids"], outputs=outputs, num_cached_tokens=0
    )
    logger = RecordingLogger()
    attach_routed_experts_to_chat_response_choices(
        response, request_output, device="cpu", logger=logger, routes_start=routes_start
    )
    assert [r.shape for r in routes] == [(15, 2, 2), (15, 2, 2)]
    for choice, route in zip(response.choices, routes, strict=True):
        rows = _envelope_rows(getattr(choice.message, "routed_experts"))  # noqa: B009 (an extra field)
        expected = route.astype(int).tolist()
        expected[:routes_start] = [[[-1, -1], [-1, -1]]] * routes_start
        assert rows == [*expected, [[0, 1], [0, 1]]]
    warnings = [(ROUTED_EXPERTS_FALLBACK_WARNING, (i, 3, 12, 15)) for i in (0, 1)]
    assert logger.calls == (warnings if routes_start else [])
    dump = model_dump_chat_response_with_dynamic_message_fields(response)
    envelope = getattr(response.choices[1].message, "routed_experts")  # noqa: B009 (an extra field)
    assert dump["choices"][1]["message"]["routed_experts"] is envelope


# --- model_dump_chat_response_with_dynamic_message_fields (§5.2) -------------------------------------------------


def _policy_models(
    extra: Literal["allow", "ignore", "forbid"],
) -> tuple[type[BaseModel], type[BaseModel], type[BaseModel]]:
    class Message(BaseModel):
        model_config = ConfigDict(extra=extra)
        role: str = "assistant"

    class Choice(BaseModel):
        model_config = ConfigDict(extra=extra)
        index: int
        message: Message | None

    class Response(BaseModel):
        model_config = ConfigDict(extra=extra)
        choices: list[Choice]

    return Message, Choice, Response


@pytest.mark.parametrize("extra", ["allow", "ignore", "forbid"])
def test_dump_keeps_dynamic_fields_whatever_the_extra_policy(
    extra: Literal["allow", "ignore", "forbid"],
) -> None:
    """Fields set on messages survive the dump by identity, for extra='allow', 'ignore' and 'forbid' models."""
    message_cls, choice_cls, response_cls = _policy_models(extra)
    messages = [message_cls(), message_cls(), None]
    response = response_cls(choices=[choice_cls(index=i, message=m) for i, m in enumerate(messages)])
    routes, ids, log_probs = "nrlre1:int8:0x1x1:", [1, 2], [-0.5]
    object.__setattr__(
        messages[0], "routed_experts", routes
    )  # bypasses extra='ignore'/'forbid', as a vLLM patch would
    object.__setattr__(messages[0], "generation_token_ids", None)
    object.__setattr__(messages[1], "prompt_token_ids", ids)
    object.__setattr__(messages[1], "generation_log_probs", log_probs)
    dump = model_dump_chat_response_with_dynamic_message_fields(response)
    first, second, third = (choice["message"] for choice in dump["choices"])
    assert first["routed_experts"] is routes
    assert "generation_token_ids" not in first or first["generation_token_ids"] is None
    assert second["prompt_token_ids"] is ids
    assert second["generation_log_probs"] is log_probs
    assert third is None
    assert first["role"] == "assistant"


def test_dump_overwrites_existing_keys_and_stops_at_the_shorter_list() -> None:
    """An existing dumped key is overwritten by reference; extra response choices beyond the dump are skipped."""
    ids = [9]
    message = SimpleNamespace(prompt_token_ids=ids, routed_experts=None)
    dumped = {"choices": [{"message": {"prompt_token_ids": "stale", "routed_experts": "keep"}}], "id": "x"}
    response = SimpleNamespace(
        choices=[
            SimpleNamespace(message=message),
            SimpleNamespace(message=SimpleNamespace(prompt_token_ids=[1])),
        ],
        model_dump=lambda: dumped,
    )
    result = model_dump_chat_response_with_dynamic_message_fields(response)
    assert result is dumped
    assert result["choices"] == [{"message": {"prompt_token_ids": ids, "routed_experts": "keep"}}]
    assert result["choices"][0]["message"]["prompt_token_ids"] is ids


def test_dump_leaves_dumped_choices_beyond_the_response_choices_alone() -> None:
    """Pairing stops at the shorter list on the dump side too: extra dumped choices are neither read nor written."""
    ids = [9]
    dumped = {"choices": [{"message": {}}, "not a dict", {"message": {"prompt_token_ids": "kept"}}]}
    response = SimpleNamespace(
        choices=[SimpleNamespace(message=SimpleNamespace(prompt_token_ids=ids))], model_dump=lambda: dumped
    )
    result = model_dump_chat_response_with_dynamic_message_fields(response)
    assert result["choices"] == [
        {"message": {"prompt_token_ids": ids}},
        "not a dict",
        {"message": {"prompt_token_ids": "kept"}},
    ]


def test_dump_creates_a_missing_or_none_message_dict() -> None:
    """A dumped choice without a message dict (or with None) gets a new dict holding the fields."""
    for dumped_choice in ({}, {"message": None}):
        response = SimpleNamespace(
            choices=[SimpleNamespace(message=SimpleNamespace(generation_token_ids=[4]))],
            model_dump=lambda c=dumped_choice: {"choices": [c]},
        )
        result = model_dump_chat_response_with_dynamic_message_fields(response)
        assert result["choices"][0]["message"] == {"generation_token_ids": [4]}


def test_dump_without_dynamic_fields_is_the_plain_dump() -> None:
    """A response whose messages carry no dynamic fields dumps exactly as ``model_dump()``."""
    response = ChatResponseModel.with_choices([0, 1])
    assert model_dump_chat_response_with_dynamic_message_fields(response) == response.model_dump()


_ONE_CHOICE_WITH_ROUTES = [SimpleNamespace(message=SimpleNamespace(routed_experts="e"))]


@pytest.mark.parametrize(
    ("response", "argument", "expected", "actual"),
    [
        (object(), "response", "ChatResponseLike", "object"),
        (SimpleNamespace(model_dump=3), "response", "ChatResponseLike", "SimpleNamespace"),
        (SimpleNamespace(model_dump=lambda: [1]), "response.model_dump()", "a dict", "list"),
        (
            SimpleNamespace(choices=3, model_dump=lambda: {"choices": []}),
            "response.choices",
            "a sequence of choices",
            "int",
        ),
        (
            SimpleNamespace(choices="ab", model_dump=lambda: {"choices": []}),
            "response.choices",
            "a sequence of choices",
            "str",
        ),
        (
            SimpleNamespace(choices=[], model_dump=lambda: {"choices": "x"}),
            "response.model_dump()['choices']",
            "a list of choice dicts",
            "str",
        ),
        (
            SimpleNamespace(choices=_ONE_CHOICE_WITH_ROUTES, model_dump=lambda: {"choices": [3]}),
            "response.model_dump()['choices'][0]",
            "a dict",
            "int",
        ),
        (
            SimpleNamespace(
                choices=_ONE_CHOICE_WITH_ROUTES, model_dump=lambda: {"choices": [{"message": "text"}]}
            ),
            "response.model_dump()['choices'][0]['message']",
            "a dict",
            "str",
        ),
    ],
)
def test_dump_rejects_objects_that_are_not_chat_responses(
    response: Any, argument: str, expected: str, actual: str
) -> None:
    """No callable model_dump, a non-dict dump or non-sequence choices raise ContractTypeError naming the part."""
    with pytest.raises(ContractTypeError) as info:
        model_dump_chat_response_with_dynamic_message_fields(response)
    assert str(info.value).startswith(argument)
    assert f"got {actual}" in str(info.value)
    assert (info.value.argument, info.value.expected, info.value.actual) == (argument, expected, actual)
    assert_contract_error(info.value)


@pytest.mark.parametrize(
    "response",
    [
        SimpleNamespace(model_dump=lambda: {"choices": [3]}),
        SimpleNamespace(choices=None, model_dump=lambda: {"choices": [3]}),
        SimpleNamespace(choices=_ONE_CHOICE_WITH_ROUTES, model_dump=lambda: {"id": "x"}),
        SimpleNamespace(choices=_ONE_CHOICE_WITH_ROUTES, model_dump=lambda: {"choices": None}),
    ],
)
def test_dump_without_choices_on_either_side_is_the_plain_dump(response: Any) -> None:
    """When the response has no choices (absent or None) or the dump has none, the dump is returned unchanged."""
    expected = response.model_dump()
    assert model_dump_chat_response_with_dynamic_message_fields(response) == expected


def test_dump_skips_choices_without_a_message_or_fields_and_continues() -> None:
    """A choice without a message attribute, or without dynamic fields, is skipped and later choices are written."""
    response = SimpleNamespace(
        choices=[
            SimpleNamespace(index=0),
            SimpleNamespace(message=SimpleNamespace(role="assistant")),
            SimpleNamespace(message=SimpleNamespace(generation_token_ids=[5])),
        ],
        model_dump=lambda: {"choices": [3, {"message": {"role": "assistant"}}, {"message": {}}]},
    )
    result = model_dump_chat_response_with_dynamic_message_fields(response)
    assert result["choices"] == [
        3,
        {"message": {"role": "assistant"}},
        {"message": {"generation_token_ids": [5]}},
    ]


# --- long generations -----------------------------------------------------------------------------------------


def test_token_information_for_a_long_generation() -> None:
    """16k generated tokens with two log-probs each attach completely (the bulk path)."""
    count = 16_384
    entries = [
        {tid: SimpleNamespace(logprob=-1.0), tid + 1: SimpleNamespace(logprob=-2.0)} for tid in range(count)
    ]
    response, request_output = _exchange(
        [SimpleNamespace(index=0, token_ids=list(range(count)), logprobs=entries)]
    )
    attach_token_information_to_chat_response_choices(response, request_output)
    assert _message(response, 0).generation_log_probs == [-1.0] * count


def test_output_without_tokens_needs_no_logprobs_attribute() -> None:
    """An output with no generated tokens and no ``logprobs`` attribute at all gets [] and []."""
    response, request_output = _exchange([SimpleNamespace(index=0, token_ids=[])])
    attach_token_information_to_chat_response_choices(response, request_output)
    message = _message(response, 0)
    assert (message.generation_token_ids, message.generation_log_probs) == ([], [])


class _EntryDict(dict[int, Any]):
    """A dict subclass: a Mapping, but not the plain dict the bulk path reads."""


@pytest.mark.parametrize(
    ("logprobs", "expected"),
    [
        ([{7: -1.0, 9: -0.1}, {8: -1e5}, {9: -math.inf}], [-1.0, -9999.0, -9999.0]),
        ([{7: -0.0}, {8: -3}, {9: "-0.5"}], [0.0, -3.0, -0.5]),
    ],
)
def test_plain_dict_positions_are_floored(logprobs: list[dict[int, Any]], expected: list[float]) -> None:
    """Plain dict position entries (what vLLM returns) give the floored float of every sampled token."""
    response, request_output = _exchange([_output(0, [7, 8, 9], logprobs)])
    attach_token_information_to_chat_response_choices(response, request_output)
    assert _message(response, 0).generation_log_probs == expected


@pytest.mark.parametrize(
    "change",
    ["mapping_proxy", "dict_subclass", "absent", "none", "text", "nan", "inf"],
)
def test_other_mappings_and_unreadable_positions_give_the_same_values_or_the_precise_error(
    change: str,
) -> None:
    """Another mapping type at the last position floors like a dict; an absent, ``None``, text or non-finite
    sampled log-prob there raises the error naming that token."""
    entries: list[Any] = [
        {7: SimpleNamespace(logprob=-1.0)},
        {8: SimpleNamespace(logprob=-1e5)},
        {9: SimpleNamespace(logprob=-2.0)},
    ]
    if change == "mapping_proxy":
        entries[2] = MappingProxyType(entries[2])
    elif change == "dict_subclass":
        entries[2] = _EntryDict(entries[2])
    elif change == "absent":
        entries[2] = {10: SimpleNamespace(logprob=-2.0)}
    elif change == "none":
        entries[2] = {9: None}
    elif change == "text":
        entries[2] = {9: SimpleNamespace(logprob="abc")}
    else:
        entries[2] = {9: SimpleNamespace(logprob=float(change))}
    response, request_output = _exchange([SimpleNamespace(index=0, token_ids=[7, 8, 9], logprobs=entries)])
    if change in ("mapping_proxy", "dict_subclass"):
        attach_token_information_to_chat_response_choices(response, request_output)
        assert _message(response, 0).generation_log_probs == [-1.0, -9999.0, -2.0]
    else:
        with pytest.raises(ChatResponseContractError) as info:
            attach_token_information_to_chat_response_choices(response, request_output)
        assert (info.value.choice_index, info.value.token_id) == (0, 9)


# --- weight versions on token information (§4.3, §5.1, §5.2) ----------------------------------------------------

RECORDED_WEIGHTS = json.loads((DATA / "generate_weight_versions.json").read_text())


def _recorded_stepped_exchange() -> tuple[Any, Any, list[dict[str, Any]]]:
    """The real vLLM 0.32 request stepped across ``set_weight_version("8")``, with a log-prob per sampled token."""
    request = RECORDED_WEIGHTS["stepped"]["request_outputs"][0]
    recorded = request["outputs"][0]
    output = _output(
        recorded["index"],
        recorded["token_ids"],
        [{token_id: -1.0} for token_id in recorded["token_ids"]],
        weight_versions=[
            (span["version"], span["start"], span["end"]) for span in recorded["weight_versions"]
        ],
    )
    response, request_output = _exchange([output], prompt=request["prompt_token_ids"])
    return response, request_output, recorded["weight_versions"]


def test_recorded_weight_versions_are_attached_as_span_dicts() -> None:
    """The two recorded spans of a real 0.32 output land on the message as version/start/end dicts."""
    response, request_output, spans = _recorded_stepped_exchange()
    assert [span["version"] for span in spans] == ["7", "8"]
    attach_token_information_to_chat_response_choices(response, request_output)
    assert _message(response, 0).weight_versions == spans


@pytest.mark.parametrize(
    "spans",
    [
        [{"version": "7", "start": 0, "end": 2}],
        [("7", 0, 1), ("8", 1, 2)],
        (("7", 0, 2),),
    ],
)
def test_every_span_form_becomes_a_new_list_of_dicts(spans: Any) -> None:
    """Mappings and tuples, in a list or a tuple, give a new list of fresh dicts, never the output's objects."""
    output = _output(0, [7, 8], [{7: -0.5}, {8: -1.0}], weight_versions=spans)
    response, request_output = _exchange([output])
    attach_token_information_to_chat_response_choices(response, request_output)
    attached = _message(response, 0).weight_versions
    assert type(attached) is list
    assert all(type(span) is dict and list(span) == ["version", "start", "end"] for span in attached)
    assert attached is not spans
    assert all(span is not original for span, original in zip(attached, spans, strict=True))
    assert attached[-1]["end"] == 2


def test_output_without_tokens_and_empty_spans_gets_an_empty_list() -> None:
    """An output with no tokens and no spans gets ``weight_versions == []``."""
    response, request_output = _exchange([_output(0, [], None, weight_versions=[])])
    attach_token_information_to_chat_response_choices(response, request_output)
    assert _message(response, 0).weight_versions == []


@pytest.mark.parametrize("extra", [{}, {"weight_versions": None}])
def test_output_without_weight_versions_leaves_the_message_without_them(extra: dict[str, Any]) -> None:
    """A missing or ``None`` ``weight_versions`` sets nothing: the message has no such attribute afterwards."""
    response, request_output = _exchange([_output(0, [7], [{7: -0.5}], **extra)])
    attach_token_information_to_chat_response_choices(response, request_output)
    assert not hasattr(_message(response, 0), "weight_versions")


@pytest.mark.parametrize(
    ("spans", "cls", "attribute"),
    [
        ([("7", 0, 1)], WeightVersionError, {"span_index": 0, "token_count": 2}),
        ([("7", 0, 1), ("8", 2, 2)], WeightVersionError, {"span_index": 1}),
        ([("7", 0, 1), ("7", 1, 2)], WeightVersionError, {"span_index": 1, "version": "7"}),
        ([["7", 0, 2]], ContractTypeError, {"argument": "completion_output.weight_versions[0]"}),
        ("7:0:2", ContractTypeError, {"argument": "completion_output.weight_versions"}),
    ],
)
def test_bad_weight_versions_raise_their_own_error_and_change_nothing(
    spans: Any, cls: type[ContractError], attribute: dict[str, Any]
) -> None:
    """Spans that do not tile the tokens, or of another form, raise the spans' error after a good choice; the
    response stays untouched."""
    good = _output(0, [5], [{5: -0.1}], weight_versions=[("7", 0, 1)])
    bad = _output(1, [7, 8], [{7: -0.5}, {8: -1.0}], weight_versions=spans)
    response, request_output = _exchange([good, bad])
    before = copy.deepcopy(response)
    with pytest.raises(cls) as caught:
        attach_token_information_to_chat_response_choices(response, request_output)
    assert_contract_error(caught.value)
    assert {name: getattr(caught.value, name) for name in attribute} == attribute
    assert response == before


def test_a_message_refusing_weight_versions_restores_every_field() -> None:
    """A message that refuses ``weight_versions`` (the last field set) leaves every choice as it was."""
    output = _output(0, [7], [{7: -0.5}], weight_versions=[("7", 0, 1)])
    response, request_output = _exchange([output])
    response.choices[0].message = RefusingMessage("weight_versions", role="assistant")
    before = copy.deepcopy(response)
    with pytest.raises(ChatResponseContractError, match=r"message\.weight_versions") as caught:
        attach_token_information_to_chat_response_choices(response, request_output)
    assert caught.value.choice_index == 0
    assert response == before


def test_dump_keeps_weight_versions_after_the_dynamic_fields() -> None:
    """The dump writes ``weight_versions`` by identity, after the four dynamic fields."""
    response = ChatResponseModel.with_choices([0])
    request_output = SimpleNamespace(
        prompt_token_ids=[1, 2], outputs=[_output(0, [7], [{7: -0.5}], weight_versions=[("7", 0, 1)])]
    )
    attach_token_information_to_chat_response_choices(response, request_output)
    dumped = model_dump_chat_response_with_dynamic_message_fields(response)["choices"][0]["message"]
    assert dumped["weight_versions"] is getattr(response.choices[0].message, "weight_versions")  # noqa: B009
    assert list(dumped)[-4:] == [
        "prompt_token_ids",
        "generation_token_ids",
        "generation_log_probs",
        "weight_versions",
    ]


# --- normalize_tool_call_arguments (§2.2.2) ----------------------------------------------------------------------


def _call(arguments: object, name: str = "get_weather") -> dict[str, Any]:
    return {"id": f"call_{name}", "type": "function", "function": {"name": name, "arguments": arguments}}


def _history(*calls: Any) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": list(calls)},
        {"role": "tool", "content": "sunny", "tool_call_id": "call_get_weather"},
    ]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"city": "Paris", "days": 2}', {"city": "Paris", "days": 2}),
        ("{}", {}),
        ("", {}),
        ('{"city": ', {}),
        ("[1, 2]", {}),
        ("null", {}),
        ('"Paris"', {}),
        ("[" * 100_000, {}),  # too deep for json.loads: does not parse
    ],
)
def test_string_arguments_become_their_json_object_or_empty(arguments: str, expected: dict[str, Any]) -> None:
    """A JSON-object string becomes that object; anything else that is a string becomes {}."""
    messages = _history(_call(arguments))
    normalize_tool_call_arguments(messages)
    assert messages[1]["tool_calls"][0]["function"]["arguments"] == expected


def test_non_string_arguments_and_messages_without_tool_calls_are_left_alone() -> None:
    """Mappings (by identity), other values, malformed calls and non-list tool_calls are not touched."""
    mapping = {"city": "Paris"}
    calls: list[Any] = [_call(mapping), _call(None, "a"), _call(7, "b"), "not a call", {"function": "x"}]
    messages = _history(*calls)
    messages.append({"role": "assistant", "tool_calls": (_call('{"x": 1}', "tupled"),)})
    messages.append({"role": "assistant", "tool_calls": {"0": _call('{"x": 1}', "keyed")}})
    before = copy.deepcopy(messages)
    normalize_tool_call_arguments(messages)
    assert messages == before
    assert messages[1]["tool_calls"][0]["function"]["arguments"] is mapping


def test_only_messages_before_the_index_are_normalised() -> None:
    """``before_index`` bounds the messages normalised; 0 normalises none, ``len(messages)`` all."""
    messages = [
        *_history(_call('{"a": 1}')),
        {"role": "assistant", "tool_calls": [_call('{"b": 2}', "later")]},
    ]
    untouched = copy.deepcopy(messages)
    normalize_tool_call_arguments(messages, before_index=0)
    assert messages == untouched
    normalize_tool_call_arguments(messages, before_index=3)
    assert messages[1]["tool_calls"][0]["function"]["arguments"] == {"a": 1}
    assert messages[3]["tool_calls"][0]["function"]["arguments"] == '{"b": 2}'
    normalize_tool_call_arguments(messages, before_index=np.int64(4))
    assert messages[3]["tool_calls"][0]["function"]["arguments"] == {"b": 2}


def test_each_empty_replacement_is_a_new_dict() -> None:
    """Two unparsable arguments get two distinct {} objects, so editing one never changes the other."""
    messages = _history(_call("x", "a"), _call("y", "b"))
    normalize_tool_call_arguments(messages)
    first, second = (call["function"]["arguments"] for call in messages[1]["tool_calls"])
    assert first == second == {}
    assert first is not second


@pytest.mark.parametrize(
    ("messages", "before_index", "cls", "argument"),
    [
        (tuple(_history(_call("{}"))), None, ContractTypeError, "messages"),
        ("messages", None, ContractTypeError, "messages"),
        ([*_history(_call("{}")), "a message"], 1, ContractTypeError, "messages[3]"),
        (_history(_call("{}")), True, ContractTypeError, "before_index"),
        (_history(_call("{}")), 1.0, ContractTypeError, "before_index"),
        (_history(_call("{}")), -1, SpliceError, None),
        (_history(_call("{}")), 4, SpliceError, None),
    ],
)
def test_bad_arguments_are_rejected_before_any_change(
    messages: Any, before_index: Any, cls: type[ContractError], argument: str | None
) -> None:
    """Every argument is checked (every message, even past ``before_index``) before anything is replaced."""
    before = copy.deepcopy(messages)
    with pytest.raises(cls) as caught:
        normalize_tool_call_arguments(messages, before_index)
    assert_contract_error(caught.value)
    if argument is not None:
        assert isinstance(caught.value, ContractTypeError)
        assert caught.value.argument == argument
    else:
        assert f"got {before_index}" in str(caught.value)
        assert f"0..{len(messages)}" in str(caught.value)
    assert messages == before


def test_a_read_only_function_is_rejected_before_earlier_calls_change() -> None:
    """A read-only ``function`` with string arguments raises, and the call before it keeps its string."""
    frozen = {"id": "call_frozen", "function": MappingProxyType({"name": "f", "arguments": "{}"})}
    messages = _history(_call('{"a": 1}'), frozen)
    with pytest.raises(ContractTypeError) as caught:
        normalize_tool_call_arguments(messages)
    assert caught.value.argument == "messages[1]['tool_calls'][1]['function']"
    assert messages[1]["tool_calls"][0]["function"]["arguments"] == '{"a": 1}'
