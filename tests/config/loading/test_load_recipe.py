"""Unit tests for recipe loading (SPEC §1.8): composition, resolution, section selection, validation, results."""

from __future__ import annotations

import copy
import importlib
import os
import pickle
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from rl_contracts.config import ConfigIssue, LoadedRecipe, VllmConfig, load_recipe, register_resolvers
from rl_contracts.config.loading.parsing import reason
from rl_contracts.config.loading.resolve import version_at_least
from rl_contracts.errors import (
    ConfigContractError,
    ContractTypeError,
    RecipeError,
    RecipeLoadError,
)
from rl_contracts.testing.strategies import minimal_vllm_generation as valid_generation

yaml: Any = importlib.import_module("yaml")  # PyYAML ships no type stubs
DATA = Path(__file__).parents[2] / "data" / "recipes"
BUNDLED = Path(__file__).parents[3] / "src" / "rl_contracts" / "recipes" / "grpo_qwen3_moe.yaml"
GEN = "policy.generation"


def write(directory: Path, name: str, content: str | dict[str, Any]) -> Path:
    """Write a recipe (YAML text, or a mapping dumped as YAML) and return its path."""
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    text = content if isinstance(content, str) else yaml.safe_dump(content, sort_keys=False)
    path.write_text(text, encoding="utf-8")
    return path


def recipe_with(generation: dict[str, Any], **top: Any) -> dict[str, Any]:
    """A recipe document holding ``generation`` at ``policy.generation`` plus extra top-level keys."""
    return {"policy": {"generation": generation}, **top}


def issues_of(path: Path, **kwargs: Any) -> tuple[ConfigIssue, ...]:
    """The issues of a recipe that must fail with ``RecipeError``."""
    with pytest.raises(RecipeError) as info:
        load_recipe(path, **kwargs)
    assert info.value.issues is not None
    return tuple(info.value.issues)


def by_path(issues: tuple[ConfigIssue, ...]) -> dict[str, ConfigIssue]:
    """Issues keyed by path (each path must occur once)."""
    keyed = {issue.path: issue for issue in issues}
    assert len(keyed) == len(issues)
    return keyed


# ---------------------------------------------------------------------------------------------- composition


def test_file_without_defaults_is_its_own_document(tmp_path: Path) -> None:
    """A file with no ``defaults`` composes to exactly its own content."""
    content = {"a": {"b": [1, 2], "c": "x"}, "d": None}
    recipe = load_recipe(write(tmp_path, "r.yaml", content))
    assert recipe.document == content
    assert recipe.status == "skipped"


def test_parents_merge_left_to_right_then_the_file(tmp_path: Path) -> None:
    """Later parents win over earlier ones and the file wins over all its parents."""
    write(tmp_path, "a.yaml", {"x": "a", "y": "a", "z": "a", "only_a": 1})
    write(tmp_path, "b.yaml", {"y": "b", "z": "b", "only_b": 2})
    child = write(tmp_path, "c.yaml", {"defaults": ["a.yaml", "b.yaml"], "z": "c"})
    assert load_recipe(child).document == {"x": "a", "y": "b", "z": "c", "only_a": 1, "only_b": 2}


def test_parents_load_depth_first(tmp_path: Path) -> None:
    """A parent's own defaults merge before the next sibling parent (depth-first order)."""
    write(tmp_path, "grand.yaml", {"g": "grand", "h": "grand", "i": "grand"})
    write(tmp_path, "p1.yaml", {"defaults": "grand.yaml", "h": "p1"})
    write(tmp_path, "p2.yaml", {"g": "p2"})
    child = write(tmp_path, "c.yaml", {"defaults": ["p1.yaml", "p2.yaml"]})
    assert load_recipe(child).document == {"g": "p2", "h": "p1", "i": "grand"}


def test_nested_mappings_merge_recursively(tmp_path: Path) -> None:
    """Mappings merge key by key at every depth; lists are replaced whole."""
    write(tmp_path, "p.yaml", {"a": {"b": {"c": 1, "d": 2}, "l": [1, 2, 3]}})
    child = write(tmp_path, "c.yaml", {"defaults": "p.yaml", "a": {"b": {"d": 20, "e": 30}, "l": [9]}})
    assert load_recipe(child).document == {"a": {"b": {"c": 1, "d": 20, "e": 30}, "l": [9]}}


def test_relative_defaults_resolve_against_the_naming_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Relative parent paths are taken from the directory of the file that names them, not the cwd."""
    write(tmp_path, "base/grand.yaml", {"from_grand": True})
    write(tmp_path, "base/parent.yaml", {"defaults": "grand.yaml", "from_parent": True})
    child = write(tmp_path, "exp/sub/child.yaml", {"defaults": ["../../base/parent.yaml"], "own": True})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    document = load_recipe(child, root=tmp_path).document
    assert document == {"from_grand": True, "from_parent": True, "own": True}


def test_absolute_defaults_are_used_as_given(tmp_path: Path) -> None:
    """An absolute parent path does not depend on the naming file's directory."""
    parent = write(tmp_path, "lib/parent.yaml", {"k": 1})
    child = write(tmp_path, "deep/er/child.yaml", {"defaults": [str(parent)], "j": 2})
    assert load_recipe(child, root=tmp_path).document == {"k": 1, "j": 2}


@pytest.mark.parametrize("value", ["null", "[]"])
def test_empty_defaults_mean_no_parents(tmp_path: Path, value: str) -> None:
    """``defaults: null`` and ``defaults: []`` name no parent and disappear from the document."""
    path = write(tmp_path, "r.yaml", f"defaults: {value}\nx: 1\n")
    assert load_recipe(path).document == {"x": 1}


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("5", "5"),
        ("{a: b.yaml}", "{'a': 'b.yaml'}"),
        ("[1]", "[1]"),
        ("['']", "['']"),
        ("''", "''"),
        ("[a.yaml, [b.yaml]]", "['a.yaml', ['b.yaml']]"),
        ("true", "True"),
    ],
)
def test_bad_defaults_value_is_a_load_error(tmp_path: Path, value: str, shown: str) -> None:
    """A defaults value that is neither null, a path nor a list of paths raises ``RecipeLoadError`` naming the
    file and showing the value as written."""
    path = write(tmp_path, "r.yaml", f"defaults: {value}\nx: 1\n")
    with pytest.raises(RecipeLoadError) as info:
        load_recipe(path)
    assert info.value.message == f"{path}: defaults must be null, a path or a list of paths, got {shown}"
    assert (info.value.path, info.value.value, info.value.file) == ("defaults", shown, str(path))


