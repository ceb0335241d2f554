"""Tests for ``--set`` overrides (config/loading/overrides.py): keys the recipe lacks are K1 issues, hostile keys
and values are refused with a load error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rl_contracts.config import load_recipe
from rl_contracts.errors import RecipeError, RecipeLoadError

BASE = Path(__file__).parents[2] / "data" / "recipes" / "grpo_base.yaml"


@pytest.mark.parametrize(
    ("override", "path"),
    [
        ("policy.generation.nope=1", "policy.generation.nope"),
        ("policy.nope.x=1", "policy.nope"),
    ],
)
def test_an_absent_key_is_k1_not_a_load_error(override: str, path: str) -> None:
    """``key=value`` naming a key the recipe lacks is reported as K1 at the first missing key (issue 24)."""
    with pytest.raises(RecipeError) as info:
        load_recipe(BASE, overrides=[override])
    (issue,) = info.value.issues or ()
    assert (issue.code, issue.path, issue.source, issue.json_value) == ("K1", path, "--set", override)
    assert "not applied" in issue.reason


@pytest.mark.parametrize("key", ["policy.²", "policy.generation.²", "policy.٣"])
def test_unicode_digit_segments_are_keys_not_indices(key: str) -> None:
    """A segment such as ``²`` (``isdigit()`` but not ``int()``) is a mapping key: ``++`` adds it, no ValueError."""
    recipe = load_recipe(BASE, overrides=[f"++{key}=1"], run_preflight=False)
    holder: Any = recipe.document
    for part in key.split("."):
        holder = holder[part]
    assert holder == 1


def test_a_unicode_digit_segment_does_not_index_a_list() -> None:
    """``betas.²`` names a key of a list, which is a load error, not an index and not a ValueError."""
    with pytest.raises(RecipeLoadError, match="not a mapping"):
        load_recipe(BASE, overrides=["policy.optimizer.kwargs.betas.²=1"])


@pytest.mark.parametrize(
    ("override", "fragment", "code"),
    [
        ("policy.gen\x1beration.top_p=1", "control character", None),
        ("policy.generation.\nx=1", "control character", None),
        ("policy..x=1", "empty segment", None),
        ("++policy.generation.note=" + "[" * 100 + "]" * 100, "limit 32 levels", "V6"),
    ],
)
def test_hostile_keys_and_values_are_load_errors(override: str, fragment: str, code: str | None) -> None:
    """Control characters and empty segments in keys, and values nested beyond the limit, are load errors."""
    with pytest.raises(RecipeLoadError) as info:
        load_recipe(BASE, overrides=[override])
    assert fragment in info.value.message
    assert info.value.code == code
