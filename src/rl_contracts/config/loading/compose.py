"""Composition of a NeMo RL-style recipe: ``defaults:`` inheritance and ``_override_`` markers (SPEC §1.8).

Each file is read by :mod:`.reading` within :class:`~.limits.Limits` and becomes plain containers exactly as
``OmegaConf.load`` would make them; its ``defaults`` load depth-first and merge left to right, the file itself last,
as ``OmegaConf.merge`` merges them.  Each file of the graph is composed once (by real path), every parent must lie
under the root (else V7), and a mapping marked ``_override_: true`` replaces the inherited value at any depth (the
reference honours it on top-level sections only); every marker is removed.  No OmegaConf tree is built unless a
file or a merge needs OmegaConf's own judgement (see :func:`_plain_file` and :func:`_merged`).
"""

from __future__ import annotations

import copy
import importlib
import inspect
import io
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import omegaconf
from omegaconf import MISSING, AnyNode, DictConfig, OmegaConf
from omegaconf.errors import GrammarParseError, OmegaConfBaseException

from ..._internal.config_paths import dotted_path
from ..._internal.messages import render, render_list, render_name, type_name
from ...errors import RecipeLoadError
from ..rule import Rule, checks
from .limits import DEFAULT_LIMITS, Limits
from .parsing import RecipeLoader, kind, reason
from .reading import compose_checked, read_text

_yaml: Any = importlib.import_module("yaml")  # PyYAML (OmegaConf's parser) ships no type stubs

__all__ = ["V1", "V6", "V7", "Composition", "build_tree", "compose", "find_root", "plain"]

V1 = Rule(
    "V1",
    "recipe-unreadable",
    summary="the recipe cannot be read (I/O, YAML syntax, defaults cycle, missing parent)",
    reference="config load (S0)",
    what_it_checks=(
        "That the recipe file and every file of its `defaults:` chain can be read: it exists, is valid YAML, "
        "has no `defaults` cycle, and every parent it names exists."
    ),
    why_it_matters=(
        "NeMo RL loads the recipe before anything else (S0, config load) and stops with an OmegaConf or YAML "
        "traceback; nothing else in the recipe can be checked either."
    ),
    example="""\
policy:
  generation: [unclosed
""",
    fix="Fix the YAML at the line the issue names, or the path of the missing parent in `defaults:`.",
)
V6 = Rule(
    "V6",
    "loading-limit-exceeded",
    summary="the recipe goes beyond a loading limit (size, nesting, alias expansion, interpolation, resolver result)",
    reference="never",
    what_it_checks=(
        "Every bound of rl_contracts.config.loading.limits.Limits before the work it bounds: the file size "
        "(4 MiB), the nesting of mappings and lists (32 levels), the YAML nodes of a file after alias expansion "
        "(100,000), what the interpolations of the document expand to (10,000,000 characters and references), "
        "and the results of the add, mul, div and max resolvers (1,000,000 characters, 256-bit integers)."
    ),
    why_it_matters=(
        "Recipes reach rl-contracts validate from pull requests, forks included. A 500-byte file of nested "
        "aliases, doubling interpolations or ${mul:ab,500000000} would otherwise take gigabytes or hours, or "
        "overflow Python's stack, in the CI job that checks it."
    ),
    example="a: ${mul:ab,500000000}\n",
    fix=(
        "Write the values out instead of generating them; a recipe that honestly needs more can be loaded with "
        "load_recipe(limits=Limits(...)) naming larger bounds."
    ),
)
V7 = Rule(
    "V7",
    "parent-outside-root",
    summary="a defaults parent lies outside the recipe's repository (the --root folder)",
    reference="never",
    what_it_checks=(
        "Each parent a defaults list names, compared by real path (symlinks resolved), lies inside the root: the "
        "git work tree holding the recipe given (the nearest folder above it with a .git entry), else that "
        "recipe's folder, or the folder given as --root DIR (load_recipe(root=...))."
    ),
    why_it_matters=(
        "An interpolation of a parent's value is printed in issues, so a pull request naming a credentials file "
        "outside the repository as a parent would print its content into the CI log."
    ),
    example="defaults: /home/runner/.aws/credentials.yaml\n",
    fix=(
        "Keep parents inside the repository, or pass --root DIR naming a trusted folder that holds them "
        "(NeMo RL's recipes use ../../grpo_math_1B.yaml, inside their repository)."
    ),
)

