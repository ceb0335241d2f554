"""The served model name (``LoadedRecipe.model_name``) and the local model's ``config.json`` that unlocks N7.

Recipes are written to a temporary folder over ``tests/data/rules/base.yaml`` (which loads with N7 skipped only);
model folders hold a ``config.json`` of a quantized GPT-OSS checkpoint, so that N7 reports an error when the
config is read and a skipped note when it is not.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from rl_contracts.config import load_recipe
from rl_contracts.config.loading.compose import find_root
from rl_contracts.config.loading.local_model import MAX_CONFIG_BYTES, local_model_config, served_model_name
from rl_contracts.config.rules.preflight import PreflightOptions
from rl_contracts.errors import RecipeError

BASE = Path(__file__).resolve().parents[2] / "data" / "rules" / "base.yaml"
PARENTS = Path("/")  # the recipes lie in tmp folders, their parents in tests/data: the root must hold both
QUANTIZED: dict[str, Any] = {
    "architectures": ["GptOssForCausalLM"],
    "quantization_config": {"quant_method": "mxfp4"},
    "secret_marker": "do-not-print-me",
}
DENSE: dict[str, Any] = {"architectures": ["Qwen2ForCausalLM"], "secret_marker": "do-not-print-me"}
NO_ENV = PreflightOptions(environ={})


def write_recipe(folder: Path, model_name: str, extra: str = "") -> Path:
    """A recipe in ``folder`` over the base recipe, serving ``model_name`` with vLLM's ``load_format: auto``."""
    folder.mkdir(parents=True, exist_ok=True)
    recipe = folder / "recipe.yaml"
    recipe.write_text(
        f"defaults: {BASE}\npolicy:\n  model_name: {json.dumps(model_name)}\n  generation:\n"
        f"    vllm_cfg:\n      load_format: auto\n{extra}",
        encoding="utf-8",
    )
    return recipe


