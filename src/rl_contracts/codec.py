"""Routed-experts wire formats: the ``nrlre1`` envelope, vLLM's base64 ``.npy`` payload, and the integrity metadata
of a tensor sent through a transfer store (SPEC §3.4, §3.4.1).

The envelope ``nrlre1:<dtype>:<S>x<L>x<K>:<base64>`` carries a route tensor through JSON as one string: standard
base64 of the C-contiguous little-endian element bytes, on any host.  Nested JSON lists of the same routes cost
about a second of CPU per hop; the envelope costs milliseconds.

Base64 is strict (RFC 4648 alphabet, ``=`` padding only at the end, canonical final character) and SIMD-fast
through ``pybase64`` when it is importable, called through its public API only (:mod:`rl_contracts._internal.strict_base64`:
no ``ctypes``, no write into interpreter memory; one copy of the text each way).  Decoding never allocates more
than the payload itself implies: declared shapes are checked against the payload length before any buffer of
that size exists.

This module imports torch and numpy when it is imported, and never imports vLLM.
"""

from __future__ import annotations

import binascii
import hashlib
import io
import sys
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.lib import format as npy_format

from ._internal import strict_base64
from ._internal.messages import render, render_name, type_name
from ._internal.optional_torch import torch
from ._internal.routes import (
    CARRY_DTYPE_NAMES,
    ENVIRONMENT_ERRORS,
    WIRE_DTYPE_NAMES,
    holds_values,
    nested_ids,
    non_negative,
)
from .checks import int_or_none
from .errors import ContractTypeError, EnvelopeError

__all__ = [
    "decode_routed_experts",
    "decode_vllm_routed_experts",
    "encode_routed_experts",
    "routed_experts_tensor_metadata",
    "verify_routed_experts_tensor_metadata",
]

_PREFIX = "nrlre1"
_WIRE_DTYPES: dict[str, tuple[torch.dtype, np.dtype[np.signedinteger]]] = {
    "int8": (torch.int8, np.dtype("<i1")),
    "int16": (torch.int16, np.dtype("<i2")),
    "int32": (torch.int32, np.dtype("<i4")),
}
_MAX_ELEMENTS = 2**63 - 1  # torch's stride arithmetic is int64
_MAX_DIMENSION_DIGITS = 19
_NPY_HEADER_MAX = 16 + 10_000  # magic + length field + numpy's own default max_header_size
_BIG_ENDIAN_HOST = sys.byteorder == "big"
_MISSING = object()


def encode_routed_experts(t: torch.Tensor) -> str:
    """Encode a ``[S, L, K]`` int8/int16/int32 tensor as the envelope ``nrlre1:<dtype>:<S>x<L>x<K>:<base64>``.

    The tensor is detached, moved to the CPU, made contiguous and encoded in its own dtype (no cast), as
    little-endian bytes on every host.  Encoding is deterministic; empty tensors are allowed.

    Raises:
        ContractTypeError: ``t`` is not a tensor.
        EnvelopeError: ``t`` is not 3-D (``.field == "shape"``), its dtype is not int8/int16/int32
            (``"dtype"``), or it is not a dense tensor with values (``"payload"``: sparse, nested or meta).

    >>> encode_routed_experts(torch.tensor([[[3, -1]]], dtype=torch.int16))
    'nrlre1:int16:1x1x2:AwD//w=='
    """
    name, data = _wire_bytes(t, "encoded")
    size, layers, topk = t.shape
    return strict_base64.encode(f"{_PREFIX}:{name}:{size}x{layers}x{topk}:", data)


