"""Composition of a NeMo RL-style recipe: ``defaults:`` inheritance and ``_override_`` markers (SPEC §1.8).

Each file is read by :mod:`.reading` within :class:`~.limits.Limits`, then parsed with ``OmegaConf.load``; its
``defaults`` load depth-first and merge left to right, the file itself last.  Each file of the graph is composed
once (by real path), every parent must lie under the root (else V7), and a mapping marked ``_override_: true``
replaces the inherited value at any depth (the reference honours it on top-level sections only); every marker
is removed.
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
from typing import Any, NamedTuple, cast

import omegaconf
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import GrammarParseError, OmegaConfBaseException

from ..._internal.config_paths import dotted_path
from ..._internal.messages import render, render_list, render_name, type_name
from ...errors import RecipeLoadError
from ..rule import Rule, checks
from .limits import DEFAULT_LIMITS, Limits
from .parsing import kind, reason
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


class Composition(NamedTuple):
    """A composed recipe: the ``document`` as plain containers (unresolved; shared, never mutated), the files of its
    ``defaults`` chain in merge order (``chain[-1]`` is the file itself), and ``config``, the same document as an
    OmegaConf tree (owned by whoever receives it)."""

    document: dict[Any, Any]
    chain: tuple[Path, ...]
    config: DictConfig


def plain(node: omegaconf.Container) -> Any:
    """The node as plain containers, interpolations and ``???`` left as written."""
    return OmegaConf.to_container(node)


def _read(path: Path, named_by: Path | None, limits: Limits) -> DictConfig:
    """Parse one recipe file with ``OmegaConf.load`` (interpolations unresolved), after :mod:`.reading`'s checks."""
    file = os.fspath(path)
    text = read_text(path, named_by, limits)
    try:
        compose_checked(text, file, limits)
        loaded = OmegaConf.load(io.StringIO(text), **_UNCAPPED)
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
    if not isinstance(loaded, DictConfig):
        raise RecipeLoadError(
            f"{render_name(file)}: the recipe root must be a mapping, got a {kind(loaded)}",
            file=file,
            value=kind(loaded),
        )
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


def _marker_holders(value: Any, keys: tuple[Any, ...], found: list[tuple[Any, ...]]) -> None:
    """Append the keys (list indices included) of every mapping in ``value`` holding an ``_override_`` key."""
    if isinstance(value, list):
        for index, item in enumerate(value):
            _marker_holders(item, (*keys, index), found)
    elif isinstance(value, dict):
        if _MARKER in value:
            found.append(keys)
        for key, item in value.items():
            _marker_holders(item, (*keys, key), found)


def _node(tree: DictConfig, keys: tuple[Any, ...]) -> Any:
    """The container at ``keys`` of ``tree`` (containers all the way, so nothing is resolved)."""
    node: Any = tree
    for key in keys:
        node = node[key]
    return node


def _own_part(
    loaded: DictConfig, raw: dict[Any, Any], file: Path
) -> tuple[DictConfig, dict[Any, Any], list[tuple[Any, ...]]]:
    """A file's own part without markers, as its tree (changed in place) and plain, and the paths it replaces."""
    holders: list[tuple[Any, ...]] = []
    _marker_holders(raw, (), holders)
    replaced: list[tuple[Any, ...]] = []
    if not holders:
        return loaded, raw, replaced
    clean = _strip_markers(raw, file, (), replaced)
    for keys in holders:
        del _node(loaded, keys)[_MARKER]
    return loaded, clean, replaced


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


def _drop_replaced(
    tree: DictConfig, document: dict[Any, Any], replaced: list[tuple[Any, ...]]
) -> dict[Any, Any]:
    """Delete the values at the ``replaced`` paths from ``tree`` (in place) and from a returned copy of
    ``document``."""
    document = copy.deepcopy(document)
    for path in replaced:
        if not path:
            return {}
        holder: Any = document
        for key in path[:-1]:
            holder = holder.get(key) if isinstance(holder, dict) else None
        if isinstance(holder, dict) and path[-1] in holder:
            del holder[path[-1]]
            del _node(tree, path[:-1])[path[-1]]
    return document


def _merge(
    base: Composition | None,
    over: DictConfig,
    clean: dict[Any, Any],
    replaced: list[tuple[Any, ...]],
    file: Path,
) -> tuple[DictConfig, dict[Any, Any]]:
    """OmegaConf's merge of ``over`` (plain: ``clean``) onto ``base`` (in place), the ``replaced`` paths dropped
    first; the merged tree and its plain containers."""
    if base is None:
        return over, clean
    tree, document = base.config, base.document
    if replaced:
        document = _drop_replaced(tree, document, replaced)
    # onto nothing, a merge changes nothing (OmegaConf keeps ??? and interpolations as written)
    if not document:
        return over, clean
    conflict = _merge_conflict(document, clean, ())
    if conflict is not None:
        where, was, now = conflict
        remedy = f"; mark the mapping with {_MARKER}: true to replace the list" if now == "mapping" else ""
        raise RecipeLoadError(
            f"{render_name(file)}: cannot merge {dotted_path(where)}: a {now} here where the recipe it "
            f"inherits from has a {was}{remedy}",
            file=os.fspath(file),
            path=dotted_path(where),
        )
    with _omegaconf_refusal(file, "merge onto its defaults"):
        merged = OmegaConf.unsafe_merge(tree, over)  # both trees are owned here
        merged_plain: dict[Any, Any] = plain(merged)
    return cast(DictConfig, merged), merged_plain


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
        """``path`` composed with its ``defaults``, depth-first (a file reached again gets a fresh tree)."""
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
            seen = self.done[real]
            return Composition(seen.document, seen.chain, build_tree(seen.document, path))
        loaded = _read(path, named_by, self.limits)
        raw: dict[Any, Any] = plain(loaded)
        parents: list[Path] = []
        if _DEFAULTS in raw:
            parents = _parent_paths(raw.pop(_DEFAULTS), path)
            del loaded[_DEFAULTS]
        composed: Composition | None = None
        chain: list[Path] = []
        for parent in parents:  # a composed parent holds no markers any more
            inherited = self.compose(parent, (*ancestry, real), path)
            tree, document = _merge(composed, inherited.config, inherited.document, [], parent)
            composed = Composition(document, (), tree)
            chain.extend(inherited.chain)
        chain.append(path)
        own, clean, replaced = _own_part(loaded, raw, path)
        tree, document = _merge(composed, own, clean, replaced, path)
        result = Composition(document, _last_places(chain), tree)
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
