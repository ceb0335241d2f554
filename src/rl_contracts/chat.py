"""Engine-native token information and routed experts on OpenAI-style chat responses (SPEC §2.2.2, §3.5, §4.3, §5).

- :func:`attach_token_information_to_chat_response_choices`: the engine prompt ids, the generated ids, the
  floored log-probabilities of the sampled tokens and, where vLLM labelled them, the weight versions, on every
  choice's ``message``;
- :func:`attach_routed_experts_to_chat_response_choices`: every choice's aligned routes, as an ``nrlre1``
  envelope string in ``message.routed_experts``;
- :func:`model_dump_chat_response_with_dynamic_message_fields`: a dump that keeps those fields whatever the
  response model's extra-field policy;
- :func:`normalize_tool_call_arguments`: tool-call arguments as mappings, before a chat history is rendered for a
  splice (SPEC §2.2.2).

Both attach functions match choices to generation outputs by ``index`` (one shared matcher), run every check (and
every alignment and encoding) before the first assignment, and restore every attribute they already set if an
assignment still fails, so a failed call leaves the response exactly as it was.  Responses are read by attribute:
vLLM's pydantic ``ChatCompletionResponse``, other pydantic models or ``SimpleNamespace`` stand-ins all work.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ._internal.messages import render, render_list, render_name, type_name
from ._internal.optional_torch import torch
from ._internal.routes import WIRE_DTYPE_NAMES, carry_dtype, non_negative, torch_device
from ._internal.sampled_logprobs import LogprobFault, sampled_token_logprobs
from .checks import int_or_none, is_sequence, require_int, require_sequence, token_ids
from .codec import encode_routed_experts
from .errors import ChatResponseContractError, ContractTypeError, SpliceError
from .protocols import ChatResponseLike, LoggerLike, RequestOutputLike
from .routed_experts import ROUTED_EXPERTS_FALLBACK_DTYPE, pad_and_align_routed_expert_indices
from .weights import weight_version_spans

__all__ = [
    "DYNAMIC_MESSAGE_FIELDS",
    "ROUTED_EXPERTS_FALLBACK_WARNING",
    "VLLM_LOGPROB_FLOOR",
    "attach_routed_experts_to_chat_response_choices",
    "attach_token_information_to_chat_response_choices",
    "model_dump_chat_response_with_dynamic_message_fields",
    "normalize_tool_call_arguments",
]

VLLM_LOGPROB_FLOOR: float = -9999.0
"""Lower clamp of per-token log-probabilities; also vLLM's default ``ChatCompletionLogProb.logprob``."""

DYNAMIC_MESSAGE_FIELDS: tuple[str, ...] = (
    "routed_experts",
    "prompt_token_ids",
    "generation_token_ids",
    "generation_log_probs",
)
"""The message attributes the attach functions set, in the order the dump writes them (SPEC §5)."""

_WEIGHT_VERSIONS = "weight_versions"
"""The message attribute token information also sets when the output carries weight versions (SPEC §4.3); the dump
writes it after :data:`DYNAMIC_MESSAGE_FIELDS`."""

ROUTED_EXPERTS_FALLBACK_WARNING = (
    "R3 router replay fallback: vLLM returned incomplete routed_experts for chat choice_idx=%d, "
    "missing_token_routes=%d, actual_routes=%d, expected_routes=%d. Megatron will use its own router for those "
    "missing token routes."
)
"""The printf-style format logged once per choice with missing routes (choice, missing, actual, expected)."""

_ResponseT = TypeVar("_ResponseT")
_ABSENT = object()


@dataclass(frozen=True)
class _Wording:
    """The phrases in which the two attach functions' messages differ."""

    what: str
    pronoun: str

    @property
    def attaching(self) -> str:
        return f"while attaching {self.what} to the OpenAI-compatible chat response"

    @property
    def asked(self) -> str:
        return f"vLLM was asked to return {self.what} for the OpenAI-compatible chat endpoint but"


_TOKENS = _Wording("token information", "it")
_ROUTES = _Wording("routed experts", "them")

