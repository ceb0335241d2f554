"""Shared argument checks: ints that are never bools, bools, token-id sequences (SPEC §0.3, §0.6)."""

from __future__ import annotations

import math
import warnings
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch
from pydantic import BaseModel, ValidationError

from rl_contracts.checks import (
    ContractInt,
    array_dims,
    as_int,
    describe_array,
    int_or_none,
    is_collection,
    is_int,
    is_sequence,
    is_text,
    real_or_none,
    require_array,
    require_bool,
    require_collection,
    require_float,
    require_int,
    require_one_of,
    require_probability,
    require_sequence,
    require_str_collection,
    token_ids,
)
from rl_contracts.errors import ContractTypeError, LogprobContractError, RolloutBatchError


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, True),
        (-3, True),
        (np.int64(5), True),
        (np.uint8(7), True),
        (True, False),
        (np.bool_(True), False),
        (1.0, False),
        ("1", False),
        (b"1", False),
        (None, False),
        (np.array([1, 2]), False),
        (np.array(3), True),
    ],
)
def test_is_int(value: object, expected: bool) -> None:
    """is_int accepts ints and __index__ scalars and rejects bools, floats, strings and None."""
    assert is_int(value) is expected


class _CountingIndex:
    """An int-like object that counts its ``__index__`` calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __index__(self) -> int:
        self.calls += 1
        return 7


def test_int_or_none_converts_once_or_gives_none() -> None:
    """int_or_none returns a plain int with one __index__ call, and None wherever is_int is False."""
    value = int_or_none(np.int64(5))
    assert value == 5
    assert type(value) is int
    counting = _CountingIndex()
    assert int_or_none(counting) == 7
    assert counting.calls == 1
    for rejected in (True, np.bool_(False), 1.0, "1", None, np.array([1, 2])):
        assert int_or_none(rejected) is None


def test_as_int_returns_plain_int_and_rejects_bool() -> None:
    """as_int converts numpy ints to int and raises ValueError for bools."""
    value = as_int(np.int32(4))
    assert value == 4
    assert type(value) is int
    with pytest.raises(ValueError, match="bool"):
        as_int(True)


def test_contract_int_field_rejects_bool_and_float() -> None:
    """A ContractInt model field rejects bools and floats inside a ValidationError."""

    class M(BaseModel):
        x: ContractInt

    assert M(x=np.int16(3)).x == 3
    for bad in (True, 1.0, "1"):
        with pytest.raises(ValidationError):
            M(x=bad)


def test_require_int_and_bool_name_the_argument() -> None:
    """require_int/require_bool raise ContractTypeError naming the argument and the type seen (an array's dtype
    and dimensions included)."""
    assert require_int(np.int64(2), "n") == 2
    with pytest.raises(ContractTypeError) as info:
        require_int(True, "n")
    assert str(info.value).startswith("n must be an int")
    assert (info.value.argument, info.value.expected, info.value.actual) == ("n", "an int (not bool)", "bool")
    assert require_bool(False, "flag") is False
    assert require_bool(True, "flag") is True
    with pytest.raises(ContractTypeError) as info:
        require_bool(1, "flag")
    assert str(info.value).startswith("flag must be a bool")
    assert (info.value.argument, info.value.expected, info.value.actual) == ("flag", "a bool", "int")
    with pytest.raises(ContractTypeError) as info:
        require_bool(np.array([True]), "flag")
    assert info.value.actual == "ndarray with dtype bool and 1 dimensions"


def test_as_int_message_names_the_type() -> None:
    """as_int's ValueError names the rejected type."""
    with pytest.raises(ValueError, match="got float"):
        as_int(1.5)