def _wire_bytes(t: object, purpose: str) -> tuple[str, np.ndarray]:
    """The wire dtype name of ``t`` and its C-contiguous little-endian element bytes (1-D uint8), after the
    checks of §3.4 ``encode_routed_experts`` steps 1-3; ``purpose`` completes "must be a torch.Tensor to be ..."."""
    if not isinstance(t, torch.Tensor):
        raise ContractTypeError(
            f"routed_experts must be a torch.Tensor to be {purpose}, got {type_name(t)}",
            argument="t",
            expected="torch.Tensor",
            actual=type_name(t),
        )
    if t.dim() != 3:
        raise EnvelopeError(
            f"routed_experts must have shape [tokens, num_moe_layers, topk], got {render(tuple(t.shape))}.",
            field="shape",
        )
    name = WIRE_DTYPE_NAMES.get(t.dtype)
    if name is None:
        raise EnvelopeError(
            f"Unsupported routed_experts dtype {render_name(t.dtype)}; expected one of ['int16', 'int32', 'int8'].",
            field="dtype",
        )
    if not holds_values(t):
        raise EnvelopeError(
            f"routed_experts must be a dense tensor with values to be {purpose}, got layout {t.layout} on device "
            f"{render_name(t.device)}.",
            field="payload",
        )
    array = t.detach().cpu().contiguous().numpy()
    if _BIG_ENDIAN_HOST:
        array = array.astype(array.dtype.newbyteorder("<"))
    return name, array.ravel().view(np.uint8)


def routed_experts_tensor_metadata(t: torch.Tensor) -> dict[str, Any]:
    """Return the integrity record of a route tensor: ``{"dtype": name, "shape": [S, L, K], "sha256": hex}``.

    The record travels beside a tensor that goes through a transfer store (Ray's object store, a queue) and is
    rebuilt on the far side; check it there with :func:`verify_routed_experts_tensor_metadata`.  The digest is
    SHA-256 over the bytes the envelope would carry (C-contiguous, little-endian, on any host), so two tensors have
    equal metadata exactly when they have equal dtype, shape and values, whatever their strides or device.

    Raises:
        ContractTypeError: ``t`` is not a tensor.
        EnvelopeError: ``t`` is not 3-D (``.field == "shape"``), its dtype is not int8/int16/int32 (``"dtype"``),
            or it holds no readable values (``"payload"``: sparse, nested or meta).

    >>> routed_experts_tensor_metadata(torch.tensor([[[1, -1]]], dtype=torch.int8))["shape"]
    [1, 1, 2]
    """
    name, data = _wire_bytes(t, "described")
    return {
        "dtype": name,
        "shape": [int(size) for size in t.shape],
        "sha256": hashlib.sha256(data.data).hexdigest(),
    }


def verify_routed_experts_tensor_metadata(t: torch.Tensor, metadata: Mapping[str, Any]) -> None:
    """Raise unless ``t`` matches ``metadata`` from :func:`routed_experts_tensor_metadata` of the original tensor.

    The parts are compared in the order dtype, shape, values (the digest), and the first differing part is named.
    Fail-closed reading: a ``metadata`` entry that is missing or of the wrong type (a ``dtype`` that is not a
    ``str``, a ``shape`` that is not a list or tuple of ints, a ``sha256`` that is not a ``str``) differs.  Ints
    are ints by SPEC §0.3: ``numpy`` integers count, but a bool or a float dimension (``[2, True, 2]``,
    ``[2.0, 1, 2]``) differs even where it compares equal to the tensor's size.

    Raises:
        ContractTypeError: ``t`` is not a tensor, or ``metadata`` is not a mapping.
        EnvelopeError: ``t`` fails the checks of :func:`routed_experts_tensor_metadata`, or differs from
            ``metadata`` (``.field`` ``"dtype"``, ``"shape"`` or ``"value"``).
    """
    if not isinstance(metadata, Mapping):
        raise ContractTypeError.for_value(
            "metadata", "a mapping from routed_experts_tensor_metadata", metadata
        )
    actual = routed_experts_tensor_metadata(t)
    for key, field in (("dtype", "dtype"), ("shape", "shape"), ("sha256", "value")):
        recorded = metadata.get(key, _MISSING)
        expected = recorded
        if key == "shape":  # a list or tuple of ints (never bools or floats, SPEC §0.3), compared as a list
            sizes = [int_or_none(size) for size in recorded] if isinstance(recorded, list | tuple) else [None]
            expected = sizes if None not in sizes else _MISSING
        if expected is _MISSING or expected != actual[key] or type(expected) is not type(actual[key]):
            shown = "no entry" if recorded is _MISSING else render(recorded)
            raise EnvelopeError(
                f"routed_experts tensor does not match its metadata: {key} is {render(actual[key])}, the "
                f"metadata's {key} is {shown}; the tensor changed in transfer, or the metadata belongs to "
                "another tensor.",
                field=field,
            )


