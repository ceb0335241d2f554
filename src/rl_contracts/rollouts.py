"""The batch-level rollout hand-off: the outputs of one vLLM ``generate`` call checked row by row, as learner tensors.

A trainer sends the learner's prompts to ``LLM.generate`` and trains on what comes back.  :func:`rollout_batch`
checks every row before any tensor is built (the prompt vLLM prefilled equals the learner's, the request finished,
every choice is there, its finish reason is one the trainer accepts, every sampled token has its log-probability,
and its weight versions tile the output and are allowed), naming the row and the choice in every error, and
returns a :class:`RolloutBatch`: right-padded token ids, the engine's sampled-token log-probabilities, the weight
version of every generated token and the loss mask, as tensors that feed
``rl_contracts.logprobs.check_logprob_agreement(batch.generation_logprobs, learner_logprobs, batch.loss_mask)``
directly.  :func:`sampled_logprobs` reads one completion output's sampled-token log-probabilities.

Rows are requests (the prompt's position), each with its choices (``CompletionOutput.index``, ``n`` of them with
``SamplingParams(n=...)``); the batch holds one sequence per (row, choice), in row order, then choice order.
vLLM objects are read by attribute (SPEC §0.7): real ``RequestOutput``\\ s, pydantic models and ``SimpleNamespace``
stand-ins all work.  The module imports torch, never vLLM.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from ._internal.optional_torch import torch
from ._messages import render, render_list, type_name
from ._sampled_logprobs import LogprobFault, sampled_token_logprobs
from .chat import VLLM_LOGPROB_FLOOR
from .checks import int_or_none, is_sequence, require_bool, require_int, require_sequence, token_ids
from .errors import (
    ContractTypeError,
    RolloutBatchError,
    RolloutPromptError,
    RolloutPromptMismatchError,
    RolloutWeightVersionError,
    WeightVersionError,
)
from .metrics import OK_FINISH_REASONS
from .prompts import validate_rollout_prompt
from .protocols import CompletionOutputLike, RequestOutputLike
from .weights import WeightVersionSpan, check_weight_versions, weight_version_per_token, weight_version_spans

__all__ = ["NO_VERSION", "RolloutBatch", "rollout_batch", "sampled_logprobs"]

NO_VERSION: Final[int] = -1
"""``RolloutBatch.version_codes`` at prompt and padding positions, and at tokens the engine labelled with no
weight version (vLLM before 0.32, or a trainer that never called ``set_weight_version``)."""


@dataclass(frozen=True, eq=False)
class RolloutBatch:
    """One ``generate`` call's rollouts as learner tensors: one sequence per (row, choice), right-padded to ``T``.

    Position ``t`` of a sequence holds its token ``t``: the prompt, then the generated tokens, then padding.  Every
    ``[B, T]`` tensor uses these coordinates, so a learner that computes ``log p(token_t | tokens_<t)`` at position
    ``t`` (from the logits at ``t - 1``) compares with ``generation_logprobs`` under ``loss_mask`` as it is.
    """

    token_ids: torch.Tensor
    """``[B, T]`` int64: prompt and generated ids, padded with ``pad_token_id``."""
    prompt_lengths: torch.Tensor
    """``[B]`` int64: the prompt's length (what vLLM prefilled, equal to the learner's)."""
    generation_lengths: torch.Tensor
    """``[B]`` int64: the number of generated tokens."""
    lengths: torch.Tensor
    """``[B]`` int64: ``prompt_lengths + generation_lengths`` (the unpadded length)."""
    loss_mask: torch.Tensor
    """``[B, T]`` float32: 1.0 at generated tokens, 0.0 at prompt and padding positions."""
    generation_logprobs: torch.Tensor
    """``[B, T]`` float32: vLLM's log-probability of each generated token at its position (floored at
    ``logprob_floor``), 0.0 where ``loss_mask`` is 0."""
    version_codes: torch.Tensor
    """``[B, T]`` int64: the index in ``version_labels`` of the weights that sampled each generated token;
    :data:`NO_VERSION` (-1) elsewhere and for tokens without a label."""
    version_labels: tuple[str, ...]
    """The weight-version labels the codes index."""
    rows: torch.Tensor
    """``[B]`` int64: each sequence's row (its position in ``prompts`` and ``request_outputs``)."""
    choices: torch.Tensor
    """``[B]`` int64: each sequence's choice (``CompletionOutput.index``)."""
    finish_reasons: tuple[str, ...]
    """Each sequence's ``finish_reason``."""

    def __len__(self) -> int:
        return int(self.token_ids.shape[0])


