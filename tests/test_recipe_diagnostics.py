"""Recipe diagnostics (SPEC §1.8 second release): codes, provenance, JSON values, key classes, section detection,
``--set`` overrides and the preflight integration of ``load_recipe``."""

from __future__ import annotations

import importlib
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from rl_contracts.config import ConfigIssue, load_recipe
from rl_contracts.config.rules.preflight import PreflightOptions
from rl_contracts.config.rules.registry import RULES as CODES
from rl_contracts.errors import ContractTypeError, RecipeError, RecipeLoadError

yaml: Any = importlib.import_module("yaml")  # PyYAML ships no type stubs
DATA = Path(__file__).parent / "data" / "recipes"
BASE = DATA / "grpo_base.yaml"
EVAL = Path(__file__).parent / "data" / "cli" / "eval.yaml"
R3 = DATA / "router_replay.yaml"
GEN = "policy.generation"
KNOWN = {code.code for code in CODES}


def write(directory: Path, name: str, text: str) -> Path:
    """Write ``text`` (YAML) to ``directory/name`` and return the path."""
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


def child(directory: Path, body: str, name: str = "child.yaml") -> Path:
    """A child of the preflight-clean base fixture holding ``body`` (YAML text); the base is copied beside it (a
    parent outside the recipe's folder would be refused as V7)."""
    if not (directory / BASE.name).exists():
        shutil.copyfile(BASE, directory / BASE.name)
    return write(directory, name, f"defaults: {BASE.name}\n{body}")


def issues_of(path: Path, **kwargs: Any) -> tuple[ConfigIssue, ...]:
    """The issues of a recipe that must fail with ``RecipeError``."""
    with pytest.raises(RecipeError) as info:
        load_recipe(path, **kwargs)
    assert info.value.issues is not None
    return info.value.issues


def at(issues: tuple[ConfigIssue, ...], path: str) -> ConfigIssue:
    """The one issue at ``path``."""
    (found,) = [issue for issue in issues if issue.path == path]
    return found


def line_of(path: Path, text: str) -> int:
    """The 1-based line of the first line of ``path`` that contains ``text``."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(n for n, line in enumerate(lines, 1) if text in line)


# ---------------------------------------------------------------------------------------------- provenance


def test_an_error_in_a_parent_is_reported_against_the_parent_file_and_line(tmp_path: Path) -> None:
    """A bad value inherited from a parent names the parent file and the line that set it, not the child."""
    shutil.copyfile(BASE, tmp_path / BASE.name)
    parent = write(
        tmp_path, "parent.yaml", f"defaults: {BASE.name}\npolicy:\n  generation:\n    top_p: 2.0\n"
    )
    recipe = write(tmp_path, "child.yaml", "defaults: parent.yaml\ngrpo:\n  seed: 7\n")
    issue = at(issues_of(recipe), f"{GEN}.top_p")
    assert (issue.code, issue.source, issue.line) == ("C1", str(tmp_path / "parent.yaml"), 4)
    assert parent.exists()


def test_a_child_value_is_located_in_the_child(tmp_path: Path) -> None:
    """The file that last set a value is the source: a child's override is located in the child."""
    recipe = child(tmp_path, "policy:\n  generation:\n    vllm_cfg:\n      gpu_memory_utilization: 1.5\n")
    issue = at(issues_of(recipe), f"{GEN}.vllm_cfg.gpu_memory_utilization")
    assert (issue.code, issue.source, issue.line, issue.json_value) == ("C2", str(recipe), 5, 1.5)


def test_a_mandatory_marker_never_takes_the_provenance_of_an_inherited_value(tmp_path: Path) -> None:
    """A later ``???`` does not replace an earlier value, so the value stays located where it was set."""
    shutil.copyfile(BASE, tmp_path / BASE.name)
    parent = write(
        tmp_path, "parent.yaml", f"defaults: {BASE.name}\npolicy:\n  generation:\n    top_p: 2.0\n"
    )
    recipe = write(tmp_path, "child.yaml", "defaults: parent.yaml\npolicy:\n  generation:\n    top_p: ???\n")
    issue = at(issues_of(recipe), f"{GEN}.top_p")
    assert (issue.source, issue.line) == (str(parent), 4)


