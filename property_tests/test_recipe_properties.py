"""Properties of recipe loading (SPEC §7 invariants 29, 27 and 1, end to end through YAML files).

Recipes are written to temporary files with ``OmegaConf.to_yaml`` and loaded with ``load_recipe``.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import assume, given
from hypothesis import strategies as st
from omegaconf import OmegaConf

from rl_contracts.config import LoadedRecipe, VllmConfig, load_recipe
from rl_contracts.config.rules.registry import RULES as CODES
from rl_contracts.config.rules.unknown_keys import VLLM_CFG_KEYS
from rl_contracts.errors import ContractError, RecipeError, RecipeLoadError
from rl_contracts.testing import assert_contract_error
from rl_contracts.testing.strategies import (
    PlantedConfig,
    ReloadRefitCase,
    planted_bad_vllm_configs,
    reload_refit_cases,
    vllm_config_dicts,
)

GEN = "policy.generation"

KEYS = st.sampled_from(["a", "b", "c", "d", "e"])
SCALARS: st.SearchStrategy[Any] = st.one_of(
    st.integers(-1000, 1000),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=6),
)
MAPPINGS: st.SearchStrategy[dict[str, Any]] = st.recursive(
    st.dictionaries(KEYS, SCALARS | st.lists(SCALARS, max_size=3), max_size=4),
    lambda inner: st.dictionaries(KEYS, SCALARS | inner, max_size=4),
    max_leaves=12,
)


def _dump(directory: Path, name: str, content: object) -> Path:
    """Write ``content`` with OmegaConf's own YAML writer, which quotes strings its reader would retype."""
    path = directory / name
    path.write_text(OmegaConf.to_yaml(content), encoding="utf-8")
    return path


CATALOGUE = {code.code for code in CODES}


def _without_misplaced_keys(generation: dict[str, Any]) -> dict[str, Any]:
    """The section without the dead/misplaced ``vllm_cfg`` keys (PREFLIGHT.md §5) that the generator may write
    (``enable_return_routed_experts``); a misplaced key set to true is an error (P28) by design."""
    vllm_cfg = generation.get("vllm_cfg")
    if isinstance(vllm_cfg, dict):
        generation = {**generation, "vllm_cfg": {k: v for k, v in vllm_cfg.items() if k not in VLLM_CFG_KEYS}}
    return generation


