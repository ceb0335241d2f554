"""NeMo RL-style recipe loading: ``defaults:`` inheritance, interpolation, validation of the generation section.

:func:`load_recipe` composes a recipe YAML with OmegaConf (SPEC §1.8), resolves the selected section leaf by leaf,
validates it as :class:`~rl_contracts.config.models.VllmConfig`, runs the reload-refit support check and reports
unknown keys.  Every problem becomes one :class:`ConfigIssue`; any error issue raises :class:`RecipeError` holding
all of them at once.  A file that cannot be read at all raises :class:`RecipeLoadError`.  No OmegaConf or YAML
exception ever escapes.  This module imports neither torch nor vLLM.
"""

from __future__ import annotations

import copy
import difflib
import importlib
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

import omegaconf
from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import GrammarParseError, OmegaConfBaseException
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import ErrorDetails

from .._messages import render, render_list, render_name, shorten, type_name
from ..checks import require_bool
from ..errors import (
    MAX_MESSAGE_CHARS,
    ConfigContractError,
    ContractError,
    ContractTypeError,
    RecipeError,
    RecipeLoadError,
)
from .generation import VllmConfig
from .keys import unknown_keys
from .refit_rules import assert_reload_refit_config_supported

_yaml: Any = importlib.import_module("yaml")  # PyYAML (OmegaConf's parser) ships no type stubs

__all__ = [
    "DEFAULT_SECTION",
    "ConfigIssue",
    "LoadedRecipe",
    "load_recipe",
    "register_resolvers",
]

DEFAULT_SECTION = "policy.generation"
"""The section :func:`load_recipe` selects when ``section`` is ``None``."""

MISSING_VALUE = "<missing>"
_MARKER = "_override_"
_DEFAULTS = "defaults"
_REASON_CHARS = 300


