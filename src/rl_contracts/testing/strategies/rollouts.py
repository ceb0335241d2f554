"""Hypothesis strategies for the batch-level rollout hand-off (``rl_contracts.rollouts``).

- :func:`rollout_generations`: the learner's prompts and ``SimpleNamespace`` stand-ins for the ``RequestOutput``\\ s
  of one ``generate`` call (choices in any order, sampled tokens with their log-probs among other candidates,
  weight versions tiling each output), with the expected content of every (row, choice) of the batch;
- :func:`broken_rollout_generations`: the same with exactly one fault planted, and where it is;
- :func:`tito_conversations`: a tool-calling conversation rendered by a stand-in tokenizer with a real Jinja chat
  template (:mod:`rl_contracts.testing.chat_tokenizer`), with the model's own ids for every assistant turn (some
  spelled in pieces, some cut at ``max_tokens``) and the per-turn prompts a correct token-in-token-out loop builds;
  for :func:`~rl_contracts.splice.check_turn_tokens`, and to fuzz a trainer's own loop against;
- :func:`turn_route_cases`: per-turn ``(RequestOutput, CompletionOutput)`` stand-ins of one multi-turn trajectory,
  each turn returning routes from a drawn ``routes_start``, with the route every token must get; for
  :func:`~rl_contracts.routed_experts.stitch_turn_routes`.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Literal

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
    "ROLLOUT_FAULTS",
    "ROLLOUT_LABELS",
    "TITO_TEMPLATES",
    "BrokenRolloutGeneration",
    "ExpectedSequence",
    "RolloutFault",
    "RolloutGeneration",
    "TitoConversation",
    "TurnRouteCase",
    "broken_rollout_generations",
    "rollout_generations",
    "tito_conversations",
    "turn_route_cases",
]

ROLLOUT_LABELS: tuple[str, ...] = ("w1", "w2", "w3")
"""The weight-version labels of drawn outputs."""

RolloutFault = Literal[
    "prompt", "finished", "missing_choice", "finish_reason", "no_logprobs", "sampled_token", "nan", "version"
]
ROLLOUT_FAULTS: tuple[RolloutFault, ...] = (
    "prompt",
    "finished",
    "missing_choice",
    "finish_reason",
    "no_logprobs",
    "sampled_token",
    "nan",
    "version",
)
"""The faults :func:`broken_rollout_generations` plants, one per draw."""


@dataclass(frozen=True)
class ExpectedSequence:
    """What the batch must hold for one (row, choice)."""

    row: int
    choice: int
    prompt: list[int]
    generated: list[int]
    logprobs: list[float]
    """The sampled tokens' log-probs as drawn (never ``-inf``, so floors do not apply)."""
    versions: list[str]
    """The weight-version label of every generated token."""
    finish_reason: str


@dataclass(frozen=True)
class RolloutGeneration:
    """A valid generate call, drawn by :func:`rollout_generations`."""

    prompts: list[list[int]]
    request_outputs: list[SimpleNamespace]
    n: int
    expected: list[ExpectedSequence]
    """In batch order: rows, then choices by index."""


@dataclass(frozen=True)
class BrokenRolloutGeneration:
    """A generate call with one planted fault at ``row`` (and ``choice``, ``None`` for a request-wide one)."""

    generation: RolloutGeneration
    fault: RolloutFault
    row: int
    choice: int | None
    check: str
    """The ``RolloutBatchError.check`` the fault must give."""


def _choice(draw: st.DrawFn, index: int) -> tuple[SimpleNamespace, list[int], list[float], list[str]]:
    length = draw(st.integers(0, 6))
    tokens = draw(st.lists(st.integers(0, 500), min_size=length, max_size=length))
    logprobs = draw(
        st.lists(st.floats(-30.0, 0.0, allow_nan=False, width=32), min_size=length, max_size=length)
    )
    entries = []
    for token, value in zip(tokens, logprobs, strict=True):
        others = draw(
            st.dictionaries(st.integers(501, 600), st.floats(-50.0, 0.0, allow_nan=False), max_size=2)
        )
        entry = {other: SimpleNamespace(logprob=v) for other, v in others.items()}
        entry[token] = SimpleNamespace(logprob=value)
        entries.append(entry)
    cuts = sorted(draw(st.sets(st.integers(1, max(length - 1, 1)), max_size=2))) if length > 1 else []
    bounds = [0, *[c for c in cuts if 0 < c < length], length] if length else []
    spans: list[tuple[str, int, int]] = []
    for start, end in itertools.pairwise(bounds):
        previous = spans[-1][0] if spans else None
        label = draw(st.sampled_from([label for label in ROLLOUT_LABELS if label != previous]))
        spans.append((label, start, end))
    versions = [label for label, start, end in spans for _ in range(start, end)]
    reason = draw(st.sampled_from(["stop", "length"]))
    output = SimpleNamespace(
        index=index, token_ids=tokens, logprobs=entries, finish_reason=reason, weight_versions=spans
    )
    return output, tokens, logprobs, versions


