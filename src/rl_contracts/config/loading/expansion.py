"""What each value of a composed recipe expands to once resolved, computed before OmegaConf resolves anything.

OmegaConf resolves ``${a}`` again each time it is named, so a small file can expand into gigabytes; :func:`analyse`
follows every reference once, memoised, to refuse such values before resolution (V6), and marks the values that
read outside state (a registered resolver other than :data:`PURE_RESOLVERS`, or a reference to such a value),
which issues show as written, never resolved (docs/security.md, "Secrets and files outside the repository").
A reference whose key is itself an interpolation (``${a.${b}}``) cannot be followed; it counts as one reference.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, Final, NamedTuple

from omegaconf import OmegaConf

from ..._internal.config_paths import Keys, lookup
from .limits import Limits

__all__ = ["PURE_RESOLVERS", "Analysis", "analyse"]

PURE_RESOLVERS: Final[frozenset[str]] = frozenset(
    {"add", "mul", "div", "max", "oc.select", "oc.dict.keys", "oc.dict.values", "oc.create"}
)
"""Resolvers that read only the document (and their arguments); any other one reads outside state."""

_HOPS = 8  # references followed through a value that is one interpolation, when looking a path up
_PART = re.compile(r"\[(\d+)\]|([^.\[\]]+)")


class Analysis(NamedTuple):
    """What :func:`analyse` found: the values refused (keys -> reason) and the keys of the values derived from
    outside state."""

    refused: dict[Keys, str]
    outside: frozenset[Keys]

    def is_outside(self, keys: Keys) -> bool:
        """Whether the value at ``keys``, or one below it, came from outside state."""
        n = len(keys)
        return any(found[:n] == keys for found in self.outside)


class _Text(NamedTuple):
    """The interpolations of one string: literal length, node references, resolver names."""

    literal: int
    references: tuple[str, ...]
    resolvers: tuple[str, ...]
    dynamic: int


def _scan(text: str) -> _Text:
    """Split ``text`` into its literal characters and its ``${...}`` interpolations (nested ones included)."""
    starts: list[int] = []
    literal = 0
    references: list[str] = []
    resolvers: list[str] = []
    dynamic = 0
    i = 0
    while i < len(text):
        if text.startswith("\\${", i):
            literal += 0 if starts else 3
            i += 3
            continue
        if text.startswith("${", i):
            starts.append(i)
            i += 2
            continue
        if text[i] == "}" and starts:
            start = starts.pop()
            inner = text[start + 2 : i]
            head = inner.split("${", 1)[0]
            if ":" in head:
                name = head.split(":", 1)[0].strip()
                resolvers.append(name)
                if name == "oc.select":
                    first = inner.split(":", 1)[1].split(",", 1)[0].strip()
                    if first and "${" not in first:
                        references.append(first)
            elif "${" in inner:
                dynamic += 1
            else:
                references.append(inner.strip())
            i += 1
            continue
        if not starts:
            literal += 1
        i += 1
    return _Text(literal, tuple(references), tuple(resolvers), dynamic)


def _interpolated(value: object) -> bool:
    return isinstance(value, str) and "${" in value


def _target(document: dict[Any, Any], reference: str, where: Keys, hops: int = 0) -> Keys | None:
    """The keys ``reference`` (as written inside ``${...}`` at the value ``where``) names in ``document``, or
    ``None``; a digit segment is a list index, or a mapping's int key where the mapping lacks the string."""
    dots = len(reference) - len(reference.lstrip("."))
    rest = reference[dots:]
    if dots == 0:
        keys: Keys = ()
    else:
        keys = where[:-1]
        if dots - 1 > len(keys):
            return None
        keys = keys[: len(keys) - (dots - 1)]
    found, holder = lookup(document, keys)
    if not found:
        return None
    for index, name in _PART.findall(rest):
        if _interpolated(holder) and hops < _HOPS:
            inner = holder.strip()
            if inner.startswith("${") and inner.endswith("}") and inner.count("${") == 1:
                followed = _target(document, inner[2:-1].strip(), keys, hops + 1)
                if followed is None:
                    return None
                keys = followed
                holder = lookup(document, keys)[1]
        part = index or name
        digits = part.isascii() and part.isdigit() and not (isinstance(holder, dict) and part in holder)
        key = int(part) if digits else part
        found, holder = lookup(holder, (key,))
        if not found:
            return None
        keys = (*keys, key)
    return keys