@pytest.mark.parametrize(
    "value",
    [[1, 2, 3], (1, 2, 3), np.array([1, 2, 3], dtype=np.int64), np.array([1, 2, 3], dtype=np.uint16)],
)
def test_token_ids_accepts_int_sequences(value: object) -> None:
    """Lists, tuples and 1-D integer arrays convert to a new list of plain ints."""
    out = token_ids(value, "ids")
    assert out == [1, 2, 3]
    assert all(type(x) is int for x in out)
    assert out is not value


def test_token_ids_returns_a_new_list() -> None:
    """The result is a fresh list even for a list input."""
    src = [1, 2]
    assert token_ids(src, "ids") is not src


@pytest.mark.parametrize(
    ("value", "argument", "expected", "actual"),
    [
        ("abc", "ids", "a sequence of ints", "str"),
        (b"ab", "ids", "a sequence of ints", "bytes"),
        (bytearray(b"ab"), "ids", "a sequence of ints", "bytearray"),
        (5, "ids", "a sequence of ints", "int"),
        (None, "ids", "a sequence of ints", "NoneType"),
        ([1, True], "ids[1]", "an int (not bool)", "bool"),
        ([1, 2.0], "ids[1]", "an int (not bool)", "float"),
        ([[1], [2]], "ids[0]", "an int (not bool)", "list"),
        ([1, np.array(2.0)], "ids[1]", "an int (not bool)", "ndarray with dtype float64 and 0 dimensions"),
        ([1, np.float64(2.0)], "ids[1]", "an int (not bool)", "float64"),
        (np.array([[1, 2]]), "ids", "a 1-D integer sequence", "ndarray with dtype int64 and 2 dimensions"),
        (
            np.array([1.0, 2.0]),
            "ids",
            "a 1-D integer sequence",
            "ndarray with dtype float64 and 1 dimensions",
        ),
    ],
)
def test_token_ids_rejects_non_int_sequences(
    value: object, argument: str, expected: str, actual: str
) -> None:
    """Strings, scalars, bools, floats, nested sequences and 2-D or float arrays raise ContractTypeError naming
    the argument (or element), what it must be, and what it got."""
    with pytest.raises(ContractTypeError) as info:
        token_ids(value, "ids")
    assert (info.value.argument, info.value.expected, info.value.actual) == (argument, expected, actual)
    assert str(info.value).startswith(f"{argument} must be ")
    assert str(info.value).endswith(actual)


def test_token_ids_accepts_torch_tensors_and_numpy_scalars() -> None:
    """A 1-D torch tensor converts by duck typing; numpy int elements become plain ints."""
    import torch

    assert token_ids(torch.tensor([4, 5], dtype=torch.int32), "ids") == [4, 5]
    out = token_ids([np.int64(1), 2], "ids")
    assert out == [1, 2]
    assert all(type(x) is int for x in out)
    with pytest.raises(ContractTypeError, match="dtype float32"):
        token_ids(torch.tensor([1.0]), "ids")


def _tensors() -> dict[str, object]:
    import torch

    return {
        "strided": torch.tensor([[1, 2]], dtype=torch.int16),
        "meta": torch.empty(3, dtype=torch.int64, device="meta"),
        "sparse": torch.tensor([1, 0, 2]).to_sparse(),
    }


@pytest.mark.parametrize(
    ("name", "dims", "description"),
    [
        ("strided", (2, "int16"), "Tensor with dtype int16 and 2 dimensions"),
        ("meta", None, "Tensor on the meta device"),
        ("sparse", None, "Tensor with layout torch.sparse_coo"),
    ],
)
def test_array_dims_and_description_of_tensors(
    name: str, dims: tuple[int, str] | None, description: str
) -> None:
    """array_dims reads (ndim, dtype) of readable tensors only; describe_array says why the others are unreadable."""
    tensor = _tensors()[name]
    assert array_dims(tensor) == dims
    assert describe_array(tensor) == description


class _MetaList(list[int]):
    """A sequence that also looks like a meta tensor (``is_meta``, a torch layout name, ``tolist``)."""

    is_meta = True
    layout = "torch.sparse_coo"

    def tolist(self) -> list[int]:
        return list(self)


