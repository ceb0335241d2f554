"""The preflight rule tests' one recipe builder: the passing base recipe with dotted-path overrides.

A test asks for the ``recipe`` fixture, a function: ``recipe(*layers)`` is ``tests/data/preflight/base.yaml`` (a
recipe that passes every rule) with each layer's dotted-path overrides applied in order, on a fresh copy.  A missing
or non-mapping parent becomes an empty mapping; the value
:data:`~rl_contracts.config.rules.preflight.ABSENT` removes the key.
"""

from __future__ import annotations

import copy
import importlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from rl_contracts.config.rules.preflight import ABSENT

yaml: Any = importlib.import_module("yaml")  # PyYAML ships no type stubs
BASE: dict[str, Any] = yaml.safe_load(
    (Path(__file__).parents[3] / "data" / "preflight" / "base.yaml").read_text()
)


def _recipe(*layers: Mapping[str, object]) -> dict[str, Any]:
    document = copy.deepcopy(BASE)
    for layer in layers:
        for path, value in layer.items():
            *parents, last = path.split(".")
            node = document
            for key in parents:
                if not isinstance(node.get(key), dict):
                    node[key] = {}
                node = node[key]
            if value is ABSENT:
                node.pop(last, None)
            else:
                node[last] = copy.deepcopy(value)
    return document


@pytest.fixture(name="recipe")
def recipe_fixture() -> Callable[..., dict[str, Any]]:
    """``recipe(*layers)``: the base recipe with each layer's dotted-path overrides (see the module docstring)."""
    return _recipe
