"""Hypothesis strategies for multi-turn rollouts: token-in-token-out conversations and per-turn routes.

- :func:`tito_conversations`: a tool-calling conversation rendered by a stand-in tokenizer with a real Jinja chat
  template (:mod:`rl_contracts.testing.chat_tokenizer`), with the model's own ids for every assistant turn (some
  spelled in pieces, some cut at ``max_tokens``) and the per-turn prompts a correct token-in-token-out loop builds;
  for :func:`~rl_contracts.splice.check_turn_tokens`, and to fuzz a trainer's own loop against;
- :func:`turn_route_cases`: per-turn ``(RequestOutput, CompletionOutput)`` stand-ins of one multi-turn trajectory,
  each turn returning routes from a drawn ``routes_start``, with the route every token must get; for
  :func:`~rl_contracts.turn_routes.stitch_turn_routes`.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np
from hypothesis import strategies as st

from rl_contracts.splice import splice_turn
from rl_contracts.testing.chat_tokenizer import (
    CLOSED_TEMPLATE,
    SEPARATED_TEMPLATE,
    THINK_STRIPPING_TEMPLATE,
    WORDS,
    StandInChatTokenizer,
)

__all__ = [
    "TITO_TEMPLATES",
    "TitoConversation",
    "TurnRouteCase",
    "tito_conversations",
    "turn_route_cases",
]

TITO_TEMPLATES: tuple[str, ...] = (CLOSED_TEMPLATE, SEPARATED_TEMPLATE, THINK_STRIPPING_TEMPLATE)
"""The chat templates conversations are rendered with: closed turns, a separator after each EOS (ChatML), and
``<think>`` blocks stripped from earlier turns (Qwen3)."""

_CONTENT = st.lists(st.sampled_from([*WORDS, " ", "a", "b", "?"]), min_size=1, max_size=4).map("".join)


@dataclass(frozen=True)
class TitoConversation:
    """A conversation and the trajectory a correct token-in-token-out loop built for it."""

    tokenizer: StandInChatTokenizer
    messages: list[dict[str, Any]]
    """System, user and tool messages around the assistant turns, as the trainer's history holds them."""
    turns: list[tuple[list[int], list[int]]]
    """Per assistant turn: the prompt prefilled (``splice_turn``'s ids) and the model's generated ids."""
    separator: int | None
    """The id a :data:`SEPARATED_TEMPLATE` puts after each turn's EOS (``None`` for the other templates)."""


@st.composite
def tito_conversations(draw: st.DrawFn, *, max_turns: int = 3) -> TitoConversation:
    """A tool-calling conversation of 1 to ``max_turns`` assistant turns and its correct TITO trajectory.

    Each assistant turn's content is drawn from the stand-in's words; the model's ids for it are the content's
    encoding or its characters one by one (another tokenization of the same text), ending with the EOS or cut
    before it (``max_tokens``).  Each later turn's prompt is :func:`~rl_contracts.splice.splice_turn` of the
    history and the previous prompt plus generated ids, so ``check_turn_tokens`` must pass on
    ``turn_trajectory(turns)`` (the messages end with the last assistant turn).
    """
    template = draw(st.sampled_from(TITO_TEMPLATES))
    tokenizer = StandInChatTokenizer(template, words=(*WORDS, "\n"))
    vocab = tokenizer.get_vocab()
    messages: list[dict[str, Any]] = []
    if draw(st.booleans()):
        messages.append({"role": "system", "content": draw(_CONTENT)})
    messages.append({"role": "user", "content": draw(_CONTENT)})
    turns: list[tuple[list[int], list[int]]] = []
    for turn in range(draw(st.integers(1, max_turns))):
        if turn:
            messages.append({"role": draw(st.sampled_from(["tool", "user"])), "content": draw(_CONTENT)})
        content = draw(_CONTENT)
        if template == THINK_STRIPPING_TEMPLATE and draw(st.booleans()):
            content = f"<think>{draw(_CONTENT)}</think>{content}"
        spelled = (
            [vocab[character] for character in content]
            if draw(st.booleans())
            else tokenizer.encode(content, add_special_tokens=False)
        )
        generated = spelled + ([2] if draw(st.booleans()) else [])
        previous = turns[-1][0] + turns[-1][1] if turns else []
        prompt = splice_turn(tokenizer, messages, previous).token_ids
        turns.append((list(prompt), generated))
        messages.append({"role": "assistant", "content": content})
    separator = vocab["\n"] if template == SEPARATED_TEMPLATE else None
    return TitoConversation(tokenizer, messages, turns, separator)


@dataclass(frozen=True)
class TurnRouteCase:
    """Per-turn outputs of one trajectory and the routes a stitch must give."""

    turns: list[tuple[SimpleNamespace, SimpleNamespace]]
    routes_start: list[int]
    expected: np.ndarray[Any, Any]
    """``[N - 1, L, K]`` int: the route of every token before the trajectory's last."""
    uncovered: int | None
    """The first token no turn returned a route for (the stitch must refuse it), or ``None``."""


@st.composite
def turn_route_cases(draw: st.DrawFn, *, max_turns: int = 4, covered: bool | None = None) -> TurnRouteCase:
    """A multi-turn trajectory (each prompt extends the previous turn's ids) and each turn's routes.

    Token ``t``'s true route is drawn once (``L`` in 1..2 layers, ``K`` in 1..3, expert ids below 100); each turn
    returns the rows of tokens ``[routes_start, prompt + generated - 1)`` as vLLM does, with ``routes_start`` drawn
    at most the previous turn's last generated token when ``covered`` (so the stitch is complete), beyond it when
    ``covered`` is false, either when ``None``.  ``uncovered`` names the first token left without a route.
    """
    layers, top_k = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    turn_count = draw(st.integers(1, max_turns))
    lengths: list[int] = []
    for _ in range(turn_count):
        base = lengths[-1] if lengths else 0
        lengths.append(base + draw(st.integers(1 if base else 2, 5)))  # new prompt ids plus generated ids
    total = lengths[-1]
    ids = draw(st.lists(st.integers(0, 50), min_size=total, max_size=total))
    routes = np.array(
        draw(st.lists(st.integers(0, 99), min_size=total * layers * top_k, max_size=total * layers * top_k)),
        dtype=np.uint8,
    ).reshape(total, layers, top_k)
    turns: list[tuple[SimpleNamespace, SimpleNamespace]] = []
    starts: list[int] = []
    filled = np.zeros(max(total - 1, 0), dtype=bool)
    for turn, length in enumerate(lengths):
        generated = draw(st.integers(1, length - (lengths[turn - 1] if turn else 0)))
        prompt_length = length - generated
        reach = lengths[turn - 1] - 1 if turn else 0  # the previous turn's last generated token
        if covered is None:
            start = draw(st.integers(0, max(length - 1, 0)))
        elif covered:
            start = draw(st.integers(0, reach)) if turn else 0
        else:
            start = draw(st.integers(min(reach + 1, length - 1), max(length - 1, 0))) if turn else 0
        starts.append(start)
        filled[start : length - 1] = True
        turns.append(
            (
                SimpleNamespace(prompt_token_ids=ids[:prompt_length]),
                SimpleNamespace(
                    index=0, token_ids=ids[prompt_length:length], routed_experts=routes[start : length - 1]
                ),
            )
        )
    gaps = np.flatnonzero(~filled)
    return TurnRouteCase(turns, starts, routes[: max(total - 1, 0)], int(gaps[0]) if gaps.size else None)
