"""Rollout prompt checks and prompt formatting for vLLM ``generate`` (SPEC §4).

- :func:`validate_rollout_prompt`: reject a rollout vLLM generated from another prompt than the learner's;
- :func:`format_prompt_for_vllm_generation`: turn a right-padded generation batch into vLLM prompt dicts
  (:class:`TokensPrompt` / :class:`TextPrompt`, the shapes of vLLM's own ``vllm.inputs`` TypedDicts);
- prompt hygiene, for faults that pass when both sides agree: :func:`check_bos_not_repeated` (a prompt that starts
  with the BOS twice, also an option of :func:`validate_rollout_prompt`), and :func:`tokenizer_fingerprint` /
  :func:`check_tokenizers_match` (a learner whose tokenizer is not the engine's).

This module imports neither torch nor vLLM: numpy arrays and torch tensors are recognised by duck typing
(``tolist``, ``ndim``/``dim()``, ``shape`` and the ``dtype`` name).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, final, overload

from pydantic import BaseModel, ConfigDict
from typing_extensions import NotRequired, TypedDict

from ._internal.messages import render, render_list, render_name, type_name
from .checks import (
    ContractInt,
    array_dims,
    describe_array,
    int_or_none,
    is_collection,
    is_sequence,
    require_int,
    require_str,
    token_ids,
)
from .errors import ContractTypeError, PromptFormatError, RolloutPromptMismatchError, TokenizerMismatchError
from .protocols import ProcessorLike, VocabularyTokenizerLike

__all__ = [
    "MEDIA_PLACEHOLDER_TOKENS",
    "OLDER_MEDIA_KEYS",
    "TOKENIZER_COMPONENTS",
    "IntArrayLike",
    "TextPrompt",
    "TokenizerFingerprint",
    "TokensPrompt",
    "VllmPrompt",
    "check_bos_not_repeated",
    "check_tokenizers_match",
    "format_prompt_for_vllm_generation",
    "media_placeholder_token_ids",
    "tokenizer_fingerprint",
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


def _repeated_bos_error(ids: list[int], bos: int, name: str) -> PromptFormatError:
    return PromptFormatError(
        f"{name} starts with the BOS id {render(bos)} twice ({render_list(ids[:8], total=len(ids))}): the chat "
        "template rendered a BOS and the tokenizer added another. Tokenize rendered chat text with "
        "add_special_tokens=False (or render with tokenize=True), and give vLLM token ids, not text, for a "
        "rendered prompt.",
        key=name,
        value=render_list(ids[:2]),
    )


def check_bos_not_repeated(
    prompt: Sequence[int] | IntArrayLike, bos_token_id: int, *, name: str = "prompt"
) -> None:
    """Reject a prompt that starts with the BOS id twice, the mark of a BOS added to an already rendered template.

    A chat template that renders ``{{ bos_token }}``, tokenized again with ``add_special_tokens=True`` (or sent to
    vLLM as text, which adds its own), starts with two BOS tokens.  The model was never trained on that, and the
    rollout check cannot see it when the learner and the engine both carry it.  ``prompt`` is a list, tuple or
    1-D integer array or tensor; ``name`` is how the message calls it.  Returns ``None`` otherwise (an empty or
    one-token prompt passes).

    Raises:
        ContractTypeError: ``prompt`` is not a 1-D integer sequence, ``bos_token_id`` is not an int (bools
            rejected), or ``name`` is not a ``str``.
        PromptFormatError: ``prompt[0] == prompt[1] == bos_token_id``; ``key`` is ``name``, ``value`` the first
            two ids.

    Example: ``check_bos_not_repeated([1, 1, 5], 1)`` raises; ``check_bos_not_repeated([1, 5, 1], 1)`` passes.
    """
    ids = token_ids(prompt, name if isinstance(name, str) else "prompt")
    bos = require_int(bos_token_id, "bos_token_id")
    require_str(name, "name")
    if len(ids) >= 2 and ids[0] == ids[1] == bos:
        raise _repeated_bos_error(ids, bos, name)


def validate_rollout_prompt(
    expected: Sequence[int] | IntArrayLike,
    actual: Sequence[int] | IntArrayLike | None,
    *,
    bos_token_id: int | None = None,
) -> None:
    """Reject a rollout that vLLM generated from a different prompt than the learner's.

    ``expected`` is the learner's unpadded prompt (``input_ids[i, :input_lengths[i]]``), ``actual`` what
    vLLM prefilled (``RequestOutput.prompt_token_ids``).  Each may be a list, a tuple, or a 1-D integer numpy
    array or torch tensor; the container type never matters.  Returns ``None`` when both hold the same ids
    (two empty prompts match).

    With ``bos_token_id`` (opt-in, keyword-only), each prompt is first checked with :func:`check_bos_not_repeated`
    (the learner's as ``expected``, the engine's as ``actual``): a doubled BOS passes the comparison when both
    sides carry it.

    Raises:
        ContractTypeError: an argument that is not a 1-D integer sequence (a 2-D array, a float or bool
            element), or a ``bos_token_id`` that is not an int or ``None``.
        PromptFormatError: with ``bos_token_id``, a prompt that starts with it twice (``key`` is ``"expected"``
            or ``"actual"``); checked before the comparison.
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
    if bos_token_id is not None:
        bos = require_int(bos_token_id, "bos_token_id")
        for name, ids in (("expected", want), ("actual", got)):
            if ids is not None and len(ids) >= 2 and ids[0] == ids[1] == bos:
                raise _repeated_bos_error(ids, bos, name)
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


