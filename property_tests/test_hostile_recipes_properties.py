"""Hostile recipe files against ``load_recipe`` and ``rl-contracts validate`` (issue 21, README "Security and
limits").

Invariant: for any hostile recipe (:func:`rl_contracts.testing.strategies.hostile_recipes`), ``load_recipe``
returns or raises only a ``ContractError`` (``RecipeLoadError``, ``RecipeError`` or another), within
:data:`TIME_LIMIT_S` seconds and a tracemalloc peak of :data:`MEMORY_LIMIT_BYTES`; and ``validate`` in every
format exits 0, 1 or 2 and prints no control character of the recipe (only its own newlines).
"""

from __future__ import annotations

import contextlib
import io
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Final

import pytest
from hypothesis import HealthCheck, given, settings

from rl_contracts._internal.messages import CONTROL_CHARACTERS
from rl_contracts.cli import main
from rl_contracts.config import load_recipe
from rl_contracts.errors import ContractError
from rl_contracts.testing.strategies import HOSTILE_KINDS, HostileKind, HostileRecipe, hostile_recipes

CHECKED_KINDS: Final[tuple[HostileKind, ...]] = HOSTILE_KINDS
"""The hostile classes the property runs: every one (depth, numbers, keys, interpolation, diamonds)."""

TIME_LIMIT_S: Final = 30.0
"""Wall-clock bound on one ``load_recipe`` (generous: CI machines are shared; a hang is what it catches)."""
MEMORY_LIMIT_BYTES: Final = 256 * 2**20
"""Bound on the tracemalloc peak of one ``load_recipe`` (the bombs it catches reach gigabytes)."""


def _load(path: Path) -> None:
    with contextlib.suppress(ContractError):
        load_recipe(path)


@settings(
    deadline=None, max_examples=40, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(recipe=hostile_recipes(CHECKED_KINDS))
def test_hostile_recipes_load_within_bounds(recipe: HostileRecipe) -> None:
    """load_recipe of a hostile recipe raises nothing but ContractErrors, within the time and memory bounds."""
    with tempfile.TemporaryDirectory() as directory:
        path = recipe.write(Path(directory))
        tracemalloc.start()
        start = time.perf_counter()
        try:
            _load(path)
            elapsed = time.perf_counter() - start
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert elapsed < TIME_LIMIT_S, (recipe.description, elapsed)
    assert peak < MEMORY_LIMIT_BYTES, (recipe.description, peak)


@pytest.mark.parametrize("fmt", ["human", "json", "github"])
@settings(
    deadline=None, max_examples=15, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(recipe=hostile_recipes(CHECKED_KINDS))
def test_hostile_recipes_validate_with_escaped_output(fmt: str, recipe: HostileRecipe) -> None:
    """validate exits 0, 1 or 2 in every format and no raw control character of the recipe reaches stdout."""
    with tempfile.TemporaryDirectory() as directory:
        path = recipe.write(Path(directory))
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            status = main(["validate", "--format", fmt, str(path)])
    assert status in (0, 1, 2)
    assert not CONTROL_CHARACTERS.search(out.getvalue().replace("\n", "")), recipe.description
