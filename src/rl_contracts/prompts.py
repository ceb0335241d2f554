"""Rollout prompt checks and prompt formatting for vLLM ``generate`` (SPEC §4).

- :func:`validate_rollout_prompt`: reject a rollout vLLM generated from another prompt than the learner's;
- :func:`format_prompt_for_vllm_generation`: turn a right-padded generation batch into vLLM prompt dicts
  (:class:`TokensPrompt` / :class:`TextPrompt`, the shapes of vLLM's own ``vllm.inputs`` TypedDicts).

This module imports neither torch nor vLLM: numpy arrays and torch tensors are recognised by duck typing
(``tolist``, ``ndim``/``dim()``, ``shape`` and the ``dtype`` name).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, final, overload

from typing_extensions import NotRequired, TypedDict

from ._messages import render, render_list, type_name
from .checks import array_dims, describe_array, int_or_none, is_sequence, require_int, token_ids
from .errors import ContractTypeError, PromptFormatError, RolloutPromptMismatchError

__all__ = [
    "OLDER_MEDIA_KEYS",
    "IntArrayLike",
    "TextPrompt",
    "TokensPrompt",
    "VllmPrompt",
    "format_prompt_for_vllm_generation",
    "validate_rollout_prompt",
]

_EXCERPT_BEFORE = 2
"""How many tokens before the first mismatch a rollout-prompt excerpt shows (it shows 8 in all)."""

OLDER_MEDIA_KEYS: tuple[tuple[str, str], ...] = (
    ("vllm_images", "image"),
    ("vllm_audios", "audio"),
    ("vllm_videos", "video"),
)
"""The older per-modality batch keys and the modality each one feeds, in emission order (SPEC §4.2)."""


@final
class TokensPrompt(TypedDict):
    """A token prompt, as vLLM's ``vllm.inputs.TokensPrompt``: the unpadded ids and, optionally, media."""

    prompt_token_ids: list[int]
    multi_modal_data: NotRequired[dict[str, Any]]


@final
class TextPrompt(TypedDict):
    """A text prompt with media, as vLLM's ``vllm.inputs.TextPrompt``: the raw content and the row media."""

    prompt: str
    multi_modal_data: NotRequired[dict[str, Any]]


VllmPrompt = TokensPrompt | TextPrompt
"""One prompt for ``LLM.generate``; both TypedDicts are final, so ``"prompt_token_ids" in p`` narrows it."""


class IntArrayLike(Protocol):
    """A 1-D integer numpy array or torch tensor, read with ``tolist()`` (its dtype and rank are checked)."""

    def tolist(self) -> Any: ...


def validate_rollout_prompt(
    expected: Sequence[int] | IntArrayLike, actual: Sequence[int] | IntArrayLike | None
) -> None:
    """Reject a rollout that vLLM generated from a different prompt than the learner's.

    ``expected`` is the learner's unpadded prompt (``input_ids[i, :input_lengths[i]]``), ``actual`` what
    vLLM prefilled (``RequestOutput.prompt_token_ids``).  Each may be a list, a tuple, or a 1-D integer numpy
    array or torch tensor; the container type never matters.  Returns ``None`` when both hold the same ids
    (two empty prompts match).

    Raises:
        ContractTypeError: an argument that is not a 1-D integer sequence (a 2-D array, a float or bool
            element).
        RolloutPromptMismatchError: ``actual is None`` or the ids differ.  The message names both lengths,
            the first differing index (the shorter length when one is a prefix of the other), both tokens
            there when they exist, and an excerpt of at most 8 ids of each side from just before that index.
            Attributes ``expected_length``, ``actual_length`` and ``first_mismatch_index`` (``None`` when
            ``actual`` is).

    Example: ``validate_rollout_prompt([41, 42], [41, 99])`` raises with ``first_mismatch_index=1,
    expected_token=42, actual_token=99``; ``validate_rollout_prompt([41, 42], (41, 42))`` passes.

    Divergence: the reference compares with ``!=``, so a tuple never equals a list, and its message has no
    mismatch position.
    """
    want = token_ids(expected, "expected")
    got = None if actual is None else token_ids(actual, "actual")
    if got is not None and want == got:
        return
    index: int | None = None
    tokens = excerpt = ""
    if got is not None:
        shorter = min(len(want), len(got))
        index = next((j for j in range(shorter) if want[j] != got[j]), shorter)
        if index < shorter:
            tokens = f", expected_token={render(want[index])}, actual_token={render(got[index])}"
        start = max(index - _EXCERPT_BEFORE, 0)
        excerpt = (
            f" Excerpts from index {start}: expected={render_list(want[start : start + 8])}, "
            f"actual={render_list(got[start : start + 8])}."
        )
    raise RolloutPromptMismatchError(
        "vLLM processed prompt differs from the learner prompt: "
        f"expected_length={len(want)}, actual_length={render(None if got is None else len(got))}, "
        f"first_mismatch_index={render(index)}{tokens}. Refusing to train on a different prompt.{excerpt}",
        expected_length=len(want),
        actual_length=None if got is None else len(got),
        first_mismatch_index=index,
    )


