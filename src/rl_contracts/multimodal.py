"""Relocation of vLLM multimodal placeholder ranges into the coordinates of a spliced prompt.

vLLM computes ``mm_placeholders`` against the chat-template tokens.  After
:func:`~rl_contracts.splice.splice_prefix_tokens` replaces the re-tokenized history with the model's exact tokens,
every media span must move to where its placeholder tokens really are, or the media embeddings land on the wrong
tokens with no error at all.
:func:`remap_multimodal_placeholders` moves them exactly or fails closed (SPEC §2.4–2.5).

The work is linear in the prompt length, with no Python loop over tokens: comparisons run on list slices in C,
and a span that is not right after the search cursor is found with a polynomial rolling hash of the exact prefix
(converted to numpy once, on first need) over forward-only, doubling scan windows, every hit verified exactly.

This module imports neither torch nor vLLM.  A range's ``is_embed`` (a vLLM tensor, say) is read, through its
``tolist()``, only when another range overlaps it: *chained* ranges (Gemma3's adjacent images share a newline token
that embeds nothing) are accepted and placed as one span (SPEC §2.5 step 3); any other overlap fails closed.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, NamedTuple

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from ._internal.messages import render, render_list, render_name, shorten, type_name
from ._internal.token_arrays import int_array
from .checks import ContractInt, int_or_none, is_int, token_ids
from .errors import PlaceholderRemapError, PlaceholderTypeError
from .splice import PrefixSplice

__all__ = [
    "PlaceholderRange",
    "placeholder_offset_length",
    "placeholder_range_bounds",
    "remap_multimodal_placeholders",
]

_HASH_BASE = 0x9E3779B97F4A7C15
"""Odd multiplier of the rolling hash (modulo 2**64): odd, so every power stays odd and never vanishes."""
_PROBE = 8
"""Positions after the cursor that a search compares directly before it switches to hashed, doubling windows."""
_EXCERPT = 8


def _as_bool(value: object) -> bool:
    """Accept ``bool`` and ``numpy.bool_`` only: an int or a string is not a mask value."""
    if isinstance(value, bool | np.bool_):
        return bool(value)
    raise ValueError(f"is_embed values must be bools, got {type_name(value)}")


class PlaceholderRange(BaseModel):
    """One media item's span of prompt tokens: ``offset``, ``length`` and an optional ``is_embed`` mask.

    Frozen; invalid values raise pydantic's ``ValidationError``.  ``is_embed``, when given, has ``length`` bools
    and is relative to the range, so it never changes when the range moves.

    >>> PlaceholderRange(offset=5, length=3).model_copy(update={"offset": 6}).offset
    6
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    offset: ContractInt = Field(ge=0)
    """Start index of the span in the prompt."""
    length: ContractInt = Field(ge=1)
    """Number of tokens in the span."""
    is_embed: tuple[Annotated[bool, BeforeValidator(_as_bool)], ...] | None = None
    """Which tokens of the span receive embeddings; ``None`` means all of them."""

    @model_validator(mode="after")
    def _check_mask_length(self) -> PlaceholderRange:
        if self.is_embed is not None and len(self.is_embed) != self.length:
            raise ValueError(f"is_embed has {len(self.is_embed)} values but length is {render(self.length)}")
        return self


_MISSING = object()


def _where(modality: str | None, index: int | None) -> str:
    return "" if modality is None else f" (mm_placeholders['{render_name(modality)}'][{index}])"


def _range_type_error(
    message: str, expected: str, placeholder_range: Any, modality: str | None, index: int | None
) -> PlaceholderTypeError:
    """A ``PlaceholderTypeError`` about the container of one range, which it names by type and position."""
    return PlaceholderTypeError(
        message,
        argument="mm_placeholders",
        expected=expected,
        actual=type_name(placeholder_range),
        modality=modality,
        item_index=index,
    )