def _yaml_safe(value: object) -> bool:
    """Whether ``value`` writes to YAML and reads back through OmegaConf as itself (no interpolation, no ???)."""
    if isinstance(value, str):
        return "${" not in value and value != "???" and "\\" not in value
    if isinstance(value, dict):
        return all(_yaml_safe(k) and _yaml_safe(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_yaml_safe(item) for item in value)
    return value is None or isinstance(value, bool | int | float | bytes)


def _outcome(load: Callable[[], object]) -> tuple[str, str]:
    """A comparable summary of one load: the result's repr, or the error's class, message and issues."""
    try:
        result = load()
    except (RecipeError, RecipeLoadError) as exc:
        return type(exc).__name__, f"{exc.message!r} {getattr(exc, 'issues', None)!r}"
    return "ok", repr(result)


# ---------------------------------------------------------------------------------------------- invariant 29


@given(generation=vllm_config_dicts() | planted_bad_vllm_configs().map(lambda p: p.config), extra=MAPPINGS)
def test_load_recipe_is_deterministic(generation: dict[str, Any], extra: dict[str, Any]) -> None:
    """Invariant 29: loading the same files twice gives the same result, or the same error and issues."""
    assume(_yaml_safe(generation))
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        _dump(directory, "parent.yaml", {"policy": {"generation": generation}, "x": extra})
        child = _dump(directory, "child.yaml", {"defaults": "parent.yaml", "y": extra})
        first = _outcome(lambda: load_recipe(child))
        second = _outcome(lambda: load_recipe(child))
    assert first == second


PATHS: list[tuple[str, ...]] = [("x",), ("s", "y"), ("s", "t", "z")]
SETTINGS = st.dictionaries(
    st.sampled_from(range(len(PATHS))),
    st.one_of(st.integers(-9, 9), st.text(alphabet="pq", min_size=1, max_size=2), st.none(), st.just("???")),
    max_size=3,
)


def _nested(settings: dict[int, Any]) -> dict[str, Any]:
    document: dict[str, Any] = {}
    for index, value in settings.items():
        holder = document
        *parents, leaf = PATHS[index]
        for key in parents:
            holder = holder.setdefault(key, {})
        holder[leaf] = value
    return document


def _get(document: dict[str, Any], path: tuple[str, ...]) -> tuple[bool, Any]:
    node: Any = document
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return False, None
        node = node[key]
    return True, node


@given(
    grandparents=st.lists(SETTINGS, min_size=1, max_size=3),
    parents=st.lists(st.tuples(SETTINGS, st.lists(st.integers(0, 2), max_size=2)), max_size=3),
    own=SETTINGS,
)
def test_later_source_wins_and_mandatory_never_replaces(
    grandparents: list[dict[int, Any]], parents: list[tuple[dict[int, Any], list[int]]], own: dict[int, Any]
) -> None:
    """Invariant 29: the last non-``???`` source wins, the file over all its defaults; ``???`` never replaces.

    Parents list grandparents from a shared pool, so diamonds occur; sources apply depth-first.
    """
    order: list[dict[int, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        for g, settings in enumerate(grandparents):
            _dump(directory, f"g{g}.yaml", _nested(settings))
        for p, (settings, grands) in enumerate(parents):
            picked = [g % len(grandparents) for g in grands]
            _dump(directory, f"p{p}.yaml", {"defaults": [f"g{g}.yaml" for g in picked], **_nested(settings)})
            order.extend(grandparents[g] for g in picked)
            order.append(settings)
        order.append(own)
        child = _dump(
            directory, "c.yaml", {"defaults": [f"p{p}.yaml" for p in range(len(parents))], **_nested(own)}
        )
        document = load_recipe(child).document
    for index, path in enumerate(PATHS):
        expected: tuple[bool, Any] = (False, None)
        for settings in order:
            if index in settings and (settings[index] != "???" or not expected[0]):
                expected = (True, settings[index])
        assert _get(document, path) == expected


@given(
    inherited=MAPPINGS,
    overriding=MAPPINGS,
    depth=st.integers(1, 3),
    mandatory=st.sets(KEYS, max_size=2),
)
def test_override_section_equals_the_overriding_mapping(
    inherited: dict[str, Any], overriding: dict[str, Any], depth: int, mandatory: set[str]
) -> None:
    """Invariant 29: an ``_override_`` section equals the overriding mapping without its marker, at any depth."""
    overriding = {**overriding, **dict.fromkeys(mandatory, "???")}
    prefix = ["outer", "mid", "sec"][-depth:]

    def at_prefix(section: dict[str, Any]) -> dict[str, Any]:
        document = section
        for key in reversed(prefix):
            document = {key: document, "sibling": 1}
        return document

    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        _dump(directory, "p.yaml", at_prefix(inherited))
        child = _dump(
            directory, "c.yaml", {"defaults": "p.yaml", **at_prefix({**overriding, "_override_": True})}
        )
        document = load_recipe(child).document
    found, section = _get(document, tuple(prefix))
    assert found
    assert section == overriding
    assert document["sibling"] == 1


@given(generation=vllm_config_dicts())
def test_generation_round_trips_through_model_dump(generation: dict[str, Any]) -> None:
    """Invariant 29: re-validating ``generation.model_dump(by_alias=True, exclude_unset=True)`` gives an equal model."""
    assume(_yaml_safe(generation))
    generation = _without_misplaced_keys(generation)
    with tempfile.TemporaryDirectory() as tmp:
        recipe = load_recipe(_dump(Path(tmp), "r.yaml", {"policy": {"generation": generation}}))
    assert recipe.status == "valid"
    assert recipe.generation is not None
    assert all(issue.severity == "warning" for issue in recipe.issues)
    again = VllmConfig.model_validate(recipe.generation.model_dump(by_alias=True, exclude_unset=True))
    assert again == recipe.generation


@given(generation=vllm_config_dicts() | planted_bad_vllm_configs().map(lambda p: p.config))
def test_every_issue_has_a_catalogue_code_and_provenance(generation: dict[str, Any]) -> None:
    """Every issue carries a code of the catalogue; an issue about a value the file holds names the file and a
    line within it; a missing value has neither."""
    assume(_yaml_safe(generation))
    with tempfile.TemporaryDirectory() as tmp:
        path = _dump(Path(tmp), "r.yaml", {"policy": {"generation": generation}})
        lines = len(path.read_text(encoding="utf-8").splitlines())
        try:
            issues = load_recipe(path).issues
        except RecipeError as exc:
            issues = exc.issues or ()
    for issue in issues:
        assert issue.code in CATALOGUE
        if issue.missing:
            assert (issue.source, issue.line, issue.json_value) == (None, None, None)
        elif issue.source is not None:
            assert issue.source == str(path)
            assert issue.line is not None
            assert 1 <= issue.line <= lines


# ---------------------------------------------------------------------------------------------- rules end to end


def _loc_path(loc: tuple[str | int, ...]) -> str:
    path = GEN
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


@given(planted=planted_bad_vllm_configs())
def test_planted_defects_fail_the_recipe_at_their_path(planted: PlantedConfig) -> None:
    """Every planted bad value in a recipe raises ``RecipeError`` with an error issue at (or below) its full path.

    A planted ``backend`` string other than ``"vllm"`` is the one exception: that section is skipped, not validated.
    """
    assume(_yaml_safe(planted.config))
    backend = planted.config.get("backend")
    with tempfile.TemporaryDirectory() as tmp:
        path = _dump(Path(tmp), "r.yaml", {"policy": {"generation": planted.config}})
        try:
            recipe = load_recipe(path)
        except RecipeError as exc:
            issues = exc.issues or ()
        else:
            assert isinstance(backend, str)
            assert backend != "vllm", f"planted defect not reported: {planted.description}"
            assert (recipe.status, recipe.generation) == ("skipped", None)
            return
    planted_path = _loc_path(planted.loc)
    error_paths = {issue.path for issue in issues if issue.severity == "error"}
    # At or below it: a bad element of a planted list (stop_strings=[1]) is reported at its index.
    assert any(
        path == planted_path or path.startswith((f"{planted_path}.", f"{planted_path}["))
        for path in error_paths
    ), (
        planted.description,
        error_paths,
    )


@given(case=reload_refit_cases())
def test_reload_refit_rules_apply_to_recipes(case: ReloadRefitCase) -> None:
    """Invariant 27 end to end: only the supported reload-refit combination loads; others fail at ``.path``."""
    assume(_yaml_safe(case.config))
    generation = _without_misplaced_keys(case.config)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            recipe = load_recipe(_dump(Path(tmp), "r.yaml", {"policy": {"generation": generation}}))
        except RecipeError as exc:
            errors = [issue for issue in exc.issues or () if issue.severity == "error"]
        else:
            assert case.path is None
            assert recipe.status == "valid"
            return
    assert [issue.path for issue in errors] == [f"{GEN}.{case.path}"]
    assert errors[0].reason.startswith("policy.generation.vllm_cfg.refit_with_reload_api=true")


# ---------------------------------------------------------------------------------------------- invariant 1

FRAGMENTS = st.sampled_from(
    [
        "defaults: ",
        "defaults:\n  - p.yaml\n",
        "p.yaml",
        "r.yaml",
        "policy:\n  generation:\n    ",
        "backend: vllm\n",
        "_override_: ",
        "${",
        "}",
        "${.x}",
        "${div:1,0}",
        "${nope:1}",
        "???",
        "[",
        "]",
        "{",
        "- ",
        ": ",
        "\n",
        "  ",
        "&a ",
        "*a",
        "!!binary ",
        "!!set ",
        "null",
        "1e-8",
        "\t",
        "'",
        '"',
        "\\",
    ]
)
TEXTS = st.lists(FRAGMENTS | st.text(max_size=4), max_size=24).map("".join)


@given(text=TEXTS, parent=TEXTS, section=st.sampled_from([None, GEN, "policy", "x.y"]), strict=st.booleans())
def test_arbitrary_files_never_escape_the_error_contract(
    text: str, parent: str, section: str | None, strict: bool
) -> None:
    """Invariant 1: any file content returns a result or raises a bounded, picklable ``ContractError``."""
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        (directory / "p.yaml").write_text(parent, encoding="utf-8")
        path = directory / "r.yaml"
        path.write_text(text, encoding="utf-8")
        outcome = _attempt(lambda: load_recipe(path, section=section, strict=strict))
    if isinstance(outcome, LoadedRecipe):
        assert outcome.status in ("valid", "skipped")
        assert all(issue.severity == "warning" for issue in outcome.issues)
        return
    assert isinstance(outcome, RecipeError | RecipeLoadError)
    assert isinstance(outcome, ValueError)
    assert_contract_error(outcome)


def _attempt(load: Callable[[], LoadedRecipe]) -> LoadedRecipe | ContractError:
    """The loaded recipe, or the ``ContractError`` the load raised (anything else propagates and fails)."""
    try:
        return load()
    except ContractError as exc:
        return exc
