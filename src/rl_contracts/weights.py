"""Per-token weight versions of a rollout: which weights sampled every output token (SPEC §4.3).

Asynchronous RL updates the engine's weights while requests are in flight.  vLLM 0.32 and later label each
finished ``CompletionOutput`` with ``weight_versions``, a list of spans ``(version, start, end)`` meaning "output
tokens ``[start, end)`` were sampled by the weights the trainer labelled ``version`` with
``set_weight_version``".  This module reads those spans, checks they tile the output exactly, checks their labels
against what a rollout allows, and maps every token to its label for importance-sampling correction.

Imports numpy, never torch or vLLM.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field, StrictStr, model_validator

from ._internal.config_paths import value_at
from ._internal.messages import render, render_list, render_name, type_name
from .checks import ContractInt, int_or_none, is_collection, is_sequence, require_bool, require_int, token_ids
from .errors import ConfigContractError, ContractTypeError, WeightVersionError
from .protocols import CompletionOutputLike

__all__ = [
    "RECIPE_STALENESS_KEYS",
    "WeightVersionSpan",
    "check_weight_version_staleness",
    "check_weight_versions",
    "max_staleness_from_recipe",
    "weight_version_lag",
    "weight_version_per_token",
    "weight_version_spans",
]

_FIELDS = ("version", "start", "end")
_MAX_TOKENS = int(np.iinfo(np.intp).max) // np.dtype(np.int32).itemsize
"""The longest per-token array :func:`weight_version_per_token` can return: numpy's bound on an int32 array."""


class WeightVersionSpan(BaseModel):
    """Output tokens ``[start, end)`` were sampled by the weights labelled ``version``.

    Frozen.  ``version`` is a non-empty ``str``, ``start >= 0`` and ``end > start`` (``ContractInt``, never
    bools); anything else raises pydantic's ``ValidationError``.  vLLM's own ``WeightVersionSpan`` is a dataclass
    with the same three fields.

    >>> WeightVersionSpan(version="7", start=0, end=4).end
    4
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: StrictStr = Field(min_length=1)
    """The label the trainer passed to ``set_weight_version`` before these tokens were sampled."""
    start: ContractInt = Field(ge=0)
    """Index of the first output token of the span."""
    end: ContractInt
    """One past the last output token of the span (``end > start``)."""

    @model_validator(mode="after")
    def _check_order(self) -> WeightVersionSpan:
        if self.end <= self.start:
            raise ValueError(f"end={self.end} must be greater than start={self.start}: a span is never empty")
        return self


def _span_fields(span: object, where: str) -> tuple[object, object, object]:
    """SPEC §4.3 step 2: ``(version, start, end)`` of one span in any of its four accepted forms."""
    if isinstance(span, WeightVersionSpan) or (dataclasses.is_dataclass(span) and not isinstance(span, type)):
        missing = [name for name in _FIELDS if not hasattr(span, name)]
        if not missing:
            return span.version, span.start, span.end  # type: ignore[union-attr]
    elif isinstance(span, Mapping):
        if all(name in span for name in _FIELDS):
            return span["version"], span["start"], span["end"]
    elif isinstance(span, tuple) and len(span) == len(_FIELDS):
        return span[0], span[1], span[2]
    raise ContractTypeError.for_value(
        where,
        "a WeightVersionSpan, vLLM's WeightVersionSpan dataclass, a mapping with 'version', 'start' and 'end', "
        "or a (version, start, end) tuple",
        span,
    )


def _as_span(span: object, where: str) -> tuple[str, int, int]:
    """One span's fields type-checked: a ``str`` label and two ints (bools rejected)."""
    version, start, end = _span_fields(span, where)
    if not isinstance(version, str):
        raise ContractTypeError.for_value(f"{where}.version", "a str label", version)
    bounds = int_or_none(start), int_or_none(end)
    for name, raw, value in (("start", start, bounds[0]), ("end", end, bounds[1])):
        if value is None:
            raise ContractTypeError.for_value(f"{where}.{name}", "an int (not bool)", raw)
    return version, bounds[0], bounds[1]  # type: ignore[return-value]