def test_a_missing_key_has_no_provenance(tmp_path: Path) -> None:
    """A key no file sets is ``<missing>``, ``missing=True``, JSON ``null``, and has neither source nor line."""
    recipe = write(tmp_path, "r.yaml", "policy:\n  generation:\n    backend: vllm\n")
    issue = at(issues_of(recipe), f"{GEN}.max_new_tokens")
    assert (issue.value, issue.missing, issue.json_value, issue.source, issue.line) == (
        "<missing>",
        True,
        None,
        None,
        None,
    )
    assert issue.code == "V3"


def test_a_value_set_by_an_override_has_the_source_set() -> None:
    """A value a ``--set`` override wrote, or one below an overridden mapping, has source ``"--set"``, no line."""
    issue = at(issues_of(BASE, overrides=["policy.generation.top_p=3"]), f"{GEN}.top_p")
    assert (issue.code, issue.value, issue.source, issue.line) == ("C1", "3", "--set", None)
    nested = issues_of(BASE, overrides=["policy.generation.vllm_cfg={gpu_memory_utilization: 1.5}"])
    issue = at(nested, f"{GEN}.vllm_cfg.gpu_memory_utilization")
    assert (issue.code, issue.source, issue.line) == ("C2", "--set", None)


def test_a_file_value_next_to_an_override_keeps_its_file_and_line(tmp_path: Path) -> None:
    """Only the overridden path takes the source ``"--set"``; a bad value the recipe file set keeps its line."""
    recipe = child(tmp_path, "policy:\n  generation:\n    vllm_cfg:\n      gpu_memory_utilization: 1.5\n")
    issues = issues_of(recipe, overrides=["policy.generation.top_p=3"])
    assert (at(issues, f"{GEN}.top_p").source, at(issues, f"{GEN}.top_p").line) == ("--set", None)
    issue = at(issues, f"{GEN}.vllm_cfg.gpu_memory_utilization")
    assert (issue.source, issue.line) == (str(recipe), 5)


def test_a_replaced_mapping_is_located_in_the_replacing_file(tmp_path: Path) -> None:
    """Below an ``_override_: true`` mapping every value comes from the file that replaced it; a value of the wrong
    type is reported once (V3), not again by preflight."""
    body = "policy:\n  generation:\n    colocated:\n      _override_: true\n      enabled: 5\n      resources: {}\n"
    recipe = child(tmp_path, body)
    issue = at(issues_of(recipe), f"{GEN}.colocated.enabled")
    assert (issue.code, issue.source, issue.line) == ("V3", str(recipe), 6)


def test_int_keys_merge_keys_and_list_items_are_located(tmp_path: Path) -> None:
    """Provenance finds an int mapping key, a key brought in by a YAML merge (``<<``) and a list item."""
    body = (
        "shared: &shared\n"
        "  top_k: 0\n"
        "policy:\n"
        "  generation:\n"
        "    <<: *shared\n"
        "    stop_token_ids:\n"
        "      - 1\n"
        "      - -4\n"
        "    vllm_kwargs:\n"
        "      limits:\n"
        "        5: ${nope}\n"
    )
    recipe = child(tmp_path, body)
    issues = issues_of(recipe)
    assert (at(issues, f"{GEN}.top_k").line, at(issues, f"{GEN}.top_k").code) == (3, "C1")
    assert (at(issues, f"{GEN}.stop_token_ids[1]").line, at(issues, f"{GEN}.stop_token_ids[1]").code) == (
        9,
        "C2",
    )
    unresolved = at(issues, f"{GEN}.vllm_kwargs.limits.5")
    assert (unresolved.code, unresolved.line, unresolved.value) == ("V2", 12, "'${nope}'")


def test_the_first_of_several_merge_sources_wins_as_in_yaml(tmp_path: Path) -> None:
    """With ``<<: [*a, *b]`` the key of the first source is the one OmegaConf keeps, and its line is reported."""
    body = "a: &a\n  top_k: 0\nb: &b\n  top_k: 50\npolicy:\n  generation:\n    <<: [*a, *b]\n"
    issue = at(issues_of(child(tmp_path, body)), f"{GEN}.top_k")
    assert (issue.value, issue.line) == ("0", 3)


