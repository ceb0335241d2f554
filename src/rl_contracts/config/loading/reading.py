"""Reading one recipe file safely, before OmegaConf builds anything: a regular file (opened non-blocking and
checked with ``fstat``, so a FIFO or device is refused at once) within the size limit, UTF-8 without NUL bytes,
and YAML whose nesting and alias expansion stay within :class:`~.limits.Limits` (V6; a recursive alias is V1).
"""

from __future__ import annotations

import importlib
import os
import stat
from pathlib import Path
from typing import Any

from ..._internal.messages import render, render_name
from ...errors import RecipeLoadError
from .limits import Limits
from .parsing import RecipeLoader

_yaml: Any = importlib.import_module("yaml")  # PyYAML ships no type stubs

__all__ = ["check_nodes", "compose_checked", "load_yaml_value", "read_text"]

_OPEN_FLAGS = (
    os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
)
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _limit_error(file: str, what: str, limit: str, **attributes: Any) -> RecipeLoadError:
    return RecipeLoadError(f"{render_name(file)}: {what} (limit {limit})", file=file, code="V6", **attributes)


def _unreadable(file: str, why: str) -> RecipeLoadError:
    return RecipeLoadError(f"{render_name(file)}: cannot read the file: {render_name(why)}", file=file)


def _bad_byte(file: str, data: bytes, offset: int, what: str) -> RecipeLoadError:
    """V1 at the byte ``offset`` of ``data``: ``what`` with ``{where}`` replaced by its line and column."""
    line = data.count(b"\n", 0, offset) + 1
    column = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
    message = what.format(where=f"line {line}, column {column}")
    return RecipeLoadError(f"{render_name(file)}: {message}", file=file, line=line, column=column)


