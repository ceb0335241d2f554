"""Where each value of a composed recipe was set: the file of the ``defaults:`` chain and the 1-based line.

Lines come from PyYAML's node marks, read with :class:`~.parsing.RecipeLoader` (its keys are OmegaConf's); each
file is indexed once, when an issue first asks for it (SPEC §1.8).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from omegaconf import MISSING

from ..._internal.config_paths import Keys
from .limits import DEFAULT_LIMITS
from .parsing import RecipeLoader
from .reading import read_text

_yaml: Any = importlib.import_module("yaml")  # PyYAML ships no type stubs

__all__ = ["OVERRIDE_SOURCE", "Provenance"]

_MERGE_TAG = "tag:yaml.org,2002:merge"

OVERRIDE_SOURCE: Final = "--set"
"""The source of a value a ``--set`` override (``load_recipe(overrides=...)``) wrote; its line is ``None``."""


@dataclass
class _Entry:
    """One value of a file: its line, whether it is ``???``, and its children (by key, or by position)."""

    line: int
    mandatory: bool = False
    keyed: dict[Any, _Entry] = field(default_factory=dict)
    listed: list[_Entry] = field(default_factory=list)


def _pairs(node: Any) -> Iterator[tuple[Any, Any]]:
    """The key/value node pairs of a mapping node, a later pair winning: ``<<`` merge sources (last first), then
    the explicit keys."""
    merged = [value for key, value in node.value if key.tag == _MERGE_TAG]
    for value in merged:
        sources = value.value if isinstance(value, _yaml.SequenceNode) else [value]
        for source in reversed(sources):
            if isinstance(source, _yaml.MappingNode):
                yield from _pairs(source)
    yield from ((key, value) for key, value in node.value if key.tag != _MERGE_TAG)


def _index(node: Any, line: int, loader: Any, depth: int = 0) -> _Entry:
    entry = _Entry(line, mandatory=isinstance(node, _yaml.ScalarNode) and node.value == MISSING)
    if depth > 100:  # as deep as any recipe gets; deeper values keep the line of this ancestor
        return entry
    if isinstance(node, _yaml.MappingNode):
        for key_node, value_node in _pairs(node):
            try:
                key = loader.construct_object(key_node, deep=True)
                hash(key)
            except Exception:
                continue
            entry.keyed[key] = _index(value_node, key_node.start_mark.line + 1, loader, depth + 1)
    elif isinstance(node, _yaml.SequenceNode):
        entry.listed = [_index(item, item.start_mark.line + 1, loader, depth + 1) for item in node.value]
    return entry


def _read_index(path: Path) -> _Entry | None:
    """The value tree of one file with its lines; ``None`` when the file cannot be read again."""
    try:
        loader = RecipeLoader(read_text(path, None, DEFAULT_LIMITS))
        try:
            root = loader.get_single_node()
            return None if root is None else _index(root, root.start_mark.line + 1, loader)
        finally:
            loader.dispose()
    except (RecursionError, MemoryError):
        raise
    except Exception:
        return None


_MAX_DIGITS = 18


def _alternatives(key: object) -> tuple[object, ...]:
    """``key`` and the spelling a dotted path may have lost (``"5"`` for ``5`` and back; up to 18 ASCII digits)."""
    if isinstance(key, str) and key.isascii() and key.isdigit() and len(key) <= _MAX_DIGITS:
        return key, int(key)
    if isinstance(key, int) and not isinstance(key, bool) and abs(key) < 10**_MAX_DIGITS:
        return key, str(key)
    return (key,)


def _find(entry: _Entry, keys: Keys) -> _Entry | None:
    for key in keys:
        child = None
        for spelling in _alternatives(key):
            child = entry.keyed.get(spelling)
            if child is None and isinstance(spelling, int) and 0 <= spelling < len(entry.listed):
                child = entry.listed[spelling]
            if child is not None:
                break
        if child is None:
            return None
        entry = child
    return entry


class Provenance:
    """Which file of a recipe's ``defaults`` chain (``Composition.chain``) last set the value at a path, and on
    which line; values at or below an ``overridden`` path come from :data:`OVERRIDE_SOURCE`."""

    def __init__(self, chain: tuple[Path, ...], overridden: Collection[Keys] = ()) -> None:
        self._chain = chain
        self._overridden = tuple(overridden)
        self._index_of = functools.cache(_read_index)  # each file read once, when an issue first asks

    def locate(self, keys: Keys) -> tuple[str | None, int | None]:
        """``(source, line)`` of the value at ``keys``: ``(OVERRIDE_SOURCE, None)`` for an override, else the last
        file that sets it (a ``???`` only when no file sets a value), else ``(None, None)``."""
        if any(keys[: len(root)] == root for root in self._overridden):
            return OVERRIDE_SOURCE, None
        fallback: tuple[str | None, int | None] = (None, None)
        for path in reversed(self._chain):
            index = self._index_of(path)
            found = None if index is None else _find(index, keys)
            if found is None:
                continue
            if not found.mandatory:
                return str(path), found.line
            if fallback == (None, None):
                fallback = (str(path), found.line)
        return fallback