class ConfigIssue(BaseModel):
    """One problem found in a recipe (frozen).

    ``path`` is the full dotted path from the document root with list indices as ``[i]``
    (``policy.generation.stop_token_ids[2]``); ``value`` is ``shorten(repr(v), 200)`` or ``"<missing>"``; a load
    error reported by the CLI has an empty ``path``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    value: str
    reason: str
    severity: Literal["error", "warning"]


@dataclass(frozen=True)
class LoadedRecipe:
    """A recipe whose selected section passed every check (``status="valid"``) or was not validated ("skipped").

    ``document`` is the composed document as plain containers with interpolations left unresolved;
    ``generation`` is the validated section (``None`` when skipped); ``issues`` holds warnings only.
    """

    file: str
    section: str
    status: Literal["valid", "skipped"]
    document: dict[str, Any]
    generation: VllmConfig | None
    issues: tuple[ConfigIssue, ...] = field(default=())


# --------------------------------------------------------------------------------------------- resolvers


def _add(a: Any, b: Any) -> Any:
    return a + b


def _mul(a: Any, b: Any) -> Any:
    return a * b


def _div(a: Any, b: Any) -> Any:
    return a / b


def _max(a: Any, b: Any) -> Any:
    return max(a, b)


_RESOLVERS = {"add": _add, "mul": _mul, "div": _div, "max": _max}


def _version_at_least(version: str, minimum: tuple[int, int]) -> bool:
    """Whether a ``major.minor[...]`` version string is at least ``minimum`` (unparseable: assume current)."""
    parts = version.split(".")
    try:
        return (int(parts[0]), int(parts[1])) >= minimum
    except (ValueError, IndexError):
        return True


_OMEGACONF_2_4 = _version_at_least(omegaconf.__version__, (2, 4))


def register_resolvers() -> None:
    """Register the ``add``, ``mul``, ``div`` and ``max`` OmegaConf resolvers that recipes use (idempotent).

    A resolver whose name is already registered (by this call or by the caller) is left alone.  Uses
    ``OmegaConf.register_resolver`` on OmegaConf >= 2.4 (where ``register_new_resolver`` is deprecated) and
    ``register_new_resolver`` before (where ``register_resolver`` is the legacy string-only API), so no
    deprecation warning is emitted.
    """
    register = OmegaConf.register_resolver if _OMEGACONF_2_4 else OmegaConf.register_new_resolver
    for name, resolver in _RESOLVERS.items():
        if not OmegaConf.has_resolver(name):
            register(name, resolver)


# --------------------------------------------------------------------------------------------- paths


def _join(prefix: str, key: object, *, index: bool = False) -> str:
    """Extend a dotted path by a list index (``[i]``) or a mapping key (``.key``; an int key too: ``.5``)."""
    if index:
        return f"{prefix}[{key}]"
    name = render_name(key)
    return f"{prefix}.{name}" if prefix else name


def _join_all(prefix: str, keys: Iterable[object], data: object = None) -> str:
    """Extend ``prefix`` by ``keys``; an int is a list index where ``data`` (walked along) holds a list there."""
    path = prefix
    for key in keys:
        index = isinstance(data, list) and isinstance(key, int) and not isinstance(key, bool)
        path = _join(path, key, index=index)
        data = _lookup(data, [key])[1]
    return path


def _is_under(path: str, roots: Iterable[str]) -> bool:
    return any(path == root or path.startswith((root + ".", root + "[")) for root in roots)


def _raw(node: omegaconf.Container) -> Any:
    """The node as plain containers, interpolations and ``???`` left as written."""
    return OmegaConf.to_container(node)


def _kind(value: object) -> str:
    if isinstance(value, dict | DictConfig):
        return "mapping"
    if isinstance(value, list | ListConfig):
        return "list"
    return type_name(value)


# --------------------------------------------------------------------------------------------- composition


def _read(path: Path, named_by: Path | None) -> dict[Any, Any]:
    """Parse one recipe file with ``OmegaConf.load`` into plain containers (interpolations unresolved)."""
    file = os.fspath(path)
    try:
        loaded = OmegaConf.load(path)
    except (RecursionError, MemoryError):
        raise
    except FileNotFoundError:
        if named_by is not None:
            raise RecipeLoadError(
                f"{render_name(named_by)}: parent recipe '{render_name(file)}' named in defaults does not exist",
                file=os.fspath(named_by),
                path=_DEFAULTS,
                value=render(file),
            ) from None
        raise RecipeLoadError(f"{render_name(file)}: no such file", file=file) from None
    except OSError as exc:
        # errno None: OmegaConf.load's own rejection of a scalar root ("Invalid loaded object type: int").
        if exc.errno is None:
            raise RecipeLoadError(
                f"{render_name(file)}: the recipe root must be a mapping ({_reason(exc)})", file=file
            ) from None
        reason = exc.strerror or type_name(exc)
        raise RecipeLoadError(
            f"{render_name(file)}: cannot read the file: {render_name(reason)}", file=file
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
        key = _omegaconf_key(exc)
        raise RecipeLoadError(
            f"{render_name(file)}: invalid interpolation syntax at {render_name(key or '<root>')}: {_reason(exc)}",
            file=file,
            path=key,
        ) from None
    except (_yaml.YAMLError, OmegaConfBaseException, ValueError, TypeError) as exc:
        raise RecipeLoadError(
            f"{render_name(file)}: cannot parse the file: {_reason(exc)}", file=file
        ) from None
    if not isinstance(loaded, DictConfig):
        raise RecipeLoadError(
            f"{render_name(file)}: the recipe root must be a mapping, got a {_kind(loaded)}",
            file=file,
            value=_kind(loaded),
        )
    root: dict[Any, Any] = _raw(loaded)
    return root


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
            where = _join_all("", (*path, _MARKER))
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
        return path, _kind(base), _kind(over)
    return None


def _merge(base: dict[Any, Any], over: dict[Any, Any], file: Path) -> dict[Any, Any]:
    """OmegaConf's recursive merge of ``over`` onto ``base``, honouring ``_override_`` markers at any depth."""
    replaced: list[tuple[Any, ...]] = []
    clean = _strip_markers(over, file, (), replaced)
    base = copy.deepcopy(base)
    for path in replaced:
        holder: Any = base
        for key in path[:-1]:
            holder = holder.get(key) if isinstance(holder, dict) else None
        if path and isinstance(holder, dict):
            holder.pop(path[-1], None)
        elif not path:
            base = {}
    if not base:  # merging onto the empty base changes nothing (OmegaConf keeps ??? and interpolations as is)
        return cast("dict[Any, Any]", clean)
    conflict = _merge_conflict(base, clean, ())
    if conflict is not None:
        where, was, now = conflict
        remedy = f"; mark the mapping with {_MARKER}: true to replace the list" if now == "mapping" else ""
        raise RecipeLoadError(
            f"{render_name(file)}: cannot merge {_join_all('', where)}: a {now} here where the recipe it "
            f"inherits from has a {was}{remedy}",
            file=os.fspath(file),
            path=_join_all("", where),
        )
    try:
        merged = OmegaConf.unsafe_merge(OmegaConf.create(base), OmegaConf.create(clean))  # both are fresh
        plain: dict[Any, Any] = _raw(merged)
    except (RecursionError, MemoryError):
        raise
    except Exception as exc:
        raise RecipeLoadError(
            f"{render_name(file)}: cannot merge onto its defaults: {_reason(exc)}", file=os.fspath(file)
        ) from None
    return plain


