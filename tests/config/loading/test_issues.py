"""Issue records (``rl_contracts.config.loading.issues``): ``json_value`` is bounded like the rest of the report,
and ``load_recipe`` checks ``select``/``ignore`` exactly as the CLI does (issue 21)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rl_contracts.config import load_recipe
from rl_contracts.config.finding import json_value
from rl_contracts.errors import ConfigContractError, ContractTypeError

BASE = Path(__file__).parents[2] / "data" / "cli" / "base.yaml"


@pytest.mark.parametrize(
    "value",
    [
        "x" * 10_000,
        ["x" * 10_000],
        {"k" * 10_000: 1},
        list(range(100_000)),
        {str(i): i for i in range(5_000)},
        [[["y" * 150] * 20] * 20],
        16**5000,
        float("nan"),
    ],
    ids=["long str", "long str in list", "long key", "long list", "wide map", "nested", "huge int", "nan"],
)
def test_json_value_is_bounded(value: object) -> None:
    """Whatever the value, its JSON text is at most about 2,000 characters and serialises."""
    assert len(json.dumps(json_value(value))) <= 2_100


def test_json_value_keeps_small_json_values() -> None:
    """Small JSON values are unchanged; a string is shortened with an ellipsis."""
    assert json_value({"a": [1, 2.5, None, True, "s"]}) == {"a": [1, 2.5, None, True, "s"]}
    shortened = json_value("z" * 500)
    assert isinstance(shortened, str)
    assert (len(shortened), shortened[-3:]) == (200, "...")


@pytest.mark.parametrize(
    ("argument", "patterns"),
    [("select", ["Q9"]), ("ignore", [""]), ("select", ["p"]), ("ignore", ["P", "W99"])],
)
def test_load_recipe_refuses_unknown_patterns(argument: str, patterns: list[str]) -> None:
    """select/ignore that name no code are refused as the CLI refuses them, never a silent pass."""
    with pytest.raises(ConfigContractError, match="unknown code"):
        load_recipe(BASE, **{argument: patterns})  # type: ignore[arg-type]


def test_load_recipe_refuses_a_bare_string_pattern() -> None:
    """A bare string for select is a ContractTypeError (it would be read as one pattern per character)."""
    with pytest.raises(ContractTypeError):
        load_recipe(BASE, select="P")


def test_long_string_value_is_bounded_in_the_issue(tmp_path: Path) -> None:
    """A 10,000-character string where an int belongs is reported with a bounded json_value."""
    path = tmp_path / "long.yaml"
    path.write_text(f"defaults: {BASE}\npolicy:\n  generation:\n    max_new_tokens: {'a' * 10_000}\n")
    with pytest.raises(ConfigContractError) as caught:
        load_recipe(path, root=BASE.parents[3])  # the parent lies in the repository
    issues = getattr(caught.value, "issues", None) or ()
    (issue,) = [i for i in issues if i.path == "policy.generation.max_new_tokens"]
    assert isinstance(issue.json_value, str)
    assert len(issue.json_value) <= 200