@overload
def format_prompt_for_vllm_generation(
    data: Mapping[str, Any], sample_idx: None = None
) -> list[VllmPrompt]: ...
@overload
def format_prompt_for_vllm_generation(data: Mapping[str, Any], sample_idx: int) -> VllmPrompt: ...
@overload
def format_prompt_for_vllm_generation(
    data: Mapping[str, Any], sample_idx: int | None = None
) -> list[VllmPrompt] | VllmPrompt: ...
def format_prompt_for_vllm_generation(
    data: Mapping[str, Any], sample_idx: int | None = None
) -> list[VllmPrompt] | VllmPrompt:
    """Turn a right-padded generation batch into vLLM ``generate`` prompts: one per row, or one row.

    ``data`` is any mapping (such as a ``BatchedDataDict``) with ``input_ids`` (2-D integer torch tensor or
    numpy array ``[B, W]``) and ``input_lengths`` (1-D integer array, list or tuple ``[B]``), and optionally
    ``vllm_content`` (``B`` items, ``str`` or ``None``) and either ``vllm_multi_modal_data`` (``B`` mappings
    from modality to media, or ``None``) or the older ``vllm_images``/``vllm_audios``/``vllm_videos`` (``B``
    per-row lists or tuples, or ``None``).  A key whose value is ``None`` counts as absent.

    Per row ``i`` with ``L = input_lengths[i]``, the media ``mm`` is a new dict of the row's non-empty media
    (``None`` values and empty lists/tuples dropped; in the older scheme a single item is unwrapped and two or
    more items forward the row list or tuple itself).  With no media the row is ``{"prompt_token_ids":
    input_ids[i, :L].tolist()}``; with media it is ``{"prompt": content, "multi_modal_data": mm}`` when the
    row's ``vllm_content`` is a string, else the token prompt plus ``"multi_modal_data": mm``.  Media objects
    are forwarded by identity; every dict is new; inputs are never mutated; ``mm_processor_kwargs`` is never
    emitted.  The whole batch is validated before any prompt is built.

    Returns:
        A list with one prompt per row when ``sample_idx`` is ``None``, else the prompt of row ``sample_idx``.

    Raises:
        ContractTypeError: ``data`` is not a mapping, or ``sample_idx`` is not an int (bools rejected).
        PromptFormatError: anything inconsistent in the batch (attributes ``key``, ``row``, ``value``): a
            missing ``input_ids``/``input_lengths``, a wrong dimension or a non-integer dtype, a row count
            other than ``B``, a length outside ``[0, W]``, ``sample_idx`` outside ``[0, B)``, both multimodal
            key schemes at once, or a row of the wrong type.

    Example: ``input_ids = [[5, 6, 7, 0], [8, 9, 0, 0]]`` and ``input_lengths = [3, 2]`` give
    ``[{"prompt_token_ids": [5, 6, 7]}, {"prompt_token_ids": [8, 9]}]``; with ``sample_idx=1``, the second
    dict.

    Divergence: the reference accepts a negative ``sample_idx`` (Python indexing), silently truncates a length
    larger than ``W``, turns a negative length into an empty prompt, and does not check batch sizes.  Its
    annotation says ``list`` even when it returns a single dict.

    Divergence: the reference ignores the older per-modality keys unless ``data`` has a ``vllm_content`` key;
    rl_contracts uses them whether or not it does.
    """
    if not isinstance(data, Mapping):
        raise ContractTypeError.for_value("data", "a mapping of batch keys (such as a BatchedDataDict)", data)
    index = None if sample_idx is None else require_int(sample_idx, "sample_idx")
    input_ids = _present(data, "input_ids", "a 2-D right-padded integer array [B, W]")
    shape = _integer_array_shape(
        input_ids, "input_ids", 2, "a 2-D integer array [B, W] (torch tensor or numpy array)"
    )
    batch, width = shape
    lengths = _lengths(_present(data, "input_lengths", "a 1-D integer array [B]"), batch, width)
    if index is not None and not 0 <= index < batch:
        raise PromptFormatError(
            f"sample_idx={render(index)} is out of range for a generation batch of B={render(batch)} rows; "
            f"expected 0 <= sample_idx < {render(batch)} (negative indices are rejected, not wrapped)",
            key="sample_idx",
            row=index,
            value=render(index),
        )
    contents = _rows(data, "vllm_content", batch, _check_content)
    media = _batch_media(data, batch)
    rows = range(batch) if index is None else (index,)
    prompts = [_prompt(input_ids, row, lengths[row], contents, media) for row in rows]
    return prompts if index is None else prompts[0]