def test_diamond_is_not_a_cycle(tmp_path: Path) -> None:
    """The same parent reached through two branches loads twice without a cycle error."""
    write(tmp_path, "root.yaml", {"r": 0, "x": "root"})
    write(tmp_path, "left.yaml", {"defaults": "root.yaml", "x": "left"})
    write(tmp_path, "right.yaml", {"defaults": "root.yaml", "r": 1})
    child = write(tmp_path, "c.yaml", {"defaults": ["left.yaml", "right.yaml"]})
    # right re-applies root (x: root) and then its own r: 1.
    assert load_recipe(child).document == {"r": 1, "x": "root"}


def test_cycle_is_a_load_error(tmp_path: Path) -> None:
    """A file that appears again in its own ancestry raises ``RecipeLoadError`` naming the chain."""
    write(tmp_path, "a.yaml", {"defaults": "b.yaml"})
    write(tmp_path, "b.yaml", {"defaults": ["a.yaml"]})
    with pytest.raises(RecipeLoadError, match="defaults cycle") as info:
        load_recipe(tmp_path / "a.yaml")
    assert info.value.path == "defaults"
    assert "a.yaml" in info.value.message
    assert "b.yaml" in info.value.message


@pytest.mark.parametrize("spelling", ["self.yaml", "./self.yaml", "../d/self.yaml"])
def test_self_reference_in_any_spelling_is_a_cycle(tmp_path: Path, spelling: str) -> None:
    """Files are compared by realpath, so every spelling of the file itself is a cycle."""
    path = write(tmp_path, "d/self.yaml", {"defaults": spelling})
    with pytest.raises(RecipeLoadError, match="defaults cycle"):
        load_recipe(path)


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks need privileges on Windows")
def test_symlink_to_self_is_a_cycle(tmp_path: Path) -> None:
    """A symlink to the file itself is the same file, hence a cycle."""
    path = write(tmp_path, "a.yaml", {"defaults": "link.yaml"})
    (tmp_path / "link.yaml").symlink_to(path)
    with pytest.raises(RecipeLoadError, match="defaults cycle"):
        load_recipe(path)


def test_missing_parent_is_a_load_error(tmp_path: Path) -> None:
    """A parent that does not exist raises ``RecipeLoadError`` from the file that names it."""
    child = write(tmp_path, "c.yaml", {"defaults": "nope.yaml"})
    with pytest.raises(RecipeLoadError, match=r"parent recipe .*nope\.yaml.* does not exist") as info:
        load_recipe(child)
    assert info.value.file == str(child)
    assert info.value.path == "defaults"


def test_override_marker_replaces_a_top_level_section(tmp_path: Path) -> None:
    """``_override_: true`` replaces the inherited mapping instead of merging into it; the marker is removed."""
    write(tmp_path, "p.yaml", {"sec": {"a": 1, "b": 2}, "other": 1})
    child = write(tmp_path, "c.yaml", {"defaults": "p.yaml", "sec": {"_override_": True, "c": 3}})
    assert load_recipe(child).document == {"sec": {"c": 3}, "other": 1}


def test_override_marker_works_at_any_depth(tmp_path: Path) -> None:
    """Divergence: a marker three levels deep replaces only that mapping; its siblings still merge."""
    write(tmp_path, "p.yaml", {"a": {"b": {"c": {"x": 1, "y": 2}, "keep": True}}})
    child = write(tmp_path, "c.yaml", {"defaults": "p.yaml", "a": {"b": {"c": {"_override_": True, "z": 3}}}})
    assert load_recipe(child).document == {"a": {"b": {"c": {"z": 3}, "keep": True}}}


def test_override_false_merges_and_is_removed(tmp_path: Path) -> None:
    """Divergence: ``_override_: false`` merges normally and the marker does not stay in the document."""
    write(tmp_path, "p.yaml", {"sec": {"a": 1}})
    child = write(tmp_path, "c.yaml", {"defaults": "p.yaml", "sec": {"_override_": False, "b": 2}})
    assert load_recipe(child).document == {"sec": {"a": 1, "b": 2}}


def test_markers_are_removed_from_files_without_defaults_and_from_lists(tmp_path: Path) -> None:
    """Divergence: markers of a file without defaults, and inside list items, are removed too."""
    path = write(
        tmp_path, "r.yaml", {"s": {"_override_": True, "a": 1}, "l": [{"_override_": False, "b": 2}]}
    )
    assert load_recipe(path).document == {"s": {"a": 1}, "l": [{"b": 2}]}


def test_override_marker_lets_a_mapping_replace_a_list(tmp_path: Path) -> None:
    """A marked mapping replaces an inherited list, which a plain merge refuses."""
    write(tmp_path, "p.yaml", {"a": [1, 2]})
    child = write(tmp_path, "c.yaml", {"defaults": "p.yaml", "a": {"_override_": True, "k": 1}})
    assert load_recipe(child).document == {"a": {"k": 1}}


@pytest.mark.parametrize("marker", ["maybe", "1", "null", "[true]"])
def test_non_bool_override_marker_is_a_load_error(tmp_path: Path, marker: str) -> None:
    """An ``_override_`` value other than true/false is rejected instead of silently kept or ignored."""
    path = write(tmp_path, "r.yaml", f"sec:\n  _override_: {marker}\n  a: 1\n")
    with pytest.raises(RecipeLoadError, match="must be true or false") as info:
        load_recipe(path)
    assert info.value.path == "sec._override_"


@pytest.mark.parametrize(
    ("parent", "child", "where"),
    [
        ({"a": {"b": 1}}, {"a": [1]}, "a"),
        ({"a": [1]}, {"a": {"b": 1}}, "a"),
        ({"x": {"a": {"b": [1]}}}, {"x": {"a": {"b": {"c": 1}}}}, "x.a.b"),
    ],
)
def test_list_meeting_a_mapping_is_a_load_error(
    tmp_path: Path, parent: dict[str, Any], child: dict[str, Any], where: str
) -> None:
    """A list where the inherited value is a mapping (or the reverse) raises ``RecipeLoadError`` at that key."""
    write(tmp_path, "p.yaml", parent)
    path = write(tmp_path, "c.yaml", {"defaults": "p.yaml", **child})
    with pytest.raises(RecipeLoadError, match=f"cannot merge {where}: ") as info:
        load_recipe(path)
    assert (info.value.path, info.value.file) == (where, str(path))


def test_mandatory_value_never_replaces_an_earlier_value(tmp_path: Path) -> None:
    """A later ``???`` keeps the inherited value; a later concrete value replaces an earlier ``???``."""
    write(tmp_path, "p.yaml", {"keep": 1, "fill": "???", "only": "???"})
    child = write(tmp_path, "c.yaml", {"defaults": "p.yaml", "keep": "???", "fill": 2})
    assert load_recipe(child).document == {"keep": 1, "fill": 2, "only": "???"}


