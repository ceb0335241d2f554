"""Unit tests of rl_contracts.routed_experts: SPEC §3.1–3.3 worked examples, error paths and real vLLM routes."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch

from rl_contracts import routed_experts
from rl_contracts.errors import ContractError, ContractTypeError, RoutedExpertsError
from rl_contracts.routed_experts import (
    R3_MISSING_ROUTE_SENTINEL,
    ROUTED_EXPERTS_DTYPE_NAMES,
    ROUTED_EXPERTS_FALLBACK_DTYPE,
    RouteStats,
    as_routed_experts_tensor,
    get_num_routed_experts,
    pad_and_align_routed_expert_indices,
    resolve_routed_experts_dtype,
)
from rl_contracts.testing import assert_contract_error

DATA = Path(__file__).parent / "data"


def routes(rows: int, layers: int = 3, topk: int = 2, offset: int = 10) -> np.ndarray:
    """Distinct uint8 ids per row (``offset + row``), so copied rows are recognisable and never look like defaults."""
    ids = (np.arange(rows, dtype=np.int64) + offset).reshape(rows, 1, 1)
    return np.broadcast_to(ids, (rows, layers, topk)).astype(np.uint8)


def outputs(
    generation: object = None, prompt: object = None, cached: object = None
) -> tuple[SimpleNamespace, SimpleNamespace]:
    """Request/completion stand-ins carrying the given parts (absent when ``None``)."""
    request = SimpleNamespace(prompt_token_ids=[1, 2, 3], num_cached_tokens=cached)
    if prompt is not None:
        request.prompt_routed_experts = prompt
    completion = SimpleNamespace(index=0, token_ids=[7])
    if generation is not None:
        completion.routed_experts = generation
    return request, completion


def align(generation: object = None, prompt: object = None, **kwargs: Any) -> Any:
    """Call pad_and_align with CPU defaults; ``kwargs`` override any argument."""
    request, completion = outputs(generation, prompt, kwargs.pop("cached", None))
    arguments: dict[str, Any] = {"device": "cpu", **kwargs}
    return pad_and_align_routed_expert_indices(request, completion, **arguments)


def arange_rows(count: int, layers: int = 3, topk: int = 2) -> np.ndarray:
    """``count`` default-route rows ``arange(topk)`` in every layer."""
    return np.broadcast_to(np.arange(topk), (count, layers, topk))


# --- §3.1 constants and dtype resolution -------------------------------------------------------------------------


def test_constants() -> None:
    """The sentinel is -1, the fallback carry dtype int16, and the wire dtype names are the three narrow ints."""
    assert R3_MISSING_ROUTE_SENTINEL == -1
    assert ROUTED_EXPERTS_FALLBACK_DTYPE is torch.int16
    assert {torch.int8: "int8", torch.int16: "int16", torch.int32: "int32"} == ROUTED_EXPERTS_DTYPE_NAMES
    assert list(RouteStats.__annotations__) == [
        "actual_routes",
        "expected_routes",
        "missing_routes",
        "surplus_routes",
    ]


def test_range_checked_flag_starts_false_and_is_set_by_a_successful_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A fresh copy of the module starts with the flag False; an empty source leaves it, a checked one sets it."""
    name = "rl_contracts._fresh_routed_experts"
    spec = importlib.util.spec_from_file_location(name, routed_experts.__file__)
    assert spec is not None
    assert spec.loader is not None
    fresh: ModuleType = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, fresh)
    spec.loader.exec_module(fresh)
    assert fresh.G_ROUTED_EXPERTS_RANGE_CHECKED is False
    fresh.as_routed_experts_tensor([], device="cpu", dtype=torch.int16)
    assert fresh.G_ROUTED_EXPERTS_RANGE_CHECKED is False
    with pytest.raises(RoutedExpertsError):
        fresh.as_routed_experts_tensor([[[200]]], device="cpu", dtype=torch.int8)
    assert fresh.G_ROUTED_EXPERTS_RANGE_CHECKED is False
    fresh.as_routed_experts_tensor([[[5]]], device="cpu", dtype=torch.int8)
    assert fresh.G_ROUTED_EXPERTS_RANGE_CHECKED is True


@pytest.mark.parametrize(
    ("num_experts", "expected"),
    [
        (None, torch.int16),
        (1, torch.int8),
        (8, torch.int8),
        (128, torch.int8),
        (129, torch.int16),
        (256, torch.int16),
        (32768, torch.int16),
        (32769, torch.int32),
        (2**31, torch.int32),
        (np.int64(256), torch.int16),
    ],
)
def test_resolve_routed_experts_dtype_table(num_experts: int | None, expected: torch.dtype) -> None:
    """Each row of the §3.1 table resolves to the narrowest dtype holding n-1 and -1."""
    assert resolve_routed_experts_dtype(num_experts) is expected


@pytest.mark.parametrize(
    ("num_experts", "message"),
    [
        (2**31 + 1, f"num_experts must be <= 2**31 for the int32 carry dtype, got {2**31 + 1}"),
        (0, "num_experts must be >= 1, got 0"),
        (-5, "num_experts must be >= 1, got -5"),
    ],
)
def test_resolve_routed_experts_dtype_rejects_counts(num_experts: int, message: str) -> None:
    """Counts outside 1 … 2**31 raise RoutedExpertsError with the SPEC message."""
    with pytest.raises(RoutedExpertsError) as caught:
        resolve_routed_experts_dtype(num_experts)
    assert str(caught.value) == message
    assert_contract_error(caught.value)


@pytest.mark.parametrize("num_experts", [2**31 + 1, 2**40])
def test_resolve_routed_experts_dtype_too_many_experts_attributes(num_experts: int) -> None:
    """Above 2**31 experts the error carries the largest id, the int32 dtype name and its limit 2**31 - 1."""
    with pytest.raises(RoutedExpertsError) as caught:
        resolve_routed_experts_dtype(num_experts)
    assert (caught.value.max_id, caught.value.dtype_name, caught.value.limit) == (
        num_experts - 1,
        "int32",
        2**31 - 1,
    )


