"""Exact-token prompt splicing: keep the model's own prefix tokens, resume the template at the turn boundary.

When a chat endpoint serves turn N it re-renders the whole history with the chat template, and the re-tokenized
history can differ from the tokens the model actually saw and produced.  :func:`splice_prefix_tokens` keeps the
exact model prefix and resumes the template after the matching terminator, found by count (SPEC §2.1–2.3).
:func:`splice_turn` does the same from the chat messages: it renders both templates itself, closed, so the
template prefix can never be rendered with its last turn left open.

This module imports neither torch nor vLLM; terminator counting runs in numpy.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from ._internal.messages import render, render_list, type_name
from ._internal.token_arrays import int_array, member_mask
from .checks import (
    ContractInt,
    int_or_none,
    is_sequence,
    require_bool,
    require_collection,
    require_int,
    require_sequence,
    token_ids,
)
from .errors import ContractTypeError, SpliceError, TurnTokenMismatchError
from .protocols import ChatTokenizerLike, GenerationConfigLike, TokenizerLike

__all__ = [
    "PrefixSplice",
    "check_turn_tokens",
    "replace_prefix_tokens",
    "resolve_terminator_token_ids",
    "splice_prefix_tokens",
    "splice_turn",
    "turn_trajectory",
]

_FIELDS = ("token_ids", "model_cut_end", "template_cut_start")


class PrefixSplice(BaseModel):
    """An exact token splice with its source coordinates: ``token_ids == model[:model_cut_end] + template[template_cut_start:]``.

    Frozen.  Accepts the reference dataclass's positional form ``PrefixSplice(token_ids, model_cut_end,
    template_cut_start)`` as well as keywords; more than three positional arguments, or a field given both
    positionally and by keyword, raises ``ContractTypeError`` (a ``TypeError``).  Invalid values raise pydantic's
    ``ValidationError``.  Equal only to another ``PrefixSplice`` with equal fields.

    >>> PrefixSplice([1, 2, 9], 2, 3) == PrefixSplice(token_ids=[1, 2, 9], model_cut_end=2, template_cut_start=3)
    True
    """

    model_config = ConfigDict(frozen=True, extra="forbid", protected_namespaces=())

    token_ids: list[ContractInt]
    """The final spliced prompt; callers must not mutate it."""
    model_cut_end: ContractInt = Field(ge=0)
    """How many tokens were taken from the model prefix (``0 <= model_cut_end <= len(token_ids)``)."""
    template_cut_start: ContractInt = Field(ge=0)
    """The template index where the verbatim template suffix starts."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if len(args) > len(_FIELDS):
            raise ContractTypeError(
                f"PrefixSplice() takes at most {len(_FIELDS)} positional arguments "
                f"(token_ids, model_cut_end, template_cut_start), got {len(args)}",
                argument="args",
                expected="at most 3 positional arguments",
                actual=str(len(args)),
            )
        for position, value in enumerate(args):
            name = _FIELDS[position]
            if name in kwargs:
                raise ContractTypeError(
                    f"PrefixSplice() got multiple values for argument '{name}' (positionally and by keyword)",
                    argument=name,
                    expected="one value",
                    actual="two values",
                )
            kwargs[name] = value
        super().__init__(**kwargs)

    # ``model_validate`` then validates its input directly instead of calling ``__init__(**input)``, which
    # raises a plain ``TypeError`` for a mapping with non-str keys (pydantic's own ``RootModel`` does this).
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]

    @model_validator(mode="after")
    def _check_cut_end(self) -> PrefixSplice:
        if self.model_cut_end > len(self.token_ids):
            raise ValueError(
                f"model_cut_end={render(self.model_cut_end)} exceeds len(token_ids)={len(self.token_ids)}; "
                "a splice cannot take more model tokens than the final prompt holds"
            )
        return self

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PrefixSplice):
            return NotImplemented
        return (
            self.model_cut_end == other.model_cut_end
            and self.template_cut_start == other.template_cut_start
            and self.token_ids == other.token_ids
        )

    def __hash__(self) -> int:
        return hash((tuple(self.token_ids), self.model_cut_end, self.template_cut_start))


def _summary(name: str, ids: list[int]) -> str:
    return f"{name}={render_list(ids)}"


def _int_collection(value: object, argument: str) -> list[int]:
    """An int, or an iterable of ints, as a list of plain ints; ``ContractTypeError`` otherwise (bools included)."""
    single = int_or_none(value)
    if single is not None:
        return [single]
    expected = "an int or a collection of ints (not bool or str)"
    if isinstance(value, bool | Mapping):
        raise ContractTypeError.for_value(argument, expected, value)
    items = require_collection(value, argument, expected)
    return [require_int(item, f"{argument}[{index}]") for index, item in enumerate(items)]


def _declared_ids(value: object, source: str, *, sequences: bool) -> list[int]:
    """The ids ``source`` declares: none for ``None``, one int, or (when ``sequences``) a list/tuple of ints."""
    if value is None:
        return []
    single = int_or_none(value)
    if single is not None:
        ids = [single]
    elif sequences and isinstance(value, list | tuple):
        ids = [require_int(item, f"{source}[{index}]") for index, item in enumerate(value)]
    else:
        expected = "an int or a list of ints" if sequences else "an int or None"
        raise ContractTypeError.for_value(source, f"{expected} (token ids, not bool, str or float)", value)
    negative = next((i for i in ids if i < 0), None)
    if negative is not None:
        raise SpliceError(
            f"{source} declares the negative token id {render(negative)}; token ids are >= 0, so the model or "
            "its generation_config.json is misconfigured",
            terminators=tuple(sorted(set(ids))),
        )
    return ids


