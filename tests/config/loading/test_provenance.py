"""Provenance of hostile keys (``rl_contracts.config.loading.provenance``): keys that look like list indices
(Unicode digits, long digit strings) are located like any key, never an error (issue 21)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rl_contracts.config import load_recipe
from rl_contracts.testing.strategies import BASE_RECIPE


@pytest.mark.parametrize("key", ["²", "١٢", "9" * 1000, "0", "a.b"])
def test_digit_like_unknown_key_is_located(tmp_path: Path, key: str) -> None:
    """An unknown key that str.isdigit() calls a number ("²", which int() refuses) is a K2 warning at its line."""
    (tmp_path / "base.yaml").write_text(BASE_RECIPE)
    path = tmp_path / "r.yaml"
    path.write_text(f'defaults: base.yaml\npolicy:\n  generation:\n    vllm_cfg:\n      "{key}": 1\n')
    recipe = load_recipe(path)
    (issue,) = [i for i in recipe.issues if i.code == "K2"]
    assert (issue.source, issue.line) == (str(path), 5)