@pytest.mark.parametrize("num_experts", [True, False, 8.0, "8", np.bool_(True), [8]])
def test_resolve_routed_experts_dtype_rejects_non_ints(num_experts: Any) -> None:
    """Bools and other non-ints raise ContractTypeError naming num_experts."""
    with pytest.raises(ContractTypeError, match="num_experts") as caught:
        resolve_routed_experts_dtype(num_experts)
    assert caught.value.argument == "num_experts"


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (SimpleNamespace(num_experts=8), 8),
        (SimpleNamespace(num_experts=1, n_routed_experts=16), 1),
        (SimpleNamespace(n_routed_experts=256), 256),
        (SimpleNamespace(num_local_experts=4), 4),
        (SimpleNamespace(num_experts=8, n_routed_experts=16, num_local_experts=32), 8),
        (SimpleNamespace(num_experts=0, n_routed_experts=16), 16),
        (SimpleNamespace(num_experts=True, num_local_experts=4), 4),
        (SimpleNamespace(num_experts=-1), None),
        (SimpleNamespace(num_experts=8.0), None),
        (SimpleNamespace(num_experts=np.int64(64)), 64),
        (SimpleNamespace(hidden_size=128), None),
        (SimpleNamespace(text_config=SimpleNamespace(num_experts=60)), 60),
        (SimpleNamespace(num_experts=None, text_config=SimpleNamespace(n_routed_experts=64)), 64),
        (SimpleNamespace(num_experts=4, text_config=SimpleNamespace(num_experts=60)), 4),
        (SimpleNamespace(text_config=None), None),
        ({"num_experts": 8}, None),
        (None, None),
    ],
)
def test_get_num_routed_experts(config: object, expected: int | None) -> None:
    """The first positive int among the three attributes, on the config and then its text_config; bools ignored."""
    assert get_num_routed_experts(config) == expected


# --- §3.2 as_routed_experts_tensor --------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.uint8, torch.bool, "int16", None, 16])
def test_as_tensor_rejects_unsupported_carry_dtypes(dtype: Any) -> None:
    """A carry dtype outside int8/int16/int32/int64 raises with the SPEC's list of names."""
    with pytest.raises(RoutedExpertsError) as caught:
        as_routed_experts_tensor([[[1]]], device="cpu", dtype=dtype)
    assert str(caught.value) == (
        f"Unsupported routed_experts carry dtype {dtype}; expected one of ['int16', 'int32', 'int64', 'int8']."
    )
    assert caught.value.dtype_name == str(dtype)


def test_as_tensor_uint16_numpy_overflow_for_int16_and_exact_for_int32() -> None:
    """vLLM's uint16 array [[[300, 40000]]] overflows int16 (with attributes) and converts exactly to int32."""
    value = np.array([[[300, 40000]]], np.uint16)
    with pytest.raises(RoutedExpertsError) as caught:
        as_routed_experts_tensor(value, device="cpu", dtype=torch.int16)
    error = caught.value
    assert str(error) == (
        "routed expert id 40000 exceeds the resolved carry dtype torch.int16 (max 32767); the model's expert count "
        "was likely mis-detected (see rl_contracts.routed_experts.resolve_routed_experts_dtype)."
    )
    assert (error.min_id, error.max_id, error.dtype_name, error.limit) == (None, 40000, "int16", 32767)
    assert_contract_error(error)
    result = as_routed_experts_tensor(value, device="cpu", dtype=torch.int32)
    assert result.dtype is torch.int32
    assert result.tolist() == [[[300, 40000]]]


def test_as_tensor_rejects_ids_below_the_sentinel() -> None:
    """An id below -1 raises with min_id; -1 itself is accepted."""
    with pytest.raises(RoutedExpertsError) as caught:
        as_routed_experts_tensor(torch.tensor([[[-1, -2, 5]]]), device="cpu", dtype=torch.int16)
    assert str(caught.value) == (
        "routed expert id -2 is below the missing-route sentinel -1; routed_experts must hold expert ids >= 0 "
        "or the sentinel -1."
    )
    assert (caught.value.min_id, caught.value.max_id, caught.value.limit) == (-2, None, 32767)
    assert as_routed_experts_tensor([[[-1, 5]]], device="cpu", dtype=torch.int8).tolist() == [[[-1, 5]]]


@pytest.mark.parametrize(
    ("value", "dtype_text"),
    [
        (np.zeros((1, 1, 2), np.float32), "float32"),
        (np.ones((1, 1, 2), np.bool_), "bool"),
        (np.zeros((1, 1, 1), np.complex64), "complex64"),
        (torch.zeros(1, 1, 2), "torch.float32"),
        (torch.ones(1, 1, 2, dtype=torch.bool), "torch.bool"),
        (torch.zeros(1, 1, 2, dtype=torch.bfloat16), "torch.bfloat16"),
        ([[[1.0, 2.0]]], "float64"),
        ([[[True, False]]], "bool"),
        ([[[True, 2]]], "bool (a bool element among the integer expert ids)"),
        ([[[True, 2**63]]], "bool (a bool element among the integer expert ids)"),
        ([np.array([1, 2], np.uint8), [True, False]], "bool (a bool element among the integer expert ids)"),
        (np.array([[["a"]]]), "<U1"),
        (1.5, "torch.float32"),
        (float("nan"), "torch.float32"),
        (True, "torch.bool"),
    ],
)
def test_as_tensor_rejects_non_integer_sources(value: object, dtype_text: str) -> None:
    """Bool, floating, complex and string sources raise 'must hold integer expert ids' naming the dtype."""
    with pytest.raises(RoutedExpertsError) as caught:
        as_routed_experts_tensor(value, device="cpu", dtype=torch.int16)
    assert str(caught.value) == f"routed_experts must hold integer expert ids, got dtype {dtype_text}"


@pytest.mark.parametrize("value", [object(), "abc", [[1, 2], [3]], {"a": 1}, b"\x01"])
def test_as_tensor_rejects_values_that_do_not_convert(value: object) -> None:
    """Objects that do not convert to an array raise RoutedExpertsError naming their type."""
    with pytest.raises(
        RoutedExpertsError, match=r"must hold integer expert ids, got dtype (unknown|object|\|S1|<U3)"
    ):
        as_routed_experts_tensor(value, device="cpu", dtype=torch.int16)


