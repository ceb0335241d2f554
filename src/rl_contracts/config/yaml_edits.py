"""Edits of one recipe YAML file at a key path that leave every other byte of the file as it was.

Each edit (rename, remove, set, insert, move) is located by PyYAML's node marks, read with the loader's scalar
resolution, and splices the text: comments, key order, quoting, indentation and line endings stay (a ruamel.yaml
round trip rewrites unrelated lines).  An edit that cannot be made without touching something else returns
:class:`Declined` with the reason, never a half-edited text.
"""

from __future__ import annotations

import functools
import importlib
import json
import math
import re
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ParamSpec

from .._internal.config_paths import Keys
from .._internal.messages import render_name
from .loading.parsing import RecipeLoader

_yaml: Any = importlib.import_module("yaml")  # PyYAML ships no type stubs

__all__ = [
    "Declined",
    "insert_value",
    "move_entry",
    "remove_entry",
    "rename_key",
    "render_scalar",
    "set_value",
]

_MERGE_TAG = "tag:yaml.org,2002:merge"
_NULL_TAG = "tag:yaml.org,2002:null"
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")
_SEPARATION_TABS = re.compile(r"(?<=:)[ \t]*\t[ \t]*")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_COLON = re.compile(r"[ \t]*:")
_P = ParamSpec("_P")


@dataclass(frozen=True)
class Declined:
    """An edit that was not made, and why (one sentence, naming the key)."""

    reason: str


class _EditLoader(_yaml.SafeLoader):  # type: ignore[misc]
    """The pure-Python safe loader (character offsets in its marks) with :class:`RecipeLoader`'s resolution."""


_EditLoader.yaml_implicit_resolvers = RecipeLoader.yaml_implicit_resolvers


class _Refused(Exception):
    """Raised inside this module for an edit that cannot be made; becomes :class:`Declined`."""


def _declining(edit: Callable[_P, str | Declined]) -> Callable[_P, str | Declined]:
    """``edit``, returning :class:`Declined` with the reason where it raises :class:`_Refused`."""

    @functools.wraps(edit)
    def run(*args: _P.args, **kwargs: _P.kwargs) -> str | Declined:
        try:
            return edit(*args, **kwargs)
        except _Refused as refused:
            return Declined(str(refused))

    return run


@dataclass(frozen=True)
class _Step:
    """One mapping entry on a key path: the mapping node holding it, its key node and its value node."""

    mapping: Any
    key: Any
    value: Any


def _parse(text: str) -> tuple[Any, _EditLoader]:
    """The root mapping node of ``text`` and its loader; tabs after a key's colon read as spaces, one for one so
    that every offset stays (libyaml accepts them, PyYAML's scanner does not)."""
    try:
        loader = _EditLoader(_SEPARATION_TABS.sub(lambda match: " " * len(match.group()), text))
    except Exception as exc:
        raise _Refused(f"the file cannot be read as YAML ({type(exc).__name__})") from None
    try:
        root = loader.get_single_node()
    except (RecursionError, MemoryError):
        raise
    except Exception as exc:
        mark = getattr(exc, "problem_mark", None)
        where = "" if mark is None else f" at line {mark.line + 1}, column {mark.column + 1}"
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise _Refused(
            f"the fixer's YAML parser cannot read this file{where} ({problem}); fix this one by hand"
        ) from None
    finally:
        loader.dispose()
    if not isinstance(root, _yaml.MappingNode):
        raise _Refused("the file's root is not a mapping")
    return root, loader


def _shared_nodes(root: Any) -> set[int]:
    """The ids of nodes reached more than once (a YAML alias reuses its anchor's node)."""
    seen: set[int] = set()
    shared: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            shared.add(id(node))
            continue
        seen.add(id(node))
        if isinstance(node, _yaml.MappingNode):
            for key, value in node.value:
                stack.extend((key, value))
        elif isinstance(node, _yaml.SequenceNode):
            stack.extend(node.value)
    return shared


