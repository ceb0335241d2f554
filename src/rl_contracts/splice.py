"""Exact-token prompt splicing: keep the model's own prefix tokens, resume the template at the turn boundary.

When a chat endpoint serves turn N it re-renders the whole history with the chat template, and the re-tokenized
history can differ from the tokens the model actually saw and produced.  :func:`splice_prefix_tokens` keeps the
exact model prefix and resumes the template after the matching terminator, found by count (SPEC §2.1–2.3).

This module imports neither torch nor vLLM; terminator counting runs in numpy.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from ._messages import render, render_list, type_name
from ._token_arrays import int_array, member_mask
from .checks import ContractInt, int_or_none, require_collection, require_int, token_ids
from .errors import ContractTypeError, SpliceError
from .protocols import TokenizerLike

__all__ = ["PrefixSplice", "replace_prefix_tokens", "resolve_terminator_token_ids", "splice_prefix_tokens"]

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


def resolve_terminator_token_ids(
    tokenizer: TokenizerLike | None, generation_config: Mapping[str, Any] | None = None
) -> frozenset[int]:
    """The set of tokens that end a turn: the tokenizer's EOS plus every ``eos_token_id`` of the generation config.

    Pass the result as ``terminator_ids`` to :func:`splice_prefix_tokens`.  Newer chat models end turns on tokens
    other than the tokenizer's EOS (Gemma-4: ``<turn|>`` 106, or ``<|tool_response>`` 50 in a tool loop, while
    its EOS 1 never appears in a conversation); their ``generation_config.json`` lists every terminator.

    ``tokenizer.eos_token_id`` counts when it is an int (``None`` or absent adds nothing); ``generation_config
    ["eos_token_id"]`` may be an int or a list/tuple of ints (an absent key or ``None`` adds nothing).  The
    result may be empty, in which case :func:`splice_prefix_tokens` raises its usual ``SpliceError``.

    Raises ``ContractTypeError`` naming ``tokenizer.eos_token_id`` or ``generation_config['eos_token_id']`` for
    any other value there (a bool, a str, a float, a list holding a non-int; a list is not accepted from the
    tokenizer, whose attribute is one id) or for a ``generation_config`` that is no mapping, and ``SpliceError``
    for a negative id.

    >>> from types import SimpleNamespace
    >>> sorted(resolve_terminator_token_ids(SimpleNamespace(eos_token_id=1), {"eos_token_id": [1, 106, 50]}))
    [1, 50, 106]
    """
    ids: list[int] = []
    if tokenizer is not None:
        eos = getattr(tokenizer, "eos_token_id", None)
        ids += _declared_ids(eos, "tokenizer.eos_token_id", sequences=False)
    if generation_config is not None:
        if not isinstance(generation_config, Mapping):
            raise ContractTypeError.for_value(
                "generation_config",
                "a mapping (the parsed generation_config.json) or None",
                generation_config,
            )
        declared = generation_config.get("eos_token_id")
        ids += _declared_ids(declared, "generation_config['eos_token_id']", sequences=True)
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
    tokenizer: TokenizerLike | None, eos: list[int] | None, terminators: list[int] | None
) -> tuple[int, ...]:
    """Step 3 of SPEC §2.2: the sorted terminator set, ``terminator_ids`` first, then EOS."""
    if terminators is not None:
        if not terminators:
            raise SpliceError("terminator_ids must not be empty when provided", terminators=())
        return tuple(sorted(set(terminators)))
    if eos is None and tokenizer is not None:
        tokenizer_eos = getattr(tokenizer, "eos_token_id", None)
        if tokenizer_eos is not None:
            eos = _int_collection(tokenizer_eos, "tokenizer.eos_token_id")
    if not eos:
        raise SpliceError(
            "Tokenizer must have an EOS token ID: pass eos_token_id or terminator_ids, or a tokenizer whose "
            "eos_token_id is set"
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


def splice_prefix_tokens(
    *,
    tokenizer: TokenizerLike | None = None,
    model_prefix_token_ids: Sequence[int],
    template_prefix_token_ids: Sequence[int],
    template_token_ids: Sequence[int],
    eos_token_id: int | Sequence[int] | None = None,
    terminator_ids: Iterable[int] | None = None,
) -> PrefixSplice:
    """Keep every model-prefix token, then resume the template after its ``count_needed``-th terminator.

    ``count_needed`` is the number of terminators in ``template_prefix_token_ids``; the template cut is found by
    count, not position, so templates that strip history (Qwen3's ``<think>`` blocks) still splice correctly.
    When the model prefix ends with a terminator the model's own is kept and the template resumes after its
    boundary terminator; otherwise (stopped at max_tokens) the template supplies the terminator.  An empty model
    prefix gives the identity splice ``(0, 0)``.  The terminator set is ``terminator_ids`` when given, else
    ``eos_token_id`` (an int or a sequence of ints), else ``tokenizer.eos_token_id``.  ``tokenizer.decode`` is
    called only to enrich an error message, and only when it is callable.

    Raises ``ContractTypeError`` for non-int ids (bools included) and ``SpliceError`` (also ``ValueError`` and
    ``AssertionError``) when no terminator is known, ``terminator_ids`` is empty, the template prefix holds no
    terminator, or the template holds too few; it carries ``.terminators``, ``.count_needed`` and ``.count_seen``.

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
    if not model:
        return PrefixSplice.model_construct(token_ids=template, model_cut_end=0, template_cut_start=0)

    terminators = _terminator_set(tokenizer, eos, explicit)
    ends_with_terminator = model[-1] in set(terminators)
    count_needed = int(np.count_nonzero(member_mask(int_array(template_prefix), terminators)))
    if count_needed == 0:
        raise _no_boundary_error(terminators, model, template_prefix, template)
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
    )
    return list(splice.token_ids)
