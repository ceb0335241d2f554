"""A baseline of accepted findings, so that a repository with findings can gate on "no new finding" at once
(``validate --write-baseline``/``--baseline``; docs/recipes/baselines.md).

An entry is the recipe (relative to the baseline's folder), the code, the dotted path and a hash of the value, no
line numbers; entries are a multiset.  The file is JSON, sorted, one entry per line; one that cannot be read or is
malformed raises :class:`~rl_contracts.errors.BaselineError`, never reads as an empty baseline.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from .._internal.messages import render_name, shorten, type_name
from ..errors import BaselineError
from .finding import Finding

__all__ = [
    "BASELINE_VERSION",
    "Baseline",
    "BaselineComparison",
    "BaselineEntry",
    "compare_baseline",
    "entry_for",
    "read_baseline",
    "write_baseline",
]

BASELINE_VERSION = 1
"""The baseline format version this release reads and writes."""

_VERSION_KEY = "rl_contracts_baseline"
_ENTRY_KEYS = ("file", "code", "path", "value")
_MAX_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, order=True)
class BaselineEntry:
    """One accepted finding: the recipe ``file`` (relative to the baseline's folder), ``code``, dotted ``path``
    and ``value``, the first 16 hex digits of the SHA-256 of the value's canonical JSON."""

    file: str
    code: str
    path: str
    value: str


@dataclass(frozen=True)
class Baseline:
    """The entries of a baseline file, sorted; ``root`` is the folder entry files are relative to."""

    root: Path
    entries: tuple[BaselineEntry, ...]


@dataclass(frozen=True)
class BaselineComparison:
    """Findings against a baseline: ``new`` and ``known`` ``(recipe, finding)`` pairs, the ``gone`` entries of the
    recipes checked (fixed since) and the ``untouched`` entries of recipes not checked this run."""

    new: tuple[tuple[str, Finding], ...]
    known: tuple[tuple[str, Finding], ...]
    gone: tuple[BaselineEntry, ...]
    untouched: tuple[BaselineEntry, ...]

    def shrunk(self, root: Path) -> tuple[BaselineEntry, ...]:
        """The entries a shrunk baseline keeps: the known findings and the untouched entries."""
        return tuple(sorted([*(entry_for(r, f, root) for r, f in self.known), *self.untouched]))


def _relative(recipe: str, root: Path) -> str:
    absolute = Path(os.path.abspath(recipe))
    try:
        return absolute.relative_to(Path(os.path.abspath(root))).as_posix()
    except ValueError:
        return absolute.as_posix()


def _value_hash(finding: Finding) -> str:
    value = {"missing": True} if finding.missing else {"value": finding.json_value}
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=repr)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def entry_for(recipe: str, finding: Finding, root: Path) -> BaselineEntry:
    """The baseline entry of ``finding`` in the recipe file ``recipe`` (as given to ``validate``), for a baseline
    kept in the folder ``root``."""
    return BaselineEntry(_relative(recipe, root), finding.code, finding.path, _value_hash(finding))


def _error(file: Path, why: str) -> BaselineError:
    return BaselineError(
        f"baseline {render_name(str(file))} {why}; write a new one with --write-baseline", file=str(file)
    )


def _entry(item: object, index: int, file: Path) -> BaselineEntry:
    if not isinstance(item, dict) or set(item) != set(_ENTRY_KEYS):
        raise _error(
            file, f"is malformed: findings[{index}] must be an object with the keys {', '.join(_ENTRY_KEYS)}"
        )
    for key in _ENTRY_KEYS:
        if not isinstance(item[key], str) or (key != "path" and not item[key]):
            raise _error(
                file,
                f"is malformed: findings[{index}].{key} must be a non-empty string, got {type_name(item[key])}",
            )
    return BaselineEntry(**item)


def read_baseline(path: str | os.PathLike[str]) -> Baseline:
    """Read a baseline file; ``BaselineError`` when it cannot be read, is over 64 MiB, not UTF-8 JSON, or not
    the object of format :data:`BASELINE_VERSION` with a ``findings`` list of entries."""
    file = Path(path)
    try:
        with open(file, "rb") as stream:
            data = stream.read(_MAX_BYTES + 1)
    except OSError as exc:
        raise _error(file, f"cannot be read ({exc.strerror or type_name(exc)})") from None
    if len(data) > _MAX_BYTES:
        raise _error(file, "is larger than 64 MiB")
    try:
        loaded = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise _error(file, f"is not JSON ({shorten(str(exc), 120)})") from None
    if not isinstance(loaded, dict) or _VERSION_KEY not in loaded:
        raise _error(file, f"is not an rl-contracts baseline (no {_VERSION_KEY!r} key)")
    version = loaded[_VERSION_KEY]
    if version != BASELINE_VERSION or isinstance(version, bool):
        raise _error(
            file,
            f"has format version {shorten(repr(version), 40)}; this release reads version {BASELINE_VERSION}",
        )
    findings = loaded.get("findings")
    if not isinstance(findings, list) or set(loaded) != {_VERSION_KEY, "findings"}:
        raise _error(
            file, "is malformed: expected exactly the keys 'rl_contracts_baseline' and 'findings' (a list)"
        )
    entries = tuple(sorted(_entry(item, index, file) for index, item in enumerate(findings)))
    return Baseline(file.absolute().parent, entries)


def _text(entries: Iterable[BaselineEntry]) -> str:
    # asdict keeps the field order, which is _ENTRY_KEYS
    lines = [json.dumps(asdict(entry), ensure_ascii=False) for entry in sorted(entries)]
    body = ",\n".join(f"    {line}" for line in lines)
    findings = f"[\n{body}\n  ]" if lines else "[]"
    return f'{{\n  "{_VERSION_KEY}": {BASELINE_VERSION},\n  "findings": {findings}\n}}\n'


def write_baseline(path: str | os.PathLike[str], entries: Iterable[BaselineEntry]) -> None:
    """Write ``entries`` (sorted) as a baseline file, atomically; ``BaselineError`` when it cannot be written."""
    file = Path(path)
    text = _text(entries)
    try:
        descriptor, temporary = tempfile.mkstemp(prefix=f".{file.name}.", dir=file.absolute().parent)
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8", newline="\n") as stream:
                stream.write(text)
            os.replace(temporary, file)
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError as exc:
        raise _error(file, f"cannot be written ({exc.strerror or type_name(exc)})") from None


def compare_baseline(
    baseline: Baseline, findings: Sequence[tuple[str, Finding]], recipes: Iterable[str]
) -> BaselineComparison:
    """Split ``(recipe, finding)`` pairs into new and known findings (each entry matches at most one) and list
    the entries of the ``recipes`` checked that no finding matched."""
    checked = {_relative(recipe, baseline.root) for recipe in [*recipes, *(recipe for recipe, _ in findings)]}
    remaining = Counter(entry for entry in baseline.entries if entry.file in checked)
    untouched = tuple(entry for entry in baseline.entries if entry.file not in checked)
    new: list[tuple[str, Finding]] = []
    known: list[tuple[str, Finding]] = []
    for recipe, finding in findings:
        entry = entry_for(recipe, finding, baseline.root)
        if remaining[entry] > 0:
            remaining[entry] -= 1
            known.append((recipe, finding))
        else:
            new.append((recipe, finding))
    return BaselineComparison(tuple(new), tuple(known), tuple(sorted(remaining.elements())), untouched)