@pytest.mark.parametrize(
    "value",
    [
        SimpleNamespace(is_meta=True),
        SimpleNamespace(layout="torch.sparse_coo"),
        _MetaList([1, 2]),
    ],
    ids=["meta_without_tolist", "layout_without_tolist", "sequence_with_meta"],
)
def test_describe_array_reports_unreadable_values_only_for_arrays(value: object) -> None:
    """Only an array (``tolist`` and not a sequence) gets a reason; other objects are described by type name."""
    assert array_dims(value) is None
    assert describe_array(value) == type(value).__name__


def test_array_dims_of_numpy_and_non_arrays() -> None:
    """Numpy arrays are arrays; sequences and scalars without ``tolist`` are not."""
    assert array_dims(np.zeros((2, 3), np.uint8)) == (2, "uint8")
    assert array_dims([1, 2]) is None
    assert array_dims(5) is None
    assert describe_array([1, 2]) == "list"


@pytest.mark.parametrize("name", ["meta", "sparse"])
def test_token_ids_rejects_tensors_whose_values_cannot_be_read(name: str) -> None:
    """A meta or sparse tensor raises ContractTypeError instead of torch's own error from ``tolist()``."""
    import torch

    tensor = _tensors()[name]
    assert isinstance(tensor, torch.Tensor)
    with pytest.raises(
        ContractTypeError, match=r"ids must be a 1-D integer sequence, got Tensor (on the meta|with layout)"
    ):
        token_ids(tensor, "ids")


class _DuckArray:
    """An array look-alike found by duck typing: ``tolist`` plus whichever of ``dtype``/``ndim``/``dim`` is given."""

    def __init__(self, values: list[int], **attributes: object) -> None:
        self._values = values
        for name, value in attributes.items():
            setattr(self, name, value)

    def tolist(self) -> list[int]:
        return list(self._values)


def _dim_must_not_be_called() -> int:
    raise AssertionError("dim() was called although ndim is present")


@pytest.mark.parametrize(
    ("attributes", "dims", "description"),
    [
        (
            {"dtype": np.dtype("int32"), "ndim": 1},
            (1, "int32"),
            "_DuckArray with dtype int32 and 1 dimensions",
        ),
        (
            {"dtype": "torch.int64", "dim": lambda: 2},
            (2, "int64"),
            "_DuckArray with dtype int64 and 2 dimensions",
        ),
        (
            {"dtype": "torch.int8", "dim": lambda: np.int64(1)},
            (1, "int8"),
            "_DuckArray with dtype int8 and 1 dimensions",
        ),
        (
            {"dtype": "uint16", "ndim": 1, "dim": _dim_must_not_be_called},
            (1, "uint16"),
            "_DuckArray with dtype uint16 and 1 dimensions",
        ),
        (
            {"dtype": "int32", "ndim": 0, "dim": lambda: 2},
            (0, "int32"),
            "_DuckArray with dtype int32 and 0 dimensions",
        ),
        ({"dtype": "int32", "dim": 1}, None, "_DuckArray"),
        ({"dtype": "int32"}, None, "_DuckArray"),
        ({"ndim": 1}, None, "_DuckArray"),
        ({"dim": lambda: 1}, None, "_DuckArray"),
        ({"dtype": None, "ndim": 1}, None, "_DuckArray"),
        ({"dtype": "int32", "ndim": "1"}, None, "_DuckArray"),
        ({"dtype": "int32", "ndim": True}, None, "_DuckArray"),
        ({"dtype": "int32", "dim": lambda: None}, None, "_DuckArray"),
        ({"dtype": "int32", "ndim": 1, "is_meta": True}, None, "_DuckArray on the meta device"),
        (
            {"dtype": "int32", "ndim": 1, "is_meta": 1},
            (1, "int32"),
            "_DuckArray with dtype int32 and 1 dimensions",
        ),
        (
            {"dtype": "int32", "ndim": 1, "is_meta": False},
            (1, "int32"),
            "_DuckArray with dtype int32 and 1 dimensions",
        ),
    ],
    ids=[
        "ndim",
        "dim_method",
        "dim_method_numpy_int",
        "ndim_wins_over_dim",
        "ndim_zero_wins_over_dim",
        "dim_not_callable",
        "neither_ndim_nor_dim",
        "no_dtype",
        "no_dtype_with_dim",
        "dtype_none",
        "ndim_str",
        "ndim_bool",
        "dim_returns_none",
        "is_meta_true",
        "is_meta_truthy_int",
        "is_meta_false",
    ],
)
def test_array_dims_of_duck_typed_arrays(
    attributes: dict[str, object], dims: tuple[int, str] | None, description: str
) -> None:
    """``ndim`` is read first, a callable ``dim()`` only when there is no ``ndim`` (older torch-like objects);
    without a dtype or an int dimension count the object is no readable array; only ``is_meta is True`` is meta."""
    value = _DuckArray([1, 2], **attributes)
    assert array_dims(value) == dims
    assert describe_array(value) == description