def _children(value: Any, keys: Keys) -> Iterator[Keys]:
    if isinstance(value, dict):
        yield from ((*keys, key) for key in value)
    elif isinstance(value, list):
        yield from ((*keys, index) for index in range(len(value)))


def analyse(document: dict[Any, Any], limits: Limits) -> Analysis:
    """The values of ``document`` to refuse (keys -> reason) and those read from outside state, in linear time.

    A value's expansion is its literal characters plus, per reference, 1 and what the reference names expands to.
    Refused: a value beyond ``limits.expansion`` characters or ``limits.references`` references (a container only
    when none of its values is), a reference chain deeper than ``4 * limits.depth``, and every interpolated
    string after the document's running total passes either limit.
    """
    caps = (limits.expansion + 1, limits.references + 1)
    height_cap = 4 * limits.depth
    cost: dict[Keys, tuple[int, int, int]] = {}  # finished values: characters, references, height
    outside: set[Keys] = set()
    deps_of: dict[Keys, list[Keys]] = {}  # visited values
    base: dict[Keys, tuple[int, int]] = {}
    order: list[Keys] = []  # interpolated strings in document order

    def expand(keys: Keys, value: Any) -> None:
        if isinstance(value, dict | list):
            deps_of[keys] = list(_children(value, keys))
            base[keys] = (0, 0)
        elif _interpolated(value):
            text = _scan(value)
            targets = [_target(document, reference, keys) for reference in text.references]
            deps_of[keys] = [target for target in targets if target is not None]
            base[keys] = (text.literal, len(text.references) + len(text.resolvers) + text.dynamic)
            if any(name not in PURE_RESOLVERS and OmegaConf.has_resolver(name) for name in text.resolvers):
                outside.add(keys)
        else:
            deps_of[keys] = []
            base[keys] = (len(value) if isinstance(value, str) else 1, 0)

    def over(total: tuple[int, ...]) -> bool:
        return total[0] >= caps[0] or total[1] >= caps[1]

    stack: list[tuple[Keys, Any, bool]] = [((), document, False)]
    while stack:
        keys, value, done = stack.pop()
        if done:
            chars, refs = base[keys]
            tallest, marked = 0, keys in outside
            for dep in deps_of[keys]:
                if dep in cost:  # else a reference cycle: OmegaConf reports it
                    chars = min(caps[0], chars + cost[dep][0])
                    refs = min(caps[1], refs + cost[dep][1])
                    tallest = max(tallest, cost[dep][2])
                    marked = marked or dep in outside
            cost[keys] = (chars, refs, tallest + 1)
            if marked:
                outside.add(keys)
        elif keys not in deps_of:
            expand(keys, value)
            if _interpolated(value):
                order.append(keys)
            stack.append((keys, value, True))
            for dep in reversed(deps_of[keys]):
                if dep not in deps_of:
                    found, dep_value = lookup(document, dep)
                    if found:
                        stack.append((dep, dep_value, False))
    too_much = (
        f"more than {limits.expansion:,} characters (Limits.expansion) or {limits.references:,} references "
        "(Limits.references)"
    )
    refused: dict[Keys, str] = {}
    for keys, total in cost.items():
        if not keys:
            continue
        if not over(total):
            if total[2] > height_cap and keys in order:
                refused[keys] = (
                    f"its interpolations refer to values referring to values more than {height_cap} levels deep "
                    f"(limit {height_cap} levels: 4 x Limits.depth)"
                )
        elif not any(over(cost.get(child, (0, 0))) for child in _children(lookup(document, keys)[1], keys)):
            refused[keys] = f"once its interpolations are resolved it expands to {too_much}"
    chars_total = refs_total = 0
    for keys in order:
        chars_total += cost[keys][0]
        refs_total += cost[keys][1]
        if (chars_total >= caps[0] or refs_total >= caps[1]) and keys not in refused:
            refused[keys] = f"the interpolations of the document expand to {too_much} in all"
    return Analysis(refused, frozenset(outside))
