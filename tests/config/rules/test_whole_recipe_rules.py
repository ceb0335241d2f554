"""The whole-recipe rules through ``load_recipe``: missing keys (V8), wrong types (V9), sizes (P32), typos (K1),
misplaced (K3) and unknown (K2) keys, the batch arithmetic (P33-P36), unresolved values (V2), algorithm detection
and ``algorithm=``; SFT and DPO recipes are validated, not skipped."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest

from rl_contracts.config import load_recipe
from rl_contracts.config.loading.check_recipe import choose_algorithm
from rl_contracts.config.loading.load_recipe import LoadedRecipe
from rl_contracts.config.section.recipe import ALGORITHMS, Algorithm
from rl_contracts.errors import ContractTypeError, RecipeError
from rl_contracts.testing.strategies import minimal_whole_recipe

yaml: Any = importlib.import_module("yaml")  # PyYAML ships no type stubs

ABSENT = object()


def write(tmp_path: Path, recipe: dict[str, Any]) -> Path:
    """``recipe`` as ``recipe.yaml`` in ``tmp_path``."""
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe, sort_keys=False))
    return path


def changed(algorithm: Algorithm, changes: dict[str, object]) -> dict[str, Any]:
    """The minimal recipe of ``algorithm`` with ``changes`` (dotted path to value; :data:`ABSENT` removes)."""
    recipe = minimal_whole_recipe(algorithm)
    for dotted, value in changes.items():
        *parents, last = dotted.split(".")
        holder = recipe
        for key in parents:
            holder = holder.setdefault(key, {})
        if value is ABSENT:
            del holder[last]
        else:
            holder[last] = value
    return recipe


def findings(path: Path, **options: Any) -> set[tuple[str, str, str]]:
    """(code, path, severity) of every issue ``load_recipe`` reports, whether the recipe is valid or not."""
    try:
        loaded = load_recipe(path, run_preflight=False, **options)
    except RecipeError as exc:
        return {(issue.code, issue.path, issue.severity) for issue in exc.issues or ()}
    return {(issue.code, issue.path, issue.severity) for issue in loaded.issues}


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_the_minimal_recipe_of_every_algorithm_loads_clean(tmp_path: Path, algorithm: Algorithm) -> None:
    """A recipe with exactly the required keys is valid, names its algorithm and has no issue."""
    loaded = load_recipe(write(tmp_path, minimal_whole_recipe(algorithm)), run_preflight=False)
    assert (loaded.status, loaded.algorithm, loaded.issues) == ("valid", algorithm, ())


@pytest.mark.parametrize(
    ("algorithm", "changes", "expected"),
    [
        ("grpo", {"policy.tokenizer": ABSENT}, ("V8", "policy.tokenizer", "error")),
        ("sft", {"checkpointing.enabled": ABSENT}, ("V8", "checkpointing.enabled", "error")),
        ("dpo", {"logger.wandb": ABSENT}, ("V8", "logger.wandb", "error")),
        ("distillation", {"teacher.model_name": ABSENT}, ("V8", "teacher.model_name", "error")),
        ("grpo", {"grpo.num_prompts_per_step": "many"}, ("V9", "grpo.num_prompts_per_step", "error")),
        ("grpo", {"grpo.normalize_rewards": [True]}, ("V9", "grpo.normalize_rewards", "error")),
        ("sft", {"sft.max_num_steps": "8"}, ("V9", "sft.max_num_steps", "error")),
        ("ppo", {"value_loss_fn.scale": True}, ("V9", "value_loss_fn.scale", "error")),
        ("grpo", {"grpo.num_generations_per_prompt": 0}, ("P32", "grpo.num_generations_per_prompt", "error")),
        ("dpo", {"policy.train_micro_batch_size": -2}, ("P32", "policy.train_micro_batch_size", "error")),
        ("grpo", {"checkpointing.eanbled": True}, ("K1", "checkpointing.eanbled", "error")),
        ("grpo", {"grpo.normalize_rewardss": False}, ("K1", "grpo.normalize_rewardss", "error")),
        ("grpo", {"grpo.train_micro_batch_size": 2}, ("K3", "grpo.train_micro_batch_size", "error")),
        ("sft", {"logger.my_flag": 1}, ("K2", "logger.my_flag", "warning")),
        (
            "grpo",
            {"policy.train_global_batch_size": 3, "grpo.num_prompts_per_step": 2},
            ("P33", "policy.train_global_batch_size", "error"),
        ),
        (
            "sft",
            {"policy.train_micro_batch_size": 2, "policy.train_global_batch_size": 3},
            ("P34", "policy.train_micro_batch_size", "error"),
        ),
        (
            "dpo",
            {"dpo.val_micro_batch_size": 3, "dpo.val_global_batch_size": 4},
            ("P34", "dpo.val_micro_batch_size", "error"),
        ),
    ],
)
def test_each_finding_class_is_reported_at_its_key(
    tmp_path: Path, algorithm: Algorithm, changes: dict[str, object], expected: tuple[str, str, str]
) -> None:
    """One planted mistake in any section is one finding with its code and severity, at the key to change."""
    assert expected in findings(write(tmp_path, changed(algorithm, changes)))


def test_a_typo_of_a_required_key_is_both_a_typo_and_a_missing_key(tmp_path: Path) -> None:
    """``eanbled`` for ``enabled``: K1 at the typo (did you mean) and V8 at the key, which names the typo."""
    recipe = changed("grpo", {"checkpointing.enabled": ABSENT, "checkpointing.eanbled": True})
    with pytest.raises(RecipeError) as caught:
        load_recipe(write(tmp_path, recipe), run_preflight=False)
    by_path = {issue.path: issue for issue in caught.value.issues or ()}
    assert by_path["checkpointing.eanbled"].code == "K1"
    assert "did you mean 'enabled'" in by_path["checkpointing.eanbled"].reason
    assert by_path["checkpointing.enabled"].code == "V8"
    assert "found 'eanbled' (a misspelling?)" in by_path["checkpointing.enabled"].reason


def test_dynamic_batching_exclusions_and_save_period(tmp_path: Path) -> None:
    """Dynamic batching with sequence packing is P35; checkpointing enabled with save_period 0 is P36."""
    recipe = changed(
        "grpo",
        {
            "policy.dynamic_batching": {"enabled": True, "train_mb_tokens": 64, "sequence_length_round": 8},
            "policy.sequence_packing": {"enabled": True, "train_mb_tokens": 64, "algorithm": "mffd"},
            "checkpointing.enabled": True,
            "checkpointing.save_period": 0,
        },
    )
    assert {
        ("P35", "policy.dynamic_batching.enabled", "error"),
        ("P36", "checkpointing.save_period", "error"),
    } <= findings(write(tmp_path, recipe))


def test_strict_makes_unknown_keys_errors(tmp_path: Path) -> None:
    """``strict=True``: an unknown key of any section is an error."""
    path = write(tmp_path, changed("sft", {"logger.my_flag": 1}))
    assert ("K2", "logger.my_flag", "error") in findings(path, strict=True)


def test_an_unset_environment_variable_for_a_required_value_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``${oc.env:VAR}`` with VAR unset: NeMo RL dies resolving it, so it is V2 at its key (and not also V8)."""
    monkeypatch.delenv("RL_CONTRACTS_TEST_UNSET", raising=False)
    path = write(
        tmp_path, changed("sft", {"checkpointing.checkpoint_dir": "${oc.env:RL_CONTRACTS_TEST_UNSET}"})
    )
    got = findings(path)
    assert ("V2", "checkpointing.checkpoint_dir", "error") in got
    assert not any(code == "V8" and where == "checkpointing.checkpoint_dir" for code, where, _ in got)


