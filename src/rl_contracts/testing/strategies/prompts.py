"""Hypothesis strategies for the rollout-prompt and prompt-formatting contracts (SPEC §4; §7 invariants 1, 2, 20, 21).

- :func:`rollout_prompt_pairs`: learner/engine prompt pairs that are equal, truncated, extended or changed;
- :func:`as_token_container`: the same ids as a list, tuple, numpy array or torch tensor;
- :func:`generation_batches`: valid right-padded batches (torch or numpy) with media rows in either key scheme;
- :func:`hostile_generation_batches`: ``(data, sample_idx)`` pairs that are each broken in one way.

torch is imported lazily, only when a strategy draws a tensor.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from hypothesis import strategies as st

__all__ = [
    "TOKEN_CONTAINER_KINDS",
    "MediaItem",
    "as_token_container",
    "generation_batches",
    "hostile_generation_batches",
    "rollout_prompt_pairs",
]

TokenContainerKind = Literal["list", "tuple", "numpy", "torch"]
TOKEN_CONTAINER_KINDS: tuple[TokenContainerKind, ...] = ("list", "tuple", "numpy", "torch")
"""The container kinds :func:`as_token_container` produces."""

_OLDER_KEYS = ("vllm_images", "vllm_audios", "vllm_videos")


class MediaItem:
    """A stand-in media object (image, audio clip, video) compared by identity, with a readable ``repr``."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"MediaItem({self.name!r})"


def as_token_container(ids: Sequence[int], kind: TokenContainerKind) -> Any:
    """``ids`` as a new list, tuple, 1-D int64 numpy array or 1-D int64 torch tensor."""
    if kind == "list":
        return list(ids)
    if kind == "tuple":
        return tuple(ids)
    if kind == "numpy":
        return np.asarray(list(ids), dtype=np.int64)
    import torch

    return torch.tensor(list(ids), dtype=torch.int64)


@st.composite
def rollout_prompt_pairs(draw: st.DrawFn, max_size: int = 24) -> tuple[list[int], list[int] | None]:
    """``(expected, actual)``: equal, ``None``, a prefix, an extension, or one or more ids changed."""
    expected = draw(st.lists(st.integers(0, 50), max_size=max_size))
    mode = draw(st.sampled_from(["equal", "none", "prefix", "extend", "change"]))
    if mode == "equal":
        return expected, list(expected)
    if mode == "none":
        return expected, None
    if mode == "prefix":
        return expected, expected[: draw(st.integers(0, len(expected)))]
    if mode == "extend":
        return expected, expected + draw(st.lists(st.integers(0, 50), min_size=1, max_size=4))
    actual = list(expected)
    for position in draw(st.lists(st.integers(0, max(len(actual) - 1, 0)), max_size=3)):
        if actual:
            actual[position] = draw(st.integers(0, 50))
    return expected, actual


def _media() -> st.SearchStrategy[MediaItem]:
    return st.integers(0, 10**6).map(lambda n: MediaItem(f"m{n}"))


def _current_row() -> st.SearchStrategy[dict[str, Any] | None]:
    value: st.SearchStrategy[Any] = st.one_of(
        _media(),
        st.lists(_media(), min_size=1, max_size=3),
        st.lists(_media(), min_size=1, max_size=3).map(tuple),
        st.sampled_from([None, [], ()]),
    )
    names = st.sampled_from(["image", "audio", "video", "conditioning"])
    return st.one_of(st.none(), st.dictionaries(names, value, max_size=3))


def _older_row() -> st.SearchStrategy[list[MediaItem] | tuple[MediaItem, ...] | None]:
    items = st.lists(_media(), max_size=3)
    return st.one_of(st.none(), items, items.map(tuple))


@st.composite
def generation_batches(
    draw: st.DrawFn,
    *,
    array_kinds: Sequence[Literal["numpy", "torch"]] = ("numpy", "torch"),
    max_rows: int = 5,
    max_width: int = 8,
    media: bool = True,
) -> dict[str, Any]:
    """A valid right-padded generation batch: ``input_ids [B, W]``, ``input_lengths [B]`` and optional media.

    The padding holds random non-zero ids (so a wrong slice shows), ``input_lengths`` is an array or a list,
    and with ``media=True`` the batch may carry ``vllm_content`` and either ``vllm_multi_modal_data`` rows or
    the older ``vllm_images``/``vllm_audios``/``vllm_videos`` rows, with ``None``, empty, single and multi-item
    rows.  Media are :class:`MediaItem` objects, so identity checks are meaningful.
    """
    batch = draw(st.integers(0, max_rows))
    width = draw(st.integers(0, max_width))
    kind = draw(st.sampled_from(list(array_kinds)))
    dtype_name = draw(st.sampled_from(["int64", "int32"]))
    rows = draw(
        st.lists(
            st.lists(st.integers(1, 1000), min_size=width, max_size=width), min_size=batch, max_size=batch
        )
    )
    lengths = draw(st.lists(st.integers(0, width), min_size=batch, max_size=batch))
    ids_np = np.asarray(rows, dtype=dtype_name).reshape(batch, width)
    lengths_np = np.asarray(lengths, dtype=np.int64)
    data: dict[str, Any]
    if kind == "torch":
        import torch

        data = {"input_ids": torch.from_numpy(ids_np), "input_lengths": torch.from_numpy(lengths_np)}
    else:
        data = {"input_ids": ids_np, "input_lengths": lengths_np}
    if draw(st.booleans()):
        data["input_lengths"] = list(lengths)
    if not media:
        return data

    def per_row(row: st.SearchStrategy[Any]) -> st.SearchStrategy[list[Any]]:
        return st.lists(row, min_size=batch, max_size=batch)

    if draw(st.booleans()):
        data["vllm_content"] = draw(per_row(st.one_of(st.none(), st.text(max_size=8))))
    scheme = draw(st.sampled_from(["none", "current", "older"]))
    if scheme == "current":
        data["vllm_multi_modal_data"] = draw(per_row(_current_row()))
    elif scheme == "older":
        for key in draw(st.lists(st.sampled_from(_OLDER_KEYS), min_size=1, max_size=3, unique=True)):
            data[key] = draw(per_row(_older_row()))
    return data