def _key_of(node: Any, loader: _EditLoader) -> object:
    if not isinstance(node, _yaml.ScalarNode):
        return None
    try:
        return loader.construct_object(node, deep=True)
    except Exception:
        return None


def _same_key(written: object, wanted: object) -> bool:
    if written == wanted and type(written) is type(wanted):
        return True
    return isinstance(written, int | str) and isinstance(wanted, int | str) and str(written) == str(wanted)


def _entry(mapping: Any, key: object, loader: _EditLoader) -> _Step | None:
    """The explicit entry ``key`` of a mapping node (not one a ``<<`` merge key brings in)."""
    for key_node, value_node in mapping.value:
        if key_node.tag != _MERGE_TAG and _same_key(_key_of(key_node, loader), key):
            return _Step(mapping, key_node, value_node)
    return None


def _merged_keys(mapping: Any, loader: _EditLoader) -> Iterator[object]:
    """The keys a mapping node takes from its ``<<`` merge keys."""
    for key_node, value_node in mapping.value:
        if key_node.tag != _MERGE_TAG:
            continue
        sources = value_node.value if isinstance(value_node, _yaml.SequenceNode) else [value_node]
        for source in sources:
            if isinstance(source, _yaml.MappingNode):
                yield from (_key_of(k, loader) for k, _ in source.value)
                yield from _merged_keys(source, loader)


def _walk(root: Any, loader: _EditLoader, keys: Keys) -> list[_Step]:
    """The entries along ``keys`` (every one must exist, explicitly, in a mapping); refused otherwise."""
    shared = _shared_nodes(root)
    steps: list[_Step] = []
    node = root
    for depth, key in enumerate(keys):
        where = _dotted(keys[: depth + 1])
        if not isinstance(node, _yaml.MappingNode):
            raise _Refused(f"{_dotted(keys[:depth])} is not a mapping in this file")
        step = _entry(node, key, loader)
        if step is None:
            if any(_same_key(merged, key) for merged in _merged_keys(node, loader)):
                raise _Refused(f"{where} comes from a YAML merge key (<<) in this file")
            raise _Refused(f"{where} is not written in this file")
        if id(step.value) in shared or id(node) in shared:
            raise _Refused(f"{where} is shared through a YAML anchor and alias")
        steps.append(step)
        node = step.value
    return steps


def _dotted(keys: Keys) -> str:
    return ".".join(render_name(key) for key in keys) or "the root"


def _line_start(text: str, index: int) -> int:
    return max(text.rfind("\n", 0, index), text.rfind("\r", 0, index)) + 1


def _line_end(text: str, index: int) -> int:
    """The offset just past the line break of the line holding ``index`` (the end of the text without one)."""
    found = _LINE_BREAK.search(text, index)
    return len(text) if found is None else found.end()


def _content_end(node: Any) -> int:
    """The offset just past a node's own content (no trailing comments or blank lines)."""
    if isinstance(node, _yaml.ScalarNode):
        end: int = node.end_mark.index
        if node.style in ("|", ">"):
            buffer = node.end_mark.buffer
            while end > node.start_mark.index and buffer[end - 1] in " \t\r\n":
                end -= 1
        return end
    if node.flow_style or not node.value:
        return int(node.end_mark.index)
    last = node.value[-1]
    if isinstance(node, _yaml.MappingNode):
        key, value = last
        return max(int(key.end_mark.index), _content_end(value))
    return _content_end(last)


def _first_on_line(text: str, index: int) -> bool:
    return not text[_line_start(text, index) : index].strip()


def _rest_is_comment(text: str, index: int) -> bool:
    rest = text[index : _line_end(text, index)].strip()
    return not rest or rest.startswith("#")