@pytest.mark.parametrize(
    ("value", "attribute", "bad"),
    [
        ([[[-1, 2**63]]], "max_id", 2**63),  # numpy promotes this list to float64
        ([[[2**64, 3]]], "max_id", 2**64),  # ... and this one to object
        ([[[np.uint64(2**64 - 1), -1]]], "max_id", 2**64 - 1),
        ([[[-(2**63) - 1, 0]]], "min_id", -(2**63) - 1),
    ],
)
def test_as_tensor_reports_ids_numpy_cannot_hold_exactly(value: object, attribute: str, bad: int) -> None:
    """Nested ints beyond int64/uint64 raise the range error with the real id, not a promoted dtype."""
    with pytest.raises(RoutedExpertsError) as caught:
        as_routed_experts_tensor(value, device="cpu", dtype=torch.int16)
    assert getattr(caught.value, attribute) == bad
    assert f"routed expert id {bad} " in str(caught.value)
    assert "dtype float64" not in str(caught.value)
    if attribute == "max_id":
        assert "exceeds the resolved carry dtype torch.int16 (max 32767)" in str(caught.value)


def _conversion_error(value: object) -> str:
    """The converter's own error for ``value``: numpy's for lists and tuples, torch.as_tensor's otherwise."""
    try:
        if isinstance(value, list | tuple):
            np.asarray(value)
        else:
            torch.as_tensor(value)
    except (TypeError, ValueError, RuntimeError) as exc:
        return str(exc)
    raise AssertionError(f"{value!r} converts")


@pytest.mark.parametrize(
    ("value", "type_text"),
    [
        (object(), "object"),
        ({"a": 1}, "dict"),
        ("abc", "str"),
        ([[1, 2], [3]], "list"),
        ((1, (2, 3)), "tuple"),
    ],
    ids=["object", "dict", "str", "ragged_list", "ragged_tuple"],
)
def test_values_that_do_not_convert_name_their_type_and_the_converter_error(
    value: object, type_text: str
) -> None:
    """The message names the dtype as unknown, the value's type and the converter's error (the likely cause)."""
    with pytest.raises(RoutedExpertsError) as caught:
        as_routed_experts_tensor(value, device="cpu", dtype=torch.int16)
    message = str(caught.value)
    assert message.startswith("routed_experts must hold integer expert ids, got dtype unknown")
    assert type_text in message
    assert _conversion_error(value) in message
    assert_contract_error(caught.value)


@pytest.mark.parametrize(
    "value",
    [[], np.zeros((0, 3, 2), np.float64), torch.zeros(0, 3, 2, dtype=torch.bool), np.array([], dtype=object)],
)
def test_as_tensor_accepts_empty_sources_of_any_dtype(value: object) -> None:
    """A source with zero elements gives an empty tensor in the carry dtype, whatever it converts to."""
    result = as_routed_experts_tensor(value, device="cpu", dtype=torch.int8)
    assert result.dtype is torch.int8
    assert result.numel() == 0
    assert tuple(result.shape) == np.asarray(value).shape


def test_as_tensor_uint64_above_int64_max_overflows() -> None:
    """A uint64 id above iinfo(int64).max raises the overflow error even for the int64 carry dtype."""
    for value in (np.array([[[2**63]]], np.uint64), torch.tensor([[[2**63 + 5]]], dtype=torch.uint64)):
        with pytest.raises(
            RoutedExpertsError, match=r"exceeds the resolved carry dtype torch\.int64"
        ) as caught:
            as_routed_experts_tensor(value, device="cpu", dtype=torch.int64)
        assert caught.value.max_id is not None
        assert caught.value.max_id >= 2**63


def test_unsigned_nested_lists_are_range_checked_not_rejected() -> None:
    """Nested lists that numpy reads as unsigned (numpy unsigned scalars, or ints above int64's max) are integer
    sources: they convert exactly when in range and raise the overflow error, with max_id, when not."""
    value = [[[np.uint16(300), np.uint16(7)]], [[np.uint16(0), np.uint16(1)]]]
    assert as_routed_experts_tensor(value, device="cpu", dtype=torch.int16).tolist() == [[[300, 7]], [[0, 1]]]
    with pytest.raises(RoutedExpertsError) as caught:
        as_routed_experts_tensor([[[2**63, 2**63 + 1]]], device="cpu", dtype=torch.int64)
    assert str(caught.value).startswith(
        "routed expert id 9223372036854775809 exceeds the resolved carry dtype"
    )
    assert (caught.value.max_id, caught.value.dtype_name, caught.value.limit) == (
        2**63 + 1,
        "int64",
        2**63 - 1,
    )


@pytest.mark.parametrize("dtype", [torch.uint16, torch.uint32, torch.uint64])
def test_as_tensor_checks_unsigned_tensors_without_torch_reductions(dtype: torch.dtype) -> None:
    """uint16/32/64 tensors (no torch min/max) are range-checked exactly and converted."""
    value = torch.tensor([[[3, 200]]], dtype=torch.int64).to(dtype)
    assert as_routed_experts_tensor(value, device="cpu", dtype=torch.int16).tolist() == [[[3, 200]]]
    with pytest.raises(RoutedExpertsError, match="routed expert id 200 exceeds"):
        as_routed_experts_tensor(value, device="cpu", dtype=torch.int8)