def read_text(path: Path, named_by: Path | None, limits: Limits) -> str:
    """The text of the recipe file at ``path`` (``named_by``: the file whose ``defaults`` names it); raises
    ``RecipeLoadError``, V1 for a missing, unreadable or irregular file, non-UTF-8 text or a NUL byte (with line
    and column), V6 beyond ``limits.file_bytes``."""
    file = os.fspath(path)
    try:
        fd = os.open(file, _OPEN_FLAGS)
    except FileNotFoundError:
        if named_by is not None:
            raise RecipeLoadError(
                f"{render_name(named_by)}: parent recipe '{render_name(file)}' named in defaults does not exist",
                file=os.fspath(named_by),
                path="defaults",
                value=render(file),
            ) from None
        raise RecipeLoadError(f"{render_name(file)}: no such file", file=file) from None
    except (OSError, ValueError) as exc:  # ELOOP, EACCES, ENAMETOOLONG; ValueError: an embedded NUL
        raise _unreadable(file, getattr(exc, "strerror", None) or type(exc).__name__) from None
    try:
        info = os.fstat(fd)
        for test, what in _KINDS:
            if test(info.st_mode):
                raise _unreadable(file, f"it is {what}, not a regular file")
        if not stat.S_ISREG(info.st_mode):
            raise _unreadable(file, "not a regular file")
        if info.st_size > limits.file_bytes:
            raise _limit_error(file, f"the file has {info.st_size:,} bytes", f"{limits.file_bytes:,} bytes")
        chunks: list[bytes] = []
        size = 0
        while size <= limits.file_bytes:
            chunk = os.read(fd, min(1 << 20, limits.file_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise _unreadable(file, exc.strerror or type(exc).__name__) from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limits.file_bytes:  # grew while being read
        raise _limit_error(
            file, "the file grew beyond the size limit while read", f"{limits.file_bytes:,} bytes"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        what = f"the file is not UTF-8 text (byte 0x{data[exc.start]:02x} at {{where}})"
        raise _bad_byte(file, data, exc.start, what) from None
    nul = data.find(b"\x00")
    if nul >= 0:
        raise _bad_byte(file, data, nul, "the file holds a NUL byte at {where} (not YAML text)")
    return text


def _children(node: Any) -> list[Any]:
    if isinstance(node, _yaml.MappingNode):
        return [child for pair in node.value for child in pair]
    if isinstance(node, _yaml.SequenceNode):
        return list(node.value)
    return []


def _too_deep(file: str, node: Any, limits: Limits) -> RecipeLoadError:
    line = node.start_mark.line + 1
    return _limit_error(
        file,
        f"mappings and lists nest deeper than {limits.depth} levels at line {line}",
        f"{limits.depth} levels",
        line=line,
    )


def check_nodes(root: Any, file: str, limits: Limits) -> None:
    """Refuse, without recursion, a YAML node graph nesting deeper than ``limits.depth`` or holding more than
    ``limits.nodes`` nodes once aliases are expanded (``RecipeLoadError`` V6), or with a recursive alias (V1);
    the error's line is where the offending node starts."""
    # expanded size and height per node id (aliases share a node object; the graph keeps every id alive)
    sizes: dict[int, int] = {}
    heights: dict[int, int] = {}
    on_stack: set[int] = set()
    stack: list[tuple[Any, int, bool]] = [(root, 1, False)]
    while stack:
        node, level, done = stack.pop()
        key = id(node)
        if done:
            children = _children(node)
            sizes[key] = 1 + sum(sizes[id(child)] for child in children)
            heights[key] = 1 + max((heights[id(child)] for child in children), default=0)
            on_stack.discard(key)
            if sizes[key] > limits.nodes:
                line = node.start_mark.line + 1
                raise _limit_error(
                    file,
                    f"YAML aliases and values expand to more than {limits.nodes:,} nodes (the mapping or list at "
                    f"line {line})",
                    f"{limits.nodes:,} nodes",
                    line=line,
                )
            continue
        if key in sizes:
            if level - 1 + heights[key] > limits.depth and _children(node):
                raise _too_deep(file, node, limits)
            continue
        if key in on_stack:
            line = node.start_mark.line + 1
            raise RecipeLoadError(
                f"{render_name(file)}: a YAML alias at line {line} refers to a mapping or list that contains it",
                file=file,
                line=line,
            )
        children = _children(node)
        if children and level > limits.depth:
            raise _too_deep(file, node, limits)
        on_stack.add(key)
        stack.append((node, level, True))
        stack.extend((child, level + 1, False) for child in reversed(children))


def compose_checked(text: str, file: str, limits: Limits) -> Any:
    """The YAML node graph of ``text`` after :func:`check_nodes` (``None`` for an empty document); raises PyYAML's
    errors for bad YAML and ``RecipeLoadError`` V6 for nesting beyond what the parser itself accepts."""
    loader = RecipeLoader(text)
    try:
        try:
            root = loader.get_single_node()
        except RecursionError:
            raise _limit_error(
                file, "mappings and lists nest too deep to parse", f"{limits.depth} levels"
            ) from None
        except _yaml.MarkedYAMLError as exc:
            if "maximum nesting depth" in str(exc.problem or ""):
                mark = exc.problem_mark
                raise _limit_error(
                    file,
                    "mappings and lists nest deeper than the YAML parser allows",
                    f"{limits.depth} levels",
                    line=None if mark is None else mark.line + 1,
                ) from None
            raise
    finally:
        loader.dispose()
    if root is not None:
        check_nodes(root, file, limits)
    return root


def load_yaml_value(text: str, file: str, limits: Limits) -> Any:
    """The Python value of a YAML text (a ``--set`` value) read as :class:`RecipeLoader` reads it, after
    :func:`check_nodes`.  Raises PyYAML's errors for bad YAML and ``RecipeLoadError`` beyond ``limits``."""
    loader = RecipeLoader(text)
    try:
        try:
            root = loader.get_single_node()
        except RecursionError:
            raise _limit_error(file, "the value nests too deep to parse", f"{limits.depth} levels") from None
        if root is None:
            return None
        check_nodes(root, file, limits)
        return loader.construct_document(root)
    finally:
        loader.dispose()
