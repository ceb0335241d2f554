"""Id-range boundaries and non-CPU destinations of ``rl_contracts.routed_experts`` (SPEC §3.2 step 3, §3.3).

Every id must lie in ``[-1, iinfo(carry).max]``: the sentinel ``-1`` and an id equal to the carry dtype's maximum
are accepted exactly, ``-2`` and ``max + 1`` are rejected with ``.min_id``/``.max_id``, ``.dtype_name`` and
``.limit``.  The table covers each reduction path: torch ``aminmax`` (both bounds needed), a single torch
reduction (only one bound needed), numpy arrays, and uint16/64 tensors (no torch reductions, reduced on numpy).
The default route ``arange(K)`` must fit the carry dtype too (K = max + 1 is the largest top-k), and the output may
be at most 2**63 - 1 bytes, each zero dimension counted as one.

Results on a non-CPU device are checked on the meta device (shape, dtype, device) and, for their values, with a
destination that reports a non-CPU device while storing on the host, because this machine has no accelerator.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, cast

import numpy as np
import pytest
import torch

from rl_contracts import routed_experts
from rl_contracts.errors import RoutedExpertsError
from rl_contracts.routed_experts import as_routed_experts_tensor, pad_and_align_routed_expert_indices
from rl_contracts.testing import assert_contract_error

Build = Callable[[list[int]], Any]
LIMITS = {torch.int8: 127, torch.int16: 32767, torch.int32: 2**31 - 1, torch.int64: 2**63 - 1}
NAMES = {torch.int8: "int8", torch.int16: "int16", torch.int32: "int32", torch.int64: "int64"}


def numpy_source(dtype: str) -> Build:
    return lambda ids: np.array([[ids]], dtype=dtype)


def tensor_source(dtype: torch.dtype) -> Build:
    # Built through int64 (uint64 values above int64's max go through numpy), then cast without wrapping.
    return lambda ids: torch.from_numpy(
        np.array([[ids]], dtype=np.uint64 if dtype == torch.uint64 else np.int64)
    ).to(dtype)


# (case id, source builder, carry dtype, smallest and largest value the source dtype can hold)
CASES: list[tuple[str, Build, torch.dtype, int, int]] = [
    ("numpy_uint8_int8", numpy_source("uint8"), torch.int8, 0, 255),
    ("numpy_uint16_int16", numpy_source("uint16"), torch.int16, 0, 65535),
    ("numpy_big_endian_uint16_int8", numpy_source(">u2"), torch.int8, 0, 65535),
    ("numpy_int8_int8", numpy_source("int8"), torch.int8, -128, 127),
    ("numpy_int64_int32", numpy_source("int64"), torch.int32, -(2**63), 2**63 - 1),
    ("numpy_uint64_int64", numpy_source("uint64"), torch.int64, 0, 2**64 - 1),
    ("tensor_int16_int8_aminmax", tensor_source(torch.int16), torch.int8, -(2**15), 2**15 - 1),
    ("tensor_int64_int32_aminmax", tensor_source(torch.int64), torch.int32, -(2**63), 2**63 - 1),
    ("tensor_int8_int16_min_only", tensor_source(torch.int8), torch.int16, -128, 127),
    ("tensor_int64_int64_min_only", tensor_source(torch.int64), torch.int64, -(2**63), 2**63 - 1),
    ("tensor_uint8_int8_max_only", tensor_source(torch.uint8), torch.int8, 0, 255),
    ("tensor_uint16_int8_on_numpy", tensor_source(torch.uint16), torch.int8, 0, 65535),
    ("tensor_uint64_int64_on_numpy", tensor_source(torch.uint64), torch.int64, 0, 2**64 - 1),
]
IDS = [case[0] for case in CASES]
ABOVE = [case for case in CASES if case[4] > LIMITS[case[2]]]
BELOW = [case for case in CASES if case[3] < -1]


def exceeds(value: int, carry: torch.dtype) -> str:
    """SPEC §3.2's key fragment of the overflow error (the whole text is pinned once, in test_routed_experts)."""
    return f"routed expert id {value} exceeds the resolved carry dtype {carry} (max {LIMITS[carry]})"


def below(value: int) -> str:
    """SPEC §3.2's key fragment of the sentinel error."""
    return f"routed expert id {value} is below the missing-route sentinel -1"