def _raw_fields(placeholder_range: Any, modality: str | None, index: int | None) -> list[tuple[str, Any]]:
    """SPEC §2.4 steps 1–2: dispatch on the container type, then ``(field, value)`` for offset and length."""
    if isinstance(placeholder_range, Mapping):
        fields = [(field, placeholder_range.get(field, _MISSING)) for field in ("offset", "length")]
    elif isinstance(placeholder_range, PlaceholderRange) or (
        dataclasses.is_dataclass(placeholder_range) and not isinstance(placeholder_range, type)
    ):
        fields = [(field, getattr(placeholder_range, field, _MISSING)) for field in ("offset", "length")]
    else:
        raise _range_type_error(
            "Multimodal placeholder ranges must be mappings or dataclass instances, got "
            f"{type_name(placeholder_range)}{_where(modality, index)}",
            "Mapping | dataclass instance | PlaceholderRange",
            placeholder_range,
            modality,
            index,
        )
    missing = next((field for field, value in fields if value is _MISSING), None)
    if missing is not None:
        raise PlaceholderRemapError(
            f"Multimodal placeholder range is missing '{missing}'{_where(modality, index)}",
            modality=modality,
            item_index=index,
        )
    return fields


def _int_field(field: str, value: Any, modality: str | None, index: int | None) -> int:
    """SPEC §2.4 step 3: one bound as a plain int (bools and 0-d float arrays rejected)."""
    bound = int_or_none(value)
    if bound is None:
        raise PlaceholderTypeError(
            f"Multimodal placeholder range {field} must be an int, got {type_name(value)}{_where(modality, index)}",
            argument=field,
            expected="int",
            actual=type_name(value),
            modality=modality,
            item_index=index,
        )
    return bound


def _bounds(placeholder_range: Any, modality: str | None, index: int | None) -> tuple[int, int]:
    """SPEC §2.4 steps 1–5, with the item's position quoted in messages when known."""
    offset, length = (
        _int_field(field, value, modality, index)
        for field, value in _raw_fields(placeholder_range, modality, index)
    )
    if offset < 0 or length < 1:
        raise PlaceholderRemapError(
            f"Multimodal placeholder range has invalid bounds: offset={render(offset)}, "
            f"length={render(length)}{_where(modality, index)}",
            modality=modality,
            item_index=index,
            offset=offset,
            length=length,
        )
    return offset, length


def placeholder_range_bounds(placeholder_range: Any) -> tuple[int, int]:
    """Return ``(offset, length)`` (never ``(start, end)``) of one placeholder range.

    Accepts a ``Mapping`` (keys ``"offset"``/``"length"``), a :class:`PlaceholderRange`, or a dataclass instance
    such as vLLM's ``PlaceholderRange`` (a dataclass class object is rejected).  Raises ``PlaceholderTypeError``
    for any other container or a non-int (bool included) offset or length, and ``PlaceholderRemapError`` for a
    missing field, ``offset < 0`` or ``length < 1``.

    >>> placeholder_range_bounds({"offset": 5, "length": 3})
    (5, 3)
    """
    return _bounds(placeholder_range, None, None)


placeholder_offset_length = placeholder_range_bounds
"""``(offset, length)`` of one placeholder range: :func:`placeholder_range_bounds` (the reference's name, which
reads like ``(start, end)``) under a name that says what it returns."""


class _Item(NamedTuple):
    """One validated range; tuples sort in the global order of SPEC §2.5 step 5."""

    offset: int
    length: int
    modality_position: int
    item_index: int


def _check_container(mm_placeholders: object) -> list[tuple[str, Sequence[Any]]]:
    """SPEC §2.5 step 1 for ``mm_placeholders``: a mapping of ``str`` to a list or tuple of ranges."""
    if not isinstance(mm_placeholders, Mapping):
        raise PlaceholderTypeError.for_value(
            "mm_placeholders", "a mapping from modality name to a list of placeholder ranges", mm_placeholders
        )
    groups: list[tuple[str, Sequence[Any]]] = []
    for modality, ranges in mm_placeholders.items():
        if not isinstance(modality, str):
            raise PlaceholderTypeError(
                f"mm_placeholders keys must be str modality names, got {type_name(modality)} {render(modality)}",
                argument="mm_placeholders",
                expected="str",
                actual=type_name(modality),
            )
        if not isinstance(ranges, list | tuple):
            raise PlaceholderTypeError(
                f"mm_placeholders['{render_name(modality)}'] must be a list or tuple of placeholder ranges, got "
                f"{type_name(ranges)}",
                argument="mm_placeholders",
                expected="list | tuple",
                actual=type_name(ranges),
                modality=modality,
            )
        groups.append((modality, ranges))
    return groups


