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

from .errors import ContractTypeError, render_name, type_name

__all__ = [
    "ContractInt",
    "as_int",
    "is_int",
    "require_bool",
    "require_int",
    "token_ids",
]

_BOOL_TYPE_NAMES = frozenset({"bool", "bool_"})  # numpy.bool_ is no bool subclass but may have __index__


def _index(value: object) -> int | None:
    """``operator.index(value)`` for non-bool ints; ``None`` for anything else (multi-element arrays included)."""
    if type(value).__name__ in _BOOL_TYPE_NAMES or not hasattr(type(value), "__index__"):
        return None
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        return None


def is_int(value: object) -> bool:
    """Whether ``value`` is an int in the library's sense: ``__index__`` works on it and it is not a bool."""
    return _index(value) is not None


def as_int(value: object) -> int:
    """Pydantic before-validator behind :data:`ContractInt`: accept ints and ``__index__`` objects, never bools.

    Raises ``ValueError`` (reported by pydantic inside a ``ValidationError``).
    """
    index = _index(value)
    if index is None:
        raise ValueError(f"expected an int (not bool, float or str), got {type_name(value)}")
    return index


ContractInt = Annotated[int, BeforeValidator(as_int)]
"""The one int type of every model field (SPEC §0.6)."""


def require_int(value: object, argument: str) -> int:
    """Return ``value`` as a plain ``int`` or raise ``ContractTypeError`` naming ``argument``."""
    index = _index(value)
    if index is None:
        raise ContractTypeError.for_value(argument, "an int (not bool)", value)
    return index


def require_bool(value: object, argument: str) -> bool:
    """Return ``value`` when it is a ``bool``, else raise ``ContractTypeError`` naming ``argument``."""
    if not isinstance(value, bool):
        raise ContractTypeError.for_value(argument, "a bool", value)
    return value


def _array_to_list(value: Any, argument: str) -> list[int] | None:
    """Convert a 1-D integer numpy array or torch tensor by duck typing; ``None`` when ``value`` is neither."""
    if isinstance(value, Sequence) or not callable(getattr(value, "tolist", None)):
        return None
    dtype_name = render_name(getattr(value, "dtype", None)).removeprefix("torch.")
    ndim = getattr(value, "ndim", None)
    if not dtype_name.startswith(("int", "uint")) or ndim != 1:
        shown = f"{type_name(value)} with dtype {dtype_name} and {ndim} dimensions"
        raise ContractTypeError.for_value(argument, "a 1-D integer sequence", value, actual=shown)
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
    if set(map(type, items)) <= {int}:
        return items
    return [require_int(item, f"{argument}[{index}]") for index, item in enumerate(items)]