@pytest.mark.parametrize(("build", "carry", "low", "high"), [case[1:] for case in CASES], ids=IDS)
def test_ids_at_both_ends_of_the_range_are_accepted_exactly(
    build: Build, carry: torch.dtype, low: int, high: int
) -> None:
    """The sentinel -1 (or 0 for unsigned sources) and an id equal to the carry maximum convert exactly."""
    ids = [max(low, -1), min(high, LIMITS[carry]), 0]
    result = as_routed_experts_tensor(build(ids), device="cpu", dtype=carry)
    assert result.dtype is carry
    assert result.tolist() == [[ids]]


@pytest.mark.parametrize(
    ("build", "carry", "low", "high"), [case[1:] for case in ABOVE], ids=[c[0] for c in ABOVE]
)
def test_an_id_one_above_the_carry_maximum_is_rejected(
    build: Build, carry: torch.dtype, low: int, high: int
) -> None:
    """``max + 1`` raises the overflow error with max_id, dtype_name and limit (min_id does not apply)."""
    del low, high
    value = LIMITS[carry] + 1
    with pytest.raises(RoutedExpertsError) as caught:
        as_routed_experts_tensor(build([0, value]), device="cpu", dtype=carry)
    error = caught.value
    assert exceeds(value, carry) in str(error)
    assert (error.min_id, error.max_id, error.dtype_name, error.limit) == (
        None,
        value,
        NAMES[carry],
        LIMITS[carry],
    )
    assert_contract_error(error)


@pytest.mark.parametrize(
    ("build", "carry", "low", "high"), [case[1:] for case in BELOW], ids=[c[0] for c in BELOW]
)
def test_an_id_one_below_the_sentinel_is_rejected(
    build: Build, carry: torch.dtype, low: int, high: int
) -> None:
    """``-2`` raises the sentinel error with min_id, dtype_name and limit (max_id does not apply)."""
    del low, high
    with pytest.raises(RoutedExpertsError) as caught:
        as_routed_experts_tensor(build([-1, -2, 0]), device="cpu", dtype=carry)
    error = caught.value
    assert below(-2) in str(error)
    assert (error.min_id, error.max_id, error.dtype_name, error.limit) == (
        -2,
        None,
        NAMES[carry],
        LIMITS[carry],
    )
    assert_contract_error(error)


def test_an_id_too_large_is_reported_before_one_too_small() -> None:
    """With both bounds violated, the overflow check (SPEC §3.2 step 3, first bullet) is the one raised."""
    with pytest.raises(RoutedExpertsError) as caught:
        as_routed_experts_tensor(torch.tensor([[[-5, 300]]]), device="cpu", dtype=torch.int8)
    assert exceeds(300, torch.int8) in str(caught.value)
    assert (caught.value.min_id, caught.value.max_id) == (None, 300)


def test_pad_and_align_bounds_carry_the_part_and_the_counts() -> None:
    """Through pad_and_align the boundary ids are copied, and a -2 names its part and the route counts."""
    request = SimpleNamespace(prompt_routed_experts=np.array([[[127, 0]]], np.uint8), num_cached_tokens=3)
    completion = SimpleNamespace(routed_experts=np.array([[[-1, -1]]], np.int16))
    result = pad_and_align_routed_expert_indices(
        request, completion, valid_length=3, padded_length=4, device="cpu", routed_experts_dtype=torch.int8
    )
    assert result is not None
    assert result.tolist() == [[[127, 0]], [[-1, -1]], [[0, 1]], [[0, 1]]]
    completion.routed_experts = np.array([[[-2, 4]]], np.int16)
    with pytest.raises(RoutedExpertsError) as caught:
        pad_and_align_routed_expert_indices(
            request,
            completion,
            valid_length=3,
            padded_length=4,
            device="cpu",
            routed_experts_dtype=torch.int8,
        )
    error = caught.value
    assert below(-2) in str(error)
    for fragment in (
        "routed_experts:",
        "expected=2",
        "valid_length=3",
        "padded_length=4",
        "num_cached_tokens=3",
    ):
        assert fragment in str(error)
    assert (error.min_id, error.max_id, error.dtype_name, error.limit) == (-2, None, "int8", 127)
    assert (error.valid_length, error.padded_length, error.expected, error.num_cached_tokens) == (3, 4, 2, 3)
    assert_contract_error(error)


# --- default-route and output-size bounds (SPEC §3.3 step 10) -----------------------------------------------------


def facts(valid: int, padded: int, routes: int = 1) -> list[str]:
    """The key fragments of the alignment facts a default-route or size error quotes."""
    expected = min(max(valid - 1, 0), padded)
    return [f"routes={routes}", f"expected={expected}", f"valid_length={valid}", f"padded_length={padded}"]


