"""Property tests of rl_contracts.codec: SPEC §7 invariants 1, 15 and 16 (pybase64 and the stdlib),
and the integrity metadata of §3.4."""

from __future__ import annotations

import base64
import functools
import io
import re
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from rl_contracts._internal import strict_base64 as _base64
from rl_contracts.codec import (
    decode_routed_experts,
    decode_vllm_routed_experts,
    encode_routed_experts,
    routed_experts_tensor_metadata,
    verify_routed_experts_tensor_metadata,
)
from rl_contracts.errors import ContractError, EnvelopeError
from rl_contracts.routed_experts import ROUTED_EXPERTS_DTYPE_NAMES
from rl_contracts.testing import assert_contract_error
from rl_contracts.testing.strategies import envelope_tensors, hostile_route_values, vllm_npy_arrays

ENVELOPE = re.compile(r"^nrlre1:(int8|int16|int32):[0-9]+x[0-9]+x[0-9]+:[A-Za-z0-9+/]*={0,2}$")
WIDER = {torch.int8: [torch.int16, torch.int32, torch.int64], torch.int16: [torch.int32, torch.int64]}
WIDER[torch.int32] = [torch.int64]
ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
T = TypeVar("T")


def with_each_backend(function: Callable[[], T]) -> list[T]:
    """Run ``function`` once per base64 implementation (pybase64, stdlib)."""
    saved = _base64.BACKEND
    results = []
    try:
        for backend in _base64.BACKENDS:
            _base64.BACKEND = backend
            results.append(function())
    finally:
        _base64.BACKEND = saved
    return results


def body_start(envelope: str) -> int:
    """Index of the first base64 character of an envelope."""
    return envelope.index(":", envelope.index(":", envelope.index(":") + 1) + 1) + 1


def rejection_field(envelope: str, dtype: torch.dtype) -> str | None:
    """The ``field`` of the EnvelopeError that decoding ``envelope`` raises (the test fails if none is raised)."""
    with pytest.raises(EnvelopeError) as caught:
        decode_routed_experts(envelope, dtype)
    return caught.value.field


@given(tensor=envelope_tensors())
def test_roundtrip(tensor: torch.Tensor) -> None:
    """Invariant 15: decode(encode(t)) equals t, wider decodes equal the cast, the envelope matches the regex."""
    for envelope in with_each_backend(lambda: encode_routed_experts(tensor)):
        assert ENVELOPE.fullmatch(envelope)
        for decoded in with_each_backend(functools.partial(decode_routed_experts, envelope, tensor.dtype)):
            assert decoded.dtype is tensor.dtype
            assert decoded.shape == tensor.shape
            assert torch.equal(decoded, tensor)
        for wider in WIDER[tensor.dtype]:
            assert torch.equal(decode_routed_experts(envelope, wider), tensor.to(wider))


@given(tensor=envelope_tensors())
def test_encoding_is_deterministic_and_little_endian(tensor: torch.Tensor) -> None:
    """Invariant 15: encoding is deterministic (either backend, any layout) and the payload bytes are little-endian."""
    envelopes = with_each_backend(lambda: encode_routed_experts(tensor))
    envelopes.append(encode_routed_experts(tensor.clone().transpose(0, 2).contiguous().transpose(0, 2)))
    assert len(set(envelopes)) == 1
    envelope = envelopes[0]
    little_endian = tensor.numpy().astype(tensor.numpy().dtype.newbyteorder("<")).tobytes()
    assert base64.b64decode(envelope[body_start(envelope) :], validate=True) == little_endian
    size, layers, topk = tensor.shape
    assert envelope.startswith(f"nrlre1:{ROUTED_EXPERTS_DTYPE_NAMES[tensor.dtype]}:{size}x{layers}x{topk}:")


@given(tensor=envelope_tensors(), data=st.data())
def test_shape_tampering_is_rejected(tensor: torch.Tensor, data: st.DataObject) -> None:
    """Invariant 16: a declared shape whose S*L*K*itemsize differs from the payload size raises EnvelopeError."""
    envelope = encode_routed_experts(tensor)
    dims = st.integers(0, 40)
    shape = data.draw(st.tuples(dims, dims, dims).filter(lambda s: s[0] * s[1] * s[2] != tensor.numel()))
    name = ROUTED_EXPERTS_DTYPE_NAMES[tensor.dtype]
    tampered = f"nrlre1:{name}:{shape[0]}x{shape[1]}x{shape[2]}:" + envelope[body_start(envelope) :]
    assert set(with_each_backend(lambda: rejection_field(tampered, tensor.dtype))) == {"length"}


