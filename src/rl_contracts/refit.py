"""Refit (weight-update) helpers: the bounded refit-key diagnostic and grouped-MoE slab names (SPEC §1.6–§1.7).

Imports neither torch nor vLLM.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable

from ._internal.messages import MAX_LIST_ITEMS, render, render_name, shorten, type_name
from .checks import require_collection, require_str
from .errors import MAX_MESSAGE_CHARS, ContractTypeError

__all__ = [
    "GROUPED_MOE_EXPERT_WEIGHT_SUFFIXES",
    "format_refit_key_error",
    "is_grouped_moe_expert_weight_name",
]

GROUPED_MOE_EXPERT_WEIGHT_SUFFIXES: tuple[str, str] = ("mlp.experts.gate_up_proj", "mlp.experts.down_proj")
"""Suffixes of fused ("grouped") MoE expert slabs, e.g. Qwen3.5-MoE's ``gate_up_proj [E, 2*inter, hidden]`` and
``down_proj [E, hidden, inter]``; they carry no ``.weight`` suffix."""


def format_refit_key_error(label: str, keys: Iterable[str]) -> str:
    """Format a bounded diagnostic for mismatched refit keys: ``"{label} ({N}): [k1, ..., k8]"`` (SPEC §1.6).

    ``keys`` is any iterable of ``str`` other than a ``str``; duplicates count once.  ``N`` is the number of
    distinct keys; the list shows the first 8 in ascending string order, each as ``shorten(repr(key), 200)``,
    followed by ``" ..."`` when ``N > 8``.  ``label`` is shown as ``shorten(label, 200)`` and the whole string
    is at most 2,000 characters.  Finding the first 8 costs O(N), not a full sort.

    Raises ``ContractTypeError`` when ``label`` is not a ``str``, ``keys`` is a ``str``/``bytes`` or not
    iterable, or an element is not a ``str``.

    Divergence: the reference checks no types (a bare ``str`` would be split into characters).

    Example::

        >>> format_refit_key_error("missing keys", {"b", "a"})
        "missing keys (2): ['a', 'b']"
    """
    require_str(label, "label")
    items = require_collection(keys, "keys", "a collection of str keys (not a bare str)")
    if set(map(type, items)) - {str}:  # the common all-str case costs no Python-level loop
        for item in items:
            if not isinstance(item, str):
                raise ContractTypeError(
                    f"keys must hold only str keys, got an element of type {type_name(item)}",
                    argument="keys",
                    expected="Iterable[str]",
                    actual=type_name(item),
                )
    distinct = set(items)
    head = heapq.nsmallest(MAX_LIST_ITEMS, distinct)
    shown = ", ".join(map(render, head))
    tail = " ..." if len(distinct) > MAX_LIST_ITEMS else ""
    return shorten(f"{render_name(label)} ({len(distinct)}): [{shown}]{tail}", MAX_MESSAGE_CHARS)


def is_grouped_moe_expert_weight_name(name: str) -> bool:
    """Whether ``name`` ends with one of :data:`GROUPED_MOE_EXPERT_WEIGHT_SUFFIXES` (SPEC §1.7).

    A pure suffix test with no dot-boundary check (``"xmlp.experts.down_proj"`` is ``True``;
    ``"...gate_up_proj.weight"`` is ``False``).  Raises ``ContractTypeError`` when ``name`` is not a ``str``.
    """
    if not isinstance(name, str):
        raise ContractTypeError.for_value("name", "a str (a checkpoint key)", name)
    return name.endswith(GROUPED_MOE_EXPERT_WEIGHT_SUFFIXES)