def test_a_float_key_written_in_yaml_1_2_is_located(tmp_path: Path) -> None:
    """A ``1e-8`` key is a float for OmegaConf; provenance reads it the same way and finds its line."""
    recipe = child(tmp_path, "policy:\n  generation:\n    vllm_kwargs:\n      x:\n        1e-8: ${nope}\n")
    issue = at(issues_of(recipe), f"{GEN}.vllm_kwargs.x.1e-08")
    assert (issue.source, issue.line) == (str(recipe), 6)


# ---------------------------------------------------------------------------------------------- codes and JSON


@pytest.mark.parametrize(
    ("body", "path", "code"),
    [
        ("    top_k: 0\n", f"{GEN}.top_k", "C1"),
        ("    max_new_tokens: 0\n", f"{GEN}.max_new_tokens", "C2"),
        ("    max_new_tokens: '512'\n", f"{GEN}.max_new_tokens", "V3"),
        ("    vllm_cfg:\n      pipeline_parallel_size: 2\n", f"{GEN}.vllm_cfg.pipeline_parallel_size", "C3"),
        ("    checkpoint_engine: {enabled: true}\n", f"{GEN}.checkpoint_engine", "C6"),
        ("    refit_transport: nccl\n", f"{GEN}.refit_transport", "C7"),
        ("    pad_token_id: 1\n    _pad_token_id: 1\n", f"{GEN}.pad_token_id", "V3"),
        ("    note: ???\n", f"{GEN}.note", "V2"),
        ("    temprature: 0.5\n", f"{GEN}.temprature", "K1"),
        (
            "    vllm_cfg:\n      limit_mm_per_prompt: {image: 1}\n",
            f"{GEN}.vllm_cfg.limit_mm_per_prompt",
            "P28",
        ),
        (
            "    vllm_cfg:\n      refit_with_reload_api: true\n",
            f"{GEN}.colocated.enabled",
            "R2",
        ),
    ],
)
def test_each_kind_of_error_carries_its_code(tmp_path: Path, body: str, path: str, code: str) -> None:
    """Schema, range, rule, resolution, key and reload-refit errors each carry their own catalogue code."""
    issues = issues_of(child(tmp_path, f"policy:\n  generation:\n{body}"))
    issue = at(issues, path)
    assert (issue.code, issue.severity) == (code, "error")
    assert issue.source is not None or issue.missing
    assert {i.code for i in issues} <= KNOWN


def test_reload_refit_steps_have_their_step_codes(tmp_path: Path) -> None:
    """Reload refit with a sparse transport is step 5 (R5), reported at ``refit_transport``."""
    body = (
        "policy:\n  generation:\n    colocated:\n      enabled: false\n"
        "    refit_transport: vllm_zmq_sparse\n    vllm_cfg:\n      refit_with_reload_api: true\n"
    )
    issue = at(issues_of(child(tmp_path, body), run_preflight=False), f"{GEN}.refit_transport")
    assert (issue.code, issue.value, issue.json_value) == ("R5", "'vllm_zmq_sparse'", "vllm_zmq_sparse")


def test_json_values_are_json(tmp_path: Path) -> None:
    """``json_value`` keeps JSON values (null, numbers, mappings) and writes other values as their ``repr``."""
    body = (
        "policy:\n  generation:\n    note_null: null\n    note_map: {audio: 1}\n    note_nan: .nan\n"
        "    note_list: [1, [2, x]]\n"
    )
    recipe = load_recipe(child(tmp_path, body))
    values = {issue.path.rsplit(".", 1)[-1]: issue.json_value for issue in recipe.issues}
    assert values == {
        "note_null": None,
        "note_map": {"audio": 1},
        "note_nan": "nan",
        "note_list": [1, [2, "x"]],
    }
    assert all(issue.code == "K2" and not issue.missing for issue in recipe.issues)


