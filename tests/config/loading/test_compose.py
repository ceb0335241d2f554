"""Tests for composition (config/loading/compose.py): each defaults file composed once, as OmegaConf loads and
merges it but without building its trees, parents confined to the root (V7)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
from omegaconf import DictConfig, OmegaConf

from rl_contracts.cli import main
from rl_contracts.config import load_recipe
from rl_contracts.config.loading import compose as compose_module
from rl_contracts.config.loading.compose import compose, find_root
from rl_contracts.config.loading.resolve import register_resolvers, resolve_document
from rl_contracts.errors import RecipeError, RecipeLoadError


def diamond(folder: Path, levels: int) -> Path:
    """A chain of ``levels`` files, each listing its parent twice (a diamond per level); the top file's path."""
    (folder / "level0.yaml").write_text("value: 0\nseen: [0]\n", encoding="utf-8")
    for level in range(1, levels + 1):
        parent = f"level{level - 1}.yaml"
        text = f"defaults: [{parent}, ./{parent}]\nvalue: {level}\n"
        (folder / f"level{level}.yaml").write_text(text, encoding="utf-8")
    return folder / f"level{levels}.yaml"


def test_each_file_of_a_diamond_graph_is_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Forty levels of diamonds (2**40 paths) read each of the 41 files once; the chain lists each file once."""
    reads: list[Path] = []
    real_read = compose_module._read

    def counting(path: Path, named_by: Path | None, limits: Any) -> dict[Any, Any]:
        reads.append(path.resolve())
        return real_read(path, named_by, limits)

    monkeypatch.setattr(compose_module, "_read", counting)
    top = diamond(tmp_path, 40)
    composition = compose(top)
    assert composition.document == {"value": 40, "seen": [0]}
    assert len(reads) == len(set(reads)) == 41
    assert [path.resolve() for path in composition.chain] == [
        (tmp_path / f"level{i}.yaml").resolve() for i in range(41)
    ]


RECIPES = Path(__file__).parents[2] / "data" / "recipes"


def omegaconf_composition(path: Path) -> Any:
    """The document NeMo RL's loader makes of a recipe without markers: each file read by ``OmegaConf.load``, its
    ``defaults`` merged onto each other in order, then the file itself (``OmegaConf.merge``)."""
    tree = OmegaConf.load(path)
    assert isinstance(tree, DictConfig)
    parents = tree.pop("defaults", None)
    merged: Any = OmegaConf.create()
    for parent in [parents] if isinstance(parents, str) else parents or []:
        merged = OmegaConf.merge(merged, omegaconf_composition(path.parent / parent))
    return OmegaConf.merge(merged, tree)


def assert_composed_as_omegaconf_does(path: Path, root: Path) -> None:
    register_resolvers()
    composition = compose(path, root=root)
    reference = omegaconf_composition(path)
    assert composition.document == OmegaConf.to_container(reference)
    assert OmegaConf.to_container(
        OmegaConf.create(composition.document), resolve=True
    ) == OmegaConf.to_container(reference, resolve=True)


@pytest.mark.parametrize(
    "name",
    [
        "grpo_base.yaml",
        "router_replay.yaml",
        "sft_llama.yaml",
        "broken/typo_key.yaml",
        "broken/schema_errors.yaml",
    ],
)
def test_the_document_is_what_omegaconf_composes(name: str) -> None:
    """The plain document equals OmegaConf's own load and merge of the chain, unresolved and resolved."""
    assert_composed_as_omegaconf_does(RECIPES / name, RECIPES)


def test_a_corpus_recipe_is_composed_as_omegaconf_composes(corpus_recipe: Path, recipe_corpus: Path) -> None:
    """Each real recipe (they have no ``_override_`` markers) composes to what OmegaConf's load and merge make."""
    assert_composed_as_omegaconf_does(corpus_recipe, recipe_corpus)


@pytest.fixture
def created(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """What each ``OmegaConf.create`` call of the test was given, in order."""
    calls: list[object] = []
    real_create = OmegaConf.create

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[0] if args else None)
        return real_create(*args, **kwargs)

    monkeypatch.setattr(OmegaConf, "create", counting)
    return calls