_Match = tuple[int, Any, Any]
"""One matched pair: ``(choice index, choice, generation output)``, in response order."""
_Plan = list[tuple[int, Any, tuple[tuple[str, object], ...]]]
"""The assignments of one call: ``(choice index, message, ((field, value), ...))``, in response order."""


def attach_token_information_to_chat_response_choices(
    response: _ResponseT, final_request_output: RequestOutputLike
) -> _ResponseT:
    """Attach the engine prompt ids, generated ids and floored sampled-token log-probs to every chat choice.

    For each choice of ``response.choices``, matched by ``index`` to the output of
    ``final_request_output.outputs`` with the same ``index``, sets ``message.prompt_token_ids`` (a fresh list per
    choice), ``message.generation_token_ids`` and ``message.generation_log_probs`` (``max(logprob, -9999.0)`` of
    each sampled token; ``-inf`` becomes ``-9999.0``).  When the output carries weight versions (vLLM >= 0.32),
    also sets ``message.weight_versions``: the spans checked by
    :func:`~rl_contracts.weights.weight_version_spans`, as a new list of ``{"version", "start", "end"}`` dicts; an
    output without them leaves that attribute alone (SPEC §4.3).  ``choice.logprobs.content`` is ignored.
    Returns ``response``, mutated atomically: every check runs first, and a failing assignment restores every
    attribute already set before the error is raised.

    Raises:
        ChatResponseContractError: no ``prompt_token_ids``; a non-int or duplicate output or choice index;
            choice and output index sets that differ (``missing_choice_indices``,
            ``unexpected_output_indices``); an output without ``token_ids``, or without ``logprobs`` while it has
            tokens; token and log-prob counts that differ; a position whose log-probs lack the sampled token;
            a log-prob that is not a number, NaN or ``+inf``; a choice without ``message``; ids that are not
            ints; an assignment the message refuses.  Attributes ``choice_index``, ``token_id``,
            ``token_count``, ``logprob_count``.
        WeightVersionError, ContractTypeError: the output's ``weight_versions`` are malformed or do not tile its
            tokens, propagated unchanged from :func:`~rl_contracts.weights.weight_version_spans` (its span
            attributes name the first bad span; ``.output_index`` is the choice's index).  Fail-closed reading of
            SPEC §4.3 "after the same validation": the spans' own error, not a re-worded one.

    Example: prompt ids ``[1, 2, 3]`` and a choice with token ids ``[7, 8]`` whose sampled log-probs are
    ``-0.5`` and ``-10000.0`` get ``generation_log_probs == [-0.5, -9999.0]``.

    Divergence: the reference lets NaN through (``max(nan, x)`` is nan) and accepts ``+inf``; it mutates choices
    one by one, so a later failure leaves earlier choices modified.
    """
    prompt = getattr(final_request_output, "prompt_token_ids", None)
    if prompt is None:
        raise ChatResponseContractError(
            f"{_TOKENS.asked} the final request output did not include prompt_token_ids."
        )
    prompt_ids = _ids(prompt, "prompt_token_ids", None, _TOKENS)
    plan: _Plan = []
    for index, choice, output in _match_choices(response, final_request_output, _TOKENS, exact=True):
        generated, log_probs = _token_information(index, output)
        message = _message(choice, index, _TOKENS)
        fields: tuple[tuple[str, object], ...] = (
            ("prompt_token_ids", list(prompt_ids)),
            ("generation_token_ids", generated),
            ("generation_log_probs", log_probs),
        )
        spans = weight_version_spans(output)
        if spans is not None:
            versions = [{"version": span.version, "start": span.start, "end": span.end} for span in spans]
            fields = (*fields, (_WEIGHT_VERSIONS, versions))
        plan.append((index, message, fields))
    _assign(plan, _TOKENS)
    return response