@pytest.mark.parametrize(
    "value",
    [
        np.array([[[1, 2]], [[3, 4]]], np.uint8).transpose(2, 1, 0),
        np.asfortranarray(np.arange(12, dtype=np.uint8).reshape(2, 3, 2)),
        np.arange(12, dtype=">u2").reshape(2, 3, 2),
        np.frombuffer(bytes(range(12)), np.uint8).reshape(2, 3, 2),
        np.ma.masked_array(
            np.arange(6, dtype=np.int64).reshape(1, 3, 2), mask=np.array([[[1, 0], [0, 0], [0, 0]]], bool)
        ),
        torch.arange(24, dtype=torch.int32).reshape(2, 3, 4)[:, :, ::2],
    ],
)
def test_as_tensor_converts_any_layout_exactly(value: Any) -> None:
    """Transposed, Fortran, big-endian, read-only, masked and strided sources convert value for value."""
    expected = np.asarray(value.numpy() if isinstance(value, torch.Tensor) else np.ma.getdata(value))
    result = as_routed_experts_tensor(value, device="cpu", dtype=torch.int32)
    np.testing.assert_array_equal(result.numpy(), expected)


def _layout_cases() -> list[tuple[str, np.ndarray]]:
    """Source arrays torch may wrap directly (vLLM's own uint8/uint16 arrays) and ones it cannot (numpy casts)."""
    grid = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    rows = np.arange(6, dtype=np.uint8).reshape(3, 2)
    return [
        ("uint8", grid.copy()),
        ("uint16", grid.astype(np.uint16)),
        ("int16", grid.astype(np.int16)),
        ("int64", grid.astype(np.int64)),
        ("fortran", np.asfortranarray(grid)),
        ("new_axis_stride_0", rows[:, None, :]),
        (
            "all_strides_0",
            np.lib.stride_tricks.as_strided(np.arange(2, dtype=np.int32), (3, 1, 2), (0, 0, 4)),
        ),
        ("broadcast_read_only", np.broadcast_to(rows[:, None, :], (3, 4, 2))),
        ("read_only", np.frombuffer(bytes(range(24)), np.uint8).reshape(2, 3, 4)),
        ("big_endian", grid.astype(">u2")),
        ("reversed_rows", grid[::-1]),
        ("reversed_last_axis", grid[:, :, ::-1]),
        ("float32", grid.astype(np.float32)),
        ("bool", grid.astype(np.bool_)),
    ]


@pytest.mark.parametrize(("name", "array"), _layout_cases(), ids=[c[0] for c in _layout_cases()])
def test_every_array_layout_converts_without_a_warning(name: str, array: np.ndarray) -> None:
    """Native, zero-strided, read-only, byte-swapped and reversed integer arrays convert value for value, with no
    warning from torch (warnings are errors here) and no aliasing; float and bool arrays are rejected."""
    if array.dtype.kind not in "iu":
        with pytest.raises(RoutedExpertsError, match="must hold integer expert ids"):
            as_routed_experts_tensor(array, device="cpu", dtype=torch.int32)
        return
    result = as_routed_experts_tensor(array, device="cpu", dtype=torch.int32)
    np.testing.assert_array_equal(result.numpy(), array)
    assert not np.shares_memory(result.numpy(), array)
    aligned = pad_and_align_routed_expert_indices(
        None,
        SimpleNamespace(routed_experts=array),
        valid_length=array.shape[0] + 1,
        padded_length=array.shape[0] + 1,
        device="cpu",
        routed_experts_dtype=torch.int32,
    )
    assert aligned is not None
    np.testing.assert_array_equal(aligned.numpy()[: array.shape[0]], array)


def test_as_tensor_checks_every_masked_entry() -> None:
    """A masked-out id is still range-checked: the stored data is what gets transported."""
    value = np.ma.masked_array(np.array([[[500, 1]]], np.int64), mask=np.array([[[1, 0]]], bool))
    with pytest.raises(RoutedExpertsError, match="routed expert id 500"):
        as_routed_experts_tensor(value, device="cpu", dtype=torch.int8)


def test_as_tensor_result_never_aliases_the_input() -> None:
    """The result is a new tensor: writing to it leaves a tensor source of the same dtype untouched."""
    source = torch.tensor([[[1, 2]]], dtype=torch.int16)
    result = as_routed_experts_tensor(source, device="cpu", dtype=torch.int16)
    result[0, 0, 0] = 9
    assert source.tolist() == [[[1, 2]]]


