"""Hypothesis strategies for router replay: route arrays, alignment cases, envelope tensors and hostile inputs.

Route arrays come in every form a producer may hand over (numpy uint8/uint16 as vLLM returns them, including
read-only, Fortran-order and big-endian arrays; torch int8/16/32/64 and uint8/uint16 tensors; nested lists), each
paired with the same ids as a numpy int64 array for computing expectations.  Alignment cases combine them into
``SimpleNamespace`` stand-ins for vLLM's ``RequestOutput``/``CompletionOutput`` with a ``valid_length``,
``padded_length`` and ``routes_start`` chosen so that exact, final-token-surplus, missing, surplus, empty and
legacy (prompt + generation) layouts all occur (SPEC §7 invariants 10–13, 15–17).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import torch
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

__all__ = [
    "ROUTE_SOURCE_KINDS",
    "AlignmentCase",
    "RouteArray",
    "alignment_cases",
    "carry_dtypes",
    "envelope_tensors",
    "hostile_route_arguments",
    "hostile_route_values",
    "route_arrays",
    "route_counts",
    "vllm_npy_arrays",
]

ROUTE_SOURCE_KINDS: tuple[str, ...] = (
    "numpy_uint8",
    "numpy_uint8_readonly",
    "numpy_uint8_fortran",
    "numpy_uint16",
    "numpy_uint16_bigendian",
    "numpy_int64",
    "torch_int8",
    "torch_int16",
    "torch_int32",
    "torch_int64",
    "torch_uint8",
    "torch_uint16",
    "list",
)
"""Every form of route source the strategies produce (``kind`` of :class:`RouteArray`)."""

_KIND_DTYPES: dict[str, np.dtype[np.integer]] = {
    "numpy_uint8": np.dtype(np.uint8),
    "numpy_uint8_readonly": np.dtype(np.uint8),
    "numpy_uint8_fortran": np.dtype(np.uint8),
    "numpy_uint16": np.dtype(np.uint16),
    "numpy_uint16_bigendian": np.dtype(">u2"),
    "numpy_int64": np.dtype(np.int64),
    "torch_int8": np.dtype(np.int8),
    "torch_int16": np.dtype(np.int16),
    "torch_int32": np.dtype(np.int32),
    "torch_int64": np.dtype(np.int64),
    "torch_uint8": np.dtype(np.uint8),
    "torch_uint16": np.dtype(np.uint16),
    "list": np.dtype(np.int64),
}
_TORCH_KIND_DTYPES = {
    "torch_int8": torch.int8,
    "torch_int16": torch.int16,
    "torch_int32": torch.int32,
    "torch_int64": torch.int64,
    "torch_uint8": torch.uint8,
    "torch_uint16": torch.uint16,
}


@dataclass(frozen=True)
class RouteArray:
    """One route source: ``value`` in the form named by ``kind``, and the same ids as an int64 ``ids`` array."""

    value: object
    kind: str
    ids: np.ndarray


@dataclass(frozen=True)
class AlignmentCase:
    """Arguments of one ``pad_and_align_routed_expert_indices`` call and the combined rows they hold.

    ``combined`` is ``None`` when neither output carries routes; otherwise the int64 ``[R, L, K]`` prompt rows
    followed by the generation rows.  ``layout`` is ``"current"`` (generation part only, as vLLM returns it),
    ``"legacy"`` (prompt and generation parts), ``"prompt_only"`` or ``"none"``.
    """

    request_output: SimpleNamespace
    completion_output: SimpleNamespace
    valid_length: int
    padded_length: int
    routes_start: int
    dtype: torch.dtype
    combined: np.ndarray | None
    layout: str


def _kind_range(kind: str) -> tuple[int, int]:
    info = np.iinfo(_KIND_DTYPES[kind])
    return int(info.min), int(info.max)


def _as_kind(ids: np.ndarray, kind: str) -> object:
    """Express int64 ``ids`` (already within the kind's range) in the form ``kind``."""
    if kind == "list":
        return ids.tolist()
    if kind in _TORCH_KIND_DTYPES:
        return torch.from_numpy(ids.copy()).to(_TORCH_KIND_DTYPES[kind])
    array = ids.astype(_KIND_DTYPES[kind])
    if kind.endswith("_readonly"):
        array.setflags(write=False)
    elif kind.endswith("_fortran"):
        array = np.asfortranarray(array)
    return array


@st.composite
def route_arrays(
    draw: st.DrawFn,
    *,
    kinds: Sequence[str] = ROUTE_SOURCE_KINDS,
    rows: st.SearchStrategy[int] | None = None,
    layers: st.SearchStrategy[int] | None = None,
    topk: st.SearchStrategy[int] | None = None,
    min_id: int = -1,
    max_id: int = 127,
) -> RouteArray:
    """A ``[rows, layers, topk]`` route source of one of ``kinds`` with ids in ``[min_id, max_id]``.

    Ids are clipped to what the kind can represent (unsigned kinds never hold -1); kinds whose range misses
    ``[min_id, max_id]`` entirely are skipped.  Defaults: 0–12 rows, 0–3 layers, 0–4 experts per token (so empty
    arrays and ``K = 0`` occur), ids valid for every carry dtype.
    """
    usable = [kind for kind in kinds if _kind_range(kind)[0] <= max_id and _kind_range(kind)[1] >= min_id]
    kind = draw(st.sampled_from(usable))
    low, high = max(min_id, _kind_range(kind)[0]), min(max_id, _kind_range(kind)[1])
    shape = (
        draw(rows if rows is not None else st.integers(0, 12)),
        draw(layers if layers is not None else st.integers(0, 3)),
        draw(topk if topk is not None else st.integers(0, 4)),
    )
    ids = draw(hnp.arrays(np.int64, shape, elements=st.integers(low, high)))
    if kind == "list" and ids.size == 0:
        kind = "numpy_int64"  # a nested list cannot express a 3-D shape with a zero dimension
    return RouteArray(_as_kind(ids, kind), kind, ids)


def carry_dtypes(*, include_int64: bool = True) -> st.SearchStrategy[torch.dtype]:
    """A supported carry dtype: int8, int16, int32 (and int64 unless ``include_int64=False``)."""
    dtypes = [torch.int8, torch.int16, torch.int32] + ([torch.int64] if include_int64 else [])
    return st.sampled_from(dtypes)


def route_counts(expected: int, routes_start: int) -> st.SearchStrategy[int]:
    """A combined route count ``R`` for ``E = expected``: exact, final-token surplus, missing, surplus or empty."""
    exact = max(expected - routes_start, 0)
    return st.one_of(
        st.just(exact),
        st.just(exact + 1),
        st.integers(0, exact),
        st.integers(exact + 2, exact + 5),
        st.just(0),
    )


@st.composite
def alignment_cases(
    draw: st.DrawFn,
    *,
    kinds: Sequence[str] = ROUTE_SOURCE_KINDS,
    max_length: int = 20,
    layouts: Sequence[str] = ("current", "current", "legacy", "prompt_only", "none"),
    routes_start: st.SearchStrategy[int] | None = None,
) -> AlignmentCase:
    """Arguments of a valid ``pad_and_align_routed_expert_indices`` call, covering every row class.

    ``padded_length`` is 0–``max_length``; ``valid_length`` may exceed it (``E`` is capped); ``routes_start`` is
    mostly 0 and sometimes past ``E``; the route count is drawn by :func:`route_counts`.  The legacy layout splits
    the combined rows at a random point between the prompt and the generation part.
    """
    padded = draw(st.integers(0, max_length))
    valid = draw(st.integers(0, padded + 3))
    start = draw(
        routes_start if routes_start is not None else st.one_of(st.just(0), st.integers(0, padded + 2))
    )
    expected = min(max(valid - 1, 0), padded)
    layout = draw(st.sampled_from(list(layouts)))
    dtype = draw(carry_dtypes())
    count = draw(route_counts(expected, start))
    layers, topk = draw(st.integers(0, 3)), draw(st.integers(0, 4))
    if layout == "none":
        return AlignmentCase(
            SimpleNamespace(prompt_token_ids=[0] * valid),
            SimpleNamespace(index=0),
            valid,
            padded,
            start,
            dtype,
            None,
            layout,
        )
    split = count if layout == "prompt_only" else draw(st.integers(0, count)) if layout == "legacy" else 0

    def part(rows: int) -> RouteArray:
        return draw(route_arrays(kinds=kinds, rows=st.just(rows), layers=st.just(layers), topk=st.just(topk)))

    prompt = part(split) if layout != "current" else None
    generation = part(count - split) if layout != "prompt_only" else None
    request = SimpleNamespace(
        prompt_token_ids=[0] * valid, num_cached_tokens=draw(st.sampled_from([None, 0, 64]))
    )
    if prompt is not None:
        request.prompt_routed_experts = prompt.value
    completion = SimpleNamespace(index=0)
    if generation is not None:
        completion.routed_experts = generation.value
    parts = [part.ids for part in (prompt, generation) if part is not None]
    combined = np.concatenate(parts, axis=0) if parts else np.zeros((0, layers, topk), np.int64)
    return AlignmentCase(request, completion, valid, padded, start, dtype, combined, layout)


@st.composite
def envelope_tensors(
    draw: st.DrawFn, *, dtypes: Sequence[torch.dtype] = (torch.int8, torch.int16, torch.int32)
) -> torch.Tensor:
    """A 3-D int8/int16/int32 tensor (empty ones included) with values in ``[-1, iinfo(dtype).max]``."""
    dtype = draw(st.sampled_from(list(dtypes)))
    shape = draw(hnp.array_shapes(min_dims=3, max_dims=3, min_side=0, max_side=6))
    limit = int(torch.iinfo(dtype).max)
    values = st.one_of(st.integers(-1, 3), st.integers(-1, limit), st.just(limit))
    ids = draw(hnp.arrays(np.int64, shape, elements=values))
    return torch.from_numpy(ids).to(dtype)


@st.composite
def vllm_npy_arrays(draw: st.DrawFn) -> np.ndarray:
    """A 3-D array as vLLM's server saves it: uint8 or uint16 (also int8/int16 and big-endian), C or Fortran order."""
    dtype = draw(st.sampled_from([np.dtype(name) for name in ("u1", "u2", "i1", "i2", ">u2")]))
    shape = draw(hnp.array_shapes(min_dims=3, max_dims=3, min_side=0, max_side=5))
    info = np.iinfo(dtype)
    ids = draw(
        hnp.arrays(np.int64, shape, elements=st.integers(max(int(info.min), -1), min(int(info.max), 300)))
    )
    array = ids.astype(dtype)
    return np.asfortranarray(array) if draw(st.booleans()) else array


def hostile_route_values() -> st.SearchStrategy[object]:
    """Values a broken producer might put in ``routed_experts``: any type, floats, NaN, bools, huge ints, bad shapes.

    None of them is a valid ``[S, L, K]`` integer route array in range for every carry dtype.
    """
    scalars = st.one_of(
        st.floats(allow_nan=True, allow_infinity=True),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.text(max_size=5),
        st.binary(max_size=5),
    )
    nested = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3), max_leaves=12)
    arrays = st.one_of(
        hnp.arrays(
            st.sampled_from([np.float32, np.float64, np.bool_, np.complex64, np.int64, np.uint64, np.int8]),
            hnp.array_shapes(min_dims=0, max_dims=4, max_side=3),
        ),
        hnp.arrays(np.object_, hnp.array_shapes(min_dims=1, max_dims=3, max_side=2), elements=scalars),
    )
    tensors = arrays.filter(lambda a: a.dtype != np.object_).map(lambda a: torch.from_numpy(np.array(a)))
    others = st.sampled_from(
        [
            object(),
            {"rows": 1},
            {1, 2},
            b"\x00\x01",
            "nrlre1:int16:1x1x2:AwD//w==",
            torch.empty(0).to_sparse(),
        ]
    )
    return st.one_of(scalars, nested, arrays, tensors, others)