def attach_routed_experts_to_chat_response_choices(
    response: _ResponseT,
    final_request_output: RequestOutputLike,
    *,
    device: torch.device | str,
    logger: LoggerLike | None = None,
    routed_experts_dtype: torch.dtype = ROUTED_EXPERTS_FALLBACK_DTYPE,
    routes_start: int = 0,
) -> _ResponseT:
    """Attach every chat choice's aligned routes to ``message.routed_experts`` as an ``nrlre1`` envelope string.

    Each choice is matched by ``index`` to its generation output ``o``; its routes are
    ``pad_and_align_routed_expert_indices(final_request_output, o, valid_length=n, padded_length=n,
    require_complete_routed_experts=True, return_stats=True, ...)`` with ``n`` the prompt plus generated token
    count, so missing routes become ``-1`` rows and more than one surplus route raises.  ``routes_start`` is
    the ``routed_experts_prompt_start`` the routes were requested with (SPEC §3.3).  Each choice with missing
    routes is reported through ``logger.warning(ROUTED_EXPERTS_FALLBACK_WARNING, choice, missing, actual,
    expected)``.  Returns ``response``, mutated atomically: every check, alignment, encoding and warning happens
    before the first assignment, and a failing assignment restores every attribute already set.

    Raises:
        RoutedExpertsError: ``routed_experts_dtype`` not int8/int16/int32, a negative ``routes_start``, or any
            alignment error of §3.3 (propagated).
        ContractTypeError: ``routes_start`` not an int, or ``logger`` without a callable ``warning``.
        ChatResponseContractError: a non-int or duplicate output or choice index, a choice with no output
            (``missing_choice_indices``; outputs without a choice are ignored), a choice without ``message``, an
            output without any routes, ids that are not ints, or an assignment the message refuses
            (``choice_index``).

    Example: a 3-token prompt with prompt routes ``[[[10]], [[11]]]`` and a choice whose output has token ids
    ``[200]`` and routes ``[[[30]]]`` gets the envelope of ``[[[10]], [[11]], [[30]], [[0]]]``.

    Divergence: the reference silently keeps the last of duplicate output indices and does not check choice
    duplicates; it mutates choices before it reports unmatched ones, leaving a partial mutation.
    """
    carry_dtype(routed_experts_dtype, WIRE_DTYPE_NAMES)
    start = non_negative(routes_start, "routes_start", "routes_start")
    torch_device(device)  # checked even when there is no choice to align
    if logger is not None and not callable(getattr(logger, "warning", None)):
        raise ContractTypeError(
            f"logger must have a callable warning(msg, *args), got {type_name(logger)}",
            argument="logger",
            expected="LoggerLike",
            actual=type_name(logger),
        )
    # Every choice is matched and has a message before any alignment runs.
    matches = [
        (index, _message(choice, index, _ROUTES), output)
        for index, choice, output in _match_choices(response, final_request_output, _ROUTES)
    ]
    prompt = getattr(final_request_output, "prompt_token_ids", None)
    prompt_count = 0 if prompt is None else len(_ids(prompt, "prompt_token_ids", None, _ROUTES))
    plan: _Plan = []
    warnings: list[tuple[int, int, int, int]] = []
    for index, message, output in matches:
        generated = getattr(output, "token_ids", None)
        count = prompt_count + (0 if generated is None else len(_ids(generated, "token_ids", index, _ROUTES)))
        routes, stats = pad_and_align_routed_expert_indices(
            final_request_output,
            output,
            valid_length=count,
            padded_length=count,
            device=device,
            require_complete_routed_experts=True,
            return_stats=True,
            routed_experts_dtype=routed_experts_dtype,
            routes_start=start,
        )
        if routes is None:
            raise ChatResponseContractError(
                f"{_ROUTES.asked} the generation output did not include routed_experts: "
                f"choice_idx={render(index)}.",
                choice_index=index,
            )
        plan.append((index, message, (("routed_experts", encode_routed_experts(routes)),)))
        if stats["missing_routes"] > 0:
            warnings.append(
                (index, stats["missing_routes"], stats["actual_routes"], stats["expected_routes"])
            )
    if logger is not None:
        for values in warnings:
            logger.warning(ROUTED_EXPERTS_FALLBACK_WARNING, *values)
    _assign(plan, _ROUTES)
    return response


