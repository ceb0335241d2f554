"""The examples in the library's docstrings run and show what they claim."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import rl_contracts

# ``rl_contracts.cli.__main__`` runs the command line when imported; it has no docstring examples.
MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(rl_contracts.__path__, "rl_contracts.")
    if info.name != "rl_contracts.cli.__main__"
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_pass(name: str) -> None:
    """Every ``>>>`` example in the module runs and prints exactly the output written under it."""
    assert doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS).failed == 0


def test_the_examples_are_found() -> None:
    """The modules whose docstrings carry examples are among those checked (a rename cannot skip them)."""
    finder = doctest.DocTestFinder()
    with_examples = {
        name for name in MODULES if any(test.examples for test in finder.find(importlib.import_module(name)))
    }
    assert {"rl_contracts.codec", "rl_contracts.metrics", "rl_contracts.routed_experts"} <= with_examples
