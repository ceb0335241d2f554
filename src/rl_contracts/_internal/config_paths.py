"""Dotted paths, the one implementation: spelling, splitting, prefixes and lookups in plain containers.

A path is a tuple of keys (:data:`Keys`); its dotted spelling writes ``.key`` and ``[i]``.  :func:`join` and
:func:`dotted` always read an int as a list index; :func:`dotted_path` only where the document holds a list there
(a composed document's mappings may have int keys).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel

from .messages import render_name

__all__ = [
    "Keys",
    "Loc",
    "dotted",
    "dotted_path",
    "is_under",
    "join",
    "keys_in",
    "lookup",
    "split_path",
    "value_at",
]

Keys = tuple[Any, ...]
"""A path from the document root: mapping keys and list indices."""

Loc = tuple[str | int, ...]
"""A location relative to the generation section: mapping keys and list indices."""

_SEGMENT = re.compile(r"\[(\d+)\]|([^.\[\]]+)")
_INDEX = re.compile(r"\[(\d+)\]")


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


def _children(holder: object) -> Mapping[Any, Any]:
    """What a path can name in ``holder``: a mapping's items, a model's fields (by name and alias) and extras."""
    if isinstance(holder, BaseModel):
        fields = {
            key: getattr(holder, name)
            for name, field in type(holder).model_fields.items()
            for key in (name, field.alias)
            if key is not None
        }
        return {**fields, **(holder.model_extra or {})}
    return holder if isinstance(holder, Mapping) else {}


def _next_key(children: Mapping[Any, Any], rest: str) -> tuple[Any, int] | None:
    """The key of ``children`` that ``rest`` starts with (the longest) and the length of its spelling."""
    ends = [end for end in range(1, len(rest)) if rest[end] in ".["] + [len(rest)]
    if rest.startswith("."):  # an empty key
        ends.insert(0, 0)
    for end in reversed(ends):
        if rest[:end] in children:
            return rest[:end], end
    for key in children:  # a key spelled otherwise: not a str, or shortened
        name = render_name(key)
        if len(name) in ends and rest.startswith(name):
            return key, len(name)
    return None


def keys_in(path: str, data: object) -> Keys:
    """The keys of ``path`` (spelled by :func:`dotted` or :func:`dotted_path`) in ``data``, the containers or
    models it points into: a key that holds a dot is found as ``data`` holds it (the longest that fits), and the
    part of the path ``data`` does not hold is one key (an absent key the path ends with)."""
    keys: list[Any] = []
    rest = path
    while True:
        index = _INDEX.match(rest)
        if index is not None and isinstance(data, list):
            keys.append(int(index.group(1)))
            data, rest = lookup(data, keys[-1:])[1], rest[index.end() :]
        else:
            children = _children(data)
            found = _next_key(children, rest)
            if found is None:
                return (*keys, rest)
            keys.append(found[0])
            data, rest = children[found[0]], rest[found[1] :]
        if not rest:
            return tuple(keys)
        rest = rest.removeprefix(".")


def is_under(path: str, roots: Iterable[str]) -> bool:
    """Whether ``path`` is one of ``roots`` or below one of them."""
    return any(path == root or path.startswith((root + ".", root + "[")) for root in roots)


def value_at(document: Mapping[Any, Any], dotted: str) -> object:
    """The value at ``dotted`` (str keys split on ``.``, through any ``Mapping``), or None where a key is absent or
    a value on the way is no mapping."""
    node: object = document
    for key in dotted.split("."):
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node
