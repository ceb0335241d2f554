"""``validate --format sarif``: one SARIF 2.1.0 log, valid against the vendored schema, with rules, locations and
fixes.

The schema in tests/data/sarif is a careful subset of the OASIS SARIF 2.1.0 JSON schema (draft-07), not the full
official file: it declares every object rl-contracts emits with the official property names, types, enums,
minimums and required properties, and ``additionalProperties: false`` as the official schema does, so a
misspelled or misplaced property fails validation; objects rl-contracts never emits are left out.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from rl_contracts.cli import main
from rl_contracts.config.rules.registry import RULES

DATA = Path(__file__).parent / "data"
SCHEMA = json.loads((DATA / "sarif" / "sarif-2.1.0-subset.schema.json").read_text())


def sarif(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    """Run validate --format sarif; the status and the parsed log."""
    status = main(["validate", "--format", "sarif", *argv])
    return status, json.loads(capsys.readouterr().out)


def test_the_log_validates_against_the_schema(capsys: pytest.CaptureFixture[str]) -> None:
    """A run over a valid, an invalid, a skipped and an unreadable recipe is one schema-valid SARIF log."""
    status, log = sarif(
        capsys,
        str(DATA / "cli" / "base.yaml"),
        str(DATA / "cli" / "child_recipe.yaml"),
        str(DATA / "cli" / "eval.yaml"),
        str(DATA / "missing.yaml"),
    )
    assert status == 2
    jsonschema.Draft7Validator.check_schema(SCHEMA)
    jsonschema.validate(log, SCHEMA, cls=jsonschema.Draft7Validator)
    assert log["version"] == "2.1.0"
    [run] = log["runs"]
    assert run["invocations"][0]["executionSuccessful"] is False


def test_the_schema_subset_rejects_what_the_official_schema_rejects() -> None:
    """The vendored subset is strict: an unknown property, a bad level or a zero line fails it."""
    for bad in (
        {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}}, "result": []}]},
        {
            "version": "2.1.0",
            "runs": [
                {"tool": {"driver": {"name": "x"}}, "results": [{"message": {"text": "m"}, "level": "fatal"}]}
            ],
        },
        {
            "version": "2.1.0",
            "runs": [
                {
                    "tool": {"driver": {"name": "x"}},
                    "results": [
                        {
                            "message": {"text": "m"},
                            "locations": [
                                {
                                    "physicalLocation": {
                                        "artifactLocation": {"uri": "a"},
                                        "region": {"startLine": 0},
                                    }
                                }
                            ],
                        }
                    ],
                }
            ],
        },
        {"version": "2.0.0", "runs": []},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, SCHEMA, cls=jsonschema.Draft7Validator)


def test_rules_come_from_the_registry(capsys: pytest.CaptureFixture[str]) -> None:
    """The driver lists every registry rule in order, with name, descriptions, help, level and fix safety."""
    _, log = sarif(capsys, str(DATA / "cli" / "base.yaml"))
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert [rule["id"] for rule in rules] == [rule.code for rule in RULES]
    by_id = {rule["id"]: rule for rule in rules}
    k1 = by_id["K1"]
    assert k1["name"] == "misspelled-key"
    assert k1["shortDescription"]["text"] == next(r.summary for r in RULES if r.code == "K1")
    assert k1["defaultConfiguration"]["level"] == "error"
    assert k1["properties"]["fix"] == "safe"
    assert by_id["W2"]["defaultConfiguration"]["level"] == "warning"
    assert "fix" not in by_id["K2"]["properties"]
    assert "--fix" in k1["help"]["text"]


def test_results_carry_file_line_dotted_path_and_fixes(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each issue is a result at its provenance file and line, with its dotted path as a logical location and,
    where the rule has a fix, the fix as a text replacement."""
    monkeypatch.chdir(DATA / "cli")
    status, log = sarif(capsys, "child_recipe.yaml")
    assert status == 1
    run = log["runs"][0]
    results = {result["ruleId"]: result for result in run["results"]}
    p9 = results["P9"]
    location = p9["locations"][0]
    assert location["physicalLocation"]["artifactLocation"] == {"uri": "base.yaml", "uriBaseId": "%SRCROOT%"}
    assert location["physicalLocation"]["region"] == {"startLine": 33}
    assert location["logicalLocations"] == [
        {"fullyQualifiedName": "policy.train_global_batch_size", "kind": "member"}
    ]
    assert p9["properties"]["recipe"] == "child_recipe.yaml"
    assert run["tool"]["driver"]["rules"][p9["ruleIndex"]]["id"] == "P9"
    [change] = p9["fixes"][0]["artifactChanges"]
    [replacement] = change["replacements"]
    assert replacement["deletedRegion"] == {"startLine": 33, "startColumn": 1, "endLine": 34, "endColumn": 1}
    assert replacement["insertedContent"]["text"] == "  train_global_batch_size: 1024\n"
    assert (
        results["K1"]["fixes"][0]["description"]["text"]
        == "rename gpu_memory_utilisation to gpu_memory_utilization"
    )
    notes = run["invocations"][0]["toolExecutionNotifications"]
    assert {note["descriptor"]["id"] for note in notes} == {"N1", "N7"}