def test_as_tensor_checks_every_call_whatever_the_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the flag already True, an out-of-range id still raises, on every call."""
    monkeypatch.setattr(routed_experts, "G_ROUTED_EXPERTS_RANGE_CHECKED", True)
    for _ in range(2):
        with pytest.raises(RoutedExpertsError, match="routed expert id 200 exceeds"):
            as_routed_experts_tensor(np.array([[[200]]], np.uint8), device="cpu", dtype=torch.int8)


def test_as_tensor_accepts_scalars_and_other_array_likes() -> None:
    """Anything else goes through torch.as_tensor: an int scalar becomes a 0-d tensor in the carry dtype."""
    result = as_routed_experts_tensor(7, device=torch.device("cpu"), dtype=torch.int8)
    assert result.dtype is torch.int8
    assert result.shape == ()
    assert result.item() == 7


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            torch.tensor([[[1]]]).to_sparse(),
            "routed_experts must be a dense (strided) tensor, got layout torch.sparse_coo",
        ),
        (
            torch.empty(1, 1, 1, dtype=torch.int64, device="meta"),
            "routed_experts is a tensor on the meta device",
        ),
    ],
)
def test_as_tensor_rejects_tensors_without_dense_values(value: torch.Tensor, message: str) -> None:
    """Sparse and meta tensors are rejected before any reduction."""
    with pytest.raises(RoutedExpertsError) as caught:
        as_routed_experts_tensor(value, device="cpu", dtype=torch.int16)
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize(
    ("device", "error", "text"),
    [
        (0, ContractTypeError, "device must be a torch.device or a device string"),
        (None, ContractTypeError, "got NoneType"),
        ("nonsense", RoutedExpertsError, "device 'nonsense' is not a valid torch device string"),
    ],
)
def test_as_tensor_rejects_bad_devices(device: Any, error: type[ContractError], text: str) -> None:
    """A device that is neither a torch.device nor a valid device string is rejected."""
    with pytest.raises(error, match=re.escape(text)):
        as_routed_experts_tensor([[[1]]], device=device, dtype=torch.int16)


def _convert_on(device: Any) -> object:
    return as_routed_experts_tensor([[[1]]], device=device, dtype=torch.int16)


def _align_on(device: Any) -> object:
    return align(routes(2), valid_length=3, padded_length=3, device=device)


@pytest.mark.parametrize("entry", [_convert_on, _align_on], ids=["as_tensor", "pad_and_align"])
@pytest.mark.parametrize(("device", "actual"), [(0, "int"), (b"cpu", "bytes"), (None, "NoneType")])
def test_a_device_of_the_wrong_type_names_its_type(
    entry: Callable[[Any], object], device: object, actual: str
) -> None:
    """Both entry points reject a device that is not a torch.device or a string, naming the type received."""
    expected = "a torch.device or a device string such as 'cpu' or 'cuda:0'"
    with pytest.raises(ContractTypeError) as caught:
        entry(device)
    error = caught.value
    assert "device" in str(error)
    assert f"got {actual}" in str(error)
    assert (error.argument, error.expected, error.actual) == ("device", expected, actual)
    assert_contract_error(error)


# --- §3.3 pad_and_align_routed_expert_indices ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("valid", "padded", "count", "strict", "start", "stats", "copied", "sentinel"),
    [
        (6, 8, 5, False, 0, (5, 5, 0, 0), range(0, 5), []),
        (3, 5, 2, False, 0, (2, 2, 0, 0), range(0, 2), []),
        (3, 3, 3, False, 0, (3, 2, 0, 0), range(0, 2), []),
        (6, 6, 2, True, 0, (2, 5, 3, 0), range(0, 2), [2, 3, 4]),
        (3, 3, 4, False, 0, (4, 2, 0, 1), range(0, 2), []),
        (6, 8, 3, False, 2, (3, 5, 2, 0), range(2, 5), [0, 1]),
    ],
)
def test_worked_examples(
    valid: int,
    padded: int,
    count: int,
    strict: bool,
    start: int,
    stats: tuple[int, int, int, int],
    copied: range,
    sentinel: list[int],
) -> None:
    """Each successful row of the §3.3 table: stats, copied rows, sentinel rows and arange rows."""
    source = routes(count)
    result, got = align(
        source,
        valid_length=valid,
        padded_length=padded,
        require_complete_routed_experts=strict,
        return_stats=True,
        routes_start=start,
    )
    assert got == dict(
        zip(["actual_routes", "expected_routes", "missing_routes", "surplus_routes"], stats, strict=True)
    )
    assert result.shape == (padded, 3, 2)
    assert result.dtype is torch.int16
    out = result.numpy()
    np.testing.assert_array_equal(out[copied.start : copied.stop], source[: len(copied)])
    for row in sentinel:
        assert (out[row] == -1).all()
    expected = stats[1]
    np.testing.assert_array_equal(out[expected:], arange_rows(padded - expected))


def test_worked_example_strict_without_fallback_raises_incomplete() -> None:
    """valid=padded=6 with 2 routes in strict mode without fallback raises the 'incomplete' error."""
    with pytest.raises(RoutedExpertsError) as caught:
        align(
            routes(2),
            valid_length=6,
            padded_length=6,
            require_complete_routed_experts=True,
            allow_missing_routed_experts_fallback=False,
        )
    error = caught.value
    assert str(error) == (
        "vLLM returned incomplete routed_experts for router replay: routes=2, expected_at_least=5, valid_length=6, "
        "padded_length=6, num_cached_tokens=None. This usually means the generation backend did not return routed "
        "experts for every non-final token in the prompt+response sequence."
    )
    assert (error.routes, error.expected, error.valid_length, error.padded_length) == (2, 5, 6, 6)
    assert (error.num_cached_tokens, error.routes_start) == (None, 0)
    assert_contract_error(error)


def test_worked_example_strict_surplus_raises_too_many() -> None:
    """valid=padded=3 with 4 routes in strict mode raises the 'too many' error with max_allowed=3."""
    with pytest.raises(RoutedExpertsError) as caught:
        align(routes(4), valid_length=3, padded_length=3, require_complete_routed_experts=True, cached=64)
    assert str(caught.value) == (
        "vLLM returned too many routed_experts routes for router replay: routes=4, expected=2, max_allowed=3, "
        "valid_length=3, padded_length=3, num_cached_tokens=64. Router replay allows at most one surplus "
        "final-token route."
    )
    assert caught.value.num_cached_tokens == 64
    assert_contract_error(caught.value)


@pytest.mark.parametrize(
    ("count", "fallback", "inserted"),
    [
        (1, False, "routes=1, routes_start=2, expected_at_least=5"),
        (5, True, "routes=5, routes_start=2, expected=5"),
    ],
)
def test_strict_messages_insert_routes_start(count: int, fallback: bool, inserted: str) -> None:
    """With routes_start > 0 both count messages insert 'routes_start=…, ' right after 'routes=…, '."""
    with pytest.raises(RoutedExpertsError, match=re.escape(inserted)) as caught:
        align(
            routes(count),
            valid_length=6,
            padded_length=8,
            require_complete_routed_experts=True,
            allow_missing_routed_experts_fallback=fallback,
            routes_start=2,
        )
    assert caught.value.routes_start == 2


def test_legacy_prompt_and_generation_parts_are_concatenated() -> None:
    """Prompt routes [[10]],[[11]] then generation [[30]], valid = padded = 4, give [[10]],[[11]],[[30]],[[0]]."""
    result = align([[[30]]], prompt=[[[10]], [[11]]], valid_length=4, padded_length=4)
    assert result.tolist() == [[[10]], [[11]], [[30]], [[0]]]


def test_empty_legacy_prompt_part_still_copies_the_generation_rows() -> None:
    """An empty (0-row) prompt part contributes nothing and the generation rows are still copied."""
    result = align(routes(3), prompt=np.zeros((0, 3, 2), np.uint8), valid_length=4, padded_length=5)
    np.testing.assert_array_equal(result.numpy()[:3], routes(3))
    np.testing.assert_array_equal(result.numpy()[3:], arange_rows(2))


def test_prompt_only_legacy_part_is_used_alone() -> None:
    """A legacy prompt part without generation routes is aligned on its own (missing rows become -1)."""
    result, stats = align(None, prompt=[[[10]], [[11]]], valid_length=4, padded_length=5, return_stats=True)
    assert result.tolist() == [[[10]], [[11]], [[-1]], [[0]], [[0]]]
    assert stats["missing_routes"] == 1


@pytest.mark.parametrize(
    ("prompt", "generation", "start", "valid", "padded", "rows", "stats"),
    [
        (None, [[[10]], [[11]], [[12]]], 2, 4, 4, [-1, -1, 10, 0], (3, 3, 2, 1)),
        ([[[10]], [[11]]], [[[30]], [[31]], [[32]]], 1, 5, 5, [-1, 10, 11, 30, 0], (5, 4, 1, 1)),
        ([[[10]], [[11]]], [[[30]]], 1, 6, 7, [-1, 10, 11, 30, -1, 0, 0], (3, 5, 2, 0)),
        ([[[10]]], [[[30]]], 5, 3, 4, [-1, -1, 0, 0], (2, 2, 2, 2)),
    ],
    ids=["surplus_after_start", "two_parts_after_start", "two_parts_then_missing", "start_beyond_expected"],
)
def test_combined_rows_are_placed_from_routes_start(
    prompt: object,
    generation: object,
    start: int,
    valid: int,
    padded: int,
    rows: list[int],
    stats: tuple[int, int, int, int],
) -> None:
    """Combined row r (prompt rows, then generation rows) lands on row routes_start + r, only below E; the rows
    before routes_start and after the copied ones are -1, rows from E on the default route (SPEC §3.3 step 10)."""
    result, got = align(
        generation,
        prompt=prompt,
        valid_length=valid,
        padded_length=padded,
        routes_start=start,
        return_stats=True,
    )
    assert result.tolist() == [[[row]] for row in rows]
    assert tuple(got.values()) == stats


def test_int8_output_and_range_check_on_every_call() -> None:
    """routed_experts_dtype=int8 gives int8; an id of 200 raises 'exceeds the resolved carry dtype' each call."""
    result = align(routes(2), valid_length=3, padded_length=3, routed_experts_dtype=torch.int8)
    assert result.dtype is torch.int8
    for _ in range(2):
        with pytest.raises(
            RoutedExpertsError, match="routed expert id 200 exceeds the resolved carry dtype"
        ) as c:
            align(
                np.full((2, 1, 1), 200, np.uint8),
                valid_length=3,
                padded_length=3,
                routed_experts_dtype=torch.int8,
            )
        assert "[routed_experts: expected=2, valid_length=3, padded_length=3, num_cached_tokens=None]" in str(
            c.value
        )
        assert c.value.limit == 127


def test_no_routes_returns_none_even_in_strict_mode() -> None:
    """Without any part the result is None (or (None, stats) with zero counts), even in strict mode."""
    assert align(valid_length=5, padded_length=5, require_complete_routed_experts=True) is None
    result, stats = align(
        valid_length=5,
        padded_length=7,
        return_stats=True,
        require_complete_routed_experts=True,
        allow_missing_routed_experts_fallback=False,
    )
    assert result is None
    assert stats == {"actual_routes": 0, "expected_routes": 4, "missing_routes": 0, "surplus_routes": 0}


def test_outputs_without_any_route_attribute() -> None:
    """Objects lacking every optional attribute count as having no routes."""
    assert (
        pad_and_align_routed_expert_indices(object(), object(), valid_length=1, padded_length=1, device="cpu")
        is None
    )


@pytest.mark.parametrize(
    ("source", "valid", "padded", "shape"),
    [
        (routes(3), 4, 0, (0, 3, 2)),
        (np.zeros((3, 2, 0), np.uint8), 4, 5, (5, 2, 0)),
        (np.zeros((3, 0, 4), np.uint8), 4, 5, (5, 0, 4)),
        (routes(9), 10, 4, (4, 3, 2)),
    ],
)
def test_edge_shapes(source: np.ndarray, valid: int, padded: int, shape: tuple[int, int, int]) -> None:
    """P = 0 gives an empty tensor, K = 0 / L = 0 empty trailing dimensions, and P < valid caps E at P."""
    result = align(source, valid_length=valid, padded_length=padded)
    assert tuple(result.shape) == shape
    if shape == (4, 3, 2):
        np.testing.assert_array_equal(result.numpy(), source[:4])


def test_strict_cap_turns_real_routes_into_surplus() -> None:
    """P < valid_length caps E, so in strict mode returned routes beyond P + 1 become surplus."""
    with pytest.raises(RoutedExpertsError, match="routes=9, expected=4, max_allowed=5"):
        align(routes(9), valid_length=10, padded_length=4, require_complete_routed_experts=True)


def test_routes_start_beyond_the_expected_routes() -> None:
    """routes_start past E makes every row before E a sentinel row and copies nothing."""
    result, stats = align(routes(2), valid_length=4, padded_length=5, routes_start=6, return_stats=True)
    assert stats == {"actual_routes": 2, "expected_routes": 3, "missing_routes": 3, "surplus_routes": 2}
    assert (result.numpy()[:3] == -1).all()
    np.testing.assert_array_equal(result.numpy()[3:], arange_rows(2))


def test_stats_compare_equal_to_a_plain_dict() -> None:
    """RouteStats is a TypedDict: equal to a plain dict with the same items, keys in SPEC order."""
    _, stats = align(routes(5), valid_length=6, padded_length=8, return_stats=True)
    assert list(stats) == ["actual_routes", "expected_routes", "missing_routes", "surplus_routes"]
    assert stats == {"actual_routes": 5, "expected_routes": 5, "missing_routes": 0, "surplus_routes": 0}


def test_inputs_are_not_mutated_and_not_aliased() -> None:
    """The source arrays are unchanged after the call and the result does not share their memory."""
    source = routes(4)
    before = source.copy()
    tensor_source = torch.from_numpy(routes(4).astype(np.int16))
    result = align(source, valid_length=5, padded_length=6)
    result.fill_(3)
    np.testing.assert_array_equal(source, before)
    result = align(tensor_source, valid_length=5, padded_length=6)
    result.fill_(3)
    np.testing.assert_array_equal(tensor_source.numpy(), before)


@pytest.mark.parametrize(
    ("argument", "value"),
    [("valid_length", True), ("valid_length", 2.0), ("padded_length", "4"), ("routes_start", None)],
)
def test_lengths_must_be_ints(argument: str, value: object) -> None:
    """A length or routes_start that is not an int (bools included) raises ContractTypeError naming it."""
    arguments: dict[str, Any] = {"valid_length": 3, "padded_length": 3, argument: value}
    with pytest.raises(ContractTypeError, match=argument) as caught:
        align(routes(2), **arguments)
    assert caught.value.argument == argument


@pytest.mark.parametrize(
    ("argument", "lengths"),
    [
        ("valid_length", (-1, None, None)),
        ("padded_length", (3, -1, None)),
        ("routes_start", (3, 4, -1)),
    ],
)
def test_lengths_must_not_be_negative(argument: str, lengths: tuple[int | None, ...]) -> None:
    """A negative length or routes_start raises RoutedExpertsError (the reference silently clamps); the error
    carries the negative value and the lengths already checked (valid_length, then padded_length)."""
    arguments: dict[str, Any] = {"valid_length": 3, "padded_length": 4, argument: -1}
    with pytest.raises(RoutedExpertsError) as caught:
        align(routes(2), **arguments)
    error = caught.value
    assert argument in str(error)
    assert "got -1" in str(error)
    assert (error.valid_length, error.padded_length, error.routes_start) == lengths
    assert (error.expected, error.routes) == (None, None)
    assert_contract_error(error)


HUGE = 10**5000
"""An int whose decimal form Python refuses to build (more than 4,300 digits)."""


@pytest.mark.parametrize("argument", ["valid_length", "padded_length", "routes_start"])
def test_huge_negative_lengths_keep_a_bounded_message(argument: str) -> None:
    """A negative length beyond Python's int-to-str limit still raises RoutedExpertsError with a short message."""
    arguments: dict[str, Any] = {"valid_length": 3, "padded_length": 3, argument: -HUGE}
    with pytest.raises(RoutedExpertsError, match=f"{argument} must be >= 0, got <int of 16610 bits>"):
        align(routes(2), **arguments)