TOKENIZER_COMPONENTS = ("vocabulary", "special_token_ids", "chat_template", "added_tokens")
"""The parts of a :class:`TokenizerFingerprint` that :func:`check_tokenizers_match` compares, in report order."""

_SPECIAL_ID_ATTRIBUTES = ("bos_token_id", "eos_token_id", "pad_token_id", "unk_token_id")


def _sha256(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class TokenizerFingerprint(BaseModel):
    """What makes two tokenizers produce and read the same ids: digests of four components, and a few counts.

    Frozen; built by :func:`tokenizer_fingerprint`, compared by :func:`check_tokenizers_match`; small and
    picklable, so a Ray worker can send its engine's fingerprint to the driver.  ``digest`` covers every field.

    - ``vocabulary``: SHA-256 of every ``(id, token)`` pair of ``get_vocab()``; ``vocabulary_size`` its length;
    - ``special_token_ids``: ``((name, id), ...)`` for ``bos_token_id``, ``eos_token_id``, ``pad_token_id`` and
      ``unk_token_id``, and ``all_special_ids`` (sorted, distinct);
    - ``chat_template``: SHA-256 of the chat template (a mapping of named templates as sorted pairs), ``None``
      when the tokenizer has none;
    - ``added_tokens``: SHA-256 of every added token (id, content and its ``special``, ``lstrip``, ``rstrip``,
      ``normalized`` and ``single_word`` flags where present); ``added_token_count`` how many.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    vocabulary: str
    """SHA-256 (hex) of the vocabulary's ``(id, token)`` pairs, in id order."""
    vocabulary_size: ContractInt
    """How many tokens ``get_vocab()`` holds."""
    special_token_ids: tuple[tuple[str, ContractInt | None], ...]
    """``(attribute, id)`` for the BOS, EOS, pad and unknown tokens (``None`` where the tokenizer has none)."""
    all_special_ids: tuple[ContractInt, ...]
    """Every special-token id, sorted and distinct."""
    chat_template: str | None
    """SHA-256 (hex) of the chat template; ``None`` when the tokenizer has none."""
    added_tokens: str
    """SHA-256 (hex) of the added tokens with their flags."""
    added_token_count: ContractInt
    """How many added tokens the tokenizer declares."""

    @property
    def digest(self) -> str:
        """SHA-256 (hex) of every field: equal digests mean equal fingerprints."""
        return _sha256(self.model_dump(mode="json"))

    def differences(self, other: TokenizerFingerprint) -> tuple[str, ...]:
        """The names in :data:`TOKENIZER_COMPONENTS` whose parts differ between ``self`` and ``other``."""
        changed = {
            "vocabulary": (self.vocabulary, self.vocabulary_size)
            != (other.vocabulary, other.vocabulary_size),
            "special_token_ids": (self.special_token_ids, self.all_special_ids)
            != (other.special_token_ids, other.all_special_ids),
            "chat_template": self.chat_template != other.chat_template,
            "added_tokens": (self.added_tokens, self.added_token_count)
            != (other.added_tokens, other.added_token_count),
        }
        return tuple(name for name in TOKENIZER_COMPONENTS if changed[name])


def _vocabulary(tokenizer: object, argument: str) -> Mapping[str, int]:
    """``tokenizer.get_vocab()``, checked: a mapping from ``str`` tokens to int ids (bools rejected)."""
    get_vocab = getattr(tokenizer, "get_vocab", None)
    if not callable(get_vocab):
        raise ContractTypeError.for_value(
            argument,
            "a tokenizer with get_vocab() (a transformers tokenizer, or vllm.LLM.get_tokenizer()) or a "
            "TokenizerFingerprint",
            tokenizer,
        )
    vocab: object = get_vocab()
    where = f"{argument}.get_vocab()"
    if not isinstance(vocab, Mapping):
        raise ContractTypeError.for_value(where, "a mapping from token (str) to id (int)", vocab)
    if not {str}.issuperset(map(type, vocab)):
        odd = next(token for token in vocab if type(token) is not str)
        raise ContractTypeError.for_value(where, "a mapping with str tokens as keys", odd)
    checked: dict[str, int] = dict(vocab)
    if not {int}.issuperset(map(type, checked.values())):
        checked = {token: require_int(index, f"{where}[{render(token)}]") for token, index in checked.items()}
    return checked


def _optional_id(tokenizer: object, attribute: str, argument: str) -> int | None:
    value = getattr(tokenizer, attribute, None)
    if value is None:
        return None
    index = int_or_none(value)
    if index is None:
        raise ContractTypeError.for_value(f"{argument}.{attribute}", "an int or None", value)
    return index


def _special_ids(tokenizer: object, argument: str) -> list[int]:
    value = getattr(tokenizer, "all_special_ids", None)
    if value is None:
        return []
    if not is_collection(value) or isinstance(value, Mapping):
        raise ContractTypeError.for_value(
            f"{argument}.all_special_ids", "a collection of ints or None", value
        )
    return sorted({require_int(item, f"{argument}.all_special_ids[{i}]") for i, item in enumerate(value)})


def _chat_template_digest(tokenizer: object, argument: str) -> str | None:
    template = getattr(tokenizer, "chat_template", None)
    if template is None:
        return None
    if isinstance(template, str):
        return _sha256(template)
    if isinstance(template, Mapping) and all(
        isinstance(key, str) and isinstance(text, str) for key, text in template.items()
    ):
        return _sha256(sorted(template.items()))
    raise ContractTypeError.for_value(
        f"{argument}.chat_template", "a str, a mapping from template name to str, or None", template
    )


_ADDED_TOKEN_FLAGS = ("special", "lstrip", "rstrip", "normalized", "single_word")


def _added_tokens(tokenizer: object, argument: str) -> list[list[Any]]:
    """Every added token as ``[id, content, flags...]`` in id order, from ``added_tokens_decoder`` (id to
    ``AddedToken`` or str) or, without it, ``get_added_vocab()`` (token to id)."""
    decoder = getattr(tokenizer, "added_tokens_decoder", None)
    records: list[list[Any]] = []
    if decoder is not None:
        if not isinstance(decoder, Mapping):
            raise ContractTypeError.for_value(
                f"{argument}.added_tokens_decoder", "a mapping from id", decoder
            )
        for key, token in decoder.items():
            index = require_int(key, f"{argument}.added_tokens_decoder key")
            content = token if isinstance(token, str) else getattr(token, "content", None)
            if not isinstance(content, str):
                raise ContractTypeError.for_value(
                    f"{argument}.added_tokens_decoder[{index}]",
                    "an AddedToken (with a str content) or a str",
                    token,
                )
            flags = (
                [] if isinstance(token, str) else [getattr(token, flag, None) for flag in _ADDED_TOKEN_FLAGS]
            )
            if not all(flag is None or isinstance(flag, bool) for flag in flags):
                raise ContractTypeError.for_value(
                    f"{argument}.added_tokens_decoder[{index}]", "an AddedToken whose flags are bools", token
                )
            records.append([index, content, *flags])
        return sorted(records, key=lambda record: record[0])
    get_added_vocab = getattr(tokenizer, "get_added_vocab", None)
    if callable(get_added_vocab):
        added = get_added_vocab()
        if not isinstance(added, Mapping) or not all(isinstance(token, str) for token in added):
            raise ContractTypeError.for_value(
                f"{argument}.get_added_vocab()", "a mapping from str to id", added
            )
        records = [
            [require_int(index, f"{argument}.get_added_vocab()[{render(token)}]"), token]
            for token, index in added.items()
        ]
    return sorted(records, key=lambda record: record[0])


def _fingerprint(tokenizer: object, argument: str) -> tuple[TokenizerFingerprint, Mapping[str, int]]:
    vocab = _vocabulary(tokenizer, argument)
    pairs = sorted(((index, token) for token, index in vocab.items()))
    added = _added_tokens(tokenizer, argument)
    fingerprint = TokenizerFingerprint(
        vocabulary=_sha256(pairs),
        vocabulary_size=len(vocab),
        special_token_ids=tuple(
            (name, _optional_id(tokenizer, name, argument)) for name in _SPECIAL_ID_ATTRIBUTES
        ),
        all_special_ids=tuple(_special_ids(tokenizer, argument)),
        chat_template=_chat_template_digest(tokenizer, argument),
        added_tokens=_sha256(added),
        added_token_count=len(added),
    )
    return fingerprint, vocab


def tokenizer_fingerprint(tokenizer: VocabularyTokenizerLike) -> TokenizerFingerprint:
    """The :class:`TokenizerFingerprint` of a tokenizer: digests of its vocabulary, special-token ids, chat
    template and added tokens.

    Reads ``get_vocab()`` and, optionally (a missing attribute counts as ``None``), ``bos_token_id``,
    ``eos_token_id``, ``pad_token_id``, ``unk_token_id``, ``all_special_ids``, ``chat_template`` and
    ``added_tokens_decoder`` (else ``get_added_vocab()``); a ``transformers`` tokenizer and the one
    ``vllm.LLM.get_tokenizer()`` returns have them all.  Deterministic; one pass over the vocabulary plus a sort.

    Raises:
        ContractTypeError: no callable ``get_vocab``, or any of those values of the wrong type (a vocabulary that
            is no mapping from ``str`` to int, a bool id, a chat template that is neither a str, a mapping of
            strs nor ``None``, an added token without str content), naming the attribute.

    Example::

        fingerprint = tokenizer_fingerprint(AutoTokenizer.from_pretrained(path))
        fingerprint.vocabulary_size, fingerprint.digest[:12]
    """
    return _fingerprint(tokenizer, "tokenizer")[0]


def _vocabulary_detail(learner: Mapping[str, int], engine: Mapping[str, int]) -> str:
    """The first id whose token differs between two vocabularies, quoted (an empty string when none does)."""
    by_id = [{index: token for token, index in vocab.items()} for vocab in (learner, engine)]
    first = next(
        (
            index
            for index in sorted(by_id[0].keys() | by_id[1].keys())
            if by_id[0].get(index) != by_id[1].get(index)
        ),
        None,
    )
    if first is None:
        return ""
    shown = [render(side.get(first)) for side in by_id]
    return f"; first differing id {first}: learner {shown[0]}, engine {shown[1]}"


def _component_detail(name: str, learner: TokenizerFingerprint, engine: TokenizerFingerprint) -> str:
    if name == "vocabulary":
        return (
            f"vocabulary (learner {learner.vocabulary_size} tokens, sha256 {learner.vocabulary[:12]}; engine "
            f"{engine.vocabulary_size} tokens, sha256 {engine.vocabulary[:12]}"
        )
    if name == "special_token_ids":
        pairs = [
            f"{attribute} {render(mine)} vs {render(theirs)}"
            for (attribute, mine), (_, theirs) in zip(
                learner.special_token_ids, engine.special_token_ids, strict=True
            )
            if mine != theirs
        ]
        if learner.all_special_ids != engine.all_special_ids:
            pairs.append(
                f"all_special_ids {render_list(learner.all_special_ids)} vs {render_list(engine.all_special_ids)}"
            )
        return f"special_token_ids (learner vs engine: {', '.join(pairs)}"
    if name == "chat_template":
        shown = [
            render_name("none" if side.chat_template is None else side.chat_template[:12])
            for side in (learner, engine)
        ]
        return f"chat_template (learner sha256 {shown[0]}, engine sha256 {shown[1]}"
    return (
        f"added_tokens (learner {learner.added_token_count} tokens, sha256 {learner.added_tokens[:12]}; engine "
        f"{engine.added_token_count} tokens, sha256 {engine.added_tokens[:12]}"
    )


def check_tokenizers_match(
    learner: VocabularyTokenizerLike | TokenizerFingerprint,
    engine: VocabularyTokenizerLike | TokenizerFingerprint,
) -> None:
    """Reject a learner whose tokenizer is not the engine's: the same ids would mean different text.

    Each side is a tokenizer (read as :func:`tokenizer_fingerprint` reads it) or a :class:`TokenizerFingerprint`
    computed elsewhere (a Ray worker's engine).  Every prompt and rollout check compares ids, so a retrained
    tokenizer with the same id space (same size, different tokens), another chat template, or moved special ids
    pass all of them; this compares what the ids mean.  Returns ``None`` when the fingerprints are equal.

    Raises:
        ContractTypeError: a side is neither a fingerprint nor a readable tokenizer (see
            :func:`tokenizer_fingerprint`).
        TokenizerMismatchError: the fingerprints differ.  The message names each differing component of
            :data:`TOKENIZER_COMPONENTS` with both sides' sizes and digest prefixes (the special ids themselves;
            for two tokenizers, the first id whose token differs); ``.components`` lists them,
            ``.learner_digest``/``.engine_digest`` are the fingerprints' digests.
    """
    sides: list[TokenizerFingerprint] = []
    vocabularies: list[Mapping[str, int] | None] = []
    for name, side in (("learner", learner), ("engine", engine)):
        if isinstance(side, TokenizerFingerprint):
            sides.append(side)
            vocabularies.append(None)
        else:
            fingerprint, vocab = _fingerprint(side, name)
            sides.append(fingerprint)
            vocabularies.append(vocab)
    mine, theirs = sides
    components = mine.differences(theirs)
    if not components:
        return
    details = []
    for component in components:
        detail = _component_detail(component, mine, theirs)
        if component == "vocabulary" and vocabularies[0] is not None and vocabularies[1] is not None:
            detail += _vocabulary_detail(vocabularies[0], vocabularies[1])
        details.append(detail + ")")
    raise TokenizerMismatchError(
        f"learner and engine tokenizers differ in {', '.join(components)}: {'; '.join(details)}. The learner "
        "would score token ids that mean something else to the engine; load both from the same tokenizer files "
        "(the same path and revision, and the same chat template).",
        components=components,
        learner_digest=mine.digest,
        engine_digest=theirs.digest,
    )


# ---------------------------------------------------------------------------------------------------- media tokens

MEDIA_PLACEHOLDER_TOKENS: tuple[str, ...] = (
    "<|image_pad|>",
    "<|video_pad|>",
    "<|audio_pad|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|media_pad|>",
    "<|image|>",
    "<|video|>",
    "<|audio|>",
    "<|AUDIO|>",
    "<|audio_bos|>",
    "<|audio_eos|>",
    "<image>",
    "<video>",
    "<audio>",
    "<start_of_image>",
    "<end_of_image>",
    "<image_soft_token>",
    "<start_of_audio>",
    "<end_of_audio>",
    "<audio_soft_token>",
    "<IMG_CONTEXT>",
    "<img>",
    "</img>",
    "[IMG]",
    "[IMG_BREAK]",
    "[IMG_END]",
    "<fake_token_around_image>",
)
"""Media tokens of common vision and audio models (Qwen2-VL/2.5-VL/3-VL and Omni, LLaVA, Gemma 3/3n, InternVL,
Pixtral, Idefics, Kimi-VL, Phi/Llama 4): a text policy must never sample one of them."""

_MEDIA_WORDS = re.compile(r"image|video|audio|vision|img|patch|frame|media", re.IGNORECASE)
"""Added (special) tokens whose text names a medium are media markers too, whatever the model calls them."""

_MEDIA_TOKEN_ATTRIBUTES = (
    "image_token",
    "video_token",
    "audio_token",
    "boi_token",
    "eoi_token",
    "boa_token",
    "eoa_token",
    "image_start_token",
    "image_end_token",
    "vision_start_token",
    "vision_end_token",
)
_MEDIA_ID_ATTRIBUTES = (
    "image_token_id",
    "video_token_id",
    "audio_token_id",
    "image_token_index",
    "video_token_index",
    "audio_token_index",
    "vision_start_token_id",
    "vision_end_token_id",
)


def _declared_media(source: object, argument: str) -> tuple[set[str], set[int]]:
    """The media tokens ``source`` declares by attribute: strings and ids (a missing attribute is ``None``)."""
    names: set[str] = set()
    ids: set[int] = set()
    for attribute in _MEDIA_TOKEN_ATTRIBUTES:
        value = getattr(source, attribute, None)
        if value is not None:
            if not isinstance(value, str):
                raise ContractTypeError.for_value(f"{argument}.{attribute}", "a str token or None", value)
            names.add(value)
    for attribute in _MEDIA_ID_ATTRIBUTES:
        index = _optional_id(source, attribute, argument)
        if index is not None:
            ids.add(index)
    return names, ids


def media_placeholder_token_ids(source: VocabularyTokenizerLike | ProcessorLike) -> frozenset[int]:
    """The ids of the media placeholder and marker tokens of a tokenizer or multimodal processor.

    Pass the result as ``rollout_batch(..., forbidden_token_ids=...)``: a policy that samples ``<|image_pad|>``
    produces a rollout whose learner-side processing expects media that does not exist (verl #7038, #5817).  The
    ids are the union of:

    - every token of :data:`MEDIA_PLACEHOLDER_TOKENS` present in the vocabulary (``get_vocab()``);
    - every added token (``added_tokens_decoder``, else ``get_added_vocab()``) whose text names a medium
      (image, video, audio, vision, img, patch, frame, media; case-insensitive);
    - the media tokens the processor or tokenizer declares: ``image_token``, ``video_token``, ``audio_token``,
      ``boi_token``, ... looked up in the vocabulary, and ``image_token_id``, ``video_token_id``, ... as they are.

    ``source`` is a tokenizer (anything with ``get_vocab()``) or a processor holding one as ``.tokenizer``.  A
    text-only tokenizer gives an empty set.  Reads attributes only; imports no ``transformers``.

    Raises:
        ContractTypeError: ``source`` has neither ``get_vocab()`` nor a ``tokenizer`` that has it, or an
            attribute read has the wrong type (named).

    >>> from rl_contracts.testing.chat_tokenizer import StandInChatTokenizer
    >>> tokenizer = StandInChatTokenizer(words=("<|image_pad|>", "<|vision_start|>", "hello"))
    >>> sorted(tokenizer.decode([i]) for i in media_placeholder_token_ids(tokenizer))
    ['<|image_pad|>', '<|vision_start|>']
    """
    tokenizer: object = source
    argument = "source"
    if not callable(getattr(source, "get_vocab", None)) and getattr(source, "tokenizer", None) is not None:
        tokenizer, argument = source.tokenizer, "source.tokenizer"  # type: ignore[union-attr]
    vocab = _vocabulary(tokenizer, argument)
    names, ids = _declared_media(source, "source")
    if tokenizer is not source:
        more_names, more_ids = _declared_media(tokenizer, argument)
        names |= more_names
        ids |= more_ids
    names.update(MEDIA_PLACEHOLDER_TOKENS)
    ids.update(vocab[name] for name in names if name in vocab)
    ids.update(
        index for index, content, *_ in _added_tokens(tokenizer, argument) if _MEDIA_WORDS.search(content)
    )
    return frozenset(ids)
