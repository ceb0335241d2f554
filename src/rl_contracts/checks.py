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


def is_int(value: object) -> bool:
    """Whether ``value`` is an int in the library's sense: has ``__index__`` and is not a bool."""
    if isinstance(value, bool) or type(value).__name__ in ("bool", "bool_"):  # numpy.bool_ is no bool subclass
        return False
    if isinstance(value, int):
        return True
    if isinstance(value, float | str | bytes):
        return False
    return hasattr(type(value), "__index__")


def as_int(value: object) -> int:
    """Pydantic before-validator behind :data:`ContractInt`: accept ints and ``__index__`` objects, never bools.

    Raises ``ValueError`` (reported by pydantic inside a ``ValidationError``).
    """
    if not is_int(value):
        raise ValueError(f"expected an int (not bool, float or str), got {type_name(value)}")
    return operator.index(value)  # type: ignore[arg-type]


ContractInt = Annotated[int, BeforeValidator(as_int)]
"""The one int type of every model field (SPEC §0.6)."""


def require_int(value: object, argument: str) -> int:
    """Return ``value`` as a plain ``int`` or raise ``ContractTypeError`` naming ``argument``."""
    if not is_int(value):
        raise ContractTypeError(
            f"{argument} must be an int (not bool), got {type_name(value)}",
            argument=argument,
            expected="int",
            actual=type_name(value),
        )
    return operator.index(value)  # type: ignore[arg-type]


def require_bool(value: object, argument: str) -> bool:
    """Return ``value`` when it is a ``bool``, else raise ``ContractTypeError`` naming ``argument``."""
    if not isinstance(value, bool):
        raise ContractTypeError(
            f"{argument} must be a bool, got {type_name(value)}",
            argument=argument,
            expected="bool",
            actual=type_name(value),
        )
    return value


def _array_to_list(value: Any, argument: str) -> list[int] | None:
    """Convert a 1-D integer numpy array or torch tensor by duck typing; ``None`` when ``value`` is neither."""
    tolist = getattr(value, "tolist", None)
    dtype = getattr(value, "dtype", None)
    if not callable(tolist) or dtype is None or isinstance(value, Sequence):
        return None
    ndim = getattr(value, "ndim", None)
    dtype_name = render_name(dtype).removeprefix("torch.")
    if not (dtype_name.startswith(("int", "uint")) and ndim == 1):
        raise ContractTypeError(
            f"{argument} must be a 1-D integer sequence, got {type_name(value)} with dtype {dtype_name} "
            f"and {ndim} dimensions",
            argument=argument,
            expected="1-D integer sequence",
            actual=f"{type_name(value)}[{dtype_name}]",
        )
    result = tolist()
    return result if isinstance(result, list) else None


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
        raise ContractTypeError(
            f"{argument} must be a sequence of ints, got {type_name(value)}",
            argument=argument,
            expected="Sequence[int]",
            actual=type_name(value),
        )
    items = list(value)
    kinds = set(map(type, items))
    if kinds <= {int}:
        return items
    for index, item in enumerate(items):
        if not is_int(item):
            raise ContractTypeError(
                f"{argument}[{index}] must be an int (not bool), got {type_name(item)}",
                argument=argument,
                expected="int",
                actual=type_name(item),
            )
    return [operator.index(item) for item in items]
