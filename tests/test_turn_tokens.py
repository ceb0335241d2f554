"""Multi-turn token in, token out: a trajectory built turn by turn against the chat template's full render.

The tokenizer is :class:`rl_contracts.testing.chat_tokenizer.StandInChatTokenizer` rendering real Jinja chat
templates; :data:`SEPARATED_TEMPLATE` puts a newline after each turn's EOS, as ChatML (Qwen) does, which is where
verl #6921 dropped one id at every assistant-to-tool boundary.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

import pytest

from rl_contracts.errors import ContractTypeError, TurnTokenMismatchError
from rl_contracts.splice import check_turn_tokens, splice_turn, turn_trajectory
from rl_contracts.testing import assert_contract_error
from rl_contracts.testing.chat_tokenizer import (
    CLOSED_TEMPLATE,
    SEPARATED_TEMPLATE,
    THINK_STRIPPING_TEMPLATE,
    WORDS,
    StandInChatTokenizer,
)

TOKENIZER = StandInChatTokenizer(SEPARATED_TEMPLATE, words=(*WORDS, "\n"))
NEWLINE = TOKENIZER.get_vocab()["\n"]
EOS = 2
MESSAGES = [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": "call the tool"},
    {"role": "assistant", "content": "tool call"},
    {"role": "tool", "content": "42"},
    {"role": "assistant", "content": "the answer is 42"},
]


def _text(text: str) -> list[int]:
    return TOKENIZER.encode(text, add_special_tokens=False)


def _mismatch(call: Any) -> TurnTokenMismatchError:
    with pytest.raises(TurnTokenMismatchError) as info:
        call()
    assert_contract_error(info.value)
    return info.value


FIRST_PROMPT = TOKENIZER.apply_chat_template(MESSAGES[:2], add_generation_prompt=True)
FIRST = [*_text("tool call"), EOS]
SECOND = [*_text("the answer is 42"), EOS]


def test_the_dropped_separator_of_verl_6921_is_named_with_turn_position_and_id() -> None:
    """The tool turn rendered in isolation after the model's EOS lacks the template's newline: turn 1 misses it."""
    isolated = TOKENIZER.apply_chat_template(MESSAGES[3:4], add_generation_prompt=True)[
        1:
    ]  # no BOS mid-sequence
    second_prompt = FIRST_PROMPT + FIRST + isolated
    ids, spans = turn_trajectory([(FIRST_PROMPT, FIRST), (second_prompt, SECOND)])
    err = _mismatch(lambda: check_turn_tokens(TOKENIZER, MESSAGES, ids, spans))
    position = len(FIRST_PROMPT) + len(FIRST)
    assert (err.turn, err.position, err.missing_ids, err.extra_ids) == (1, position, (NEWLINE,), ())
    assert err.message.startswith("turn 1 (after generated turn 0): ")
    assert f"at position {position}: the template has [{NEWLINE}]" in err.message
    clone = pickle.loads(pickle.dumps(err))
    assert (clone.turn, clone.missing_ids) == (1, (NEWLINE,))


def test_splice_turn_outputs_pass() -> None:
    """splice_turn keeps the model's ids and resumes the full render after its EOS, separator included."""
    second = splice_turn(TOKENIZER, MESSAGES[:4], FIRST_PROMPT + FIRST)
    ids, spans = turn_trajectory([(FIRST_PROMPT, FIRST), (second.token_ids, SECOND)])
    check_turn_tokens(TOKENIZER, MESSAGES, ids, spans)
    cut = [*_text("tool")]  # stopped at max_tokens: the template supplies the EOS
    second = splice_turn(TOKENIZER, MESSAGES[:4], FIRST_PROMPT + cut)
    ids, spans = turn_trajectory([(FIRST_PROMPT, cut), (second.token_ids, SECOND)])
    check_turn_tokens(TOKENIZER, MESSAGES, ids, spans)


def test_a_trainers_own_loop_with_the_separator_passes_and_without_fails() -> None:
    """A hand-built loop that appends the separator, then the tool turn, passes; an extra id is named as extra."""
    tool_turn = TOKENIZER.apply_chat_template(MESSAGES[3:4], add_generation_prompt=True)[1:]
    good = FIRST_PROMPT + FIRST + [NEWLINE] + tool_turn + SECOND
    spans = [(len(FIRST_PROMPT), len(FIRST_PROMPT) + len(FIRST)), (len(good) - len(SECOND), len(good))]
    check_turn_tokens(TOKENIZER, MESSAGES, good, spans)
    doubled = FIRST_PROMPT + FIRST + [NEWLINE, NEWLINE] + tool_turn + SECOND
    spans = [spans[0], (len(doubled) - len(SECOND), len(doubled))]
    err = _mismatch(lambda: check_turn_tokens(TOKENIZER, MESSAGES, doubled, spans))
    assert (err.turn, err.missing_ids, err.extra_ids) == (1, (), (NEWLINE,))