def _span_fault(
    spans: Sequence[tuple[str, int, int]], index: int, token_count: int, labels_change: bool
) -> str | None:
    """What is wrong with ``spans[index]`` given the spans before it (all sound), or ``None``; ``labels_change``
    also requires a label other than the previous span's."""
    version, start, end = spans[index]
    expected_start = 0 if index == 0 else spans[index - 1][2]
    if not version:
        return "has an empty version label"
    if start != expected_start:
        return (
            "does not start at 0"
            if index == 0
            else f"does not start where span {index - 1} ends ({render(expected_start)})"
        )
    if end <= start:
        return "is empty or reversed (end <= start)"
    if end > token_count:
        return f"ends beyond the {render(token_count)} output tokens"
    if labels_change and index > 0 and version == spans[index - 1][0]:
        return f"repeats the label of span {index - 1}; vLLM starts a span only when the label changes"
    if index == len(spans) - 1 and end != token_count:
        return f"is the last span but ends before the {render(token_count)} output tokens"
    return None


def _checked_spans(
    raw: Sequence[object],
    token_count: int,
    output_index: int | None,
    where: str,
    *,
    labels_change: bool = True,
) -> tuple[WeightVersionSpan, ...]:
    """SPEC §4.3 steps 2–3: every span well-typed, then the list tiles ``[0, token_count)``, with changing labels
    unless ``labels_change`` is false."""
    fields = [_as_span(span, f"{where}[{i}]") for i, span in enumerate(raw)]
    context = f"completion output {render(output_index)}"
    if not fields and token_count > 0:
        raise WeightVersionError(
            f"{where} of {context} is empty but the output has token_count={render(token_count)} tokens; every "
            "sampled token must be labelled with the weight version that sampled it",
            output_index=output_index,
            token_count=token_count,
        )
    for index in range(len(fields)):
        fault = _span_fault(fields, index, token_count, labels_change)
        if fault is not None:
            version, start, end = fields[index]
            raise WeightVersionError(
                f"{where}[{index}] (version='{render_name(version)}', start={render(start)}, end={render(end)}) of "
                f"{context} {fault}; token_count={render(token_count)}. The spans must start at 0, be contiguous, "
                "end at token_count"
                + (" and change label from one span to the next" if labels_change else ""),
                output_index=output_index,
                span_index=index,
                version=version,
                start=start,
                end=end,
                token_count=token_count,
            )
    return tuple(
        WeightVersionSpan.model_construct(version=version, start=start, end=end)
        for version, start, end in fields
    )


def weight_version_spans(
    completion_output: CompletionOutputLike, *, required: bool = False
) -> tuple[WeightVersionSpan, ...] | None:
    """The validated weight-version spans of one completion output, or ``None`` when the engine reported none.

    Reads ``completion_output.weight_versions`` (missing counts as ``None``): a list or tuple whose spans are
    :class:`WeightVersionSpan`\\ s, vLLM's dataclass, ``{"version", "start", "end"}`` mappings (the JSON form)
    or ``(version, start, end)`` tuples.  With ``n = len(completion_output.token_ids)`` the spans must start at
    0, be contiguous, end at ``n`` (none when ``n == 0``) and change label from one span to the next.

    Returns:
        The spans as new frozen :class:`WeightVersionSpan`\\ s, or ``None`` when ``weight_versions`` is ``None``
        and ``required`` is false.

    Raises:
        ContractTypeError: ``required`` is no bool, ``weight_versions`` is no list/tuple, a span has another form,
            a label is no ``str`` or a bound no int.
        WeightVersionError: no spans while ``required``, token_ids missing, or the first span that breaks the
            tiling (``.span_index``, ``.version``, ``.start``, ``.end``, ``.token_count``, ``.output_index``).

    Example: an output of 12 tokens with ``[("7", 0, 4), ("8", 4, 12)]`` gives two spans; ``[("7", 0, 4),
    ("8", 5, 12)]`` raises naming span 1.
    """
    require_bool(required, "required")
    raw = getattr(completion_output, "weight_versions", None)
    output_index = int_or_none(getattr(completion_output, "index", None))
    if raw is None:
        if required:
            raise WeightVersionError(
                f"completion output {render(output_index)} carries no weight_versions; the engine must be vLLM "
                ">= 0.32 and the trainer must call set_weight_version after every weight update",
                output_index=output_index,
            )
        return None
    where = "completion_output.weight_versions"
    if not isinstance(raw, list | tuple):
        raise ContractTypeError.for_value(where, "a list of weight-version spans", raw)
    ids = getattr(completion_output, "token_ids", None)
    if ids is None:
        raise WeightVersionError(
            f"completion output {render(output_index)} carries weight_versions but no token_ids, so the spans "
            "cannot be checked against the output tokens",
            output_index=output_index,
        )
    token_count = len(token_ids(ids, "completion_output.token_ids"))
    return _checked_spans(raw, token_count, output_index, where)