_NO_ATTRIBUTE = object()


def _generation_config_eos(generation_config: object) -> tuple[object, str]:
    """``eos_token_id`` of a mapping or of an object with that attribute, and the source name for messages."""
    if isinstance(generation_config, Mapping):
        return generation_config.get("eos_token_id"), "generation_config['eos_token_id']"
    declared = getattr(generation_config, "eos_token_id", _NO_ATTRIBUTE)
    if declared is _NO_ATTRIBUTE:
        raise ContractTypeError.for_value(
            "generation_config",
            "a mapping (the parsed generation_config.json), an object with an eos_token_id attribute "
            "(transformers.GenerationConfig), or None",
            generation_config,
        )
    return declared, "generation_config.eos_token_id"


GenerationConfigSource = Mapping[str, Any] | GenerationConfigLike
"""Where the turn terminators are declared: the parsed ``generation_config.json`` or a
``transformers.GenerationConfig`` (any object with an ``eos_token_id`` attribute)."""


def resolve_terminator_token_ids(
    tokenizer: TokenizerLike | None, generation_config: GenerationConfigSource | None = None
) -> frozenset[int]:
    """The set of tokens that end a turn: the tokenizer's EOS plus every ``eos_token_id`` of the generation config.

    Pass the result as ``terminator_ids`` to :func:`splice_prefix_tokens`.  Newer chat models end turns on tokens
    other than the tokenizer's EOS (Gemma-4: ``<turn|>`` 106, or ``<|tool_response>`` 50 in a tool loop, while
    its EOS 1 never appears in a conversation); their ``generation_config.json`` lists every terminator.

    ``tokenizer.eos_token_id`` counts when it is an int (``None`` or absent adds nothing).  ``generation_config``
    is the parsed ``generation_config.json`` (a mapping: its ``"eos_token_id"`` key) or a
    ``transformers.GenerationConfig`` (any object with an ``eos_token_id`` attribute); the value may be an int
    or a list/tuple of ints (an absent key or ``None`` adds nothing).  The result may be empty, in which case
    :func:`splice_prefix_tokens` raises its usual ``SpliceError``.

    Raises ``ContractTypeError`` naming ``tokenizer.eos_token_id``, ``generation_config['eos_token_id']`` or
    ``generation_config.eos_token_id`` for any other value there (a bool, a str, a float, a list holding a
    non-int; a list is not accepted from the tokenizer, whose attribute is one id), or naming
    ``generation_config`` for a value that is neither a mapping nor has an ``eos_token_id`` attribute; and
    ``SpliceError`` for a negative id.

    Divergence (SPEC §2.2.1 takes a mapping only): an object with an ``eos_token_id`` attribute, such as
    ``transformers.GenerationConfig.from_pretrained(path)``, is read like the mapping it was loaded from.

    >>> from types import SimpleNamespace
    >>> sorted(resolve_terminator_token_ids(SimpleNamespace(eos_token_id=1), {"eos_token_id": [1, 106, 50]}))
    [1, 50, 106]
    >>> sorted(resolve_terminator_token_ids(None, SimpleNamespace(eos_token_id=[106, 50])))
    [50, 106]
    """
    ids: list[int] = []
    if tokenizer is not None:
        eos = getattr(tokenizer, "eos_token_id", None)
        ids += _declared_ids(eos, "tokenizer.eos_token_id", sequences=False)
    if generation_config is not None:
        declared, source = _generation_config_eos(generation_config)
        ids += _declared_ids(declared, source, sequences=True)
    return frozenset(ids)


def _decoded(decode: Any, ids: list[int]) -> str:
    """``decode(ids)`` rendered for a message, or ``<decode failed: {type}>`` when it raises or is no ``str``."""
    try:
        text = decode(ids)
    except Exception as exc:  # the splice diagnosis must never be masked by a failing decode
        return f"<decode failed: {type_name(exc)}>"
    if not isinstance(text, str):
        return f"<decode failed: {type_name(text)}>"
    return render(text)


def _terminator_set(
    tokenizer: TokenizerLike | None,
    eos: list[int] | None,
    terminators: list[int] | None,
    config_ids: list[int] | None,
) -> tuple[int, ...]:
    """Step 3 of SPEC §2.2: the sorted terminator set, ``terminator_ids`` first, then EOS, then the ids a
    ``generation_config`` declares (``config_ids``) with the tokenizer's EOS, then the tokenizer's EOS alone."""
    if terminators is not None:
        if not terminators:
            raise SpliceError("terminator_ids must not be empty when provided", terminators=())
        return tuple(sorted(set(terminators)))
    if eos is None and config_ids is not None:
        eos = config_ids + (
            []
            if tokenizer is None
            else _declared_ids(
                getattr(tokenizer, "eos_token_id", None), "tokenizer.eos_token_id", sequences=False
            )
        )
    if eos is None and tokenizer is not None:
        tokenizer_eos = getattr(tokenizer, "eos_token_id", None)
        if tokenizer_eos is not None:
            eos = _int_collection(tokenizer_eos, "tokenizer.eos_token_id")
    if not eos:
        raise SpliceError(
            "Tokenizer must have an EOS token ID: pass eos_token_id or terminator_ids, or a tokenizer whose "
            "eos_token_id is set (or a generation_config that declares eos_token_id)"
        )
    return tuple(sorted(set(eos)))


