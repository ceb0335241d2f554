"""Route and carry-dtype helpers shared by ``routed_experts``, ``codec`` and ``chat`` (internal).

Public names of a private module: the package imports them, users do not.  This module imports torch and numpy.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import numpy as np

from ..checks import require_int
from ..errors import ContractTypeError, RoutedExpertsError
from .messages import render, render_name
from .optional_torch import torch

__all__ = [
    "CARRY_DTYPE_NAMES",
    "ENVIRONMENT_ERRORS",
    "WIRE_DTYPE_NAMES",
    "carry_dtype",
    "holds_values",
    "nested_ids",
    "non_negative",
    "torch_device",
]

WIRE_DTYPE_NAMES: Mapping[torch.dtype, str] = MappingProxyType(
    {torch.int8: "int8", torch.int16: "int16", torch.int32: "int32"}
)
"""The envelope dtypes and their names (read-only)."""

CARRY_DTYPE_NAMES: Mapping[torch.dtype, str] = MappingProxyType({**WIRE_DTYPE_NAMES, torch.int64: "int64"})
"""The dtypes routes may be converted to (the wire dtypes and int64) and their names (read-only)."""

ENVIRONMENT_ERRORS = (RecursionError, MemoryError, torch.OutOfMemoryError)
"""Errors of the environment, which propagate unchanged (SPEC §0.3)."""


def carry_dtype(dtype: object, allowed: Mapping[torch.dtype, str] = CARRY_DTYPE_NAMES) -> torch.dtype:
    """Return ``dtype`` when it is one of ``allowed``, else raise ``RoutedExpertsError`` listing them (§3.2 step 1)."""
    if isinstance(dtype, torch.dtype) and dtype in allowed:
        return dtype
    raise RoutedExpertsError(
        f"Unsupported routed_experts carry dtype {render_name(dtype)}; expected one of "
        f"{sorted(allowed.values())}.",
        dtype_name=render_name(dtype),
    )


def non_negative(value: object, argument: str, attribute: str, **attributes: int | None) -> int:
    """``value`` as a plain int ``>= 0``: ``ContractTypeError`` if not an int, ``RoutedExpertsError`` if negative.

    The ``RoutedExpertsError`` carries the negative value as its attribute ``attribute``, plus ``attributes``.
    """
    number = require_int(value, argument)
    if number < 0:
        raise RoutedExpertsError(
            f"{argument} must be >= 0, got {render(number)}", **{**attributes, attribute: number}
        )
    return number


def torch_device(device: object) -> torch.device:
    """``device`` as a ``torch.device``: ``ContractTypeError`` for a non-str/non-device, ``RoutedExpertsError`` for
    a string torch cannot parse."""
    if isinstance(device, torch.device):
        return device
    if not isinstance(device, str):
        raise ContractTypeError.for_value(
            "device", "a torch.device or a device string such as 'cpu' or 'cuda:0'", device
        )
    try:
        return torch.device(device)
    except RuntimeError:
        raise RoutedExpertsError(
            f"device '{render_name(device)}' is not a valid torch device string (expected e.g. 'cpu' or 'cuda:0')"
        ) from None


def holds_values(tensor: torch.Tensor) -> bool:
    """Whether ``tensor`` is dense (strided, not nested) and off the meta device, so its values can be read."""
    return tensor.layout == torch.strided and not tensor.is_nested and tensor.device.type != "meta"


def nested_ids(value: list[object] | tuple[object, ...]) -> tuple[np.ndarray, bool]:
    """Nested lists/tuples of ids as ``(array, holds_bool)``, without changing any value.

    ``array`` is numpy's conversion, except where numpy promotes integers it cannot hold in one integer dtype
    (``[-1, 2**63]`` becomes float64, ``2**64`` object): then it is an object array of the exact Python ints, so
    callers report the real out-of-range id.  ``holds_bool`` says whether a bool element is present (numpy reads
    ``True`` as 1).  Conversion errors (ragged nesting, unconvertible elements) propagate, and an element that is
    not an int in an object array (``None``, a str, a float beside an int numpy cannot hold) raises ``TypeError``.
    """
    array = np.asarray(value)
    if array.size == 0 or array.dtype.kind not in ("i", "u", "f", "O"):
        return array, False
    elements = np.array(value, dtype=object)
    kinds = set(map(type, elements.ravel().tolist()))
    holds_bool = not kinds.isdisjoint({bool, np.bool_})
    if (
        array.dtype.kind in ("f", "O")
        and not holds_bool
        and all(issubclass(kind, int | np.integer) for kind in kinds)
    ):
        return elements, False
    if array.dtype.kind == "O" and not holds_bool:
        odd = next(kind for kind in kinds if not issubclass(kind, int | np.integer))
        raise TypeError(f"an element of type {odd.__name__} is no integer expert id")
    return array, holds_bool
