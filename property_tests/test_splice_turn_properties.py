"""Properties of the message-level splice ``splice_turn`` and the opt-in turn-count check of ``splice_prefix_tokens``.

Conversations are rendered by :class:`rl_contracts.testing.chat_tokenizer.StandInChatTokenizer` (a real Jinja chat
template); the model prefix is the previous turn's prompt and the model's reply, with the text re-tokenized at
random (spelled per character or as whole words), ending with EOS or cut at max_tokens.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rl_contracts.errors import SpliceError
from rl_contracts.splice import splice_prefix_tokens, splice_turn
from rl_contracts.testing import assert_contract_error
from rl_contracts.testing.chat_tokenizer import (
    CLOSED_TEMPLATE,
    OPEN_LAST_TURN_TEMPLATE,
    SPECIAL_TOKENS,
    THINK_STRIPPING_TEMPLATE,
    WORDS,
    StandInChatTokenizer,
)

TOKENIZERS = {
    name: StandInChatTokenizer(template)
    for name, template in (
        ("closed", CLOSED_TEMPLATE),
        ("think", THINK_STRIPPING_TEMPLATE),
        ("open", OPEN_LAST_TURN_TEMPLATE),
    )
}
EOS = 2
ROLE_IDS = [TOKENIZERS["closed"].get_vocab()[role] for role in ("<|system|>", "<|user|>", "<|assistant|>")]
_SPECIAL = re.compile("(" + "|".join(re.escape(token) for token in SPECIAL_TOKENS) + ")")

texts = st.lists(st.sampled_from([*WORDS, "a", "b"]), min_size=1, max_size=4).map(" ".join)


@dataclass(frozen=True)
class Turn:
    """A history ending with the model's reply and a new message, and the model's exact tokens of it."""

    tokenizer: StandInChatTokenizer
    messages: list[dict[str, Any]]
    model_prefix: list[int]
    stopped_on_eos: bool


def respelled(draw: st.DrawFn, tokenizer: StandInChatTokenizer, text: str) -> list[int]:
    """``text`` tokenized as a model might have produced it: each plain-text piece whole or per character."""
    vocab = tokenizer.get_vocab()
    ids: list[int] = []
    for piece in _SPECIAL.split(text):
        if piece in vocab or not draw(st.booleans()):
            ids += tokenizer.encode(piece, add_special_tokens=False)
        else:
            ids += [vocab[character] for character in piece]
    return ids


@st.composite
def turns(draw: st.DrawFn, *, template: str | None = None) -> Turn:
    """A conversation of 1-3 exchanges (optionally a system message) and the model prefix of its last reply."""
    name = template or draw(st.sampled_from(["closed", "think"]))
    tokenizer = TOKENIZERS[name]
    messages: list[dict[str, Any]] = []
    if draw(st.booleans()):
        messages.append({"role": "system", "content": draw(texts)})
    for _ in range(draw(st.integers(1, 3))):
        messages.append({"role": "user", "content": draw(texts)})
        think = "<think>" + draw(texts) + "</think>" if draw(st.booleans()) else ""
        messages.append({"role": "assistant", "content": think + draw(texts)})
    prompt_text = tokenizer.apply_chat_template(messages[:-1], tokenize=False, add_generation_prompt=True)
    stopped_on_eos = draw(st.booleans())
    model = respelled(draw, tokenizer, prompt_text) + respelled(draw, tokenizer, messages[-1]["content"])
    model += [EOS] if stopped_on_eos else []
    messages.append({"role": draw(st.sampled_from(["user", "system"])), "content": draw(texts)})
    return Turn(tokenizer, messages, model, stopped_on_eos)


def role_counts(ids: list[int]) -> list[int]:
    return [ids.count(role) for role in ROLE_IDS]


@given(turns())
def test_splice_turn_keeps_the_model_prefix_and_every_message_once(turn: Turn) -> None:
    """For closed templates (think-stripping included): ``F == M + T[t:]`` with ``c == len(M)``; every role marker
    occurs in ``F`` exactly as often as in the template ``T`` (no turn prefilled twice or lost); the turn-count
    check passes; the inputs are unchanged; and the result equals ``splice_prefix_tokens`` of the two closed
    renders."""
    before = copy.deepcopy(turn.messages)
    splice = splice_turn(turn.tokenizer, turn.messages, turn.model_prefix)
    template = turn.tokenizer.apply_chat_template(turn.messages, add_generation_prompt=True)
    final, cut_end, cut_start = splice.token_ids, splice.model_cut_end, splice.template_cut_start
    assert cut_end == len(turn.model_prefix)
    assert final == turn.model_prefix + template[cut_start:]
    assert role_counts(final) == role_counts(template)
    assert turn.messages == before
    prefix = turn.tokenizer.apply_chat_template(turn.messages[:-1])
    assert splice == splice_prefix_tokens(
        model_prefix_token_ids=turn.model_prefix,
        template_prefix_token_ids=prefix,
        template_token_ids=template,
        eos_token_id=EOS,
    )


@given(turns())
def test_open_last_turn_prefix_always_fails_the_check_and_otherwise_duplicates(turn: Turn) -> None:
    """A template prefix rendered with ``continue_final_message=True`` always fails ``check_turn_count=True`` with a
    ``SpliceError`` within the error contract; without the check (the reference's behaviour) the splice holds one
    role marker more than the template: the last assistant turn is prefilled twice."""
    template = turn.tokenizer.apply_chat_template(turn.messages, add_generation_prompt=True)
    open_prefix = turn.tokenizer.apply_chat_template(turn.messages[:-1], continue_final_message=True)
    arguments: dict[str, Any] = {
        "model_prefix_token_ids": turn.model_prefix,
        "template_prefix_token_ids": open_prefix,
        "template_token_ids": template,
        "eos_token_id": EOS,
    }
    with pytest.raises(SpliceError) as info:
        splice_prefix_tokens(check_turn_count=True, **arguments)
    assert_contract_error(info.value)
    assert (info.value.count_needed, info.value.count_seen) == (
        open_prefix.count(EOS),
        turn.model_prefix.count(EOS),
    )
    assert info.value.count_seen == open_prefix.count(EOS) + (1 if turn.stopped_on_eos else 0)
    unchecked = splice_prefix_tokens(**arguments)
    assert sum(role_counts(unchecked.token_ids)) == sum(role_counts(template)) + 1


@given(turns(template="open"))
def test_splice_turn_rejects_a_template_that_leaves_the_last_turn_open(turn: Turn) -> None:
    """With a chat template that omits a final assistant message's EOS, ``splice_turn`` (check on by default)
    always raises ``SpliceError``, never a splice that prefills the last turn twice."""
    with pytest.raises(SpliceError) as info:
        splice_turn(turn.tokenizer, turn.messages, turn.model_prefix)
    assert_contract_error(info.value)


@given(turns(), st.booleans())
def test_turn_count_check_never_changes_a_result(turn: Turn, check: bool) -> None:
    """Whenever ``check_turn_count=True`` passes, its result equals the unchecked splice's."""
    arguments: dict[str, Any] = {
        "model_prefix_token_ids": turn.model_prefix,
        "template_prefix_token_ids": turn.tokenizer.apply_chat_template(turn.messages[:-1]),
        "template_token_ids": turn.tokenizer.apply_chat_template(turn.messages, add_generation_prompt=True),
        "eos_token_id": EOS,
    }
    assert splice_prefix_tokens(check_turn_count=check, **arguments) == splice_prefix_tokens(**arguments)
