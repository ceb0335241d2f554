"""The shape of the package: an acyclic import graph, no module reaching into another's underscore names, and
README's package layout table as the one module map.

Read with ``ast`` over ``src/rl_contracts`` (nothing is imported), so a function-level import counts as much as a
top-level one.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PACKAGE = SRC / "rl_contracts"


def _module_name(file: Path) -> str:
    parts = file.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_package(file: Path) -> bool:
    return file.name == "__init__.py"


MODULES = {_module_name(file): file for file in sorted(PACKAGE.rglob("*.py"))}


def _absolute(module: str, file: Path, node: ast.ImportFrom) -> str:
    """The absolute module an ``ImportFrom`` reads from (relative imports resolved against ``module``)."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if not _is_package(file):
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _imports(module: str, file: Path) -> Iterator[tuple[int, str, str | None]]:
    """``(line, imported module, imported name or None)`` for every import of a library module in ``file``."""
    for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("rl_contracts"):
                    yield node.lineno, alias.name, None
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(module, file, node)
            if source.startswith("rl_contracts"):
                for alias in node.names:
                    yield node.lineno, source, alias.name


def _target(source: str, name: str | None) -> str:
    """The module an import depends on: a submodule when ``from pkg import sub`` names one, else ``source``."""
    if name is not None and f"{source}.{name}" in MODULES:
        return f"{source}.{name}"
    return source


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {module: set() for module in MODULES}
    for module, file in MODULES.items():
        for _, source, name in _imports(module, file):
            target = _target(source, name)
            if target in MODULES and target != module:
                graph[module].add(target)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` as a list of modules, or ``None`` (iterative DFS with colours)."""
    colour = dict.fromkeys(graph, 0)
    for root in graph:
        if colour[root]:
            continue
        stack: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        colour[root] = 1
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                colour[node] = 2
                stack.pop()
            elif colour[child] == 1:
                path = [entry for entry, _ in stack]
                return [*path[path.index(child) :], child]
            elif colour[child] == 0:
                colour[child] = 1
                stack.append((child, iter(sorted(graph[child]))))
    return None


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_the_import_graph_of_the_package_is_acyclic() -> None:
    """No chain of imports (top-level or inside a function) leads from a library module back to itself.

    A package's ``__init__`` re-exporting its own submodules is the one dependency left out: importing a submodule
    always runs its package first, which is not a cycle between concerns.
    """
    graph = _graph()
    for module in graph:
        graph[module] = {target for target in graph[module] if not target.startswith(f"{module}.")}
    assert _cycle(graph) is None


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_imports_another_modules_underscore_names(module: str) -> None:
    """Shared helpers are public names of a private module; no import names ``_x`` from a non-private module."""
    reaches = [
        f"line {line}: {name} from {source}"
        for line, source, name in _imports(module, MODULES[module])
        if name is not None
        and _is_private(name)
        and not _is_private(source.rsplit(".", 1)[-1])
        and _target(source, name) == source
    ]
    assert reaches == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    """The checker itself can fail: a two-module loop is reported as that loop."""
    assert _cycle({"a": {"b"}, "b": {"a"}, "c": set()}) == ["a", "b", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


@pytest.mark.parametrize("module", sorted(set(MODULES) - {"rl_contracts._internal"}))
def test_every_module_declares_all(module: str) -> None:
    """Every library module lists its public names in ``__all__`` (SPEC §0.2); ``rl_contracts._internal``'s
    ``__init__`` is its one-line docstring (the house convention) and exports nothing."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    assigned = {
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign | ast.AnnAssign)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name)
    }
    assert "__all__" in assigned


def _layout_rows() -> list[tuple[str, str]]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n### Package layout\n", 1)[1]
    section = re.split(r"^#{2,3} ", section, maxsplit=1, flags=re.M)[0]
    return re.findall(r"^\| `(rl_contracts[\w.]*)` \| (.*?) \|$", section, re.M)


def test_package_layout_lists_exactly_the_modules() -> None:
    """Development's package layout table has one row, with a concern, for every module under src/rl_contracts."""
    rows = _layout_rows()
    listed = [module for module, _ in rows]
    assert len(listed) == len(set(listed)), "a module is listed twice"
    modules = set(MODULES)
    assert set(listed) == modules, (
        f"README's package layout: add {sorted(modules - set(listed))}, remove {sorted(set(listed) - modules)}"
    )
    assert all(concern.strip() for _, concern in rows)


def test_package_layout_lists_each_package_before_its_modules() -> None:
    """The table is the module map: every module comes after the row of its package, so it reads as a tree."""
    listed = [module for module, _ in _layout_rows()]
    late = [
        module
        for index, module in enumerate(listed)
        if "." in module and module.rsplit(".", 1)[0] not in listed[:index]
    ]
    assert late == []