def model_dump_chat_response_with_dynamic_message_fields(response: ChatResponseLike) -> dict[str, Any]:
    """Dump a chat response so the dynamically set message fields survive, whatever the extra-field policy.

    Returns ``response.model_dump()`` in which, pairing ``response.choices`` with the dumped ``"choices"``
    position by position (up to the shorter of the two), every non-``None`` field of
    :data:`DYNAMIC_MESSAGE_FIELDS`, then ``weight_versions`` (SPEC §4.3), on ``choice.message`` is written into
    ``choice_dict["message"]`` by reference (overwriting an existing key; a missing or ``None`` message dict
    becomes a new dict).

    Raises:
        ContractTypeError: ``response`` has no callable ``model_dump``; the dump is not a dict; ``choices`` (on
            the response or in the dump) is not a sequence; a dumped choice or message is not a dict.
    """
    dump = getattr(response, "model_dump", None)
    if not callable(dump):
        raise ContractTypeError(
            f"response must have a callable model_dump() (a pydantic chat response), got {type_name(response)}",
            argument="response",
            expected="ChatResponseLike",
            actual=type_name(response),
        )
    result = dump()
    if not isinstance(result, dict):
        raise ContractTypeError.for_value("response.model_dump()", "a dict", result)
    choices = getattr(response, "choices", None)
    dumped = result.get("choices")
    if choices is None or dumped is None:
        return result
    choices = require_sequence(choices, "response.choices", "a sequence of choices")
    if not isinstance(dumped, list | tuple):
        raise ContractTypeError.for_value(
            "response.model_dump()['choices']", "a list of choice dicts", dumped
        )
    for position, choice_dict in enumerate(dumped[: len(choices)]):
        message = getattr(choices[position], "message", None)
        present = [
            (name, value)
            for name in (*DYNAMIC_MESSAGE_FIELDS, _WEIGHT_VERSIONS)
            if message is not None and (value := getattr(message, name, None)) is not None
        ]
        if not present:
            continue
        where = f"response.model_dump()['choices'][{position}]"
        if not isinstance(choice_dict, dict):
            raise ContractTypeError.for_value(where, "a dict", choice_dict)
        target = choice_dict.get("message")
        if target is None:
            target = choice_dict["message"] = {}
        if not isinstance(target, dict):
            raise ContractTypeError.for_value(f"{where}['message']", "a dict", target)
        target.update(present)
    return result


def normalize_tool_call_arguments(messages: list[dict[str, Any]], before_index: int | None = None) -> None:
    """Replace every JSON-string tool-call ``function.arguments`` in ``messages[:before_index]`` by a mapping.

    Some chat templates (Gemma-4's) refuse the JSON string OpenAI clients send and need a mapping.  For every
    message ``messages[i]`` with ``i < before_index`` (all messages when ``None``) whose ``tool_calls`` is a list,
    each call that is a mapping whose ``function`` is a mapping holding a ``str`` ``arguments`` gets that string
    replaced by ``json.loads(arguments)`` when it parses to a JSON object, else by a new ``{}`` (a template that
    renders empty arguments beats one that cannot render; the splice then replaces the rendered history with the
    model's exact tokens).  Every other value is left alone.  Mutates ``messages`` in place, as the reference does
    (SPEC §2.2.2), and only after every check has passed; returns ``None``.

    Fail-closed reading: a ``function`` mapping that holds a ``str`` ``arguments`` but cannot be assigned to (a
    read-only mapping) is an error, found before anything is replaced; text nested too deeply for
    ``json.loads`` does not parse, so it becomes ``{}``.

    Raises:
        ContractTypeError: ``messages`` is not a list, an item is not a mapping (``argument`` names it),
            ``before_index`` is not an int (or ``None``), or a ``function`` to normalise is read-only.
        SpliceError: ``before_index`` is outside ``0..len(messages)``.  (This prepares a splice, SPEC §2.2.)

    >>> history = [{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": '{"x": 1}'}}]}]
    >>> normalize_tool_call_arguments(history)
    >>> history[0]["tool_calls"][0]["function"]["arguments"]
    {'x': 1}
    """
    if not isinstance(messages, list):
        raise ContractTypeError.for_value("messages", "a list of message mappings", messages)
    end = len(messages)
    if before_index is not None:
        end = require_int(before_index, "before_index")
        if not 0 <= end <= len(messages):
            raise SpliceError(
                f"before_index must lie in 0..len(messages) = 0..{len(messages)} (or be None for every message), "
                f"got {render(end)}"
            )
    replacements: list[tuple[MutableMapping[str, Any], object]] = []
    for position, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise ContractTypeError.for_value(f"messages[{position}]", "a message mapping", message)
        if position >= end:
            continue
        calls = message.get("tool_calls")
        if not isinstance(calls, list):
            continue
        for number, call in enumerate(calls):
            function = call.get("function") if isinstance(call, Mapping) else None
            if not isinstance(function, Mapping) or not isinstance(function.get("arguments"), str):
                continue
            if not isinstance(function, MutableMapping):
                raise ContractTypeError.for_value(
                    f"messages[{position}]['tool_calls'][{number}]['function']",
                    "a mutable mapping, so its string arguments can be replaced",
                    function,
                )
            replacements.append((function, _parsed_arguments(function["arguments"])))
    for function, arguments in replacements:
        function["arguments"] = arguments


