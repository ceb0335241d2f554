"""Unit tests of rl_contracts.codec: the nrlre1 envelope and vLLM's base64 .npy payload (SPEC §3.4, §3.4.1)."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import pickle
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch

from rl_contracts import codec
from rl_contracts._internal import strict_base64 as _base64
from rl_contracts.codec import (
    decode_routed_experts,
    decode_vllm_routed_experts,
    encode_routed_experts,
    routed_experts_tensor_metadata,
    verify_routed_experts_tensor_metadata,
)
from rl_contracts.errors import ContractTypeError, EnvelopeError, RoutedExpertsError
from rl_contracts.routed_experts import pad_and_align_routed_expert_indices
from rl_contracts.testing import assert_contract_error

DATA = Path(__file__).parent / "data"


@pytest.fixture(params=["pybase64", "base64"])
def base64_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test with pybase64 and with the standard-library fallback."""
    backend = {backend.name: backend for backend in _base64.BACKENDS}.get(request.param, _base64.BACKENDS[0])
    if request.param == "pybase64" and backend.name != "pybase64":
        pytest.skip("pybase64 is not installed")
    monkeypatch.setattr(_base64, "BACKEND", backend)
    return str(request.param)


def npy_base64(
    array: np.ndarray, *, version: tuple[int, int] | None = None, allow_pickle: bool = False
) -> str:
    """What vLLM's server sends: base64 of the ``numpy.save`` bytes of ``array``."""
    buffer = io.BytesIO()
    if version is None:
        np.save(buffer, array, allow_pickle=allow_pickle)
    else:
        np.lib.format.write_array(buffer, array, version=version)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def raw_npy_base64(header: dict[str, Any], data: bytes) -> str:
    """A hand-made version 1.0 .npy file with the given header dict and data bytes, in base64."""
    text = repr(header).encode("latin1")
    text += b" " * (-(10 + len(text) + 1) % 64) + b"\n"
    raw = b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text + data
    return base64.b64encode(raw).decode("ascii")


# --- encode ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "dtype", "envelope"),
    [
        ([[[3, -1]]], torch.int16, "nrlre1:int16:1x1x2:AwD//w=="),
        ([[[0, 1]], [[-1, -1]], [[5, 2]]], torch.int8, "nrlre1:int8:3x1x2:AAH//wUC"),
        ([[[1]]], torch.int32, "nrlre1:int32:1x1x1:AQAAAA=="),
    ],
)
def test_encode_examples(values: list[Any], dtype: torch.dtype, envelope: str, base64_backend: str) -> None:
    """The SPEC examples encode to the quoted envelopes, little-endian, with either base64 implementation."""
    assert encode_routed_experts(torch.tensor(values, dtype=dtype)) == envelope


def test_encode_empty_tensor() -> None:
    """An empty int16 tensor of shape (0, 3, 2) encodes as 'nrlre1:int16:0x3x2:' and decodes back."""
    envelope = encode_routed_experts(torch.zeros((0, 3, 2), dtype=torch.int16))
    assert envelope == "nrlre1:int16:0x3x2:"
    decoded = decode_routed_experts(envelope, torch.int16)
    assert decoded.shape == (0, 3, 2)
    assert decoded.dtype is torch.int16


def test_encode_is_layout_independent() -> None:
    """A non-contiguous view encodes exactly like its contiguous copy, and the input is left unchanged."""
    base = torch.arange(48, dtype=torch.int16).reshape(4, 3, 4)
    view = base[:, :, ::2].transpose(0, 1)
    before = base.clone()
    assert encode_routed_experts(view) == encode_routed_experts(view.contiguous())
    assert torch.equal(base, before)


@pytest.mark.parametrize(
    ("value", "actual"), [([[[1]]], "list"), (np.zeros((1, 1, 1), np.int16), "ndarray"), ("nrlre1", "str")]
)
def test_encode_rejects_non_tensors(value: Any, actual: str) -> None:
    """A non-tensor raises ContractTypeError naming the argument, the expected type and the type it got."""
    with pytest.raises(ContractTypeError) as caught:
        encode_routed_experts(value)
    assert f"got {actual}" in str(caught.value)
    assert (caught.value.argument, caught.value.expected, caught.value.actual) == (
        "t",
        "torch.Tensor",
        actual,
    )


@pytest.mark.parametrize(
    ("tensor", "field", "message"),
    [
        (
            torch.zeros(2, 3, dtype=torch.int16),
            "shape",
            "routed_experts must have shape [tokens, num_moe_layers, topk], got (2, 3).",
        ),
        (
            torch.zeros(1, 1, 1, 1, dtype=torch.int16),
            "shape",
            "routed_experts must have shape [tokens, num_moe_layers, topk], got (1, 1, 1, 1).",
        ),
        (
            torch.zeros(1, 1, 1, dtype=torch.int64),
            "dtype",
            "Unsupported routed_experts dtype torch.int64; expected one of ['int16', 'int32', 'int8'].",
        ),
        (
            torch.zeros(1, 1, 1, dtype=torch.uint8),
            "dtype",
            "Unsupported routed_experts dtype torch.uint8; expected one of ['int16', 'int32', 'int8'].",
        ),
        (
            torch.zeros(1, 1, 1),
            "dtype",
            "Unsupported routed_experts dtype torch.float32; expected one of ['int16', 'int32', 'int8'].",
        ),
    ],
)
def test_encode_rejects_bad_tensors(tensor: torch.Tensor, field: str, message: str) -> None:
    """Non-3-D tensors and dtypes outside int8/int16/int32 raise EnvelopeError with the SPEC message and field."""
    with pytest.raises(EnvelopeError) as caught:
        encode_routed_experts(tensor)
    assert str(caught.value) == message
    assert caught.value.field == field
    clone = pickle.loads(pickle.dumps(caught.value))
    assert (type(clone), str(clone), clone.field) == (EnvelopeError, message, field)