def test_document_keeps_interpolations_unresolved(tmp_path: Path) -> None:
    """``document`` holds the composed text of interpolations, not their values."""
    path = write(tmp_path, "r.yaml", {"a": 1, "b": "${a}", "c": "${add:${a},1}"})
    assert load_recipe(path).document == {"a": 1, "b": "${a}", "c": "${add:${a},1}"}


def test_yaml_is_parsed_by_omegaconf_not_safe_load(tmp_path: Path) -> None:
    """``1e-8`` is a float (OmegaConf's loader), where ``yaml.safe_load`` would read a string."""
    path = write(tmp_path, "r.yaml", "eps: 1e-8\nlr: 5.0e-6\n")
    assert yaml.safe_load(path.read_text())["eps"] == "1e-8"
    assert load_recipe(path).document == {"eps": 1e-8, "lr": 5.0e-6}


# ---------------------------------------------------------------------------------------------- load errors


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        ("a: 1\nb: [1, 2\nc: 3\n", 3, 2),
        ("a: 1\na: 2\n", 2, 1),
        ("a:\n  b: 1\n c: 2\n", 3, 2),
    ],
)
def test_yaml_syntax_error_reports_line_and_column(tmp_path: Path, text: str, line: int, column: int) -> None:
    """A YAML error raises ``RecipeLoadError`` with 1-based ``.line``/``.column`` quoted in the message."""
    path = write(tmp_path, "r.yaml", text)
    with pytest.raises(RecipeLoadError, match="YAML syntax error at line") as info:
        load_recipe(path)
    assert (info.value.line, info.value.column) == (line, column)
    assert f"line {line}, column {column}" in info.value.message
    assert info.value.file == str(path)


def test_yaml_error_in_a_parent_names_the_parent(tmp_path: Path) -> None:
    """A syntax error in a parent is reported against the parent file."""
    parent = write(tmp_path, "p.yaml", "a: [1\n")
    child = write(tmp_path, "c.yaml", {"defaults": "p.yaml"})
    with pytest.raises(RecipeLoadError) as info:
        load_recipe(child)
    assert info.value.file == str(parent)


@pytest.mark.parametrize(("text", "kind"), [("- 1\n- 2\n", "list"), ("5\n", "int"), ("2.5\n", "float")])
def test_non_mapping_root_is_a_load_error(tmp_path: Path, text: str, kind: str) -> None:
    """A root that is not a mapping raises ``RecipeLoadError`` naming the root's kind."""
    path = write(tmp_path, "r.yaml", text)
    with pytest.raises(RecipeLoadError, match="root must be a mapping") as info:
        load_recipe(path)
    assert kind in info.value.message
    assert info.value.file == str(path)


def test_empty_file_is_an_empty_recipe(tmp_path: Path) -> None:
    """An empty file composes to an empty document with no generation section."""
    recipe = load_recipe(write(tmp_path, "r.yaml", ""))
    assert (recipe.status, recipe.document) == ("skipped", {})


def test_missing_file_is_a_load_error(tmp_path: Path) -> None:
    """A path that does not exist raises ``RecipeLoadError``."""
    with pytest.raises(RecipeLoadError, match="no such file"):
        load_recipe(tmp_path / "absent.yaml")


def test_directory_is_a_load_error(tmp_path: Path) -> None:
    """A directory is not a readable recipe."""
    with pytest.raises(RecipeLoadError, match="cannot read the file"):
        load_recipe(tmp_path)


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b"\xff\xfe\x00garbage", "not UTF-8 text"),
        (b"a: ${x\n", "invalid interpolation syntax at a"),
        (b"a: !!python/object:os.system x\n", "YAML syntax error"),
        (b"[1, 2]: 3\n", "YAML syntax error"),
        (b"null: 1\n", "cannot parse the file"),
    ],
)
def test_unparseable_content_is_a_load_error(tmp_path: Path, content: bytes, match: str) -> None:
    """Undecodable bytes, bad interpolation grammar, unsafe tags and bad keys raise ``RecipeLoadError``."""
    path = tmp_path / "r.yaml"
    path.write_bytes(content)
    with pytest.raises(RecipeLoadError, match=match):
        load_recipe(path)


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"path": 5}, "path"),
        ({"path": b"r.yaml"}, "path"),
        ({"section": 5}, "section"),
        ({"strict": 1}, "strict"),
    ],
)
def test_argument_types_are_checked(tmp_path: Path, kwargs: dict[str, Any], argument: str) -> None:
    """A non-path ``path``, non-str ``section`` or non-bool ``strict`` raises ``ContractTypeError``."""
    call: dict[str, Any] = {"path": write(tmp_path, "r.yaml", {}), **kwargs}
    with pytest.raises(ContractTypeError) as info:
        load_recipe(call.pop("path"), **call)
    assert info.value.argument == argument


def test_load_errors_pickle_with_their_attributes(tmp_path: Path) -> None:
    """``RecipeLoadError`` survives a pickle round-trip with its message and attributes."""
    path = write(tmp_path, "r.yaml", "a: [1\n")
    with pytest.raises(RecipeLoadError) as info:
        load_recipe(path)
    clone = pickle.loads(pickle.dumps(info.value))
    assert type(clone) is RecipeLoadError
    assert (clone.message, clone.file, clone.line, clone.column) == (
        info.value.message,
        info.value.file,
        info.value.line,
        info.value.column,
    )


# ---------------------------------------------------------------------------------------------- resolution


def test_absolute_relative_and_parent_interpolations(tmp_path: Path) -> None:
    """``${a.b}``, ``${.x}``, ``${..x}`` and ``${...x}`` resolve against the whole composed document."""
    generation = valid_generation(
        max_new_tokens="${policy.max_len}",
        temperature=0.7,
        val_temperature="${.temperature}",
        vllm_cfg={**valid_generation()["vllm_cfg"], "max_model_len": "${..max_new_tokens}"},
        vllm_kwargs={"seqs": "${...batch}"},
    )
    path = write(tmp_path, "r.yaml", {"policy": {"max_len": 300, "batch": 7, "generation": generation}})
    config = load_recipe(path).generation
    assert config is not None
    assert (config.max_new_tokens, config.val_temperature, config.vllm_cfg.max_model_len) == (300, 0.7, 300)
    assert config.vllm_kwargs == {"seqs": 7}


