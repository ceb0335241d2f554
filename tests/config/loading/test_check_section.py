"""Unit tests for how validation errors become recipe issues (SPEC §1.8): values, reasons, hints, the summary."""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf
from omegaconf.errors import GrammarParseError

from rl_contracts._internal.config_paths import lookup
from rl_contracts.config import ConfigIssue, load_recipe
from rl_contracts.errors import RecipeError, RecipeLoadError
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


def brief(issues: Iterable[ConfigIssue] | None) -> list[tuple[str, str, str, str, str]]:
    """The (path, value, reason, severity, code) of each issue."""
    return [(i.path, i.value, i.reason, i.severity, i.code) for i in issues or ()]


def errors_at(error: RecipeError, path: str) -> list[ConfigIssue]:
    assert error.issues is not None
    return [issue for issue in error.issues if issue.path == path]


# ---------------------------------------------------------------------------------------------- rule issues


def test_findings_under_keys_that_hold_dots_are_located_in_the_file(tmp_path: Path) -> None:
    """A C9 error inside a plugin config (``refit_cfg["pkg.mod:Engine"]``) and an unknown key spelled with dots
    are reported at their full path, with the value as written and the line that set it."""
    plugin = "pkg.mod:Engine"
    generation = {**valid_generation(), "refit_transport": plugin}
    generation["refit_cfg"] = {plugin: {"update_weights_bucket_memory_ratio": 1}}
    path = write_recipe(tmp_path, generation)
    (c9,) = errors_at(recipe_error(path), f"{GEN}.refit_cfg.{plugin}.update_weights_bucket_memory_ratio")
    assert (c9.code, c9.value, c9.message) == ("C9", "1", "Input should be less than 1")
    assert c9.line is not None
    assert (
        "update_weights_bucket_memory_ratio: 1" in path.read_text(encoding="utf-8").splitlines()[c9.line - 1]
    )
    path = write_recipe(tmp_path, {**valid_generation(), "x.y": 1})
    (unknown,) = [issue for issue in load_recipe(path).issues if issue.path == f"{GEN}.x.y"]
    assert (unknown.code, unknown.severity, unknown.value) == ("K2", "warning", "1")
    assert unknown.line is not None
    assert "x.y: 1" in path.read_text(encoding="utf-8").splitlines()[unknown.line - 1]


def test_a_range_error_is_c2_a_rule_finding_keeps_its_code_and_other_schema_errors_are_v3(
    tmp_path: Path,
) -> None:
    """Pydantic's range errors are C2, its other errors V3; a rule's finding (C1 here) keeps its own code."""
    generation = {
        **valid_generation(),
        "max_new_tokens": 0,
        "top_k": 0,
        "vllm_cfg": {"pipeline_parallel_size": 2},
    }
    codes = {
        issue.path: issue.code for issue in recipe_error(write_recipe(tmp_path, generation)).issues or ()
    }
    assert codes[f"{GEN}.max_new_tokens"] == "C2"
    assert codes[f"{GEN}.top_k"] == "C1"
    assert codes[f"{GEN}.vllm_cfg.max_model_len"] == "V3"


def test_missing_rule_key_shows_missing_and_hints_at_a_top_level_misspelling(tmp_path: Path) -> None:
    """A rule that needs an absent key reports ``<missing>`` and names a misspelt key of the same mapping."""
    generation = valid_generation(real_quant=True)
    generation["real_quant_export_cpu_offlaod"] = False
    error = recipe_error(write_recipe(tmp_path, generation))
    assert brief(errors_at(error, f"{GEN}.{OFFLOAD}")) == [
        (
            f"{GEN}.{OFFLOAD}",
            "<missing>",
            f"{C11}; found unknown key 'real_quant_export_cpu_offlaod' (a misspelling?)",
            "error",
            "C11",
        )
    ]