def test_token_ids_reads_a_torch_like_array_through_dim() -> None:
    """A 1-D integer array that has ``dim()`` but no ``ndim`` converts through ``tolist()``; without a dtype it is
    rejected with the type name alone."""
    assert token_ids(_DuckArray([4, 5], dtype="torch.int32", dim=lambda: 1), "ids") == [4, 5]
    with pytest.raises(ContractTypeError) as info:
        token_ids(_DuckArray([4, 5], dim=lambda: 1), "ids")
    assert str(info.value).startswith("ids must be a 1-D integer sequence")
    assert (info.value.argument, info.value.expected, info.value.actual) == (
        "ids",
        "a 1-D integer sequence",
        "_DuckArray",
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (np.array(5), 5),
        (torch.tensor(5), 5),
        (torch.tensor(7, dtype=torch.uint8), 7),
        (np.array(2.0), None),
        (torch.tensor(2.0), None),
        (torch.tensor(True), None),
        (np.array(True), None),
        (torch.tensor([5]), None),
        (np.array([5]), None),
    ],
    ids=[
        "np_0d_int",
        "torch_0d_int",
        "torch_0d_uint8",
        "np_0d_float",
        "torch_0d_float",
        "torch_0d_bool",
        "np_0d_bool",
        "torch_1elem",
        "np_1elem",
    ],
)
def test_int_or_none_on_arrays(value: object, expected: int | None) -> None:
    """Only 0-d integer arrays and tensors are ints: bool, float and one-element 1-D ones are not (torch would index them)."""
    assert int_or_none(value) == expected
    if expected is None:
        with pytest.raises(ContractTypeError) as info:
            require_int(value, "n")
        assert info.value.argument == "n"
        assert "dimensions" in (info.value.actual or "")


@pytest.mark.parametrize(
    ("value", "text", "sequence", "collection"),
    [
        ("ab", True, False, False),
        (b"ab", True, False, False),
        (bytearray(b"ab"), True, False, False),
        ([1], False, True, True),
        ((1,), False, True, True),
        (range(2), False, True, True),
        ({1}, False, False, True),
        ({"a": 1}, False, False, True),
        ({"a": 1}.keys(), False, False, True),
        (iter([1]), False, False, True),
        (np.array([1, 2]), False, False, True),
        (np.array(2.0), False, False, False),
        (torch.tensor(2.0), False, False, False),
        (torch.tensor([2.0]), False, False, True),
        (5, False, False, False),
        (None, False, False, False),
    ],
)
def test_text_sequence_and_collection_predicates(
    value: object, text: bool, sequence: bool, collection: bool
) -> None:
    """Text is never a sequence or collection; 0-d arrays and tensors are no collection although they have __iter__."""
    assert (is_text(value), is_sequence(value), is_collection(value)) == (text, sequence, collection)