def _decode_dtype(dtype: object) -> torch.dtype:
    if isinstance(dtype, torch.dtype) and dtype in CARRY_DTYPE_NAMES:
        return dtype
    raise EnvelopeError(f"Unsupported routed_experts dtype {render_name(dtype)}.", field="dtype")


def _first_out_of_range(array: np.ndarray, low: int, high: int) -> int | None:
    """The first value of ``array`` in C order outside ``[low, high]``, or ``None``; skipped when the dtype proves it."""
    if array.size == 0:
        return None
    if array.dtype.kind != "O":  # an object array holds exact Python ints of no fixed range
        info = np.iinfo(array.dtype)
        if int(info.min) >= low and int(info.max) <= high:
            return None
    if int(array.min()) >= low and int(array.max()) <= high:
        return None
    outside = (array < low) | (array > high)
    return int(np.asarray(array).flat[int(np.argmax(outside))])


def _to_tensor(array: np.ndarray, dtype: torch.dtype) -> torch.Tensor:
    """A new writable CPU tensor in ``dtype`` holding ``array``'s logical values (any order, any byte order)."""
    result = torch.empty(array.shape, dtype=dtype)
    if array.size:
        np.copyto(result.numpy(), array, casting="unsafe")
    return result


def _legacy_array(payload: object) -> np.ndarray | str:
    """Convert a legacy payload to a numpy array, or return the ``{found}`` text of the conversion failure.

    Nested lists keep ids numpy cannot hold in one integer dtype exact (an object array of ints), so the first
    out-of-range value is reported as it is, not as the float64 numpy would promote it to.
    """
    if isinstance(payload, torch.Tensor) and not holds_values(payload):
        return f"type {type_name(payload)}"
    try:
        if isinstance(payload, torch.Tensor):
            return payload.detach().cpu().numpy()
        if not isinstance(payload, list | tuple):
            array = np.asarray(payload)
            return f"type {type_name(payload)}" if array.dtype.kind == "O" else array
        array, holds_bool = nested_ids(payload)
    except ENVIRONMENT_ERRORS:
        raise
    except (TypeError, ValueError, RuntimeError, OverflowError, IndexError):
        return f"type {type_name(payload)}"
    return "dtype bool" if holds_bool else array


def _decode_legacy(payload: object, dtype: torch.dtype) -> torch.Tensor:
    """Decode the legacy nested-list (or array) form: a 3-D integer array with values in ``[-1, max]``."""
    limit = int(torch.iinfo(dtype).max)

    def reject(found: str, field: str) -> EnvelopeError:
        return EnvelopeError(
            "legacy routed_experts payload must be a 3-dimensional integer array with values in "
            f"[-1, {limit}], got {found}.",
            field=field,
        )

    converted = _legacy_array(payload)
    if isinstance(converted, str):
        raise reject(converted, "dtype" if converted.startswith("dtype") else "payload")
    kind = converted.dtype.kind
    if converted.size and kind in ("b", "f", "c"):
        raise reject(f"dtype {render_name(converted.dtype)}", "dtype")
    if converted.size and kind not in ("i", "u", "O"):  # "O": exact ints from nested_ids
        raise reject(f"type {type_name(payload)}", "payload")
    if converted.ndim != 3:
        raise reject(f"shape {render(tuple(converted.shape))}", "shape")
    bad = _first_out_of_range(converted, -1, limit)
    if bad is not None:
        raise reject(f"value {render(bad)}", "value")
    return _to_tensor(converted, dtype)


def _invalid_envelope() -> EnvelopeError:
    return EnvelopeError(
        "routed_experts string payload is not a valid 'nrlre1:<dtype>:<SxLxK>:<base64>' envelope.",
        field="prefix",
    )


def _envelope_shape(text: str) -> tuple[int, int, int]:
    parts = text.split("x")
    if len(parts) != 3:
        raise EnvelopeError(
            f"routed_experts envelope shape '{render_name(text)}' is not 3-dimensional.", field="shape"
        )
    if not all(part.isascii() and part.isdigit() for part in parts):
        raise EnvelopeError(
            f"routed_experts envelope shape '{render_name(text)}' has a non-integer or negative dimension.",
            field="shape",
        )
    if any(len(part.lstrip("0")) > _MAX_DIMENSION_DIGITS for part in parts):
        raise EnvelopeError(
            f"routed_experts envelope shape '{render_name(text)}' is too large.", field="shape"
        )
    size, layers, topk = (int(part) for part in parts)
    if max(size, 1) * max(layers, 1) * max(topk, 1) > _MAX_ELEMENTS:
        raise EnvelopeError(
            f"routed_experts envelope shape '{render_name(text)}' is too large.", field="shape"
        )
    return size, layers, topk