@pytest.mark.parametrize(
    ("arguments", "default_rows"),
    [
        ({"valid_length": HUGE, "padded_length": 3}, 0),
        ({"valid_length": 3, "padded_length": 3, "routes_start": HUGE}, 1),
    ],
    ids=["valid_length", "routes_start"],
)
def test_huge_lengths_align_without_error(arguments: dict[str, Any], default_rows: int) -> None:
    """valid_length and routes_start beyond Python's int-to-str limit are legal: E is capped by padded_length."""
    result, stats = align(routes(2), return_stats=True, **arguments)
    assert result.shape == (3, 3, 2)
    assert stats["expected_routes"] == 3 - default_rows
    assert (result[3 - default_rows :] == torch.arange(2, dtype=result.dtype)).all()


@pytest.mark.parametrize(
    ("padded", "dtype"),
    [(HUGE, torch.int16), (2**62, torch.int16), (2**61, torch.int32), (2**60, torch.int64)],
    ids=["huge", "2**62-int16", "2**61-int32", "2**60-int64"],
)
def test_too_large_output_is_a_routed_experts_error(padded: int, dtype: torch.dtype) -> None:
    """An output whose byte size (not only element count) overflows int64 raises RoutedExpertsError."""
    with pytest.raises(RoutedExpertsError, match="is too large for a tensor") as caught:
        align(routes(2, layers=1, topk=1), valid_length=3, padded_length=padded, routed_experts_dtype=dtype)
    assert len(str(caught.value)) <= 2000