def _no_boundary_error(
    terminators: tuple[int, ...], model: list[int], template_prefix: list[int], template: list[int]
) -> SpliceError:
    """SPEC §2.2 step 5: the template prefix holds no terminator."""
    return SpliceError(
        "No terminator token found in template_prefix_token_ids, so there is no splice boundary to find. "
        f"Terminators searched for: {render_list(terminators)}. "
        f"{_summary('model_prefix_token_ids', model)}; "
        f"{_summary('template_prefix_token_ids', template_prefix)}; {_summary('template_token_ids', template)}",
        terminators=terminators,
        count_needed=0,
    )


def _too_few_error(
    terminators: tuple[int, ...],
    count_needed: int,
    count_seen: int,
    template_prefix: list[int],
    template: list[int],
    tokenizer: TokenizerLike | None,
) -> SpliceError:
    """SPEC §2.2 step 6: the template holds fewer terminators than its prefix; decoded text when possible."""
    decode = getattr(tokenizer, "decode", None)
    decoded = ""
    if callable(decode):
        decoded = (
            f" Decoded template_prefix_token_ids: {_decoded(decode, template_prefix)};"
            f" decoded template_token_ids: {_decoded(decode, template)}."
        )
    return SpliceError(
        f"EOS token #{count_needed} not found in template_token_ids (only found {count_seen} EOS tokens "
        f"total, searching for terminators {render_list(terminators)})! "
        f"{_summary('template_prefix_token_ids', template_prefix)}; "
        f"{_summary('template_token_ids', template)}.{decoded}",
        terminators=terminators,
        count_needed=count_needed,
        count_seen=count_seen,
    )


def _turn_count_error(
    terminators: tuple[int, ...],
    count_needed: int,
    count_model: int,
    ends_with_terminator: bool,
    model: list[int],
    template_prefix: list[int],
) -> SpliceError:
    """The opt-in check of :func:`splice_prefix_tokens`: the two prefixes hold a different number of turns."""
    expected = count_needed if ends_with_terminator else count_needed - 1
    how = (
        "ends with a terminator, so the two counts must be equal"
        if ends_with_terminator
        else "stopped without a terminator (max_tokens), so it holds one fewer"
    )
    if count_model > expected:
        cause = (
            "The template prefix closes fewer turns than the model prefix: it was likely rendered with its last "
            "assistant turn left open (continue_final_message=True, or a chat template that omits the last "
            "terminator), so the cut would land one turn early and the engine would prefill that turn twice. "
            "Render the template prefix with add_generation_prompt=False and continue_final_message=False, or "
            "use splice_turn, which renders it itself."
        )
    else:
        cause = (
            "The template prefix closes more turns than the model prefix: the history holds a turn the model "
            "prefix never saw (a message inserted into the history, or the model prefix of an earlier turn), so "
            "the cut would land after tokens the model never produced. Pass the last turn's prompt_token_ids "
            "plus its generated ids as model_prefix_token_ids."
        )
    return SpliceError(
        f"model_prefix_token_ids holds {count_model} terminators but template_prefix_token_ids holds "
        f"{count_needed}, which implies {expected} (the model prefix {how}). {cause} "
        f"Terminators: {render_list(terminators)}; {_summary('model_prefix_token_ids', model)}; "
        f"{_summary('template_prefix_token_ids', template_prefix)}",
        terminators=terminators,
        count_needed=count_needed,
        count_seen=count_model,
    )