def test_missing_rule_key_without_a_close_key_has_no_hint(tmp_path: Path) -> None:
    """A key only loosely like the missing one (ratio below 0.8) gives no hint; the message lists the error."""
    path = write_recipe(tmp_path, valid_generation(real_quant=True, quant_export_cpu=1))
    error = recipe_error(path)
    assert brief(error.issues) == [(f"{GEN}.{OFFLOAD}", "<missing>", C11, "error", "C11")]
    assert f"{path}: 1 error(s) (section policy.generation): " in error.message
    assert f"['{GEN}.{OFFLOAD}: {C11}']" in error.message
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
        f"{path}: 1 error(s) (section policy.generation): ['{GEN}.colocated.enabled: "
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
    assert brief(error.issues) == [(f"{GEN}.refit_cfg.{PLUGIN}", "<missing>", C9, "error", "C9")]


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
    assert brief(errors_at(error, f"{GEN}.vllm_cfg.gpu_memory_utilization")) == [
        (
            f"{GEN}.vllm_cfg.gpu_memory_utilization",
            "<missing>",
            "Field required; found unknown key 'gpu_memory_utilisation' (a misspelling?)",
            "error",
            "V3",
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
    """``lookup`` follows dict keys and in-range list indices; anything else is "not found"."""
    assert lookup(data, keys) == expected


# ---------------------------------------------------------------------------------------------- load errors


def load_error(path: Path | str, section: str | None = None) -> RecipeLoadError:
    """The ``RecipeLoadError`` that loading ``path`` must raise."""
    with pytest.raises(RecipeLoadError) as info:
        load_recipe(path, section=section)
    return info.value


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


# (file text, message after "{file}: ", path, value, line, column)
_BAD_FILES: list[tuple[str, str, str | None, str | None, int | None, int | None]] = [
    (
        "a: [1, 2\nb: 3\n",
        "YAML syntax error at line 2, column 2: did not find expected ',' or ']' "
        "(while parsing a flow sequence started at line 1, column 4)",
        None,
        None,
        2,
        2,
    ),
    (
        "a: 1\n  b: 2\n",
        "YAML syntax error at line 2, column 4: mapping values are not allowed in this context",
        None,
        None,
        2,
        4,
    ),
    ("a: *nope\n", "YAML syntax error at line 1, column 4: found undefined alias", None, None, 1, 4),
    (
        "a: 1\na: 2\n",
        "YAML syntax error at line 2, column 1: found duplicate key a "
        "(while constructing a mapping started at line 1, column 1)",
        None,
        None,
        2,
        1,
    ),
    (
        "a:\n  b: ${foo\n",
        "invalid interpolation syntax at a.b: no viable alternative at input '${foo'",
        "a.b",
        None,
        None,
        None,
    ),
    ("5\n", "the recipe root must be a mapping (Invalid loaded object type: int)", None, None, None, None),
    ("- 1\n- 2\n", "the recipe root must be a mapping, got a list", None, "list", None, None),
    ("a:\n  _override_: 3\n", "a._override_ must be true or false, got 3", "a._override_", "3", None, None),
    (
        "0: {_override_: 3}\n",
        "0._override_ must be true or false, got 3",
        "0._override_",
        "3",
        None,
        None,
    ),
    (
        "a:\n  - _override_: 'yes'\n",
        "a.None._override_ must be true or false, got 'yes'",
        "a.None._override_",
        "'yes'",
        None,
        None,
    ),
]


@pytest.mark.parametrize(("text", "message", "path", "value", "line", "column"), _BAD_FILES)
def test_unreadable_recipe_text_raises_a_load_error(
    tmp_path: Path,
    text: str,
    message: str,
    path: str | None,
    value: str | None,
    line: int | None,
    column: int | None,
) -> None:
    """Syntax errors, non-mapping roots and bad markers: exact message, ``file``, ``path``, ``value``, position."""
    file = write(tmp_path, "r.yaml", text)
    error = load_error(file)
    assert error.message == f"{file}: {message}"
    assert (error.file, error.path, error.value, error.line, error.column) == (
        str(file),
        path,
        value,
        line,
        column,
    )


def test_undecodable_file_cannot_be_parsed(tmp_path: Path) -> None:
    file = tmp_path / "r.yaml"
    file.write_bytes(b"a: \xff\xfe\n")
    error = load_error(file)
    assert error.message == f"{file}: the file is not UTF-8 text (byte 0xff at line 1, column 4)"
    assert (error.file, error.path, error.value, error.line, error.column) == (str(file), None, None, 1, 4)


def test_missing_file_and_directory(tmp_path: Path) -> None:
    """A missing file and a directory name the file and the OS reason."""
    missing = tmp_path / "nope.yaml"
    error = load_error(missing)
    assert (error.message, error.file, error.path, error.value) == (
        f"{missing}: no such file",
        str(missing),
        None,
        None,
    )
    folder = tmp_path / "dir.yaml"
    folder.mkdir()
    error = load_error(folder)
    assert (error.message, error.file) == (
        f"{folder}: cannot read the file: it is a directory, not a regular file",
        str(folder),
    )


def test_missing_parent_names_the_child(tmp_path: Path) -> None:
    child = write(tmp_path, "child.yaml", "defaults: nope.yaml\n")
    error = load_error(child)
    parent = tmp_path / "nope.yaml"
    assert error.message.startswith(f"{child}: ")
    assert f"'{parent}'" in error.message
    assert "does not exist" in error.message
    assert (error.file, error.path, error.value) == (str(child), "defaults", f"'{parent}'")


def test_defaults_cycle_lists_the_chain(tmp_path: Path) -> None:
    one = write(tmp_path, "c1.yaml", "defaults: c2.yaml\n")
    two = write(tmp_path, "c2.yaml", "defaults: c1.yaml\n")
    error = load_error(one)
    chain = f"['{one}', '{two}', '{one}']"
    assert error.message.startswith(f"{one}: defaults cycle")
    assert error.message.endswith(chain)
    assert (error.file, error.path, error.value) == (str(one), "defaults", chain)


def test_unresolvable_paths(tmp_path: Path) -> None:
    """A NUL byte in the recipe path or in a parent path: the parent case names the child and ``defaults``."""
    bad = f"{tmp_path}/a\0b.yaml"
    error = load_error(bad)
    assert (error.message, error.file, error.path) == (
        f"{bad}: cannot resolve the path: embedded null byte",
        bad,
        None,
    )
    child = write(tmp_path, "child.yaml", 'defaults: "x\\0y.yaml"\n')
    error = load_error(child)
    assert error.message.startswith(f"{tmp_path}/x\0y.yaml: cannot resolve the path")
    assert "embedded null byte" in error.message
    assert (error.file, error.path) == (str(child), "defaults")


@pytest.mark.parametrize(
    ("parent", "child", "where", "was", "now"),
    [
        ("a: [1]\n", "a: {x: 1}\n", "a", "list", "mapping"),
        ("0: [1]\n", "0: {x: 1}\n", "0", "list", "mapping"),
        ("a: {b: {x: 1}}\n", "a: {b: [1]}\n", "a.b", "mapping", "list"),
    ],
)
def test_list_meeting_a_mapping_cannot_merge(
    tmp_path: Path, parent: str, child: str, where: str, was: str, now: str
) -> None:
    """The conflict names the later file and the path; only a mapping over a list gets the marker remedy."""
    write(tmp_path, "p.yaml", parent)
    file = write(tmp_path, "r.yaml", f"defaults: p.yaml\n{child}")
    error = load_error(file)
    assert error.message.startswith(f"{file}: cannot merge {where}: ")
    assert f"a {now} here" in error.message
    assert f"has a {was}" in error.message
    assert ("_override_: true" in error.message) is (now == "mapping")
    assert (error.file, error.path, error.value) == (str(file), where, None)


def test_conflict_between_two_parents_names_the_second_parent(tmp_path: Path) -> None:
    write(tmp_path, "p1.yaml", "a: [1]\n")
    second = write(tmp_path, "p2.yaml", "a: {x: 1}\n")
    error = load_error(write(tmp_path, "r.yaml", "defaults: [p1.yaml, p2.yaml]\n"))
    assert (error.file, error.path) == (str(second), "a")
    assert error.message.startswith(f"{second}: cannot merge a: a mapping here")


def test_failed_merge_reports_the_omegaconf_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A mapping meeting an inherited interpolation is merged by OmegaConf; its refusal is V1 naming the file."""
    write(tmp_path, "p.yaml", "a: ${b}\nb: {x: 1}\n")
    file = write(tmp_path, "r.yaml", "defaults: p.yaml\na: {y: 2}\n")

    def refuse(*configs: object) -> object:
        raise ValueError("merge refused\nfull_key: a")

    monkeypatch.setattr(OmegaConf, "unsafe_merge", refuse)
    error = load_error(file)
    assert (error.message, error.file, error.path) == (
        f"{file}: cannot merge onto its defaults: merge refused",
        str(file),
        None,
    )


@pytest.mark.parametrize(
    ("parent", "child", "document"),
    [
        ("a: 5\n", "a: {b: {_override_: true, x: 1}}\n", {"a": {"b": {"x": 1}}}),
        ("a: 5\n", "a: {b: {c: {_override_: true, x: 1}}}\n", {"a": {"b": {"c": {"x": 1}}}}),
        ("a: {b: 5, c: 1}\n", "a: {b: {_override_: true, x: 1}}\n", {"a": {"b": {"x": 1}, "c": 1}}),
        ("a: 5\nc: {d: 1}\n", "_override_: true\nb: 2\n", {"b": 2}),
        ("a: {b: {y: 2}}\n", "a: {b: {_override_: false, x: 1}}\n", {"a": {"b": {"y": 2, "x": 1}}}),
        ("a: {b: {y: 2}}\n", "a: {b: {_override_: true, x: 1}}\n", {"a": {"b": {"x": 1}}}),
    ],
)
def test_override_marker_replaces_at_any_depth_and_is_removed(
    tmp_path: Path, parent: str, child: str, document: dict[str, Any]
) -> None:
    """``_override_: true`` replaces the inherited value (the root included), even under a scalar parent value."""
    write(tmp_path, "p.yaml", parent)
    loaded = load_recipe(write(tmp_path, "r.yaml", f"defaults: p.yaml\n{child}"))
    assert loaded.document == document


def _raising_load(exc: BaseException) -> Any:
    def load(path: object, **_: object) -> object:
        raise exc

    return load


_MARK = yaml.Mark("r.yaml", 0, 2, 4, None, None)
_OTHER_MARK = yaml.Mark("r.yaml", 0, 0, 1, None, None)


@pytest.mark.parametrize(
    ("exc", "message", "line", "column"),
    [
        (yaml.MarkedYAMLError(), "YAML syntax error: invalid YAML", None, None),
        (yaml.MarkedYAMLError(problem="bad thing"), "YAML syntax error: bad thing", None, None),
        (
            yaml.MarkedYAMLError(context_mark=_OTHER_MARK, problem="bad thing", problem_mark=_MARK),
            "YAML syntax error at line 3, column 5: bad thing",
            3,
            5,
        ),
        (
            yaml.MarkedYAMLError(context="while x", context_mark=_MARK, problem="bad thing"),
            "YAML syntax error at line 3, column 5: bad thing (while x)",
            3,
            5,
        ),
        (
            yaml.MarkedYAMLError(context="while x", problem="bad thing", problem_mark=_MARK),
            "YAML syntax error at line 3, column 5: bad thing (while x)",
            3,
            5,
        ),
        (
            GrammarParseError("no viable alternative"),
            "invalid interpolation syntax at <root>: no viable alternative",
            None,
            None,
        ),
        (OSError(5, ""), "cannot read the file: OSError", None, None),
        (PermissionError(13, "Permission denied"), "cannot read the file: Permission denied", None, None),
    ],
)
def test_parser_errors_without_positions(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    exc: BaseException,
    message: str,
    line: int | None,
    column: int | None,
) -> None:
    """A YAML error without marks, problem or context, a keyless interpolation error, an OS error without text,
    raised by ``OmegaConf.load`` (which reads a file holding a value only OmegaConf can judge, here bytes)."""
    file = write(tmp_path, "r.yaml", "a: !!binary aGk=\n")
    monkeypatch.setattr(OmegaConf, "load", _raising_load(exc))
    error = load_error(file)
    assert error.message == f"{file}: {message}"
    assert (error.file, error.path, error.value, error.line, error.column) == (
        str(file),
        None,
        None,
        line,
        column,
    )


# ---------------------------------------------------------------------------------------------- section checks


def _generation_text(body: str) -> str:
    return "policy:\n  generation:\n" + "".join(f"    {line}\n" for line in body.splitlines())


@pytest.mark.parametrize(
    ("body", "section", "issue", "summary_section"),
    [
        (
            "backend: null",
            None,
            (
                f"{GEN}.backend",
                "None",
                "backend is required (set backend: vllm to validate this section)",
                "error",
                "V4",
            ),
            GEN,
        ),
        (
            "backend: 5",
            None,
            (f"{GEN}.backend", "5", "backend must be a string such as 'vllm', got int", "error", "V4"),
            GEN,
        ),
        ("backend: vllm", "x.y", ("x.y", "<missing>", "section x.y not found", "error", "V4"), "x.y"),
        (
            "x: {}",
            "policy.generation.y",
            ("policy.generation.y", "<missing>", "section policy.generation.y not found", "error", "V4"),
            "policy.generation.y",
        ),
    ],
)
def test_section_errors_name_the_file_and_section(
    tmp_path: Path, body: str, section: str | None, issue: tuple[str, ...], summary_section: str
) -> None:
    """A missing or untyped backend, or an explicit section that does not exist, is an error naming the section."""
    file = write(tmp_path, "r.yaml", _generation_text(body))
    with pytest.raises(RecipeError) as info:
        load_recipe(file, section=section)
    assert brief(info.value.issues) == [issue]
    assert info.value.file == str(file)
    assert info.value.message.startswith(f"{file}: 1 error(s) (section {summary_section}): ")
    assert f"{issue[0]}: {issue[2]}" in info.value.message


def test_unresolvable_section_names_the_file_and_section(tmp_path: Path) -> None:
    """A section that fails resolution is one V2 error at the section, showing the value as written."""
    file = write(tmp_path, "r.yaml", "policy:\n  generation: ${nope.x}\n")
    error = recipe_error(file)
    reason = "Interpolation key 'nope.x' not found"
    assert brief(error.issues) == [(GEN, "'${nope.x}'", reason, "error", "V2")]
    assert (error.issues or ())[0].line == 2
    assert error.file == str(file)
    assert f"{[f'{GEN}: {reason}']!r}" in error.message


@pytest.mark.parametrize("section", [None, "policy.generation"])
def test_skipped_recipes_keep_file_section_and_document(tmp_path: Path, section: str | None) -> None:
    """A non-vLLM backend is skipped with a V5 note at the backend; the result keeps the file and document."""
    file = write(tmp_path, "r.yaml", _generation_text("backend: sglang"))
    recipe = load_recipe(file, section=section)
    assert (recipe.file, recipe.section, recipe.status, recipe.generation) == (
        str(file),
        GEN,
        "skipped",
        None,
    )
    assert recipe.document == {"policy": {"generation": {"backend": "sglang"}}}
    note = (
        f"{GEN}.backend",
        "'sglang'",
        "backend 'sglang' is not validated (only 'vllm' is)",
        "warning",
        "V5",
    )
    assert brief(recipe.issues) == [note]
    assert ((recipe.issues[0].source, recipe.issues[0].line)) == (str(file), 3)
    other = load_recipe(write(tmp_path, "sft.yaml", "policy: {}\n"))
    assert (other.status, [(i.path, i.code, i.missing) for i in other.issues]) == (
        "skipped",
        [(GEN, "V5", True)],
    )


def test_list_section_is_an_issue(tmp_path: Path) -> None:
    """A section that is a list is one V4 error at the section, showing the list."""
    file = write(tmp_path, "r.yaml", "policy:\n  generation: [1, 2]\n")
    error = recipe_error(file)
    assert brief(error.issues) == [
        (GEN, "[1, 2]", f"section {GEN} must be a mapping, got a list", "error", "V4")
    ]
    assert (error.issues or ())[0].json_value == [1, 2]


def test_an_int_mapping_key_is_a_dotted_key_and_a_list_index_is_bracketed(tmp_path: Path) -> None:
    """An int key of a mapping is written ``.5`` in an issue path; only a list position is written ``[i]``."""
    generation = valid_generation(my_map={5: "${nope}"}, my_list=["${nope}"])
    error = recipe_error(write_recipe(tmp_path, generation))
    failed = {issue.path for issue in error.issues or () if issue.severity == "error"}
    assert failed == {f"{GEN}.my_map.5", f"{GEN}.my_list[0]"}