_MARKER = "_override_"
# OmegaConf >= 2.4 caps alias expansion at 10,000 nodes and reports it as a YAML error at line 1; reading.py
# bounds every file itself (Limits.nodes) before this call, on every OmegaConf version, so the cap is lifted here.
_UNCAPPED: dict[str, Any] = (
    {"max_yaml_expanded_nodes": None}
    if "max_yaml_expanded_nodes" in inspect.signature(OmegaConf.load).parameters
    else {}
)
_DEFAULTS = "defaults"
_STR_TAG = "tag:yaml.org,2002:str"
_MERGE_TAG = "tag:yaml.org,2002:merge"


class Composition(NamedTuple):
    """A composed recipe: the ``document`` as plain containers (unresolved; owned by whoever receives it) and the
    files of its ``defaults`` chain in merge order (``chain[-1]`` is the file itself)."""

    document: dict[Any, Any]
    chain: tuple[Path, ...]


def plain(node: omegaconf.Container) -> Any:
    """The node as plain containers, interpolations and ``???`` left as written."""
    return OmegaConf.to_container(node)


class _NeedsOmegaConf(Exception):
    """A file holds something whose reading only OmegaConf itself can judge."""


class _Constructor(RecipeLoader):
    """Builds values from a checked node graph; a mapping repeating a plain key (which OmegaConf refuses) or
    holding a ``<<`` merge key (which OmegaConf orders its own way) is left to OmegaConf."""

    def flatten_mapping(self, node: Any) -> None:
        tags = [key.tag for key, _ in node.value]
        keys = [key.value for key, _ in node.value if key.tag == _STR_TAG]
        if _MERGE_TAG in tags or len(keys) != len(set(keys)):
            raise _NeedsOmegaConf
        super().flatten_mapping(node)