def test_interpolation_across_files(tmp_path: Path) -> None:
    """A child's interpolation sees keys set only by its parent, and the parent's sees the child's values."""
    write(tmp_path, "p.yaml", recipe_with(valid_generation(max_new_tokens="${policy.max_len}")))
    child = write(tmp_path, "c.yaml", {"defaults": "p.yaml", "policy": {"max_len": 99}})
    config = load_recipe(child).generation
    assert config is not None
    assert config.max_new_tokens == 99


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("${add:2,3}", 5),
        ("${mul:4,${policy.n}}", 24),
        ("${div:7,2}", 3.5),
        ("${div:8,2}", 4.0),
        ("${max:3,${policy.n}}", 6),
        ("${add:${mul:2,3},${div:4,4}}", 7.0),
    ],
)
def test_resolvers(tmp_path: Path, expression: str, expected: float) -> None:
    """``add``, ``mul``, ``div`` (true division) and ``max`` compute their values, nested too."""
    generation = valid_generation(vllm_kwargs={"v": expression})
    path = write(tmp_path, "r.yaml", {"policy": {"n": 6, "generation": generation}})
    config = load_recipe(path).generation
    assert config is not None
    assert config.vllm_kwargs is not None
    value = config.vllm_kwargs["v"]
    assert value == expected
    assert type(value) is type(expected)


def test_resolvers_register_once_without_warnings() -> None:
    """Registration is idempotent, emits no (deprecation) warning and keeps an existing resolver of that name."""

    def mine(a: Any, b: Any) -> Any:
        return "mine"

    OmegaConf.clear_resolver("max")
    try:
        OmegaConf.register_resolver("max", mine)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            register_resolvers()
            register_resolvers()
        assert OmegaConf.create({"x": "${max:1,2}"}).x == "mine"
    finally:
        OmegaConf.clear_resolver("max")
        register_resolvers()
    assert OmegaConf.create({"x": "${max:1,2}"}).x == 2


def test_every_unresolvable_leaf_is_reported(tmp_path: Path) -> None:
    """Each ``???``, dangling key, failing resolver and unknown resolver is one error issue with the raw value."""
    generation = valid_generation(
        max_new_tokens="???",
        temperature="${policy.nope}",
        stop_token_ids=[1, "${div:1,0}", 3],
        vllm_kwargs={"x": "${shout:1}"},
    )
    issues = by_path(issues_of(write(tmp_path, "r.yaml", recipe_with(generation))))
    assert set(issues) == {
        f"{GEN}.max_new_tokens",
        f"{GEN}.temperature",
        f"{GEN}.stop_token_ids[1]",
        f"{GEN}.vllm_kwargs.x",
    }
    assert issues[f"{GEN}.max_new_tokens"].reason == "mandatory value is missing (???)"
    assert issues[f"{GEN}.max_new_tokens"].value == "'???'"
    assert issues[f"{GEN}.temperature"].value == "'${policy.nope}'"
    assert "nope" in issues[f"{GEN}.temperature"].reason
    assert "ZeroDivisionError" in issues[f"{GEN}.stop_token_ids[1]"].reason
    assert "shout" in issues[f"{GEN}.vllm_kwargs.x"].reason
    assert all(issue.severity == "error" and "\n" not in issue.reason for issue in issues.values())


def test_interpolation_to_a_missing_value_is_reported(tmp_path: Path) -> None:
    """An interpolation that points at a ``???`` outside the section fails at the interpolating leaf."""
    document = recipe_with(valid_generation(max_new_tokens="${policy.len}"))
    document["policy"]["len"] = "???"
    issue = by_path(issues_of(write(tmp_path, "r.yaml", document)))[f"{GEN}.max_new_tokens"]
    assert "Missing mandatory value" in issue.reason


def test_failed_leaves_are_not_reported_twice(tmp_path: Path) -> None:
    """A leaf that failed resolution gets no extra schema issue (e.g. "Field required")."""
    generation = valid_generation(top_k="${nope}")
    issues = issues_of(write(tmp_path, "r.yaml", recipe_with(generation)))
    assert [issue.path for issue in issues] == [f"{GEN}.top_k"]


def test_nodes_outside_the_section_resolve_only_when_referenced(tmp_path: Path) -> None:
    """Broken interpolations elsewhere in the document do not affect the section."""
    document = recipe_with(valid_generation(), data={"broken": "${nowhere}", "also": "???"})
    assert load_recipe(write(tmp_path, "r.yaml", document)).status == "valid"


def test_interpolated_subtree_resolves_leaf_by_leaf(tmp_path: Path) -> None:
    """A section value interpolating a whole mapping resolves, relative interpolations inside it too."""
    shared = {**valid_generation()["vllm_cfg"], "max_model_len": "${.len}", "len": 77}
    document = recipe_with(valid_generation(vllm_cfg="${shared}"), shared=shared)
    with pytest.raises(RecipeError):  # "len" is an unknown key only under --strict
        load_recipe(write(tmp_path, "r.yaml", document), strict=True)
    config = load_recipe(tmp_path / "r.yaml").generation
    assert config is not None
    assert config.vllm_cfg.max_model_len == 77


@pytest.mark.parametrize(
    "extra", [{"a": "${policy.generation.b}", "b": "${policy.generation.a}"}, {"loop": {"self": "${..loop}"}}]
)
def test_recursive_interpolation_is_an_issue(tmp_path: Path, extra: dict[str, Any]) -> None:
    """Interpolation cycles become error issues, never a crash."""
    issues = issues_of(write(tmp_path, "r.yaml", recipe_with(valid_generation(vllm_kwargs=extra))))
    assert issues
    assert all(issue.path.startswith(f"{GEN}.vllm_kwargs.") for issue in issues)


# ---------------------------------------------------------------------------------------------- section


def test_missing_generation_section_is_skipped_with_a_warning(tmp_path: Path) -> None:
    """With ``section=None`` a recipe without ``policy.generation`` is skipped with the §1.8 warning."""
    recipe = load_recipe(write(tmp_path, "r.yaml", {"policy": {"model_name": "m"}}))
    assert (recipe.status, recipe.section, recipe.generation) == ("skipped", GEN, None)
    (issue,) = recipe.issues
    assert (issue.path, issue.value, issue.severity, issue.code) == (GEN, "<missing>", "warning", "V5")
    assert (issue.source, issue.line, issue.missing, issue.json_value) == (None, None, True, None)
    assert "no generation section" in issue.reason
    assert "--section" in issue.reason


def test_null_generation_section_is_skipped(tmp_path: Path) -> None:
    """A null ``policy.generation`` means no generation step."""
    recipe = load_recipe(write(tmp_path, "r.yaml", {"policy": {"generation": None}}))
    assert recipe.status == "skipped"