@pytest.mark.parametrize(
    ("value", "actual"),
    [
        ("ab", "str"),
        (bytearray(b"ab"), "bytearray"),
        (5, "int"),
        (np.array(2.0), "ndarray with dtype float64 and 0 dimensions"),
        (torch.tensor(2.0), "Tensor with dtype float32 and 0 dimensions"),
    ],
)
def test_require_collection_rejects_text_scalars_and_0d_arrays(value: object, actual: str) -> None:
    """require_collection raises ContractTypeError with the argument, the fix and the actual type (dtype for arrays)."""
    with pytest.raises(ContractTypeError) as info:
        require_collection(value, "keys", "a collection of keys")
    assert (info.value.argument, info.value.expected, info.value.actual) == (
        "keys",
        "a collection of keys",
        actual,
    )
    assert "keys must be a collection of keys" in str(info.value)


def test_require_collection_lists_any_iterable_once() -> None:
    """require_collection returns a new list of the items, consuming an iterator exactly once."""
    source = [3, 1]
    listed = require_collection(source, "keys", "a collection")
    assert listed == source
    assert listed is not source
    assert require_collection(iter((1, 2)), "keys", "a collection") == [1, 2]
    assert require_collection({"b": 0, "a": 1}, "keys", "a collection") == ["b", "a"]


def test_require_sequence_returns_the_sequence_itself() -> None:
    """require_sequence passes a sequence through unchanged and rejects text, sets and 0-d arrays."""
    rows = [1, 2]
    assert require_sequence(rows, "rows", "a list of rows") is rows
    for bad in ("ab", {1}, np.array(1)):
        with pytest.raises(ContractTypeError) as info:
            require_sequence(bad, "rows", "a list of rows")
        assert (info.value.argument, info.value.expected) == ("rows", "a list of rows")


def test_token_ids_rejects_0d_bool_and_masked_arrays() -> None:
    """0-d arrays/tensors, bool arrays and a masked array whose tolist() holds None raise ContractTypeError."""
    masked = np.ma.array([1, 2], mask=[False, True])
    for bad, fragment in (
        (np.array(2), "0 dimensions"),
        (torch.tensor(2), "0 dimensions"),
        (np.array([True, False]), "dtype bool"),
        (torch.tensor([True]), "dtype bool"),
        (masked, "tolist() holds NoneType"),
    ):
        with pytest.raises(ContractTypeError) as info:
            token_ids(bad, "ids")
        assert info.value.argument == "ids"
        assert fragment in str(info.value)


class _FloatList(np.ndarray):
    """An integer ndarray subclass whose tolist() holds a float."""

    def tolist(self) -> Any:
        return [1, 2.0]


class _TupleList(np.ndarray):
    """An integer ndarray subclass whose tolist() is a tuple, not a list."""

    def tolist(self) -> Any:
        return (1, 2)


@pytest.mark.parametrize(
    ("value", "holds"),
    [
        (np.ma.array([1, 2], mask=[False, True]), "NoneType"),
        (np.array([1, 2]).view(_FloatList), "float"),
        (np.array([1, 2]).view(_TupleList), "tuple"),
    ],
    ids=["masked", "float_item", "tuple_result"],
)
def test_token_ids_rejects_arrays_whose_tolist_is_not_flat_ints(value: Any, holds: str) -> None:
    """A 1-D integer array whose tolist() holds a non-int (a masked id reads as None) or is no list raises
    ContractTypeError naming the array, its dtype and dimensions and what tolist() holds."""
    with pytest.raises(ContractTypeError) as info:
        token_ids(value, "ids")
    assert (info.value.argument, info.value.expected, info.value.actual) == (
        "ids",
        "a 1-D integer sequence whose tolist() gives ints",
        f"{type(value).__name__} with dtype int64 and 1 dimensions whose tolist() holds {holds}",
    )


