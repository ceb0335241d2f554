"""Resolution of a composed recipe: the resolvers recipes use, and every leaf resolved on its own (SPEC §1.8).

Interpolations ``${a.b}`` (absolute), ``${.x}`` (a sibling) and ``${..x}`` (the parent's sibling) resolve against
the whole document.  :func:`resolve_document` resolves the whole document, leaf by leaf, so that one failing leaf
(a ``???``, an unset ``${oc.env:...}``, a resolver error) is dropped from its mapping and recorded as a finding,
never raised; in a list its place keeps :data:`UNRESOLVED` so later indices keep their positions.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final, NamedTuple

import omegaconf
from omegaconf import MISSING, DictConfig, ListConfig, OmegaConf

from ..._internal.config_paths import Keys, dotted_path, is_under
from ..finding import Finding
from ..rule import Rule, checks
from .compose import build_tree
from .limits import active_budget
from .parsing import reason

__all__ = [
    "UNRESOLVED",
    "V2",
    "Resolution",
    "ResolverLimitError",
    "register_resolvers",
    "resolve_document",
    "version_at_least",
]

V2 = Rule(
    "V2",
    "unresolved-value",
    summary="a value cannot be resolved (missing ??? or a failed interpolation)",
    reference="config load (S0)",
    what_it_checks=(
        "That every value of the generation section resolves: no mandatory `???` left, and every `${...}` "
        "interpolation (resolvers `add`, `mul`, `div`, `max`, `oc.env`, ...) evaluates."
    ),
    why_it_matters=(
        "The trainer resolves the config at start-up (S0) and fails with an OmegaConf `MissingMandatoryValue` "
        "or `InterpolationResolutionError`; outside the section, an unresolved leaf only makes the rules "
        "reading it skip."
    ),
    example="""\
policy:
  generation:
    max_new_tokens: ${policy.max_new_token_count}