@pytest.mark.parametrize(
    "argument", ["require_complete_routed_experts", "allow_missing_routed_experts_fallback", "return_stats"]
)
def test_flags_must_be_bools(argument: str) -> None:
    """Each flag must be a bool, not 0/1; the error names the flag exactly."""
    arguments: dict[str, Any] = {"valid_length": 3, "padded_length": 3, argument: 1}
    with pytest.raises(ContractTypeError) as caught:
        align(routes(2), **arguments)
    error = caught.value
    assert argument in str(error)
    assert (error.argument, error.expected, error.actual) == (argument, "a bool", "int")
    assert_contract_error(error)


def test_unsupported_carry_dtype_is_rejected_before_conversion() -> None:
    """routed_experts_dtype is checked as in §3.2 step 1, even when the routes are malformed."""
    with pytest.raises(
        RoutedExpertsError, match=re.escape("expected one of ['int16', 'int32', 'int64', 'int8']")
    ):
        align("not routes", valid_length=3, padded_length=3, routed_experts_dtype=torch.float16)


@pytest.mark.parametrize(
    ("generation", "prompt", "text"),
    [
        (np.zeros((5, 3), np.uint8), None, "got (5, 3) (routed_experts)"),
        (routes(2), np.zeros((2,), np.uint8), "got (2,) (prompt_routed_experts)"),
        (np.zeros((1, 1, 1, 1), np.uint8), None, "got (1, 1, 1, 1) (routed_experts)"),
    ],
)
def test_parts_must_be_three_dimensional(generation: object, prompt: object, text: str) -> None:
    """A part that is not 3-D raises the shape message naming the shape as a tuple and the part."""
    with pytest.raises(RoutedExpertsError) as caught:
        align(generation, prompt=prompt, valid_length=4, padded_length=4, cached=8)
    message = str(caught.value)
    assert message.startswith("vLLM routed_experts must have shape [tokens, num_moe_layers, topk], " + text)
    assert "valid_length=4, padded_length=4, num_cached_tokens=8" in message
    assert caught.value.num_cached_tokens == 8