def _compose(path: Path, ancestry: tuple[Path, ...], named_by: Path | None) -> dict[Any, Any]:
    """Load ``path`` and its ``defaults`` depth-first; parents merge left to right, the file itself last."""
    try:
        real = path.resolve()
    except RecursionError:
        raise
    except (OSError, ValueError, RuntimeError) as exc:  # embedded NUL byte, symlink loop (Python < 3.13)
        raise RecipeLoadError(
            f"{render_name(path)}: cannot resolve the path: {_reason(exc)}",
            file=os.fspath(named_by or path),
            path=_DEFAULTS if named_by else None,
        ) from None
    if real in ancestry:
        chain = [os.fspath(p) for p in (*ancestry, real)]
        raise RecipeLoadError(
            f"{render_name(path)}: defaults cycle: the file appears again in its own ancestry "
            f"{render_list(chain)}",
            file=os.fspath(path),
            path=_DEFAULTS,
            value=render_list(chain),
        )
    raw = _read(path, named_by)
    parents = _parent_paths(raw.pop(_DEFAULTS, None), path) if _DEFAULTS in raw else []
    composed: dict[Any, Any] = {}
    for parent in parents:
        composed = _merge(composed, _compose(parent, (*ancestry, real), path), parent)
    return _merge(composed, raw, path)


# --------------------------------------------------------------------------------------------- resolution


def _omegaconf_key(exc: BaseException) -> str | None:
    key = getattr(exc, "full_key", None)
    return key if isinstance(key, str) and key else None


def _reason(exc: BaseException) -> str:
    """The first line of an exception message (OmegaConf appends ``full_key``/``object_type`` lines), shortened."""
    try:
        text = str(exc)
    except Exception:
        text = ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return shorten(lines[0] if lines else type_name(exc), _REASON_CHARS)


class _Unresolved:
    """Stands in for a list element that failed resolution, so later indices keep their positions."""

    def __repr__(self) -> str:
        return "<unresolved>"


_UNRESOLVED = _Unresolved()


@dataclass
class _Resolver:
    """Resolves every leaf of one container on its own, recording each failure as an error issue."""

    issues: list[ConfigIssue] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    def fail(self, path: str, value: object, reason: str) -> None:
        self.failed.append(path)
        self.issues.append(ConfigIssue(path=path, value=render(value), reason=reason, severity="error"))

    def container(self, node: DictConfig | ListConfig, path: str, stack: tuple[int, ...]) -> Any:
        if isinstance(node, ListConfig):
            items: list[Any] = _raw(node)
            return [self.leaf(node, i, raw, path, stack) for i, raw in enumerate(items)]
        out: dict[Any, Any] = {}
        mapping: dict[Any, Any] = _raw(node)
        for key, raw_value in mapping.items():
            value = self.leaf(node, key, raw_value, path, stack)
            if value is not _UNRESOLVED:
                out[key] = value
        return out

    def leaf(
        self, node: DictConfig | ListConfig, key: Any, raw: object, path: str, stack: tuple[int, ...]
    ) -> Any:
        here = _join(path, key, index=isinstance(node, ListConfig))
        if OmegaConf.is_missing(node, key):
            self.fail(here, raw, "mandatory value is missing (???)")
            return _UNRESOLVED
        try:
            value = node[key]
        except (RecursionError, MemoryError):
            raise
        except Exception as exc:
            self.fail(here, raw, _reason(exc))
            return _UNRESOLVED
        if isinstance(value, DictConfig | ListConfig):
            if id(value) in stack:
                self.fail(here, raw, "recursive interpolation: the value contains itself")
                return _UNRESOLVED
            return self.container(value, here, (*stack, id(value)))
        return value