def hostile_route_arguments() -> st.SearchStrategy[dict[str, object]]:
    """Keyword arguments of ``pad_and_align_routed_expert_indices`` with any field possibly of the wrong type.

    Lengths include negatives, bools, floats, strings and ints too large for any tensor; flags include non-bools;
    the dtype includes non-carry dtypes and non-dtypes; the device includes invalid strings and non-strings.
    """
    lengths = st.one_of(
        st.integers(0, 12),
        st.integers(-3, -1),
        st.sampled_from([True, 1.5, float("nan"), "3", None, 2**63, 2**70]),
    )
    flags = st.one_of(st.booleans(), st.sampled_from([0, 1, None, "yes"]))
    dtypes = st.one_of(
        carry_dtypes(), st.sampled_from([torch.float32, torch.uint8, torch.bool, "int16", None, 16])
    )
    devices = st.sampled_from(["cpu", torch.device("cpu"), "nonsense", 0, None])
    return st.fixed_dictionaries(
        {
            "valid_length": lengths,
            "padded_length": lengths,
            "device": devices,
            "require_complete_routed_experts": flags,
            "allow_missing_routed_experts_fallback": flags,
            "return_stats": flags,
            "routed_experts_dtype": dtypes,
            "routes_start": lengths,
        }
    )
