"""The argument-check kit: one function per check, so that a function's argument checks read as one line each
(SPEC §0.3, §0.6).

"Int" means a Python ``int`` or an integer scalar with ``__index__`` (``numpy.int64``, a 0-d integer array or
tensor), never a ``bool``, a bool array or a float array.  A *collection* is an iterable container other than a
``str``/``bytes``/``bytearray`` and other than a 0-d array or tensor (which has ``__iter__`` but cannot be
iterated).  A *real* is an int or a ``numbers.Real`` (``float``, ``numpy.float32``...), never a bool.

Each ``require_*`` check returns the checked value or raises :class:`~rl_contracts.errors.ContractTypeError` naming
the argument, what it must be (the fix) and what it is (the type, plus dtype and dimensions for an array).  A value
of the right type outside its domain (a bound, finiteness, a choice, a shape) raises ``error`` when the caller
passes its section's error class (``error=LogprobContractError``, extra attributes as keywords), else a
``ContractTypeError``; the message is always "{argument} must be {expected}, got {actual}".  ``value`` and
``argument`` are positional-only, so ``argument="band"`` among the keywords sets the error's attribute.  The
``is_*`` and ``*_or_none`` predicates serve callers that raise their own section's error.  Arrays and tensors are
recognised by duck typing, so this module imports neither numpy, torch nor vLLM (SPEC §0.2: ``rl_contracts.config``
imports it and must stay free of numpy).
"""

from __future__ import annotations

import math
import numbers
import operator
import sys
from collections.abc import Iterable, Sequence
from typing import Annotated, Any, Literal, TypeGuard, TypeVar

from pydantic import BeforeValidator

from ._internal.messages import render, render_name, type_name
from .errors import ContractError, ContractTypeError

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
    "real_or_none",
    "require_array",
    "require_bool",
    "require_collection",
    "require_float",
    "require_int",
    "require_one_of",
    "require_probability",
    "require_sequence",
    "require_str",
    "require_str_collection",
    "token_ids",
]

_T = TypeVar("_T")

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


def _out_of_range(
    argument: str,
    expected: str,
    actual: str,
    error: type[ContractError] | None,
    attributes: dict[str, Any],
    hint: str = "",
) -> ContractError:
    """The error of a value of the right type outside its domain: ``error`` (default ``ContractTypeError``) with
    ``attributes``, its ``argument`` attribute (and a type error's ``expected``/``actual``) filled unless given."""
    cls = error or ContractTypeError
    message = f"{argument} must be {expected}, got {actual}" + (f"; {hint}" if hint else "")
    if issubclass(cls, ContractTypeError):
        attributes = {"argument": argument, "expected": expected, "actual": actual, **attributes}
    elif "argument" in cls.attribute_names:
        attributes.setdefault("argument", argument)
    return cls(message, **attributes)


def _bounds_text(low: float | None, high: float | None, low_open: bool, high_open: bool) -> str:
    """``">= 0"``, ``"< 1"``, ``"in [0, 1]"``, ``"in (0, 1]"``... (empty when there is no bound)."""
    if low is not None and high is not None:
        return f"in {'(' if low_open else '['}{render(low)}, {render(high)}{')' if high_open else ']'}"
    if low is not None:
        return f"{'>' if low_open else '>='} {render(low)}"
    if high is not None:
        return f"{'<' if high_open else '<='} {render(high)}"
    return ""


def _within(number: float, low: float | None, high: float | None, low_open: bool, high_open: bool) -> bool:
    above = low is None or (number > low if low_open else number >= low)
    below = high is None or (number < high if high_open else number <= high)
    return above and below


def require_int(
    value: object,
    argument: str,
    /,
    *,
    low: int | None = None,
    high: int | None = None,
    error: type[ContractError] | None = None,
    **attributes: Any,
) -> int:
    """Return ``value`` as a plain ``int`` with ``low <= value <= high`` (each bound optional).

    Raises ``ContractTypeError`` naming ``argument`` for a non-int (a bool included), ``error`` (with
    ``attributes``) for an int outside the bounds: "num_experts must be >= 1, got 0".
    """
    index = int_or_none(value)
    if index is None:
        raise ContractTypeError.for_value(argument, "an int (not bool)", value, actual=_actual(value))
    if not _within(index, low, high, False, False):
        raise _out_of_range(argument, _bounds_text(low, high, False, False), str(index), error, attributes)
    return index


def real_or_none(value: object) -> float | None:
    """``value`` as a ``float`` when it is a real number in the library's sense (an int, or a ``numbers.Real``
    such as ``float`` or ``numpy.float32``; never a bool), else ``None``.  An int beyond the float range reads as
    ``inf`` or ``-inf``; NaN and infinities are returned as they are (range checks are the caller's)."""
    if type(value) is float:
        return value
    index = int_or_none(value)
    if index is None:
        if type(value).__name__ in _BOOL_TYPE_NAMES or not isinstance(value, numbers.Real):
            return None
        return float(value)
    try:
        return float(index)
    except OverflowError:
        return math.inf if index > 0 else -math.inf