def _entry_lines(text: str, step: _Step) -> tuple[int, int]:
    """The ``(start, end)`` offsets of an entry's whole lines: its key's line to its value's last line."""
    start, end = step.key.start_mark.index, _content_end(step.value)
    key = "'" + text[start : step.key.end_mark.index] + "'"
    if step.mapping.flow_style:
        raise _Refused(f"{key} is in a flow-style mapping ({{...}}); edit it by hand")
    if not _first_on_line(text, start):
        raise _Refused(f"{key} shares its line with another token (a list item's '- ')")
    if not _rest_is_comment(text, end):
        raise _Refused(f"{key} is followed by another token on its last line")
    return _line_start(text, start), _line_end(text, end)


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _render_key(key: object) -> str:
    if not isinstance(key, str):
        raise _Refused(f"cannot write the key {render_name(key)}")
    return key if _PLAIN_KEY.fullmatch(key) and _reads_back(f"{key}: 0", {key: 0}) else json.dumps(key)


def _reads_back(text: str, expected: object) -> bool:
    try:
        loader = _EditLoader(text)
        try:
            read = loader.get_single_data()
        finally:
            loader.dispose()
    except Exception:
        return False
    return bool(read == expected and _same_types(read, expected))


def _same_types(a: object, b: object) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return all(_same_types(a[k], b[k]) for k in a if k in b)
    if isinstance(a, list) and isinstance(b, list):
        return all(_same_types(x, y) for x, y in zip(a, b, strict=False))
    return type(a) is type(b) or (isinstance(a, float) and isinstance(b, int) and not isinstance(b, bool))


