"""Unit tests for how validation errors become recipe issues (SPEC §1.8): values, reasons, hints, the summary."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError, field_validator, model_validator

from rl_contracts.config.recipe import ConfigIssue, _lookup, _pydantic_message, _schema_issues, load_recipe
from rl_contracts.errors import RecipeError
from rl_contracts.testing.strategies import minimal_vllm_generation as valid_generation

yaml: Any = importlib.import_module("yaml")  # PyYAML ships no type stubs
GEN = "policy.generation"
OFFLOAD = "real_quant_export_cpu_offload"
C11 = "generation.real_quant_export_cpu_offload must be a boolean"
PLUGIN = "my.mod:Engine"
C9 = f"Custom checkpoint-engine transport '{PLUGIN}' requires policy.generation.refit_cfg['{PLUGIN}']."


def write_recipe(directory: Path, generation: dict[Any, Any]) -> Path:
    """Write a recipe holding ``generation`` at ``policy.generation`` and return its path."""
    path = directory / "r.yaml"
    path.write_text(yaml.safe_dump({"policy": {"generation": generation}}, sort_keys=False), encoding="utf-8")
    return path


def recipe_error(path: Path) -> RecipeError:
    """The ``RecipeError`` that loading ``path`` must raise."""
    with pytest.raises(RecipeError) as info:
        load_recipe(path)
    assert info.value.issues is not None
    return info.value


def errors_at(error: RecipeError, path: str) -> list[ConfigIssue]:
    assert error.issues is not None
    return [issue for issue in error.issues if issue.path == path]


# ---------------------------------------------------------------------------------------------- rule issues


def test_missing_rule_key_shows_missing_and_hints_at_a_top_level_misspelling(tmp_path: Path) -> None:
    """A rule that needs an absent key reports ``<missing>`` and names a misspelt key of the same mapping."""
    generation = valid_generation(real_quant=True)
    generation["real_quant_export_cpu_offlaod"] = False
    error = recipe_error(write_recipe(tmp_path, generation))
    assert errors_at(error, f"{GEN}.{OFFLOAD}") == [
        ConfigIssue(
            path=f"{GEN}.{OFFLOAD}",
            value="<missing>",
            reason=f"{C11}; found unknown key 'real_quant_export_cpu_offlaod' (a misspelling?)",
            severity="error",
        )
    ]


def test_missing_rule_key_without_a_close_key_has_no_hint(tmp_path: Path) -> None:
    """A key only loosely like the missing one (ratio below 0.8) gives no hint; the message lists the error."""
    path = write_recipe(tmp_path, valid_generation(real_quant=True, quant_export_cpu=1))
    error = recipe_error(path)
    assert error.issues == (
        ConfigIssue(path=f"{GEN}.{OFFLOAD}", value="<missing>", reason=C11, severity="error"),
    )
    assert error.message == f"{path}: section policy.generation has 1 error(s): ['{GEN}.{OFFLOAD}: {C11}']"
    assert error.file == str(path)


def test_error_message_counts_and_lists_errors_only(tmp_path: Path) -> None:
    """The message counts and lists the errors as ``path: reason``; ``.issues`` keeps the warnings too."""
    vllm_cfg = {**valid_generation()["vllm_cfg"], "refit_with_reload_api": True}
    colocated = {"enabled": True, "resources": {"gpus_per_node": None, "num_nodes": None}}
    path = write_recipe(tmp_path, valid_generation(aaa=2, vllm_cfg=vllm_cfg, colocated=colocated))
    error = recipe_error(path)
    assert error.issues is not None
    assert [(issue.path, issue.severity) for issue in error.issues] == [
        (f"{GEN}.aaa", "warning"),
        (f"{GEN}.colocated.enabled", "error"),
    ]
    assert error.message.startswith(
        f"{path}: section policy.generation has 1 error(s): ['{GEN}.colocated.enabled: "
        f"{GEN}.vllm_cfg.refit_with_reload_api=true is not supported yet with colocated vLLM refit."
    )
    assert "aaa" not in error.message


@pytest.mark.parametrize("refit_cfg", [None, "<absent>"])
def test_missing_plugin_config_under_an_absent_or_null_mapping_has_no_hint(
    tmp_path: Path, refit_cfg: object
) -> None:
    """A missing key whose parent is null or absent is reported without a misspelling hint."""
    generation = valid_generation(refit_transport=PLUGIN, refit_cfg=refit_cfg)
    if refit_cfg == "<absent>":
        del generation["refit_cfg"]
    error = recipe_error(write_recipe(tmp_path, generation))
    assert error.issues == (
        ConfigIssue(path=f"{GEN}.refit_cfg.{PLUGIN}", value="<missing>", reason=C9, severity="error"),
    )


def test_missing_plugin_config_hints_at_a_misspelt_plugin_key(tmp_path: Path) -> None:
    """The hint looks in the mapping that should hold the missing key (here ``refit_cfg``)."""
    generation = valid_generation(refit_transport=PLUGIN, refit_cfg={"my.mod:Engin": {}})
    error = recipe_error(write_recipe(tmp_path, generation))
    assert errors_at(error, f"{GEN}.refit_cfg.{PLUGIN}")[0].reason == (
        f"{C9}; found unknown key 'my.mod:Engin' (a misspelling?)"
    )


def test_missing_field_hint_ignores_non_string_keys(tmp_path: Path) -> None:
    """A mapping holding a non-string key (itself an error) still gets the hint for a misspelt field."""
    vllm_cfg = dict(valid_generation()["vllm_cfg"])
    vllm_cfg["gpu_memory_utilisation"] = vllm_cfg.pop("gpu_memory_utilization")
    vllm_cfg[7] = "x"
    error = recipe_error(write_recipe(tmp_path, valid_generation(vllm_cfg=vllm_cfg)))
    assert errors_at(error, f"{GEN}.vllm_cfg.gpu_memory_utilization") == [
        ConfigIssue(
            path=f"{GEN}.vllm_cfg.gpu_memory_utilization",
            value="<missing>",
            reason="Field required; found unknown key 'gpu_memory_utilisation' (a misspelling?)",
            severity="error",
        )
    ]


# ---------------------------------------------------------------------------------------------- helpers


@pytest.mark.parametrize(
    ("data", "keys", "expected"),
    [
        ({"a": [10, 20]}, ["a", 0], (True, 10)),
        ({"a": [10, 20]}, ["a", 1], (True, 20)),
        ({"a": [10, 20]}, ["a", 2], (False, None)),
        ({"a": [10, 20]}, ["a", -1], (False, None)),
        ({"a": [10, 20]}, ["a", "x"], (False, None)),
        ({"a": "text"}, ["a", 0], (False, None)),
        ({"a": {0: "zero"}}, ["a", 0], (True, "zero")),
        ({"a": {"b": None}}, ["a", "b"], (True, None)),
        ({"a": {"b": None}}, ["a", "b", "c"], (False, None)),
        ({"a": 1}, [], (True, {"a": 1})),
    ],
)
def test_lookup_follows_keys_and_indices(data: Any, keys: list[Any], expected: tuple[bool, Any]) -> None:
    """``_lookup`` follows dict keys and in-range list indices; anything else is "not found"."""
    assert _lookup(data, keys) == expected


class _Checked(BaseModel):
    count: int
    either: int | list[int] = 0

    @field_validator("count")
    @classmethod
    def _positive(cls, value: int) -> int:
        if value <= 0:
            raise AssertionError("count must be positive")
        return value

    @model_validator(mode="after")
    def _not_seven(self) -> _Checked:
        if self.count == 7:
            raise ValueError("seven is not allowed")
        return self


def _validation_error(data: dict[str, Any]) -> ValidationError:
    with pytest.raises(ValidationError) as info:
        _Checked.model_validate(data)
    return info.value


def test_assertion_prefix_is_removed_from_the_message() -> None:
    """pydantic's "Assertion failed, " prefix is dropped like "Value error, "."""
    (error,) = _validation_error({"count": -1}).errors()
    assert error["msg"] == "Assertion failed, count must be positive"
    assert _pydantic_message(error) == "count must be positive"


def test_schema_issue_for_the_whole_section_shows_the_section() -> None:
    """An error located at the model itself is reported at the section with the section's value."""
    data = {"count": 7}
    assert _schema_issues("s", data, _validation_error(data)) == [
        ConfigIssue(path="s", value="{'count': 7}", reason="seven is not allowed", severity="error")
    ]


def test_schema_issue_at_a_path_not_in_the_data_shows_the_input() -> None:
    """When pydantic's location is not a path of the data (a union member), the issue shows pydantic's input."""
    data: dict[str, Any] = {"count": 1, "either": "x"}
    issues = _schema_issues("s", data, _validation_error(data))
    assert [(issue.path, issue.value) for issue in issues] == [
        ("s.either.int", "'x'"),
        ("s.either.list[int]", "'x'"),
    ]
