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

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from ._internal.messages import render, render_list, render_name, type_name
from ._internal.optional_torch import torch
from ._internal.sampled_logprobs import LogprobFault, sampled_token_logprobs
from .chat import VLLM_LOGPROB_FLOOR
from .checks import (
    int_or_none,
    is_collection,
    is_sequence,
    require_bool,
    require_collection,
    require_float,
    require_int,
    require_sequence,
    require_str_collection,
    token_ids,
)
from .errors import (
    ContractTypeError,
    ForbiddenTokenError,
    RolloutBatchError,
    RolloutPromptError,
    RolloutPromptMismatchError,
    RolloutWeightVersionError,
    WeightVersionError,
)
from .metrics import OK_FINISH_REASONS
from .prompts import validate_rollout_prompt
from .protocols import CompletionOutputLike, RequestOutputLike
from .weights import (
    WeightVersionSpan,
    check_weight_version_staleness,
    check_weight_versions,
    weight_version_per_token,
    weight_version_spans,
)

__all__ = ["NO_VERSION", "RolloutBatch", "rollout_batch", "sampled_logprobs"]

_INT64: Final = np.iinfo(np.int64)
"""The range of a token id: the batch's ``token_ids`` tensor is int64."""

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
        ContractTypeError: ``floor`` is not ``None`` or a finite number ``<= 0`` (a log-probability floor).

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
    forbidden_token_ids: Collection[int] | None = None,
    allow_mixed_versions: bool = False,
    current_version: int | str | None = None,
    max_staleness: int | None = None,
    version_order: Sequence[str] | None = None,
    prefix_cache_version: str | None = None,
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
    4. for each choice in index order: ``token_ids`` are ints within int64; none is in ``forbidden_token_ids``
       (e.g. :func:`~rl_contracts.prompts.media_placeholder_token_ids`: a sampled ``<|image_pad|>``);
       ``finish_reason`` is in ``finish_reasons`` (default ``stop`` and ``length``; ``None``, an unfinished
       output, never is); every generated token has its sampled-token log-probability (:func:`sampled_logprobs`);
       its ``weight_versions`` tile its tokens, and with ``allowed_versions`` every label is allowed
       (:func:`~rl_contracts.weights.check_weight_versions`);
    5. its weight versions, when it carries them: one label per output unless ``allow_mixed_versions``; with
       ``current_version`` and ``max_staleness``, no span lags more than ``max_staleness`` versions
       (:func:`~rl_contracts.weights.check_weight_version_staleness`: integer labels, or ``version_order``;
       :func:`~rl_contracts.weights.max_staleness_from_recipe` reads the bound of a NeMo RL recipe); with
       ``prefix_cache_version``, a request that vLLM served partly from its prefix cache (``num_cached_tokens >
       0``) has its first span under that version.

    Weight versions are required when ``require_weight_versions`` is true, which is its default whenever
    ``allowed_versions`` or a staleness bound is given (an output without labels then cannot pass unchecked).

    Divergence (from the second release's lenient default): an output whose tokens were sampled by more than one
    weight version is refused unless ``allow_mixed_versions=True`` (SkyRL #1836, AReaL #1388: a trainer that
    records one policy version per trajectory computes wrong importance ratios for it).  Pass it when the learner
    corrects per token with ``version_codes``.

    The prefix cache: vLLM reports how many prompt tokens it served from cache (``num_cached_tokens``), not the
    weights those blocks were computed under, so this cannot be told from the output.  ``prefix_cache_version``
    is the trainer's statement of it: the version set when it last cleared the cache (``pause_generation``'s
    default ``clear_cache=True``, or ``reset_prefix_cache()``), valid when every request of the batch was
    prefilled after that clear.  Without it, a trainer that keeps the cache across weight updates
    (``clear_cache=False``) trains on prefixes computed by older weights, unseen.

    ``version_labels`` fixes the labels the codes index; by default they are the labels met in the batch, in
    order of first appearance (row, choice, span).  ``logprob_floor`` floors the log-probabilities as
    :func:`sampled_logprobs` does.  Tensors are built on ``device``.

    Raises:
        ContractTypeError: an argument of the wrong type (``prompts`` or ``request_outputs`` not a sequence, a
            prompt row that is not a sequence of ints, ``n``/``pad_token_id`` not an int, ``finish_reasons`` a
            bare ``str``, ``allowed_versions`` neither a collection of ``str`` nor a callable,
            ``forbidden_token_ids`` not a collection of ints, ``device`` not a device, ``logprob_floor`` not
            ``None`` or a finite number ``<= 0``), or span
            objects of the wrong type (named with the row and choice).
        RolloutBatchError: ``prompts`` and ``request_outputs`` differ in length, ``pad_token_id`` is outside
            int64, or only one of ``current_version`` and ``max_staleness`` is given (``check="batch"``), or a row
            fails a check; ``.row``, ``.choice`` (``None`` for a request-wide fault) and ``.check`` say where.  Its
            subclasses :class:`~rl_contracts.errors.RolloutPromptError` (also a ``RolloutPromptMismatchError``,
            with its attributes), :class:`~rl_contracts.errors.ForbiddenTokenError` (``.position``,
            ``.token_id``) and :class:`~rl_contracts.errors.RolloutWeightVersionError` (also a
            ``WeightVersionError``; ``check`` ``"weight_versions"``, ``"mixed_versions"``, ``"staleness"`` or
            ``"prefix_cache"``) carry the single-row check's message after ``rollout row i, choice j:``.

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
    if _outside_int64([pad]) is not None:
        raise RolloutBatchError(
            f"pad_token_id={render(pad)} does not fit the int64 token_ids tensor (ids lie in [{_INT64.min}, "
            f"{_INT64.max}]); pass the tokenizer's pad id",
            check="batch",
        )
    bound = _floor(logprob_floor, "logprob_floor")
    target = _device(device)
    allowed = _allowed(allowed_versions)
    rules = _VersionRules(
        forbidden=_forbidden(forbidden_token_ids),
        allow_mixed=require_bool(allow_mixed_versions, "allow_mixed_versions"),
        staleness=_staleness(current_version, max_staleness, version_order),
        prefix_cache_version=_optional_label(prefix_cache_version, "prefix_cache_version"),
    )
    required = (
        allowed is not None or rules.staleness is not None
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
        for sequence in _row(row, prompt, output, choices_per_row, accepted, bound, allowed, required, rules)
    ]
    return _batch(sequences, labels, pad, target)