def splice_prefix_tokens(
    *,
    tokenizer: TokenizerLike | None = None,
    model_prefix_token_ids: Sequence[int],
    template_prefix_token_ids: Sequence[int],
    template_token_ids: Sequence[int],
    eos_token_id: int | Sequence[int] | None = None,
    terminator_ids: Iterable[int] | None = None,
    generation_config: GenerationConfigSource | None = None,
    check_turn_count: bool = False,
) -> PrefixSplice:
    """Keep every model-prefix token, then resume the template after its ``count_needed``-th terminator.

    ``count_needed`` is the number of terminators in ``template_prefix_token_ids``; the template cut is found by
    count, not position, so templates that strip history (Qwen3's ``<think>`` blocks) still splice correctly.
    When the model prefix ends with a terminator the model's own is kept and the template resumes after its
    boundary terminator; otherwise (stopped at max_tokens) the template supplies the terminator.  An empty model
    prefix gives the identity splice ``(0, 0)``.  ``tokenizer.decode`` is called only to enrich an error
    message, and only when it is callable.

    The terminator set is ``terminator_ids`` when given, else ``eos_token_id`` (an int or a sequence of ints),
    else, when ``generation_config`` is given, :func:`resolve_terminator_token_ids` of the tokenizer and it, else
    ``tokenizer.eos_token_id`` alone.  That last case is SPEC §2.2's and the reference's: a tokenizer alone
    knows only its EOS, never the extra terminators a model's ``generation_config.json`` lists (Qwen2.5's
    ``<|endoftext|>``, Llama-3's ``<|eom_id|>``, Gemma-4's ``<turn|>``).  A model prefix that stopped on one of
    those then reads as "stopped at max_tokens" and the template adds a second terminator, silently.  Pass
    ``generation_config`` (or ``terminator_ids``) for such models; :func:`splice_turn` takes it too.

    ``check_turn_count=True`` (opt-in, because the reference accepts such calls) also requires the model prefix
    to hold as many terminators as the template prefix implies: as many when the model prefix ends with a
    terminator, one fewer when it stopped at max_tokens.  A template prefix rendered with its last assistant
    turn left open (``continue_final_message=True``, or a chat template that omits the last terminator) holds
    one too few; without the check the cut lands one turn early and the engine prefills that turn twice.

    Raises ``ContractTypeError`` for non-int ids (bools included), a non-bool ``check_turn_count``, or
    ``generation_config`` combined with ``eos_token_id`` or ``terminator_ids`` (which of them would define
    the terminators is ambiguous); ``SpliceError`` (also ``ValueError`` and ``AssertionError``) when no
    terminator is known, ``terminator_ids`` is empty, the template prefix holds no terminator, the template
    holds too few, or (with ``check_turn_count``) the turn counts disagree.  It carries ``.terminators``,
    ``.count_needed`` (the template prefix's count) and ``.count_seen`` (the template's count; for the turn
    count, the model prefix's).

    Divergence: the reference uses ``assert``, which ``python -O`` removes; this always raises ``SpliceError``.
    Divergence: ``eos_token_id`` may also be a sequence of ints, all of which count as terminators.
    Divergence (cut coordinates): newer reference releases report, for a model prefix ending with a terminator,
    ``model_cut_end = len(model) - 1`` and ``template_cut_start = pos``, counting the terminator as part of the
    template suffix.  When the model stopped on another member of the terminator set than the template renders,
    those coordinates break ``final[model_cut_end:] == template[template_cut_start:]``; rl_contracts keeps
    ``model_cut_end = len(model)`` and ``template_cut_start = pos + 1``, which hold that identity in every case
    (SPEC §2.3).  ``token_ids`` is the same in both conventions.

    >>> s = splice_prefix_tokens(model_prefix_token_ids=[100, 2], template_prefix_token_ids=[9, 2, 9, 2],
    ...                          template_token_ids=[9, 2, 9, 2, 77, 88], eos_token_id=2)
    >>> (s.token_ids, s.model_cut_end, s.template_cut_start)
    ([100, 2, 77, 88], 2, 4)
    """
    model = token_ids(model_prefix_token_ids, "model_prefix_token_ids")
    template_prefix = token_ids(template_prefix_token_ids, "template_prefix_token_ids")
    template = token_ids(template_token_ids, "template_token_ids")
    eos = None if eos_token_id is None else _int_collection(eos_token_id, "eos_token_id")
    explicit = None if terminator_ids is None else _int_collection(terminator_ids, "terminator_ids")
    require_bool(check_turn_count, "check_turn_count")
    if generation_config is not None and (eos is not None or explicit is not None):
        given = "terminator_ids" if explicit is not None else "eos_token_id"
        raise ContractTypeError(
            f"generation_config and {given} were both given; pass one of them: {given} is the whole "
            "terminator set, generation_config adds its eos_token_id to the tokenizer's",
            argument="generation_config",
            expected=f"None when {given} is given",
            actual=type_name(generation_config),
        )
    config_ids = None
    if generation_config is not None:
        config_ids = _declared_ids(*_generation_config_eos(generation_config), sequences=True)
    if not model:
        return PrefixSplice.model_construct(token_ids=template, model_cut_end=0, template_cut_start=0)

    terminators = _terminator_set(tokenizer, eos, explicit, config_ids)
    ends_with_terminator = model[-1] in set(terminators)
    count_needed = int(np.count_nonzero(member_mask(int_array(template_prefix), terminators)))
    if count_needed == 0:
        raise _no_boundary_error(terminators, model, template_prefix, template)
    if check_turn_count:
        # list.count runs in C without building an array; a large terminator set goes through numpy instead.
        count_model = (
            sum(map(model.count, terminators))
            if len(terminators) <= 8
            else int(np.count_nonzero(member_mask(int_array(model), terminators)))
        )
        if count_model != (count_needed if ends_with_terminator else count_needed - 1):
            raise _turn_count_error(
                terminators, count_needed, count_model, ends_with_terminator, model, template_prefix
            )
    positions = np.flatnonzero(member_mask(int_array(template), terminators))
    if len(positions) < count_needed:
        raise _too_few_error(terminators, count_needed, len(positions), template_prefix, template, tokenizer)
    pos = int(positions[count_needed - 1])
    cut_start = pos + 1 if ends_with_terminator else pos
    return PrefixSplice.model_construct(
        token_ids=model + template[cut_start:], model_cut_end=len(model), template_cut_start=cut_start
    )


def replace_prefix_tokens(
    tokenizer: TokenizerLike | None,
    model_prefix_token_ids: Sequence[int],
    template_prefix_token_ids: Sequence[int],
    template_token_ids: Sequence[int],
    *,
    eos_token_id: int | Sequence[int] | None = None,
    terminator_ids: Iterable[int] | None = None,
    generation_config: GenerationConfigSource | None = None,
    check_turn_count: bool = False,
) -> list[int]:
    """Return a new list equal to ``splice_prefix_tokens(...).token_ids`` (the reference's list-returning form).

    Raises exactly what :func:`splice_prefix_tokens` raises.
    """
    splice = splice_prefix_tokens(
        tokenizer=tokenizer,
        model_prefix_token_ids=model_prefix_token_ids,
        template_prefix_token_ids=template_prefix_token_ids,
        template_token_ids=template_token_ids,
        eos_token_id=eos_token_id,
        terminator_ids=terminator_ids,
        generation_config=generation_config,
        check_turn_count=check_turn_count,
    )
    return list(splice.token_ids)