@pytest.mark.parametrize("carry", [torch.int8, torch.int16], ids=["int8", "int16"])
def test_the_largest_topk_whose_default_route_fits_is_accepted_and_one_more_is_rejected(
    carry: torch.dtype,
) -> None:
    """With K = max + 1 the default route arange(K) ends exactly at the carry maximum; K = max + 2 needs id
    max + 1, which raises with max_id, dtype_name, limit and the route counts."""
    limit = LIMITS[carry]
    topk = limit + 1
    result = pad_and_align_routed_expert_indices(
        None,
        SimpleNamespace(routed_experts=np.zeros((1, 1, topk), np.uint8)),
        valid_length=2,
        padded_length=3,
        device="cpu",
        routed_experts_dtype=carry,
    )
    assert result is not None
    assert result.dtype is carry
    assert result[0].tolist() == [[0] * topk]
    assert result[1:].tolist() == [[list(range(topk))]] * 2
    with pytest.raises(RoutedExpertsError) as caught:
        pad_and_align_routed_expert_indices(
            None,
            SimpleNamespace(routed_experts=np.zeros((1, 1, topk + 1), np.uint8)),
            valid_length=2,
            padded_length=3,
            device="cpu",
            routed_experts_dtype=carry,
        )
    error = caught.value
    for fragment in (f"topk {topk + 1}", f"up to {topk}", f"carry dtype {carry} (max {limit})", *facts(2, 3)):
        assert fragment in str(error)
    assert (error.min_id, error.max_id, error.dtype_name, error.limit) == (None, topk, NAMES[carry], limit)
    assert (error.routes, error.expected, error.valid_length, error.padded_length, error.routes_start) == (
        1,
        1,
        2,
        3,
        0,
    )
    assert_contract_error(error)


MAX_BYTES = 2**63 - 1
"""The largest byte size torch's int64 storage arithmetic can hold."""
ROWS = MAX_BYTES // 127
"""ROWS x 127 int8 ids are exactly MAX_BYTES bytes (2**63 - 1 = 127 x 72624976668147841)."""


@pytest.mark.parametrize(
    ("source_shape", "padded"),
    [((0, ROWS, 127), 0), ((0, 0, 127), ROWS), ((0, 127, 0), ROWS)],
    ids=["no_rows", "no_layers", "no_topk"],
)
def test_an_output_of_exactly_the_largest_size_is_accepted(
    source_shape: tuple[int, int, int], padded: int
) -> None:
    """The size check counts a zero dimension as one: max(P, 1) x max(L, 1) x max(K, 1) x itemsize may equal
    2**63 - 1 bytes.  Such an output has no elements, so it is returned empty with its full shape."""
    result, stats = pad_and_align_routed_expert_indices(
        None,
        SimpleNamespace(routed_experts=np.empty(source_shape, np.uint8)),
        valid_length=1,
        padded_length=padded,
        device="cpu",
        routed_experts_dtype=torch.int8,
        return_stats=True,
    )
    assert result is not None
    assert (tuple(result.shape), result.dtype, result.numel()) == ((padded, *source_shape[1:]), torch.int8, 0)
    assert stats == {"actual_routes": 0, "expected_routes": 0, "missing_routes": 0, "surplus_routes": 0}


@pytest.mark.parametrize("source_shape", [(0, 0, 127), (0, 127, 0)], ids=["no_layers", "no_topk"])
def test_an_output_one_row_beyond_the_largest_size_is_rejected(source_shape: tuple[int, int, int]) -> None:
    """One padded row more than the largest size raises "too large for a tensor" with the counts."""
    padded = ROWS + 1
    with pytest.raises(RoutedExpertsError) as caught:
        pad_and_align_routed_expert_indices(
            None,
            SimpleNamespace(routed_experts=np.empty(source_shape, np.uint8)),
            valid_length=1,
            padded_length=padded,
            device="cpu",
            routed_experts_dtype=torch.int8,
        )
    error = caught.value
    layers, topk = source_shape[1:]
    for fragment in (f"padded_length {padded} x num_moe_layers {layers} x topk {topk}", *facts(1, padded, 0)):
        assert fragment in str(error)
    assert (error.routes, error.expected, error.valid_length, error.padded_length, error.routes_start) == (
        0,
        0,
        1,
        padded,
        0,
    )
    assert (error.max_id, error.limit) == (None, None)
    assert_contract_error(error)


# --- non-CPU destinations ------------------------------------------------------------------------------------------


def _host_cast_sources() -> list[tuple[str, np.ndarray]]:
    """Integer arrays torch cannot wrap without a copy, so numpy casts them on the host (SPEC §3.2 step 4)."""
    grid = np.arange(12, dtype=np.uint8).reshape(2, 3, 2) * 10
    return [
        ("read_only", np.frombuffer(grid.tobytes(), np.uint8).reshape(2, 3, 2)),
        ("big_endian", grid.astype(">u2")),
        ("reversed_rows", grid[::-1]),
        ("broadcast", np.broadcast_to(grid[:1], (2, 3, 2))),
    ]