def _check_rebuildable(placeholder_range: Any, modality: str, index: int) -> None:
    """A dataclass range must have ``offset`` as an init field, or ``dataclasses.replace`` cannot move it."""
    if isinstance(placeholder_range, Mapping | PlaceholderRange):
        return
    field = next((f for f in dataclasses.fields(placeholder_range) if f.name == "offset"), None)
    if field is None or not field.init:
        raise _range_type_error(
            f"Multimodal placeholder range{_where(modality, index)} is a {type_name(placeholder_range)} dataclass "
            "whose 'offset' is not an init field, so it cannot be rebuilt with dataclasses.replace",
            "dataclass with an init field 'offset'",
            placeholder_range,
            modality,
            index,
        )


def _label(groups: list[tuple[str, Sequence[Any]]], item: _Item) -> str:
    return f"{render_name(groups[item.modality_position][0])}[{item.item_index}]"


def _describe(groups: list[tuple[str, Sequence[Any]]], item: _Item) -> str:
    return f"Multimodal placeholder range {_label(groups, item)} (offset={item.offset}, length={item.length})"


def _remap_error(message: str, groups: list[tuple[str, Sequence[Any]]], item: _Item) -> PlaceholderRemapError:
    return PlaceholderRemapError(
        message,
        modality=groups[item.modality_position][0],
        item_index=item.item_index,
        offset=item.offset,
        length=item.length,
    )


def _items(groups: list[tuple[str, Sequence[Any]]], template_length: int) -> list[_Item]:
    """SPEC §2.5 step 3, first half: the bounds of every range in input order, each inside the template."""
    items: list[_Item] = []
    for position, (modality, ranges) in enumerate(groups):
        for index, placeholder_range in enumerate(ranges):
            offset, length = _bounds(placeholder_range, modality, index)
            _check_rebuildable(placeholder_range, modality, index)
            item = _Item(offset, length, position, index)
            if offset + length > template_length:
                raise _remap_error(
                    f"Multimodal placeholder range {_label(groups, item)} (offset={render(offset)}, "
                    f"length={render(length)}) is out of bounds for template_token_ids of length "
                    f"{template_length}.",
                    groups,
                    item,
                )
            items.append(item)
    return items


class _Unit(NamedTuple):
    """One entry of SPEC §2.5 step 6: a range with its coincident twins, or a chain placed as one span."""

    offset: int
    """Start of the union span of the members."""
    length: int
    """Length of the union span."""
    members: tuple[_Item, ...]
    """The ranges it places, in global order."""


def _embed_mask(placeholder_range: Any, length: int) -> list[bool] | None:
    """The range's ``is_embed`` as ``length`` bools; ``None`` when it has none or it cannot be read as such.

    Accepts a list or tuple of bools, or an array or tensor whose ``tolist()`` gives one.
    """
    if isinstance(placeholder_range, Mapping):
        mask = placeholder_range.get("is_embed")
    else:
        mask = getattr(placeholder_range, "is_embed", None)
    if mask is None:
        return None
    try:
        values = mask.tolist() if callable(getattr(mask, "tolist", None)) else mask
    except Exception:  # an object whose tolist() fails holds no mask: its overlap fails closed
        return None
    if not isinstance(values, list | tuple) or len(values) != length:
        return None
    if not all(isinstance(value, bool | np.bool_) for value in values):
        return None
    return [bool(value) for value in values]