_RENDER_KEYS = frozenset(
    {"conversation", "tokenize", "add_generation_prompt", "continue_final_message", "tools"}
)
"""The ``apply_chat_template`` arguments :func:`splice_turn` sets itself."""


def _messages(messages: object) -> list[dict[str, Any]]:
    """``messages`` as new dicts (the caller's mappings are never handed to the template), roles checked."""
    items = require_sequence(messages, "messages", "a sequence of chat messages (mappings with a 'role')")
    copies: list[dict[str, Any]] = []
    for index, message in enumerate(items):
        if not isinstance(message, Mapping):
            raise ContractTypeError.for_value(f"messages[{index}]", "a mapping with a str 'role'", message)
        role = message.get("role")
        if not isinstance(role, str):
            raise ContractTypeError.for_value(f"messages[{index}]['role']", "a str", role)
        copies.append(dict(message))
    return copies


def _rendered_ids(result: object, argument: str) -> list[int]:
    """The token ids ``apply_chat_template(..., tokenize=True)`` returned: a list (transformers 4) or a mapping
    holding ``input_ids`` (transformers 5's ``BatchEncoding``)."""
    if isinstance(result, Mapping):
        if "input_ids" not in result:
            raise ContractTypeError.for_value(
                argument,
                "token ids, or a mapping holding 'input_ids'",
                result,
                actual="a mapping without 'input_ids'",
            )
        result = result["input_ids"]
    return token_ids(result, argument)


def _render(
    tokenizer: ChatTokenizerLike,
    conversation: list[dict[str, Any]],
    *,
    add_generation_prompt: bool,
    options: dict[str, Any],
    argument: str,
) -> list[int]:
    result = tokenizer.apply_chat_template(
        [dict(message) for message in conversation],
        tokenize=True,
        add_generation_prompt=add_generation_prompt,
        continue_final_message=False,
        **options,
    )
    return _rendered_ids(result, argument)


def _render_options(tools: object, chat_template_kwargs: object, caller: str) -> dict[str, Any]:
    """The keyword arguments both renders receive: ``chat_template_kwargs`` (none of the render flags) and
    ``tools`` as new dicts."""
    options: dict[str, Any] = {}
    if chat_template_kwargs is not None:
        if not isinstance(chat_template_kwargs, Mapping) or not all(
            isinstance(key, str) for key in chat_template_kwargs
        ):
            raise ContractTypeError.for_value(
                "chat_template_kwargs", "a mapping with str keys, or None", chat_template_kwargs
            )
        taken = sorted(_RENDER_KEYS.intersection(chat_template_kwargs))
        if taken:
            raise ContractTypeError(
                f"chat_template_kwargs sets {render_list(taken)}, which {caller} sets itself; pass tools as "
                f"tools=..., and leave the render flags to {caller}",
                argument="chat_template_kwargs",
                expected="no key among " + render_list(sorted(_RENDER_KEYS)),
                actual=render_list(taken),
            )
        options.update(chat_template_kwargs)
    if tools is not None:
        options["tools"] = [
            dict(tool) for tool in require_sequence(tools, "tools", "a sequence of tool mappings")
        ]
    return options


def _turn_terminators(
    tokenizer: object, generation_config: object, terminator_ids: Iterable[int] | None
) -> Iterable[int] | None:
    """``terminator_ids``, else the tokenizer's and ``generation_config``'s (``None`` when they declare none)."""
    if generation_config is not None and terminator_ids is not None:
        raise ContractTypeError(
            "generation_config and terminator_ids were both given; pass one of them: terminator_ids is the whole "
            "terminator set, generation_config adds its eos_token_id to the tokenizer's",
            argument="generation_config",
            expected="None when terminator_ids is given",
            actual=type_name(generation_config),
        )
    if terminator_ids is not None:
        return terminator_ids
    return resolve_terminator_token_ids(tokenizer, generation_config) or None  # type: ignore[arg-type]


