"""The stages of the config core import downward only: no module imports one of a higher stage.

Stages, lowest first (docs/development/config-core.md): the core records (``config.finding``, ``config.rule``);
the private base models and helpers (``rl_contracts._internal.config_*``); what a section is (``config.section``); the rule
families and the preflight engine (``config.rules``); how a file becomes a document and its section is checked
(``config.loading``, ``config.worker_class``); the rule table (``config.rules.registry``, which collects the checks
of every stage below); ``load_recipe``, which runs them all; fixes, baselines and YAML edits; the public
``config`` package; the CLI.  Every import is read with ``ast`` (at module level, under ``TYPE_CHECKING`` and inside functions).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

STAGES: tuple[tuple[str, ...], ...] = (
    ("rl_contracts.config.finding", "rl_contracts.config.rule"),
    ("rl_contracts._internal.config_",),
    ("rl_contracts.config.section",),
    ("rl_contracts.config.rules",),
    ("rl_contracts.config.loading", "rl_contracts.config.worker_class"),
    ("rl_contracts.config.rules.registry",),
    ("rl_contracts.config.loading.load_recipe",),
    ("rl_contracts.config.fixes", "rl_contracts.config.baseline", "rl_contracts.config.yaml_edits"),
    ("rl_contracts.config",),
    ("rl_contracts.cli",),
)
"""Module prefixes of each stage, lowest first; a module's stage is that of its longest matching prefix."""


def stage_of(module: str) -> int | None:
    """The stage of ``module`` (``None`` outside the config core and the CLI: the library it builds on)."""
    best: tuple[int, int] | None = None
    for index, prefixes in enumerate(STAGES):
        for prefix in prefixes:
            if (
                module == prefix
                or module.startswith(prefix + ".")
                or (prefix.endswith("_") and module.startswith(prefix))
            ) and (best is None or len(prefix) > best[1]):
                best = (index, len(prefix))
    return None if best is None else best[0]


def _module_name(path: Path, src: Path) -> str:
    parts = path.relative_to(src).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str, src: Path) -> bool:
    relative = Path(*name.split("."))
    return (src / relative).with_suffix(".py").is_file() or (src / relative / "__init__.py").is_file()


def imported_modules(path: Path, src: Path = SRC) -> set[str]:
    """The modules ``path`` imports, relative imports resolved (``from . import x`` names ``package.x``)."""
    name = _module_name(path, src)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            target = ".".join([*base, *([node.module] if node.module else [])])
            for alias in node.names:
                child = f"{target}.{alias.name}"
                found.add(child if _is_module(child, src) else target)
    return found


def upward_imports(src: Path = SRC) -> list[str]:
    """Every import from a lower stage to a higher one, as ``importer -> imported``."""
    found = []
    for path in sorted((src / "rl_contracts").rglob("*.py")):
        importer = _module_name(path, src)
        low = stage_of(importer)
        if low is None:
            continue
        for imported in sorted(imported_modules(path, src)):
            high = stage_of(imported)
            if high is not None and high > low:
                found.append(f"{importer} -> {imported}")
    return found


def test_no_module_imports_a_higher_stage() -> None:
    """Zero imports run upward (section never imports rules; rules never import loading; nothing imports cli)."""
    assert upward_imports() == []


@pytest.mark.parametrize(
    ("module", "stage"),
    [
        ("rl_contracts.config.finding", 0),
        ("rl_contracts._internal.config_base", 1),
        ("rl_contracts.config.section.cross_field", 2),
        ("rl_contracts.config.rules.preflight.engine", 3),
        ("rl_contracts.config.loading.compose", 4),
        ("rl_contracts.config.rules.registry", 5),
        ("rl_contracts.config.loading.load_recipe", 6),
        ("rl_contracts.config", 8),
        ("rl_contracts.cli.validate", 9),
        ("rl_contracts.errors", None),
    ],
)
def test_each_module_has_its_stage(module: str, stage: int | None) -> None:
    """The longest matching prefix decides (``config.rules.x`` is a rule module, ``config`` the package)."""
    assert stage_of(module) == stage


def test_the_checker_reports_an_upward_import(tmp_path: Path) -> None:
    """The checker itself can fail: a section module importing the rule table (relatively) is reported."""
    config = tmp_path / "rl_contracts" / "config"
    for folder in ("section", "rules"):
        (config / folder).mkdir(parents=True)
        (config / folder / "__init__.py").write_text("")
    (config / "__init__.py").write_text("")
    (config / "rules" / "registry.py").write_text("from ..section import generation\n")
    (config / "section" / "generation.py").write_text(
        "from ..rules import registry\nfrom .. import finding\n"
    )
    (config / "finding.py").write_text("")
    assert upward_imports(tmp_path) == [
        "rl_contracts.config.section.generation -> rl_contracts.config.rules.registry"
    ]