""",
    fix="Give the value in the recipe or with `--set KEY=VALUE`, or fix the interpolation.",
)


class ResolverLimitError(ValueError):
    """A resolver call whose result would go beyond :class:`~.limits.Limits` (rule V6)."""


def _size(value: Any) -> int | None:
    return len(value) if isinstance(value, str | bytes | list | tuple | dict) else None


def _check_result(name: str, result: Any) -> Any:
    """``result`` after the active budget's bounds: integer magnitude, length, and the load's total length."""
    budget = active_budget()
    limits = budget.limits
    if (
        isinstance(result, int)
        and not isinstance(result, bool)
        and result.bit_length() > limits.resolver_bits
    ):
        raise ResolverLimitError(
            f"{name} would return an integer of {result.bit_length():,} bits (limit {limits.resolver_bits} bits: "
            "Limits.resolver_bits)"
        )
    size = _size(result)
    if size is not None:
        _charge(name, size)
    return result


def _charge(name: str, size: int) -> None:
    budget = active_budget()
    limits = budget.limits
    if size > limits.resolver_chars:
        raise ResolverLimitError(
            f"{name} would return {size:,} characters or items (limit {limits.resolver_chars:,}: "
            "Limits.resolver_chars)"
        )
    if budget.resolver_chars_used + size > limits.resolver_chars:
        raise ResolverLimitError(
            f"the resolvers of this recipe would return more than {limits.resolver_chars:,} characters or items "
            "in all (Limits.resolver_chars)"
        )
    budget.resolver_chars_used += size


def _add(a: Any, b: Any) -> Any:
    sizes = (_size(a), _size(b))
    if sizes[0] is not None and sizes[1] is not None:
        _charge("add", sizes[0] + sizes[1])
        return a + b
    return _check_result("add", a + b)


def _mul(a: Any, b: Any) -> Any:
    for seq, times in ((a, b), (b, a)):
        size = _size(seq)
        if size is not None and isinstance(times, int):
            _charge("mul", size * max(times, 0))
            return a * b
    bits = active_budget().limits.resolver_bits
    if isinstance(a, int) and isinstance(b, int) and a.bit_length() + b.bit_length() > bits + 1:
        raise ResolverLimitError(
            f"mul would return an integer of about {a.bit_length() + b.bit_length():,} bits (limit {bits} bits: "
            "Limits.resolver_bits)"
        )
    return _check_result("mul", a * b)


def _div(a: Any, b: Any) -> Any:
    return _check_result("div", a / b)


def _max(a: Any, b: Any) -> Any:
    return _check_result("max", max(a, b))


_RESOLVERS = {"add": _add, "mul": _mul, "div": _div, "max": _max}


def version_at_least(version: str, minimum: tuple[int, int]) -> bool:
    """Whether a ``major.minor[...]`` version string is at least ``minimum`` (unparseable: assume current)."""
    parts = version.split(".")
    try:
        return (int(parts[0]), int(parts[1])) >= minimum
    except (ValueError, IndexError):
        return True


_OMEGACONF_2_4 = version_at_least(omegaconf.__version__, (2, 4))


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


class _Unresolved:
    """The type of :data:`UNRESOLVED`."""

    def __repr__(self) -> str:
        return "<unresolved>"


UNRESOLVED: Final[Any] = _Unresolved()
"""Stands in for a list element that failed resolution (``repr``: ``<unresolved>``)."""


class Resolution(NamedTuple):
    """The resolved document as plain containers, without its failed leaves, and the finding of each failed leaf
    in walk order (``V2``, or ``V6`` where a loading limit refused it; its value as written, OmegaConf's reason)."""

    document: dict[Any, Any]
    failures: tuple[Finding, ...]

    @property
    def unresolved(self) -> tuple[str, ...]:
        """The dotted paths of the failed leaves."""
        return tuple(failure.path for failure in self.failures)

    def failed_under(self, root: str) -> list[Finding]:
        """The failures at or below the dotted path ``root``, or above it (a section that itself failed)."""
        return [
            failure
            for failure in self.failures
            if is_under(failure.path, [root]) or is_under(root, [failure.path])
        ]


class _Walk:
    """Resolves every leaf of a container on its own, collecting the failures."""

    def __init__(self, refused: Mapping[Keys, str]) -> None:
        self.refused = refused
        self.failures: list[Finding] = []
        # each failing container as written, converted once; holding the node keeps its id unique
        self._written: dict[int, tuple[DictConfig | ListConfig, Any]] = {}

    def fail(self, path: str, node: DictConfig | ListConfig, key: Any, why: str, code: str = "V2") -> Any:
        if id(node) not in self._written:
            self._written[id(node)] = (node, OmegaConf.to_container(node))
        written = self._written[id(node)][1]
        raw = written[key] if isinstance(written, dict | list) else None
        self.failures.append(Finding(code=code, path=path, value=raw, message=why))
        return UNRESOLVED

    def container(self, node: DictConfig | ListConfig, keys: Keys, path: str, stack: tuple[int, ...]) -> Any:
        if isinstance(node, ListConfig):
            return [self.leaf(node, i, keys, f"{path}[{i}]", stack) for i in range(len(node))]
        out: dict[Any, Any] = {}
        for key in list(node.keys()):
            value = self.leaf(node, key, keys, dotted_path((key,), prefix=path), stack)
            if value is not UNRESOLVED:
                out[key] = value
        return out

    def leaf(
        self, node: DictConfig | ListConfig, key: Any, keys: Keys, path: str, stack: tuple[int, ...]
    ) -> Any:
        here = (*keys, key)
        if here in self.refused:
            return self.fail(path, node, key, self.refused[here], "V6")
        if OmegaConf.is_missing(node, key):
            return self.fail(path, node, key, "mandatory value is missing (???)")
        try:
            value = node[key]
        except MemoryError:
            raise
        except RecursionError:
            return self.fail(path, node, key, "its interpolations nest too deep to resolve", "V6")
        except Exception as exc:
            limited = _limit_cause(exc)
            if limited is not None:
                return self.fail(path, node, key, limited, "V6")
            return self.fail(path, node, key, reason(exc))
        if isinstance(value, DictConfig | ListConfig):
            if id(value) in stack:
                return self.fail(path, node, key, "recursive interpolation: the value contains itself")
            return self.container(value, here, path, (*stack, id(value)))
        return value


def _limit_cause(exc: BaseException) -> str | None:
    """The message of the :class:`ResolverLimitError` behind an OmegaConf error, if one is."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ResolverLimitError):
            return reason(current)
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _literal(value: Any) -> bool:
    """Whether ``value`` holds no interpolation and no ``???``: resolving it changes nothing."""
    if isinstance(value, dict):
        return all(_literal(item) for item in value.values())
    if isinstance(value, list):
        return all(_literal(item) for item in value)
    return not isinstance(value, str) or ("${" not in value and value != MISSING)


@checks(V2)
def resolve_document(
    document: dict[Any, Any], file: str, refused: Mapping[Keys, str] | None = None
) -> Resolution:
    """Resolve every leaf of the composed ``document`` of ``file`` (plain containers, not changed); never raises
    for a leaf that fails (it is recorded instead).

    A document without interpolations or ``???`` is copied as is; one without failures resolves in one OmegaConf
    pass; otherwise each leaf is resolved on its own.  A leaf at a key of ``refused`` (keys -> reason,
    :func:`~.expansion.analyse`) is not resolved: it fails with code V6, as does a leaf whose resolver call goes
    beyond the active :class:`~.limits.Budget`.  Raises ``RecipeLoadError`` (V1) when OmegaConf refuses to build
    the document, and ``MemoryError``.
    """
    if not refused and _literal(document):
        return Resolution(copy.deepcopy(document), ())
    tree = build_tree(document, file, "the composed document")
    try:
        if refused:
            raise LookupError("refused values resolve leaf by leaf")
        resolved = OmegaConf.to_container(tree, resolve=True, throw_on_missing=True)
    except MemoryError:
        raise
    except Exception:
        active_budget().resolver_chars_used = 0  # the leaf-by-leaf pass resolves again
        walk = _Walk(refused or {})
        plain = walk.container(tree, (), "", (id(tree),))
        return Resolution(plain, tuple(walk.failures))
    return Resolution(resolved, ())  # type: ignore[arg-type]