def test_token_ids_rejects_a_matrix_and_accepts_plain_subclasses() -> None:
    """An ``np.matrix`` row is 2-D and rejected; a 1-D ndarray subclass converts to plain ints."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        matrix = np.matrix([[5, 6]])
    with pytest.raises(ContractTypeError, match="2 dimensions"):
        token_ids(matrix, "ids")

    class Tagged(np.ndarray):
        """An ndarray subclass that adds nothing."""

    out = token_ids(np.array([5, 6]).view(Tagged), "ids")
    assert out == [5, 6]
    assert {type(x) for x in out} == {int}


# ---------------------------------------------------------------------------------------------- the range kit


class _OddError(LogprobContractError):
    """A section error with an ``argument`` attribute, to see the kit fill it."""


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: require_int(0, "n", low=1), ContractTypeError, "n must be >= 1, got 0"),
        (lambda: require_int(11, "n", low=0, high=10), ContractTypeError, "n must be in [0, 10], got 11"),
        (lambda: require_int(True, "n", low=0), ContractTypeError, "n must be an int (not bool), got bool"),
        (
            lambda: require_int(0, "n", low=1, error=RolloutBatchError, check="batch"),
            RolloutBatchError,
            "n must be >= 1, got 0",
        ),
        (lambda: require_float(math.nan, "x"), ContractTypeError, "x must be finite, got nan"),
        (lambda: require_float(math.inf, "x"), ContractTypeError, "x must be finite, got inf"),
        (lambda: require_float(10**400, "x"), ContractTypeError, "x must be finite, got inf"),
        (lambda: require_float(-1.0, "x", low=0), ContractTypeError, "x must be finite and >= 0, got -1.0"),
        (
            lambda: require_float(0.0, "high", low=0, low_open=True, error=_OddError, hint="a ratio"),
            _OddError,
            "high must be finite and > 0, got 0.0; a ratio",
        ),
        (
            lambda: require_float(1, "x", high=1, high_open=True),
            ContractTypeError,
            "x must be finite and < 1, got 1.0",
        ),
        (
            lambda: require_float(math.nan, "x", finite=False),
            ContractTypeError,
            "x must be a number (not NaN), got nan",
        ),
        (
            lambda: require_float("1", "x"),
            ContractTypeError,
            "x must be a real number (int or float, not bool), got str",
        ),
        (lambda: require_float(np.bool_(True), "x"), ContractTypeError, "got bool"),
        (
            lambda: require_probability(1.5, "p"),
            ContractTypeError,
            "p must be finite and in [0.0, 1.0], got 1.5",
        ),
        (
            lambda: require_probability(-0.1, "p", error=_OddError),
            _OddError,
            "p must be finite and in [0.0, 1.0]",
        ),
        (
            lambda: require_one_of("k4", "kl_type", ("k1", "k2", "k3"), error=_OddError),
            _OddError,
            "kl_type must be 'k1', 'k2' or 'k3', got 'k4'",
        ),
        (lambda: require_one_of(1, "mode", ("a",)), ContractTypeError, "mode must be 'a', got int"),
        (
            lambda: require_str_collection("ab", "labels"),
            ContractTypeError,
            "labels must be a collection of str",
        ),
        (
            lambda: require_str_collection(["a", 1], "labels"),
            ContractTypeError,
            "labels[1] must be a str, got int",
        ),
        (
            lambda: require_array([1, 2], "ids", kind="int", ndim=1),
            ContractTypeError,
            "ids must be a 1-D integer array or tensor, got list",
        ),
        (
            lambda: require_array(np.zeros((2, 3)), "mask", kind="int", ndim=2),
            ContractTypeError,
            "mask must be a 2-D integer array or tensor, got ndarray with dtype float64 and 2 dimensions",
        ),
        (
            lambda: require_array(np.zeros(3), "g", kind="float", ndim=2),
            ContractTypeError,
            "got ndarray with dtype float64 and 1 dimensions",
        ),
        (
            lambda: require_array(np.zeros(3), "g", kind="float", ndim=1, library="torch"),
            ContractTypeError,
            "g must be a 1-D floating-point torch tensor, got ndarray",
        ),
        (
            lambda: require_array(
                torch.zeros(2, 3), "m", kind="float", ndim=2, shape=(2, 4), error=_OddError
            ),
            _OddError,
            "m must be of shape (2, 4), got shape (2, 3)",
        ),
        (
            lambda: require_array(torch.zeros(2, 3, device="meta"), "m", kind="float", ndim=2),
            ContractTypeError,
            "on the meta device",
        ),
    ],
)
def test_kit_rejects_with_the_argument_name_expected_and_actual(
    call: Any, error: type[Exception], message: str
) -> None:
    """Each check raises the requested error class (``ContractTypeError`` by default) naming the argument, what it
    must be and what it got; a section error's ``argument`` attribute is filled from the argument's name."""
    with pytest.raises(error) as raised:
        call()
    assert message in str(raised.value)
    if isinstance(raised.value, ContractTypeError | LogprobContractError):
        assert str(raised.value).startswith(raised.value.argument or "<none>")


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (lambda: require_int(np.int64(5), "n", low=0, high=5), 5),
        (lambda: require_float(3, "x", low=0), 3.0),
        (lambda: require_float(np.float32(0.5), "x"), 0.5),
        (lambda: require_float(-0.0, "x", low=0), 0.0),
        (lambda: require_float(math.inf, "x", finite=False), math.inf),
        (lambda: require_probability(1, "p"), 1.0),
        (lambda: require_one_of("k2", "kl_type", ("k1", "k2")), "k2"),
        (lambda: require_str_collection(iter(("a", "b")), "labels"), ["a", "b"]),
        (lambda: require_str_collection(frozenset(), "labels"), []),
    ],
)
def test_kit_returns_the_checked_value(call: Any, expected: object) -> None:
    """A value in its domain comes back as the plain Python value (ints as int, reals as float, iterables as a
    new list)."""
    result = call()
    assert result == expected
    assert type(result) is type(expected)


def test_require_array_returns_the_same_object_and_matches_wildcards() -> None:
    """An array of the right kind, rank and shape is returned as is; ``None`` in ``shape`` matches any length."""
    tensor = torch.zeros(2, 3, dtype=torch.bfloat16)
    assert require_array(tensor, "t", kind="float", ndim=2, shape=(None, 3), library="torch") is tensor
    ids = np.arange(4, dtype=np.uint16)
    assert require_array(ids, "ids", kind="int", ndim=1, shape=(4,), library="numpy") is ids
    flags = torch.ones(3, dtype=torch.bool)
    assert require_array(flags, "flags", kind="bool", ndim=1) is flags


def test_real_or_none() -> None:
    """Reals read as floats (ints beyond the float range as infinities); bools and non-numbers are None."""
    assert real_or_none(np.float32(1.5)) == 1.5
    assert real_or_none(-(10**400)) == -math.inf
    assert real_or_none(np.int64(3)) == 3.0
    assert [real_or_none(v) for v in (True, np.bool_(False), "1", None, torch.tensor(1.0))] == [None] * 5


def test_keyword_attributes_override_the_errors_defaults() -> None:
    """``value`` and ``argument`` are positional-only, so ``argument=`` sets the error's attribute (a pair checked
    element by element names the pair); an attribute the error class lacks is a TypeError, never dropped."""
    with pytest.raises(LogprobContractError) as raised:
        require_float(math.nan, "band[0]", error=LogprobContractError, argument="band")
    assert (raised.value.argument, str(raised.value)) == ("band", "band[0] must be finite, got nan")
    with pytest.raises(TypeError, match="no attributes"):
        require_int(0, "n", low=1, check="batch")