def _allowed_check(allowed: object) -> tuple[Callable[[str], object], str]:
    """``allowed`` as a predicate plus its summary for messages; a collection (a mapping: its keys) must hold only
    ``str`` labels."""
    if is_collection(allowed):
        labels = list(allowed)
        if not isinstance(allowed, Collection):
            raise ContractTypeError.for_value(
                "allowed", "a collection of str labels (not an iterator)", allowed
            )
        odd = [label for label in labels if not isinstance(label, str)]
        if odd:
            raise ContractTypeError.for_value("allowed", "a collection of str labels", odd[0])
        members = frozenset(labels)
        return members.__contains__, render_list(sorted(members))
    if callable(allowed):
        name = getattr(allowed, "__qualname__", None) or type_name(allowed)
        return allowed, f"labels accepted by {render_name(name)}"
    raise ContractTypeError.for_value(
        "allowed", "a collection of str labels (not a bare str) or a callable taking a label", allowed
    )


def check_weight_versions(
    completion_output: CompletionOutputLike,
    *,
    allowed: Collection[str] | Callable[[str], bool],
    required: bool = True,
) -> tuple[WeightVersionSpan, ...] | None:
    """Run :func:`weight_version_spans`, then require every span's label to be ``allowed``.

    ``allowed`` is a collection of labels (membership; a mapping is the collection of its keys, as for ``in``) or
    a callable (a truthy result allows the label; what it raises propagates).  A bare ``str`` is rejected, since
    ``"8"`` is not the collection ``{"8"}``.  ``.output_index`` and the message's "completion output {index}" are
    the output's own ``index``, its choice among the request's ``n`` outputs (0 for every request when ``n ==
    1``); a batch of requests names its row itself (:mod:`rl_contracts.rollouts` does).

    Returns:
        The spans, or ``None`` when the output carries none and ``required`` is false.

    Raises:
        ContractTypeError: ``allowed`` is neither a collection of ``str`` (a mapping: ``str`` keys) nor a
            callable; see also :func:`weight_version_spans`.
        WeightVersionError: what :func:`weight_version_spans` raises, or the first span whose label is not
            allowed (``.span_index``, ``.version``, ``.start``, ``.end``).

    Example: a rollout that allows only ``{"8"}`` rejects an output whose spans are ``[("7", 0, 4), ("8", 4,
    12)]``: "output tokens [0, 4) of completion output 0 were sampled by weights '7', ...".
    """
    is_allowed, summary = _allowed_check(allowed)
    spans = weight_version_spans(completion_output, required=required)
    if spans is None:
        return None
    output_index = int_or_none(getattr(completion_output, "index", None))
    for index, span in enumerate(spans):
        if not is_allowed(span.version):
            raise WeightVersionError(
                f"output tokens [{render(span.start)}, {render(span.end)}) of completion output "
                f"{render(output_index)} were sampled by weights '{render_name(span.version)}', which this rollout "
                "does not allow (allowed: "
                f"{summary}); the engine was not updated, or the rollout is older than the trainer accepts",
                output_index=output_index,
                span_index=index,
                version=span.version,
                start=span.start,
                end=span.end,
                token_count=spans[-1].end,
            )
    return spans