def _chained(
    first: _Item, first_mask: list[bool] | None, second: _Item, second_mask: list[bool] | None
) -> bool:
    """Whether two intersecting, non-identical ranges are chained: both masked, no shared embedding position."""
    if first_mask is None or second_mask is None:
        return False
    start = max(first.offset, second.offset)
    end = min(first.offset + first.length, second.offset + second.length)
    return not any(first_mask[start - first.offset : end - first.offset]) and not any(
        second_mask[start - second.offset : end - second.offset]
    )


class _Chains:
    """SPEC §2.5 step 3, second half: ranges that intersect must be identical or chained; builds step 6's units.

    One sweep in global order over groups of identical ranges.  A group starting at ``o`` and ending at ``e``
    that intersects earlier ranges (their largest end is past ``o``) is chained with all of them iff every earlier
    range it meets has a mask, its own mask is false where it meets their union, ``[o, min(largest end, e))``, and
    no earlier range has an embedding position in ``[o, e)`` (those positions wait in a heap; ``o`` only grows).
    A mask is read only once some other range intersects its range, so the sweep costs the number of ranges plus
    the masks it reads (``log`` factors aside).
    """

    def __init__(self, groups: list[tuple[str, Sequence[Any]]], items: list[_Item]) -> None:
        self._groups, self._items = groups, items
        self._masks: dict[int, list[bool] | None] = {}  # by position in items
        self._unread: list[int] = []  # earlier ranges no intersecting range has read the mask of
        self._embeds: list[int] = []  # heap: embedding positions of the earlier ranges read
        self._max_end = 0

    def units(self) -> list[_Unit]:
        """The units in global order; raises the overlap error for the first range that is neither."""
        items = self._items
        spans: list[tuple[int, int]] = []  # [start, stop) in items of each unit
        start = 0
        while start < len(items):
            offset, length = items[start].offset, items[start].length
            stop = start + 1
            while stop < len(items) and (items[stop].offset, items[stop].length) == (offset, length):
                stop += 1
            if self._max_end > offset:
                self._check(start, stop)
                spans[-1] = (spans[-1][0], stop)
            else:
                spans.append((start, stop))
            self._unread.extend(index for index in range(start, stop) if index not in self._masks)
            self._max_end = max(self._max_end, offset + length)
            start = stop
        units = []
        for first, stop in spans:
            members = tuple(items[first:stop])
            end = max(member.offset + member.length for member in members)
            units.append(_Unit(members[0].offset, end - members[0].offset, members))
        return units

    def _mask(self, index: int) -> list[bool] | None:
        """The mask of ``items[index]``, read once; its embedding positions join the heap."""
        if index not in self._masks:
            item = self._items[index]
            mask = _embed_mask(self._groups[item.modality_position][1][item.item_index], item.length)
            self._masks[index] = mask
            for position, embeds in enumerate(mask or ()):
                if embeds:
                    heapq.heappush(self._embeds, item.offset + position)
        return self._masks[index]

    def _check(self, start: int, stop: int) -> None:
        """The group ``items[start:stop]`` against every earlier range it intersects."""
        offset, length = self._items[start].offset, self._items[start].length
        unread, self._unread = self._unread, []
        met = [index for index in unread if self._items[index].offset + self._items[index].length > offset]
        earlier_masked = all(self._mask(index) is not None for index in met)
        while self._embeds and self._embeds[0] < offset:
            heapq.heappop(self._embeds)
        clear = not self._embeds or self._embeds[0] >= offset + length
        shared = min(self._max_end, offset + length) - offset
        for index in range(start, stop):
            mask = self._mask(index)
            if not (earlier_masked and clear and mask is not None and not any(mask[:shared])):
                raise self._conflict(index)

    def _conflict(self, index: int) -> PlaceholderRemapError:
        """The overlap error for ``items[index]`` and the first earlier range it meets without a chain."""
        items, item = self._items, self._items[index]
        first = next(
            earlier
            for position, earlier in enumerate(items[:index])
            if (earlier.offset, earlier.length) != (item.offset, item.length)
            and earlier.offset + earlier.length > item.offset
            and not _chained(earlier, self._mask(position), item, self._mask(index))
        )
        return _remap_error(
            f"Multimodal placeholder ranges {_label(self._groups, first)} (offset={first.offset}, "
            f"length={first.length}) and {_label(self._groups, item)} (offset={item.offset}, "
            f"length={item.length}) overlap without being identical; they cannot be relocated.",
            self._groups,
            item,
        )


