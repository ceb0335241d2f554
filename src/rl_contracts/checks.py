"""Small argument checks shared by every module: ints that are never bools, bools, token-id sequences.

"Int" means a Python ``int`` or an integer scalar with ``__index__`` (``numpy.int64``), never a ``bool``
(SPEC §0.3, §0.6).  Each check raises :class:`~rl_contracts.errors.ContractTypeError` naming the argument, the
expected type and the actual type.  This module imports neither torch nor vLLM.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import BeforeValidator

from ._messages import render_name, type_name
from .errors import ContractTypeError

__all__ = [
    "ContractInt",
    "array_dims",
    "as_int",
    "describe_array",
    "int_or_none",
    "is_int",
    "require_bool",
    "require_int",
    "token_ids",
]

_BOOL_TYPE_NAMES = frozenset({"bool", "bool_"})  # numpy.bool_ is no bool subclass but may have __index__


def int_or_none(value: object) -> int | None:
    """``value`` as a plain ``int`` when it is an int in the library's sense, else ``None``.

    Calls ``__index__`` once, so a check followed by a conversion costs one call, not two.  ``None`` for
    bools (``numpy.bool_`` included), floats, strings and objects whose ``__index__`` raises ``TypeError``
    (such as a multi-element array).
    """
    if type(value).__name__ in _BOOL_TYPE_NAMES or not hasattr(type(value), "__index__"):
        return None
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        return None


def is_int(value: object) -> bool:
    """Whether ``value`` is an int in the library's sense: ``__index__`` works on it and it is not a bool."""
    return int_or_none(value) is not None


def as_int(value: object) -> int:
    """Pydantic before-validator behind :data:`ContractInt`: accept ints and ``__index__`` objects, never bools.

    Raises ``ValueError`` (reported by pydantic inside a ``ValidationError``).
    """
    index = int_or_none(value)
    if index is None:
        raise ValueError(f"expected an int (not bool, float or str), got {type_name(value)}")
    return index


ContractInt = Annotated[int, BeforeValidator(as_int)]
"""The one int type of every model field (SPEC §0.6)."""


def require_int(value: object, argument: str) -> int:
    """Return ``value`` as a plain ``int`` or raise ``ContractTypeError`` naming ``argument``."""
    index = int_or_none(value)
    if index is None:
        raise ContractTypeError.for_value(argument, "an int (not bool)", value)
    return index


def require_bool(value: object, argument: str) -> bool:
    """Return ``value`` when it is a ``bool``, else raise ``ContractTypeError`` naming ``argument``."""
    if not isinstance(value, bool):
        raise ContractTypeError.for_value(argument, "a bool", value)
    return value


def _unreadable(value: object) -> str | None:
    """Why ``tolist()`` cannot read a tensor's values (meta device, sparse or other layout), or ``None``."""
    if getattr(value, "is_meta", None) is True:
        return "on the meta device"
    layout = render_name(getattr(value, "layout", None))
    if (
        layout.startswith("torch.") and layout != "torch.strided"
    ):  # only torch's layouts: other libraries differ
        return f"with layout {layout}"
    return None


def _is_array_like(value: object) -> bool:
    return not isinstance(value, Sequence) and callable(getattr(value, "tolist", None))


def array_dims(value: object) -> tuple[int, str] | None:
    """``(ndim, dtype name)`` of a numpy array or a torch tensor whose values ``tolist()`` reads, else ``None``.

    Found by duck typing (``tolist``, ``dtype``, and ``ndim`` or ``dim()``), so torch is never imported; the
    dtype name drops torch's ``"torch."`` prefix (``"int64"``, ``"uint8"``).  ``None`` for sequences, other
    objects, and tensors on the meta device or with a sparse layout (:func:`describe_array` says why).
    """
    if not _is_array_like(value) or _unreadable(value) is not None:
        return None
    dtype = getattr(value, "dtype", None)
    ndim: Any = getattr(value, "ndim", None)
    if ndim is None and callable(getattr(value, "dim", None)):
        ndim = value.dim()  # type: ignore[attr-defined]
    dims = int_or_none(ndim)
    if dtype is None or dims is None:
        return None
    return dims, render_name(dtype).removeprefix("torch.")


def describe_array(value: object) -> str:
    """``value``'s type name for a message, plus an array's dtype and dimensions or why they cannot be read."""
    reason = _unreadable(value) if _is_array_like(value) else None
    if reason is not None:
        return f"{type_name(value)} {reason}"
    dims = array_dims(value)
    return (
        type_name(value)
        if dims is None
        else f"{type_name(value)} with dtype {dims[1]} and {dims[0]} dimensions"
    )


def _array_to_list(value: Any, argument: str) -> list[int] | None:
    """Convert a 1-D integer numpy array or torch tensor by duck typing; ``None`` when ``value`` is neither."""
    if not _is_array_like(value):
        return None
    dims = array_dims(value)
    if dims is None or dims[0] != 1 or not dims[1].startswith(("int", "uint")):
        raise ContractTypeError.for_value(
            argument, "a 1-D integer sequence", value, actual=describe_array(value)
        )
    result: list[int] = value.tolist()
    return result


def token_ids(value: object, argument: str) -> list[int]:
    """Return ``value`` as a new ``list`` of plain ints, or raise ``ContractTypeError`` naming ``argument``.

    Accepts a list, tuple or other ``Sequence`` of ints, and 1-D integer numpy arrays and torch tensors (by duck
    typing, without importing torch).  Rejects ``str``/``bytes``, bools, floats and nested sequences.  The type
    check runs in C (``set(map(type, ...))``) so a long prompt costs no per-token Python bytecode.
    """
    from_array = _array_to_list(value, argument)
    if from_array is not None:
        return from_array
    if isinstance(value, str | bytes | bytearray) or not isinstance(value, Sequence):
        raise ContractTypeError.for_value(argument, "a sequence of ints", value)
    items = list(value)
    if {int}.issuperset(map(type, items)):
        return items
    return [require_int(item, f"{argument}[{index}]") for index, item in enumerate(items)]