@st.composite
def hostile_generation_batches(draw: st.DrawFn) -> tuple[Any, Any]:
    """``(data, sample_idx)`` where a valid batch (or the arguments) is broken in exactly one way.

    Breaks: a non-mapping ``data``, a bool/str/float/negative/out-of-range ``sample_idx`` (0-d arrays included), a
    missing key, a wrong dimension or float/bool dtype, an ``np.matrix`` ``input_ids`` (its rows stay 2-D), a 0-d
    ``input_lengths``, lists instead of arrays, a length below 0 or above ``W``, a row count other than ``B``, both
    media key schemes, and rows of the wrong type.
    """
    data: dict[str, Any] = dict(draw(generation_batches(max_rows=4, max_width=5)))
    batch = len(data["input_ids"])
    sample_idx: Any = draw(st.one_of(st.none(), st.integers(0, max(batch - 1, 0))))
    breaks = [
        "not_mapping",
        "sample_idx",
        "missing",
        "ids_1d",
        "ids_float",
        "ids_list",
        "ids_matrix",
        "lengths_2d",
        "lengths_0d",
        "lengths_float",
        "lengths_bool",
        "length_out_of_range",
        "row_count",
        "both_schemes",
        "row_type",
    ]
    chosen = draw(st.sampled_from(breaks))
    ids = np.asarray(data["input_ids"])
    if chosen == "not_mapping":
        return draw(st.sampled_from([None, [], "input_ids", 3, [("input_ids", ids)]])), sample_idx
    if chosen == "sample_idx":
        bad_index = st.sampled_from(
            [True, "0", 0.0, -1, batch, batch + 7, np.float32(1), np.array(0.0), np.array(True)]
        )
        return data, draw(bad_index)
    if chosen == "missing":
        key = draw(st.sampled_from(["input_ids", "input_lengths"]))
        if draw(st.booleans()):
            data[key] = None
        else:
            del data[key]
        return data, sample_idx
    if chosen == "ids_1d":
        data["input_ids"] = ids.reshape(-1)
    elif chosen == "ids_float":
        data["input_ids"] = ids.astype(draw(st.sampled_from([np.float32, np.bool_])))
    elif chosen == "ids_list":
        data["input_ids"] = ids.tolist()
    elif chosen == "ids_matrix":  # token prompts for every row, so the 2-D row slices are read
        rows = ids if batch else np.zeros((1, 1), dtype=np.int64)
        data = {"input_ids": rows.view(np.matrix), "input_lengths": [1] * len(rows)}
        sample_idx = None
    elif chosen == "lengths_0d":
        data["input_lengths"] = np.array(batch)
    elif chosen == "lengths_2d":
        data["input_lengths"] = np.asarray(data["input_lengths"], dtype=np.int64).reshape(-1, 1)
    elif chosen == "lengths_float":
        data["input_lengths"] = np.asarray(data["input_lengths"], dtype=np.float64)
    elif chosen == "lengths_bool":
        data["input_lengths"] = [True] * batch if batch else [True]
    elif chosen == "length_out_of_range":
        if batch == 0:
            data["input_lengths"] = [0]
        else:
            lengths = list(np.asarray(data["input_lengths"]).tolist())
            row = draw(st.integers(0, batch - 1))
            lengths[row] = draw(st.sampled_from([-1, ids.shape[1] + 1, 2**40]))
            data["input_lengths"] = lengths
    elif chosen == "row_count":
        key = draw(st.sampled_from(["input_lengths", "vllm_content", "vllm_multi_modal_data", *_OLDER_KEYS]))
        data[key] = (
            [None] * (batch + draw(st.sampled_from([1, 2]))) if key != "input_lengths" else [0] * (batch + 1)
        )
    elif chosen == "both_schemes":
        data["vllm_multi_modal_data"] = [None] * batch
        data[draw(st.sampled_from(_OLDER_KEYS))] = [None] * batch
    else:
        key = draw(st.sampled_from(["vllm_content", "vllm_multi_modal_data", *_OLDER_KEYS, "scalar"]))
        bad_row: Any = draw(st.sampled_from([3, b"x", MediaItem("bare"), {1: MediaItem("k")}]))
        if key == "scalar":
            data["vllm_content"] = "one string for the whole batch"
        else:
            for other in ("vllm_multi_modal_data", *_OLDER_KEYS):
                data.pop(other, None)
            data[key] = [bad_row] * max(batch, 1)
            if batch == 0:
                data["input_ids"] = np.zeros((1, 1), dtype=np.int64)
                data["input_lengths"] = [1]
    return data, sample_idx
