"""Numpy arrays of validated token ids, shared by the splice and the placeholder remap (internal).

Ids are Python ints of any size; an array is int64 when every id fits, else ``object`` so that comparisons stay
exact.  Imports numpy only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["INT64_MAX", "INT64_MIN", "int_array", "member_mask"]

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
"""The range of ids an int64 array holds."""


def int_array(ids: Sequence[int]) -> npt.NDArray[Any]:
    """One numpy array for validated ids: int64, or ``object`` when some id does not fit in int64."""
    try:
        return np.array(ids, dtype=np.int64)
    except OverflowError:
        return np.array(ids, dtype=object)


def member_mask(values: npt.NDArray[Any], members: Sequence[int]) -> npt.NDArray[np.bool_]:
    """``values`` elementwise in ``members`` (vectorised); ids outside int64 never match an int64 array."""
    if values.dtype == object:
        return np.isin(values, np.array(list(members), dtype=object))
    return np.isin(values, int_array([m for m in members if INT64_MIN <= m <= INT64_MAX]))