def test_parts_must_agree_on_layers_and_topk() -> None:
    """Prompt and generation parts with different [L, K] raise RoutedExpertsError (the reference: RuntimeError)."""
    with pytest.raises(RoutedExpertsError) as caught:
        align(routes(2, layers=4), prompt=routes(2), valid_length=5, padded_length=5)
    assert str(caught.value).startswith(
        "prompt_routed_experts and routed_experts disagree on [num_moe_layers, topk]: [3, 2] vs [4, 2]"
    )
    assert caught.value.routes == 4
    assert_contract_error(caught.value)


def test_conversion_errors_name_the_part_and_the_counts() -> None:
    """A bad id in the prompt part is reported with the part name and the alignment facts, before the other part."""
    with pytest.raises(RoutedExpertsError) as caught:
        align([[[1.5]]], prompt=[[[-3]]], valid_length=3, padded_length=4, routes_start=1, cached=2)
    message = str(caught.value)
    assert message.startswith("routed expert id -3 is below the missing-route sentinel -1")
    for fragment in (
        "prompt_routed_experts",
        "expected=2",
        "valid_length=3",
        "num_cached_tokens=2",
        "routes_start=1",
    ):
        assert fragment in message
    assert (caught.value.min_id, caught.value.valid_length, caught.value.routes_start) == (-3, 3, 1)


def test_topk_beyond_the_carry_dtype_is_rejected() -> None:
    """A top-k whose default route arange(K) does not fit the carry dtype means a mis-detected expert count."""
    with pytest.raises(RoutedExpertsError, match="routed_experts topk 130 needs default-route ids up to 129"):
        align(
            np.zeros((1, 1, 130), np.uint8), valid_length=2, padded_length=2, routed_experts_dtype=torch.int8
        )


def test_padded_length_too_large_for_a_tensor() -> None:
    """A padded_length whose tensor size overflows int64 raises RoutedExpertsError instead of a torch error."""
    with pytest.raises(RoutedExpertsError, match="is too large for a tensor"):
        align(routes(1), valid_length=2, padded_length=2**62)


def test_works_with_torch_tensor_and_list_sources() -> None:
    """Tensor (any int dtype) and nested-list sources align exactly like numpy ones."""
    source = routes(3)
    expected = align(source, valid_length=4, padded_length=6)
    for value in (torch.from_numpy(source.astype(np.int32)), source.tolist(), torch.from_numpy(source)):
        assert torch.equal(align(value, valid_length=4, padded_length=6), expected)


# --- real vLLM data -----------------------------------------------------------------------------------------------


def recorded_generate_outputs() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Every (request, output) pair of the recorded LLM.generate call with routed experts."""
    data = json.loads((DATA / "generate_moe_routed_experts.json").read_text())
    return [(request, output) for request in data["request_outputs"] for output in request["outputs"]]


def recorded_routes(output: dict[str, Any]) -> np.ndarray:
    """Rebuild vLLM's numpy array from the recorded dtype/shape/data."""
    record = output["routed_experts"]
    array = np.array(record["data"], dtype=record["dtype"])
    assert list(array.shape) == record["shape"]
    return array


@pytest.mark.parametrize(("request_record", "output_record"), recorded_generate_outputs())
def test_recorded_vllm_routes_align_completely(
    request_record: dict[str, Any], output_record: dict[str, Any]
) -> None:
    """Real vLLM uint8 routes (prompt + generated - 1 rows) align with no missing or surplus route in strict mode."""
    array = recorded_routes(output_record)
    assert array.dtype == np.uint8
    length = len(request_record["prompt_token_ids"]) + len(output_record["token_ids"])
    request = SimpleNamespace(
        prompt_token_ids=request_record["prompt_token_ids"],
        num_cached_tokens=request_record["num_cached_tokens"],
    )
    completion = SimpleNamespace(index=output_record["index"], routed_experts=array)
    result, stats = pad_and_align_routed_expert_indices(
        request,
        completion,
        valid_length=length,
        padded_length=length + 3,
        device="cpu",
        require_complete_routed_experts=True,
        allow_missing_routed_experts_fallback=False,
        return_stats=True,
        routed_experts_dtype=resolve_routed_experts_dtype(4),
    )
    assert stats == {
        "actual_routes": length - 1,
        "expected_routes": length - 1,
        "missing_routes": 0,
        "surplus_routes": 0,
    }
    assert result is not None
    assert result.dtype is torch.int8
    np.testing.assert_array_equal(result.numpy()[: length - 1], array)
    np.testing.assert_array_equal(result.numpy()[length - 1 :], arange_rows(4, layers=2, topk=2))


def test_recorded_routes_with_dropped_rows_report_the_cache_hits() -> None:
    """Dropping rows of a prefix-cached request fails strict mode with num_cached_tokens=64 in the message."""
    request_record, output_record = next(
        pair for pair in recorded_generate_outputs() if pair[0]["num_cached_tokens"] == 64
    )
    array = recorded_routes(output_record)[:-3]
    length = len(request_record["prompt_token_ids"]) + len(output_record["token_ids"])
    request = SimpleNamespace(num_cached_tokens=64)
    completion = SimpleNamespace(routed_experts=array)
    with pytest.raises(
        RoutedExpertsError, match=f"routes={length - 4}, expected_at_least={length - 1}"
    ) as caught:
        pad_and_align_routed_expert_indices(
            request,
            completion,
            valid_length=length,
            padded_length=length,
            device="cpu",
            require_complete_routed_experts=True,
            allow_missing_routed_experts_fallback=False,
        )
    assert "num_cached_tokens=64" in str(caught.value)
    assert caught.value.num_cached_tokens == 64


@pytest.mark.parametrize(
    "value",
    [[[[1, 2]]], np.array([[[1, 2]]], np.uint8), torch.tensor([[[1, 2]]])],
    ids=["list", "numpy", "tensor"],
)
def test_as_routed_experts_tensor_honours_a_non_cpu_device(value: object) -> None:
    """The result is created on the requested device (here the meta device), with the requested dtype and shape."""
    result = as_routed_experts_tensor(value, device="meta", dtype=torch.int8)
    assert result.device.type == "meta"
    assert (result.dtype, tuple(result.shape)) == (torch.int8, (1, 1, 2))
