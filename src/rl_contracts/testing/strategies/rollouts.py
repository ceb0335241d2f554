"""Hypothesis strategies for the batch-level rollout hand-off (``rl_contracts.rollouts``).

- :func:`rollout_generations`: the learner's prompts and ``SimpleNamespace`` stand-ins for the ``RequestOutput``\\ s
  of one ``generate`` call (choices in any order, sampled tokens with their log-probs among other candidates,
  weight versions tiling each output), with the expected content of every (row, choice) of the batch;
- :func:`broken_rollout_generations`: the same with exactly one fault planted, and where it is.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Literal

from hypothesis import strategies as st

__all__ = [
    "ROLLOUT_FAULTS",
    "ROLLOUT_LABELS",
    "BrokenRolloutGeneration",
    "ExpectedSequence",
    "RolloutFault",
    "RolloutGeneration",
    "broken_rollout_generations",
    "rollout_generations",
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