def test_sft_and_dpo_recipes_are_validated_not_skipped(tmp_path: Path) -> None:
    """A recipe without a generation section is checked as its algorithm's whole recipe: valid, no V5."""
    loaded = load_recipe(write(tmp_path, minimal_whole_recipe("dpo")), run_preflight=False)
    assert (loaded.status, loaded.algorithm, loaded.generation) == ("valid", "dpo", None)
    assert all(issue.code != "V5" for issue in loaded.issues)


def test_the_algorithm_can_be_named(tmp_path: Path) -> None:
    """``algorithm=`` checks the recipe as that algorithm's (an SFT recipe read as DPO misses ``dpo`` and has an
    unknown ``sft``); a name that is no algorithm is a type error."""
    path = write(tmp_path, minimal_whole_recipe("sft"))
    assert {("V8", "dpo", "error"), ("K2", "sft", "warning")} <= findings(path, algorithm="dpo")
    with pytest.raises(ContractTypeError, match="algorithm"):
        load_recipe(path, algorithm="sftt")
    with pytest.raises(ContractTypeError, match="algorithm must be one of grpo"):
        choose_algorithm({}, "sftt")  # called directly, not through load_recipe


def test_a_recipe_without_an_algorithm_section_keeps_the_generation_check_only(tmp_path: Path) -> None:
    """A bare generation fragment names no algorithm: nothing beyond the generation section is required."""
    recipe = {"policy": {"generation": None}}
    loaded: LoadedRecipe = load_recipe(write(tmp_path, recipe), run_preflight=False)
    assert (loaded.status, loaded.algorithm) == ("skipped", None)


def test_a_distillation_teacher_scoring_at_another_temperature_is_p31(tmp_path: Path) -> None:
    """A distillation recipe (never in GRPO's preflight scope) whose teacher scores at another temperature than
    the student generates with is P31 at the teacher's key; equal settings pass."""
    recipe = changed(
        "distillation",
        {"policy.generation.temperature": 0.8, "teacher.generation.temperature": 1.0},
    )
    assert ("P31", "teacher.generation.temperature", "error") in findings(write(tmp_path, recipe))
    recipe["teacher"]["generation"]["temperature"] = 0.8
    assert not {f for f in findings(write(tmp_path, recipe)) if f[0] == "P31"}