@pytest.mark.parametrize(
    ("tensor", "found"),
    [
        (torch.zeros(1, 1, 2, dtype=torch.int16).to_sparse(), "layout torch.sparse_coo on device cpu"),
        (torch.zeros(1, 1, 2, dtype=torch.int16, device="meta"), "layout torch.strided on device meta"),
    ],
)
def test_encode_rejects_tensors_without_dense_values(tensor: torch.Tensor, found: str) -> None:
    """Sparse and meta tensors raise EnvelopeError (field 'payload') naming the layout and device."""
    with pytest.raises(EnvelopeError) as caught:
        encode_routed_experts(tensor)
    assert f"got {found}" in str(caught.value)
    assert caught.value.field == "payload"


@pytest.mark.parametrize(
    ("values", "dtype", "envelope"),
    [
        ([[[3, -1]]], torch.int16, "nrlre1:int16:1x1x2:AwD//w=="),
        ([[[1]]], torch.int32, "nrlre1:int32:1x1x1:AQAAAA=="),
        ([[[-2, 7]]], torch.int8, "nrlre1:int8:1x1x2:/gc="),
    ],
)
def test_encode_on_a_big_endian_host_writes_little_endian_bytes(
    values: list[Any], dtype: torch.dtype, envelope: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The big-endian host path converts to little-endian element bytes: the envelope is the same on every host.

    Simulated on this host by forcing the big-endian flag (the conversion to '<' then keeps the bytes).
    """
    monkeypatch.setattr(codec, "_BIG_ENDIAN_HOST", True)
    tensor = torch.tensor(values, dtype=dtype)
    assert encode_routed_experts(tensor) == envelope
    decoded = decode_routed_experts(envelope, dtype)
    assert decoded.dtype is dtype
    assert torch.equal(decoded, tensor)


# --- decode ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("envelope", "values"),
    [
        ("nrlre1:int16:1x1x2:AwD//w==", [[[3, -1]]]),
        ("nrlre1:int8:3x1x2:AAH//wUC", [[[0, 1]], [[-1, -1]], [[5, 2]]]),
    ],
)
def test_decode_examples_to_int32(envelope: str, values: list[Any], base64_backend: str) -> None:
    """Decoding either SPEC envelope to int32 gives the encoded values in a new writable CPU tensor."""
    result = decode_routed_experts(envelope, torch.int32)
    assert result.dtype is torch.int32
    assert result.tolist() == values
    result[0, 0, 0] = 7  # writable


@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.int32, torch.int64])
def test_decode_roundtrip_large_payload(dtype: torch.dtype, base64_backend: str) -> None:
    """A payload spanning several encoding chunks is the base64 of the whole and round-trips exactly."""
    generator = torch.Generator().manual_seed(0)
    wire = torch.int16 if dtype in (torch.int8, torch.int64) else dtype
    tensor = torch.randint(-1, 120, (12000, 12, 8), generator=generator, dtype=torch.int64).to(wire)
    envelope = encode_routed_experts(tensor)
    assert len(envelope) > 2**21
    assert envelope.endswith(
        ":"
        + base64.b64encode(tensor.numpy().astype(tensor.numpy().dtype.newbyteorder("<")).tobytes()).decode()
    )
    decoded = decode_routed_experts(envelope, dtype)
    assert decoded.dtype is dtype
    assert torch.equal(decoded, tensor.to(dtype))


@pytest.mark.parametrize(
    ("envelope", "field", "message"),
    [
        ("nrlre1:int64:1x1x2:AwD//w==", "dtype", "Unsupported routed_experts dtype 'int64'."),
        ("nrlre1:uint8:1x1x2:AwD//w==", "dtype", "Unsupported routed_experts dtype 'uint8'."),
        ("nrlre1::1x1x2:AwD//w==", "dtype", "Unsupported routed_experts dtype ''."),
        (
            "nrlre1:int16:2x1x2:AwD//w==",
            "length",
            "routed_experts envelope has 2 elements, expected 4 for shape (2, 1, 2).",
        ),
        ("nrlre1:int16:1x1:AwD//w==", "shape", "routed_experts envelope shape '1x1' is not 3-dimensional."),
        (
            "nrlre1:int16:1x1x2x1:AwD//w==",
            "shape",
            "routed_experts envelope shape '1x1x2x1' is not 3-dimensional.",
        ),
        ("nrlre1:int16::AwD//w==", "shape", "routed_experts envelope shape '' is not 3-dimensional."),
    ],
)
def test_decode_rejections_with_spec_messages(envelope: str, field: str, message: str) -> None:
    """Unknown wire dtypes, wrong element counts and non-3-D shapes raise the SPEC messages."""
    with pytest.raises(EnvelopeError) as caught:
        decode_routed_experts(envelope, torch.int16)
    assert str(caught.value) == message
    assert caught.value.field == field


@pytest.mark.parametrize(
    "envelope",
    [
        "",
        "nrlre1",
        "nrlre1:int16:1x1x2",
        "nrlre2:int16:1x1x2:AwD//w==",
        "NRLRE1:int16:1x1x2:AwD//w==",
        " nrlre1:int16:1x1x2:AwD//w==",
        "AwD//w==",
    ],
)
def test_decode_rejects_bad_prefixes(envelope: str) -> None:
    """Anything but four ':'-separated parts starting with 'nrlre1' raises the prefix error."""
    with pytest.raises(EnvelopeError) as caught:
        decode_routed_experts(envelope, torch.int16)
    assert str(caught.value) == (
        "routed_experts string payload is not a valid 'nrlre1:<dtype>:<SxLxK>:<base64>' envelope."
    )
    assert caught.value.field == "prefix"


@pytest.mark.parametrize(
    "shape", ["1x-1x2", "1x+1x2", "1x 1x2", "1x1_0x2", "1xx2", "ax1x2", "1x1x\u00b2", "1x1x2.0"]
)
def test_decode_rejects_non_integer_dimensions(shape: str) -> None:
    """Signs, spaces, underscores, empty parts and non-ASCII digits are not unsigned decimal dimensions."""
    with pytest.raises(EnvelopeError) as caught:
        decode_routed_experts(f"nrlre1:int16:{shape}:AwD//w==", torch.int16)
    assert (
        str(caught.value)
        == f"routed_experts envelope shape '{shape}' has a non-integer or negative dimension."
    )
    assert caught.value.field == "shape"


@pytest.mark.parametrize("shape", ["1x1x" + "9" * 5000, f"0x{2**62}x4", "0x99999999999999999999x1"])
def test_decode_rejects_dimensions_too_large_for_a_tensor(shape: str) -> None:
    """Dimensions beyond int64 (or whose product is) are rejected without building the tensor."""
    with pytest.raises(EnvelopeError, match="is too large") as caught:
        decode_routed_experts(f"nrlre1:int16:{shape}:", torch.int16)
    assert caught.value.field == "shape"
    assert len(str(caught.value)) <= 2000


def test_decode_accepts_leading_zeros_and_empty_shapes() -> None:
    """'01x1x2' is the decimal 1; an empty shape with an empty payload decodes to an empty tensor."""
    assert decode_routed_experts("nrlre1:int16:01x1x2:AwD//w==", torch.int16).tolist() == [[[3, -1]]]
    assert decode_routed_experts("nrlre1:int8:0x5x0:", torch.int64).shape == (0, 5, 0)


@pytest.mark.parametrize(
    "body",
    [
        "AwD//w=",
        "AwD//w",
        "AwD//w===",
        "AwD//x==",
        "AwD/+w=a",
        "AwD//w==AAAA",
        "AA==AAAA",
        "AwD/\n/w==",
        "AwD/ /w==",
        "AwD_-w==",
        "AwD//w==\n",
        "AwD/\u00e9w==",
        "=AAA",
    ],
)
def test_decode_rejects_invalid_base64(body: str, base64_backend: str) -> None:
    """Bad characters, bad or misplaced padding and non-canonical final characters raise the base64 error."""
    with pytest.raises(EnvelopeError) as caught:
        decode_routed_experts(f"nrlre1:int16:1x1x2:{body}", torch.int16)
    assert str(caught.value) == "routed_experts envelope payload is not valid base64."
    assert caught.value.field == "payload"


def test_decode_reports_invalid_base64_before_a_length_mismatch(base64_backend: str) -> None:
    """A payload that is both too short and invalid base64 is reported as invalid base64 (step 6 before 7)."""
    with pytest.raises(EnvelopeError, match="not valid base64"):
        decode_routed_experts("nrlre1:int16:5x1x2:AwD*", torch.int16)


@pytest.mark.parametrize("position", [4, 2**17, 3 * 2**17 + 8])
def test_decode_rejects_padding_inside_a_long_payload(position: int, base64_backend: str) -> None:
    """Padding that ends a 4-character group inside a long payload is rejected: it is only allowed at the end."""
    envelope = encode_routed_experts(torch.zeros((2**18, 1, 2), dtype=torch.int8))
    cut = envelope.rindex(":") + 1 + position
    tampered = envelope[: cut - 2] + "==" + envelope[cut:]
    with pytest.raises(EnvelopeError, match="not valid base64"):
        decode_routed_experts(tampered, torch.int8)


@pytest.mark.parametrize(
    ("tensor", "dtype", "value"),
    [
        (torch.tensor([[[5, 300]]], dtype=torch.int16), torch.int8, 300),
        (torch.tensor([[[-200, 1]]], dtype=torch.int16), torch.int8, -200),
        (torch.tensor([[[1, 70000, -70000]]], dtype=torch.int32), torch.int16, 70000),
    ],
)
def test_decode_narrowing_requires_every_value_to_fit(
    tensor: torch.Tensor, dtype: torch.dtype, value: int
) -> None:
    """Decoding to a narrower dtype reports the first value (C order) that does not fit."""
    with pytest.raises(EnvelopeError) as caught:
        decode_routed_experts(encode_routed_experts(tensor), dtype)
    assert (
        str(caught.value) == f"routed_experts envelope value {value} does not fit the requested dtype {dtype}"
    )
    assert caught.value.field == "value"


def test_decode_narrowing_accepts_fitting_values() -> None:
    """An int32 envelope whose values fit int8 decodes to int8."""
    tensor = torch.tensor([[[127, -1]], [[0, 3]]], dtype=torch.int32)
    assert torch.equal(
        decode_routed_experts(encode_routed_experts(tensor), torch.int8), tensor.to(torch.int8)
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.uint8, torch.bool, "int16", None])
def test_decode_rejects_unsupported_requested_dtypes(dtype: Any) -> None:
    """A requested dtype outside int8/int16/int32/int64 raises EnvelopeError (field 'dtype')."""
    with pytest.raises(EnvelopeError) as caught:
        decode_routed_experts("nrlre1:int16:1x1x2:AwD//w==", dtype)
    assert str(caught.value) == f"Unsupported routed_experts dtype {dtype}."
    assert caught.value.field == "dtype"


# --- legacy nested lists -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "payload",
    [
        [[[3, -1]], [[0, 7]]],
        ((3, -1),),
        np.array([[[3, -1]]], np.int64),
        torch.tensor([[[3, 127]]], dtype=torch.int32),
        np.array([[[200]]], np.uint8),
    ],
)
def test_decode_legacy_payloads(payload: object) -> None:
    """Legacy nested lists (and arrays) that are 3-D ints in range decode to the requested dtype."""
    expected = np.asarray(payload.numpy() if isinstance(payload, torch.Tensor) else payload)
    if expected.ndim != 3:
        with pytest.raises(EnvelopeError, match="got shape"):
            decode_routed_experts(payload, torch.int16)
        return
    result = decode_routed_experts(payload, torch.int16)
    assert result.dtype is torch.int16
    np.testing.assert_array_equal(result.numpy(), expected)


def test_decode_legacy_empty_list_of_rows() -> None:
    """A legacy 3-D payload with no elements decodes to an empty tensor of that shape."""
    assert decode_routed_experts([[[]], [[]]], torch.int8).shape == (2, 1, 0)


@pytest.mark.parametrize(
    ("payload", "found", "field"),
    [
        ([[[True, False]]], "dtype bool", "dtype"),
        ([[[1, True]]], "dtype bool", "dtype"),
        ([[[2**64 - 1, True]]], "dtype bool", "dtype"),  # numpy reads this list as uint64
        ([[[1 + 2j]]], "dtype complex128", "dtype"),
        (np.zeros((1, 1, 2), np.complex64), "dtype complex64", "dtype"),
        (np.ones((1, 1, 2), np.bool_), "dtype bool", "dtype"),
        ([[[1.0, 2.0]]], "dtype float64", "dtype"),
        ([[[1, float("nan")]]], "dtype float64", "dtype"),
        (torch.zeros(1, 1, 1), "dtype float32", "dtype"),
        ([[1, 2]], "shape (1, 2)", "shape"),
        ([], "dtype float64", "dtype"),
        (5, "shape ()", "shape"),
        ([[[5, 40000, -7]]], "value 40000", "value"),
        ([[[-7, 40000]]], "value -7", "value"),
        ([[[1, 2], [3]]], "type list", "payload"),
        (object(), "type object", "payload"),
        (None, "type NoneType", "payload"),
        (b"abc", "type bytes", "payload"),
        ({"a": 1}, "type dict", "payload"),
        ([[[2**70]]], f"value {2**70}", "value"),
        ([[[-1, 2**63]]], f"value {2**63}", "value"),  # numpy promotes this list to float64
        ([[[3, -(2**63) - 1]]], f"value {-(2**63) - 1}", "value"),
        (np.array([[[1]]], dtype=object), "type ndarray", "payload"),
    ],
)
def test_decode_legacy_rejections(payload: object, found: str, field: str) -> None:
    """Malformed legacy payloads raise the SPEC message with the found part describing the problem."""
    with pytest.raises(EnvelopeError) as caught:
        decode_routed_experts(payload, torch.int16)
    if found == "dtype float64" and payload == []:
        assert str(caught.value).endswith("got shape (0,).")
        return
    assert str(caught.value) == (
        "legacy routed_experts payload must be a 3-dimensional integer array with values in [-1, 32767], "
        f"got {found}."
    )
    assert caught.value.field == field


# --- vLLM's base64 .npy payload ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["chat_completion_routed_experts.json", "chat_completion_routed_experts_prompt_start3.json"]
)
def test_decode_recorded_vllm_chat_payloads(name: str) -> None:
    """Real vLLM chat payloads decode to (prompt + generated - 1 - start, 2, 2) with ids of 4 experts."""
    response = json.loads((DATA / name).read_text())
    start = 3 if name.endswith("start3.json") else 0
    for choice in response["choices"]:
        routes, returned_start = decode_vllm_routed_experts(
            choice["routed_experts"], dtype=torch.int8, prompt_start=start
        )
        assert returned_start == start
        rows = len(response["prompt_token_ids"]) + len(choice["token_ids"]) - 1 - start
        assert routes.shape == (rows, 2, 2)
        assert routes.dtype is torch.int8
        assert 0 <= int(routes.min()) <= int(routes.max()) <= 3


def test_recorded_prompt_start_payload_is_the_tail_of_the_full_one() -> None:
    """The prompt_start=3 recording equals rows 3: of the full recording, and aligns with 3 sentinel rows."""
    full = json.loads((DATA / "chat_completion_routed_experts.json").read_text())
    tail = json.loads((DATA / "chat_completion_routed_experts_prompt_start3.json").read_text())
    all_rows, _ = decode_vllm_routed_experts(full["choices"][0]["routed_experts"], dtype=torch.int16)
    rows, start = decode_vllm_routed_experts(
        tail["choices"][0]["routed_experts"], dtype=torch.int16, prompt_start=3
    )
    assert torch.equal(rows, all_rows[3:])
    length = len(tail["prompt_token_ids"]) + len(tail["choices"][0]["token_ids"])
    aligned, stats = pad_and_align_routed_expert_indices(
        SimpleNamespace(prompt_token_ids=tail["prompt_token_ids"]),
        SimpleNamespace(routed_experts=rows),
        valid_length=length,
        padded_length=length,
        device="cpu",
        require_complete_routed_experts=True,
        return_stats=True,
        routes_start=start,
    )
    assert stats == {
        "actual_routes": length - 4,
        "expected_routes": length - 1,
        "missing_routes": 3,
        "surplus_routes": 0,
    }
    assert aligned is not None
    assert (aligned[:3] == -1).all()
    assert torch.equal(aligned[3 : length - 1], all_rows[3:])


@pytest.mark.parametrize(
    "array",
    [
        np.arange(12, dtype=np.uint8).reshape(3, 2, 2),
        np.arange(12, dtype=np.uint16).reshape(3, 2, 2) * 1000,
        np.arange(-1, 11, dtype=np.int16).reshape(3, 2, 2),
        np.asfortranarray(np.arange(24, dtype=np.uint8).reshape(2, 3, 4)),
        np.arange(12, dtype=">u2").reshape(3, 2, 2),
        np.zeros((0, 2, 2), np.uint8),
    ],
)
def test_decode_vllm_npy_arrays(array: np.ndarray, base64_backend: str) -> None:
    """numpy.save payloads of any integer dtype, order and byte order decode to their logical values."""
    routes, start = decode_vllm_routed_experts(npy_base64(array), dtype=torch.int32)
    assert start == 0
    np.testing.assert_array_equal(routes.numpy(), array)


def test_decode_vllm_npy_version_2_header() -> None:
    """A version 2.0 .npy header is read as well."""
    array = np.arange(8, dtype=np.uint8).reshape(2, 2, 2)
    routes, _ = decode_vllm_routed_experts(npy_base64(array, version=(2, 0)), dtype=torch.int16)
    np.testing.assert_array_equal(routes.numpy(), array)


@pytest.mark.parametrize(
    ("payload", "field", "text"),
    [
        ("AwD*", "payload", "vLLM routed_experts payload is not valid base64."),
        (base64.b64encode(b"not a numpy file at all").decode(), "payload", "is not a valid .npy file"),
        (
            npy_base64(np.array([[[1]]], dtype=object), allow_pickle=True),
            "dtype",
            "holds a pickled object array (dtype object); pickles are never loaded.",
        ),
        (
            npy_base64(np.zeros((1, 1, 2), np.float32)),
            "dtype",
            "must hold integer expert ids, got dtype float32.",
        ),
        (npy_base64(np.zeros((1, 1, 2), np.bool_)), "dtype", "must hold integer expert ids, got dtype bool."),
        (
            npy_base64(np.zeros((4, 2), np.uint8)),
            "shape",
            "must have shape [tokens, num_moe_layers, topk], got (4, 2).",
        ),
        (
            raw_npy_base64({"descr": "|u1", "fortran_order": False, "shape": (2, 2, 2)}, bytes(7)),
            "length",
            "has 7 data bytes, expected 8 for shape (2, 2, 2) and dtype uint8.",
        ),
        (
            raw_npy_base64({"descr": "|u1", "fortran_order": False, "shape": (2, 2, 2)}, bytes(9)),
            "length",
            "has 9 data bytes, expected 8",
        ),
        (
            raw_npy_base64({"descr": "<u2", "fortran_order": False, "shape": (10**12, 48, 8)}, bytes(4)),
            "length",
            "has 4 data bytes, expected 768000000000000",
        ),
        (
            raw_npy_base64({"descr": "|u1", "fortran_order": False, "shape": (-1, 2, 2)}, b""),
            "shape",
            "got (-1, 2, 2)",
        ),
        (
            raw_npy_base64({"descr": [("a", "<u2")], "fortran_order": False, "shape": (1, 1, 1)}, bytes(2)),
            "dtype",
            "must hold integer expert ids",
        ),
    ],
)
def test_decode_vllm_rejections(payload: str, field: str, text: str) -> None:
    """Malformed, pickled, non-integer, non-3-D and length-mismatched .npy payloads raise EnvelopeError."""
    with pytest.raises(EnvelopeError) as caught:
        decode_vllm_routed_experts(payload, dtype=torch.int16)
    assert text in str(caught.value)
    assert caught.value.field == field
    assert len(str(caught.value)) <= 2000


@pytest.mark.parametrize(
    "header",
    [b"{'descr': '|u1', 'shape': (1,\n", b"{'descr': '|u1'\n", b"not a dict at all\n", b"[1, 2, 3]\n"],
)
def test_decode_vllm_rejects_unparsable_headers(header: bytes) -> None:
    """Headers numpy cannot parse (unbalanced brackets, wrong keys, not a dict) raise EnvelopeError (payload)."""
    raw = b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + bytes(8)
    with pytest.raises(EnvelopeError, match=r"is not a valid \.npy file") as caught:
        decode_vllm_routed_experts(base64.b64encode(raw).decode("ascii"), dtype=torch.int16)
    assert caught.value.field == "payload"


@pytest.mark.parametrize("shape", [(0, 2**70, 1), (2**70, 0, 2)])
def test_decode_vllm_rejects_headers_numpy_cannot_read(shape: tuple[int, ...]) -> None:
    """An empty array whose header declares a dimension beyond int64 passes the header checks, but numpy's reader
    refuses it: the failure is reported as 'not a valid .npy file' (field 'payload') with numpy's explanation."""
    payload = raw_npy_base64({"descr": "|u1", "fortran_order": False, "shape": shape}, b"")
    with pytest.raises(Exception) as numpy_error:  # noqa: PT011 - whatever numpy raises is quoted verbatim
        np.lib.format.read_array(io.BytesIO(base64.b64decode(payload)), allow_pickle=False)
    with pytest.raises(EnvelopeError) as caught:
        decode_vllm_routed_experts(payload, dtype=torch.int16)
    assert "not a valid .npy file" in str(caught.value)
    assert str(caught.value).endswith(str(numpy_error.value))
    assert caught.value.field == "payload"


@pytest.mark.parametrize(
    ("array", "dtype", "value"),
    [
        (np.array([[[3, 40000]]], np.uint16), torch.int16, 40000),
        (np.array([[[200, 3]]], np.uint8), torch.int8, 200),
        (np.array([[[0, -2]]], np.int16), torch.int16, -2),
    ],
)
def test_decode_vllm_values_must_fit(array: np.ndarray, dtype: torch.dtype, value: int) -> None:
    """Ids above the requested dtype, or below -1 in a signed source, raise the 'does not fit' error."""
    with pytest.raises(EnvelopeError) as caught:
        decode_vllm_routed_experts(npy_base64(array), dtype=dtype)
    assert (
        str(caught.value) == f"routed_experts envelope value {value} does not fit the requested dtype {dtype}"
    )
    assert caught.value.field == "value"


def test_decode_vllm_argument_checks() -> None:
    """prompt_start must be a non-negative int, the payload a string and the dtype a carry dtype."""
    payload = npy_base64(np.zeros((1, 1, 1), np.uint8))
    with pytest.raises(RoutedExpertsError, match="prompt_start"):
        decode_vllm_routed_experts(payload, dtype=torch.int16, prompt_start=-1)
    with pytest.raises(ContractTypeError, match="prompt_start"):
        decode_vllm_routed_experts(payload, dtype=torch.int16, prompt_start=True)
    with pytest.raises(ContractTypeError, match="payload"):
        decode_vllm_routed_experts(payload.encode(), dtype=torch.int16)  # type: ignore[arg-type]
    with pytest.raises(EnvelopeError, match=re.escape("Unsupported routed_experts dtype torch.uint8.")):
        decode_vllm_routed_experts(payload, dtype=torch.uint8)
    assert decode_vllm_routed_experts(payload, dtype=torch.int16, prompt_start=np.int64(2))[1] == 2


@pytest.mark.parametrize(("payload", "actual"), [(b"AAAA", "bytes"), (None, "NoneType"), (["AAAA"], "list")])
def test_decode_vllm_non_string_payload_error(payload: object, actual: str) -> None:
    """A non-string payload raises ContractTypeError naming the argument, the expected str and the actual type."""
    with pytest.raises(ContractTypeError) as caught:
        decode_vllm_routed_experts(payload, dtype=torch.int16)  # type: ignore[arg-type]
    assert f"got {actual}" in str(caught.value)
    assert (caught.value.argument, caught.value.expected, caught.value.actual) == ("payload", "str", actual)


def test_decode_vllm_prompt_start_errors_carry_attributes() -> None:
    """A bool prompt_start names the argument 'prompt_start'; a negative one is stored as routes_start."""
    payload = npy_base64(np.zeros((1, 1, 1), np.uint8))
    with pytest.raises(ContractTypeError) as wrong_type:
        decode_vllm_routed_experts(payload, dtype=torch.int16, prompt_start=True)
    assert wrong_type.value.argument == "prompt_start"
    with pytest.raises(RoutedExpertsError) as negative:
        decode_vllm_routed_experts(payload, dtype=torch.int16, prompt_start=-3)
    assert "prompt_start" in str(negative.value)
    assert "got -3" in str(negative.value)
    assert negative.value.routes_start == -3


def test_decode_vllm_unsupported_npy_version_message() -> None:
    """A .npy file of format version 3.0 is rejected naming the version (field 'payload')."""
    raw = base64.b64decode(npy_base64(np.zeros((1, 1, 1), np.uint8)))
    payload = base64.b64encode(raw[:6] + b"\x03\x00" + raw[8:]).decode("ascii")
    with pytest.raises(EnvelopeError) as caught:
        decode_vllm_routed_experts(payload, dtype=torch.int16)
    assert "not a valid .npy file" in str(caught.value)
    assert "version (3, 0)" in str(caught.value)
    assert caught.value.field == "payload"


def test_decode_vllm_unparsable_header_message_quotes_numpy() -> None:
    """An unparsable header's error message ends with numpy's own explanation of the failure."""
    header = b"not a dict at all\n"
    raw = b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + bytes(8)
    stream = io.BytesIO(raw)
    np.lib.format.read_magic(stream)
    with pytest.raises(ValueError, match="header") as numpy_error:
        np.lib.format.read_array_header_1_0(stream)
    with pytest.raises(EnvelopeError) as caught:
        decode_vllm_routed_experts(base64.b64encode(raw).decode("ascii"), dtype=torch.int16)
    assert "not a valid .npy file" in str(caught.value)
    assert str(caught.value).endswith(str(numpy_error.value))


@pytest.mark.parametrize(
    "tensor",
    [
        torch.zeros(1, 1, 2, dtype=torch.int16).to_sparse(),
        torch.zeros(1, 1, 2, dtype=torch.int16, device="meta"),
    ],
)
def test_decode_legacy_tensor_without_values_message(tensor: torch.Tensor) -> None:
    """A legacy tensor payload without readable values (sparse, meta) is reported as 'type Tensor' (payload)."""
    with pytest.raises(EnvelopeError) as caught:
        decode_routed_experts(tensor, torch.int16)
    assert str(caught.value) == (
        "legacy routed_experts payload must be a 3-dimensional integer array with values in [-1, 32767], "
        "got type Tensor."
    )
    assert caught.value.field == "payload"


@pytest.mark.parametrize(("payload", "accepted"), [([[[-1, 0]]], True), ([[[-2, 0]]], False)])
def test_decode_legacy_lower_bound_is_minus_one(payload: list[Any], accepted: bool) -> None:
    """Legacy value -1 (the sentinel) is accepted and -2 is the first value rejected."""
    if accepted:
        assert decode_routed_experts(payload, torch.int8).tolist() == payload
        return
    with pytest.raises(EnvelopeError) as caught:
        decode_routed_experts(payload, torch.int8)
    assert str(caught.value).endswith("values in [-1, 127], got value -2.")


# --- §3.4 integrity metadata (second release) ----------------------------------------------------------------------


def test_metadata_spec_example() -> None:
    """SPEC's example: int16 [[[1, -1]], [[256, 2]]] has dtype int16, shape [2, 1, 2] and the digest of its bytes."""
    tensor = torch.tensor([[[1, -1]], [[256, 2]]], dtype=torch.int16)
    digest = hashlib.sha256(b"\x01\x00\xff\xff\x00\x01\x02\x00").hexdigest()
    assert routed_experts_tensor_metadata(tensor) == {"dtype": "int16", "shape": [2, 1, 2], "sha256": digest}
    verify_routed_experts_tensor_metadata(tensor, {"dtype": "int16", "shape": [2, 1, 2], "sha256": digest})


def test_metadata_ignores_strides_and_matches_the_envelope_bytes() -> None:
    """A non-contiguous view and its contiguous copy have equal metadata: the digest of the envelope's bytes."""
    base = torch.arange(24, dtype=torch.int32).reshape(2, 3, 4)
    view = base.transpose(0, 2)
    assert not view.is_contiguous()
    metadata = routed_experts_tensor_metadata(view)
    assert metadata == routed_experts_tensor_metadata(view.contiguous())
    envelope_bytes = base64.b64decode(encode_routed_experts(view).rsplit(":", 1)[1])
    assert metadata["sha256"] == hashlib.sha256(envelope_bytes).hexdigest()
    assert metadata["shape"] == [4, 3, 2]
    json.dumps(metadata)  # travels as JSON


def test_metadata_of_an_empty_tensor() -> None:
    """An empty tensor has the digest of no bytes and its own shape."""
    metadata = routed_experts_tensor_metadata(torch.empty((0, 3, 2), dtype=torch.int8))
    assert metadata == {"dtype": "int8", "shape": [0, 3, 2], "sha256": hashlib.sha256(b"").hexdigest()}


@pytest.mark.parametrize(
    ("value", "cls", "field"),
    [
        ([[[1, 2]]], ContractTypeError, None),
        (torch.zeros(2, 3, dtype=torch.int16), EnvelopeError, "shape"),
        (torch.zeros(1, 1, 2, dtype=torch.int64), EnvelopeError, "dtype"),
        (torch.zeros(1, 1, 2, dtype=torch.uint8), EnvelopeError, "dtype"),
        (torch.zeros(1, 1, 2, dtype=torch.int16, device="meta"), EnvelopeError, "payload"),
    ],
)
def test_metadata_checks_its_input_like_encode(value: Any, cls: type[Exception], field: str | None) -> None:
    """A non-tensor, a non-3-D tensor, a dtype outside int8/int16/int32 and a meta tensor are rejected."""
    for call in (
        lambda: routed_experts_tensor_metadata(value),
        lambda: verify_routed_experts_tensor_metadata(value, {}),
    ):
        with pytest.raises(cls) as caught:
            call()
        error = caught.value
        if isinstance(error, EnvelopeError):
            assert error.field == field
        else:
            assert isinstance(error, ContractTypeError)
            assert error.argument == "t"


def _spec_metadata() -> tuple[torch.Tensor, dict[str, Any]]:
    tensor = torch.tensor([[[1, -1]], [[256, 2]]], dtype=torch.int16)
    return tensor, routed_experts_tensor_metadata(tensor)


@pytest.mark.parametrize(
    ("change", "field", "fragment"),
    [
        ({"dtype": "int32"}, "dtype", "metadata's dtype is 'int32'"),
        ({"dtype": None}, "dtype", "metadata's dtype is None"),
        ({"shape": [1, 2, 2]}, "shape", "shape is [2, 1, 2], the metadata's shape is [1, 2, 2]"),
        ({"shape": "2x1x2"}, "shape", "metadata's shape is '2x1x2'"),
        ({"shape": [2, 1, True]}, "shape", "metadata's shape is [2, 1, True]"),
        ({"shape": [2, True, 2]}, "shape", "metadata's shape is [2, True, 2]"),
        ({"shape": [2.0, 1, 2]}, "shape", "metadata's shape is [2.0, 1, 2]"),
        ({"shape": [2, 1.0, 2]}, "shape", "metadata's shape is [2, 1.0, 2]"),
        ({"shape": (2, True, 2)}, "shape", "metadata's shape is (2, True, 2)"),
        ({"shape": [2, np.bool_(True), 2]}, "shape", "metadata's shape is [2, np.True_, 2]"),
        ({"sha256": "0" * 64}, "value", "metadata's sha256 is '" + "0" * 64 + "'"),
        ({"sha256": b"x"}, "value", "metadata's sha256 is b'x'"),
    ],
)
def test_verify_names_the_first_differing_part(change: dict[str, Any], field: str, fragment: str) -> None:
    """Metadata differing in dtype, shape or digest (or holding the wrong type: a bool or float dimension equal
    to the tensor's, in a list as in a tuple, is no int by SPEC §0.3) raises naming that part."""
    tensor, metadata = _spec_metadata()
    with pytest.raises(EnvelopeError) as caught:
        verify_routed_experts_tensor_metadata(tensor, {**metadata, **change})
    assert caught.value.field == field
    assert fragment in str(caught.value)


@pytest.mark.parametrize("key", ["dtype", "shape", "sha256"])
def test_verify_treats_a_missing_entry_as_a_difference(key: str) -> None:
    """Metadata without one of its three entries differs in that part."""
    tensor, metadata = _spec_metadata()
    del metadata[key]
    with pytest.raises(EnvelopeError, match=f"the metadata's {key} is no entry") as caught:
        verify_routed_experts_tensor_metadata(tensor, metadata)
    assert caught.value.field == {"sha256": "value"}.get(key, key)


def test_verify_reports_dtype_before_shape_before_values() -> None:
    """When every part differs, the dtype is reported; with the dtype right, the shape."""
    tensor, _ = _spec_metadata()
    other = routed_experts_tensor_metadata(torch.zeros(3, 1, 1, dtype=torch.int8))
    with pytest.raises(EnvelopeError) as caught:
        verify_routed_experts_tensor_metadata(tensor, other)
    assert caught.value.field == "dtype"
    with pytest.raises(EnvelopeError) as caught:
        verify_routed_experts_tensor_metadata(tensor, {**other, "dtype": "int16"})
    assert caught.value.field == "shape"


def test_verify_accepts_a_tuple_shape_and_detects_one_changed_value() -> None:
    """A tuple shape (e.g. from a Python sender) matches; one changed id after transfer is a value difference."""
    tensor, metadata = _spec_metadata()
    verify_routed_experts_tensor_metadata(tensor.clone(), {**metadata, "shape": (2, 1, 2)})
    verify_routed_experts_tensor_metadata(tensor, {**metadata, "shape": [np.int64(2), 1, np.uint8(2)]})
    changed = tensor.clone()
    changed[1, 0, 0] = 255
    with pytest.raises(EnvelopeError) as caught:
        verify_routed_experts_tensor_metadata(changed, metadata)
    assert caught.value.field == "value"


@pytest.mark.parametrize("metadata", [None, [("dtype", "int16")], "int16"])
def test_verify_rejects_metadata_that_is_not_a_mapping(metadata: Any) -> None:
    """Metadata that is not a mapping is a ContractTypeError naming the argument."""
    tensor, _ = _spec_metadata()
    with pytest.raises(ContractTypeError) as caught:
        verify_routed_experts_tensor_metadata(tensor, metadata)
    assert caught.value.argument == "metadata"


@pytest.mark.parametrize(
    "value", [[None], [[[1, None]]], [[[1.5, 2**70]]]], ids=["none", "none_beside", "float_beside"]
)
def test_legacy_payloads_holding_non_ids_are_envelope_errors(value: list[Any]) -> None:
    """A legacy nested list with an element that is no int is refused with the legacy-payload error (field payload)."""
    with pytest.raises(EnvelopeError, match="legacy routed_experts payload must be a 3-dimensional") as info:
        decode_routed_experts(value, torch.int16)
    assert info.value.field == "payload"


# --- base64 through public APIs only (no ctypes, no writes into interpreter memory) ------------------------------

SRC = Path(codec.__file__).parent


def test_no_library_module_uses_ctypes() -> None:
    """No module under src/rl_contracts imports ctypes or names CPython's C API: the envelope text is built and
    read by pybase64's (or the stdlib's) public functions, never through raw interpreter memory."""
    forbidden = re.compile(r"\bimport ctypes\b|\bfrom ctypes\b|pythonapi|PyUnicode_New|ctypes\.memmove")
    offenders = [
        str(path.relative_to(SRC))
        for path in sorted(SRC.rglob("*.py"))
        if forbidden.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


_FOREIGN_RESTYPE = """
import ctypes
ctypes.pythonapi.PyUnicode_New.restype = ctypes.c_void_p  # what another library may set, process-wide
import torch
from rl_contracts.codec import decode_routed_experts, encode_routed_experts
assert ctypes.pythonapi.PyUnicode_New.restype is ctypes.c_void_p, "importing the codec changed restype"
t = torch.arange(-1, 95, dtype=torch.int16).reshape(4, 3, 8)
envelope = encode_routed_experts(t)
assert isinstance(envelope, str) and envelope.startswith("nrlre1:int16:4x3x8:"), type(envelope)
assert torch.equal(decode_routed_experts(envelope, torch.int16), t)
assert ctypes.pythonapi.PyUnicode_New.restype is ctypes.c_void_p, "encoding changed restype"
print("ok")
"""


def test_codec_neither_reads_nor_sets_process_wide_ctypes_state() -> None:
    """In a fresh interpreter where another library set ``ctypes.pythonapi.PyUnicode_New.restype``, importing
    the codec leaves it as it was and an envelope still round-trips (before: the import overwrote it, and a
    restype set afterwards broke encoding)."""
    done = subprocess.run(
        [sys.executable, "-c", _FOREIGN_RESTYPE], capture_output=True, text=True, timeout=120, check=False
    )
    assert (done.returncode, done.stdout.strip()) == (0, "ok"), done.stderr[-2000:]


@pytest.mark.parametrize(
    ("header", "data", "cls", "fragment"),
    [
        (
            "nrlre1:int8:1x1x2:",
            [1, 2],
            ContractTypeError,
            "data must be a numpy.ndarray of uint8 bytes, got list",
        ),
        ("nrlre1:int8:1x1x2:", np.zeros(2, np.int16), EnvelopeError, "got dtype int16, shape (2,)"),
        ("nrlre1:int8:1x1x2:", np.zeros((1, 2), np.uint8), EnvelopeError, "got dtype uint8, shape (1, 2)"),
        ("nrlre1:int8:1x1x2:", np.zeros(4, np.uint8)[::2], EnvelopeError, "C-contiguous False"),
        (b"nrlre1:", np.zeros(2, np.uint8), ContractTypeError, "header must be an ASCII str, got bytes"),
        ("nrlre1:\u00e9:", np.zeros(2, np.uint8), EnvelopeError, "must be ASCII"),
    ],
    ids=["list", "int16", "two_d", "strided", "bytes_header", "non_ascii_header"],
)
def test_base64_encode_checks_its_input(header: Any, data: Any, cls: type[Exception], fragment: str) -> None:
    """The internal encoder takes only an ASCII str header and C-contiguous 1-D uint8 bytes; anything else is a
    ContractTypeError or an EnvelopeError (before: it trusted its input, and read memory by its byte count)."""
    with pytest.raises(cls) as info:
        _base64.encode(header, data)
    assert fragment in str(info.value)
    assert_contract_error(info.value)


@pytest.mark.parametrize("backend_name", ["pybase64", "base64"])
def test_base64_encode_of_contiguous_bytes_matches_the_standard_library(backend_name: str) -> None:
    """Encoding any bytes (every length mod 3, all byte values) gives the header plus the stdlib's base64."""
    backends = {backend.name: backend for backend in _base64.BACKENDS}
    if backend_name not in backends:
        pytest.skip(f"{backend_name} is not installed")
    saved = _base64.BACKEND
    _base64.BACKEND = backends[backend_name]
    try:
        for size in (0, 1, 2, 3, 766, 767, 768):
            raw = (bytes(range(256)) * 3)[:size]
            text = _base64.encode("h:", np.frombuffer(raw, np.uint8))
            assert text == "h:" + base64.b64encode(raw).decode("ascii")
            assert bytes(_base64.decode(text, 2).numpy()) == raw
    finally:
        _base64.BACKEND = saved


def test_a_str_subclass_envelope_decodes_like_its_text(base64_backend: str) -> None:
    """An envelope held in a str subclass decodes to the same tensor as the plain str."""

    class Text(str):
        pass

    envelope = encode_routed_experts(torch.tensor([[[3, -1]], [[7, 8]]], dtype=torch.int16))
    assert torch.equal(
        decode_routed_experts(Text(envelope), torch.int16), decode_routed_experts(envelope, torch.int16)
    )


@pytest.mark.parametrize("chunk", [4, 8, 12, 1 << 20])
def test_chunked_decoding_round_trips_and_stays_strict(
    chunk: int, base64_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Decoding a chunk at a time gives the bytes of a whole-text decode for every length, and still rejects
    padding that ends an inner chunk, a bad character in a later chunk and a non-canonical final character."""
    monkeypatch.setattr(_base64, "CHUNK_CHARS", chunk)
    for size in range(0, 40):
        raw = bytes(range(7, 7 + size))
        text = "nrlre1:" + base64.b64encode(raw).decode("ascii")
        assert bytes(_base64.decode(text, 7).numpy()) == raw
        _base64.validate(text, 7)
    inner_padding = "QQ==" + "QUJD" * 3  # "A" then "ABC"x3: padding where only the end may have it
    bad_late = "QUJD" * 3 + "QU*D"
    non_canonical = "QUJD" * 3 + "QR=="
    for body in (inner_padding, bad_late, non_canonical):
        for call in (_base64.decode, _base64.validate):
            with pytest.raises(_base64.InvalidBase64):
                call("h:" + body, 2)


def test_decoding_a_long_envelope_crosses_chunks(
    base64_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An envelope spanning dozens of decoding chunks round-trips (its tensor equals the encoded one)."""
    monkeypatch.setattr(_base64, "CHUNK_CHARS", 4096)
    tensor = torch.arange(-1, 2**15 - 1, dtype=torch.int16).reshape(2**13, 2, 2).repeat(4, 1, 1)
    envelope = encode_routed_experts(tensor)
    assert len(envelope) > 40 * 4096
    assert torch.equal(decode_routed_experts(envelope, torch.int16), tensor)