@pytest.mark.parametrize("section", [GEN, "eval.generation", "policy.generation.vllm_cfg.nope", "x"])
def test_explicit_missing_section_is_an_error(tmp_path: Path, section: str) -> None:
    """An explicit section must exist, the default spelling included."""
    issues = issues_of(write(tmp_path, "r.yaml", {"policy": {"generation": None}}), section=section)
    assert [(i.path, i.value, i.reason, i.severity, i.code) for i in issues] == [
        (section, "<missing>", f"section {section} not found", "error", "V4")
    ]


def test_explicit_section_elsewhere_is_validated(tmp_path: Path) -> None:
    """A section at another dotted path is validated and named in the result and its issue paths."""
    path = write(tmp_path, "r.yaml", {"eval": {"generation": valid_generation(top_p=2.0)}})
    issues = issues_of(path, section="eval.generation")
    assert [issue.path for issue in issues] == ["eval.generation.top_p"]
    path = write(tmp_path, "ok.yaml", {"eval": {"generation": valid_generation()}})
    recipe = load_recipe(path, section="eval.generation")
    assert (recipe.section, recipe.status) == ("eval.generation", "valid")


@pytest.mark.parametrize(
    ("policy", "path", "reason"),
    [
        ({"generation": "???"}, GEN, "mandatory value is missing (???)"),
        ({"generation": "${nope}"}, GEN, "Interpolation key 'nope' not found"),
        ("${nope}", "policy", "Interpolation key 'nope' not found"),
    ],
)
def test_unresolvable_section_is_an_error(tmp_path: Path, policy: object, path: str, reason: str) -> None:
    """A section (or a node on the way) that is ``???`` or fails to resolve is an error, never skipped."""
    issues = issues_of(write(tmp_path, "r.yaml", {"policy": policy}))
    assert [(issue.path, issue.reason) for issue in issues] == [(path, reason)]


def test_section_reached_through_an_interpolation(tmp_path: Path) -> None:
    """A section node that interpolates another mapping is validated from there."""
    path = write(tmp_path, "r.yaml", {"policy": {"generation": "${gen}"}, "gen": valid_generation()})
    assert load_recipe(path).status == "valid"


@pytest.mark.parametrize(
    ("backend", "value", "reason"),
    [
        ("<absent>", "<missing>", "backend is required"),
        (None, "None", "backend is required"),
        (5, "5", "backend must be a string"),
    ],
)
def test_missing_or_non_string_backend_is_an_error(
    tmp_path: Path, backend: object, value: str, reason: str
) -> None:
    """The section's backend must be present, non-null and a string; nothing else is validated then."""
    generation = valid_generation(top_p=5.0, backend=backend)
    if backend == "<absent>":
        del generation["backend"]
    issues = issues_of(write(tmp_path, "r.yaml", recipe_with(generation)))
    assert len(issues) == 1
    assert (issues[0].path, issues[0].value) == (f"{GEN}.backend", value)
    assert issues[0].reason.startswith(reason)


def test_other_backend_is_skipped(tmp_path: Path) -> None:
    """A non-vLLM backend is not validated: status skipped, no model, one informational warning."""
    generation = {"backend": "megatron", "temperature": "not validated", "x": "${nope}"}
    recipe = load_recipe(write(tmp_path, "r.yaml", recipe_with(generation)))
    assert (recipe.status, recipe.generation) == ("skipped", None)
    assert [(i.path, i.severity) for i in recipe.issues] == [(f"{GEN}.backend", "warning")]
    assert "not validated" in recipe.issues[0].reason


# ---------------------------------------------------------------------------------------------- validation


def test_valid_section_gives_the_validated_model(tmp_path: Path) -> None:
    """A valid section returns ``VllmConfig`` equal to validating the resolved mapping directly."""
    generation = valid_generation(top_k=50, stop_token_ids=[2, 3])
    recipe = load_recipe(write(tmp_path, "r.yaml", recipe_with(generation)))
    assert isinstance(recipe, LoadedRecipe)
    assert (recipe.status, recipe.issues) == ("valid", ())
    assert recipe.generation == VllmConfig.model_validate(generation)


def test_every_schema_error_is_one_issue_with_its_full_path(tmp_path: Path) -> None:
    """Each pydantic error is one issue at the dotted path from the root, list indices as ``[i]``."""
    vllm_cfg = {**valid_generation()["vllm_cfg"], "gpu_memory_utilization": 1.5, "kv_cache_dtype": "fp16"}
    del vllm_cfg["max_model_len"]
    generation = valid_generation(
        top_p=1.5, stop_token_ids=[1, -2, "x"], max_new_tokens=True, vllm_cfg=vllm_cfg
    )
    issues = by_path(issues_of(write(tmp_path, "r.yaml", recipe_with(generation))))
    assert set(issues) == {
        f"{GEN}.top_p",
        f"{GEN}.stop_token_ids[1]",
        f"{GEN}.stop_token_ids[2]",
        f"{GEN}.max_new_tokens",
        f"{GEN}.vllm_cfg.gpu_memory_utilization",
        f"{GEN}.vllm_cfg.kv_cache_dtype",
        f"{GEN}.vllm_cfg.max_model_len",
    }
    assert issues[f"{GEN}.top_p"].value == "1.5"
    assert issues[f"{GEN}.top_p"].reason.startswith("top_p valid values: i) 1.0: no filtering.")
    assert issues[f"{GEN}.stop_token_ids[1]"].value == "-2"
    assert issues[f"{GEN}.stop_token_ids[2]"].value == "'x'"
    assert issues[f"{GEN}.max_new_tokens"].value == "True"
    assert issues[f"{GEN}.vllm_cfg.kv_cache_dtype"].value == "'fp16'"
    assert issues[f"{GEN}.vllm_cfg.max_model_len"].value == "<missing>"
    assert not any(issue.reason.startswith("Value error, ") for issue in issues.values())


@pytest.mark.parametrize(
    ("vllm_cfg", "path", "reason"),
    [
        (
            {"pipeline_parallel_size": 2},
            "vllm_cfg.pipeline_parallel_size",
            "When pipeline_parallel_size > 1, async_engine must be set to True in the vLLM configuration.",
        ),
        (
            {"expert_parallel_size": 3, "tensor_parallel_size": 2},
            "vllm_cfg.expert_parallel_size",
            "When EP > 1, EP must be a multiple of TP since vLLM's EP = DP * TP.",
        ),
    ],
)
def test_cross_field_rules_are_issues_at_their_key(
    tmp_path: Path, vllm_cfg: dict[str, Any], path: str, reason: str
) -> None:
    """A cross-field rule violation is an issue at the key the rule names, with the rule's message."""
    generation = valid_generation(vllm_cfg={**valid_generation()["vllm_cfg"], **vllm_cfg})
    issues = by_path(issues_of(write(tmp_path, "r.yaml", recipe_with(generation))))
    assert issues[f"{GEN}.{path}"].reason == reason