def test_a_plain_chain_builds_no_omegaconf_tree(tmp_path: Path, created: list[object]) -> None:
    """A two-file chain of plain values with ``_override_`` markers is read and merged without one
    ``OmegaConf.create``; the markers and the replaced inherited keys are gone."""
    (tmp_path / "base.yaml").write_text("a: {x: 1, y: 2}\nb: ${a.x}\nlist: [1, 2]\n", encoding="utf-8")
    top = tmp_path / "top.yaml"
    top.write_text(
        "defaults: base.yaml\na: {_override_: true, z: 3}\nlist: [{_override_: false, k: 1}]\n",
        encoding="utf-8",
    )
    composition = compose(top)
    assert created == []
    assert composition.document == {"a": {"z": 3}, "b": "${a.x}", "list": [{"k": 1}]}


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("a: !!binary aGk=\n", "a bytes value"),
        ("a: {1.5: x}\n", "a float key"),
        ("a: 1\na: 2\n", "a repeated key"),
        ("a: &a {x: 1}\nb: {<<: *a}\n", "a merge key"),
        ("a: ${oops\n", "an interpolation that does not parse"),
        ("- 1\n", "a list root"),
    ],
)
def test_a_file_only_omegaconf_can_judge_is_read_by_omegaconf(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, why: str
) -> None:
    """A file holding something OmegaConf might convert or refuse is read by ``OmegaConf.load`` itself."""
    file = tmp_path / "r.yaml"
    file.write_text(text, encoding="utf-8")
    loads: list[object] = []
    real_load = OmegaConf.load

    def counting(*args: Any, **kwargs: Any) -> Any:
        loads.append(args)
        return real_load(*args, **kwargs)

    monkeypatch.setattr(OmegaConf, "load", counting)
    with contextlib.suppress(RecipeLoadError):
        compose(file)
    assert len(loads) == 1, why


def test_an_interpolation_meeting_a_mapping_merges_as_omegaconf_does(tmp_path: Path) -> None:
    """An inherited ``${b}`` met by a mapping is merged by OmegaConf: into a copy of what it points at."""
    (tmp_path / "base.yaml").write_text("a: ${b}\nb: {x: 1}\n", encoding="utf-8")
    top = tmp_path / "top.yaml"
    top.write_text("defaults: base.yaml\na: {y: 2}\n", encoding="utf-8")
    assert compose(top).document == {"a": {"x": 1, "y": 2}, "b": {"x": 1}}


def test_a_file_reached_twice_is_merged_unchanged(tmp_path: Path) -> None:
    """The second use of a shared parent does not see what the first merge did: the later parent's inherited
    ``a.x`` (1) wins over the earlier parent's own (5), as OmegaConf merges them."""
    (tmp_path / "shared.yaml").write_text("a: {x: 1}\n", encoding="utf-8")
    (tmp_path / "left.yaml").write_text("defaults: shared.yaml\na: {x: 5, left: 1}\n", encoding="utf-8")
    (tmp_path / "right.yaml").write_text("defaults: shared.yaml\nb: 2\n", encoding="utf-8")
    top = tmp_path / "top.yaml"
    top.write_text("defaults: [left.yaml, right.yaml]\n", encoding="utf-8")
    assert compose(top).document == {"a": {"x": 1, "left": 1}, "b": 2}


def test_yaml_aliases_share_nothing_in_the_document(tmp_path: Path) -> None:
    """An anchored mapping used twice becomes two mappings, as OmegaConf copies it: changing one leaves the other."""
    file = tmp_path / "r.yaml"
    file.write_text("a: &m {x: [1]}\nb: *m\n", encoding="utf-8")
    document = compose(file).document
    document["a"]["x"].append(2)
    assert document["b"] == {"x": [1]}


def test_a_diamond_keeps_provenance_of_the_last_file(tmp_path: Path) -> None:
    """A value set by the shared parent is located there; one set by the top file in the top file."""
    top = diamond(tmp_path, 3)
    (tmp_path / "level0.yaml").write_text("policy: {generation: {backend: vllm}}\n", encoding="utf-8")
    with pytest.raises(RecipeError) as info:
        load_recipe(top)
    issues = info.value.issues or ()
    assert issues
    sources = {issue.source for issue in issues if issue.path.startswith("policy.generation.")}
    assert sources <= {None, str(tmp_path / "level0.yaml")}


def test_the_root_is_the_git_work_tree_else_the_folder(tmp_path: Path) -> None:
    """``find_root`` finds the nearest folder with a ``.git`` entry (a folder or a worktree's file), else the
    recipe's folder."""
    recipe = tmp_path / "repo" / "configs" / "sub" / "r.yaml"
    recipe.parent.mkdir(parents=True)
    recipe.write_text("a: 1\n", encoding="utf-8")
    assert find_root(recipe) == recipe.parent.resolve()
    (tmp_path / "repo" / ".git").write_text("gitdir: /elsewhere\n", encoding="utf-8")
    assert find_root(recipe) == (tmp_path / "repo").resolve()


