"""Cross-references the API reference resolves beyond Sphinx's exact-name lookup.

The API reference documents every object once, in the module that defines it (sphinx-autodoc2), while docstrings
and annotations name objects as users import them: ``rl_contracts.config.load_recipe`` is a re-export of
``rl_contracts.config.loading.load_recipe.load_recipe``.  On a missing ``py:`` reference this extension

- resolves a name of ours to the documented object of that last name under the package the reference names, or
  under the module the reference is written in (the nearest scope first; of a re-export and its definition, the
  re-export users import); two candidates of the same length stay unresolved;
- renders as text a private name (a path with a ``_component``) and a name its module binds without exporting
  it (not in ``__all__``, e.g. a type alias in a signature): neither is public API, so neither is documented.

Everything else stays a nitpicky warning, except the third-party names ``conf.py`` lists in ``nitpick_ignore_regex``.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.addnodes import pending_xref
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.util.nodes import make_refnode

PACKAGE = "rl_contracts"
SOURCES = Path(__file__).resolve().parents[2] / "src" / PACKAGE


def _private(target: str) -> bool:
    return any(part.startswith("_") and not part.startswith("__") for part in target.split("."))


def _scopes(target: str, context: str | None) -> list[str]:
    """Where to look: the package the target names (or the module and class it is written in), then upwards."""
    scope = target.rsplit(".", 1)[0] if target.startswith(PACKAGE + ".") else context
    scopes = []
    while scope:
        scopes.append(scope)
        scope = scope.rpartition(".")[0]
    return scopes


@functools.cache
def _module_names(module: str) -> frozenset[str]:
    """The top-level names a module of ours binds (defined or imported), read from its source."""
    base = SOURCES.joinpath(*module.split(".")[1:])
    path = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
    if not path.is_file():
        return frozenset()
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(target.id for target in targets if isinstance(target, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return frozenset(names)


def _unexported(target: str, context: str | None) -> bool:
    """The target is a name its module binds but does not export (not in ``__all__``): not public API."""
    module, _, name = target.rpartition(".") if target.startswith(PACKAGE + ".") else (context, "", target)
    while module:
        if name in _module_names(module):
            return True
        module = module.rpartition(".")[0]
    return False


def _candidates(objects: dict[str, Any], target: str, context: str | None) -> list[str]:
    last = target.rsplit(".", 1)[-1]
    scopes = _scopes(target, context)
    for scope in scopes:
        found = sorted(
            name
            for name in objects
            if name.startswith(scope + ".") and name.rsplit(".", 1)[-1] == last and not _private(name)
        )
        if found:
            return found
    return []


def resolve(app: Sphinx, env: BuildEnvironment, node: pending_xref, contnode: nodes.TextElement) -> Any:
    """A reference node for a re-exported name of ours, the text of a private one, else ``None``."""
    if node.get("refdomain") != "py":
        return None
    target: str = node["reftarget"]
    context = ".".join(part for part in (node.get("py:module"), node.get("py:class")) if part) or None
    ours = target.startswith(PACKAGE) or (context or "").startswith(PACKAGE)
    if not ours:
        return None
    if _private(target):
        return contnode
    domain = env.get_domain("py")
    objects = domain.objects  # type: ignore[attr-defined]
    found = _candidates(objects, target, context)
    if len(found) > 1:  # a module and its function of the same name: the role decides
        kinds = domain.objtypes_for_role(node["reftype"]) or []
        found = [name for name in found if objects[name].objtype in kinds]
    if len(found) > 1:  # a re-export and its definition: the shortest path, the one users import
        shortest = min(len(name) for name in found)
        found = [name for name in found if len(name) == shortest]
    if len(found) != 1:
        return contnode if not found and _unexported(target, context) else None
    entry = objects[found[0]]
    return make_refnode(app.builder, node["refdoc"], entry.docname, entry.node_id, contnode, found[0])


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("missing-reference", resolve)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