def test_the_models_own_tokens_may_differ_from_the_render() -> None:
    """Assistant content is the model's exact ids (spelled in pieces here), and a stripped <think> is not compared."""
    pieces = [TOKENIZER.get_vocab()[c] for c in "tool call"] + [EOS]
    second = splice_turn(TOKENIZER, MESSAGES[:4], FIRST_PROMPT + pieces)
    ids, spans = turn_trajectory([(FIRST_PROMPT, pieces), (second.token_ids, SECOND)])
    check_turn_tokens(TOKENIZER, MESSAGES, ids, spans)
    thinking = StandInChatTokenizer(THINK_STRIPPING_TEMPLATE)
    messages = [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "<think>step</think>yes"},
        {"role": "user", "content": "the fox"},
        {"role": "assistant", "content": "no"},
    ]
    first_prompt = thinking.apply_chat_template(messages[:1], add_generation_prompt=True)
    first = [*thinking.encode("<think>step</think>yes", add_special_tokens=False), EOS]
    second = splice_turn(thinking, messages[:3], first_prompt + first)
    last = [*thinking.encode("no", add_special_tokens=False), EOS]
    ids, spans = turn_trajectory([(first_prompt, first), (second.token_ids, last)])
    check_turn_tokens(thinking, messages, ids, spans)


def test_a_wrong_first_prompt_and_a_wrong_tail_are_named() -> None:
    """Segment 0 (the first prompt) and the tail after the last generated turn are compared too."""
    closed = StandInChatTokenizer(CLOSED_TEMPLATE)
    messages = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "yes"}]
    prompt = closed.apply_chat_template(messages[:1], add_generation_prompt=True)
    answer = [*closed.encode("yes", add_special_tokens=False), EOS]
    check_turn_tokens(closed, messages, prompt + answer, [(len(prompt), len(prompt) + len(answer))])
    err = _mismatch(
        lambda: check_turn_tokens(
            closed, messages, prompt[1:] + answer, [(len(prompt) - 1, len(prompt) - 1 + len(answer))]
        )
    )
    assert (err.turn, err.position, err.missing_ids) == (0, 0, (1,))  # the BOS is missing
    tail = [*closed.apply_chat_template([{"role": "user", "content": "no"}], add_generation_prompt=True)]
    with_tail = [*messages, {"role": "user", "content": "no"}]
    ids = prompt + answer + tail[1:]
    check_turn_tokens(
        closed, with_tail, ids, [(len(prompt), len(prompt) + len(answer))], add_generation_prompt=True
    )
    err = _mismatch(
        lambda: check_turn_tokens(closed, with_tail, ids, [(len(prompt), len(prompt) + len(answer))])
    )
    assert (err.turn, err.extra_ids) == (1, (6,))  # the generation prompt <|assistant|> the render lacks


def test_turn_trajectory_refuses_a_re_tokenized_history() -> None:
    """TITO keeps every earlier id: a later prompt that re-tokenized turn 0 is named at the first change."""
    assert turn_trajectory([]) == ([], [])
    err = _mismatch(lambda: turn_trajectory([([1, 2], [7, 9]), ([1, 2, 79, 3], [8])]))
    assert (err.turn, err.position, err.missing_ids, err.extra_ids) == (1, 2, (7, 9), (79, 3))


@pytest.mark.parametrize(
    ("spans", "error", "turn"),
    [
        ([(3, 5)], TurnTokenMismatchError, 1),
        ([(3, 5), (4, 9)], TurnTokenMismatchError, 1),
        ([(3, 5), (9, 10**6)], TurnTokenMismatchError, 1),
        ([(3, 5), (6,)], ContractTypeError, None),
        ([(3, 5), ("6", 7)], ContractTypeError, None),
        ("spans", ContractTypeError, None),
    ],
)
def test_spans_must_match_the_assistant_messages(
    spans: Any, error: type[Exception], turn: int | None
) -> None:
    """One in-bounds, ordered (start, end) pair per assistant message, else a named error."""
    second = splice_turn(TOKENIZER, MESSAGES[:4], FIRST_PROMPT + FIRST)
    ids, _ = turn_trajectory([(FIRST_PROMPT, FIRST), (second.token_ids, SECOND)])
    with pytest.raises(error) as info:
        check_turn_tokens(TOKENIZER, MESSAGES, ids, spans)
    assert_contract_error(info.value)
    if turn is not None:
        assert info.value.turn == turn  # type: ignore[attr-defined]


def test_arguments_are_checked_like_splice_turn() -> None:
    """No apply_chat_template, bad messages or ids, or render flags in chat_template_kwargs: ContractTypeError."""
    calls: list[Callable[[], None]] = [
        lambda: check_turn_tokens(object(), MESSAGES, [], []),  # type: ignore[arg-type]
        lambda: check_turn_tokens(TOKENIZER, [{"content": "x"}], [], []),
        lambda: check_turn_tokens(TOKENIZER, MESSAGES[:2], [1.5], []),  # type: ignore[list-item]
        lambda: check_turn_tokens(TOKENIZER, MESSAGES[:2], [], [], chat_template_kwargs={"tokenize": False}),
        lambda: check_turn_tokens(TOKENIZER, MESSAGES[:2], [], [], generation_config={}, terminator_ids=[2]),
    ]
    for call in calls:
        with pytest.raises(ContractTypeError) as info:
            call()
        assert_contract_error(info.value)
