"""Strict base64 for the routed-experts payloads, and envelope text built and read in place (internal).

Public names of a private module, used by :mod:`rl_contracts.codec`.

Base64 is strict (RFC 4648 alphabet, ``=`` padding only at the end, canonical final character) and uses
``pybase64`` (SIMD) when it is importable, else the standard library; both give identical results.

An envelope of a long sequence is tens of megabytes, so copying it once more costs as much as the base64 itself.
On CPython with pybase64 the text is therefore encoded straight into a new ``str``: ``PyUnicode_New`` allocates
it, the header is copied in, and libbase64's ``base64_encode`` (exported by pybase64's extension) writes the base64
right after it, before any other code sees the string.  Decoding reads the payload ``str``'s own characters
through a byte view.  Both rely on CPython's compact-ASCII layout (the characters follow the object header) and are
verified once at import (and, when reading, against the envelope header on every call); any other interpreter,
layout or pybase64 build uses the portable path, which makes one extra copy of the text.  This module imports
torch and numpy.
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
    "IN_PLACE_TEXT",
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


class InvalidBase64(Exception):
    """The text is not strict base64 (internal; the codec turns it into an ``EnvelopeError``)."""


EncodeInto = Callable[[int, int, int], int]
"""``(source address, byte count, destination address) -> characters written``: base64 into caller memory."""


@dataclass(frozen=True)
class Backend:
    """One strict base64 implementation."""

    name: str
    encode_text: Callable[[memoryview], str]
    """Bytes-like data to a new base64 ``str``."""
    decode: Callable[[object], bytearray]
    """A ``str`` or bytes-like text to a new ``bytearray``; raises ``binascii.Error``/``ValueError`` when invalid."""
    encode_into: EncodeInto | None = None
    """Base64 straight into memory the caller owns, where the implementation offers it."""


def _stdlib_decode(text: object) -> bytearray:
    return bytearray(base64.b64decode(text, validate=True))  # type: ignore[arg-type]


def _libbase64_encode_into(extension_path: str) -> EncodeInto | None:
    """libbase64's ``base64_encode`` from pybase64's extension module, checked on a probe, or ``None``."""
    try:
        function = ctypes.CDLL(extension_path).base64_encode
    except (OSError, AttributeError):
        return None
    function.restype = None
    function.argtypes = (
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_void_p,
        ctypes.POINTER(ctypes.c_size_t),
        ctypes.c_int,
    )

    def encode_into(source: int, count: int, destination: int) -> int:
        written = ctypes.c_size_t(0)
        function(source, count, destination, ctypes.byref(written), 0)  # flags 0: the CPU's fastest codec
        return written.value

    probe = bytes(range(256)) * 3 + b"\x00\xff"
    source = ctypes.create_string_buffer(probe, len(probe))
    target = ctypes.create_string_buffer((len(probe) + 2) // 3 * 4)
    written = encode_into(ctypes.addressof(source), len(probe), ctypes.addressof(target))
    return encode_into if target.raw[:written] == base64.b64encode(probe) == target.raw else None


STDLIB_BACKEND = Backend("base64", lambda data: base64.b64encode(data).decode("ascii"), _stdlib_decode)
try:
    import pybase64
    import pybase64._pybase64

    _PYBASE64: Backend | None = Backend(
        "pybase64",
        pybase64.b64encode_as_string,
        functools.partial(pybase64.b64decode_as_bytearray, validate=True),
        _libbase64_encode_into(pybase64._pybase64.__file__),
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
    """Return ``header`` (ASCII, at least 2 characters) followed by the base64 of ``data`` (C-contiguous 1-D uint8).

    Encoded straight into the new ``str`` where :data:`IN_PLACE_TEXT` and the backend allow it; else the header and
    the backend's text are concatenated.
    """
    backend = BACKEND
    if not IN_PLACE_TEXT or backend.encode_into is None or data.size == 0:
        return header + backend.encode_text(data.data)
    head = header.encode("ascii")
    characters = (data.size + 2) // 3 * 4
    text, address = _new_text(len(head) + characters)
    ctypes.memmove(address, head, len(head))
    written = backend.encode_into(data.ctypes.data, data.size, address + len(head))
    if written != characters:  # pragma: no cover - libbase64 always writes exactly this many
        raise RuntimeError(f"base64_encode wrote {written} characters, expected {characters}")
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


def _body(text: str, start: int) -> memoryview | str:
    """``text[start:]``: a read-only byte view of ``text``'s own characters where that is known to be safe
    (CPython, an exact ASCII ``str`` whose characters are where expected), else a copy.

    The view is valid while ``text`` is alive; the caller holds it.
    """
    if IN_PLACE_TEXT and type(text) is str and text.isascii():
        address = _characters(text)
        if ctypes.string_at(address, start) == text[:start].encode("ascii"):
            return memoryview((ctypes.c_char * (len(text) - start)).from_address(address + start)).cast("B")
    return text[start:]


def _decoded(text: str, start: int) -> bytearray:
    try:
        return BACKEND.decode(_body(text, start))
    except _BASE64_ERRORS:
        raise InvalidBase64 from None


def decode(text: str, start: int) -> torch.Tensor:
    """Strictly decode ``text[start:]`` to a new writable uint8 tensor; ``InvalidBase64`` when it is invalid."""
    raw = _decoded(text, start)
    return torch.frombuffer(raw, dtype=torch.uint8) if raw else torch.empty(0, dtype=torch.uint8)


def validate(text: str, start: int) -> None:
    """Raise ``InvalidBase64`` unless ``text[start:]`` is strict base64 (its decoded bytes are discarded)."""
    _decoded(text, start)
