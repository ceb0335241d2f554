"""Trainer-style overrides (``--set``), applied to a composed recipe before resolution (PREFLIGHT.md §1).

``key=value`` needs the key to exist (else it is not applied: K1), ``+key=value`` needs it absent, ``++key=value``
sets it either way; a key segment of ASCII digits indexes a list; the value is YAML read as a recipe is (empty:
the empty string); a mapping value merges into an existing mapping, anything else replaces the value.
"""

from __future__ import annotations

import difflib
import unicodedata
from collections.abc import Sequence
from typing import Any, Literal, NamedTuple

from ..._internal.config_paths import Keys, dotted_path
from ..._internal.messages import render, render_name
from ...errors import ContractTypeError, RecipeLoadError
from .limits import DEFAULT_LIMITS, Limits
from .reading import load_yaml_value

__all__ = ["Override", "Unapplied", "apply_overrides", "parse_override"]


class Override(NamedTuple):
    """One parsed override: ``mode`` ``"set"`` (``key=value``), ``"add"`` (``+``) or ``"force"`` (``++``)."""

    text: str
    mode: Literal["set", "add", "force"]
    keys: Keys
    value: Any


def _bad(file: str, text: str, why: str, path: str | None = None) -> RecipeLoadError:
    return RecipeLoadError(
        f"{render_name(file)}: override {render(text)} {why}", file=file, path=path, value=render(text)
    )


def parse_override(text: str, file: str, limits: Limits = DEFAULT_LIMITS) -> Override:
    """Parse one ``[+|++]key=value`` override; ``RecipeLoadError`` (naming ``file``) when it is malformed, its key
    holds a control character, or its value goes beyond ``limits`` (V6)."""
    if not isinstance(text, str):
        raise ContractTypeError.for_value("overrides[i]", "a str such as 'key=value'", text)
    key, equals, written = text.partition("=")
    mode: Literal["set", "add", "force"] = "set"
    if key.startswith("++"):
        mode, key = "force", key[2:]
    elif key.startswith("+"):
        mode, key = "add", key[1:]
    if not equals or not key or key.startswith("~"):
        raise _bad(
            file, text, "must be key=value, +key=value or ++key=value (deletion with ~ is not supported)"
        )
    parts = key.split(".")
    if not all(parts):
        raise _bad(file, text, f"has an empty segment in its key {render(key)}")
    if any(unicodedata.category(char) == "Cc" for char in key):
        raise _bad(file, text, "has a control character in its key")
    try:
        value = "" if not written else load_yaml_value(written, file, limits)
    except (RecursionError, MemoryError, RecipeLoadError):
        raise
    except Exception as exc:
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise _bad(file, text, f"has a value that is not YAML ({render_name(problem)})", key) from None
    keys = tuple(int(part) if part.isascii() and part.isdigit() else part for part in parts)
    return Override(text, mode, keys, value)


def _merged(old: object, new: object) -> object:
    if isinstance(old, dict) and isinstance(new, dict):
        out = dict(old)
        for key, value in new.items():
            out[key] = _merged(out[key], value) if key in out else value
        return out
    return new


class Unapplied(NamedTuple):
    """A ``key=value`` override not applied: K1 at ``keys`` (the first missing key on its path) with ``reason``."""

    override: Override
    keys: Keys
    reason: str


def _missing(holder: dict[Any, Any], key: object, where: str) -> str:
    present = [name for name in holder if isinstance(name, str)]
    close = difflib.get_close_matches(key, present, n=1, cutoff=0.8) if isinstance(key, str) else []
    hint = f"; did you mean '{render_name(close[0])}'?" if close else ""
    return (
        f"override --set {render_name(where)}=... names a key the recipe does not have, so it is not applied "
        f"(use ++ to add a key){hint}"
    )


def _apply(document: dict[Any, Any], override: Override, file: str) -> Unapplied | None:
    holder: Any = document
    for depth, key in enumerate(override.keys[:-1]):
        if isinstance(holder, list) and isinstance(key, int) and 0 <= key < len(holder):
            holder = holder[key]
            continue
        if not isinstance(holder, dict):
            where = dotted_path(override.keys[:depth], document)
            raise _bad(
                file, override.text, f"goes through {where or 'the root'}, which is not a mapping", where
            )
        if key not in holder or holder[key] is None:
            if override.mode != "force":
                where = dotted_path(override.keys[: depth + 1], document)
                return Unapplied(override, override.keys[: depth + 1], _missing(holder, key, where))
            holder[key] = {}
        holder = holder[key]
    last = override.keys[-1]
    path = dotted_path(override.keys, document)
    if isinstance(holder, list) and isinstance(last, int):
        if not 0 <= last < len(holder):
            raise _bad(file, override.text, f"indexes past the end of a list of {len(holder)}", path)
        holder[last] = _merged(holder[last], override.value)
        return None
    if not isinstance(holder, dict):
        raise _bad(file, override.text, "sets a key of a value that is not a mapping", path)
    present = last in holder
    if override.mode == "set" and not present:
        return Unapplied(override, override.keys, _missing(holder, last, path))
    if override.mode == "add" and present:
        raise _bad(
            file, override.text, f"adds {path}, which the recipe already has; use ++ to replace it", path
        )
    holder[last] = _merged(holder[last], override.value) if present else override.value
    return None


def apply_overrides(
    document: dict[Any, Any], overrides: Sequence[str], file: str, limits: Limits = DEFAULT_LIMITS
) -> tuple[tuple[Keys, ...], tuple[Unapplied, ...]]:
    """Apply ``overrides`` in order to ``document`` (in place); the keys they set and the :class:`Unapplied` ones.

    Raises ``RecipeLoadError`` (``.path`` the key) for a malformed override, a ``+key=value`` whose key is
    present, or a key that goes through a non-mapping.
    """
    parsed = [parse_override(text, file, limits) for text in overrides]
    results = [(override, _apply(document, override, file)) for override in parsed]
    applied = tuple(override.keys for override, missing in results if missing is None)
    return applied, tuple(missing for _, missing in results if missing is not None)
