"""Properties of the whole-recipe checks, over recipes drawn from the recipe models of every algorithm."""

from __future__ import annotations

from typing import Any

from hypothesis import given

from rl_contracts.config.rules.recipe_arithmetic import arithmetic_findings
from rl_contracts.config.rules.recipe_keys import recipe_key_findings
from rl_contracts.config.rules.recipe_schema import schema_findings
from rl_contracts.config.section.recipe import Algorithm
from rl_contracts.testing.strategies import PlantedFinding, broken_whole_recipes, whole_recipes


def findings(algorithm: Algorithm, recipe: dict[str, Any]) -> set[tuple[str, str]]:
    """(code, path) of every whole-recipe finding of ``recipe`` as ``algorithm``'s."""
    found = [
        *schema_findings(recipe, algorithm),
        *recipe_key_findings(recipe, algorithm),
        *arithmetic_findings(recipe, algorithm),
    ]
    return {(finding.code, finding.path) for finding in found}


@given(whole_recipes())
def test_a_drawn_valid_recipe_validates(drawn: tuple[Algorithm, dict[str, Any]]) -> None:
    """Invariant: a recipe with every required key, declared keys only, values of their types and ranges and
    consistent batch sizes has no whole-recipe finding, whatever its algorithm."""
    algorithm, recipe = drawn
    assert findings(algorithm, recipe) == set()


@given(broken_whole_recipes())
def test_a_planted_finding_is_reported_at_its_path(planted: PlantedFinding) -> None:
    """Invariant: a removed required key (V8), a wrong type (V9), a size of 0 (P32), a misspelled key (K1) or an
    unknown key (K2) planted in a valid recipe is reported with its code at its path."""
    assert (planted.code, planted.path) in findings(planted.algorithm, planted.recipe)