def weight_version_per_token(
    spans: Sequence[WeightVersionSpan], *, labels: Sequence[str]
) -> npt.NDArray[np.int32]:
    """For every output token, the index in ``labels`` of the weight version that sampled it.

    ``spans`` must tile ``[0, spans[-1].end)``, so that every token lies in exactly one span; ``labels`` is the
    trainer's list of behaviour-policy labels (a label listed twice maps to its first position).  Built with one
    ``numpy.repeat`` over the spans, no Python loop over tokens.

    Adjacent spans may carry the same label: SPEC §4.3 defines the result token by token (the index of the label
    of the token's span), so such spans are mapped as they are.  :func:`weight_version_spans` rejects them,
    because vLLM starts a span only when the label changes; spans that went through it never have them.

    Returns:
        A new int32 array of length ``spans[-1].end`` (length 0 for no spans).

    Raises:
        ContractTypeError: ``spans`` or ``labels`` is no sequence (a bare ``str`` included), a span is no
            :class:`WeightVersionSpan`, or a label is no ``str``.
        WeightVersionError: the spans do not tile their range, end beyond what a per-token array can index
            (``(2**63 - 1) // 4`` tokens on a 64-bit host, numpy's largest int32 array; a count within it that
            does not fit in memory raises ``MemoryError``, an environment error), or a span's label is absent from
            ``labels`` (``.span_index``, ``.version``).

    >>> spans = (WeightVersionSpan(version="7", start=0, end=2), WeightVersionSpan(version="8", start=2, end=5))
    >>> weight_version_per_token(spans, labels=["8", "7"]).tolist()
    [1, 1, 0, 0, 0]
    """
    if not is_sequence(spans):
        raise ContractTypeError.for_value("spans", "a sequence of WeightVersionSpan", spans)
    if not is_sequence(labels):
        raise ContractTypeError.for_value("labels", "a sequence of str labels (not a bare str)", labels)
    positions: dict[str, int] = {}
    for position, label in enumerate(labels):
        if not isinstance(label, str):
            raise ContractTypeError.for_value(f"labels[{position}]", "a str label", label)
        positions.setdefault(label, position)
    for index, span in enumerate(spans):
        if not isinstance(span, WeightVersionSpan):
            raise ContractTypeError.for_value(f"spans[{index}]", "a WeightVersionSpan", span)
    token_count = spans[-1].end if spans else 0
    checked = _checked_spans(spans, token_count, None, "spans", labels_change=False)
    if token_count > _MAX_TOKENS:
        last = checked[-1]
        raise WeightVersionError(
            f"spans[{len(checked) - 1}] (version='{render_name(last.version)}', start={render(last.start)}, "
            f"end={render(last.end)}) ends beyond what a per-token array can index: at most {_MAX_TOKENS} tokens "
            "(numpy's largest int32 array); no rollout has that many tokens, so the spans are corrupt",
            span_index=len(checked) - 1,
            version=last.version,
            start=last.start,
            end=last.end,
            token_count=token_count,
        )
    codes = np.empty(len(checked), dtype=np.int32)
    for index, span in enumerate(checked):
        code = positions.get(span.version)
        if code is None:
            raise WeightVersionError(
                f"spans[{index}] (version='{render_name(span.version)}', start={render(span.start)}, "
                f"end={render(span.end)}) has a label absent from labels={render_list(list(positions))}; add "
                "every weight version the rollout may carry to labels",
                span_index=index,
                version=span.version,
                start=span.start,
                end=span.end,
                token_count=token_count,
            )
        codes[index] = code
    lengths = np.fromiter((span.end - span.start for span in checked), dtype=np.int64, count=len(checked))
    return np.repeat(codes, lengths)


# ---------------------------------------------------------------------------------------------------- staleness


def _integer_label(label: str) -> int | None:
    """``label`` as a version number when it is a canonical non-negative decimal (``"7"``, not ``"07"`` or
    ``"v7"``), else ``None``."""
    if label.isascii() and label.isdigit() and (label == "0" or not label.startswith("0")):
        return int(label)
    return None


def _version_order(version_order: object) -> dict[str, int]:
    labels = is_sequence(version_order) and list(version_order)
    if labels is False:
        raise ContractTypeError.for_value(
            "version_order", "a sequence of distinct str labels, oldest first (not a bare str)", version_order
        )
    positions: dict[str, int] = {}
    for index, label in enumerate(labels):
        if not isinstance(label, str):
            raise ContractTypeError.for_value(f"version_order[{index}]", "a str label", label)
        if label in positions:
            raise WeightVersionError(
                f"version_order lists '{render_name(label)}' twice (positions {positions[label]} and {index}); "
                "each weight version has one place in the order",
                version=label,
            )
        positions[label] = index
    return positions


def _placed(label: str, place: int | None, among: str, fix: str) -> int:
    """``place`` of ``label`` in the version order, or the error saying it has none."""
    if place is None:
        raise WeightVersionError(
            f"weight version '{render_name(label)}' cannot be ordered among {among}, so its staleness cannot be "
            f"told; {fix}",
            version=label,
        )
    return place