def _parsed_arguments(text: str) -> object:
    """``json.loads(text)`` when it is a JSON object, else a new ``{}`` (SPEC §2.2.2)."""
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _sequence(value: object, where: str, wording: _Wording) -> Sequence[Any]:
    """``value`` as a sequence (``None`` means empty), else ``ChatResponseContractError``."""
    if value is None:
        return ()
    if not is_sequence(value):
        raise ChatResponseContractError(
            f"vLLM returned {where} that is not a sequence {wording.attaching}: got {type_name(value)}."
        )
    return value


def _ids(value: object, what: str, index: int | None, wording: _Wording) -> list[int]:
    """Token ids as plain ints, else ``ChatResponseContractError`` naming ``what`` and the choice."""
    try:
        return token_ids(value, what)
    except ContractTypeError as error:
        where = "" if index is None else f" for choice_idx={render(index)}"
        raise ChatResponseContractError(
            f"vLLM returned {what}{where} that are not a sequence of ints {wording.attaching}: {error}",
            choice_index=index,
        ) from error


def _indices(items: Sequence[Any], kind: str, short: str, wording: _Wording) -> list[int]:
    """The ``index`` of every item (``kind`` names the items): all must be ints, then pairwise distinct."""
    raw = [getattr(item, "index", None) for item in items]
    converted = list(map(int_or_none, raw))
    if None in converted:
        raise ChatResponseContractError(
            f"vLLM returned a non-int {kind} index {wording.attaching}: {short} index must be an int, got "
            f"{type_name(raw[converted.index(None)])}."
        )
    indices = [value for value in converted if value is not None]
    duplicates = [value for value, count in Counter(indices).items() if count > 1]
    if duplicates:
        raise ChatResponseContractError(
            f"vLLM returned duplicate {kind} indices {wording.attaching}.",
            choice_index=duplicates[0],
        )
    return indices


def _match_choices(
    response: object, request_output: object, wording: _Wording, *, exact: bool = False
) -> list[_Match]:
    """Pair every response choice with the generation output of the same ``index``, in response order.

    ``exact`` also rejects outputs that match no choice (token information); otherwise they are ignored.
    """
    outputs = _sequence(getattr(request_output, "outputs", None), "final_request_output.outputs", wording)
    by_index = dict(zip(_indices(outputs, "generation output", "output", wording), outputs, strict=True))
    choices = _sequence(getattr(response, "choices", None), "response.choices", wording)
    choice_indices = _indices(choices, "response choice", "choice", wording)
    missing = sorted(set(choice_indices) - by_index.keys())
    unexpected = sorted(by_index.keys() - set(choice_indices)) if exact else []
    if missing or unexpected:
        detail = f"missing_choice_indices={render_list(missing)}"
        if exact:
            detail += f", unexpected_output_indices={render_list(unexpected)}"
        raise ChatResponseContractError(
            f"{wording.asked} response choices could not be matched to generation outputs: {detail}.",
            missing_choice_indices=missing,
            unexpected_output_indices=unexpected if exact else None,
        )
    return [(index, choice, by_index[index]) for index, choice in zip(choice_indices, choices, strict=True)]


