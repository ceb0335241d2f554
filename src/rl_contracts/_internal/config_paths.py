"""Dotted paths, the one implementation: spelling, splitting, prefixes and lookups in plain containers.

A path is a tuple of keys (:data:`Keys`); its dotted spelling writes ``.key`` and ``[i]``.  :func:`join` and
:func:`dotted` always read an int as a list index; :func:`dotted_path` only where the document holds a list there
(a composed document's mappings may have int keys).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Any

from .messages import render_name

__all__ = ["Keys", "Loc", "dotted", "dotted_path", "is_under", "join", "lookup", "split_path"]

Keys = tuple[Any, ...]
"""A path from the document root: mapping keys and list indices."""

Loc = tuple[str | int, ...]
"""A location relative to the generation section: mapping keys and list indices."""

_SEGMENT = re.compile(r"\[(\d+)\]|([^.\[\]]+)")


def _is_index(holder: object, key: object) -> bool:
    return isinstance(holder, list) and isinstance(key, int) and not isinstance(key, bool)


def join(prefix: str, key: object) -> str:
    """The dotted path of ``key`` under ``prefix``: ``[i]`` for an int index, ``.key`` otherwise."""
    if isinstance(key, int) and not isinstance(key, bool):
        return f"{prefix}[{key}]"
    return f"{prefix}.{key}" if prefix else str(key)


def dotted(loc: Iterable[str | int]) -> str:
    """``("stop_token_ids", 2)`` -> ``"stop_token_ids[2]"``; ``("vllm_cfg", "x")`` -> ``"vllm_cfg.x"``."""
    return functools.reduce(join, loc, "")


def lookup(data: object, keys: Iterable[Any]) -> tuple[bool, Any]:
    """Follow ``keys`` through plain containers; ``(False, None)`` when the path does not exist."""
    for key in keys:
        if isinstance(data, dict) and key in data:
            data = data[key]
        elif _is_index(data, key) and 0 <= key < len(data):  # type: ignore[arg-type]
            data = data[key]  # type: ignore[index]
        else:
            return False, None
    return True, data


def dotted_path(keys: Iterable[Any], data: object = None, *, prefix: str = "") -> str:
    """The dotted spelling of ``keys`` below ``prefix``; an int is a list index where ``data``, walked along the
    path, holds a list (pass the document the keys point into)."""
    path = prefix
    for key in keys:
        if _is_index(data, key):
            path = f"{path}[{key}]"
        else:
            name = render_name(key)
            path = f"{path}.{name}" if path else name
        data = lookup(data, (key,))[1]
    return path


def split_path(path: str) -> Keys:
    """The keys of a dotted path (``a.b[2].c`` -> ``("a", "b", 2, "c")``); the inverse of :func:`dotted_path`
    for str keys without dots and for list indices."""
    return tuple(int(index) if index else name for index, name in _SEGMENT.findall(path))


def is_under(path: str, roots: Iterable[str]) -> bool:
    """Whether ``path`` is one of ``roots`` or below one of them."""
    return any(path == root or path.startswith((root + ".", root + "[")) for root in roots)