def sampled_logprobs(
    completion_output: CompletionOutputLike, *, floor: float | None = VLLM_LOGPROB_FLOOR
) -> list[float]:
    """The log-probability vLLM reported for each token it sampled, from ``completion_output.logprobs``.

    ``logprobs[i]`` maps token ids to ``Logprob``\\ s at position ``i``; with ``SamplingParams(logprobs=k)`` vLLM
    always includes the sampled token ``token_ids[i]``.  Returns a new list of floats, one per generated token,
    each ``max(logprob, floor)`` (``-inf`` becomes ``floor``, as in chat responses); ``floor=None`` keeps the
    values as they are.  The same reading as
    :func:`~rl_contracts.chat.attach_token_information_to_chat_response_choices`.

    Raises:
        RolloutBatchError: ``token_ids`` missing or not ints; ``logprobs`` missing while there are tokens (ask
            for ``SamplingParams(logprobs=0)``), not a sequence, or of another length; a position whose mapping
            lacks the sampled token; a log-prob that is not a number, NaN or ``+inf``.  ``.choice`` is the
            output's ``index``, ``.check`` ``"token_ids"`` or ``"logprobs"``.
        ContractTypeError: ``floor`` is not a number or ``None``, is NaN, or is an int beyond the float range.

    >>> from types import SimpleNamespace as O
    >>> output = O(index=0, token_ids=[7, 8], logprobs=[{7: O(logprob=-0.5)}, {8: O(logprob=float("-inf"))}])
    >>> sampled_logprobs(output)
    [-0.5, -9999.0]
    """
    bound = _floor(floor, "floor")
    choice = int_or_none(getattr(completion_output, "index", None))
    where = f"completion output {render(choice)}"
    generated = _generated(completion_output, where, None, choice)
    return _logprobs(completion_output, generated, bound, where, None, choice)


