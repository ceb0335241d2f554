"""Every rule's documentation (issue 20): four parts, an example that yields exactly its code, and its page.

Each example is a recipe fragment merged (``defaults:``) over ``tests/data/rules/base.yaml``, a recipe that loads
with no issue; the fragment, validated with the rule's ``example_options``, must add exactly the rule's code to the
issues (an N-rule may instead add it as a skipped note, and may add other skipped notes, but no other issue).
"""

from __future__ import annotations

import importlib
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from rl_contracts.cli import main
from rl_contracts.cli.rules import markdown_table, rule_json, rule_page
from rl_contracts.config import load_recipe
from rl_contracts.config.rule import Rule
from rl_contracts.config.rules.preflight import PreflightOptions
from rl_contracts.config.rules.registry import RULES, rule_for
from rl_contracts.errors import RecipeError, RecipeLoadError

yaml: Any = importlib.import_module("yaml")  # PyYAML ships no type stubs
ROOT = Path(__file__).resolve().parents[3]
BASE = ROOT / "tests" / "data" / "rules" / "base.yaml"
IDS = [rule.code for rule in RULES]


def codes_of(path: Path, options: dict[str, Any]) -> tuple[frozenset[str], frozenset[str]]:
    """The codes of the issues and of the skipped rules of one recipe, validated with ``options``."""
    preflight_options = PreflightOptions(environ={}, **options)
    try:
        loaded = load_recipe(path, preflight_options=preflight_options, root=ROOT)  # parents: the base recipe
    except RecipeError as error:
        return frozenset(i.code for i in error.issues or ()), frozenset(s.code for s in error.skipped or ())
    except RecipeLoadError as error:
        return frozenset({error.code or "V1"}), frozenset()
    return frozenset(i.code for i in loaded.issues), frozenset(s.code for s in loaded.skipped)


@cache
def base_codes(options: str) -> tuple[frozenset[str], frozenset[str]]:
    """The codes the base recipe yields with ``options`` (JSON text, so that results are cached)."""
    return codes_of(BASE, _options(json.loads(options)))


def _options(raw: dict[str, Any]) -> dict[str, Any]:
    return {name: tuple(value) if isinstance(value, list) else value for name, value in raw.items()}


def test_the_base_recipe_loads_with_no_issue() -> None:
    """The recipe the examples merge over passes every check (only N7, which needs a config.json, is skipped)."""
    assert base_codes("{}") == (frozenset(), frozenset({"N7"}))


@pytest.mark.parametrize("rule", RULES, ids=IDS)
def test_every_rule_has_its_four_part_documentation(rule: Rule) -> None:
    """What it checks, why it matters, an example recipe fragment (a YAML mapping) and the fix, all non-empty."""
    for part in (rule.what_it_checks, rule.why_it_matters, rule.fix):
        assert part.strip()
        assert "\n" not in part
    assert rule.example.endswith("\n")
    if rule.code != "V1":  # V1's example is a recipe that cannot be read
        assert isinstance(yaml.safe_load(rule.example), dict)
    assert set(rule.example_options) <= {"vllm_version", "gpu_capability", "model_config"}


@pytest.mark.parametrize("rule", RULES, ids=IDS)
def test_every_example_yields_exactly_its_code(rule: Rule, tmp_path: Path) -> None:
    """The example, merged over the base recipe, adds exactly the rule's code (N-rules: as an issue or a note); an
    example about ``defaults`` itself (V7) is the whole recipe."""
    example = tmp_path / "example.yaml"
    names_its_parents = rule.code != "V1" and "defaults" in yaml.safe_load(rule.example)
    example.write_text(
        rule.example if names_its_parents else f"defaults: {BASE}\n{rule.example}", encoding="utf-8"
    )
    options = dict(rule.example_options)
    base_issues, base_skipped = base_codes(json.dumps(rule_json(rule)["example_options"], sort_keys=True))
    issues, skipped = codes_of(example, options)
    added, noted = issues - base_issues, skipped - base_skipped
    if rule.severity == "skipped":
        assert rule.code in added | noted
        assert added <= {rule.code}
    else:
        assert added == {rule.code}


def test_rule_p19_prints_the_p19_page(capsys: pytest.CaptureFixture[str]) -> None:
    """``rl-contracts rule P19`` prints P19's page: heading, the four parts in order, exit 0."""
    assert main(["rule", "P19"]) == 0
    out = capsys.readouterr().out
    assert out == rule_page(RULES[IDS.index("P19")]) + "\n"
    assert out.startswith("P19 tensor-parallel-batch-sizes-differ (error)\n")
    headings = [line for line in out.splitlines() if line and not line.startswith(" ")][2:]
    assert headings == ["What it checks", "Why it matters", "Example", "Fix"]
    assert "    policy:\n" in out


@pytest.mark.parametrize("argument", ["P19", "p19", "tensor-parallel-batch-sizes-differ"])
def test_rule_json_is_the_record(argument: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``rule CODE --format json`` (a code in any case, or the rule's name) prints the rule's record."""
    assert main(["rule", argument, "--format", "json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record == rule_json(RULES[IDS.index("P19")])
    assert record["name"] == "tensor-parallel-batch-sizes-differ"


def test_an_unknown_rule_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown code exits 2 with a message pointing at ``rl-contracts rules``."""
    with pytest.raises(SystemExit) as info:
        main(["rule", "P99"])
    assert info.value.code == 2
    assert "unknown rule 'P99'" in capsys.readouterr().err


def test_the_page_names_the_options_an_example_needs() -> None:
    """An example validated with options says so on its page (N3: the vLLM version and the GPU capability)."""
    page = rule_page(RULES[IDS.index("N3")])
    assert "--vllm-version 0.32, --gpu-capability 7.5" in page
    assert "--model-config config.json holding" in rule_page(RULES[IDS.index("N7")])


def test_readme_rules_section_holds_the_registry_table() -> None:
    """README's "Rules" section lists every rule, from the registry (``rl-contracts rules --format markdown``)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Rules\n", 1)[1]
    section = re.split(r"^## ", section, maxsplit=1, flags=re.M)[0]
    assert markdown_table() + "\n" in section
    assert "rl-contracts rule P19" in section
    assert rule_for("P19") is RULES[IDS.index("P19")]