HOST_CAST = _host_cast_sources()


@pytest.mark.parametrize("source", [case[1] for case in HOST_CAST], ids=[case[0] for case in HOST_CAST])
def test_host_cast_sources_convert_onto_a_non_cpu_device(source: np.ndarray) -> None:
    """Arrays numpy must cast on the host still land on the requested (meta) device in the carry dtype."""
    result = as_routed_experts_tensor(source, device="meta", dtype=torch.int16)
    assert (result.device.type, result.dtype, tuple(result.shape)) == ("meta", torch.int16, (2, 3, 2))
    aligned = pad_and_align_routed_expert_indices(
        None, SimpleNamespace(routed_experts=source), valid_length=3, padded_length=4, device="meta"
    )
    assert aligned is not None
    assert (aligned.device.type, aligned.dtype, tuple(aligned.shape)) == ("meta", torch.int16, (4, 3, 2))


def test_host_cast_sources_are_range_checked_before_a_non_cpu_copy() -> None:
    """The id range is checked on the host before anything is allocated or copied on the device."""
    with pytest.raises(RoutedExpertsError) as caught:
        as_routed_experts_tensor(np.array([[[200, 1]]], ">u2"), device="meta", dtype=torch.int8)
    assert exceeds(200, torch.int8) in str(caught.value)


class HostBackedDevice:
    """A destination that reports a non-CPU device but stores on the host, to check the values that a
    host-to-device copy delivers on a machine without an accelerator.  ``copies`` counts the transfers."""

    def __init__(self, shape: tuple[int, ...], dtype: torch.dtype) -> None:
        self.storage = torch.full(shape, 99, dtype=dtype)
        self.device = torch.device("cuda", 0)
        self.shape, self.dtype = self.storage.shape, dtype
        self.copies = 0

    def numel(self) -> int:
        return self.storage.numel()

    def copy_(self, source: torch.Tensor) -> HostBackedDevice:
        assert source.device.type == "cpu"
        self.copies += 1
        self.storage.copy_(source)
        return self


# Ids beyond 2**24 are where any float32 detour would round (16777217 -> 16777216).
LARGE = [[[2**24 + 1, 2**31 - 1]], [[0, -1]]]


@pytest.mark.parametrize(
    "source",
    [
        np.array(LARGE, ">i4"),
        np.array(LARGE, np.int64)[::-1],
        np.frombuffer(np.array(LARGE, np.int32).tobytes(), np.int32).reshape(2, 1, 2),
        np.array(LARGE, np.int64),
        torch.tensor(LARGE, dtype=torch.int64),
    ],
    ids=["big_endian", "reversed_rows", "read_only", "zero_copy", "tensor"],
)
@pytest.mark.parametrize("carry", [torch.int32, torch.int64])
def test_copy_to_a_non_cpu_destination_delivers_exact_ids_in_one_transfer(
    source: np.ndarray | torch.Tensor, carry: torch.dtype
) -> None:
    """Every id, including ids beyond float32's exact range, arrives exactly, in a single host-to-device copy."""
    expected = np.asarray(source).tolist()
    destination = HostBackedDevice(tuple(source.shape), carry)
    # No public path reaches a non-CPU copy on a machine without an accelerator, so the copy helper is called.
    routed_experts._copy_cast(cast(torch.Tensor, destination), source)
    assert destination.copies == 1
    assert destination.storage.tolist() == expected


NOT_IDS = [
    pytest.param([None], id="none"),
    pytest.param([[[1, None]]], id="none_beside_an_id"),
    pytest.param([[[1.5, 2**70]]], id="float_beside_an_int_beyond_int64"),
    pytest.param([[[-1, "3"]]], id="str_beside_an_id"),
]


@pytest.mark.parametrize("value", NOT_IDS)
def test_nested_lists_holding_non_ids_are_routed_experts_errors(value: list[Any]) -> None:
    """An element numpy keeps in an object array (None, str, a float beside a huge int) is refused as no id.

    Regression: ``[None]`` reached ``int(None)`` inside the range check and escaped as a plain ``TypeError``.
    """
    with pytest.raises(RoutedExpertsError, match="must hold integer expert ids") as info:
        as_routed_experts_tensor(value, device="cpu", dtype=torch.int8)
    assert_contract_error(info.value)
    assert info.value.min_id is None