def test_missing_required_key_hints_at_a_misspelling(tmp_path: Path) -> None:
    """A "Field required" issue names a present key that looks like the missing one."""
    vllm_cfg = dict(valid_generation()["vllm_cfg"])
    vllm_cfg["gpu_memory_utilisation"] = vllm_cfg.pop("gpu_memory_utilization")
    issues = by_path(issues_of(write(tmp_path, "r.yaml", recipe_with(valid_generation(vllm_cfg=vllm_cfg)))))
    issue = issues[f"{GEN}.vllm_cfg.gpu_memory_utilization"]
    assert issue.value == "<missing>"
    assert issue.reason.endswith("found unknown key 'gpu_memory_utilisation' (a misspelling?)")


@pytest.mark.parametrize(
    ("overrides", "path", "start"),
    [
        (
            {"colocated": {"enabled": True, "resources": {"gpus_per_node": None, "num_nodes": None}}},
            "colocated.enabled",
            "policy.generation.vllm_cfg.refit_with_reload_api=true is not supported yet with colocated",
        ),
        (
            {
                "colocated": {"enabled": False, "resources": {"gpus_per_node": 8, "num_nodes": 1}},
                "refit_transport": "nixl",
            },
            "refit_transport",
            "policy.generation.vllm_cfg.refit_with_reload_api=true is not supported yet with checkpoint-engine",
        ),
    ],
)
def test_reload_refit_violation_is_an_error_issue(
    tmp_path: Path, overrides: dict[str, Any], path: str, start: str
) -> None:
    """An unsupported reload-refit combination is an error issue at ``{section}.{err.path}``."""
    vllm_cfg = {**valid_generation()["vllm_cfg"], "refit_with_reload_api": True}
    generation = valid_generation(vllm_cfg=vllm_cfg, **overrides)
    issues = issues_of(write(tmp_path, "r.yaml", recipe_with(generation)))
    assert [(issue.path, issue.severity) for issue in issues] == [(f"{GEN}.{path}", "error")]
    assert issues[0].reason.startswith(start)


@pytest.mark.parametrize("spelling", ["_draft_weights_from_refit", "draft_weights_from_refit"])
def test_reload_refit_issue_uses_the_canonical_underscore_path(tmp_path: Path, spelling: str) -> None:
    """A runtime-filled flag in either spelling is reported at its canonical ``_`` path with its value."""
    vllm_cfg = {**valid_generation()["vllm_cfg"], "refit_with_reload_api": True}
    colocated = {"enabled": False, "resources": {"gpus_per_node": 8, "num_nodes": 1}}
    generation = valid_generation(vllm_cfg=vllm_cfg, colocated=colocated, **{spelling: True})
    issues = issues_of(write(tmp_path, "r.yaml", recipe_with(generation)))
    assert [(i.path, i.value) for i in issues] == [(f"{GEN}._draft_weights_from_refit", "True")]
    assert "policy.draft.enabled=true" in issues[0].reason


def test_unknown_keys_are_warnings_and_typos_are_errors(tmp_path: Path) -> None:
    """An unknown key is kept and reported as a warning; one close to a declared key is an error with a hint."""
    vllm_cfg = {**valid_generation()["vllm_cfg"], "gpu_memory_utilisation": 0.9}
    generation = valid_generation(vllm_cfg=vllm_cfg, my_note="hello")
    issues = issues_of(write(tmp_path, "r.yaml", recipe_with(generation)))
    assert [(i.path, i.value, i.severity) for i in issues] == [
        (f"{GEN}.my_note", "'hello'", "warning"),
        (f"{GEN}.vllm_cfg.gpu_memory_utilisation", "0.9", "error"),
    ]
    assert issues[0].reason == "unknown key (not validated)"
    assert "did you mean 'gpu_memory_utilization'?" in issues[1].reason
    assert "never applied" in issues[1].reason


def test_unknown_key_far_from_every_declared_key_is_a_warning(tmp_path: Path) -> None:
    """A key that resembles no declared key loads as a warning, and only ``strict`` makes it an error."""
    generation = valid_generation(my_note="hello")
    recipe = load_recipe(write(tmp_path, "r.yaml", recipe_with(generation)))
    assert [(i.path, i.severity) for i in recipe.issues] == [(f"{GEN}.my_note", "warning")]
    strict = issues_of(write(tmp_path, "r.yaml", recipe_with(generation)), strict=True)
    assert [(i.path, i.severity) for i in strict] == [(f"{GEN}.my_note", "error")]


def test_unknown_list_shows_failed_elements_as_unresolved(tmp_path: Path) -> None:
    """An element that failed resolution keeps its position in an unknown list's value as ``<unresolved>``."""
    generation = valid_generation(my_list=[1, "${nope}", 3])
    issues = issues_of(write(tmp_path, "r.yaml", recipe_with(generation)))
    assert [(i.path, i.value, i.severity) for i in issues] == [
        (f"{GEN}.my_list", "[1, <unresolved>, 3]", "warning"),
        (f"{GEN}.my_list[1]", "'${nope}'", "error"),
    ]


def test_strict_turns_unknown_keys_into_errors(tmp_path: Path) -> None:
    """``strict=True`` makes unknown keys errors; the missing-section warning stays a warning."""
    vllm_cfg = {**valid_generation()["vllm_cfg"], "gpu_memory_utilisation": 0.9}
    path = write(tmp_path, "r.yaml", recipe_with(valid_generation(vllm_cfg=vllm_cfg)))
    issues = issues_of(path, strict=True)
    assert [(i.path, i.severity) for i in issues] == [(f"{GEN}.vllm_cfg.gpu_memory_utilisation", "error")]
    sft = load_recipe(write(tmp_path, "sft.yaml", {"policy": {}}), strict=True)
    assert [i.severity for i in sft.issues] == ["warning"]