def test_a_huge_json_value_is_bounded(tmp_path: Path) -> None:
    """A value whose JSON would exceed 2,000 characters is given as its shortened ``repr`` instead."""
    items = ", ".join(str(n) for n in range(2000))
    recipe = load_recipe(child(tmp_path, f"policy:\n  generation:\n    note: [{items}]\n"))
    (issue,) = recipe.issues
    assert isinstance(issue.json_value, str)
    assert len(issue.json_value) <= 200
    assert issue.json_value.startswith("[0, 1, 2")


def test_load_error_issue_has_code_v1_and_the_file_line() -> None:
    """``ConfigIssue.for_load_error`` reports a YAML syntax error as V1 with its file and line."""
    with pytest.raises(RecipeLoadError) as info:
        load_recipe(DATA / "broken" / "syntax_error.yaml")
    issue = ConfigIssue.for_load_error(info.value)
    assert (issue.code, issue.path, issue.severity, issue.source, issue.line) == (
        "V1",
        "",
        "error",
        str(DATA / "broken" / "syntax_error.yaml"),
        6,
    )


# ---------------------------------------------------------------------------------------------- key classes


def test_a_misspelt_override_in_a_child_is_an_error_and_the_parent_value_stays(tmp_path: Path) -> None:
    """A typo (K1) is an error with a did-you-mean hint located in the child; the inherited value is untouched."""
    recipe = child(tmp_path, "policy:\n  generation:\n    vllm_cfg:\n      gpu_memory_utilisation: 0.3\n")
    issue = at(issues_of(recipe), f"{GEN}.vllm_cfg.gpu_memory_utilisation")
    assert (issue.code, issue.severity, issue.source, issue.line) == ("K1", "error", str(recipe), 5)
    assert "did you mean 'gpu_memory_utilization'?" in issue.reason
    ignored = load_recipe(recipe, ignore=["K1"])
    assert ignored.generation is not None
    assert ignored.generation.vllm_cfg.gpu_memory_utilization == 0.6


@pytest.mark.parametrize("strict", [False, True])
def test_a_dead_key_is_a_warning_saying_why_even_under_strict(tmp_path: Path, strict: bool) -> None:
    """``distributed_executor_backend`` in ``vllm_cfg`` is never read: W2, a warning whatever ``strict`` says."""
    recipe = child(
        tmp_path, "policy:\n  generation:\n    vllm_cfg:\n      distributed_executor_backend: null\n"
    )
    (issue,) = load_recipe(recipe, strict=strict).issues
    assert (issue.code, issue.severity, issue.line) == ("W2", "warning", 5)
    assert issue.reason.startswith("has no effect: ")
    assert "remove it" in issue.reason


@pytest.mark.parametrize(
    ("key", "value", "code", "place"),
    [
        (
            "limit_mm_per_prompt",
            "{audio: 1}",
            "P28",
            "from policy.generation.vllm_kwargs.limit_mm_per_prompt: move",
        ),
        ("limit_mm_per_prompt", "null", "W2", "policy.generation.vllm_kwargs.limit_mm_per_prompt"),
        ("enable_return_routed_experts", "true", "P28", "set policy.router_replay.enabled: true instead"),
        ("enable_return_routed_experts", "false", "W2", "nothing at policy.router_replay.enabled either"),
    ],
)
def test_a_misplaced_key_names_the_right_place(
    tmp_path: Path, key: str, value: str, code: str, place: str
) -> None:
    """A misplaced key is P28 (an error naming where NeMo RL reads it), W2 when its value would change nothing."""
    recipe = child(tmp_path, f"policy:\n  generation:\n    vllm_cfg:\n      {key}: {value}\n")
    if code == "P28":
        issue = at(issues_of(recipe), f"{GEN}.vllm_cfg.{key}")
        assert issue.reason.startswith("has no effect here")
    else:
        (issue,) = load_recipe(recipe).issues
        assert "would change nothing" in issue.reason
    assert (issue.code, issue.line) == (code, 5)
    assert place in issue.reason


