"""Tests for composition (config/loading/compose.py): each defaults file composed once, each file's OmegaConf tree
built once and handed on, parents confined to the root (V7)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from omegaconf import DictConfig, OmegaConf

from rl_contracts.cli import main
from rl_contracts.config import load_recipe
from rl_contracts.config.loading import compose as compose_module
from rl_contracts.config.loading.compose import compose, find_root
from rl_contracts.config.loading.resolve import register_resolvers
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

    def counting(path: Path, named_by: Path | None, limits: Any) -> DictConfig:
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


@pytest.mark.parametrize("name", ["grpo_qwen3_8b.yaml", "router_replay.yaml", "grpo_base.yaml"])
def test_the_composed_tree_is_the_document(name: str) -> None:
    """``Composition.config`` holds the composed document, unresolved and resolved alike, and no marker."""
    register_resolvers()
    composition = compose(RECIPES / name)
    assert OmegaConf.to_container(composition.config) == composition.document
    rebuilt = OmegaConf.create(composition.document)
    assert OmegaConf.to_container(composition.config, resolve=True) == OmegaConf.to_container(
        rebuilt, resolve=True
    )
    assert "_override_" not in json.dumps(composition.document)


def test_a_chain_builds_no_tree_beyond_the_loaded_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A two-file chain with ``_override_`` markers merges the two trees ``OmegaConf.load`` built (one
    ``OmegaConf.create`` each, of the file as written): none is built from plain containers again, and the markers
    and the replaced inherited keys are gone from the tree."""
    (tmp_path / "base.yaml").write_text("a: {x: 1, y: 2}\nb: ${a.x}\nlist: [1, 2]\n", encoding="utf-8")
    top = tmp_path / "top.yaml"
    top.write_text(
        "defaults: base.yaml\na: {_override_: true, z: 3}\nlist: [{_override_: false, k: 1}]\n",
        encoding="utf-8",
    )
    created: list[object] = []
    real_create = OmegaConf.create

    def counting(*args: Any, **kwargs: Any) -> Any:
        created.append(args[0] if args else None)
        return real_create(*args, **kwargs)

    monkeypatch.setattr(OmegaConf, "create", counting)
    composition = compose(top)
    assert created == [  # the file is read before its defaults
        {"defaults": "base.yaml", "a": {"_override_": True, "z": 3}, "list": [{"_override_": False, "k": 1}]},
        {"a": {"x": 1, "y": 2}, "b": "${a.x}", "list": [1, 2]},
    ]
    expected = {"a": {"z": 3}, "b": "${a.x}", "list": [{"k": 1}]}
    assert composition.document == expected
    assert OmegaConf.to_container(composition.config) == expected


def test_a_file_reached_twice_gets_a_fresh_tree(tmp_path: Path) -> None:
    """The second use of a shared parent does not see what the first merge did to its tree: the later parent's
    inherited ``a.x`` (1) wins over the earlier parent's own (5), as OmegaConf merges them."""
    (tmp_path / "shared.yaml").write_text("a: {x: 1}\n", encoding="utf-8")
    (tmp_path / "left.yaml").write_text("defaults: shared.yaml\na: {x: 5, left: 1}\n", encoding="utf-8")
    (tmp_path / "right.yaml").write_text("defaults: shared.yaml\nb: 2\n", encoding="utf-8")
    top = tmp_path / "top.yaml"
    top.write_text("defaults: [left.yaml, right.yaml]\n", encoding="utf-8")
    composition = compose(top)
    assert composition.document == {"a": {"x": 1, "left": 1}, "b": 2}
    assert OmegaConf.to_container(composition.config) == composition.document


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