def decode_routed_experts(payload: str | object, dtype: torch.dtype) -> torch.Tensor:
    """Decode a routed-experts envelope (or a legacy nested list) to a new writable CPU tensor in ``dtype``.

    A string must be ``nrlre1:<int8|int16|int32>:<S>x<L>x<K>:<base64>`` whose strict base64 holds exactly
    ``S*L*K`` little-endian values of the wire dtype; they are returned with shape ``(S, L, K)``.  When ``dtype`` is
    narrower than the wire dtype every value must fit it.  Any non-string payload is the legacy nested-list form
    and must be a 3-D integer array (no bools, no floats) with values in ``[-1, iinfo(dtype).max]``.

    Raises:
        EnvelopeError: ``dtype`` is not int8/int16/int32/int64 (``.field == "dtype"``); a bad prefix or part count
            (``"prefix"``); an unknown wire dtype (``"dtype"``); a shape that is not 3 unsigned decimal integers
            (``"shape"``); invalid base64 (``"payload"``); a byte count other than ``S*L*K*itemsize``
            (``"length"``); a value that does not fit ``dtype`` (``"value"``); a malformed legacy payload (field of
            the failing check).

    Divergence: the reference uses native byte order, checks no shape on legacy payloads, lets ``int()`` and base64
    errors escape and wraps silently on a narrowing cast.

    >>> decode_routed_experts("nrlre1:int8:3x1x2:AAH//wUC", torch.int32).tolist()
    [[[0, 1]], [[-1, -1]], [[5, 2]]]
    """
    target = _decode_dtype(dtype)
    if not isinstance(payload, str):
        return _decode_legacy(payload, target)
    # Equivalent to payload.split(":", 3) without copying the (possibly very long) base64 body.
    if not payload.startswith(_PREFIX + ":"):
        raise _invalid_envelope()
    dtype_end = payload.find(":", len(_PREFIX) + 1)
    shape_end = payload.find(":", dtype_end + 1) if dtype_end >= 0 else -1
    if shape_end < 0:
        raise _invalid_envelope()
    wire_name = payload[len(_PREFIX) + 1 : dtype_end]
    wire = _WIRE_DTYPES.get(wire_name)
    if wire is None:
        raise EnvelopeError(f"Unsupported routed_experts dtype '{render_name(wire_name)}'.", field="dtype")
    wire_dtype, wire_numpy = wire
    shape = _envelope_shape(payload[dtype_end + 1 : shape_end])
    body = shape_end + 1
    invalid_base64 = EnvelopeError("routed_experts envelope payload is not valid base64.", field="payload")
    try:
        size = strict_base64.decoded_size(payload, body)
        count = shape[0] * shape[1] * shape[2]
        if size != count * wire_numpy.itemsize:
            strict_base64.validate(payload, body)  # an invalid payload is reported as such, before its length
            raise EnvelopeError(
                f"routed_experts envelope has {size // wire_numpy.itemsize} elements, expected {count} for shape "
                f"{render(shape)}.",
                field="length",
            )
        raw = strict_base64.decode(payload, body)
    except strict_base64.InvalidBase64:
        raise invalid_base64 from None
    if count == 0:
        return torch.empty(shape, dtype=target)
    values = raw.numpy().view(wire_numpy).reshape(shape)
    if target.itemsize < wire_numpy.itemsize:
        info = torch.iinfo(target)
        bad = _first_out_of_range(values, int(info.min), int(info.max))
        if bad is not None:
            raise EnvelopeError(
                f"routed_experts envelope value {render(bad)} does not fit the requested dtype {target}",
                field="value",
            )
    if target == wire_dtype and not _BIG_ENDIAN_HOST:
        return raw.view(wire_dtype).reshape(shape)
    return _to_tensor(values, target)


def _npy_error(message: str, field: str) -> EnvelopeError:
    return EnvelopeError(f"vLLM routed_experts payload {message}", field=field)