def _present(data: Mapping[str, Any], key: str, expected: str) -> Any:
    value = data.get(key)
    if value is None:
        raise PromptFormatError(
            f"generation batch is missing '{key}' (absent or None); expected {expected}",
            key=key,
        )
    return value


def _integer_array_shape(value: Any, key: str, ndim: int, expected: str) -> tuple[int, ...]:
    """The shape of ``value`` when it is an ``ndim``-D integer array; else ``PromptFormatError``."""
    dims = array_dims(value)
    shape: Any = getattr(value, "shape", None) if dims is not None else None
    sizes = (
        [n for n in map(int_or_none, shape) if n is not None and n >= 0] if isinstance(shape, tuple) else []
    )
    if (
        dims is not None
        and dims[0] == ndim
        and dims[1].startswith(("int", "uint"))
        and isinstance(shape, tuple)
        and len(sizes) == len(shape) == ndim
    ):
        return tuple(sizes)

    found = (
        describe_array(value)
        if dims is None
        else f"{type_name(value)} with dtype {dims[1]} and shape {render(shape)}"
    )
    raise PromptFormatError(
        f"generation batch '{key}' must be {expected}, got {found}",
        key=key,
        value=found,
    )


def _lengths(value: Any, batch: int, width: int) -> list[int]:
    """``input_lengths`` as plain ints, each in ``[0, width]``, one per row of ``input_ids``."""
    expected = "a 1-D integer array [B] (torch tensor, numpy array, list or tuple of ints)"
    if isinstance(value, list | tuple):
        items: object = value
    else:
        _integer_array_shape(value, "input_lengths", 1, expected)
        items = value.tolist()
    if not isinstance(items, list | tuple):
        raise PromptFormatError(
            f"generation batch 'input_lengths'.tolist() returned {type_name(items)}, not a list",
            key="input_lengths",
            value=type_name(items),
        )
    converted = list(map(int_or_none, items))
    bad = next((row for row, length in enumerate(converted) if length is None), None)
    if bad is not None:
        raise PromptFormatError(
            f"generation batch 'input_lengths' must be {expected}, got {type_name(items[bad])} at row {bad}",
            key="input_lengths",
            row=bad,
            value=render(items[bad]),
        )
    lengths = [length for length in converted if length is not None]
    if len(lengths) != batch:
        raise PromptFormatError(
            f"generation batch 'input_lengths' has {len(lengths)} entries but 'input_ids' has "
            f"B={render(batch)} rows; the batch was collated inconsistently",
            key="input_lengths",
            value=render(len(lengths)),
        )
    for row, length in enumerate(lengths):
        if not 0 <= length <= width:
            raise PromptFormatError(
                f"generation batch 'input_lengths'[{row}]={render(length)} is outside [0, {render(width)}] "
                f"(W={render(width)} is the padded width of 'input_ids'); the lengths do not belong to these "
                "padded ids",
                key="input_lengths",
                row=row,
                value=render(length),
            )
    return lengths