def _validate_ranges(
    groups: list[tuple[str, Sequence[Any]]], template_length: int
) -> tuple[list[_Item], list[_Unit]]:
    """SPEC §2.5 steps 3 and 5: every range checked, in global order, with the units step 6 places."""
    items = sorted(_items(groups, template_length))
    return items, _Chains(groups, items).units()


def _splice_coordinates(splice: object, template: list[int], final: list[int]) -> tuple[int, int]:
    """SPEC §2.5 step 2: read the splice (any object with the three attributes) and check it fits the tokens."""
    if isinstance(splice, PrefixSplice):
        converted = splice
    else:
        try:
            converted = PrefixSplice.model_validate(splice, from_attributes=True)
        except ValidationError as exc:
            raise PlaceholderRemapError(
                f"splice must be a PrefixSplice or an object with token_ids, model_cut_end and "
                f"template_cut_start, got {type_name(splice)}: {shorten(str(exc), 800)}"
            ) from None
    ids, cut_end, cut_start = converted.token_ids, converted.model_cut_end, converted.template_cut_start
    valid = isinstance(ids, list) and is_int(cut_end) and is_int(cut_start)
    if not (valid and 0 <= cut_end <= len(ids) and cut_start >= 0):
        raise PlaceholderRemapError(f"splice is not a valid PrefixSplice: {render(converted)}")
    prefix = "splice does not describe these token sequences: "
    if not (len(ids) == len(final) and ids == final):
        raise PlaceholderRemapError(
            f"{prefix}splice.token_ids (length {len(ids)}) differs from final_token_ids (length {len(final)})"
        )
    if cut_start > len(template):
        raise PlaceholderRemapError(
            f"{prefix}splice.template_cut_start={render(cut_start)} exceeds "
            f"len(template_token_ids)={len(template)}"
        )
    if not (len(final) - cut_end == len(template) - cut_start and final[cut_end:] == template[cut_start:]):
        raise PlaceholderRemapError(
            f"{prefix}final_token_ids[model_cut_end={cut_end}:] differs from "
            f"template_token_ids[template_cut_start={cut_start}:]"
        )
    return cut_end, cut_start


def _powers(count: int) -> npt.NDArray[np.uint64]:
    """``BASE**j`` modulo 2**64 for ``j < count``, built by doubling (log(count) vectorised steps)."""
    powers = np.ones(count, dtype=np.uint64)  # powers[0] = BASE**0; the loop overwrites the rest
    filled = 1
    while filled < count:
        step = min(filled, count - filled)
        np.multiply(powers[:step], pow(_HASH_BASE, filled, 2**64), out=powers[filled : filled + step])
        filled += step
    return powers


