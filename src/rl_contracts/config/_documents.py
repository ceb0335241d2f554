"""Plain-container recipe documents: dotted paths, lookups, and the text of OmegaConf and YAML failures.

A path is a tuple of keys (``Keys``) from the document root; its dotted spelling writes a mapping key as ``.key``
(an int key too: ``.5``) and a list index as ``[i]`` (``policy.generation.stop_token_ids[2]``).  An int key and
the str key of the same digits are spelled alike; a key that holds a dot is written as it is.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable
from typing import Any

from omegaconf import DictConfig, ListConfig

from .._messages import render_name, shorten, type_name

_yaml: Any = importlib.import_module("yaml")  # PyYAML (OmegaConf's parser) ships no type stubs

__all__ = [
    "REASON_CHARS",
    "Keys",
    "RecipeLoader",
    "dotted_path",
    "is_under",
    "kind",
    "lookup",
    "reason",
    "split_path",
]

Keys = tuple[Any, ...]
"""A path from the document root: mapping keys and list indices."""

REASON_CHARS = 300
"""Bound on the text of one OmegaConf/YAML failure quoted in an issue."""

_SEGMENT = re.compile(r"\[(\d+)\]|([^.\[\]]+)")
_FLOAT_TAG = "tag:yaml.org,2002:float"
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
# YAML 1.2 floats that YAML 1.1 (PyYAML's default) reads as strings, such as 1e-8; OmegaConf reads them as floats.
_FLOAT = re.compile(
    r"""^(?:[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+
        |\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
        |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
    re.VERBOSE,
)


class RecipeLoader(getattr(_yaml, "CSafeLoader", _yaml.SafeLoader)):  # type: ignore[misc]
    """A safe PyYAML loader whose scalars resolve as in OmegaConf's loader: YAML 1.2 floats (``1e-8``), and
    timestamps read as strings.  Used for node marks (provenance) and ``--set`` values, never for composing."""


RecipeLoader.add_implicit_resolver(_FLOAT_TAG, _FLOAT, list("-+0123456789."))
RecipeLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP_TAG]
    for first, resolvers in RecipeLoader.yaml_implicit_resolvers.items()
}


def _is_index(holder: object, key: object) -> bool:
    return isinstance(holder, list) and isinstance(key, int) and not isinstance(key, bool)


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


def kind(value: object) -> str:
    """``"mapping"``, ``"list"`` or the type name of ``value``."""
    if isinstance(value, dict | DictConfig):
        return "mapping"
    if isinstance(value, list | ListConfig):
        return "list"
    return type_name(value)


def reason(exc: BaseException) -> str:
    """The first line of an exception message (OmegaConf appends ``full_key``/``object_type`` lines), shortened."""
    try:
        text = str(exc)
    except Exception:
        text = ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return shorten(lines[0] if lines else type_name(exc), REASON_CHARS)