def test_issues_are_sorted_and_errors_carry_the_warnings(tmp_path: Path) -> None:
    """``RecipeError.issues`` is sorted by (path, reason) and includes the warnings."""
    vllm_cfg = {**valid_generation()["vllm_cfg"], "refit_with_reload_api": True}
    colocated = {"enabled": True, "resources": {"gpus_per_node": None, "num_nodes": None}}
    generation = valid_generation(zzz=1, aaa=2, vllm_cfg=vllm_cfg, colocated=colocated)
    issues = issues_of(write(tmp_path, "r.yaml", recipe_with(generation)))
    assert [(i.path, i.severity) for i in issues] == [
        (f"{GEN}.aaa", "warning"),
        (f"{GEN}.colocated.enabled", "error"),
        (f"{GEN}.zzz", "warning"),
    ]
    issues = issues_of(write(tmp_path, "r.yaml", recipe_with(valid_generation(top_p=9.0, temperature=-1.0))))
    assert list(issues) == sorted(issues, key=lambda issue: (issue.path, issue.reason))
    assert [i.path for i in issues] == [f"{GEN}.temperature", f"{GEN}.top_p"]


def test_recipe_error_message_is_bounded_and_pickles(tmp_path: Path) -> None:
    """Hundreds of issues still give a message of at most 2,000 characters; the error pickles intact."""
    generation = valid_generation(stop_token_ids=[-1] * 500)
    path = write(tmp_path, "r.yaml", recipe_with(generation))
    with pytest.raises(RecipeError) as info:
        load_recipe(path)
    error = info.value
    assert isinstance(error, ConfigContractError)
    assert len(error.message) <= 2000
    assert error.file == str(path)
    assert error.issues is not None
    assert len(error.issues) == 500
    clone = pickle.loads(pickle.dumps(error))
    assert (clone.message, clone.file, clone.issues) == (error.message, error.file, error.issues)


def test_config_issue_is_frozen() -> None:
    """``ConfigIssue`` is a frozen value model that rejects unknown severities."""
    issue = ConfigIssue(path="a", value="1", reason="r", severity="error", code="V3")
    with pytest.raises(ValueError, match="frozen"):
        issue.path = "b"  # type: ignore[misc]
    fatal: Any = "fatal"
    with pytest.raises(ValueError, match="severity"):
        ConfigIssue(path="a", value="1", reason="r", severity=fatal, code="V3")
    with pytest.raises(ValueError, match="code"):
        ConfigIssue(path="a", value="1", reason="r", severity="error")  # type: ignore[call-arg]


def test_inputs_are_not_mutated(tmp_path: Path) -> None:
    """Loading leaves the recipe files unchanged."""
    write(tmp_path, "p.yaml", {"a": {"_override_": False, "b": 1}})
    child = write(tmp_path, "c.yaml", {"defaults": "p.yaml", "a": {"_override_": True, "c": 2}})
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    load_recipe(child)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


# ---------------------------------------------------------------------------------------------- fixtures


@pytest.mark.parametrize(
    ("name", "status", "transport"),
    [
        ("grpo_base.yaml", "valid", None),
        ("grpo_qwen3_8b.yaml", "valid", None),
        ("refit/collective.yaml", "valid", None),
        ("refit/nccl_reshard.yaml", "valid", "nccl_reshard"),
        ("refit/s3_sparse.yaml", "valid", "vllm_s3_sparse"),
        ("refit/zmq_sparse.yaml", "valid", "vllm_zmq_sparse"),
        ("refit/nixl.yaml", "valid", "nixl"),
        ("refit/plugin.yaml", "valid", "acme_rl.refit.engines:RdmaCheckpointEngine"),
        ("sft_llama.yaml", "skipped", None),  # a fragment (no logger, cluster, ...): not a whole SFT recipe
        ("dpo_null_generation.yaml", "skipped", None),
        ("megatron_backend.yaml", "valid", None),  # a whole GRPO recipe: valid; its generation section is not
    ],
)
def test_example_recipes_load(name: str, status: str, transport: str | None) -> None:
    """Every good example recipe loads with its expected status and refit transport, without errors."""
    recipe = load_recipe(DATA / name)
    assert recipe.status == status
    assert all(issue.severity == "warning" for issue in recipe.issues)
    if status == "valid" and name != "megatron_backend.yaml":
        assert recipe.generation is not None
        assert recipe.generation.refit_transport == transport
        assert not recipe.issues
    if name == "megatron_backend.yaml":  # the whole recipe is checked; the other backend's section is not
        assert (recipe.generation, [issue.code for issue in recipe.issues]) == (None, ["V5"])


def test_child_example_inherits_interpolates_and_overrides() -> None:
    """The GRPO child recipe inherits, interpolates, uses resolvers and replaces ``vllm_kwargs`` whole."""
    recipe = load_recipe(DATA / "grpo_qwen3_8b.yaml")
    config = recipe.generation
    assert config is not None
    assert config.max_new_tokens == 4096
    assert (config.temperature, config.val_temperature, config.val_top_k) == (0.8, 0.8, 50)
    assert config.vllm_cfg.max_model_len == 4096 + 512
    assert config.vllm_kwargs == {"max_num_seqs": 64}
    assert recipe.document["policy"]["generation"]["vllm_kwargs"] == {
        "max_num_seqs": "${mul:${...generation_batch_size},2}"
    }


def test_bundled_recipe_is_valid_without_issues() -> None:
    """The recipe shipped in the package is self-contained, valid and warning-free."""
    recipe = load_recipe(BUNDLED)
    assert "defaults" not in yaml.safe_load(BUNDLED.read_text())
    assert (recipe.status, recipe.issues) == ("valid", ())
    assert recipe.generation is not None
    assert recipe.generation.vllm_cfg.refit_with_reload_api is True


@pytest.mark.parametrize(
    ("name", "paths"),
    [
        (
            "broken/schema_errors.yaml",
            {
                "top_p",
                "top_k",
                "val_top_p",
                "val_top_k",
                "stop_token_ids[2]",
                "vllm_cfg.gpu_memory_utilization",
                "vllm_cfg.max_model_len",
                "vllm_cfg.kv_cache_dtype",
            },
        ),
        ("broken/reload_refit_colocated.yaml", {"colocated.enabled"}),
        ("broken/reload_refit_nixl.yaml", {"refit_transport"}),
        (
            "broken/unresolved.yaml",
            {
                "max_new_tokens",
                "temperature",
                "val_temperature",
                "vllm_cfg.max_model_len",
                "vllm_cfg.precision",
            },
        ),
    ],
)
def test_broken_example_recipes_report_every_error(name: str, paths: set[str]) -> None:
    """Each deliberately broken example fails with an error at every planted path."""
    issues = issues_of(DATA / name)
    assert {issue.path for issue in issues if issue.severity == "error"} == {f"{GEN}.{p}" for p in paths}


def test_typo_example_is_an_error_strict_or_not() -> None:
    """The misspelled override is an error (its setting would never apply), with or without ``strict``."""
    for strict in (False, True):
        issues = issues_of(DATA / "broken/typo_key.yaml", strict=strict)
        assert [(i.path, i.severity) for i in issues] == [(f"{GEN}.vllm_cfg.gpu_memory_utilisation", "error")]