def rollout_batch(
    prompts: Sequence[Sequence[int]],
    request_outputs: Sequence[RequestOutputLike],
    *,
    n: int | None = None,
    allowed_versions: Collection[str] | Callable[[str], bool] | None = None,
    require_weight_versions: bool | None = None,
    version_labels: Sequence[str] | None = None,
    finish_reasons: Collection[str] = OK_FINISH_REASONS,
    pad_token_id: int = 0,
    logprob_floor: float | None = VLLM_LOGPROB_FLOOR,
    device: torch.device | str = "cpu",
) -> RolloutBatch:
    """Check every row of one ``generate`` call against the learner's prompts and return the learner's batch.

    ``prompts[i]`` is the learner's unpadded prompt of row ``i`` (a list, tuple or 1-D integer array or tensor,
    e.g. ``input_ids[i, :input_lengths[i]]``) and ``request_outputs[i]`` vLLM's ``RequestOutput`` for it, in the
    order ``LLM.generate`` returns them.  Every row is checked before any tensor is built, in this order:

    1. the prompt vLLM prefilled (``prompt_token_ids``) equals the learner's, as
       :func:`~rl_contracts.prompts.validate_rollout_prompt` compares them;
    2. the request is not unfinished (``finished`` is not ``False``);
    3. its choices' ``index`` values are distinct ints ``0 .. k-1`` (``k == n`` when ``n`` is given, else
       ``k >= 1``);
    4. for each choice in index order: ``token_ids`` are ints; ``finish_reason`` is in ``finish_reasons``
       (default ``stop`` and ``length``; ``None``, an unfinished output, never is); every generated token has its
       sampled-token log-probability (:func:`sampled_logprobs`); its ``weight_versions`` tile its tokens, and with
       ``allowed_versions`` every label is allowed (:func:`~rl_contracts.weights.check_weight_versions`).
       Weight versions are required when ``require_weight_versions`` is true, which is its default whenever
       ``allowed_versions`` is given (an output without labels then cannot pass unchecked).

    ``version_labels`` fixes the labels the codes index; by default they are the labels met in the batch, in
    order of first appearance (row, choice, span).  ``logprob_floor`` floors the log-probabilities as
    :func:`sampled_logprobs` does.  Tensors are built on ``device``.

    Raises:
        ContractTypeError: an argument of the wrong type (``prompts`` or ``request_outputs`` not a sequence, a
            prompt row that is not a sequence of ints, ``n``/``pad_token_id`` not an int, ``finish_reasons`` a
            bare ``str``, ``allowed_versions`` neither a collection of ``str`` nor a callable, ``device`` not a
            device, ``logprob_floor`` not a number or ``None``, NaN or an int beyond the float range), or span
            objects of the wrong type (named with the row and choice).
        RolloutBatchError: ``prompts`` and ``request_outputs`` differ in length (``check="batch"``), or a row fails
            a check; ``.row``, ``.choice`` (``None`` for a request-wide fault) and ``.check`` say where.  Its
            subclasses :class:`~rl_contracts.errors.RolloutPromptError` (also a ``RolloutPromptMismatchError``,
            with its attributes) and :class:`~rl_contracts.errors.RolloutWeightVersionError` (also a
            ``WeightVersionError``) carry the single-row check's message after ``rollout row i, choice j:``.

    >>> from types import SimpleNamespace as O
    >>> out = O(prompt_token_ids=[5, 6], outputs=[O(index=0, token_ids=[7], finish_reason="stop",
    ...     logprobs=[{7: O(logprob=-0.25)}], weight_versions=[("v3", 0, 1)])])
    >>> batch = rollout_batch([[5, 6]], [out], allowed_versions={"v3"})
    >>> batch.token_ids.tolist(), batch.loss_mask.tolist(), batch.generation_logprobs.tolist()
    ([[5, 6, 7]], [[0.0, 0.0, 1.0]], [[0.0, 0.0, -0.25]])
    >>> batch.version_codes.tolist(), batch.version_labels
    ([[-1, -1, 0]], ('v3',))
    """
    learner = _prompt_rows(prompts)
    outputs = require_sequence(request_outputs, "request_outputs", "a sequence of vLLM RequestOutputs")
    choices_per_row = None if n is None else _positive(n, "n")
    accepted = _finish_reasons(finish_reasons)
    pad = require_int(pad_token_id, "pad_token_id")
    bound = _floor(logprob_floor, "logprob_floor")
    target = _device(device)
    allowed = _allowed(allowed_versions)
    required = (
        allowed is not None
        if require_weight_versions is None
        else require_bool(require_weight_versions, "require_weight_versions")
    )
    labels = None if version_labels is None else _labels(version_labels)
    if len(learner) != len(outputs):
        raise RolloutBatchError(
            f"rollout batch: {len(learner)} prompts but {len(outputs)} request outputs; pass the RequestOutputs "
            "of one generate call, in its order, for exactly these prompts",
            check="batch",
        )
    sequences = [
        sequence
        for row, (prompt, output) in enumerate(zip(learner, outputs, strict=True))
        for sequence in _row(row, prompt, output, choices_per_row, accepted, bound, allowed, required)
    ]
    return _batch(sequences, labels, pad, target)


@dataclass(frozen=True)
class _Sequence:
    """One checked (row, choice): what the batch needs of it."""

    row: int
    choice: int
    prompt: list[int]
    generated: list[int]
    logprobs: list[float]
    spans: tuple[WeightVersionSpan, ...] | None
    finish_reason: str