# --------------------------------------------------------------------------------------------- validation


def _lookup(data: Any, keys: Sequence[Any]) -> tuple[bool, Any]:
    """Follow ``keys`` through resolved plain containers; ``(False, None)`` when the path does not exist."""
    for key in keys:
        if (isinstance(data, dict) and key in data) or (
            isinstance(data, list) and isinstance(key, int) and 0 <= key < len(data)
        ):
            data = data[key]
        else:
            return False, None
    return True, data


def _pydantic_message(error: ErrorDetails) -> str:
    message = error["msg"]
    for prefix in ("Value error, ", "Assertion failed, "):
        message = message.removeprefix(prefix)
    return shorten(message, MAX_MESSAGE_CHARS)


def _typo_hint(data: dict[Any, Any], keys: Sequence[Any]) -> str:
    """For a missing key, a hint naming a present key that looks like a misspelling of it."""
    found, holder = _lookup(data, keys[:-1])
    if not (found and isinstance(holder, dict) and keys and isinstance(keys[-1], str)):
        return ""
    present = [key for key in holder if isinstance(key, str) and key != keys[-1]]
    match = difflib.get_close_matches(keys[-1], present, n=1, cutoff=0.8)
    return f"; found unknown key '{render_name(match[0])}' (a misspelling?)" if match else ""


def _schema_issues(section: str, data: dict[Any, Any], exc: ValidationError) -> list[ConfigIssue]:
    """One error issue per pydantic line error, at the full dotted path, with the value as written."""
    issues = []
    for error in exc.errors():
        keys = list(error["loc"])
        found, value = _lookup(data, keys)
        reason = _pydantic_message(error)
        kind = str(error["type"])
        if found:
            shown = render(value)
        elif kind == "missing" or kind.endswith("_missing"):
            shown = MISSING_VALUE
            reason += _typo_hint(data, keys)
        else:
            shown = render(error.get("input"))
        issues.append(
            ConfigIssue(path=_join_all(section, keys, data), value=shown, reason=reason, severity="error")
        )
    return issues


def _rule_issue(section: str, data: dict[Any, Any], exc: ContractError) -> ConfigIssue:
    """An error issue at ``{section}.{exc.path}`` with the error's rendered ``.value`` and message."""
    relative = getattr(exc, "path", None)
    keys = relative.split(".") if isinstance(relative, str) and relative else []
    shown = getattr(exc, "value", None)
    if not isinstance(shown, str):
        found, value = _lookup(data, keys)
        shown = render(value) if found else MISSING_VALUE
    return ConfigIssue(path=_join_all(section, keys, data), value=shown, reason=exc.message, severity="error")


def _unknown_key_issues(
    section: str, data: dict[Any, Any], config: VllmConfig, strict: bool
) -> list[ConfigIssue]:
    """One issue per unknown key: typo (K1) and misplaced (P28) are errors, unknown (K2) under ``strict`` too."""
    issues = []
    for unknown in unknown_keys(config):
        error = unknown.code in ("K1", "P28") or (strict and unknown.code == "K2")
        issues.append(
            ConfigIssue(
                path=_join_all(section, unknown.path, data),
                value=render(unknown.value),
                reason=unknown.reason,
                severity="error" if error else "warning",
            )
        )
    return issues