def splice_turn(
    tokenizer: ChatTokenizerLike,
    messages: Sequence[Mapping[str, Any]],
    model_prefix_token_ids: Sequence[int],
    *,
    generation_config: GenerationConfigSource | None = None,
    terminator_ids: Iterable[int] | None = None,
    add_generation_prompt: bool = True,
    tools: Sequence[Mapping[str, Any]] | None = None,
    chat_template_kwargs: Mapping[str, Any] | None = None,
    check_turn_count: bool = True,
) -> PrefixSplice:
    """Splice the next turn's prompt from the chat history: the model's exact tokens, then the template's new turn.

    ``messages`` is the whole history the next turn is served from; its last assistant message is the turn whose
    exact tokens ``model_prefix_token_ids`` holds (that turn's ``prompt_token_ids`` plus its generated ids).
    The function renders, with ``tokenizer.apply_chat_template(..., tokenize=True)``:

    - the template prefix: ``messages`` up to and including the last assistant message, with
      ``add_generation_prompt=False`` and ``continue_final_message=False``, so its last turn is closed;
    - the template: every message, with ``add_generation_prompt`` (default ``True``, the next turn is generated)
      and ``continue_final_message=False``.

    ``tools`` and ``chat_template_kwargs`` (e.g. ``{"enable_thinking": False}``) go to both renders.  The
    terminators are ``terminator_ids`` when given, else :func:`resolve_terminator_token_ids` of the tokenizer and
    ``generation_config`` (a mapping or a ``transformers.GenerationConfig``); with neither, only the tokenizer's
    EOS, which misses the extra terminators a ``generation_config.json`` lists (see :func:`splice_prefix_tokens`).
    Then it returns :func:`splice_prefix_tokens` of the three, with ``check_turn_count`` on by default: a chat
    template that omits the terminator of a final assistant message is caught here, not prefilled twice.

    With no assistant message in ``messages``, ``model_prefix_token_ids`` must be empty and the result is the
    identity splice of the template.  Nothing is mutated: the template receives copies of the messages.  Before
    rendering a tool-call history for a template that needs mapping arguments (Gemma-4's), run
    ``rl_contracts.chat.normalize_tool_call_arguments`` on it.

    Raises:
        ContractTypeError: ``tokenizer`` has no callable ``apply_chat_template``; ``messages`` is not a sequence
            of mappings with a str ``role``; ``chat_template_kwargs`` is not a mapping of str keys or sets one of
            the arguments this function sets (``tokenize``, ``add_generation_prompt``,
            ``continue_final_message``, ``conversation``, ``tools``); a render returned something other than
            token ids (or a mapping holding ``input_ids``); ``generation_config`` and ``terminator_ids`` were both
            given; or what :func:`splice_prefix_tokens` and :func:`resolve_terminator_token_ids` raise.
        SpliceError: the model prefix is non-empty but ``messages`` hold no assistant message, or what
            :func:`splice_prefix_tokens` raises (the turn-count check included).

    Errors raised by ``apply_chat_template`` itself (a template that rejects the messages) propagate unchanged.
    """
    render_chat = getattr(tokenizer, "apply_chat_template", None)
    if not callable(render_chat):
        raise ContractTypeError.for_value(
            "tokenizer",
            "a tokenizer with a callable apply_chat_template (a transformers tokenizer)",
            tokenizer,
        )
    conversation = _messages(messages)
    model = token_ids(model_prefix_token_ids, "model_prefix_token_ids")
    require_bool(add_generation_prompt, "add_generation_prompt")
    require_bool(check_turn_count, "check_turn_count")
    options = _render_options(tools, chat_template_kwargs, "splice_turn")
    # An empty resolved set falls back to splice_prefix_tokens' own "no EOS" error (for a non-empty model prefix).
    terminators = _turn_terminators(tokenizer, generation_config, terminator_ids)
    last_assistant = next(
        (
            index
            for index in range(len(conversation) - 1, -1, -1)
            if conversation[index]["role"] == "assistant"
        ),
        None,
    )
    template = _render(
        tokenizer,
        conversation,
        add_generation_prompt=add_generation_prompt,
        options=options,
        argument="tokenizer.apply_chat_template(messages)",
    )
    if last_assistant is None:
        if model:
            raise SpliceError(
                f"messages hold no assistant message ({len(conversation)} messages), so there is no model turn "
                f"to keep, but model_prefix_token_ids holds {len(model)} tokens; pass the history that ends with "
                "the turn those tokens produced, or an empty model prefix for a first turn"
            )
        return PrefixSplice.model_construct(token_ids=template, model_cut_end=0, template_cut_start=0)
    template_prefix = _render(
        tokenizer,
        conversation[: last_assistant + 1],
        add_generation_prompt=False,
        options=options,
        argument=f"tokenizer.apply_chat_template(messages[:{last_assistant + 1}])",
    )
    return splice_prefix_tokens(
        tokenizer=tokenizer,
        model_prefix_token_ids=model,
        template_prefix_token_ids=template_prefix,
        template_token_ids=template,
        terminator_ids=terminators,
        check_turn_count=check_turn_count,
    )


# ---------------------------------------------------------------------------------------------------- multi-turn TITO


def _difference(expected: list[int], actual: list[int]) -> tuple[int, list[int], list[int]]:
    """Where two id lists first differ, and what ``expected`` has there that ``actual`` lacks and vice versa
    (the middle left after their common prefix and common suffix)."""
    prefix = next((i for i, (a, b) in enumerate(zip(expected, actual, strict=False)) if a != b), None)
    if prefix is None:
        prefix = min(len(expected), len(actual))
    room = min(len(expected), len(actual)) - prefix
    suffix = 0
    while suffix < room and expected[-1 - suffix] == actual[-1 - suffix]:
        suffix += 1
    return prefix, expected[prefix : len(expected) - suffix], actual[prefix : len(actual) - suffix]


def _segment_error(
    turn: int, where: str, expected: list[int], actual: list[int], offset: int
) -> TurnTokenMismatchError | None:
    """The mismatch of one template segment (``None`` when equal), positioned in the built ids."""
    if expected == actual:
        return None
    index, missing, extra = _difference(expected, actual)
    what = []
    if missing:
        what.append(f"the template has {render_list(missing)} there that the built ids lack")
    if extra:
        what.append(f"the built ids hold {render_list(extra)} that the template does not")
    return TurnTokenMismatchError(
        f"turn {turn} ({where}): the ids built turn by turn differ from the chat template's full render at "
        f"position {offset + index}: {' and '.join(what)}. Learner and engine would both train on ids no render of "
        "these messages produces; build each non-assistant turn from the template's full render (splice_turn "
        "does), keeping the separator the template puts after a turn's terminator",
        turn=turn,
        position=offset + index,
        missing_ids=tuple(missing),
        extra_ids=tuple(extra),
    )


