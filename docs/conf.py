"""Sphinx configuration of the rl_contracts documentation (Sphinx + MyST + sphinx-autodoc2).

Build: ``sphinx-build -W --keep-going -n docs docs/_build/html`` (warnings are errors, every cross-reference
resolved).  The rules catalogue pages are generated at build time from ``rl-contracts rules --format json``.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

from rl_contracts import __version__  # noqa: E402  (the installed package: what the API reference documents)

project = "rl_contracts"
author = "The rl_contracts authors"
copyright = "the rl_contracts authors"
release = __version__
version = ".".join(__version__.split(".")[:2])

extensions = [
    "myst_parser",
    "autodoc2",
    "sphinx.ext.intersphinx",
    "rules_catalogue",
    "api_references",
]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build", "_ext", "_generated", "examples"]
myst_enable_extensions = ["colon_fence", "deflist", "fieldlist"]
myst_heading_anchors = 3

html_theme = "furo"
html_title = f"rl_contracts {release}"
html_static_path: list[str] = []

autodoc2_packages = [
    {
        "path": "../src/rl_contracts",
        "module": "rl_contracts",
        "exclude_dirs": ["__pycache__", "_internal"],
        # The deprecated config.preflight, which re-exports config.rules.preflight (CHANGELOG.md says when it goes).
        "exclude_files": ["config/preflight.py"],
    }
]
# Each module that declares ``__all__`` is documented as exactly those names, re-exports included (the root
# package's ``__all__`` is computed, so it is read as a plain module).
# config.rules.preflight re-exports its submodules' names, which their own pages document.
autodoc2_module_all_regexes = [r"rl_contracts\.(?!config\.rules\.preflight$).+"]
# Private modules are read (their names resolve where they are re-exported) but get no page.
autodoc2_hidden_regexes = [r".*\._(?!_)[^.]*(\..*)?"]
autodoc2_render_plugin = "myst"
autodoc2_hidden_objects = ["private", "inherited", "dunder"]
autodoc2_docstring_parser_regexes = [(r".*", "google_docstrings")]

# autodoc2.all_resolve: autodoc2 cannot resolve two names of an __all__ statically: vllm_utils'
# G_ROUTED_EXPERTS_RANGE_CHECKED (a module global of routed_experts it re-binds) and testing.strategies'
# hostile_recipes (a module and its function of one name); both are documented in their own module.
suppress_warnings = ["autodoc2.all_resolve"]
nitpicky = True
# Names of other projects the reference cannot link: no inventory of theirs is reachable from the build (no
# network), so they render as text.  Names of rl_contracts are never listed here (api_references.py resolves
# re-exports; anything else of ours that does not resolve fails the build).
_THIRD_PARTY = [
    "builtins",
    "collections",
    "collections.abc",
    "typing",
    "typing_extensions",
    "types",
    "pathlib",
    "os",
    "argparse",
    "enum",
    "json",
    "logging",
    "numpy",
    "numpy.typing",
    "torch",
    "pydantic",
    "pydantic_core",
    "hypothesis",
    "hypothesis.strategies",
    "omegaconf",
    "rich",
    "rich.console",
    "pytest",
    "_pytest",
]
_BUILTINS = "(str|int|float|bool|bytes|object|list|dict|tuple|set|frozenset|type|getattr|None)"
nitpick_ignore_regex = [
    (r"py:.*", "(" + "|".join(name.replace(".", r"\.") for name in _THIRD_PARTY) + r")\..+"),
    (r"py:.*", rf"{_BUILTINS}( \| {_BUILTINS})*"),  # builtins, and unions of them autodoc2 leaves as one name
    (
        r"py:.*",
        r"'[A-Za-z]+'",
    ),  # a string argument in a default value (parsing's getattr(yaml, 'CSafeLoader'))
    (r"py:.*", "(BeforeValidator|WithJsonSchema)"),  # pydantic's, imported by name into our modules
]
