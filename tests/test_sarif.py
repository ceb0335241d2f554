"""``validate --format sarif``: one SARIF 2.1.0 log, valid against the official schema, with rules, locations and
fixes.

tests/data/sarif holds the OASIS SARIF TC's full SARIF 2.1.0 JSON schema (draft-07), unmodified; its README says
where it came from and its hash, which a test checks.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from rl_contracts.cli import main
from rl_contracts.config.rules.registry import RULES

DATA = Path(__file__).parent / "data"
SCHEMA_FILE = DATA / "sarif" / "sarif-schema-2.1.0.json"
SCHEMA = json.loads(SCHEMA_FILE.read_bytes())


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


def test_the_vendored_schema_is_the_official_file() -> None:
    """The schema file is the one its README names: the TC's 2.1.0 schema, with the recorded hash."""
    readme = (SCHEMA_FILE.parent / "README.md").read_text()
    recorded = re.search(r"sha256 `([0-9a-f]{64})`", readme)
    assert recorded is not None
    assert hashlib.sha256(SCHEMA_FILE.read_bytes()).hexdigest() == recorded.group(1)
    assert SCHEMA["$id"].endswith("/Schemata/sarif-schema-2.1.0.json")
    assert SCHEMA["properties"]["version"]["enum"] == ["2.1.0"]


def test_the_schema_rejects_malformed_logs() -> None:
    """The validation can fail: an unknown property, a bad level, a zero line or another version fails it."""
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


def test_results_and_the_run_name_the_algorithm(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each result names the algorithm its recipe was checked as, and the run lists every recipe with its
    algorithm: detected (grpo), none for a fragment (null, and its N8 note), or given with ``--algorithm``."""
    monkeypatch.chdir(DATA / "cli")
    _, log = sarif(capsys, "child_recipe.yaml", "eval.yaml")
    [run] = log["runs"]
    assert {result["properties"]["algorithm"] for result in run["results"]} == {"grpo"}
    assert run["properties"]["recipes"] == [
        {"recipe": "child_recipe.yaml", "algorithm": "grpo"},
        {"recipe": "eval.yaml", "algorithm": None},
    ]
    notes = run["invocations"][0]["toolExecutionNotifications"]
    assert "N8" in {note["descriptor"]["id"] for note in notes}
    _, log = sarif(capsys, "--algorithm", "eval", "eval.yaml")
    [run] = log["runs"]
    assert run["properties"]["recipes"] == [{"recipe": "eval.yaml", "algorithm": "eval"}]
    assert {result["properties"]["algorithm"] for result in run["results"]} == {"eval"}
    jsonschema.validate(log, SCHEMA, cls=jsonschema.Draft7Validator)