@given(tensor=envelope_tensors(), data=st.data())
def test_group_tampering_is_rejected(tensor: torch.Tensor, data: st.DataObject) -> None:
    """Invariant 16: adding or removing any whole 4-character base64 group raises EnvelopeError."""
    envelope = encode_routed_experts(tensor)
    start = body_start(envelope)
    groups = (len(envelope) - start) // 4
    if groups and data.draw(st.booleans(), label="remove"):
        index = data.draw(st.integers(0, groups - 1), label="group")
        tampered = envelope[: start + 4 * index] + envelope[start + 4 * index + 4 :]
    else:
        index = data.draw(st.integers(0, groups), label="position")
        group = data.draw(st.text(ALPHABET, min_size=4, max_size=4), label="group")
        tampered = envelope[: start + 4 * index] + group + envelope[start + 4 * index :]
    assert set(with_each_backend(lambda: rejection_field(tampered, tensor.dtype))) <= {"length", "payload"}


@given(first=envelope_tensors(), second=envelope_tensors(), data=st.data())
def test_metadata_is_equal_exactly_for_equal_tensors(
    first: torch.Tensor, second: torch.Tensor, data: st.DataObject
) -> None:
    """Metadata are equal exactly when dtype, shape and values are; a changed value fails verification."""
    if data.draw(st.booleans(), label="same"):
        second = first.clone()
    same = first.dtype == second.dtype and first.shape == second.shape and torch.equal(first, second)
    assert (routed_experts_tensor_metadata(first) == routed_experts_tensor_metadata(second)) == same
    verify_routed_experts_tensor_metadata(first, routed_experts_tensor_metadata(first.clone()))
    if first.numel():
        changed = first.clone().view(-1)
        index = data.draw(st.integers(0, changed.numel() - 1), label="index")
        changed[index] = 0 if int(changed[index]) != 0 else 1
        with pytest.raises(EnvelopeError) as caught:
            verify_routed_experts_tensor_metadata(
                changed.view(first.shape), routed_experts_tensor_metadata(first)
            )
        assert caught.value.field == "value"


def npy_base64(array: np.ndarray) -> str:
    """Base64 of the ``numpy.save`` bytes of ``array`` (what vLLM's server sends)."""
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


@given(
    array=vllm_npy_arrays(),
    dtype=st.sampled_from([torch.int8, torch.int16, torch.int32]),
    start=st.integers(0, 5),
)
def test_vllm_payload_roundtrip(array: np.ndarray, dtype: torch.dtype, start: int) -> None:
    """§3.4.1: any saved integer array decodes to its values when they fit, else raises the 'value' error."""
    payload = npy_base64(array)
    fits = array.size == 0 or (int(array.min()) >= -1 and int(array.max()) <= torch.iinfo(dtype).max)
    if fits:
        routes, returned = decode_vllm_routed_experts(payload, dtype=dtype, prompt_start=start)
        assert returned == start
        assert routes.dtype is dtype
        np.testing.assert_array_equal(routes.numpy(), array)
    else:
        with pytest.raises(EnvelopeError) as caught:
            decode_vllm_routed_experts(payload, dtype=dtype, prompt_start=start)
        assert caught.value.field == "value"


def check_contract_error(error: ContractError) -> None:
    """Invariant 1 for one raised error: a ValueError/TypeError, bounded, unchanged by pickle."""
    assert isinstance(error, ValueError | TypeError)
    assert_contract_error(error)


@st.composite
def mutated_envelopes(draw: st.DrawFn) -> str:
    """A valid envelope with a few characters replaced, inserted or deleted anywhere (header included)."""
    text = encode_routed_experts(draw(envelope_tensors()))
    for _ in range(draw(st.integers(1, 3))):
        position = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["replace", "insert", "delete"]))
        character = draw(st.sampled_from([*ALPHABET[:8], "=", ":", "x", "-", " ", "\n", "\u00e9", "9"]))
        if action == "insert":
            text = text[:position] + character + text[position:]
        elif action == "replace":
            text = text[:position] + character + text[position + 1 :]
        else:
            text = text[:position] + text[position + 1 :]
    return text