@st.composite
def rollout_generations(draw: st.DrawFn, *, max_rows: int = 4, max_n: int = 3) -> RolloutGeneration:
    """The learner's prompts and the request outputs of one valid ``generate`` call with ``n`` choices each.

    Prompts have 0 to 8 ids; every choice has 0 to 6 tokens, each sampled token present (with its drawn log-prob)
    among up to two other candidates, weight versions tiling its tokens with labels from :data:`ROLLOUT_LABELS`,
    and ``finish_reason`` ``stop`` or ``length``; a request's choices come in any order.  ``expected`` holds what
    the batch must contain, computed here, for :func:`~rl_contracts.rollouts.rollout_batch` round-trip properties
    (pass ``allowed_versions=ROLLOUT_LABELS, allow_mixed_versions=True``: an output may change version mid-way).
    """
    rows = draw(st.integers(0, max_rows))
    n = draw(st.integers(1, max_n))
    prompts: list[list[int]] = []
    outputs: list[SimpleNamespace] = []
    expected: list[ExpectedSequence] = []
    for row in range(rows):
        prompt = draw(st.lists(st.integers(0, 500), max_size=8))
        choices = []
        for index in range(n):
            output, tokens, logprobs, versions = _choice(draw, index)
            choices.append(output)
            reason = output.finish_reason
            expected.append(ExpectedSequence(row, index, prompt, tokens, logprobs, versions, reason))
        order = draw(st.permutations(choices))
        prompts.append(list(prompt))
        outputs.append(SimpleNamespace(prompt_token_ids=list(prompt), outputs=list(order), finished=True))
    return RolloutGeneration(prompts, outputs, n, expected)


def _by_index(request_output: SimpleNamespace, index: int) -> Any:
    return next(output for output in request_output.outputs if output.index == index)


_NEEDS_TOKENS: frozenset[RolloutFault] = frozenset({"no_logprobs", "sampled_token", "nan", "version"})


def broken_rollout_generations(
    *, faults: Sequence[RolloutFault] = ROLLOUT_FAULTS
) -> st.SearchStrategy[BrokenRolloutGeneration]:
    """A generate call of :func:`rollout_generations` with exactly one fault among ``faults`` planted.

    ``prompt``: vLLM prefilled another prompt; ``finished``: the request is unfinished; ``missing_choice``: a
    choice is gone; ``finish_reason``: a choice was aborted; ``no_logprobs``: a choice with tokens has none;
    ``sampled_token``: a position lacks the sampled token; ``nan``: a sampled log-prob is NaN; ``version``: a span
    carries the label ``"stale"``, which the rollout does not allow (pass ``allowed_versions=ROLLOUT_LABELS``).
    The case says where (row, choice) and which ``check`` must fail; every other row is left valid.  Restrict
    ``faults`` to one kind to exercise it on every draw.
    """
    unknown = sorted(set(faults) - set(ROLLOUT_FAULTS))
    if not faults or unknown:
        raise ValueError(f"faults must be a non-empty selection of {ROLLOUT_FAULTS}, got unknown {unknown}")
    return _broken(tuple(faults))


@st.composite
def _broken(draw: st.DrawFn, faults: tuple[RolloutFault, ...]) -> BrokenRolloutGeneration:
    """One draw of :func:`broken_rollout_generations`."""
    fault: RolloutFault = draw(st.sampled_from(faults))
    needs_tokens = fault in _NEEDS_TOKENS
    valid = draw(
        rollout_generations().filter(
            lambda g: bool(g.expected) and (not needs_tokens or any(e.generated for e in g.expected))
        )
    )
    generation = copy.deepcopy(valid)
    eligible = sorted({e.row for e in generation.expected if e.generated or not needs_tokens})
    row = draw(st.sampled_from(eligible))
    request_output = generation.request_outputs[row]
    with_tokens = [e.choice for e in generation.expected if e.row == row and e.generated]
    choice: int | None = None
    check = {
        "prompt": "prompt",
        "finished": "finished",
        "missing_choice": "choices",
        "finish_reason": "finish_reason",
    }.get(fault, "logprobs")
    if fault == "prompt":
        request_output.prompt_token_ids = [*request_output.prompt_token_ids, 999]
    elif fault == "finished":
        request_output.finished = False
    elif fault == "missing_choice":
        request_output.outputs.remove(_by_index(request_output, draw(st.integers(0, generation.n - 1))))
    elif fault == "finish_reason":
        choice = draw(st.integers(0, generation.n - 1))
        _by_index(request_output, choice).finish_reason = "abort"
    else:
        choice = draw(st.sampled_from(with_tokens))
        output = _by_index(request_output, choice)
        position = draw(st.integers(0, len(output.token_ids) - 1))
        token = output.token_ids[position]
        if fault == "no_logprobs":
            output.logprobs = None
        elif fault == "sampled_token":
            del output.logprobs[position][token]
        elif fault == "nan":
            output.logprobs[position][token] = SimpleNamespace(logprob=float("nan"))
        else:
            _, start, end = output.weight_versions[0]
            output.weight_versions[0] = ("stale", start, end)
            check = "weight_versions"
    return BrokenRolloutGeneration(generation, fault, row, choice, check)


# ---------------------------------------------------------------------------------------------------- multi-turn

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