def _locate(
    file: str, document: DictConfig, section: str, resolver: _Resolver
) -> DictConfig | Literal[False] | None:
    """Find the section node: a ``DictConfig``, ``None`` when missing or null, ``False`` when resolution failed.

    Raises ``RecipeLoadError`` when the section, or a node on the way to it, is a list or a scalar.
    """
    node: Any = document
    path = ""
    for part in section.split("."):
        if not isinstance(node, DictConfig):
            raise RecipeLoadError(
                f"{render_name(file)}: {path} must be a mapping (it holds {render_name(section)}), "
                f"got a {_kind(node)}",
                file=file,
                path=path,
                value=render(_raw(node) if isinstance(node, ListConfig) else node),
            )
        here = _join(path, part)
        if part not in node.keys():  # noqa: SIM118 -- `in` on a DictConfig is False for a ??? value
            return None
        if OmegaConf.is_missing(node, part):
            resolver.fail(here, "???", "mandatory value is missing (???)")
            return False
        try:
            node = node[part]
        except (RecursionError, MemoryError):
            raise
        except Exception as exc:
            raw = _raw(node)
            resolver.fail(here, raw.get(part) if isinstance(raw, dict) else None, _reason(exc))
            return False
        if node is None:
            return None
        path = here
    if not isinstance(node, DictConfig):
        shown = _raw(node) if isinstance(node, ListConfig) else node
        raise RecipeLoadError(
            f"{render_name(file)}: section {render_name(section)} must be a mapping, got a {_kind(node)}",
            file=file,
            path=section,
            value=render(shown),
        )
    return node


def _sorted(issues: Iterable[ConfigIssue]) -> tuple[ConfigIssue, ...]:
    return tuple(sorted(issues, key=lambda issue: (issue.path, issue.reason)))


def load_recipe(
    path: str | os.PathLike[str], *, section: str | None = None, strict: bool = False
) -> LoadedRecipe:
    """Compose a recipe, resolve and validate its generation section, and return it with its warnings.

    Composition (SPEC §1.8): the file is parsed with ``OmegaConf.load``; its ``defaults`` (null, ``[]``, a path or a
    list of paths, relative to the naming file) load depth-first and merge left to right onto an empty base, the
    file itself last; a mapping marked ``_override_: true`` replaces the inherited value at any depth (markers are
    always removed); a ``???`` never replaces an inherited value.  The selected section (``section``, default
    ``policy.generation``) is then resolved leaf by leaf against the whole document with the ``add``, ``mul``,
    ``div`` and ``max`` resolvers, validated as ``VllmConfig`` when its ``backend`` is ``"vllm"``, checked with
    ``assert_reload_refit_config_supported``, and its unknown keys are reported as warnings.

    ``strict=True`` turns unknown-key warnings into errors (the ``--strict`` CLI flag); the "no generation
    section" and "backend not validated" warnings stay warnings.

    Returns:
        ``LoadedRecipe`` with status ``"valid"``, or ``"skipped"`` when ``section`` is ``None`` and the recipe has
        no (or a null) ``policy.generation``, or when the backend is not ``"vllm"``.

    Raises:
        RecipeError: any error issue (``.issues`` holds every issue, warnings included, sorted by path, reason).
        RecipeLoadError: the recipe cannot be read: I/O error, YAML or interpolation syntax error (with ``.line``
            and ``.column`` for YAML), a non-mapping root, a bad ``defaults`` value or ``_override_`` marker, a
            ``defaults`` cycle (files compared by ``Path.resolve()``), a missing parent, or a list where a mapping
            belongs (in a merge, or on the way to the section).
        ContractTypeError: ``path`` is not a ``str``/``PathLike``, ``section`` is not a ``str`` or ``None``, or
            ``strict`` is not a ``bool``.

    Example::

        recipe = load_recipe("recipes/grpo_qwen3_moe.yaml")
        recipe.generation.vllm_cfg.tensor_parallel_size  # -> 4

    Divergence: the reference honours ``_override_`` only on top-level sections and leaves ``_override_: false``
    (and the markers of a file without ``defaults``) in the merged config; rl_contracts honours it at any depth and
    removes every marker.
    """
    if not isinstance(path, str | os.PathLike):
        raise ContractTypeError.for_value("path", "a str or os.PathLike", path)
    if section is not None and not isinstance(section, str):
        raise ContractTypeError.for_value("section", "a str or None", section)
    require_bool(strict, "strict")
    file = os.fspath(path)
    if not isinstance(file, str):
        raise ContractTypeError.for_value("path", "a text path", file)
    register_resolvers()
    composed = _compose(Path(file), (), None)
    try:
        document = OmegaConf.create(composed)
    except (RecursionError, MemoryError):
        raise
    except Exception as exc:
        raise RecipeLoadError(
            f"{render_name(file)}: cannot build the composed document: {_reason(exc)}", file=file
        ) from None
    selected = DEFAULT_SECTION if section is None else section
    return _check(file, document, composed, selected, explicit=section is not None, strict=strict)