dtypes = st.one_of(
    st.sampled_from([torch.int8, torch.int16, torch.int32, torch.int64]),
    st.sampled_from([torch.float32, torch.uint8, "int16", None]),
)


@given(payload=st.one_of(st.text(max_size=40), mutated_envelopes(), hostile_route_values()), dtype=dtypes)
def test_hostile_envelopes_only_raise_contract_errors(payload: object, dtype: Any) -> None:
    """Invariant 1: any payload and requested dtype raise only bounded, picklable ContractErrors."""

    def decode() -> None:
        try:
            decode_routed_experts(payload, dtype)
        except ContractError as error:
            check_contract_error(error)

    with_each_backend(decode)


@st.composite
def mutated_npy_payloads(draw: st.DrawFn) -> str:
    """Base64 of ``numpy.save`` bytes with a few bytes flipped, truncated or extended anywhere."""
    buffer = io.BytesIO()
    np.save(buffer, draw(vllm_npy_arrays()))
    raw = bytearray(buffer.getvalue())
    for _ in range(draw(st.integers(1, 3))):
        action = draw(st.sampled_from(["flip", "truncate", "extend"]))
        if action == "flip" and raw:
            raw[draw(st.integers(0, len(raw) - 1))] ^= draw(st.integers(1, 255))
        elif action == "truncate":
            del raw[draw(st.integers(0, len(raw))) :]
        else:
            raw += draw(st.binary(min_size=1, max_size=8))
    return base64.b64encode(bytes(raw)).decode("ascii")


@given(
    payload=st.one_of(mutated_npy_payloads(), st.text(max_size=30)),
    dtype=dtypes,
    start=hostile_route_values(),
)
def test_hostile_vllm_payloads_only_raise_contract_errors(payload: str, dtype: Any, start: Any) -> None:
    """Invariant 1: corrupted .npy payloads, any dtype and any prompt_start raise only ContractErrors."""
    for prompt_start in (0, start):
        try:
            decode_vllm_routed_experts(payload, dtype=dtype, prompt_start=prompt_start)
        except ContractError as error:
            check_contract_error(error)


@given(value=st.one_of(hostile_route_values(), envelope_tensors().map(lambda t: t.to(torch.int64))))
def test_hostile_tensors_to_encode_only_raise_contract_errors(value: Any) -> None:
    """Invariant 1: encoding anything that is not a 3-D int8/int16/int32 tensor raises only ContractErrors."""
    try:
        encode_routed_experts(value)
    except ContractError as error:
        check_contract_error(error)


def _strict_reference(body: str) -> bytes | None:
    """The bytes of ``body`` under strict base64 (RFC 4648 alphabet, end padding, canonical), else ``None``."""
    try:
        raw = base64.b64decode(body, validate=True)
    except (ValueError, TypeError):
        return None
    return raw if base64.b64encode(raw).decode("ascii") == body else None


@given(
    raw=st.binary(max_size=64),
    chunk=st.integers(1, 8).map(lambda groups: 4 * groups),
    edit=st.one_of(
        st.none(), st.tuples(st.integers(0, 100), st.sampled_from([*ALPHABET[:4], "=", "==", "*", "\n"]))
    ),
)
def test_chunked_decoding_accepts_exactly_strict_base64(raw: bytes, chunk: int, edit: Any) -> None:
    """For any text (a valid body, or one with a character replaced), decoding a chunk at a time with any chunk
    size accepts it exactly when strict base64 does, and then gives the same bytes, with either backend."""
    body = base64.b64encode(raw).decode("ascii")
    if edit is not None and body:
        position, replacement = edit[0] % len(body), edit[1]
        body = body[:position] + replacement + body[position + len(replacement) :]
    expected = _strict_reference(body)
    saved = _base64.CHUNK_CHARS
    try:
        _base64.CHUNK_CHARS = chunk

        def decoded() -> bytes | None:
            try:
                _base64.decoded_size("h:" + body, 2)
                _base64.validate("h:" + body, 2)
                return bytes(_base64.decode("h:" + body, 2).numpy())
            except _base64.InvalidBase64:
                return None

        assert with_each_backend(decoded) == [expected] * len(_base64.BACKENDS)
    finally:
        _base64.CHUNK_CHARS = saved