def _tito_spans(value: object, length: int, assistants: int) -> list[tuple[int, int]]:
    """``generated_spans`` checked: one ``(start, end)`` pair of ints per assistant message, in order, within
    ``[0, length]``, not overlapping."""
    items = require_sequence(
        value, "generated_spans", "a sequence of (start, end) pairs, one per assistant turn"
    )
    spans: list[tuple[int, int]] = []
    for turn, item in enumerate(items):
        if not is_sequence(item) or len(item) != 2:
            raise ContractTypeError.for_value(f"generated_spans[{turn}]", "a (start, end) pair of ints", item)
        start, end = (require_int(bound, f"generated_spans[{turn}]") for bound in item)
        floor = spans[-1][1] if spans else 0
        if not floor <= start <= end <= length:
            raise TurnTokenMismatchError(
                f"generated_spans[{turn}]=({start}, {end}) is not a span of token_ids after the previous turn: "
                f"spans must satisfy {floor} <= start <= end <= {length} (len(token_ids)), in turn order",
                turn=turn,
                position=start,
            )
        spans.append((start, end))
    if len(spans) != assistants:
        raise TurnTokenMismatchError(
            f"generated_spans holds {len(spans)} turns but messages hold {assistants} assistant messages; give the "
            "span of every generated turn, one per assistant message, in order",
            turn=min(len(spans), assistants),
        )
    return spans


def _nth(positions: np.ndarray[Any, Any], count: int, template: list[int], what: str) -> int:
    """The index in the template of its ``count``-th terminator (1-based), or a mismatch naming ``what``."""
    if count > len(positions):
        raise TurnTokenMismatchError(
            f"the chat template's full render holds {len(positions)} terminators but {what} needs terminator "
            f"#{count}: the template does not end every message with a terminator, so its turns cannot be told "
            "apart by count; pass terminator_ids",
            position=len(template),
        )
    return int(positions[count - 1])


def _last_terminator(ids: list[int], terminators: Sequence[int]) -> int:
    """The index of the last terminator of ``ids`` (which holds one)."""
    return int(np.flatnonzero(member_mask(int_array(ids), terminators))[-1])


_id_list = token_ids
"""``checks.token_ids`` under a name :func:`check_turn_tokens`'s ``token_ids`` argument does not shadow."""


def check_turn_tokens(
    tokenizer: ChatTokenizerLike,
    messages: Sequence[Mapping[str, Any]],
    token_ids: Sequence[int],
    generated_spans: Sequence[tuple[int, int]],
    *,
    add_generation_prompt: bool = False,
    generation_config: GenerationConfigSource | None = None,
    terminator_ids: Iterable[int] | None = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    chat_template_kwargs: Mapping[str, Any] | None = None,
) -> None:
    """Check a multi-turn prompt built turn by turn (token in, token out) against the chat template's full render.

    ``token_ids`` is the trajectory the trainer built and ``generated_spans`` the ``[start, end)`` of each of the
    model's own turns in it, one per assistant message of ``messages``, in order (:func:`turn_trajectory` gives
    both from per-turn records, e.g. :func:`splice_turn`'s prompts and the generated ids).  The model's turns may
    differ from the render (its exact tokens; ``<think>`` blocks a template strips); everything else must equal
    ``tokenizer.apply_chat_template(messages, add_generation_prompt=...)`` exactly, boundaries included:

    - segment 0, before the first generated turn, equals the render up to the first assistant turn's content;
    - segment ``k``, after generated turn ``k - 1``, equals the render from the terminator that closes that
      assistant turn up to the next one's content (or to the end).  A generated turn that ends with its own
      terminator keeps it (the template's is dropped, as :func:`splice_prefix_tokens` does); one cut at
      ``max_tokens`` must be followed by the template's terminator.  When ``messages`` end with the last
      generated turn and ``token_ids`` end with it too, the template's tail after it is not compared.

    The template's turns are told apart by counting terminators (every message ends with one, as the splice
    assumes): ``terminator_ids``, else :func:`resolve_terminator_token_ids` of the tokenizer and
    ``generation_config``.  Each assistant turn's header is taken from a render with ``add_generation_prompt``
    (what the model was prompted with), so a template whose generation prompt differs from its history's header
    is reported too.  One render per assistant turn plus the full one.

    Raises:
        ContractTypeError: what :func:`splice_turn` raises for the tokenizer, messages, renders and options;
            ``token_ids`` not ints; ``generated_spans`` not pairs of ints.
        TurnTokenMismatchError: spans that do not match the assistant messages (count, order, bounds), a template
            whose terminators cannot be counted, or the first segment that differs: ``.turn``, ``.position``
            (index in ``token_ids``), ``.missing_ids`` and ``.extra_ids`` (verl #6921: the separator dropped at an
            assistant-to-tool boundary is ``missing_ids=(separator,)``).
        SpliceError: no terminator is known.

    Errors raised by ``apply_chat_template`` itself propagate unchanged.
    """
    if not callable(getattr(tokenizer, "apply_chat_template", None)):
        raise ContractTypeError.for_value(
            "tokenizer",
            "a tokenizer with a callable apply_chat_template (a transformers tokenizer)",
            tokenizer,
        )
    conversation = _messages(messages)
    built = _id_list(token_ids, "token_ids")
    require_bool(add_generation_prompt, "add_generation_prompt")
    options = _render_options(tools, chat_template_kwargs, "check_turn_tokens")
    declared = _turn_terminators(tokenizer, generation_config, terminator_ids)
    terminators = _terminator_set(
        tokenizer, None, None if declared is None else _int_collection(declared, "terminator_ids"), None
    )
    assistants = [index for index, message in enumerate(conversation) if message["role"] == "assistant"]
    spans = _tito_spans(generated_spans, len(built), len(assistants))

    def rendered(count: int, generation_prompt: bool) -> list[int]:
        return _render(
            tokenizer,
            conversation[:count],
            add_generation_prompt=generation_prompt,
            options=options,
            argument=f"tokenizer.apply_chat_template(messages[:{count}])",
        )

    template = rendered(len(conversation), add_generation_prompt)
    closing = np.flatnonzero(member_mask(int_array(template), terminators))
    bounds: list[
        tuple[int, int]
    ] = []  # each assistant turn's content in the template: [start, closing terminator)
    for turn, (message_index, span) in enumerate(zip(assistants, spans, strict=True)):
        prompt = rendered(message_index, True)
        count = int(member_mask(int_array(prompt), terminators).sum())
        start = _nth(closing, count, template, f"assistant turn {turn}") + 1 if count else 0
        header = prompt[_last_terminator(prompt, terminators) + 1 :] if count else prompt
        error = _segment_error(
            turn,
            f"the header of assistant turn {turn}, messages[{message_index}], as prompted vs in the full render",
            template[start : start + len(header)],
            header,
            max(span[0] - len(header), 0),
        )
        if error is not None:
            raise error
        bounds.append(
            (start + len(header), _nth(closing, count + 1, template, f"the end of assistant turn {turn}"))
        )
    _compare_segments(
        built,
        spans,
        template,
        bounds,
        terminators,
        ends_with_model=assistants[-1:] == [len(conversation) - 1] and not add_generation_prompt,
    )