@dataclass(frozen=True)
class _Staleness:
    """``rollout_batch``'s staleness bound: ``current_version``, ``max_staleness`` and ``version_order``."""

    current: int | str
    bound: int
    order: Sequence[str] | None


@dataclass(frozen=True)
class _VersionRules:
    """The checks of step 4's forbidden ids and step 5 of :func:`rollout_batch`."""

    forbidden: frozenset[int]
    allow_mixed: bool
    staleness: _Staleness | None
    prefix_cache_version: str | None


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
    rules: _VersionRules,
) -> list[_Sequence]:
    """Every check of one request (steps 1-5 of :func:`rollout_batch`), in order."""
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
        _check_int64(generated, f"{where}: the completion output's token_ids", row, choice, "token_ids")
        _check_forbidden(generated, rules.forbidden, where, row, choice)
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
        if spans:
            _check_versions(spans, rules, getattr(output, "num_cached_tokens", None), where, row, choice)
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


def _check_forbidden(
    generated: list[int], forbidden: frozenset[int], where: str, row: int, choice: int
) -> None:
    """Step 4: no generated id is forbidden (a set intersection first, so a clean output costs no Python loop)."""
    if not forbidden or forbidden.isdisjoint(generated):
        return
    position = next(i for i, token in enumerate(generated) if token in forbidden)
    raise ForbiddenTokenError(
        f"{where}: generated token {generated[position]} at position {position} is forbidden (forbidden_token_ids "
        f"holds {len(forbidden)} ids, e.g. media placeholders); the policy sampled a token it must never emit, and "
        "the learner's processor would expect media that does not exist. Drop the sample, or mask the ids out of "
        "sampling (SamplingParams(logit_bias=...) or bad_words)",
        row=row,
        choice=choice,
        check="forbidden_token",
        position=position,
        token_id=generated[position],
    )


def _version_error(
    message: str, span_index: int, span: WeightVersionSpan, count: int, row: int, choice: int, check: str
) -> RolloutWeightVersionError:
    return RolloutWeightVersionError(
        message,
        output_index=choice,
        span_index=span_index,
        version=span.version,
        start=span.start,
        end=span.end,
        token_count=count,
        row=row,
        choice=choice,
        check=check,
    )


def _check_versions(
    spans: tuple[WeightVersionSpan, ...],
    rules: _VersionRules,
    cached: object,
    where: str,
    row: int,
    choice: int,
) -> None:
    """Step 5: one label per output unless mixing is allowed; the staleness bound; the prefix cache's version."""
    count = spans[-1].end
    if len(spans) > 1 and not rules.allow_mixed:
        first, second = spans[0], spans[1]
        raise _version_error(
            f"{where}: output tokens [{first.start}, {first.end}) were sampled by weights "
            f"'{render_name(first.version)}' and tokens [{second.start}, {second.end}) by "
            f"'{render_name(second.version)}' ({len(spans)} spans): the weights changed mid-rollout. Importance "
            "ratios against one behaviour policy would be wrong; drop the rollout, or pass "
            "allow_mixed_versions=True when the learner corrects per token with version_codes",
            1,
            second,
            count,
            row,
            choice,
            "mixed_versions",
        )
    if rules.staleness is not None:
        try:
            check_weight_version_staleness(
                spans,
                current_version=rules.staleness.current,
                max_staleness=rules.staleness.bound,
                version_order=rules.staleness.order,
            )
        except WeightVersionError as error:
            index = error.span_index if error.span_index is not None else 0
            raise _version_error(
                f"{where}: {error.message}", index, spans[index], count, row, choice, "staleness"
            ) from error
    cached_tokens = int_or_none(cached)
    expected = rules.prefix_cache_version
    if expected is not None and cached_tokens and spans[0].version != expected:
        raise _version_error(
            f"{where}: vLLM served {cached_tokens} prompt tokens from its prefix cache, whose blocks were computed "
            f"under weights '{render_name(expected)}' (prefix_cache_version), but the output's first tokens were "
            f"sampled by '{render_name(spans[0].version)}': the prefix's keys and values come from other weights "
            "than the tokens sampled after them. Clear the prefix cache at every weight update "
            "(pause_generation(clear_cache=True) or reset_prefix_cache())",
            0,
            spans[0],
            count,
            row,
            choice,
            "prefix_cache",
        )


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
    learner = [token_ids(prompt, f"prompts[{row}]") for row, prompt in enumerate(rows)]
    for row, prompt in enumerate(learner):
        _check_int64(prompt, f"rollout row {row}: prompts[{row}]", row, None, "prompt")
    return learner