def weight_version_lag(
    version: str, *, current_version: int | str, version_order: Sequence[str] | None = None
) -> int:
    """How many weight versions ``version`` lags behind ``current_version``: 0 for the current weights.

    vLLM's labels are opaque strings, so an order must be known; this reads it fail-closed:

    - with ``version_order`` (distinct labels, oldest first), the lag is the difference of positions; both
      labels must be in it;
    - without it, versions are integers: ``current_version`` an int >= 0 (or its canonical decimal str) and
      ``version`` a canonical decimal label (``set_weight_version(str(step))``); any other label (vLLM's
      ``"default"``, ``"v7"``, ``"07"``) is refused, never ordered by guess.

    Raises:
        ContractTypeError: ``version`` or a label of ``version_order`` is no ``str``, ``current_version`` is
            neither an int nor a str, ``version_order`` is no sequence.
        WeightVersionError: a label that cannot be ordered (absent from ``version_order``, or not an integer
            without it), a label listed twice, or ``version`` newer than ``current_version`` (a negative lag:
            ``current_version`` is not the trainer's current version).

    >>> weight_version_lag("5", current_version=7), weight_version_lag("b", current_version="c", version_order=["a", "b", "c"])
    (2, 1)
    """
    if not isinstance(version, str):
        raise ContractTypeError.for_value("version", "a str label", version)
    if version_order is not None:
        positions = _version_order(version_order)
        if not isinstance(current_version, str):
            raise ContractTypeError.for_value(
                "current_version", "a str label (version_order is given)", current_version
            )
        among = f"version_order={render_list(list(positions))}"
        fix = "list every weight version the rollouts may carry in version_order, oldest first"
        current_place, place = positions.get(current_version), positions.get(version)
    else:
        current_place = int_or_none(current_version)
        if isinstance(current_version, str):
            current_place = _integer_label(current_version)
        elif current_place is None or current_place < 0:
            raise ContractTypeError.for_value(
                "current_version",
                "an int >= 0, a decimal str, or a str label with version_order",
                current_version,
            )
        among = "the integer versions"
        fix = "label every weight update with its integer step (set_weight_version(str(step))), or pass version_order"
        place = _integer_label(version)
    lag = _placed(str(current_version), current_place, among, fix) - _placed(version, place, among, fix)
    if lag < 0:
        raise WeightVersionError(
            f"weight version '{render_name(version)}' is {-lag} versions newer than current_version="
            f"{render(current_version)}; pass the trainer's current version (the newest one the engine was given)",
            version=version,
        )
    return lag


def check_weight_version_staleness(
    spans: Sequence[WeightVersionSpan],
    *,
    current_version: int | str,
    max_staleness: int,
    version_order: Sequence[str] | None = None,
) -> int:
    """Require every span's weights to lag at most ``max_staleness`` versions behind ``current_version``.

    The lag of each span is :func:`weight_version_lag` (its ordering rules apply).  Returns the largest lag
    (0 for no spans).  ``max_staleness`` is the bound asynchronous RL sets (NeMo RL's
    ``grpo.async_grpo.max_trajectory_age_steps``, see :func:`max_staleness_from_recipe`).

    Raises:
        ContractTypeError: ``max_staleness`` is no int, a span is no :class:`WeightVersionSpan`, or what
            :func:`weight_version_lag` raises.
        WeightVersionError: ``max_staleness < 0``, a label that cannot be ordered, or the first span whose lag
            exceeds the bound (``.span_index``, ``.version``, ``.start``, ``.end``).
    """
    bound = require_int(max_staleness, "max_staleness")
    if bound < 0:
        raise WeightVersionError(f"max_staleness must be >= 0, got {bound}")
    if not is_sequence(spans):
        raise ContractTypeError.for_value("spans", "a sequence of WeightVersionSpan", spans)
    worst = 0
    for index, span in enumerate(spans):
        if not isinstance(span, WeightVersionSpan):
            raise ContractTypeError.for_value(f"spans[{index}]", "a WeightVersionSpan", span)
        lag = weight_version_lag(span.version, current_version=current_version, version_order=version_order)
        if lag > bound:
            raise WeightVersionError(
                f"output tokens [{span.start}, {span.end}) were sampled by weights '{render_name(span.version)}', "
                f"{lag} versions behind current_version={render(current_version)}, beyond max_staleness={bound}; "
                "drop the rollout, or the trainer is consuming rollouts older than its async bound allows",
                span_index=index,
                version=span.version,
                start=span.start,
                end=span.end,
                token_count=spans[-1].end,
            )
        worst = max(worst, lag)
    return worst