def _check(
    file: str, document: DictConfig, plain: dict[Any, Any], section: str, *, explicit: bool, strict: bool
) -> LoadedRecipe:
    """Resolve and validate the selected section of a composed document (the second half of :func:`load_recipe`)."""
    resolver = _Resolver()
    node = _locate(file, document, section, resolver)
    if node is None:
        if explicit:
            resolver.issues.append(
                ConfigIssue(
                    path=section,
                    value=MISSING_VALUE,
                    reason=f"section {render_name(section)} not found",
                    severity="error",
                )
            )
            raise _recipe_error(file, section, resolver.issues)
        warning = ConfigIssue(
            path=section,
            value=MISSING_VALUE,
            reason="no generation section (not a generation recipe)",
            severity="warning",
        )
        return LoadedRecipe(file, section, "skipped", plain, None, (warning,))
    if node is False:
        raise _recipe_error(file, section, resolver.issues)
    data = resolver.container(node, section, (id(node),))
    issues = list(resolver.issues)
    backend_path = _join(section, "backend")
    if not _is_under(backend_path, resolver.failed):
        backend = data.get("backend")
        if backend is None:
            issues.append(
                ConfigIssue(
                    path=backend_path,
                    value=MISSING_VALUE if "backend" not in data else render(backend),
                    reason="backend is required (set backend: vllm to validate this section)",
                    severity="error",
                )
            )
        elif not isinstance(backend, str):
            issues.append(
                ConfigIssue(
                    path=backend_path,
                    value=render(backend),
                    reason=f"backend must be a string such as 'vllm', got {type_name(backend)}",
                    severity="error",
                )
            )
        elif backend != "vllm":
            note = ConfigIssue(
                path=backend_path,
                value=render(backend),
                reason=f"backend '{render_name(backend)}' is not validated (only 'vllm' is)",
                severity="warning",
            )
            return LoadedRecipe(file, section, "skipped", plain, None, (note,))
    if any(issue.path == backend_path for issue in issues):
        raise _recipe_error(file, section, issues)
    config: VllmConfig | None = None
    try:
        config = VllmConfig.model_validate(data)
    except ValidationError as exc:
        issues.extend(i for i in _schema_issues(section, data, exc) if not _is_under(i.path, resolver.failed))
    except ContractError as exc:
        issues.append(_rule_issue(section, data, exc))
    if config is not None:
        try:
            assert_reload_refit_config_supported(config)
        except ConfigContractError as exc:
            issues.append(_rule_issue(section, data, exc))
        issues.extend(_unknown_key_issues(section, data, config, strict))
    if any(issue.severity == "error" for issue in issues) or config is None:
        raise _recipe_error(file, section, issues)
    return LoadedRecipe(file, section, "valid", plain, config, _sorted(issues))


def _recipe_error(file: str, section: str, issues: list[ConfigIssue]) -> RecipeError:
    ordered = _sorted(issues)
    errors = [issue for issue in ordered if issue.severity == "error"]
    summary = render_list(f"{issue.path}: {issue.reason}" for issue in errors)
    return RecipeError(
        f"{render_name(file)}: section {render_name(section)} has {len(errors)} error(s): {summary}",
        file=file,
        issues=ordered,
    )