def require_float(
    value: object,
    argument: str,
    /,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    finite: bool = True,
    hint: str = "",
    error: type[ContractError] | None = None,
    **attributes: Any,
) -> float:
    """Return a real number (:func:`real_or_none`) as a ``float``, never NaN, finite unless ``finite=False``, and
    within the bounds (``low_open``/``high_open`` exclude a bound).

    Raises ``ContractTypeError`` naming ``argument`` for a non-real (a bool, a str, ``None``...); ``error`` (with
    ``attributes``) for NaN, an infinity or a number outside the bounds: "high must be finite and > 0, got 0.0",
    then ``"; " + hint`` when given (the recipe key it comes from, the fix).
    """
    number = real_or_none(value)
    if number is None:
        raise ContractTypeError.for_value(
            argument, "a real number (int or float, not bool)", value, actual=_actual(value)
        )
    if (
        math.isnan(number)
        or (finite and math.isinf(number))
        or not _within(number, low, high, low_open, high_open)
    ):
        bounds = _bounds_text(low, high, low_open, high_open)
        expected = ("finite" if finite else "a number (not NaN)") + (f" and {bounds}" if bounds else "")
        raise _out_of_range(argument, expected, render(number), error, attributes, hint)
    return number + 0.0  # -0.0 reads as 0.0


def require_probability(
    value: object, argument: str, /, *, error: type[ContractError] | None = None, **attributes: Any
) -> float:
    """Return a real number in ``[0, 1]`` as a ``float``; raises as :func:`require_float`."""
    return require_float(value, argument, low=0.0, high=1.0, error=error, **attributes)


def require_one_of(
    value: object,
    argument: str,
    /,
    choices: Sequence[str],
    *,
    error: type[ContractError] | None = None,
    **attributes: Any,
) -> str:
    """Return ``value`` when it is one of the ``str`` ``choices``.

    Raises ``ContractTypeError`` for a non-``str``, ``error`` (with ``attributes``) for another str:
    "kl_type must be 'k1', 'k2' or 'k3', got 'k4'".
    """
    quoted = [f"'{choice}'" for choice in choices]
    expected = quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"
    if not isinstance(value, str):
        raise ContractTypeError.for_value(argument, expected, value, actual=_actual(value))
    if value not in choices:
        raise _out_of_range(argument, expected, f"'{render_name(value)}'", error, attributes)
    return value


def require_str(value: object, argument: str, /) -> str:
    """Return ``value`` when it is a ``str``, else raise ``ContractTypeError`` naming ``argument``."""
    if not isinstance(value, str):
        raise ContractTypeError.for_value(argument, "a str", value, actual=_actual(value))
    return value


def require_str_collection(
    value: object, argument: str, expected: str = "a collection of str (not a bare str)"
) -> list[str]:
    """Return the items of a collection of ``str`` (not a bare ``str``) as a new list.

    Raises ``ContractTypeError`` naming ``argument`` when ``value`` is no collection, or naming
    ``argument[i]`` (the ``i``-th item in iteration order) for an item that is no ``str``.
    """
    items = require_collection(value, argument, expected)
    for index, item in enumerate(items):
        if not isinstance(item, str):
            raise ContractTypeError.for_value(f"{argument}[{index}]", "a str", item, actual=_actual(item))
    return items


_DTYPE_WORDS = {"int": "integer", "float": "floating-point", "bool": "bool"}


def _dtype_kind(dtype: str) -> str | None:
    """``"int"``, ``"float"`` or ``"bool"`` for a numpy or torch dtype name, else ``None`` (complex, object...)."""
    if dtype.startswith(_INTEGER_DTYPES):
        return "int"
    if dtype.startswith("float") or dtype in ("bfloat16", "half", "double"):
        return "float"
    return "bool" if dtype == "bool" else None


def require_array(
    value: _T,
    argument: str,
    /,
    *,
    kind: Literal["int", "float", "bool"],
    ndim: int,
    shape: Sequence[int | None] | None = None,
    library: Literal["numpy", "torch"] | None = None,
    error: type[ContractError] | None = None,
    **attributes: Any,
) -> _T:
    """Return ``value`` unchanged when it is a numpy array or torch tensor (``library`` picks one) of dtype
    ``kind`` and rank ``ndim``, and, when ``shape`` is given, of that shape (``None`` matches any length).

    Found by duck typing (:func:`array_dims`), so neither numpy nor torch is imported.  Raises
    ``ContractTypeError`` naming ``argument`` for anything else (a list, a wrong dtype or rank, a meta tensor);
    ``error`` (with ``attributes``) for a wrong shape: "mask must be of shape (4, 7), got shape (4, 6)".
    """
    noun = {"numpy": "numpy array", "torch": "torch tensor", None: "array or tensor"}[library]
    expected = f"a {ndim}-D {_DTYPE_WORDS[kind]} {noun}"
    dims = array_dims(value)
    module = type(value).__module__.split(".", 1)[0]
    if (
        dims is None
        or dims[0] != ndim
        or _dtype_kind(dims[1]) != kind
        or (library is not None and module != library)
    ):
        raise ContractTypeError.for_value(argument, expected, value, actual=_actual(value))
    if shape is not None:
        actual = tuple(int(size) for size in getattr(value, "shape", ()))
        if len(actual) != len(shape) or any(
            want not in (None, got) for want, got in zip(shape, actual, strict=True)
        ):
            wanted = ", ".join("*" if size is None else str(size) for size in shape)
            raise _out_of_range(
                argument,
                f"of shape ({wanted}{',' if len(shape) == 1 else ''})",
                f"shape {actual}",
                error,
                attributes,
            )
    return value


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