def write_model(folder: Path, config: object) -> Path:
    """A model folder holding ``config`` as its config.json."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


def n7_outcome(recipe: Path, options: PreflightOptions = NO_ENV) -> str:
    """``"error"`` when N7 reports an issue, ``"skipped"`` when it is a skipped note, ``"passed"`` otherwise."""
    try:
        loaded = load_recipe(recipe, preflight_options=options, root=PARENTS)
    except RecipeError as raised:
        failure = raised
    else:
        return "skipped" if any(s.code == "N7" for s in loaded.skipped) else "passed"
    issues = [i for i in failure.issues or () if i.code == "N7"]
    assert issues, [(i.code, i.path) for i in failure.issues or ()]
    assert all("do-not-print-me" not in i.reason for i in issues)
    return "error"


# fmt: off
SERVED = [
    ("policy-wins", {"policy": {"model_name": "a/b", "generation": {"model_name": "c/d"}}}, "policy.generation", "a/b"),
    ("policy-only", {"policy": {"model_name": "a/b", "generation": {}}}, "policy.generation", "a/b"),
    ("section-fallback", {"policy": {"model_name": None, "generation": {"model_name": "c/d"}}}, "policy.generation", "c/d"),
    ("evaluation", {"policy": {"model_name": "a/b"}, "generation": {"model_name": "e/f"}}, "generation", "e/f"),
    ("none", {"policy": {"generation": {"model_name": None}}}, "policy.generation", None),
    ("not-text", {"policy": {"model_name": 3, "generation": {}}}, "policy.generation", None),
    ("empty", {"policy": {"model_name": "", "generation": {}}}, "policy.generation", None),
    ("policy-not-mapping", {"policy": ["x"]}, "policy.generation", None),
]
# fmt: on


@pytest.mark.parametrize(
    ("document", "section", "expected"), [c[1:] for c in SERVED], ids=[c[0] for c in SERVED]
)
def test_served_model_name_reads_it_as_the_trainer_sets_it(
    document: dict[str, Any], section: str, expected: str | None
) -> None:
    """``policy.model_name`` for ``policy.generation`` (the trainer overwrites the section's), else the section's."""
    assert served_model_name(document, section) == expected


def test_loaded_generation_carries_the_policy_model_name(tmp_path: Path) -> None:
    """A GRPO recipe's generation section gets ``policy.model_name`` when its own is absent; both read it."""
    loaded = load_recipe(write_recipe(tmp_path, "Qwen/Qwen2.5-1.5B"), preflight_options=NO_ENV, root=PARENTS)
    assert loaded.model_name == "Qwen/Qwen2.5-1.5B"
    assert loaded.generation is not None
    assert loaded.generation.model_name == "Qwen/Qwen2.5-1.5B"


def test_a_section_model_name_is_kept_but_model_name_is_what_runs(tmp_path: Path) -> None:
    """A section that names its own model keeps it; ``LoadedRecipe.model_name`` is the policy's (the trainer's)."""
    recipe = write_recipe(tmp_path, "org/policy-model", "    model_name: org/other\n")
    loaded = load_recipe(recipe, preflight_options=NO_ENV, root=PARENTS)
    assert loaded.generation is not None
    assert (loaded.model_name, loaded.generation.model_name) == ("org/policy-model", "org/other")


def test_hub_model_leaves_n7_skipped(tmp_path: Path) -> None:
    """A model name that is no local folder keeps N7 a skipped note naming --model-config."""
    assert n7_outcome(write_recipe(tmp_path, "openai/gpt-oss-20b")) == "skipped"


@pytest.mark.parametrize("relative", [True, False], ids=["relative", "absolute"])
def test_local_model_folder_unlocks_n7(tmp_path: Path, relative: bool) -> None:
    """A local folder with a quantized config.json beside the recipe makes N7 run (and fail on load_format auto)."""
    model = write_model(tmp_path / "models" / "gpt-oss", QUANTIZED)
    name = "models/gpt-oss" if relative else str(model)
    assert n7_outcome(write_recipe(tmp_path, name)) == "error"


def test_dense_local_model_passes_n7(tmp_path: Path) -> None:
    """A local dense model's config.json runs N7, which passes: no skipped note, no issue."""
    write_model(tmp_path / "dense", DENSE)
    assert n7_outcome(write_recipe(tmp_path, "dense")) == "passed"


def test_relative_model_resolves_from_the_repository_root(tmp_path: Path) -> None:
    """In a git repository, a relative model path is read from the repository root, not the recipe's folder."""
    (tmp_path / ".git").mkdir()
    write_model(tmp_path / "models" / "gpt-oss", QUANTIZED)
    recipe = write_recipe(tmp_path / "examples" / "configs", "models/gpt-oss")
    assert find_root(recipe) == tmp_path.resolve()
    assert n7_outcome(recipe) == "error"


def test_a_given_root_narrows_what_is_read(tmp_path: Path) -> None:
    """With ``root=`` naming a folder inside the repository, a model folder of the repository outside that folder is
    not read (``root=`` never widens the reach: ``/`` still reads only inside the repository)."""
    (tmp_path / ".git").mkdir()
    write_model(tmp_path / "models" / "gpt-oss", QUANTIZED)
    recipe = write_recipe(tmp_path / "examples", "models/gpt-oss")
    assert local_model_config("models/gpt-oss", recipe, root=Path("/")) == QUANTIZED
    assert local_model_config("models/gpt-oss", recipe, root=tmp_path / "examples") is None
    assert local_model_config("models/gpt-oss", recipe, root=tmp_path) == QUANTIZED


def test_an_explicit_model_config_wins_over_the_local_folder(tmp_path: Path) -> None:
    """``--model-config`` (``PreflightOptions.model_config``) is used as given; the local file is not read."""
    write_model(tmp_path / "gpt-oss", QUANTIZED)
    options = PreflightOptions(environ={}, model_config=DENSE)
    assert n7_outcome(write_recipe(tmp_path, "gpt-oss"), options) == "passed"


def test_folder_outside_the_repository_is_not_read(tmp_path: Path) -> None:
    """A hostile recipe pointing at a folder outside its repository gets N7 skipped: nothing outside is read."""
    outside = write_model(tmp_path / "elsewhere", QUANTIZED)
    recipe = write_recipe(tmp_path / "repo", str(outside))
    assert n7_outcome(recipe) == "skipped"
    assert n7_outcome(write_recipe(tmp_path / "repo2", "../elsewhere")) == "skipped"


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symbolic links")
def test_symlinks_leading_outside_are_not_followed(tmp_path: Path) -> None:
    """A config.json or model folder inside the repository that links outside it is not read."""
    outside = write_model(tmp_path / "elsewhere", QUANTIZED)
    repo = tmp_path / "repo"
    (repo / "linked-file").mkdir(parents=True)
    (repo / "linked-file" / "config.json").symlink_to(outside / "config.json")
    (repo / "linked-folder").symlink_to(outside, target_is_directory=True)
    assert n7_outcome(write_recipe(repo, "linked-file")) == "skipped"
    assert n7_outcome(write_recipe(repo, "linked-folder")) == "skipped"


# fmt: off
UNREADABLE = [
    ("not-json", b"{architectures: nope"),
    ("not-utf8", b"\xff\xfe{}"),
    ("a-list", b"[1, 2]"),
    ("too-large", b"{\"pad\": \"" + b"x" * MAX_CONFIG_BYTES + b"\"}"),
]
# fmt: on


@pytest.mark.parametrize(("name", "content"), UNREADABLE, ids=[n for n, _ in UNREADABLE])
def test_unreadable_config_reads_as_none(tmp_path: Path, name: str, content: bytes) -> None:
    """A config.json that is not a bounded UTF-8 JSON object reads as None (N7 stays skipped), never an error."""
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_bytes(content)
    recipe = write_recipe(tmp_path, "model")
    assert local_model_config("model", recipe) is None
    assert n7_outcome(recipe) == "skipped"


@pytest.mark.parametrize("model_name", [None, "", "no/such/folder", "bad\x00name", "recipe.yaml"])
def test_no_local_folder_reads_as_none(tmp_path: Path, model_name: str | None) -> None:
    """No name, a missing folder, a NUL byte or a file instead of a folder all read as None."""
    recipe = write_recipe(tmp_path, "x")
    assert local_model_config(model_name, recipe) is None


def test_config_is_parsed_as_given(tmp_path: Path) -> None:
    """A readable config.json inside the repository is returned as its parsed JSON object."""
    write_model(tmp_path / "model", QUANTIZED)
    assert local_model_config("model", write_recipe(tmp_path, "model")) == QUANTIZED