def _row(
    row: int,
    prompt: list[int],
    output: object,
    n: int | None,
    accepted: frozenset[str],
    floor: float | None,
    allowed: Collection[str] | Callable[[str], bool] | None,
    required: bool,
) -> list[_Sequence]:
    """Every check of one request (steps 1-4 of :func:`rollout_batch`), in order."""
    _check_prompt(row, prompt, output)
    if getattr(output, "finished", None) is False:
        raise RolloutBatchError(
            f"rollout row {row}: the request output is not finished (finished=False); pass the final "
            "RequestOutput of every request, as LLM.generate returns them",
            row=row,
            check="finished",
        )
    sequences = []
    for choice, completion in _choices(row, output, n):
        where = f"rollout row {row}, choice {choice}"
        generated = _generated(completion, where, row, choice)
        reason = getattr(completion, "finish_reason", None)
        if not isinstance(reason, str) or reason not in accepted:
            raise RolloutBatchError(
                f"{where}: finish_reason={render(reason)} is not one this rollout accepts "
                f"({render_list(sorted(accepted))}); "
                + (
                    "the output is unfinished"
                    if reason is None
                    else "the request was aborted or failed in the engine, or pass finish_reasons="
                ),
                row=row,
                choice=choice,
                check="finish_reason",
            )
        logprobs = _logprobs(completion, generated, floor, where, row, choice)
        spans = _spans(completion, where, row, choice, allowed, required)
        sequences.append(_Sequence(row, choice, list(prompt), generated, logprobs, spans, reason))
    return sequences


def _check_prompt(row: int, prompt: list[int], output: object) -> None:
    """Step 1: what vLLM prefilled equals the learner's prompt, with the row in the error."""
    engine = getattr(output, "prompt_token_ids", None)
    if engine is not None:
        try:
            engine = token_ids(engine, "prompt_token_ids")
        except ContractTypeError as error:
            raise RolloutBatchError(
                f"rollout row {row}: the request output's prompt_token_ids are not a sequence of ints: "
                f"{error.message}",
                row=row,
                check="prompt",
            ) from error
    try:
        validate_rollout_prompt(prompt, engine)
    except RolloutPromptMismatchError as error:
        raise RolloutPromptError(
            f"rollout row {row} (every choice): {error.message}",
            expected_length=error.expected_length,
            actual_length=error.actual_length,
            first_mismatch_index=error.first_mismatch_index,
            row=row,
            check="prompt",
        ) from error


def _choices(row: int, output: object, n: int | None) -> list[tuple[int, object]]:
    """Step 3: the request's completion outputs by ``index``, which must run ``0 .. k-1``."""
    raw = getattr(output, "outputs", None)
    completions: Sequence[Any] = () if raw is None else raw
    if raw is not None and not is_sequence(raw):
        raise RolloutBatchError(
            f"rollout row {row}: the request output's outputs are a {type_name(raw)}, not a sequence of "
            "CompletionOutputs",
            row=row,
            check="choices",
        )
    raw_indices = [int_or_none(getattr(completion, "index", None)) for completion in completions]
    indices = [index for index in raw_indices if index is not None]
    expected = list(range(len(completions) if n is None else n))
    if len(indices) != len(raw_indices) or sorted(indices) != expected or not expected:
        wanted = "at least one choice" if n is None else f"n={n} choices"
        raise RolloutBatchError(
            f"rollout row {row}: the request output holds choices with index "
            f"{render_list([render(getattr(c, 'index', None)) for c in completions])}, expected {wanted} indexed "
            f"0 .. k-1 once each; a choice is missing, duplicated or not an int",
            row=row,
            check="choices",
        )
    return sorted(zip(indices, completions, strict=True), key=lambda pair: pair[0])


def _generated(completion: object, where: str, row: int | None, choice: int | None) -> list[int]:
    raw = getattr(completion, "token_ids", None)
    if raw is None:
        raise RolloutBatchError(
            f"{where}: the completion output has no token_ids", row=row, choice=choice, check="token_ids"
        )
    try:
        return token_ids(raw, "token_ids")
    except ContractTypeError as error:
        raise RolloutBatchError(
            f"{where}: the completion output's token_ids are not a sequence of ints: {error.message}",
            row=row,
            choice=choice,
            check="token_ids",
        ) from error