class _ContentFinder:
    """Exact search of ``final[:stop]`` for needles cut from ``template``: linear in the distance scanned.

    Each search first probes the next :data:`_PROBE` positions directly (media items usually sit right after the
    cursor).  Beyond them it compares polynomial rolling hashes (modulo 2**64, wrapping uint64 arithmetic) over
    a forward window that starts at the needle length and doubles, so one search costs O(needle + distance
    advanced); every hash hit is verified exactly, so a collision costs time, never correctness.  The hash
    tables are built once, on the first search that needs them.
    """

    _powers: npt.NDArray[np.uint64]
    """``BASE**j`` for ``j < stop``; set by :meth:`_build`, which every hashed search runs first."""

    def __init__(self, final: list[int], template: list[int], stop: int) -> None:
        self._final, self._template, self._stop = final, template, stop
        self._prefix: npt.NDArray[np.uint64] | None = None
        self._template_symbols: npt.NDArray[np.uint64] | None = None

    def _build(self) -> npt.NDArray[np.uint64]:
        """Prefix hashes of ``final[:stop]``; ids beyond int64 are replaced by exact dense ranks."""
        stop = self._stop
        final = int_array(self._final[:stop])
        if final.dtype == object:
            _, ranks = np.unique(np.concatenate([final, int_array(self._template)]), return_inverse=True)
            symbols = ranks.astype(np.uint64)
            final, self._template_symbols = symbols[:stop], symbols[stop:]
        self._powers = _powers(stop)
        prefix = np.zeros(stop + 1, dtype=np.uint64)
        np.cumsum(final.astype(np.uint64) * self._powers[:stop], out=prefix[1:])
        self._prefix = prefix
        return prefix

    def _needle_hash(self, start: int, width: int) -> int | None:
        """Hash of ``template[start:start+width]``; ``None`` when it holds an id that ``final[:stop]`` cannot hold."""
        if self._template_symbols is not None:
            symbols = self._template_symbols[start : start + width]
        else:
            needle = int_array(self._template[start : start + width])
            if needle.dtype == object:
                return None  # an id beyond int64, while final[:stop] holds int64 ids only
            symbols = needle.astype(np.uint64)
        return int((symbols * self._powers[:width]).sum())

    def find(self, first: int, last: int, start: int, width: int) -> int | None:
        """Smallest ``q`` in ``[first, last]`` with ``final[q:q+width] == template[start:start+width]``."""
        final, needle = self._final, self._template[start : start + width]
        probe_end = min(last + 1, first + _PROBE)
        q = first
        while q < probe_end:
            try:
                q = final.index(needle[0], q, probe_end)
            except ValueError:
                break
            if final[q : q + width] == needle:
                return q
            q += 1
        if probe_end > last:
            return None
        prefix = self._build() if self._prefix is None else self._prefix
        needle_hash = self._needle_hash(start, width)
        if needle_hash is None:
            return None
        window = width + _PROBE
        begin = probe_end
        while begin <= last:
            end = min(begin + window, last + 1)
            hashes = prefix[begin + width : end + width] - prefix[begin:end]
            for hit in np.flatnonzero(hashes == self._powers[begin:end] * needle_hash).tolist():
                if final[begin + hit : begin + hit + width] == needle:
                    return begin + int(hit)
            begin, window = end, window * 2
        return None


