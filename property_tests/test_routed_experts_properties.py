"""Property tests of rl_contracts.routed_experts: SPEC §7 invariants 1, 2 and 10–14, on CPU and (marked) CUDA."""

from __future__ import annotations

import copy
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from rl_contracts import routed_experts
from rl_contracts.errors import ContractError, ContractTypeError, RoutedExpertsError
from rl_contracts.routed_experts import (
    RouteStats,
    as_routed_experts_tensor,
    pad_and_align_routed_expert_indices,
    resolve_routed_experts_dtype,
)
from rl_contracts.testing import assert_contract_error
from rl_contracts.testing.strategies import (
    AlignmentCase,
    RouteArray,
    alignment_cases,
    carry_dtypes,
    hostile_route_arguments,
    hostile_route_values,
    route_arrays,
)

requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
COUNT_ERROR_PREFIXES = ("vLLM returned incomplete routed_experts", "vLLM returned too many routed_experts")


def align(case: AlignmentCase, device: str = "cpu", **flags: bool) -> tuple[torch.Tensor | None, RouteStats]:
    """Call pad_and_align for ``case`` with stats, on ``device``, with the given flags."""
    return pad_and_align_routed_expert_indices(
        case.request_output,
        case.completion_output,
        valid_length=case.valid_length,
        padded_length=case.padded_length,
        device=device,
        routed_experts_dtype=case.dtype,
        routes_start=case.routes_start,
        return_stats=True,
        **flags,
    )


def expected_counts(case: AlignmentCase) -> tuple[int, int, int, int]:
    """``(E, R, missing, surplus)`` of a case with routes, from the SPEC formulas."""
    assert case.combined is not None
    expected = min(max(case.valid_length - 1, 0), case.padded_length)
    count, start = int(case.combined.shape[0]), case.routes_start
    missing = min(start, expected) + max(expected - start - count, 0)
    surplus = min(count, max(start + count - expected - 1, 0))
    return expected, count, missing, surplus


def route_values(case: AlignmentCase) -> list[object]:
    """The route parts a case hands to the function (to check they are not mutated)."""
    return [
        getattr(case.request_output, "prompt_routed_experts", None),
        getattr(case.completion_output, "routed_experts", None),
    ]


def equal_values(left: object, right: object) -> bool:
    """Deep equality of route parts whatever their form (arrays, tensors, nested lists, None)."""
    if isinstance(left, torch.Tensor) and isinstance(right, torch.Tensor):
        return left.dtype == right.dtype and torch.equal(left.cpu(), right.cpu())
    if isinstance(left, np.ndarray) and isinstance(right, np.ndarray):
        return left.dtype == right.dtype and np.array_equal(left, right)
    return left == right


def check_row_classes(case: AlignmentCase, device: str) -> None:
    """Invariant 10 for one case on one device (plus invariant 2: the inputs are unchanged)."""
    before = copy.deepcopy(route_values(case))
    result, stats = align(case, device)
    assert all(equal_values(a, b) for a, b in zip(before, route_values(case), strict=True))
    if case.combined is None:
        assert result is None
        return
    expected, count, _, _ = expected_counts(case)
    start, padded = case.routes_start, case.padded_length
    layers, topk = case.combined.shape[1:]
    assert result is not None
    assert result.shape == (padded, layers, topk)
    assert result.dtype is case.dtype
    assert result.device.type == torch.device(device).type
    rows = result.cpu().numpy().astype(np.int64)
    copied_end = min(expected, start + count)
    copied = max(copied_end - start, 0)
    assert (rows[: min(start, expected)] == -1).all()
    np.testing.assert_array_equal(rows[start : start + copied], case.combined[:copied])
    assert (rows[copied_end:expected] == -1).all()
    np.testing.assert_array_equal(
        rows[expected:], np.broadcast_to(np.arange(topk), (padded - expected, layers, topk))
    )
    assert min(start, expected) + (expected - copied_end) == stats["missing_routes"]


@given(case=alignment_cases())
def test_row_classes(case: AlignmentCase) -> None:
    """Invariant 10: every output row is in exactly one class (sentinel / copied / sentinel / default) by E, R, s."""
    check_row_classes(case, "cpu")