RECIPE_STALENESS_KEYS: tuple[tuple[str, str, str], ...] = (
    ("grpo.async_grpo", "enabled", "max_trajectory_age_steps"),
    ("ppo.async_ppo", "enabled", "max_trajectory_age_steps"),
)
"""NeMo RL's async sections (its ``AsyncGRPOConfig``/``AsyncPPOConfig``): the section, its switch and its bound
(default 1 when absent)."""

_SAMPLERS_WITH_STALENESS = ("windowed", "ready_first", "weight_fifo")
"""``async_rl.sampler`` names whose ``max_staleness_versions`` (default 1) bounds the lag (single controller)."""


def _recipe_int(document: Mapping[Any, Any], dotted: str, default: int) -> int:
    value = value_at(document, dotted)
    if value is None:
        return default
    number = int_or_none(value)
    if number is None or number < 0:
        raise ConfigContractError(
            f"{dotted}={render(value)} is not a staleness bound (an int >= 0); resolve the recipe's "
            "interpolations first (load_recipe) and fix the value"
        )
    return number


def max_staleness_from_recipe(recipe: Mapping[str, Any] | object) -> int | None:
    """The weight-version lag a NeMo RL recipe's asynchronous settings allow, or ``None`` when it sets none.

    ``recipe`` is the composed document (a mapping, e.g. ``load_recipe(path).document``, resolved) or an object
    holding it as ``.document``.  Read, in order:

    - ``grpo.async_grpo`` / ``ppo.async_ppo`` with ``enabled: true``: ``max_trajectory_age_steps`` (NeMo RL's
      default 1 when absent);
    - ``async_rl.sampler`` (the single controller) named ``windowed``, ``ready_first`` or ``weight_fifo``:
      ``max_staleness_versions`` (default 1).

    ``None`` means the recipe is synchronous (no enabled async section): its rollouts are on-policy, and a
    trainer that wants that checked passes ``max_staleness=0`` itself.  The bound counts weight versions as
    NeMo RL counts steps, so label each update with its step (``set_weight_version(str(step))``).

    Raises:
        ContractTypeError: ``recipe`` is neither a mapping nor has a mapping ``.document``.
        ConfigContractError: a bound or switch of the wrong type (an unresolved interpolation included), or an
            ``async_rl.sampler`` whose bound this function does not interpret (``in_order``, ``custom``): pass
            ``max_staleness`` yourself.

    >>> max_staleness_from_recipe({"grpo": {"async_grpo": {"enabled": True, "max_trajectory_age_steps": 2}}})
    2
    """
    document = recipe if isinstance(recipe, Mapping) else getattr(recipe, "document", None)
    if not isinstance(document, Mapping):
        raise ContractTypeError.for_value(
            "recipe", "a recipe mapping, or a LoadedRecipe (whose .document is one)", recipe
        )
    for section, switch, bound in RECIPE_STALENESS_KEYS:
        enabled = value_at(document, f"{section}.{switch}")
        if enabled is not None and not isinstance(enabled, bool):
            raise ConfigContractError(
                f"{section}.{switch}={render(enabled)} is not a bool; resolve the recipe's interpolations first"
            )
        if enabled:
            return _recipe_int(document, f"{section}.{bound}", 1)
    sampler = value_at(document, "async_rl.sampler")
    if sampler is None:
        return None
    name = value_at(document, "async_rl.sampler.name") if isinstance(sampler, Mapping) else sampler
    if name in _SAMPLERS_WITH_STALENESS:
        return _recipe_int(document, "async_rl.sampler.max_staleness_versions", 1)
    raise ConfigContractError(
        f"async_rl.sampler.name={render(name)} bounds staleness in its own terms (only "
        f"{render_list(list(_SAMPLERS_WITH_STALENESS))} carry max_staleness_versions); pass max_staleness yourself"
    )
