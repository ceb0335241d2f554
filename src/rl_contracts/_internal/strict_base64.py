"""Strict base64 for the routed-experts payloads, through public library APIs only (internal).

Public names of a private module, used by :mod:`rl_contracts.codec`.

Base64 is strict (RFC 4648 alphabet, ``=`` padding only at the end, canonical final character) and uses
``pybase64`` (SIMD) when it is importable, else the standard library; both give identical results.  Only their
public functions are called (``pybase64.b64encode_as_string`` and ``pybase64.b64decode_as_bytearray``, or
``base64.b64encode``/``b64decode``): this module reads and writes no interpreter memory of its own (no
``ctypes``), so it cannot corrupt a ``str`` or misread one, whatever the interpreter, its string layout or the
pybase64 build.

The price is one copy of the text each way.  Encoding concatenates the header with the backend's new base64
``str``.  Decoding slices the base64 off the envelope a chunk at a time (:data:`CHUNK_CHARS`, small enough to
stay in the CPU's caches) and copies each chunk's bytes into one preallocated array, so it allocates no second
envelope-sized buffer.  Measured against the bare pybase64 calls in ``benchmarks/bench_routing.py`` (README,
"Performance").  This module imports torch and numpy.
"""

from __future__ import annotations

import base64
import binascii
import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..errors import ContractTypeError, EnvelopeError
from .messages import render, render_name, type_name
from .optional_torch import torch

__all__ = [
    "BACKEND",
    "BACKENDS",
    "CHUNK_CHARS",
    "STDLIB_BACKEND",
    "Backend",
    "InvalidBase64",
    "decode",
    "decoded_size",
    "encode",
    "validate",
]

# The last character before the padding must have its unused low bits clear (canonical base64).
_CANONICAL_BEFORE_PADDING = {1: frozenset("AEIMQUYcgkosw048"), 2: frozenset("AQgw")}
_BASE64_ERRORS = (binascii.Error, ValueError, TypeError)
CHUNK_CHARS = 1 << 20
"""Base64 characters decoded per backend call (a multiple of 4): a slice this size stays in the CPU's caches."""


class InvalidBase64(Exception):
    """The text is not strict base64 (internal; the codec turns it into an ``EnvelopeError``)."""


@dataclass(frozen=True)
class Backend:
    """One strict base64 implementation, through its public API."""

    name: str
    encode_text: Callable[[memoryview], str]
    """Bytes-like data to a new base64 ``str``."""
    decode: Callable[[object], bytearray]
    """A ``str`` or bytes-like text to a new ``bytearray``; raises ``binascii.Error``/``ValueError`` when invalid."""


def _stdlib_decode(text: object) -> bytearray:
    return bytearray(base64.b64decode(text, validate=True))  # type: ignore[arg-type]


STDLIB_BACKEND = Backend("base64", lambda data: base64.b64encode(data).decode("ascii"), _stdlib_decode)
try:
    import pybase64

    _PYBASE64: Backend | None = Backend(
        "pybase64",
        pybase64.b64encode_as_string,
        functools.partial(pybase64.b64decode_as_bytearray, validate=True),
    )
except ImportError:  # pragma: no cover - pybase64 is a declared dependency
    _PYBASE64 = None
BACKENDS: tuple[Backend, ...] = (*([_PYBASE64] if _PYBASE64 else []), STDLIB_BACKEND)
"""The available implementations, the preferred first."""
BACKEND: Backend = BACKENDS[0]
"""The implementation in use: pybase64 when importable (measured several times faster), else the stdlib."""