def outside_parent(tmp_path: Path) -> tuple[Path, Path]:
    """A repository whose recipe inherits from a "credentials" file outside it; (recipe, credentials)."""
    secret = tmp_path / "home" / "credentials.yaml"
    secret.parent.mkdir()
    secret.write_text("token: hunter2-secret\n", encoding="utf-8")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    recipe = repo / "r.yaml"
    recipe.write_text(f"defaults: {secret}\nleak: ${{token}}\n", encoding="utf-8")
    return recipe, secret


def test_a_parent_outside_the_root_is_refused_as_v7(tmp_path: Path) -> None:
    """A parent outside the recipe's work tree is V7, naming the parent and the option, and its content is not
    read or shown."""
    recipe, secret = outside_parent(tmp_path)
    with pytest.raises(RecipeLoadError) as info:
        load_recipe(recipe)
    error = info.value
    assert (error.code, error.path, error.file) == ("V7", "defaults", str(recipe))
    assert str(secret) in error.message
    assert "--root DIR" in error.message
    assert "hunter2" not in error.message
    assert load_recipe(recipe, root=tmp_path).document["token"] == "hunter2-secret"


def test_a_symlink_out_of_the_root_is_refused(tmp_path: Path) -> None:
    """Parents are compared by real path: a symlink inside the repository to a file outside is V7."""
    recipe, secret = outside_parent(tmp_path)
    (recipe.parent / "link.yaml").symlink_to(secret)
    recipe.write_text("defaults: link.yaml\n", encoding="utf-8")
    with pytest.raises(RecipeLoadError) as info:
        load_recipe(recipe)
    assert info.value.code == "V7"


def test_relative_parents_inside_a_work_tree_load(tmp_path: Path) -> None:
    """NeMo RL's layout (``recipes/llm/x.yaml`` inheriting ``../../base.yaml``) loads inside a work tree."""
    repo = tmp_path / "nemo_rl"
    (repo / "recipes" / "llm").mkdir(parents=True)
    (repo / ".git").mkdir()
    (repo / "base.yaml").write_text("a: 1\n", encoding="utf-8")
    child = repo / "recipes" / "llm" / "x.yaml"
    child.write_text("defaults: ../../base.yaml\nb: 2\n", encoding="utf-8")
    assert load_recipe(child).document == {"a": 1, "b": 2}


@pytest.mark.parametrize("form", ["human", "json", "github"])
def test_cli_refuses_an_outside_parent_unless_root_widens_it(
    tmp_path: Path, form: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``validate`` exits 2 with one V7 line in every format; ``--root`` widens the root."""
    recipe, _ = outside_parent(tmp_path)
    assert main(["validate", "--format", form, str(recipe)]) == 2
    out = capsys.readouterr().out
    assert "hunter2" not in out
    if form == "json":
        (report,) = json.loads(out)
        assert [issue["code"] for issue in report["issues"]] == ["V7"]
    else:
        assert "V7" in out
    assert main(["validate", "--format", form, "--root", str(tmp_path), str(recipe)]) == 0
    capsys.readouterr()


def test_a_recipe_without_interpolations_builds_no_omegaconf_tree(
    tmp_path: Path, created: list[object]
) -> None:
    """Nothing to resolve, nothing built: composing and resolving a two-file chain of literal values creates no
    OmegaConf tree; the same chain with one interpolation builds exactly one (the composed document)."""
    register_resolvers()
    (tmp_path / "base.yaml").write_text("a: {x: 16, y: [1, 2]}\n", encoding="utf-8")
    top = tmp_path / "top.yaml"
    top.write_text("defaults: base.yaml\na: {z: 1.0}\n", encoding="utf-8")
    document = compose(top).document
    resolution = resolve_document(document, str(top))
    assert (resolution.document, resolution.failures) == ({"a": {"x": 16, "y": [1, 2], "z": 1.0}}, ())
    assert resolution.document["a"] is not document["a"]
    assert created == []
    top.write_text("defaults: base.yaml\na: {z: '${.x}'}\n", encoding="utf-8")
    document = compose(top).document
    assert resolve_document(document, str(top)).document == {"a": {"x": 16, "y": [1, 2], "z": 16}}
    assert created == [document]