def _fresh(value: Any) -> Any:
    """A copy of a constructed YAML value sharing nothing (aliases copied), as ``OmegaConf.create`` would keep it;
    raises :class:`_NeedsOmegaConf` for any key or value OmegaConf might convert or refuse."""
    if isinstance(value, dict):
        if not all(type(key) in (str, int) for key in value):
            raise _NeedsOmegaConf
        return {key: _fresh(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_fresh(item) for item in value]
    if type(value) not in (str, int, float, bool, type(None)):
        raise _NeedsOmegaConf
    if isinstance(value, str) and "${" in value:
        try:
            AnyNode(value)  # how OmegaConf.create checks an interpolation's grammar
        except OmegaConfBaseException:
            raise _NeedsOmegaConf from None
    return value


def _plain_file(root: Any) -> dict[Any, Any] | None:
    """The plain containers ``OmegaConf.load`` makes of a mapping file with the node graph ``root``, built
    without an OmegaConf tree; ``None`` when the file is not a plain mapping of plain values (OmegaConf judges it)."""
    if root is None:
        return {}
    constructor = _Constructor("")
    try:
        value = constructor.construct_document(root)
        return _fresh(value) if isinstance(value, dict) else None
    except (_NeedsOmegaConf, _yaml.YAMLError):
        return None
    finally:
        constructor.dispose()


def _read(path: Path, named_by: Path | None, limits: Limits) -> dict[Any, Any]:
    """One recipe file as plain containers, as ``OmegaConf.load`` reads it, after :mod:`.reading`'s checks."""
    file = os.fspath(path)
    text = read_text(path, named_by, limits)
    try:
        loaded = _plain_file(compose_checked(text, file, limits))
        if loaded is None:
            tree = OmegaConf.load(io.StringIO(text), **_UNCAPPED)
            if not isinstance(tree, DictConfig):
                raise RecipeLoadError(
                    f"{render_name(file)}: the recipe root must be a mapping, got a {kind(tree)}",
                    file=file,
                    value=kind(tree),
                )
            loaded = plain(tree)
    except (RecursionError, MemoryError):
        raise
    except RecipeLoadError:
        raise
    except OSError as exc:
        # errno None: OmegaConf.load's own rejection of a scalar root ("Invalid loaded object type: int").
        if exc.errno is None:
            raise RecipeLoadError(
                f"{render_name(file)}: the recipe root must be a mapping ({reason(exc)})", file=file
            ) from None
        why = exc.strerror or type_name(exc)
        raise RecipeLoadError(
            f"{render_name(file)}: cannot read the file: {render_name(why)}", file=file
        ) from None
    except _yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        column = mark.column + 1 if mark is not None else None
        where = f" at line {line}, column {column}" if mark is not None else ""
        context = exc.context
        if context and exc.context_mark is not None and exc.context_mark is not mark:
            context += f" started at line {exc.context_mark.line + 1}, column {exc.context_mark.column + 1}"
        problem = " ".join(part for part in (exc.problem, f"({context})" if context else None) if part)
        raise RecipeLoadError(
            f"{render_name(file)}: YAML syntax error{where}: {render_name(problem or 'invalid YAML')}",
            file=file,
            line=line,
            column=column,
        ) from None
    except GrammarParseError as exc:
        key = getattr(exc, "full_key", None) or None
        raise RecipeLoadError(
            f"{render_name(file)}: invalid interpolation syntax at {render_name(key or '<root>')}: {reason(exc)}",
            file=file,
            path=key,
        ) from None
    except (_yaml.YAMLError, OmegaConfBaseException, ValueError, TypeError) as exc:
        raise RecipeLoadError(
            f"{render_name(file)}: cannot parse the file: {reason(exc)}", file=file
        ) from None
    return loaded


def _parent_paths(raw: object, file: Path) -> list[Path]:
    """The parent files named by a ``defaults`` value, resolved against the directory of ``file``."""
    if raw is None:
        return []
    entries = [raw] if isinstance(raw, str) else raw
    if not isinstance(entries, list) or not all(isinstance(e, str) and e for e in entries):
        raise RecipeLoadError(
            f"{render_name(file)}: defaults must be null, a path or a list of paths, got {render(raw)}",
            file=os.fspath(file),
            path=_DEFAULTS,
            value=render(raw),
        )
    return [file.parent / e for e in entries]  # an absolute entry replaces file.parent (pathlib join)


def _strip_markers(value: Any, file: Path, path: tuple[Any, ...], replaced: list[tuple[Any, ...]]) -> Any:
    """Copy ``value`` without ``_override_`` keys; collect the mapping paths marked ``_override_: true``."""
    if isinstance(value, list):
        return [_strip_markers(item, file, (*path, None), replaced) for item in value]
    if not isinstance(value, dict):
        return value
    if _MARKER in value:
        marker = value[_MARKER]
        if not isinstance(marker, bool):
            where = dotted_path((*path, _MARKER))
            raise RecipeLoadError(
                f"{render_name(file)}: {where} must be true or false, got {render(marker)}",
                file=os.fspath(file),
                path=where,
                value=render(marker),
            )
        if marker and None not in path:
            replaced.append(path)
    return {k: _strip_markers(v, file, (*path, k), replaced) for k, v in value.items() if k != _MARKER}


def _merge_conflict(base: Any, over: Any, path: tuple[Any, ...]) -> tuple[tuple[Any, ...], str, str] | None:
    """The first path where a mapping meets a list (OmegaConf refuses to merge those)."""
    if isinstance(base, dict) and isinstance(over, dict):
        for key, value in over.items():
            if key in base:
                found = _merge_conflict(base[key], value, (*path, key))
                if found is not None:
                    return found
        return None
    if (isinstance(base, dict) and isinstance(over, list)) or (
        isinstance(base, list) and isinstance(over, dict)
    ):
        return path, kind(base), kind(over)
    return None


@contextmanager
def _omegaconf_refusal(file: str | Path, doing: str) -> Iterator[None]:
    """Turn OmegaConf refusing what ``doing`` does into ``RecipeLoadError`` (V1) naming ``file``."""
    try:
        yield
    except (RecursionError, MemoryError):
        raise
    except Exception as exc:
        raise RecipeLoadError(
            f"{render_name(file)}: cannot {doing}: {reason(exc)}", file=os.fspath(file)
        ) from None


def build_tree(document: dict[Any, Any], file: str | Path, what: str = "the document") -> DictConfig:
    """``document`` (plain containers) as a fresh OmegaConf tree; ``RecipeLoadError`` (V1) naming ``file`` and
    ``what`` when OmegaConf refuses it."""
    with _omegaconf_refusal(file, f"build {what}"):
        tree = OmegaConf.create(document)
    return tree


def _without(document: dict[Any, Any], replaced: list[tuple[Any, ...]]) -> dict[Any, Any]:
    """A copy of ``document`` without the values at the ``replaced`` paths."""
    document = copy.deepcopy(document)
    for path in replaced:
        if not path:
            return {}
        holder: Any = document
        for key in path[:-1]:
            holder = holder.get(key) if isinstance(holder, dict) else None
        if isinstance(holder, dict):
            holder.pop(path[-1], None)
    return document


def _merged(base: dict[Any, Any], over: dict[Any, Any]) -> dict[Any, Any] | None:
    """``over`` merged onto ``base`` as ``OmegaConf.merge`` merges untyped trees (mappings merge key by key, any
    other value replaces, a ``???`` keeps what it meets), neither changed; ``None`` where an inherited
    interpolation meets a mapping, a list or ``???`` (OmegaConf then copies what the interpolation points at)."""
    out = dict(base)
    for key, value in over.items():
        old = out.get(key)
        missing = isinstance(value, str) and value == MISSING
        if key not in out:
            out[key] = value
        elif isinstance(old, dict) and isinstance(value, dict):
            inner = _merged(old, value)
            if inner is None:
                return None
            out[key] = inner
        elif isinstance(old, str) and "${" in old and (missing or isinstance(value, dict | list)):
            return None
        elif not missing:
            out[key] = value
    return out


def _merge(
    base: dict[Any, Any] | None, over: dict[Any, Any], replaced: list[tuple[Any, ...]], file: Path
) -> dict[Any, Any]:
    """``over`` (the part of ``file``) merged onto ``base``, the ``replaced`` paths dropped from ``base`` first."""
    if base is None:
        return over
    if replaced:
        base = _without(base, replaced)
    conflict = _merge_conflict(base, over, ())
    if conflict is not None:
        where, was, now = conflict
        remedy = f"; mark the mapping with {_MARKER}: true to replace the list" if now == "mapping" else ""
        raise RecipeLoadError(
            f"{render_name(file)}: cannot merge {dotted_path(where)}: a {now} here where the recipe it "
            f"inherits from has a {was}{remedy}",
            file=os.fspath(file),
            path=dotted_path(where),
        )
    merged = _merged(base, over)
    if merged is not None:
        return merged
    with _omegaconf_refusal(file, "merge onto its defaults"):
        result: dict[Any, Any] = plain(OmegaConf.unsafe_merge(OmegaConf.create(base), OmegaConf.create(over)))
    return result


def find_root(recipe: Path) -> Path:
    """The folder a recipe's ``defaults`` may reach, as a real path: the nearest folder above ``recipe`` with a
    ``.git`` entry (git is not run), else the recipe's own folder."""
    try:
        folder = recipe.resolve().parent
    except (OSError, ValueError, RuntimeError):
        folder = Path(os.path.abspath(recipe)).parent
    for candidate in (folder, *folder.parents):
        try:
            if (candidate / ".git").exists():
                return candidate
        except (OSError, ValueError):
            break
    return folder


@dataclass
class _Composer:
    """Composes one recipe: each file of its graph once (by real path), every parent under ``root``."""

    limits: Limits
    root: Path
    root_given: bool
    done: dict[Path, Composition]

    def _outside(self, path: Path, real: Path, named_by: Path) -> RecipeLoadError:
        where = (
            "the folder given as root"
            if self.root_given
            else "the git work tree (else the folder) of the recipe"
        )
        return RecipeLoadError(
            f"{render_name(named_by)}: parent recipe '{render_name(path)}' named in defaults is outside "
            f"{render_name(self.root)} ({where}); pass --root DIR (load_recipe(root=...)) naming a folder that "
            "holds it if it is trusted",
            file=os.fspath(named_by),
            path=_DEFAULTS,
            value=render_name(path),
            code="V7",
        )

    def compose(self, path: Path, ancestry: tuple[Path, ...], named_by: Path | None) -> Composition:
        """``path`` composed with its ``defaults``, depth-first; a file reached again reuses its composition (merges
        never change the documents they read)."""
        try:
            real = path.resolve()
        except RecursionError:
            raise
        except (OSError, ValueError, RuntimeError) as exc:  # embedded NUL byte, symlink loop (Python < 3.13)
            raise RecipeLoadError(
                f"{render_name(path)}: cannot resolve the path: {reason(exc)}",
                file=os.fspath(named_by or path),
                path=_DEFAULTS if named_by else None,
            ) from None
        if real in ancestry:
            cycle = [os.fspath(p) for p in (*ancestry, real)]
            raise RecipeLoadError(
                f"{render_name(path)}: defaults cycle: the file appears again in its own ancestry "
                f"{render_list(cycle)}",
                file=os.fspath(path),
                path=_DEFAULTS,
                value=render_list(cycle),
            )
        if named_by is not None and not real.is_relative_to(self.root):
            raise self._outside(path, real, named_by)
        if real in self.done:
            return self.done[real]
        raw = _read(path, named_by, self.limits)
        parents = _parent_paths(raw.pop(_DEFAULTS), path) if _DEFAULTS in raw else []
        composed: dict[Any, Any] | None = None
        chain: list[Path] = []
        for parent in parents:  # a composed parent holds no markers any more
            inherited = self.compose(parent, (*ancestry, real), path)
            composed = _merge(composed, inherited.document, [], parent)
            chain.extend(inherited.chain)
        chain.append(path)
        replaced: list[tuple[Any, ...]] = []
        own = _strip_markers(raw, path, (), replaced)
        result = Composition(_merge(composed, own, replaced, path), _last_places(chain))
        self.done[real] = result
        return result


def _last_places(chain: list[Path]) -> tuple[Path, ...]:
    """``chain`` with each file (by real path) only at its last place, where provenance looks for it."""
    kept: dict[Path, Path] = {}
    for path in reversed(chain):
        kept.setdefault(path.resolve(), path)
    return tuple(reversed(kept.values()))


@checks(V1, V6, V7)
def compose(path: Path, *, limits: Limits = DEFAULT_LIMITS, root: Path | None = None) -> Composition:
    """Compose the recipe at ``path`` with its ``defaults`` chain (SPEC §1.8 steps 1–4), every parent under ``root``
    (default :func:`find_root` of ``path``).

    Raises ``RecipeLoadError``: V1 for a file that cannot be read or parsed (``.line``/``.column`` for YAML), a
    non-mapping root, a bad ``defaults`` or ``_override_`` value, a cycle, a missing parent or a list meeting a
    mapping; V6 beyond ``limits``; V7 for a parent outside the root.
    """
    given = root is not None
    try:
        top = Path(os.path.realpath(root)) if root is not None else find_root(path)
    except (OSError, ValueError) as exc:
        raise RecipeLoadError(f"{render_name(root)}: cannot resolve the root folder: {reason(exc)}") from None
    composer = _Composer(limits, top, given, {})
    return composer.compose(path, (), None)