def _outside_int64(ids: list[int]) -> int | None:
    """The first id of ``ids`` outside int64's range, or ``None`` (two C-speed passes, no per-token bytecode)."""
    if not ids or (_INT64.min <= min(ids) and max(ids) <= _INT64.max):
        return None
    return next(i for i, value in enumerate(ids) if not _INT64.min <= value <= _INT64.max)


def _check_int64(ids: list[int], where: str, row: int, choice: int | None, check: str) -> None:
    """Every id fits the int64 ``token_ids`` tensor, or a ``RolloutBatchError`` naming ``where`` and the position."""
    position = _outside_int64(ids)
    if position is not None:
        raise RolloutBatchError(
            f"{where} hold token id {render(ids[position])} at position {position}, outside the int64 range of token ids "
            f"[{_INT64.min}, {_INT64.max}]; no vocabulary has such an id, so the ids are corrupt",
            row=row,
            choice=choice,
            check=check,
        )


def _positive(value: object, argument: str) -> int:
    return require_int(value, argument, low=1, error=RolloutBatchError, check="batch")


def _finish_reasons(value: object) -> frozenset[str]:
    expected = "a collection of finish-reason strings (not a bare str)"
    return frozenset(require_str_collection(value, "finish_reasons", expected))


def _allowed(value: object) -> Collection[str] | Callable[[str], bool] | None:
    if value is None or callable(value):
        return value
    if not (is_collection(value) and isinstance(value, Collection)):  # not text, an iterator or a 0-d array
        raise ContractTypeError.for_value(
            "allowed_versions", "a collection of str labels (not a bare str), a callable or None", value
        )
    return value


def _forbidden(value: object) -> frozenset[int]:
    if value is None:
        return frozenset()
    items = require_collection(value, "forbidden_token_ids", "a collection of token ids (ints) or None")
    return frozenset(require_int(item, f"forbidden_token_ids[{index}]") for index, item in enumerate(items))


def _staleness(current: object, bound: object, order: object) -> _Staleness | None:
    if current is None and bound is None:
        if order is not None:
            raise RolloutBatchError(
                "version_order is given without current_version and max_staleness, so it would not apply; pass "
                "all three to bound the staleness of the rollouts",
                check="batch",
            )
        return None
    if current is None or bound is None:
        given, missing = (
            ("current_version", "max_staleness") if bound is None else ("max_staleness", "current_version")
        )
        raise RolloutBatchError(
            f"{given} is given without {missing}, so no staleness bound would apply; pass both (the recipe's bound: "
            "rl_contracts.weights.max_staleness_from_recipe)",
            check="batch",
        )
    maximum = require_int(bound, "max_staleness")
    if maximum < 0:
        raise RolloutBatchError(f"max_staleness must be >= 0, got {maximum}", check="batch")
    if isinstance(current, bool) or not isinstance(current, str | int):
        raise ContractTypeError.for_value("current_version", "an int or a str weight-version label", current)
    labels = None if order is None else _labels(order, "version_order")
    return _Staleness(current, maximum, labels)


def _optional_label(value: object, argument: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ContractTypeError.for_value(argument, "a str weight-version label or None", value)
    return value


def _labels(value: object, argument: str = "version_labels") -> tuple[str, ...]:
    labels = require_sequence(value, argument, "a sequence of str labels (not a bare str)")
    for index, label in enumerate(labels):
        if not isinstance(label, str):
            raise ContractTypeError.for_value(f"{argument}[{index}]", "a str label", label)
    return tuple(labels)


def _floor(value: object, argument: str) -> float | None:
    """A log-prob floor: ``None``, or a finite number ``<= 0`` as a float; ``argument`` names it in the error."""
    return None if value is None else require_float(value, argument, high=0, hint="a log-probability is <= 0")


def _device(value: object) -> torch.device:
    if isinstance(value, torch.device):
        return value
    if isinstance(value, str):
        try:
            return torch.device(value)
        except (RuntimeError, ValueError):
            pass
    raise ContractTypeError.for_value("device", "a torch.device or a device string such as 'cpu'", value)