@given(case=alignment_cases())
def test_stats(case: AlignmentCase) -> None:
    """Invariant 11: stats follow the formulas, s = 0 never has both missing and surplus, flags do not matter."""
    _, stats = align(case)
    if case.combined is None:
        assert stats == {
            "actual_routes": 0,
            "expected_routes": min(max(case.valid_length - 1, 0), case.padded_length),
            "missing_routes": 0,
            "surplus_routes": 0,
        }
        return
    expected, count, missing, surplus = expected_counts(case)
    assert stats == {
        "actual_routes": count,
        "expected_routes": expected,
        "missing_routes": missing,
        "surplus_routes": surplus,
    }
    if case.routes_start == 0 and missing > 0:
        assert surplus == 0
    for strict in (False, True):
        for fallback in (False, True):
            try:
                _, other = align(
                    case,
                    require_complete_routed_experts=strict,
                    allow_missing_routed_experts_fallback=fallback,
                )
            except RoutedExpertsError:
                continue
            assert other == stats


@given(case=alignment_cases(), fallback=st.booleans())
def test_strict_mode(case: AlignmentCase, fallback: bool) -> None:
    """Invariant 12: strict mode raises exactly when the rule says; non-strict never raises a count error."""
    _, stats = align(case, allow_missing_routed_experts_fallback=fallback)
    should_raise = stats["surplus_routes"] > 0 or (stats["missing_routes"] > 0 and not fallback)
    if should_raise:
        with pytest.raises(RoutedExpertsError) as caught:
            align(case, require_complete_routed_experts=True, allow_missing_routed_experts_fallback=fallback)
        assert str(caught.value).startswith(COUNT_ERROR_PREFIXES)
        assert caught.value.routes == stats["actual_routes"]
        assert caught.value.expected == stats["expected_routes"]
        assert caught.value.routes_start == case.routes_start
    else:
        _, strict_stats = align(
            case, require_complete_routed_experts=True, allow_missing_routed_experts_fallback=fallback
        )
        assert strict_stats["surplus_routes"] == 0
        assert fallback or strict_stats["missing_routes"] == 0


def check_range(source: RouteArray, dtype: torch.dtype, flag: bool, device: str) -> None:
    """Invariant 13 for one source: raises iff an id is below -1 or above the carry dtype, whatever the flag."""
    limit = int(torch.iinfo(dtype).max)
    out_of_range = source.ids.size > 0 and (int(source.ids.min()) < -1 or int(source.ids.max()) > limit)
    saved = routed_experts.G_ROUTED_EXPERTS_RANGE_CHECKED
    try:
        for _ in range(2):  # the outcome does not depend on earlier calls
            routed_experts.G_ROUTED_EXPERTS_RANGE_CHECKED = flag
            if out_of_range:
                with pytest.raises(
                    RoutedExpertsError, match=r"exceeds the resolved carry dtype|below the missing"
                ):
                    as_routed_experts_tensor(source.value, device=device, dtype=dtype)
            else:
                result = as_routed_experts_tensor(source.value, device=device, dtype=dtype)
                assert result.dtype is dtype
                np.testing.assert_array_equal(result.cpu().numpy(), source.ids)
                assert routed_experts.G_ROUTED_EXPERTS_RANGE_CHECKED is (flag or source.ids.size > 0)
    finally:
        routed_experts.G_ROUTED_EXPERTS_RANGE_CHECKED = saved


@given(source=route_arrays(min_id=-300, max_id=70000), dtype=carry_dtypes(), flag=st.booleans())
def test_range_check_on_every_call(source: RouteArray, dtype: torch.dtype, flag: bool) -> None:
    """Invariant 13: for any integer source the conversion raises iff some id is < -1 or > iinfo(dtype).max."""
    check_range(source, dtype, flag, "cpu")


@given(
    source=route_arrays(
        kinds=("numpy_uint8", "numpy_uint16", "numpy_uint16_bigendian", "numpy_uint8_readonly"),
        min_id=0,
        max_id=65535,
    ),
    dtype=carry_dtypes(),
    flag=st.booleans(),
)
def test_range_check_on_vllm_numpy_sources(source: RouteArray, dtype: torch.dtype, flag: bool) -> None:
    """Invariant 13 on what vLLM returns: numpy uint8/uint16 arrays are accepted and checked exactly."""
    check_range(source, dtype, flag, "cpu")


@given(n=st.integers(1, 2**31), m=st.integers(1, 2**31))
def test_dtype_resolution(n: int, m: int) -> None:
    """Invariant 14: the resolved dtype holds n-1 and -1, is the narrowest that does, and is monotone in n."""
    dtype = resolve_routed_experts_dtype(n)
    info = torch.iinfo(dtype)
    assert info.min <= -1
    assert n - 1 <= info.max
    narrower = {torch.int8: None, torch.int16: torch.int8, torch.int32: torch.int16}[dtype]
    assert narrower is None or n - 1 > torch.iinfo(narrower).max
    low, high = sorted((n, m))
    assert resolve_routed_experts_dtype(low).itemsize <= resolve_routed_experts_dtype(high).itemsize