def test_expert_parallel_switch_without_expert_parallelism_is_warned_twice(tmp_path: Path) -> None:
    """``enable_expert_parallel: true`` is dead, and with ``expert_parallel_size`` 1 also the §3 W2 warning."""
    recipe = child(tmp_path, "policy:\n  generation:\n    vllm_cfg:\n      enable_expert_parallel: true\n")
    issues = load_recipe(recipe, strict=True).issues
    assert [(i.code, i.severity, i.path) for i in issues] == [
        ("W2", "warning", f"{GEN}.vllm_cfg.enable_expert_parallel")
    ] * 2
    assert any(
        "vllm_cfg.enable_expert_parallel=true but expert_parallel_size ≤ 1: vLLM runs without expert parallelism"
        in i.reason
        for i in issues
    )


# ---------------------------------------------------------------------------------------------- sections


def test_an_evaluation_config_is_validated_at_its_top_level_generation() -> None:
    """An eval config (top-level ``generation``, no ``policy.generation``) is validated at ``generation``."""
    recipe = load_recipe(EVAL)
    assert (recipe.section, recipe.status) == ("generation", "valid")
    assert recipe.generation is not None
    assert recipe.generation.max_new_tokens == 2048


def test_recipe_error_carries_the_section_and_the_entrypoint(tmp_path: Path) -> None:
    """``RecipeError.section`` is the section validated and ``.entrypoint`` the one preflight assumed (or None)."""
    evaluation = write(tmp_path, "eval.yaml", f"defaults: {EVAL}\ngeneration:\n  top_p: 2.0\n")
    grpo = child(tmp_path, "policy:\n  generation:\n    top_p: 2.0\n")
    options = PreflightOptions(entrypoint="grpo-gym", environ={})
    cases: list[tuple[Path, dict[str, Any], tuple[str, str | None]]] = [
        (evaluation, {}, ("generation", None)),
        (grpo, {}, (GEN, "grpo")),
        (grpo, {"preflight_options": options}, (GEN, "grpo-gym")),
        (grpo, {"run_preflight": False}, (GEN, None)),
    ]
    for path, kwargs, expected in cases:
        with pytest.raises(RecipeError) as info:
            load_recipe(path, root=Path(os.sep), **kwargs)  # the eval parent lies in the shared corpus
        assert (info.value.section, info.value.entrypoint) == expected
        assert info.value.details()["section"] == expected[0]


def test_policy_generation_wins_over_a_top_level_generation(tmp_path: Path) -> None:
    """With both present, ``section=None`` selects ``policy.generation``."""
    recipe = child(tmp_path, "generation:\n  backend: vllm\n")
    assert load_recipe(recipe).section == GEN


@pytest.mark.parametrize("text", ["policy: {}\n", "generation: 5\n", "generation: [1]\n"])
def test_without_a_generation_mapping_the_recipe_is_skipped_naming_the_option(
    tmp_path: Path, text: str
) -> None:
    """Only when neither section is a mapping the recipe is skipped, and the note names ``--section``."""
    recipe = load_recipe(write(tmp_path, "r.yaml", text))
    (issue,) = recipe.issues
    assert (recipe.status, recipe.section, issue.code, issue.severity) == ("skipped", GEN, "V5", "warning")
    assert "--section" in issue.reason


def test_a_top_level_generation_that_fails_resolution_is_reported(tmp_path: Path) -> None:
    """A top-level ``generation`` that cannot resolve is selected, so its V2 error is reported, not skipped."""
    issues = issues_of(write(tmp_path, "r.yaml", "generation: ${nope}\n"))
    assert [(i.path, i.code, i.line) for i in issues] == [("generation", "V2", 1)]


# ---------------------------------------------------------------------------------------------- overrides


def test_overrides_apply_after_composition_before_resolution() -> None:
    """``key=value`` replaces a value (interpolations then see it), ``++key=value`` adds one, values are YAML."""
    recipe = load_recipe(
        BASE,
        overrides=["policy.max_total_sequence_length=1024", "++policy.generation.vllm_kwargs.x=1e-8"],
    )
    assert recipe.generation is not None
    assert (recipe.generation.max_new_tokens, recipe.generation.vllm_cfg.max_model_len) == (1024, 1024)
    assert recipe.generation.vllm_kwargs == {"enable_chunked_prefill": True, "x": 1e-8}
    assert recipe.document["policy"]["max_total_sequence_length"] == 1024


