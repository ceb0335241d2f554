"""The argument checks shared by every module, one function per check (SPEC §0.3, §0.6).

"Int" means a Python ``int`` or an integer scalar with ``__index__`` (``numpy.int64``, a 0-d integer array or
tensor), never a ``bool``, a bool array or a float array.  A *collection* is an iterable container other than a
``str``/``bytes``/``bytearray`` and other than a 0-d array or tensor (which has ``__iter__`` but cannot be
iterated).  Each ``require_*`` check returns the checked value or raises
:class:`~rl_contracts.errors.ContractTypeError` naming the argument, what it must be (the fix) and what it is
(the type, plus dtype and dimensions for an array); the ``is_*`` predicates serve callers that raise their own
section's error.  Arrays and tensors are recognised by duck typing, so this module imports neither numpy, torch nor
vLLM (SPEC §0.2: ``rl_contracts.config`` imports it and must stay free of numpy).
"""

from __future__ import annotations

import operator
import sys
from collections.abc import Iterable, Sequence
from typing import Annotated, Any, TypeGuard

from pydantic import BeforeValidator

from ._messages import render_name, type_name
from .errors import ContractTypeError

__all__ = [
    "ContractInt",
    "array_dims",
    "as_int",
    "describe_array",
    "int_or_none",
    "is_collection",
    "is_int",
    "is_sequence",
    "is_text",
    "require_bool",
    "require_collection",
    "require_int",
    "require_sequence",
    "token_ids",
]

_BOOL_TYPE_NAMES = frozenset({"bool", "bool_"})  # numpy.bool_ is no bool subclass but may have __index__
_INTEGER_DTYPES = ("int", "uint")  # dtype-name prefixes of numpy's and torch's integer dtypes


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


def _ndim(value: object) -> int | None:
    """The rank of an array or tensor (``ndim``, else ``dim()``), by duck typing; ``None`` when it has neither."""
    ndim: Any = getattr(value, "ndim", None)
    if ndim is None and callable(getattr(value, "dim", None)):
        ndim = value.dim()  # type: ignore[attr-defined]
    return int_or_none(ndim)  # a numpy int count is fine; this recursion ends at its plain-int ndim


def array_dims(value: object) -> tuple[int, str] | None:
    """``(ndim, dtype name)`` of a numpy array or a torch tensor whose values ``tolist()`` reads, else ``None``.

    Found by duck typing (``tolist``, ``dtype``, and ``ndim`` or ``dim()``), so torch is never imported; the
    dtype name drops torch's ``"torch."`` prefix (``"int64"``, ``"uint8"``).  Numpy scalars count as 0-d
    arrays.  ``None`` for sequences, other objects, and tensors on the meta device or with a sparse layout
    (:func:`describe_array` says why).
    """
    if not _is_array_like(value) or _unreadable(value) is not None:
        return None
    dtype = getattr(value, "dtype", None)
    dims = _ndim(value)
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


def _is_numpy_scalar(value: object) -> bool:
    """Whether ``value`` is a numpy scalar (``numpy.generic``), without importing numpy: none can exist before
    numpy is imported, so an unimported numpy means no."""
    numpy = sys.modules.get("numpy")
    generic = getattr(numpy, "generic", None)
    return isinstance(generic, type) and isinstance(value, generic)


def _actual(value: object) -> str:
    """What a check reports it got: the type name, plus dtype and dimensions for an array or tensor (not for a
    numpy scalar such as ``float64``, whose type name says it all)."""
    return type_name(value) if _is_numpy_scalar(value) else describe_array(value)


def int_or_none(value: object) -> int | None:
    """``value`` as a plain ``int`` when it is an int in the library's sense, else ``None``.

    Calls ``__index__`` once, so a check followed by a conversion costs one call, not two.  ``None`` for
    bools (``numpy.bool_`` and bool tensors included), floats, strings, arrays and tensors that are not 0-d
    integer ones (torch would index a one-element tensor), and objects whose ``__index__`` raises
    ``TypeError``.
    """
    cls = type(value)
    if cls is int:
        return value  # type: ignore[return-value]
    if cls.__name__ in _BOOL_TYPE_NAMES or not hasattr(cls, "__index__"):
        return None
    if _is_array_like(value):
        dims = array_dims(value)
        if dims is None or dims[0] != 0 or not dims[1].startswith(_INTEGER_DTYPES):
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
        raise ValueError(f"expected an int (not bool, float or str), got {_actual(value)}")
    return index


