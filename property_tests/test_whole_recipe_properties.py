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
    """Invariant: a removed required key (V8), a wrong type (V9), a misspelled key (K1), an unknown key (K2), a key
    copied into a section that does not read it (K3), a size of 0 (P32), a global batch that does not divide a
    step (P33), a micro-batch that does not divide its global batch (P34), dynamic batching with sequence packing
    (P35) or checkpointing every 0 steps (P36), planted in a valid recipe, is reported with exactly its code at
    its path, and nothing else is reported but what the plant implies (the V8 of a required key a typo took away)."""
    assert findings(planted.algorithm, planted.recipe) == {(planted.code, planted.path), *planted.also}