def test_overrides_merge_mappings_index_lists_and_take_empty_strings() -> None:
    """A mapping value merges into a mapping; a digit segment indexes a list; an empty value is ``''``."""
    recipe = load_recipe(
        BASE,
        overrides=[
            "policy.generation.vllm_kwargs={max_num_seqs: 8}",
            "policy.optimizer.kwargs.betas.1=0.95",
            "++policy.generation.note=",
        ],
    )
    assert recipe.generation is not None
    assert recipe.generation.vllm_kwargs == {"enable_chunked_prefill": True, "max_num_seqs": 8}
    assert recipe.document["policy"]["optimizer"]["kwargs"]["betas"] == [0.9, 0.95]
    assert [(i.path, i.json_value) for i in recipe.issues] == [(f"{GEN}.note", "")]


@pytest.mark.parametrize(
    ("override", "fragment", "path"),
    [
        ("+policy.generation.top_p=1", "which the recipe already has", "policy.generation.top_p"),
        ("policy.generation.top_p", "must be key=value", None),
        ("~policy.generation.top_p", "deletion with ~ is not supported", None),
        ("policy..x=1", "empty segment", None),
        ("policy.generation.top_p=[1", "is not YAML", "policy.generation.top_p"),
        ("policy.generation.top_p.x=1", "not a mapping", "policy.generation.top_p.x"),
        (
            "policy.optimizer.kwargs.betas.7=1",
            "past the end of a list of 2",
            "policy.optimizer.kwargs.betas[7]",
        ),
    ],
)
def test_bad_overrides_are_load_errors(override: str, fragment: str, path: str | None) -> None:
    """A malformed override, or one that cannot set its key, is a ``RecipeLoadError`` naming the override."""
    with pytest.raises(RecipeLoadError) as info:
        load_recipe(BASE, overrides=[override])
    assert fragment in info.value.message
    assert repr(override) in info.value.message
    assert (info.value.file, info.value.path, info.value.value) == (str(BASE), path, repr(override))


@pytest.mark.parametrize(
    ("argument", "value"),
    [
        ("overrides", "a=1"),
        ("overrides", [1]),
        ("select", "P"),
        ("ignore", [None]),
        ("run_preflight", 1),
        ("preflight_options", {"entrypoint": "grpo"}),
    ],
)
def test_bad_arguments_are_type_errors(argument: str, value: object) -> None:
    """A bare string where a collection belongs, a non-str item, a non-bool flag or a foreign options object is a
    ``ContractTypeError`` naming the argument."""
    arguments: dict[str, Any] = {argument: value}
    with pytest.raises(ContractTypeError, match=argument):
        load_recipe(BASE, **arguments)


# ---------------------------------------------------------------------------------------------- preflight


def test_preflight_findings_become_issues_with_provenance(tmp_path: Path) -> None:
    """A violated preflight rule is an issue with its code, path, the value as JSON, and the line that set it."""
    recipe = child(tmp_path, "grpo:\n  batch_multiplier: 1.5\n")
    with pytest.raises(RecipeError) as info:
        load_recipe(recipe)
    issue = at(info.value.issues or (), "grpo.batch_multiplier")
    assert (issue.code, issue.severity, issue.json_value, issue.source, issue.line) == (
        "P7",
        "error",
        1.5,
        str(recipe),
        3,
    )
    assert "use_dynamic_sampling" in issue.reason
    assert info.value.skipped
    assert all(note.code in KNOWN for note in info.value.skipped)


def test_select_and_ignore_filter_issues_and_skipped_rules(tmp_path: Path) -> None:
    """``ignore`` drops a code (the recipe then loads); ``select`` keeps only the given families."""
    recipe = child(tmp_path, "grpo:\n  batch_multiplier: 1.5\npolicy:\n  generation:\n    note: 1\n")
    loaded = load_recipe(recipe, ignore=["P7"])
    assert [(i.code, i.path) for i in loaded.issues] == [("K2", f"{GEN}.note")]
    assert {note.code for note in loaded.skipped} >= {"N1"}
    only_k = load_recipe(recipe, select=["K"])
    assert ([i.code for i in only_k.issues], only_k.skipped) == (["K2"], ())
    assert load_recipe(recipe, select=["P", "N"], ignore=["P7", "N1"]).issues == ()


