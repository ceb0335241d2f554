"""The one finding record (``rl_contracts.config.finding``): construction, the ``reason`` name, JSON dumps."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from rl_contracts.config import ConfigIssue
from rl_contracts.config.finding import Finding, SuggestedFix
from rl_contracts.config.rules.preflight import ABSENT, SkippedRule
from rl_contracts.errors import RecipeLoadError


def test_a_finding_takes_its_message_as_message_or_reason() -> None:
    """``message=`` and ``reason=`` (ConfigIssue's keyword) build equal findings; ``reason`` reads the message."""
    made = Finding(code="P9", path="grpo.x", value=3, message="m", severity="error", fix=None)
    assert made == Finding(code="P9", path="grpo.x", value=3, reason="m", severity="error")
    assert (made.reason, made.severity, made.source, made.line, made.column) == (
        "m",
        "error",
        None,
        None,
        None,
    )


def test_the_old_record_names_are_the_finding_class() -> None:
    """``ConfigIssue`` and ``SkippedRule`` are names of ``Finding``, not second types."""
    assert ConfigIssue is Finding
    assert SkippedRule is Finding


@pytest.mark.parametrize("severity", ["fatal", "info", ""])
def test_a_finding_refuses_an_unknown_severity(severity: str) -> None:
    """Severity is error, warning or skipped."""
    with pytest.raises(ValidationError):
        Finding(code="P9", message="m", severity=severity)  # type: ignore[arg-type]


def test_a_finding_is_frozen() -> None:
    """A finding cannot be changed after it is made."""
    finding = Finding(code="P9", message="m")
    with pytest.raises(ValidationError):
        finding.code = "P1"  # type: ignore[misc]


def test_the_json_dump_of_a_finding_is_json_whatever_its_value() -> None:
    """An absent or non-JSON value dumps as its bounded repr; a fix dumps as its fields."""
    fix = SuggestedFix(action="set", description="set x to 2", value=2)
    finding = Finding(code="P9", path="x", value=ABSENT, message="m", fix=fix)
    dumped = json.loads(json.dumps(finding.model_dump(mode="json")))
    assert dumped["value"] == "<absent>"
    assert dumped["fix"] == {"action": "set", "description": "set x to 2", "target": None, "value": 2}
    assert Finding(code="P9", value={1, 2}, message="m").model_dump(mode="json")["value"] == "{1, 2}"


def test_a_load_error_is_a_v1_finding_of_the_file() -> None:
    """``for_load_error`` keeps the error's code, message and line, in the error's file or the one given."""
    error = RecipeLoadError("bad YAML", path=None, value="x: [", file=None, line=3, column=5, code=None)
    finding = Finding.for_load_error(error, file="r.yaml")
    assert (finding.code, finding.path, finding.source, finding.line, finding.column) == (
        "V1",
        "",
        "r.yaml",
        3,
        5,
    )
    assert finding.message == error.message
