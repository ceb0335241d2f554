"""Hypothesis strategies for the chat contracts (SPEC §2.2.2, §3.5, §4.3, §5; §7 invariants 1, 2, 17, 18, 19).

Responses and request outputs are ``SimpleNamespace`` stand-ins shaped like vLLM's ``ChatCompletionResponse`` and
``RequestOutput`` (the library reads them by attribute only):

- :func:`sampled_logprobs`: valid sampled-token log-probs, including ``-inf`` and values below the floor;
- :func:`hostile_logprobs`: NaN, ``+inf``, ``None``, strings, huge ints and objects;
- :func:`chat_exchanges`: a response and its matching request output, choices and outputs in independent orders;
- :func:`routed_chat_exchanges`: the same with routes (current or legacy layout, complete, missing or surplus);
- :func:`hostile_chat_exchanges`, :func:`hostile_routed_chat_exchanges`: an exchange broken in exactly one way;
- :func:`tool_call_histories`, :func:`hostile_tool_call_histories`: chat histories with tool calls (well-formed
  and malformed) for tool-call normalisation (SPEC §2.2.2), and calls of it broken in one way.

Stand-ins for hand-written tests: :class:`ChatResponseModel` (pydantic, shaped like vLLM's
``ChatCompletionResponse``, extra fields allowed), :class:`RefusingMessage` and :class:`RecordingLogger`.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Sequence
from types import MappingProxyType, SimpleNamespace
from typing import Any

import numpy as np
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict

__all__ = [
    "ChatChoiceModel",
    "ChatMessageModel",
    "ChatResponseModel",
    "RecordingLogger",
    "RefusingMessage",
    "chat_exchanges",
    "hostile_chat_exchanges",
    "hostile_logprobs",
    "hostile_routed_chat_exchanges",
    "hostile_tool_call_histories",
    "routed_chat_exchanges",
    "sampled_logprobs",
    "tool_call_histories",
]


_FLOOR = -9999.0
"""``rl_contracts.chat._FLOOR``, repeated so importing the strategies does not import torch."""


class RefusingMessage(SimpleNamespace):
    """A chat message that refuses to have ``refused`` set, like a frozen or ``extra="forbid"`` model."""

    def __init__(self, refused: str = "", **fields: Any) -> None:
        object.__setattr__(self, "refused", refused)  # first, so that a deepcopy keeps the attribute order
        super().__init__(**fields)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == self.refused:
            raise AttributeError(f"message refuses attribute {name!r}")
        super().__setattr__(name, value)

    def __reduce__(self) -> tuple[Any, ...]:
        """Copies and pickles rebuild through ``__init__``, so a copy keeps the field order (and repr)."""
        fields = {name: value for name, value in vars(self).items() if name != "refused"}
        return (_refusing_message, (self.refused, fields))


def _refusing_message(refused: str, fields: dict[str, Any]) -> RefusingMessage:
    """Rebuild a :class:`RefusingMessage` (its ``__reduce__``)."""
    return RefusingMessage(refused, **fields)


class ChatMessageModel(BaseModel):
    """Stand-in for vLLM's OpenAI ``ChatMessage``; extra fields are allowed, so attach functions can set theirs."""

    model_config = ConfigDict(extra="allow")
    role: str = "assistant"
    content: str | None = None


class ChatChoiceModel(BaseModel):
    """Stand-in for vLLM's ``ChatCompletionResponseChoice`` (extra fields allowed)."""

    model_config = ConfigDict(extra="allow")
    index: int
    message: ChatMessageModel
    logprobs: Any = None
    finish_reason: str | None = "stop"
    token_ids: list[int] | None = None
    routed_experts: str | None = None


class ChatResponseModel(BaseModel):
    """Stand-in for vLLM's ``ChatCompletionResponse`` (extra fields allowed); validates vLLM's JSON too.

    >>> ChatResponseModel.with_choices([0, 1]).choices[1].message.content
    'c1'
    """

    model_config = ConfigDict(extra="allow")
    id: str = "chatcmpl-1"
    choices: list[ChatChoiceModel]
    prompt_token_ids: list[int] | None = None

    @classmethod
    def with_choices(cls, indices: Sequence[int]) -> ChatResponseModel:
        """A response with one choice per index, in the given order, whose content is ``f"c{index}"``."""
        return cls(
            choices=[ChatChoiceModel(index=i, message=ChatMessageModel(content=f"c{i}")) for i in indices]
        )