def check_contract_error(error: ContractError) -> None:
    """Invariant 1 for one raised error: class, built-in base, bounded message, pickle round-trip."""
    assert isinstance(error, RoutedExpertsError | ContractTypeError)
    assert isinstance(error, ValueError | TypeError)
    assert_contract_error(error)


route_parts = st.one_of(st.none(), hostile_route_values(), route_arrays().map(lambda source: source.value))


@given(
    generation=route_parts,
    prompt=route_parts,
    arguments=hostile_route_arguments(),
    cached=hostile_route_values(),
)
def test_hostile_alignment_inputs_only_raise_contract_errors(
    generation: object, prompt: object, arguments: dict[str, Any], cached: object
) -> None:
    """Invariant 1: any routes, lengths, flags, dtype or device raise only bounded, picklable ContractErrors."""
    request = SimpleNamespace(prompt_routed_experts=prompt, num_cached_tokens=cached)
    completion = SimpleNamespace(routed_experts=generation)
    try:
        pad_and_align_routed_expert_indices(request, completion, **arguments)
    except ContractError as error:
        check_contract_error(error)


@given(
    value=hostile_route_values(), dtype=st.one_of(carry_dtypes(), st.sampled_from([torch.float32, "int8"]))
)
def test_hostile_conversion_inputs_only_raise_contract_errors(value: object, dtype: Any) -> None:
    """Invariant 1: as_routed_experts_tensor on any value raises only bounded, picklable ContractErrors."""
    try:
        as_routed_experts_tensor(value, device="cpu", dtype=dtype)
    except ContractError as error:
        check_contract_error(error)


def on_cuda(case: AlignmentCase) -> AlignmentCase:
    """The same case with every tensor source moved to the CUDA device (numpy and list sources unchanged)."""
    for owner, name in (
        (case.request_output, "prompt_routed_experts"),
        (case.completion_output, "routed_experts"),
    ):
        value = getattr(owner, name, None)
        if isinstance(value, torch.Tensor):
            setattr(owner, name, value.to("cuda"))
    return case


@pytest.mark.gpu
@requires_cuda
@given(case=alignment_cases())
def test_row_classes_cuda(case: AlignmentCase) -> None:
    """Invariant 10 with device="cuda": host sources are cast on the host and copied once to the device."""
    check_row_classes(case, "cuda")


@pytest.mark.gpu
@requires_cuda
@given(case=alignment_cases().map(on_cuda))
def test_row_classes_cuda_sources(case: AlignmentCase) -> None:
    """Invariant 10 with CUDA tensor sources aligned on the CUDA device."""
    check_row_classes(case, "cuda")


@pytest.mark.gpu
@requires_cuda
@given(case=alignment_cases().map(on_cuda), fallback=st.booleans())
def test_stats_and_strict_mode_cuda(case: AlignmentCase, fallback: bool) -> None:
    """Invariants 11 and 12 on the CUDA device: the same stats and strict-mode outcomes as on the CPU."""
    _, stats = align(case, "cuda", allow_missing_routed_experts_fallback=fallback)
    if case.combined is not None:
        _, count, missing, surplus = expected_counts(case)
        assert (stats["actual_routes"], stats["missing_routes"], stats["surplus_routes"]) == (
            count,
            missing,
            surplus,
        )
    should_raise = stats["surplus_routes"] > 0 or (stats["missing_routes"] > 0 and not fallback)
    try:
        align(
            case, "cuda", require_complete_routed_experts=True, allow_missing_routed_experts_fallback=fallback
        )
    except RoutedExpertsError:
        assert should_raise
    else:
        assert not should_raise


@pytest.mark.gpu
@requires_cuda
@given(source=route_arrays(min_id=-300, max_id=70000), dtype=carry_dtypes(), flag=st.booleans())
def test_range_check_cuda(source: RouteArray, dtype: torch.dtype, flag: bool) -> None:
    """Invariant 13 with device="cuda", for host sources and for the same sources as CUDA tensors."""
    check_range(source, dtype, flag, "cuda")
    if isinstance(source.value, torch.Tensor):
        check_range(RouteArray(source.value.to("cuda"), source.kind, source.ids), dtype, flag, "cuda")