def test_run_preflight_false_checks_the_generation_section_only(tmp_path: Path) -> None:
    """Without preflight a cross-section defect passes; no rule is skipped and no entrypoint is detected."""
    recipe = child(tmp_path, "grpo:\n  batch_multiplier: 1.5\n")
    loaded = load_recipe(recipe, run_preflight=False)
    assert (loaded.status, loaded.issues, loaded.skipped, loaded.entrypoint) == ("valid", (), (), None)


def test_preflight_options_reach_preflight() -> None:
    """The entrypoint given in ``preflight_options`` is the one reported back."""
    options = PreflightOptions(entrypoint="grpo-gym", environ={})
    recipe = load_recipe(BASE, preflight_options=options, ignore=["P"])
    assert recipe.entrypoint == "grpo-gym"
    assert load_recipe(BASE).entrypoint == "grpo"


def test_an_unresolvable_leaf_outside_the_section_is_an_error_of_a_whole_recipe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unset ``${oc.env:...}`` outside the section of a whole recipe is V2 (NeMo RL resolves the whole recipe
    before it starts), shown as written; preflight still gets the path as unresolved."""
    monkeypatch.delenv("RL_CONTRACTS_UNSET_VARIABLE", raising=False)
    recipe = child(tmp_path, "cluster:\n  gpus_per_node: ${oc.env:RL_CONTRACTS_UNSET_VARIABLE}\n")
    with pytest.raises(RecipeError) as caught:
        load_recipe(recipe)
    [issue] = caught.value.issues or ()
    assert (issue.code, issue.path, issue.value) == (
        "V2",
        "cluster.gpus_per_node",
        repr("${oc.env:RL_CONTRACTS_UNSET_VARIABLE}"),
    )
    assert any(
        note.path is not None and note.path.startswith("cluster.gpus_per_node")
        for note in caught.value.skipped or ()
    )


@pytest.mark.parametrize(
    ("keys", "junk"),
    [
        (("grpo",), [1, 2]),
        (("cluster",), 5),
        (("policy", "dtensor_cfg"), [1]),
        (("policy", "generation", "colocated"), "text"),
        (("policy", "generation", "vllm_cfg", "tensor_parallel_size"), "four"),
        (("loss_fn",), None),
        (("data",), ["x"]),
    ],
)
def test_wrong_shaped_sections_are_issues_never_tracebacks(
    tmp_path: Path, keys: tuple[str, ...], junk: object
) -> None:
    """A list or scalar where a section belongs ends in a result or a ``RecipeError``, never another exception."""
    document = yaml.safe_load(BASE.read_text(encoding="utf-8"))
    holder = document
    for key in keys[:-1]:
        holder = holder[key]
    holder[keys[-1]] = junk
    recipe = write(tmp_path, "r.yaml", yaml.safe_dump(document))
    issues: tuple[ConfigIssue, ...]
    try:
        issues = load_recipe(recipe).issues
    except RecipeError as exc:
        issues = exc.issues or ()
        assert any(issue.severity == "error" for issue in issues)
    assert all(issue.code in KNOWN for issue in issues)


def test_every_sample_recipe_loads_without_an_error(corpus_recipe: Path, recipe_corpus: Path) -> None:
    """Every real recipe of the external corpus (conftest.py) loads with default options and no error issue."""
    recipe = load_recipe(
        corpus_recipe, root=recipe_corpus
    )  # a corpus outside a work tree: its top folder is the root
    assert all(issue.severity == "warning" for issue in recipe.issues)
    assert all(
        issue.code in KNOWN and issue.source is not None for issue in recipe.issues if not issue.missing
    )


def test_the_router_replay_recipe_fails_only_p21_on_vllm_0_32() -> None:
    """PREFLIGHT.md §7: with vLLM 0.32 the router-replay recipe fails P21 (prefix caching off), nothing else."""
    issues = issues_of(R3, preflight_options=PreflightOptions(vllm_version=(0, 32)))
    errors = [issue for issue in issues if issue.severity == "error"]
    assert {issue.code for issue in errors} == {"P21"}
    assert all(issue.source is not None and issue.line is not None for issue in errors)