def decode_vllm_routed_experts(
    payload: str, *, dtype: torch.dtype, prompt_start: int = 0
) -> tuple[torch.Tensor, int]:
    """Decode vLLM's own ``choices[i].routed_experts`` (base64 of ``.npy`` bytes) to ``(routes, prompt_start)``.

    The routes are a new CPU tensor in ``dtype`` with vLLM's shape ``(rows, L, K)``, where ``rows = prompt +
    generated - 1 - prompt_start``; pass the returned ``prompt_start`` on as ``routes_start``
    (:func:`~rl_contracts.routed_experts.pad_and_align_routed_expert_indices`).  The ``.npy`` header is read
    first with ``numpy.lib.format`` and checked (integer dtype, 3-D shape, exact data length) before the data is
    read with ``allow_pickle=False``; Fortran-order arrays are accepted.  Every id must be ``<=
    iinfo(dtype).max``, and a signed source must have no id below -1.

    Raises:
        ContractTypeError: ``payload`` is not a string, or ``prompt_start`` is not an int.
        RoutedExpertsError: ``prompt_start`` is negative.
        EnvelopeError: ``dtype`` is not int8/int16/int32/int64 (``.field == "dtype"``); invalid base64 or not a
            ``.npy`` file (``"payload"``); an object (pickled), bool, float or other non-integer array
            (``"dtype"``); a shape that is not 3-D (``"shape"``); a data length that disagrees with the header
            (``"length"``); an id that does not fit (``"value"``).
    """
    target = _decode_dtype(dtype)
    start = non_negative(prompt_start, "prompt_start", "routes_start")
    if not isinstance(payload, str):
        raise ContractTypeError(
            f"vLLM routed_experts payload must be a base64 string, got {type_name(payload)}",
            argument="payload",
            expected="str",
            actual=type_name(payload),
        )
    try:
        strict_base64.decoded_size(payload, 0)
        raw = strict_base64.BACKEND.decode(payload)
    except (strict_base64.InvalidBase64, binascii.Error, ValueError, TypeError):
        raise _npy_error("is not valid base64.", "payload") from None
    header = io.BytesIO(raw[:_NPY_HEADER_MAX])
    try:
        version = npy_format.read_magic(header)
        if version == (1, 0):
            shape, _, numpy_dtype = npy_format.read_array_header_1_0(header)
        elif version == (2, 0):
            shape, _, numpy_dtype = npy_format.read_array_header_2_0(header)
        else:
            raise ValueError(f"unsupported .npy format version {version}")
    except ENVIRONMENT_ERRORS:
        raise
    except Exception as exc:  # numpy parses an untrusted header: any parse failure is a bad payload
        raise _npy_error(f"is not a valid .npy file: {render_name(exc)}", "payload") from None
    if numpy_dtype.hasobject:
        raise _npy_error(
            f"holds a pickled object array (dtype {render_name(numpy_dtype)}); pickles are never loaded.",
            "dtype",
        )
    if numpy_dtype.kind not in ("i", "u"):
        raise _npy_error(f"must hold integer expert ids, got dtype {render_name(numpy_dtype)}.", "dtype")
    if len(shape) != 3 or any(size < 0 for size in shape):
        raise _npy_error(f"must have shape [tokens, num_moe_layers, topk], got {render(shape)}.", "shape")
    expected = shape[0] * shape[1] * shape[2] * numpy_dtype.itemsize
    available = len(raw) - header.tell()
    if available != expected:
        raise _npy_error(
            f"has {available} data bytes, expected {expected} for shape {render(shape)} and dtype "
            f"{render_name(numpy_dtype)}.",
            "length",
        )
    try:
        array = npy_format.read_array(io.BytesIO(raw), allow_pickle=False)
    except ENVIRONMENT_ERRORS:
        raise
    except Exception as exc:  # e.g. an empty array with a dimension beyond int64, which the header allows
        raise _npy_error(f"is not a valid .npy file: {render_name(exc)}", "payload") from None
    info = torch.iinfo(target)
    bad = _first_out_of_range(array, -1, int(info.max))
    if bad is not None:
        raise EnvelopeError(
            f"routed_experts envelope value {render(bad)} does not fit the requested dtype {target}",
            field="value",
        )
    return _to_tensor(array, target), start
