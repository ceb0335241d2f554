"""Strict base64 for the routed-experts payloads, and envelope text built and read in place (internal).

Public names of a private module, used by :mod:`rl_contracts.codec`.

Base64 is strict (RFC 4648 alphabet, ``=`` padding only at the end, canonical final character) and uses
``pybase64`` (SIMD) when it is importable, else the standard library; both give identical results.

An envelope of a long sequence is tens of megabytes, so copying it once more costs as much as the base64 itself.
On CPython the text is therefore written straight into a new ``str`` (``PyUnicode_New``, filled before any other
code sees it) and read straight from the payload ``str``'s own characters, with no intermediate copy of the whole
text.  This relies on CPython's compact-ASCII layout (the characters follow the object header); it is verified
once at import and, when reading, on every call against the envelope header, and any other interpreter or layout
uses the portable path (one extra copy).  This module imports torch and numpy.
"""

from __future__ import annotations

import base64
import binascii
import ctypes
import functools
import sys
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

__all__ = [
    "BACKEND",
    "BACKENDS",
    "CHUNK_BYTES",
    "CHUNK_CHARS",
    "IN_PLACE_TEXT",
    "STDLIB_BACKEND",
    "Backend",
    "InvalidBase64",
    "decode",
    "decoded_size",
    "encode",
    "validate",
]

# Encoding works in chunks of 384 KiB of data (512 KiB of text), which stay in the CPU cache.  A multiple of 3, so
# the chunks' base64 concatenates to the base64 of the whole.
CHUNK_BYTES = 3 * 2**17
CHUNK_CHARS = CHUNK_BYTES // 3 * 4
# The last character before the padding must have its unused low bits clear (canonical base64).
_CANONICAL_BEFORE_PADDING = {1: frozenset("AEIMQUYcgkosw048"), 2: frozenset("AQgw")}
_BASE64_ERRORS = (binascii.Error, ValueError, TypeError)


class InvalidBase64(Exception):
    """The text is not strict base64 (internal; the codec turns it into an ``EnvelopeError``)."""


@dataclass(frozen=True)
class Backend:
    """One strict base64 implementation."""

    name: str
    encode: Callable[[memoryview], bytes]
    """Bytes-like data to base64 bytes."""
    encode_text: Callable[[memoryview], str]
    """Bytes-like data to a base64 ``str``."""
    decode: Callable[[object], bytearray]
    """A ``str`` or bytes-like text to a new ``bytearray``; raises ``binascii.Error``/``ValueError`` when invalid."""


def _stdlib_decode(text: object) -> bytearray:
    return bytearray(base64.b64decode(text, validate=True))  # type: ignore[arg-type]


STDLIB_BACKEND = Backend(
    "base64", base64.b64encode, lambda data: base64.b64encode(data).decode("ascii"), _stdlib_decode
)
try:
    import pybase64

    _PYBASE64: Backend | None = Backend(
        "pybase64",
        pybase64.b64encode,
        pybase64.b64encode_as_string,
        functools.partial(pybase64.b64decode_as_bytearray, validate=True),
    )
except ImportError:  # pragma: no cover - pybase64 is a declared dependency
    _PYBASE64 = None
BACKENDS: tuple[Backend, ...] = (*([_PYBASE64] if _PYBASE64 else []), STDLIB_BACKEND)
"""The available implementations, the preferred first."""
BACKEND: Backend = BACKENDS[0]
"""The implementation in use: pybase64 when importable (measured several times faster), else the stdlib."""


def _characters(text: str) -> int:
    """Address of the first character of a compact ASCII ``str`` on CPython (where the header is followed by them)."""
    return id(text) + sys.getsizeof(text) - len(text) - 1


def _new_text(size: int) -> tuple[str, int]:
    """A new ASCII ``str`` of ``size`` (> 1) unset characters, and the address of its first character."""
    text: str = _PYUNICODE_NEW(size, 127)
    return text, _characters(text)