def _logprobs(
    completion: object,
    generated: list[int],
    floor: float | None,
    where: str,
    row: int | None,
    choice: int | None,
) -> list[float]:
    """Every generated token's sampled-token log-prob, floored, or the fault with ``where`` in the message."""
    raw = getattr(completion, "logprobs", None)
    if raw is None:
        if not generated:
            return []
        raise RolloutBatchError(
            f"{where}: the completion output has {len(generated)} tokens but no logprobs; sample with "
            "SamplingParams(logprobs=0) so that vLLM returns the sampled token's log-probability",
            row=row,
            choice=choice,
            check="logprobs",
        )
    if not is_sequence(raw) or len(raw) != len(generated):
        count = len(raw) if is_sequence(raw) else type_name(raw)
        raise RolloutBatchError(
            f"{where}: the completion output has {len(generated)} tokens but logprobs for {render(count)} "
            "positions; every sampled token needs its log-probability",
            row=row,
            choice=choice,
            check="logprobs",
        )
    values = sampled_token_logprobs(generated, raw)
    if isinstance(values, LogprobFault):
        what = {
            "missing": "has no log-probability for the sampled token",
            "not_a_number": f"has a log-probability that is not a number ({render(values.value)})",
            "non_finite": f"has a non-finite log-probability ({render(values.value)})",
        }[values.kind]
        raise RolloutBatchError(
            f"{where}: position {values.position} (token_id={render(values.token_id)}) {what}",
            row=row,
            choice=choice,
            check="logprobs",
        )
    return values if floor is None else [max(value, floor) for value in values]


def _spans(
    completion: object,
    where: str,
    row: int,
    choice: int,
    allowed: Collection[str] | Callable[[str], bool] | None,
    required: bool,
) -> tuple[WeightVersionSpan, ...] | None:
    """Step 4's weight versions, with the row and choice in the error."""
    try:
        if allowed is None:
            return weight_version_spans(completion, required=required)  # type: ignore[arg-type]
        return check_weight_versions(completion, allowed=allowed, required=required)  # type: ignore[arg-type]
    except WeightVersionError as error:
        raise RolloutWeightVersionError(
            f"{where}: {error.message}",
            **{name: getattr(error, name) for name in WeightVersionError.attribute_names},
            row=row,
            choice=choice,
            check="weight_versions",
        ) from error
    except ContractTypeError as error:
        raise ContractTypeError(
            f"{where}: {error.message}",
            **{name: getattr(error, name) for name in ContractTypeError.attribute_names},
        ) from error


def _batch(
    sequences: list[_Sequence], labels: tuple[str, ...] | None, pad: int, device: torch.device
) -> RolloutBatch:
    """The tensors of checked sequences (codes looked up in ``labels``, or in the labels met, first-seen)."""
    if labels is None:
        seen = dict.fromkeys(span.version for s in sequences for span in (s.spans or ()))
        labels = tuple(seen)
    count = len(sequences)
    width = max((len(s.prompt) + len(s.generated) for s in sequences), default=0)
    ids = np.full((count, width), pad, dtype=np.int64)
    mask = np.zeros((count, width), dtype=np.float32)
    logprobs = np.zeros((count, width), dtype=np.float32)
    codes = np.full((count, width), NO_VERSION, dtype=np.int64)
    for index, s in enumerate(sequences):
        start, end = len(s.prompt), len(s.prompt) + len(s.generated)
        ids[index, :start] = s.prompt
        ids[index, start:end] = s.generated
        mask[index, start:end] = 1.0
        logprobs[index, start:end] = s.logprobs
        if s.spans:
            codes[index, start:end] = _codes(s, labels)
    prompt_lengths = np.array([len(s.prompt) for s in sequences], dtype=np.int64)
    generation_lengths = np.array([len(s.generated) for s in sequences], dtype=np.int64)

    def tensor(array: np.ndarray[Any, Any]) -> torch.Tensor:
        return torch.from_numpy(array).to(device)

    return RolloutBatch(
        token_ids=tensor(ids),
        prompt_lengths=tensor(prompt_lengths),
        generation_lengths=tensor(generation_lengths),
        lengths=tensor(prompt_lengths + generation_lengths),
        loss_mask=tensor(mask),
        generation_logprobs=tensor(logprobs),
        version_codes=tensor(codes),
        version_labels=labels,
        rows=tensor(np.array([s.row for s in sequences], dtype=np.int64)),
        choices=tensor(np.array([s.choice for s in sequences], dtype=np.int64)),
        finish_reasons=tuple(s.finish_reason for s in sequences),
    )