class _Placement:
    """SPEC §2.5 step 6: the state of one placement pass (memo, cursor, limit) and its three ways to place."""

    def __init__(
        self,
        groups: list[tuple[str, Sequence[Any]]],
        template: list[int],
        final: list[int],
        coordinates: tuple[int, int] | None,
    ) -> None:
        self._groups, self._template, self._final, self._coordinates = groups, template, final, coordinates
        self._limit = len(final) if coordinates is None else coordinates[0]
        self._finder = _ContentFinder(final, template, min(len(final), self._limit + 1))
        self.memo: dict[tuple[int, int], int] = {}
        self._cursor = 0

    def place(self, unit: _Unit) -> None:
        """Record the new offset of every member of ``unit`` (steps a–e): its span is placed once, arithmetically,
        refused as straddling, or located by content, and each member keeps its distance from the span's start."""
        coordinates = self._coordinates
        if coordinates is not None and unit.offset >= coordinates[1]:
            new = self._shifted(unit, *coordinates)
        elif coordinates is not None and unit.offset < coordinates[1] < unit.offset + unit.length:
            raise self._error(
                unit,
                f"straddles the splice boundary template_cut_start={coordinates[1]}; it cannot be represented in "
                "the final prompt.",
            )
        else:
            new = self._located(unit)
        for member in unit.members:
            self.memo[member.offset, member.length] = new + member.offset - unit.offset

    def _error(self, unit: _Unit, what: str) -> PlaceholderRemapError:
        """The error about ``unit``, named by its first member (and, for a chain, its other members and span)."""
        first = unit.members[0]
        others = list(dict.fromkeys(_label(self._groups, m) for m in unit.members if m[:2] != first[:2]))
        chain = ""
        if others:
            more = ", ..." if len(others) > _EXCERPT else ""
            chain = (
                f", chained with {', '.join(others[:_EXCERPT])}{more} into the span (offset={unit.offset}, "
                f"length={unit.length}),"
            )
        return _remap_error(f"{_describe(self._groups, first)}{chain} {what}", self._groups, first)

    def _shifted(self, unit: _Unit, cut_end: int, cut_start: int) -> int:
        """Step 6b: ``cut_end + (offset - cut_start)``, cross-checked against the tokens."""
        new = cut_end + (unit.offset - cut_start)
        span = slice(unit.offset, unit.offset + unit.length)
        if self._final[new : new + unit.length] != self._template[span]:
            raise self._error(
                unit,
                f"does not match final_token_ids at shifted offset {new}; refusing to submit token IDs with "
                "incorrect multimodal positions.",
            )
        return new

    def _window(self, item: _Unit) -> tuple[int, int, int, int]:
        """The anchoring rule of step 6d as a search: ``(left, width, first, last)`` for the needle with neighbours.

        The needle is the span plus each neighbour token that exists in the template; a span at either end of the
        template is anchored to that end of ``final`` instead (the boundary is its neighbour).
        """
        offset, length, template, final = item.offset, item.length, self._template, self._final
        left = 1 if offset > 0 else 0
        right = 1 if offset + length < len(template) else 0
        width = left + length + right
        first = max(self._cursor - left, 0)
        last = min(self._limit - length - left, len(final) - width)
        if offset == 0:
            last = min(last, 0)  # the start of the sequence is the left neighbour: p == 0
        if not right:
            at_end = len(final) - length - left  # the end of the sequence is the right neighbour
            first, last = max(first, at_end), min(last, at_end)
        return left, width, first, last

    def _located(self, item: _Unit) -> int:
        """Step 6d: the smallest anchored position at or after the cursor, which then moves past the match."""
        left, width, first, last = self._window(item)
        found = self._finder.find(first, last, item.offset - left, width) if first <= last else None
        if found is None:
            raise self._not_located(item, left, width)
        new = found + left
        self._cursor = new + item.length
        return new

    def _not_located(self, item: _Unit, left: int, width: int) -> PlaceholderRemapError:
        cursor, limit, offset = self._cursor, self._limit, item.offset
        expected = self._template[offset - left : offset - left + width][:_EXCERPT]
        seen = self._final[cursor : min(limit, cursor + _EXCERPT)]
        ends = [
            end
            for end, anchored in (
                ("start", offset == 0),
                ("end", offset + item.length == len(self._template)),
            )
            if anchored
        ]
        anchor = f" The span is anchored at the {' and '.join(ends)} of final_token_ids." if ends else ""
        return self._error(
            item,
            f"could not be located in final_token_ids (scanned positions {cursor}..{limit}); refusing to submit "
            f"token IDs with incorrect multimodal positions. Expected the span with its neighbours, "
            f"template_token_ids[{offset - left}:{offset - left + width}]={render_list(expected, total=width)}; "
            f"final_token_ids from position {cursor}: {render_list(seen, total=max(limit - cursor, 0))}.{anchor}",
        )


def _place(
    groups: list[tuple[str, Sequence[Any]]],
    units: list[_Unit],
    template: list[int],
    final: list[int],
    coordinates: tuple[int, int] | None,
) -> dict[tuple[int, int], int]:
    """SPEC §2.5 step 6: the new offset of every distinct ``(offset, length)``, unit by unit in global order."""
    placement = _Placement(groups, template, final, coordinates)
    for unit in units:
        placement.place(unit)
    return placement.memo