def _probe_in_place_text() -> bool:
    """Whether ``str`` objects can be built and read in place here (CPython compact-ASCII layout), by trying it."""
    try:
        expected = "".join(map(chr, range(48, 112)))
        text, address = _new_text(len(expected))
        ctypes.memmove(address, expected.encode("ascii"), len(expected))
        return (
            text == expected
            and hash(text) == hash(expected)
            and ctypes.string_at(_characters(expected), len(expected)) == expected.encode("ascii")
        )
    except Exception:
        return False


try:
    _PYUNICODE_NEW = ctypes.pythonapi.PyUnicode_New
    _PYUNICODE_NEW.restype = ctypes.py_object
    _PYUNICODE_NEW.argtypes = (ctypes.c_ssize_t, ctypes.c_uint32)
    IN_PLACE_TEXT: bool = sys.implementation.name == "cpython" and _probe_in_place_text()
except (AttributeError, OSError):  # pragma: no cover - an interpreter without ctypes.pythonapi
    IN_PLACE_TEXT = False
"""Whether envelope text is built and read in place (CPython), else through one extra copy."""


def encode(header: str, data: np.ndarray) -> str:
    """Return ``header`` (ASCII) followed by the base64 of ``data`` (1-D uint8), built as one new ``str``."""
    backend = BACKEND
    size = len(header) + (data.size + 2) // 3 * 4
    if not IN_PLACE_TEXT or data.size <= CHUNK_BYTES:
        return header + backend.encode_text(data.data)
    text, address = _new_text(size)
    head = header.encode("ascii")
    ctypes.memmove(address, head, len(head))
    position = address + len(head)
    view = data.data
    for offset in range(0, data.size, CHUNK_BYTES):
        chunk = backend.encode(view[offset : offset + CHUNK_BYTES])
        ctypes.memmove(position, chunk, len(chunk))
        position += len(chunk)
    return text


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


def _body(text: str, start: int) -> memoryview | None:
    """``text[start:]`` as a read-only byte view of ``text``'s own characters, or ``None`` where that is not known
    to be safe (not CPython, a ``str`` subclass, non-ASCII text, or characters not found where expected).

    The view is valid while ``text`` is alive; the caller holds it.
    """
    if not IN_PLACE_TEXT or type(text) is not str or not text.isascii():
        return None
    address = _characters(text)
    if ctypes.string_at(address, start) != text[:start].encode("ascii"):
        return None
    return memoryview((ctypes.c_char * (len(text) - start)).from_address(address + start)).cast("B")


def decode(text: str, start: int, size: int) -> torch.Tensor:
    """Strictly decode ``text[start:]``, whose :func:`decoded_size` is ``size``, to a new writable uint8 tensor.

    Raises ``InvalidBase64`` on any invalid character or misplaced padding.
    """
    body = _body(text, start)
    if body is None:
        out = torch.empty(size, dtype=torch.uint8)
        _decode_pieces(text, start, memoryview(out.numpy().data))
        return out
    try:
        raw = BACKEND.decode(body)
    except _BASE64_ERRORS:
        raise InvalidBase64 from None
    return torch.frombuffer(raw, dtype=torch.uint8) if raw else torch.empty(0, dtype=torch.uint8)


def validate(text: str, start: int) -> None:
    """Raise ``InvalidBase64`` unless ``text[start:]`` is strict base64 (its decoded bytes are discarded)."""
    body = _body(text, start)
    if body is None:
        _decode_pieces(text, start, None)
        return
    try:
        BACKEND.decode(body)
    except _BASE64_ERRORS:
        raise InvalidBase64 from None


def _decode_pieces(text: str, start: int, target: memoryview | None) -> None:
    """The portable path: decode ``text[start:]`` chunk by chunk into ``target`` (or only validate)."""
    position = 0
    end = len(text)
    for offset in range(start, end, CHUNK_CHARS):
        piece = text[offset : offset + CHUNK_CHARS]
        if offset + CHUNK_CHARS < end and piece.endswith("="):
            raise InvalidBase64  # padding before the last chunk
        try:
            raw = BACKEND.decode(piece)
        except _BASE64_ERRORS:
            raise InvalidBase64 from None
        if target is not None:
            target[position : position + len(raw)] = raw
        position += len(raw)