def _codes(sequence: _Sequence, labels: tuple[str, ...]) -> np.ndarray[Any, Any]:
    """The per-token codes of one sequence, with the row and choice in the error of a label not in ``labels``."""
    try:
        return weight_version_per_token(sequence.spans or (), labels=labels)
    except WeightVersionError as error:
        attributes = {name: getattr(error, name) for name in WeightVersionError.attribute_names}
        attributes["output_index"] = sequence.choice
        raise RolloutWeightVersionError(
            f"rollout row {sequence.row}, choice {sequence.choice}: {error.message}",
            **attributes,
            row=sequence.row,
            choice=sequence.choice,
            check="weight_versions",
        ) from error


# ---------------------------------------------------------------------------------------------------- arguments


def _prompt_rows(prompts: object) -> list[list[int]]:
    rows = require_sequence(prompts, "prompts", "a sequence of prompts (one sequence of token ids per row)")
    return [token_ids(prompt, f"prompts[{row}]") for row, prompt in enumerate(rows)]


def _positive(value: object, argument: str) -> int:
    number = require_int(value, argument)
    if number < 1:
        raise RolloutBatchError(f"{argument} must be >= 1, got {number}", check="batch")
    return number


def _finish_reasons(value: object) -> frozenset[str]:
    if isinstance(value, str | bytes) or not isinstance(value, Collection):
        raise ContractTypeError.for_value(
            "finish_reasons", "a collection of finish-reason strings (not a bare str)", value
        )
    odd = [reason for reason in value if not isinstance(reason, str)]
    if odd:
        raise ContractTypeError.for_value("finish_reasons", "a collection of str", odd[0])
    return frozenset(value)


def _allowed(value: object) -> Collection[str] | Callable[[str], bool] | None:
    if value is None or callable(value):
        return value
    if isinstance(value, str | bytes) or not isinstance(value, Collection):
        raise ContractTypeError.for_value(
            "allowed_versions", "a collection of str labels (not a bare str), a callable or None", value
        )
    return value


def _labels(value: object) -> tuple[str, ...]:
    labels = require_sequence(value, "version_labels", "a sequence of str labels (not a bare str)")
    for index, label in enumerate(labels):
        if not isinstance(label, str):
            raise ContractTypeError.for_value(f"version_labels[{index}]", "a str label", label)
    return tuple(labels)


def _floor(value: object, argument: str) -> float | None:
    """A log-prob floor as a float: a number that is not a bool, NaN or an int beyond the float range, or
    ``None``; ``argument`` names it in the error."""
    if value is None:
        return None
    expected = "a float (not NaN) or None"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ContractTypeError.for_value(argument, expected, value)
    try:
        bound = float(value)
    except OverflowError:
        raise ContractTypeError.for_value(
            argument, expected, value, actual="an int beyond the float range"
        ) from None
    if math.isnan(bound):
        raise ContractTypeError.for_value(argument, expected, value, actual="nan")
    return bound


def _device(value: object) -> torch.device:
    if isinstance(value, torch.device):
        return value
    if isinstance(value, str):
        try:
            return torch.device(value)
        except (RuntimeError, ValueError):
            pass
    raise ContractTypeError.for_value("device", "a torch.device or a device string such as 'cpu'", value)