def _rebuilt(placeholder_range: Any, offset: int, modality: str, index: int) -> Any:
    """SPEC §2.5 step 7: a new range of the same container type with only ``offset`` replaced."""
    if isinstance(placeholder_range, Mapping):
        moved = dict(placeholder_range)
        moved["offset"] = offset
        return moved
    if isinstance(placeholder_range, PlaceholderRange):
        return placeholder_range.model_copy(update={"offset": offset})
    try:
        return dataclasses.replace(placeholder_range, offset=offset)
    except (TypeError, ValueError) as exc:
        raise _range_type_error(
            f"Multimodal placeholder range{_where(modality, index)} of type {type_name(placeholder_range)} "
            f"cannot be rebuilt with dataclasses.replace: {type_name(exc)}: {render_name(exc)}",
            "dataclass rebuildable with dataclasses.replace",
            placeholder_range,
            modality,
            index,
        ) from None


def remap_multimodal_placeholders(
    *,
    template_token_ids: Sequence[int],
    final_token_ids: Sequence[int],
    mm_placeholders: Mapping[str, Sequence[Any]],
    splice: PrefixSplice | None = None,
) -> dict[str, list[Any]]:
    """Move vLLM's per-modality placeholder ranges from template coordinates into ``final_token_ids``.

    Every range is validated first (int offset ``>= 0``, length ``>= 1``, inside the template, and ranges that
    intersect must be identical or *chained*: both carry an ``is_embed`` mask that is false at every shared
    position, as vLLM reports Gemma3's adjacent images; a chain is placed as one span, each member keeping its
    distance from the span's start).  With a ``splice`` (a :class:`PrefixSplice` or any object with its three
    attributes), ranges at or after ``template_cut_start`` shift arithmetically and are cross-checked; ranges
    before it are located by content inside the exact model prefix, in global prompt order, with a forward-only
    cursor and both neighbour tokens checked, so a longer run of placeholder tokens fails closed instead of being
    split across items.  Without a splice every range is located by content (or kept when ``final ==
    template``).  Coincident ranges (Qwen2.5-Omni's audio-in-video) are placed once and share the new offset.

    Returns a new dict with the same keys and item order; each range is a new object of its own container type
    (``dict``, ``dataclasses.replace``, ``model_copy``) with only ``offset`` changed (``is_embed`` and other
    fields kept).  Inputs are never mutated.

    Raises ``ContractTypeError`` for non-int token ids, ``PlaceholderTypeError`` for a wrong container or a
    non-int offset/length, and ``PlaceholderRemapError`` (``.modality``, ``.item_index``, ``.offset``,
    ``.length``) for an incoherent splice, invalid, out-of-bounds or overlapping ranges, a range straddling the
    cut, or a span that cannot be located.

    >>> remap_multimodal_placeholders(
    ...     template_token_ids=[7, 8, 1001, 2, 30, 90, 90, 90, 31],
    ...     final_token_ids=[7, 8, 1002, 1003, 2, 30, 90, 90, 90, 31],
    ...     mm_placeholders={"image": [{"offset": 5, "length": 3}]},
    ...     splice=PrefixSplice([7, 8, 1002, 1003, 2, 30, 90, 90, 90, 31], 5, 4),
    ... )
    {'image': [{'offset': 6, 'length': 3}]}
    """
    template = token_ids(template_token_ids, "template_token_ids")
    final = token_ids(final_token_ids, "final_token_ids")
    groups = _check_container(mm_placeholders)
    coordinates = None if splice is None else _splice_coordinates(splice, template, final)
    items, units = _validate_ranges(groups, len(template))
    if not items:
        return {modality: [] for modality, _ in groups}
    if coordinates is None and final == template:
        memo = {(item.offset, item.length): item.offset for item in items}
    else:
        memo = _place(groups, units, template, final, coordinates)
    new_offsets = {
        (item.modality_position, item.item_index): memo[(item.offset, item.length)] for item in items
    }
    return {
        modality: [
            _rebuilt(placeholder_range, new_offsets[position, index], modality, index)
            for index, placeholder_range in enumerate(ranges)
        ]
        for position, (modality, ranges) in enumerate(groups)
    }