def _check_encode_input(header: object, data: object) -> None:
    """Raise unless ``header`` is an ASCII ``str`` and ``data`` a C-contiguous 1-D uint8 numpy array."""
    if not isinstance(header, str):
        raise ContractTypeError.for_value("header", "an ASCII str", header)
    if not header.isascii():
        raise EnvelopeError(
            f"routed_experts envelope header '{render_name(header)}' must be ASCII.", field="prefix"
        )
    if not isinstance(data, np.ndarray):
        raise ContractTypeError.for_value("data", "a numpy.ndarray of uint8 bytes", data)
    if data.dtype != np.uint8 or data.ndim != 1 or not data.flags.c_contiguous:
        raise EnvelopeError(
            "routed_experts envelope bytes must be a C-contiguous 1-D uint8 array, got dtype "
            f"{render_name(data.dtype)}, shape {render(tuple(data.shape))}, C-contiguous "
            f"{render(bool(data.flags.c_contiguous))} ({type_name(data)}).",
            field="payload",
        )


def encode(header: str, data: np.ndarray) -> str:
    """Return ``header`` (ASCII) followed by the base64 of ``data`` (a C-contiguous 1-D uint8 array).

    The backend encodes ``data`` into a new ``str`` and the header is concatenated with it (one copy of the
    text).

    Raises:
        ContractTypeError: ``header`` is no ``str`` or ``data`` no numpy array.
        EnvelopeError: ``header`` is not ASCII (``.field == "prefix"``), or ``data`` is not uint8, not 1-D or
            not C-contiguous (``"payload"``).
    """
    _check_encode_input(header, data)
    return header + BACKEND.encode_text(data.data)


def decoded_size(text: str, start: int) -> int:
    """Byte count that ``text[start:]`` decodes to, from its length and padding alone (O(1)).

    Raises ``InvalidBase64`` for a length that is not a multiple of 4, more than two ``=``, or a non-canonical
    final character (non-zero unused bits), which the decoders would otherwise accept.
    """
    size = len(text) - start
    if size % 4:
        raise InvalidBase64
    if size == 0:
        return 0
    padding = 2 if text.endswith("==") else 1 if text.endswith("=") else 0
    if padding and (text[-padding - 1] not in _CANONICAL_BEFORE_PADDING[padding]):
        raise InvalidBase64  # also rejects a third '=' (not in either set)
    return size // 4 * 3 - padding


def _decode_chunks(text: str, start: int, out: np.ndarray | None) -> None:
    """Strictly decode ``text[start:]`` (a length multiple of 4) chunk by chunk, into ``out`` (1-D uint8 of exactly
    the decoded size) or discarding the bytes; ``InvalidBase64`` when it is invalid.

    Each chunk is a multiple of 4 characters, so a chunk decodes on its own; one that is not the last must decode to
    its full ``3/4`` of bytes, which rejects padding anywhere but at the end.
    """
    end = len(text)
    offset = 0
    try:
        for first in range(start, end, CHUNK_CHARS):
            last = min(first + CHUNK_CHARS, end)
            piece = BACKEND.decode(text[first:last])
            size = len(piece)
            if last < end and size != (last - first) // 4 * 3:
                raise InvalidBase64  # padding before the end of the text
            if out is not None:
                if offset + size > out.size:
                    raise InvalidBase64
                out[offset : offset + size] = np.frombuffer(piece, np.uint8)
            offset += size
    except _BASE64_ERRORS:
        raise InvalidBase64 from None
    if out is not None and offset != out.size:
        raise InvalidBase64


def decode(text: str, start: int) -> torch.Tensor:
    """Strictly decode ``text[start:]`` to a new writable uint8 tensor; ``InvalidBase64`` when it is invalid.

    The bytes are written chunk by chunk into one new array of the size :func:`decoded_size` gives, so no copy of
    the whole text is made.
    """
    out = np.empty(decoded_size(text, start), np.uint8)
    _decode_chunks(text, start, out)
    return torch.from_numpy(out) if out.size else torch.empty(0, dtype=torch.uint8)


def validate(text: str, start: int) -> None:
    """Raise ``InvalidBase64`` unless ``text[start:]`` is strict base64 (decoded a chunk at a time, discarded)."""
    decoded_size(text, start)
    _decode_chunks(text, start, None)