class RecordingLogger:
    """A ``LoggerLike`` that records each ``warning(msg, *args)`` call as ``(msg, args)`` in ``calls``."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[object, ...]]] = []

    def warning(self, msg: str, *args: object) -> None:
        """Record the call."""
        self.calls.append((msg, args))


def sampled_logprobs() -> st.SearchStrategy[float]:
    """Valid sampled-token log-probs: ordinary values, ``-inf``, the floor itself and values below it."""
    return st.one_of(
        st.floats(min_value=-50.0, max_value=0.0),
        st.just(-math.inf),
        st.just(_FLOOR),
        st.floats(max_value=_FLOOR - 1.0, allow_infinity=False, allow_nan=False),
        st.floats(min_value=0.0, max_value=1e300),
    )


def hostile_logprobs() -> st.SearchStrategy[Any]:
    """Log-prob values that must be rejected: NaN, ``+inf``, ``None``, strings, huge ints and objects."""
    return st.one_of(
        st.just(math.nan),
        st.just(math.inf),
        st.just(np.float32("nan")),
        st.none(),
        st.sampled_from(["abc", "", "one"]),
        st.just(2**2000),
        st.builds(object),
    )


def _message(draw: st.DrawFn, number: int) -> SimpleNamespace:
    return SimpleNamespace(role="assistant", content=draw(st.text(max_size=6)) or f"reply {number}")


def _logprob_entries(draw: st.DrawFn, token_ids: list[int]) -> list[dict[int, SimpleNamespace]]:
    entries = []
    for token_id in token_ids:
        entry = {token_id: SimpleNamespace(logprob=draw(sampled_logprobs()), rank=1)}
        for other in draw(st.lists(st.integers(0, 60), max_size=2)):
            entry.setdefault(other, SimpleNamespace(logprob=draw(st.floats(-30.0, 0.0)), rank=2))
        entries.append(entry)
    return entries


def _routes(draw: st.DrawFn, rows: int, layers: int, topk: int, experts: int) -> np.ndarray[Any, Any]:
    values = draw(
        st.lists(st.integers(0, experts - 1), min_size=rows * layers * topk, max_size=rows * layers * topk)
    )
    return np.asarray(values, dtype=np.uint8).reshape(rows, layers, topk)


def _weight_versions(draw: st.DrawFn, token_count: int) -> list[object]:
    """Valid spans tiling ``token_count`` tokens, each a ``(version, start, end)`` tuple or its JSON mapping."""
    cuts = (
        sorted(set(draw(st.lists(st.integers(1, max(token_count - 1, 1)), max_size=3))))
        if token_count
        else []
    )
    bounds = [0, *[cut for cut in cuts if cut < token_count], token_count] if token_count else []
    spans: list[object] = []
    for number, (start, end) in enumerate(itertools.pairwise(bounds)):
        version = f"v{number + draw(st.integers(0, 1)) * 100}"
        spans.append(
            (version, start, end) if draw(st.booleans()) else {"version": version, "start": start, "end": end}
        )
    return spans


@st.composite
def _exchange(
    draw: st.DrawFn, *, routes: bool, max_choices: int, extra_outputs: bool
) -> tuple[SimpleNamespace, SimpleNamespace, int]:
    prompt = draw(st.lists(st.integers(0, 60), max_size=6))
    indices = draw(st.lists(st.integers(0, 9), max_size=max_choices, unique=True))
    unmatched = draw(st.lists(st.integers(10, 14), max_size=2, unique=True)) if extra_outputs else []
    layers, topk = draw(st.integers(1, 3)), draw(st.integers(0, 2))
    experts = draw(st.sampled_from([1, 4, 8]))
    legacy = routes and draw(st.booleans())
    routes_start = 0 if legacy or not routes else draw(st.integers(0, max(len(prompt) - 1, 0)))
    prompt_routes = max(len(prompt) - 1, 0) if legacy else 0
    outputs = []
    for index in [*indices, *unmatched]:
        token_ids = draw(st.lists(st.integers(0, 60), max_size=5))
        output = SimpleNamespace(index=index, token_ids=token_ids, logprobs=_logprob_entries(draw, token_ids))
        if not routes and draw(st.booleans()):
            output.weight_versions = _weight_versions(draw, len(token_ids))
        if routes:
            expected = max(len(prompt) + len(token_ids) - 1 - routes_start - prompt_routes, 0)
            rows = max(expected + draw(st.sampled_from([0, 0, 1, -1, -3])), 0)
            output.routed_experts = _routes(draw, rows, layers, topk, experts)
        outputs.append(output)
    request_output = SimpleNamespace(
        request_id="req-0",
        prompt_token_ids=prompt,
        outputs=draw(st.permutations(outputs)),
        num_cached_tokens=draw(st.sampled_from([None, 0, 16])),
    )
    if legacy:
        request_output.prompt_routed_experts = _routes(draw, prompt_routes, layers, topk, experts)
    choices = [
        SimpleNamespace(index=index, message=_message(draw, index), logprobs=None, finish_reason="stop")
        for index in draw(st.permutations(indices))
    ]
    response = SimpleNamespace(id="chatcmpl-0", object="chat.completion", choices=choices)
    return response, request_output, routes_start


def chat_exchanges(*, max_choices: int = 4) -> st.SearchStrategy[tuple[SimpleNamespace, SimpleNamespace]]:
    """A chat response and its final request output for token information (SPEC §5.1): every check passes.

    Choice indices are distinct (not necessarily ``0..n-1``); choices and outputs come in independent orders; each
    position's log-probs hold the sampled token (values from :func:`sampled_logprobs`) plus a few others.  About
    half the outputs carry ``weight_versions`` (SPEC §4.3): spans tiling their tokens with changing labels, as
    ``(version, start, end)`` tuples or their JSON mappings (an empty list for an output without tokens).
    """
    return _exchange(routes=False, max_choices=max_choices, extra_outputs=False).map(lambda e: (e[0], e[1]))


def routed_chat_exchanges(
    *, max_choices: int = 4
) -> st.SearchStrategy[tuple[SimpleNamespace, SimpleNamespace, int]]:
    """``(response, request_output, routes_start)`` for routed-experts attachment (SPEC §3.5).

    Routes are numpy uint8 arrays, either the current layout (full sequence in ``CompletionOutput.routed_experts``,
    with a drawn ``routes_start``) or the legacy one (``prompt_routed_experts`` plus generated rows).  Row counts
    are complete, one row short, several short or one surplus, so every call succeeds (missing rows fall back to
    -1); ``K`` may be 0.  Outputs that match no choice may be present; they are ignored.
    """
    return _exchange(routes=True, max_choices=max_choices, extra_outputs=True)


_TOKEN_BREAKS = (
    "prompt_none",
    "output_index_type",
    "output_index_duplicate",
    "choice_index_type",
    "choice_index_duplicate",
    "unmatched_choice",
    "unexpected_output",
    "token_ids_none",
    "token_ids_type",
    "logprobs_none",
    "logprobs_count",
    "logprob_entry_not_mapping",
    "sampled_token_absent",
    "logprob_value",
    "logprob_attribute_missing",
    "no_message",
    "message_refuses",
    "outputs_not_sequence",
    "choices_not_sequence",
    "weight_versions_overrun",
    "weight_versions_form",
)


@st.composite
def hostile_chat_exchanges(draw: st.DrawFn) -> tuple[SimpleNamespace, SimpleNamespace, str]:
    """``(response, request_output, how)``: a token-information exchange broken in exactly one way named ``how``.

    Every break makes :func:`~rl_contracts.chat.attach_token_information_to_chat_response_choices` raise
    ``ChatResponseContractError``, except the two ``weight_versions_*`` breaks, which raise the spans' own error
    (``WeightVersionError`` for a span beyond the output's tokens, ``ContractTypeError`` for a span of another
    form); the break sits at a drawn choice, often after choices that would pass, so atomicity is exercised.
    """
    response, request_output, _ = draw(_exchange(routes=False, max_choices=4, extra_outputs=False))
    choices: list[Any] = response.choices
    outputs: list[Any] = request_output.outputs
    with_tokens = [o for o in outputs if o.token_ids]
    how = draw(st.sampled_from(_TOKEN_BREAKS))
    needs_choice = how not in (
        "prompt_none",
        "unexpected_output",
        "outputs_not_sequence",
        "choices_not_sequence",
    )
    if needs_choice and not choices:
        choices.append(SimpleNamespace(index=0, message=SimpleNamespace(role="assistant"), logprobs=None))
        outputs.append(SimpleNamespace(index=0, token_ids=[], logprobs=None))
    if how.startswith(("logprobs_", "logprob_", "sampled_")) and not with_tokens:
        output = draw(st.sampled_from(outputs))
        output.token_ids, output.logprobs = [3], [{3: SimpleNamespace(logprob=-1.0)}]
        with_tokens = [output]
    if how == "prompt_none":
        request_output.prompt_token_ids = None
    elif how in ("output_index_type", "choice_index_type"):
        target = draw(st.sampled_from(outputs if how == "output_index_type" else choices))
        target.index = draw(st.sampled_from([None, "0", 1.0, True, np.float32(2)]))
    elif how == "output_index_duplicate":
        outputs.append(SimpleNamespace(index=outputs[0].index, token_ids=[], logprobs=None))
    elif how == "choice_index_duplicate":
        choices.append(SimpleNamespace(index=choices[0].index, message=SimpleNamespace(), logprobs=None))
    elif how == "unmatched_choice":
        choices.append(SimpleNamespace(index=99, message=SimpleNamespace(), logprobs=None))
    elif how == "unexpected_output":
        outputs.append(SimpleNamespace(index=99, token_ids=[], logprobs=None))
    elif how == "token_ids_none":
        draw(st.sampled_from(outputs)).token_ids = None
    elif how == "token_ids_type":
        draw(st.sampled_from(outputs)).token_ids = draw(st.sampled_from([[1.5], "abc", [True], 7]))
    elif how == "logprobs_none":
        draw(st.sampled_from(with_tokens)).logprobs = None
    elif how == "logprobs_count":
        output = draw(st.sampled_from(with_tokens))
        output.logprobs = output.logprobs[:-1] if draw(st.booleans()) else [*output.logprobs, {}]
    elif how in (
        "logprob_entry_not_mapping",
        "sampled_token_absent",
        "logprob_value",
        "logprob_attribute_missing",
    ):
        output = draw(st.sampled_from(with_tokens))
        position = draw(st.integers(0, len(output.token_ids) - 1))
        token_id = output.token_ids[position]
        entries = list(output.logprobs)
        if how == "logprob_entry_not_mapping":
            entries[position] = draw(st.sampled_from([None, [SimpleNamespace(logprob=-1.0)] * 64, -1.0]))
        elif how == "sampled_token_absent":
            entries[position] = {k: v for k, v in entries[position].items() if k != token_id}
        elif how == "logprob_value":
            entries[position] = {
                **entries[position],
                token_id: SimpleNamespace(logprob=draw(hostile_logprobs())),
            }
        else:
            entries[position] = {**entries[position], token_id: SimpleNamespace(rank=1)}
        output.logprobs = entries
    elif how == "no_message":
        draw(st.sampled_from(choices)).message = None
    elif how == "message_refuses":
        choice = draw(st.sampled_from(choices))
        refused = draw(st.sampled_from(["prompt_token_ids", "generation_token_ids", "generation_log_probs"]))
        choice.message = RefusingMessage(refused, **vars(choice.message))
    elif how == "outputs_not_sequence":
        request_output.outputs = draw(st.sampled_from([3, "outputs", {0: None}]))
    elif how == "weight_versions_overrun":
        output = draw(st.sampled_from(outputs))
        output.weight_versions = [("v0", 0, len(output.token_ids) + 1)]
    elif how == "weight_versions_form":
        output = draw(st.sampled_from(outputs))
        span = SimpleNamespace(version="v0", start=0, end=len(output.token_ids))
        output.weight_versions = [draw(st.sampled_from(["v0", 5, span, ("v0", 0)]))]
    else:
        response.choices = draw(st.sampled_from([3, "choices", {0: None}]))
    return response, request_output, how


_ROUTE_BREAKS = (
    "no_routes",
    "too_many_routes",
    "float_routes",
    "flat_routes",
    "id_too_large",
    "unmatched_choice",
    "output_index_duplicate",
    "no_message",
    "message_refuses",
)


@st.composite
def hostile_routed_chat_exchanges(draw: st.DrawFn) -> tuple[SimpleNamespace, SimpleNamespace, int, str]:
    """``(response, request_output, routes_start, how)``: a routed exchange broken in exactly one way ``how``.

    Every break makes :func:`~rl_contracts.chat.attach_routed_experts_to_chat_response_choices` (with the int8
    carry dtype) raise ``ChatResponseContractError`` or ``RoutedExpertsError``, at a drawn choice.
    """
    response, request_output, routes_start = draw(_exchange(routes=True, max_choices=4, extra_outputs=False))
    choices: list[Any] = response.choices
    outputs: list[Any] = request_output.outputs
    if not choices:
        choices.append(SimpleNamespace(index=0, message=SimpleNamespace(role="assistant"), logprobs=None))
        outputs.append(SimpleNamespace(index=0, token_ids=[], logprobs=None, routed_experts=None))
        request_output.prompt_routed_experts = None
    how = draw(st.sampled_from(_ROUTE_BREAKS))
    chosen = {o.index: o for o in outputs}[draw(st.sampled_from(choices)).index]
    layers, topk = (2, 1) if chosen.routed_experts is None else chosen.routed_experts.shape[1:]
    if how == "no_routes":
        chosen.routed_experts = None
        request_output.prompt_routed_experts = None
    elif how == "too_many_routes":
        rows = max(len(request_output.prompt_token_ids) + len(chosen.token_ids) - 1, 0) + 2
        chosen.routed_experts = np.zeros((rows, layers, topk), dtype=np.uint8)
        request_output.prompt_routed_experts = None
    elif how == "float_routes":
        chosen.routed_experts = np.zeros((1, layers, max(topk, 1)), dtype=np.float32)
    elif how == "flat_routes":
        chosen.routed_experts = np.zeros((2, 2), dtype=np.uint8)
    elif how == "id_too_large":
        chosen.routed_experts = np.full((1, layers, max(topk, 1)), 200, dtype=np.uint8)
        request_output.prompt_routed_experts = None
    elif how == "unmatched_choice":
        choices.append(SimpleNamespace(index=99, message=SimpleNamespace(), logprobs=None))
    elif how == "output_index_duplicate":
        outputs.append(SimpleNamespace(index=chosen.index, token_ids=[], routed_experts=None))
    elif how == "no_message":
        next(c for c in choices if c.index == chosen.index).message = None
    else:
        choice = next(c for c in choices if c.index == chosen.index)
        choice.message = RefusingMessage("routed_experts", **vars(choice.message))
    return response, request_output, routes_start, how


_JSON_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=4))
_NOT_JSON_OBJECTS = st.sampled_from(
    ["", "{", "not json", "[1, 2]", "3", "null", '"text"', "{'single': 'quotes'}", "[" * 10_000, '{"a": 1} x']
)


def _arguments() -> st.SearchStrategy[object]:
    """``function.arguments``: a JSON-object string, a string that is not one, a mapping, or another value."""
    return st.one_of(
        st.dictionaries(st.text(max_size=4), _JSON_VALUES, max_size=3).map(json.dumps),
        _NOT_JSON_OBJECTS,
        st.dictionaries(st.text(max_size=4), _JSON_VALUES, max_size=2),
        st.sampled_from([None, 7, ["a"], b"{}"]),
    )


@st.composite
def _tool_call(draw: st.DrawFn, number: int) -> object:
    """One entry of ``tool_calls``: usually an OpenAI call mapping, sometimes a malformed entry or function."""
    shape = draw(
        st.sampled_from(["call", "call", "call", "no_arguments", "function_not_mapping", "not_mapping"])
    )
    if shape == "not_mapping":
        return draw(st.sampled_from(["call", 7, None, ["function"]]))
    function: object = {"name": f"tool_{number}"}
    if shape == "function_not_mapping":
        function = draw(st.sampled_from(["tool", None, 3, [("arguments", "{}")]]))
    elif shape == "call":
        function = {"name": f"tool_{number}", "arguments": draw(_arguments())}
    return {"id": f"call_{number}", "type": "function", "function": function}


@st.composite
def _tool_call_message(draw: st.DrawFn, number: int) -> dict[str, Any]:
    role = draw(st.sampled_from(["system", "user", "assistant", "assistant", "tool"]))
    message: dict[str, Any] = {"role": role, "content": draw(st.text(max_size=5))}
    if role == "assistant" and draw(st.booleans()):
        calls = [draw(_tool_call(10 * number + position)) for position in range(draw(st.integers(0, 3)))]
        message["tool_calls"] = draw(
            st.sampled_from(["list", "list", "list", "tuple", "mapping", "text", "none"]).map(
                lambda form: {
                    "list": calls,
                    "tuple": tuple(calls),
                    "mapping": dict(enumerate(calls)),
                    "text": json.dumps(str(calls)),
                    "none": None,
                }[form]
            )
        )
    return message


def tool_call_histories(*, max_messages: int = 6) -> st.SearchStrategy[list[dict[str, Any]]]:
    """Chat histories that :func:`~rl_contracts.chat.normalize_tool_call_arguments` accepts (SPEC §2.2.2).

    A list of message dicts (system, user, assistant, tool).  Assistant messages may carry ``tool_calls``: usually
    a list of OpenAI call dicts whose ``function.arguments`` is a JSON-object string, a string that is not a JSON
    object (empty, truncated, a list, a number, ``null``, single quotes, nesting too deep to parse, trailing
    text), a mapping already, or another value; also malformed entries the function must leave alone: calls that
    are no mapping, functions that are no mapping or lack ``arguments``, and ``tool_calls`` that is a tuple, a
    mapping, a string or ``None`` instead of a list.  Every ``function`` is a ``dict``, so every call succeeds.
    """
    return st.integers(0, max_messages).flatmap(
        lambda count: st.tuples(*(_tool_call_message(number) for number in range(count))).map(list)
    )


_TOOL_CALL_BREAKS = (
    "messages_not_list",
    "message_not_mapping",
    "read_only_function",
    "before_index_type",
    "before_index_range",
)


@st.composite
def hostile_tool_call_histories(draw: st.DrawFn) -> tuple[object, object, str]:
    """``(messages, before_index, how)``: a call of ``normalize_tool_call_arguments`` broken in one way ``how``.

    ``messages_not_list``: a tuple, a string or a mapping instead of the list; ``message_not_mapping``: one
    message is a string, ``None`` or a list; ``read_only_function``: a ``function`` holding a string
    ``arguments`` is a read-only mapping (among calls that could be normalised); ``before_index_type``: a bool,
    a float or a string; ``before_index_range``: below 0 or beyond ``len(messages)``.  The last break raises
    ``SpliceError``, every other ``ContractTypeError``; either way ``messages`` must stay exactly as it was.
    """
    messages: list[Any] = draw(tool_call_histories())
    how = draw(st.sampled_from(_TOOL_CALL_BREAKS))
    before_index: object = None
    if how == "messages_not_list":
        return draw(st.sampled_from([tuple(messages), "messages", {"role": "user"}])), None, how
    if how == "message_not_mapping":
        messages.insert(
            draw(st.integers(0, len(messages))), draw(st.sampled_from(["hi", None, [("role", "x")]]))
        )
    elif how == "read_only_function":
        function = MappingProxyType({"name": "frozen", "arguments": draw(st.sampled_from(['{"a": 1}', "x"]))})
        call = {"id": "call_frozen", "type": "function", "function": function}
        messages.insert(
            draw(st.integers(0, len(messages))), {"role": "assistant", "content": "", "tool_calls": [call]}
        )
    elif how == "before_index_type":
        before_index = draw(st.sampled_from([True, 1.0, "1", [0]]))
    else:
        before_index = draw(st.sampled_from([-1, len(messages) + 1, -(2**70), 2**70]))
    return messages, before_index, how