@pytest.mark.parametrize(
    ("name", "match"),
    [
        ("broken/cycle_a.yaml", "defaults cycle"),
        (
            "broken/syntax_error.yaml",
            "YAML syntax error at line 6, column 16: .* started at line 5, column 21",
        ),
        ("broken/missing_parent.yaml", "does not exist"),
        ("broken/root_list.yaml", "root must be a mapping"),
    ],
)
def test_unreadable_example_recipes(name: str, match: str) -> None:
    """Each unreadable example raises ``RecipeLoadError`` with a clear one-line message."""
    with pytest.raises(RecipeLoadError, match=match) as info:
        load_recipe(DATA / name)
    assert "\n" not in info.value.message


def test_list_section_example_is_an_issue_at_the_section_line() -> None:
    """A list where the generation mapping belongs is a V4 error at the section, located in its file and line."""
    (issue,) = issues_of(DATA / "broken/list_section.yaml")
    assert (issue.path, issue.code, issue.line) == (GEN, "V4", 3)
    assert issue.source == str(DATA / "broken/list_section.yaml")
    assert issue.reason == f"section {GEN} must be a mapping, got a list"
    assert issue.json_value == [{"backend": "vllm"}, {"temperature": 1.0}]


def test_examples_are_deep_copied_not_shared(tmp_path: Path) -> None:
    """Two loads return independent documents (mutating one leaves the other unchanged)."""
    first = load_recipe(DATA / "grpo_base.yaml")
    second = load_recipe(DATA / "grpo_base.yaml")
    snapshot = copy.deepcopy(second.document)
    first.document["policy"]["generation"]["temperature"] = 0.0
    assert second.document == snapshot
    assert os.fspath(DATA / "grpo_base.yaml") == first.file


@pytest.mark.parametrize(
    ("parent", "child", "message"),
    [
        (
            {"a": {"b": 1}},
            {"a": [1]},
            "cannot merge a: a list here where the recipe it inherits from has a mapping",
        ),
        (
            {"a": [1]},
            {"a": {"b": 1}},
            "cannot merge a: a mapping here where the recipe it inherits from has a list; mark the mapping with "
            "_override_: true to replace the list",
        ),
    ],
)
def test_list_meeting_a_mapping_message_names_both_kinds(
    tmp_path: Path, parent: dict[str, Any], child: dict[str, Any], message: str
) -> None:
    """The merge conflict message names the new kind, the inherited kind and, for a mapping, the remedy."""
    write(tmp_path, "p.yaml", parent)
    path = write(tmp_path, "c.yaml", {"defaults": "p.yaml", **child})
    with pytest.raises(RecipeLoadError) as info:
        load_recipe(path)
    assert str(info.value) == f"{path}: {message}"


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("2.4", True),
        ("2.4.0.dev1", True),
        ("2.3.9", False),
        ("2.3", False),
        ("1.5", False),
        ("2.10", True),
        ("3.0", True),
        ("dev", True),
        ("2", True),
    ],
)
def test_version_at_least_compares_major_and_minor(version: str, expected: bool) -> None:
    """Versions compare by (major, minor); an unparseable version counts as current."""
    assert version_at_least(version, (2, 4)) is expected


class _UnprintableError(Exception):
    """An exception whose ``str`` raises."""

    def __str__(self) -> str:
        raise RuntimeError("no text")


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (ValueError("\n  first line  \nsecond"), "first line"),
        (ValueError(), "ValueError"),
        (ValueError("  \n "), "ValueError"),
        (_UnprintableError(), "_UnprintableError"),
        (ValueError("x" * 400), "x" * 297 + "..."),
    ],
)
def test_reason_is_the_first_non_blank_line_or_the_type(exc: BaseException, expected: str) -> None:
    """The reason is the first non-blank line (shortened to 300), else the exception's type name."""
    assert reason(exc) == expected


def test_interpolation_cycle_between_two_mappings_is_reported_at_each_entry(tmp_path: Path) -> None:
    """Two mappings that interpolate each other give one "contains itself" issue per cycle entry, raw value shown."""
    kwargs = f"{GEN}.vllm_kwargs"
    extra = {"a": {"x": f"${{{kwargs}.b}}"}, "b": {"y": f"${{{kwargs}.a}}"}}
    issues = issues_of(write(tmp_path, "r.yaml", recipe_with(valid_generation(vllm_kwargs=extra))))
    reason = "recursive interpolation: the value contains itself"
    assert [(i.path, i.value, i.reason, i.severity, i.code) for i in issues] == [
        (f"{kwargs}.a.x.y", f"'${{{kwargs}.a}}'", reason, "error", "V2"),
        (f"{kwargs}.b.y.x", f"'${{{kwargs}.b}}'", reason, "error", "V2"),
    ]


@pytest.mark.parametrize(
    ("document", "message", "path", "value", "line"),
    [
        ({"policy": 5}, "policy must be a mapping (it holds policy.generation), got a int", "policy", "5", 1),
        (
            {"policy": [1, "x"]},
            "policy must be a mapping (it holds policy.generation), got a list",
            "policy",
            "[1, 'x']",
            1,
        ),
        (
            {"policy": {"generation": [1]}},
            "section policy.generation must be a mapping, got a list",
            GEN,
            "[1]",
            2,
        ),
        (
            {"policy": {"generation": "vllm"}},
            "section policy.generation must be a mapping, got a str",
            GEN,
            "'vllm'",
            2,
        ),
    ],
)
def test_section_path_through_a_non_mapping_is_an_issue(
    tmp_path: Path, document: dict[str, Any], message: str, path: str, value: str, line: int
) -> None:
    """A scalar or list on the way to (or at) the section is an error issue (V4) naming the node and its value."""
    file = write(tmp_path, "r.yaml", document)
    issues = issues_of(file)
    assert [(i.path, i.value, i.reason, i.code, i.source, i.line) for i in issues] == [
        (path, value, message, "V4", str(file), line)
    ]


@pytest.mark.parametrize(
    ("policy", "reason"),
    [("???", "mandatory value is missing (???)"), ("${nope}", "Interpolation key 'nope' not found")],
)
def test_unresolvable_node_on_the_way_to_the_section_is_an_issue(
    tmp_path: Path, policy: str, reason: str
) -> None:
    """A missing or broken node above the section is one error issue at that node, showing the raw value."""
    issues = issues_of(write(tmp_path, "r.yaml", {"policy": policy}))
    assert [(i.path, i.value, i.reason, i.severity, i.code) for i in issues] == [
        ("policy", repr(policy), reason, "error", "V2")
    ]