def render_scalar(value: object) -> str:
    """The YAML text of a JSON value that reads back as the same value; ``ValueError`` when there is none (a
    non-finite float, a non-JSON container)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"cannot write the non-finite float {value!r}")
    if isinstance(value, str) and value.strip() == value and _reads_back(f"k: {value}", {"k": value}):
        text = value
    else:  # JSON is YAML: null, true, 12, 0.1, "quoted", [...], {...}
        try:
            text = json.dumps(value, allow_nan=False)
        except (TypeError, ValueError):
            raise ValueError(f"cannot write {type(value).__name__} values") from None
    if not _reads_back(f"k: {text}", {"k": value}):
        raise ValueError(f"cannot write {value!r} so that it reads back the same")
    return text


def _indent_step(root: Any) -> int:
    """The file's indentation step (the smallest nested block mapping indent; 2 when nothing nests); each node is
    visited once, so aliases cannot make the walk exponential."""
    steps: list[int] = []
    stack = [root]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen or not isinstance(node, _yaml.MappingNode) or node.flow_style:
            continue
        seen.add(id(node))
        for key, value in node.value:
            if isinstance(value, _yaml.MappingNode) and not value.flow_style and value.value:
                inner = value.value[0][0].start_mark.column - key.start_mark.column
                if inner > 0:
                    steps.append(inner)
            stack.append(value)
    return min(steps, default=2)


@_declining
def rename_key(text: str, keys: Keys, new_key: str) -> str | Declined:
    """``text`` with the key at ``keys`` renamed to ``new_key``; declined when the key is not written at ``keys``
    in this text, or ``new_key`` is already set beside it."""
    root, loader = _parse(text)
    step = _walk(root, loader, keys)[-1]
    target = _dotted((*keys[:-1], new_key))
    if _entry(step.mapping, new_key, loader) is not None:
        raise _Refused(f"{target} is already set in this file; renaming would overwrite it")
    if any(_same_key(merged, new_key) for merged in _merged_keys(step.mapping, loader)):
        raise _Refused(f"{target} is already set through a YAML merge key in this file")
    start, end = step.key.start_mark.index, step.key.end_mark.index
    return text[:start] + _quoted_like(text[start:end], new_key) + text[end:]


def _quoted_like(written: str, key: str) -> str:
    """``key`` written with the quotes of the key it replaces."""
    if written.startswith('"'):
        return json.dumps(key, ensure_ascii=False)
    if written.startswith("'"):
        return "'" + key.replace("'", "''") + "'"
    return _render_key(key)


@_declining
def remove_entry(text: str, keys: Keys) -> str | Declined:
    """``text`` without the entry at ``keys`` (its whole lines; a mapping left with no key becomes ``{}``);
    declined when the key is not written at ``keys``, its mapping is in flow style or it shares a line."""
    root, loader = _parse(text)
    steps = _walk(root, loader, keys)
    step = steps[-1]
    start, end = _entry_lines(text, step)
    if len(step.mapping.value) > 1:
        return text[:start] + text[end:]
    # The only entry: leave an empty mapping ({}) rather than a key with no value, which would merge as null.
    if len(steps) < 2:
        raise _Refused(f"{_dotted(keys)} is the only key of the file")
    colon = _COLON.match(text, steps[-2].key.end_mark.index)
    if colon is None:
        raise _Refused("cannot find the ':' after a key")
    if colon.end() > start:
        raise _Refused(f"{_dotted(keys[:-1])} and its only key share a line")
    return text[: colon.end()] + " {}" + text[colon.end() : start] + text[end:]


@_declining
def set_value(text: str, keys: Keys, value: object) -> str | Declined:
    """``text`` with the one-line scalar at ``keys`` replaced by ``value`` (:func:`render_scalar`); the comment
    after it stays.  Declined when the key is not written at ``keys`` or its value is a collection or spans
    several lines."""
    root, loader = _parse(text)
    node = _walk(root, loader, keys)[-1].value
    rendered = _rendered(value, keys)
    if isinstance(node, _yaml.ScalarNode) and node.style not in ("|", ">"):
        start, end = node.start_mark.index, node.end_mark.index
        if text.count("\n", start, end) or text.count("\r", start, end):
            raise _Refused(f"the value of {_dotted(keys)} spans several lines; edit it by hand")
        prefix = "" if start > 0 and text[start - 1] in " \t" else " "
        return text[:start] + prefix + rendered + text[end:]
    raise _Refused(f"the value of {_dotted(keys)} is not a one-line scalar; edit it by hand")


def _rendered(value: object, keys: Keys) -> str:
    try:
        return render_scalar(value)
    except ValueError as exc:
        raise _Refused(f"{_dotted(keys)}: {exc}") from None


def _insertion(text: str, root: Any, loader: _EditLoader, keys: Keys) -> tuple[str, int, int, Keys]:
    """Where new entries for ``keys`` go: ``(text, offset, column, missing keys)``; the text loses an empty value
    of the deepest existing key so that block entries can follow."""
    shared = _shared_nodes(root)
    node = root
    key_node = None
    for depth, key in enumerate(keys):
        where = _dotted(keys[: depth + 1])
        if isinstance(node, _yaml.ScalarNode) and node.tag == _NULL_TAG and key_node is not None:
            return _replace_null(text, key_node, node, keys[depth:], root)
        if not isinstance(node, _yaml.MappingNode):
            raise _Refused(f"{_dotted(keys[:depth])} holds a value that is not a mapping in this file")
        if id(node) in shared:
            raise _Refused(f"{_dotted(keys[:depth])} is shared through a YAML anchor and alias")
        step = _entry(node, key, loader)
        if step is None:
            if any(_same_key(merged, key) for merged in _merged_keys(node, loader)):
                raise _Refused(f"{where} is already set through a YAML merge key in this file")
            if node.flow_style and node.value:
                raise _Refused(f"{_dotted(keys[:depth])} is a flow-style mapping ({{...}}); edit it by hand")
            if node.flow_style:
                if key_node is None:
                    raise _Refused("the file's root is an empty flow mapping")
                return _replace_null(text, key_node, node, keys[depth:], root)
            end = _content_end(node)  # a block mapping has at least one entry
            if node is not root and not _rest_is_comment(text, end):
                raise _Refused(f"{_dotted(keys[:depth])} is followed by another token on its last line")
            text, offset = _ended(text, _line_end(text, end))
            return text, offset, node.value[0][0].start_mark.column, keys[depth:]
        if depth == len(keys) - 1:
            raise _Refused(f"{where} is already set in this file")
        key_node = step.key
        node = step.value
    raise _Refused(f"{_dotted(keys)} is already set in this file")


def _replace_null(
    text: str, key_node: Any, value: Any, missing: Keys, root: Any
) -> tuple[str, int, int, Keys]:
    """Drop an empty value (``null``, ``~``, nothing, ``{}``) after ``key:`` so that block entries can follow."""
    start, end = value.start_mark.index, value.end_mark.index
    if text.count("\n", start, end) or not _rest_is_comment(text, end):
        raise _Refused("an empty value spans lines or is followed by another token")
    if not _first_on_line(text, key_node.start_mark.index):
        raise _Refused("a key shares its line with a list item's '- '")
    while start > 0 and text[start - 1] in " \t" and start > key_node.end_mark.index + 1:
        start -= 1
    text = text[:start] + text[end:]
    text, offset = _ended(text, _line_end(text, start))
    return text, offset, key_node.start_mark.column + _indent_step(root), missing


def _ended(text: str, offset: int) -> tuple[str, int]:
    """``text`` and ``offset``, a line break added when ``offset`` is the end of a non-empty last line."""
    if offset < len(text) or not text or text.endswith(("\n", "\r")):
        return text, offset
    return text + _newline(text), len(text) + len(_newline(text))


def _spliced(text: str, offset: int, missing: Keys, column: int, step: int, last_line: str) -> str:
    """``text`` with, at ``offset``, the lines of new nested keys ``missing[:-1]`` and then ``last_line`` (already
    holding ``missing[-1]``)."""
    newline = _newline(text)
    lines = [" " * (column + depth * step) + _render_key(key) + ":" for depth, key in enumerate(missing[:-1])]
    lines.append(" " * (column + (len(missing) - 1) * step) + last_line)
    return text[:offset] + newline.join(lines) + newline + text[offset:]


@_declining
def insert_value(text: str, keys: Keys, value: object) -> str | Declined:
    """``text`` with ``keys`` set to ``value`` as new block entries, indented as the file is; declined when the key
    is already set (explicitly or through a merge key) or a mapping on the way is shared, in flow style or not
    a mapping."""
    root, loader = _parse(text)
    rendered = _rendered(value, keys)
    text, offset, column, missing = _insertion(text, root, loader, keys)
    last_line = f"{_render_key(missing[-1])}: {rendered}"
    return _spliced(text, offset, missing, column, _indent_step(root), last_line)


def _reindented(text: str, delta: int) -> str:
    """``text`` with every line that is not blank indented ``delta`` columns more (fewer when negative)."""
    if delta >= 0:
        return textwrap.indent(text, " " * delta)
    lines = text.splitlines(keepends=True)
    if any(line.strip() and not line.startswith(" " * -delta) for line in lines):
        raise _Refused("the entry's lines are indented less than its key")
    return "".join(line[min(len(line) - len(line.lstrip(" ")), -delta) :] for line in lines)


@_declining
def move_entry(text: str, keys: Keys, target: Keys) -> str | Declined:
    """``text`` with the entry at ``keys`` moved, lines and comments as written, to ``target`` (inserted as
    :func:`insert_value`, removed as :func:`remove_entry`); declined when either edit is."""
    root, loader = _parse(text)
    step = _walk(root, loader, keys)[-1]
    start, end = _entry_lines(text, step)
    key_start, key_end = step.key.start_mark.index, step.key.end_mark.index
    key_text = text[key_start:key_end] if _same_key(target[-1], keys[-1]) else _render_key(target[-1])
    moved, offset, column, missing = _insertion(text, root, loader, target)
    indent = _indent_step(root)
    delta = column + (len(missing) - 1) * indent - step.key.start_mark.column
    entry = _reindented(text[start:key_start] + key_text + text[key_end:end], delta)
    return remove_entry(
        _spliced(moved, offset, missing, column, indent, entry.rstrip("\r\n").lstrip(" ")), keys
    )