ContractInt = Annotated[int, BeforeValidator(as_int)]
"""The one int type of every model field (SPEC §0.6)."""


def is_text(value: object) -> bool:
    """Whether ``value`` is text (``str``, ``bytes`` or ``bytearray``): iterable, but never a collection of items."""
    return isinstance(value, str | bytes | bytearray)


def is_sequence(value: object) -> TypeGuard[Sequence[Any]]:
    """Whether ``value`` is a ``Sequence`` other than text (a list, a tuple, a ``range``...)."""
    return isinstance(value, Sequence) and not is_text(value)


def is_collection(value: object) -> TypeGuard[Iterable[Any]]:
    """Whether ``value`` is an iterable container: not text, and not a 0-d array or tensor (iterating one fails).

    Mappings, sets, views, iterators and 1-D or wider arrays are collections.
    """
    return isinstance(value, Iterable) and not is_text(value) and _ndim(value) != 0


def require_int(value: object, argument: str) -> int:
    """Return ``value`` as a plain ``int`` or raise ``ContractTypeError`` naming ``argument``."""
    index = int_or_none(value)
    if index is None:
        raise ContractTypeError.for_value(argument, "an int (not bool)", value, actual=_actual(value))
    return index


def require_bool(value: object, argument: str) -> bool:
    """Return ``value`` when it is a ``bool``, else raise ``ContractTypeError`` naming ``argument``."""
    if not isinstance(value, bool):
        raise ContractTypeError.for_value(argument, "a bool", value, actual=_actual(value))
    return value


def require_sequence(value: object, argument: str, expected: str) -> Sequence[Any]:
    """Return ``value`` when :func:`is_sequence` holds, else raise ``ContractTypeError`` "{argument} must be
    {expected}, got {type}"; ``expected`` says what to pass (e.g. ``"a sequence of choices"``)."""
    if not is_sequence(value):
        raise ContractTypeError.for_value(argument, expected, value, actual=_actual(value))
    return value


def require_collection(value: object, argument: str, expected: str) -> list[Any]:
    """Return the items of ``value`` as a new list when :func:`is_collection` holds, else raise
    ``ContractTypeError`` "{argument} must be {expected}, got {type}" (a 0-d array names its dtype and 0
    dimensions).  Iterates ``value`` once, so iterators work."""
    if not is_collection(value):
        raise ContractTypeError.for_value(argument, expected, value, actual=_actual(value))
    return list(value)


def _array_to_list(value: Any, argument: str) -> list[int] | None:
    """Convert a 1-D integer numpy array or torch tensor by duck typing; ``None`` when ``value`` is neither."""
    if not _is_array_like(value):
        return None
    dims = array_dims(value)
    if dims is None or dims[0] != 1 or not dims[1].startswith(_INTEGER_DTYPES):
        raise ContractTypeError.for_value(
            argument, "a 1-D integer sequence", value, actual=describe_array(value)
        )
    result = value.tolist()
    if isinstance(result, list) and {int}.issuperset(map(type, result)):
        return result
    # an ndarray subclass whose tolist() is not flat ints (a masked array gives None for a masked id)
    odd = next((i for i in result if type(i) is not int), None) if isinstance(result, list) else result
    raise ContractTypeError.for_value(
        argument,
        "a 1-D integer sequence whose tolist() gives ints",
        value,
        actual=f"{describe_array(value)} whose tolist() holds {type_name(odd)}",
    )


def token_ids(value: object, argument: str) -> list[int]:
    """Return ``value`` as a new ``list`` of plain ints, or raise ``ContractTypeError`` naming ``argument``.

    Accepts a list, tuple or other ``Sequence`` of ints, and 1-D integer numpy arrays and torch tensors (by duck
    typing, without importing torch).  Rejects text, bools and bool arrays, floats, 0-d and 2-D arrays (an
    ``np.matrix`` row is 2-D), nested sequences and arrays whose ``tolist()`` is not flat ints.  The type check
    runs in C (``set(map(type, ...))``) so a long prompt costs no per-token Python bytecode.
    """
    from_array = _array_to_list(value, argument)
    if from_array is not None:
        return from_array
    items = list(require_sequence(value, argument, "a sequence of ints"))
    if {int}.issuperset(map(type, items)):
        return items
    return [require_int(item, f"{argument}[{index}]") for index, item in enumerate(items)]