def _check_content(row: object) -> str | None:
    return None if row is None or isinstance(row, str) else "a str or None"


def _check_mm_mapping(row: object) -> str | None:
    if row is None or (isinstance(row, Mapping) and all(isinstance(name, str) for name in row)):
        return None
    return "a mapping from modality name (str) to media, or None"


def _check_older_row(row: object) -> str | None:
    return None if row is None or isinstance(row, list | tuple) else "a list, a tuple or None"


def _rows(
    data: Mapping[str, Any], key: str, batch: int, check: Callable[[object], str | None]
) -> Sequence[Any] | None:
    """The per-row list under ``key`` (``None`` when absent), its length and every row's type checked."""
    rows = data.get(key)
    if rows is None:
        return None
    if not is_sequence(rows) or len(rows) != batch:
        count = f" with {len(rows)} entries" if isinstance(rows, Sequence) else ""
        raise PromptFormatError(
            f"generation batch '{key}' must be a list with exactly one entry per row (B={render(batch)}), "
            f"got {type_name(rows)}{count}",
            key=key,
            value=type_name(rows),
        )
    for row, item in enumerate(rows):
        expected = check(item)
        if expected is not None:
            raise PromptFormatError(
                f"generation batch '{key}'[{row}] must be {expected}, got {type_name(item)}: {render(item)}",
                key=key,
                row=row,
                value=render(item),
            )
    return rows


_Media = tuple[Sequence[Any] | None, list[tuple[str, Sequence[Any]]]]
"""The validated media of a batch: the current-scheme rows, or the older ``(modality, rows)`` pairs."""


def _batch_media(data: Mapping[str, Any], batch: int) -> _Media:
    older_present = [key for key, _ in OLDER_MEDIA_KEYS if data.get(key) is not None]
    if older_present and data.get("vllm_multi_modal_data") is not None:
        raise PromptFormatError(
            "generation batch has both 'vllm_multi_modal_data' and the older per-modality key(s) "
            f"{render_list(older_present)}: ambiguous multimodal key scheme; use one scheme per batch",
            key="vllm_multi_modal_data",
            value=render_list(older_present),
        )
    current = _rows(data, "vllm_multi_modal_data", batch, _check_mm_mapping)
    older = [
        (modality, rows)
        for key, modality in OLDER_MEDIA_KEYS
        if (rows := _rows(data, key, batch, _check_older_row)) is not None
    ]
    return current, older


def _is_empty_media(value: object) -> bool:
    return value is None or (isinstance(value, list | tuple) and len(value) == 0)


def _row_media(media: _Media, row: int) -> dict[str, Any]:
    current, older = media
    mm: dict[str, Any] = {}
    if current is not None:
        if current[row]:
            mm = {name: value for name, value in current[row].items() if not _is_empty_media(value)}
        return mm
    for modality, rows in older:
        items = rows[row]
        if items is None or len(items) == 0:
            continue
        value = items[0] if len(items) == 1 else items
        if not _is_empty_media(value):
            mm[modality] = value
    return mm


def _odd_type(ids: list[Any]) -> str:
    """The type name of the first element of ``ids`` that is not an ``int``."""
    return next(type_name(item) for item in ids if type(item) is not int)


def _prompt(
    input_ids: Any, row: int, length: int, contents: Sequence[Any] | None, media: _Media
) -> VllmPrompt:
    mm = _row_media(media, row)
    content = contents[row] if contents is not None and mm else None
    if content is not None:
        return TextPrompt(prompt=content, multi_modal_data=mm)
    ids = input_ids[row, :length].tolist()
    if not isinstance(ids, list) or not {int}.issuperset(map(type, ids)):
        found = type_name(ids) if not isinstance(ids, list) else f"a list holding {_odd_type(ids)}"
        raise PromptFormatError(
            f"generation batch 'input_ids'[{row}, :{length}].tolist() returned {found}, not a flat list of ints; "
            "an ndarray subclass such as numpy.matrix keeps rows 2-D: pass numpy.asarray(input_ids)",
            key="input_ids",
            row=row,
            value=found,
        )
    prompt = TokensPrompt(prompt_token_ids=ids)
    if mm:
        prompt["multi_modal_data"] = mm
    return prompt