def _message(choice: object, index: int, wording: _Wording) -> Any:
    message = getattr(choice, "message", None)
    if message is None:
        raise ChatResponseContractError(
            f"{wording.asked} response choice choice_idx={render(index)} has no message object to attach "
            f"{wording.pronoun} to.",
            choice_index=index,
        )
    return message


def _token_information(index: int, output: object) -> tuple[list[int], list[float]]:
    """The generated ids and floored sampled-token log-probs of one output (SPEC §5.1 step 5)."""
    raw_ids = getattr(output, "token_ids", None)
    if raw_ids is None:
        raise ChatResponseContractError(
            f"{_TOKENS.asked} generation output choice_idx={render(index)} did not include token_ids.",
            choice_index=index,
        )
    generated = _ids(raw_ids, "token_ids", index, _TOKENS)
    logprobs = getattr(output, "logprobs", None)
    if logprobs is None:
        if generated:
            raise ChatResponseContractError(
                f"{_TOKENS.asked} generation output choice_idx={render(index)} did not include logprobs.",
                choice_index=index,
                token_count=len(generated),
            )
        return generated, []
    entries = _sequence(logprobs, f"logprobs for choice_idx={render(index)}", _TOKENS)
    if len(generated) != len(entries):
        raise ChatResponseContractError(
            "vLLM returned mismatched generation token IDs and log probabilities for the OpenAI-compatible chat "
            f"endpoint: choice_idx={render(index)}, token_count={len(generated)}, "
            f"logprob_count={len(entries)}.",
            choice_index=index,
            token_count=len(generated),
            logprob_count=len(entries),
        )
    values = sampled_token_logprobs(generated, entries)
    if isinstance(values, LogprobFault):
        raise _logprob_error(index, values)
    return generated, list(map(max, values, itertools.repeat(VLLM_LOGPROB_FLOOR)))


def _logprob_error(index: int, fault: LogprobFault) -> ChatResponseContractError:
    """The chat wording of a sampled-token log-prob fault (SPEC §5.1 step 5)."""
    token_id = fault.token_id
    if fault.kind == "missing":
        return ChatResponseContractError(
            "vLLM generation log probabilities did not include the selected token "
            f"{_TOKENS.attaching}: choice_idx={render(index)}, token_id={render(token_id)}.",
            choice_index=index,
            token_id=token_id,
        )
    where = f"choice_idx={render(index)}, position={fault.position}, token_id={render(token_id)}"
    what = (
        "a log probability that is not a number"
        if fault.kind == "not_a_number"
        else "a non-finite log probability"
    )
    return ChatResponseContractError(
        f"vLLM returned {what} for the selected token {_TOKENS.attaching}: {where}, logprob={render(fault.value)}.",
        choice_index=index,
        token_id=token_id,
    )


def _assign(plan: _Plan, wording: _Wording) -> None:
    """Set every planned message attribute; if one assignment fails, restore all set ones, then raise.

    The previous values are read first, so a getter that raises does so before anything is mutated.
    """
    steps = [
        (index, message, name, value, getattr(message, name, _ABSENT))
        for index, message, fields in plan
        for name, value in fields
    ]
    applied: list[tuple[Any, str, object]] = []
    for index, message, name, value, previous in steps:
        try:
            setattr(message, name, value)
        except BaseException as error:
            unrestored = _restore(applied)
            if not isinstance(error, Exception):
                raise
            outcome = (
                "every attribute already set was restored"
                if not unrestored
                else f"{unrestored} of the {len(applied)} attribute(s) already set could not be restored"
            )
            raise ChatResponseContractError(
                f"could not set message.{name} on response choice choice_idx={render(index)} "
                f"{wording.attaching}: {type_name(error)}: {render_name(error)}; {outcome}. The message object "
                "must accept new attributes (e.g. a pydantic model with extra='allow').",
                choice_index=index,
            ) from error
        applied.append((message, name, previous))


def _restore(applied: list[tuple[Any, str, object]]) -> int:
    """Undo ``applied`` assignments in reverse order; return how many could not be undone."""
    failures = 0
    for message, name, previous in reversed(applied):
        try:
            if previous is _ABSENT:
                delattr(message, name)
            else:
                setattr(message, name, previous)
        except Exception:
            failures += 1
    return failures