def _compare_segments(
    built: list[int],
    spans: list[tuple[int, int]],
    template: list[int],
    bounds: list[tuple[int, int]],
    terminators: Sequence[int],
    *,
    ends_with_model: bool,
) -> None:
    """Every non-assistant segment of ``built`` equals the template's (see :func:`check_turn_tokens`)."""
    for turn in range(len(spans) + 1):
        begin = spans[turn - 1][1] if turn else 0
        stop = spans[turn][0] if turn < len(spans) else len(built)
        expected_begin = bounds[turn - 1][1] if turn else 0
        if turn and begin > spans[turn - 1][0] and built[begin - 1] in terminators:
            expected_begin += 1  # the model's own terminator closes its turn; the template's is dropped
        expected_end = bounds[turn][0] if turn < len(spans) else len(template)
        if turn == len(spans) and turn and ends_with_model and begin == len(built):
            return  # the trajectory ends with the model's last turn: nothing of the template follows it
        where = "before the first generated turn" if turn == 0 else f"after generated turn {turn - 1}"
        error = _segment_error(turn, where, template[expected_begin:expected_end], built[begin:stop], begin)
        if error is not None:
            raise error


def turn_trajectory(
    turns: Sequence[tuple[Sequence[int], Sequence[int]]],
) -> tuple[list[int], list[tuple[int, int]]]:
    """The trajectory of a multi-turn rollout and its generated spans, from per-turn ``(prompt, generated)`` ids.

    Turn ``k``'s prompt is what the engine prefilled (e.g. ``splice_turn(...).token_ids`` or a trainer's own
    running ids) and ``generated`` its output ids.  Token in, token out: every prompt after the first must start
    with the previous prompt plus its generated ids, exactly (an earlier turn re-tokenized is a mismatch).
    Returns the last prompt plus its generated ids, and ``[start, end)`` of every turn's generated ids in it,
    ready for :func:`check_turn_tokens`.

    Raises:
        ContractTypeError: ``turns`` is not a sequence of ``(prompt, generated)`` pairs of id sequences.
        TurnTokenMismatchError: turn ``k``'s prompt does not extend turn ``k - 1``'s ids (``.turn``,
            ``.position``, ``.missing_ids``, ``.extra_ids``).

    >>> turn_trajectory([([1, 2], [7, 9]), ([1, 2, 7, 9, 3], [8])])
    ([1, 2, 7, 9, 3, 8], [(2, 4), (5, 6)])
    """
    items = require_sequence(turns, "turns", "a sequence of (prompt_token_ids, generated_token_ids) pairs")
    previous: list[int] = []
    spans: list[tuple[int, int]] = []
    for turn, item in enumerate(items):
        if not is_sequence(item) or len(item) != 2:
            raise ContractTypeError.for_value(
                f"turns[{turn}]", "a (prompt_token_ids, generated_token_ids) pair", item
            )
        prompt = _id_list(item[0], f"turns[{turn}][0]")
        generated = _id_list(item[1], f"turns[{turn}][1]")
        if prompt[: len(previous)] != previous:
            index, missing, extra = _difference(previous, prompt[: len(previous)])
            raise TurnTokenMismatchError(
                f"turn {turn}: its prompt does not start with turn {turn - 1}'s prompt and generated ids; at "
                f"position {index} turn {turn - 1} has {render_list(missing)} where the prompt holds "
                f"{render_list(extra)}. Token in, token out keeps every earlier id: never re-tokenize the history",
                turn=turn,
                position=index,
                missing_ids=tuple(missing),
                extra_ids=tuple(extra),
            )
        spans.append((len(prompt), len(prompt) + len(generated)))
        previous = prompt + generated
    return previous, spans
