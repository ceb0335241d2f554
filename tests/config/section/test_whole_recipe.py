"""The whole-recipe models: algorithm detection, strict typing of every section, variants, open mappings, the key
paths read from the models, and the JSON Schema per algorithm."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from omegaconf import OmegaConf
from pydantic import ValidationError

from rl_contracts.cli.validate import ALGORITHM_CHOICES
from rl_contracts.config.section.json_schema import JSON_SCHEMA_DIALECT, algorithm_json_schema
from rl_contracts.config.section.key_paths import declared_keys
from rl_contracts.config.section.recipe import ALGORITHMS, RECIPE_MODELS, Algorithm, detect_algorithm
from rl_contracts.config.section.variants import strip_tags
from rl_contracts.testing.strategies import minimal_whole_recipe


def errors(algorithm: Algorithm, recipe: dict[str, Any]) -> list[tuple[str, str]]:
    """Every line error of ``recipe`` as (dotted path without variant tags, pydantic type)."""
    try:
        RECIPE_MODELS[algorithm].model_validate(recipe)
    except ValidationError as exc:
        return [(".".join(map(str, strip_tags(tuple(e["loc"])))), e["type"]) for e in exc.errors()]
    return []


@pytest.mark.parametrize(
    ("sections", "algorithm"),
    [
        ({"eval", "generation", "tokenizer"}, "eval"),
        ({"policy", "teachers", "distillation"}, "xtoken-distillation"),
        ({"policy", "teacher", "distillation"}, "distillation"),
        ({"policy", "value", "ppo"}, "ppo"),
        ({"policy", "grpo", "async_rl", "data_plane"}, "grpo-sc"),
        ({"policy", "grpo", "data_plane"}, "grpo"),
        ({"policy", "sft"}, "sft"),
        ({"policy", "dpo"}, "dpo"),
        ({"policy", "rm"}, "rm"),
        ({"policy", "distillation"}, "distillation"),
        ({"policy"}, None),
        ({"policy", "grpo_typo"}, None),
    ],
)
def test_the_algorithm_comes_from_the_top_level_sections(sections: set[str], algorithm: str | None) -> None:
    """Each entry point's own sections pick it, most specific first; a recipe without one has no algorithm."""
    assert detect_algorithm({section: {} for section in sections}) == algorithm


def test_a_null_section_does_not_pick_an_algorithm() -> None:
    """``grpo: null`` is no GRPO section (an override that removes it)."""
    assert detect_algorithm({"grpo": None, "sft": {}}) == "sft"


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_the_minimal_recipe_of_every_algorithm_validates(algorithm: Algorithm) -> None:
    """The required keys alone make a valid recipe of every algorithm."""
    assert errors(algorithm, minimal_whole_recipe(algorithm)) == []


@pytest.mark.parametrize(
    ("path", "value", "error"),
    [
        (("grpo", "num_prompts_per_step"), "many", "value_error"),
        (("grpo", "num_prompts_per_step"), "8", "value_error"),
        (("grpo", "normalize_rewards"), [True], "value_error"),
        (("grpo", "normalize_rewards"), 1, "value_error"),
        (("grpo", "max_num_steps"), True, "value_error"),
        (("grpo", "num_generations_per_prompt"), 0, "greater_than_equal"),
        (("policy", "train_micro_batch_size"), -2, "greater_than_equal"),
        (("loss_fn", "reference_policy_kl_type"), "k4", "literal_error"),
        (("cluster", "master_port_range_low"), None, "null_not_allowed"),
        (("checkpointing", "enabled"), "true", "value_error"),
        (("logger", "gpu_monitoring", "flush_interval"), 0, "greater_than"),
    ],
)
def test_values_are_strictly_typed(path: tuple[str, ...], value: object, error: str) -> None:
    """A value of the wrong type (no coercion: "8" is no int, 1 no bool), out of range or a null where NeMo RL
    declares the key optional but not nullable is an error at its key."""
    recipe = minimal_whole_recipe("grpo")
    holder = recipe
    for key in path[:-1]:
        holder = holder.setdefault(key, {})
    holder[path[-1]] = value
    assert (".".join(path), error) in errors("grpo", recipe)


def test_a_missing_required_key_is_reported_at_its_path() -> None:
    """``policy.tokenizer`` and ``checkpointing.enabled`` are required: their absence is a ``missing`` error."""
    recipe = minimal_whole_recipe("sft")
    del recipe["policy"]["tokenizer"]
    del recipe["checkpointing"]["enabled"]
    assert {("policy.tokenizer", "missing"), ("checkpointing.enabled", "missing")} <= set(
        errors("sft", recipe)
    )


def test_enabled_picks_the_variant_of_a_section() -> None:
    """``enabled: false`` needs nothing else (its other keys are not read); ``enabled: true`` needs the enabled
    variant's required keys; a string ``"true"`` is judged by the enabled variant, at ``enabled``."""
    recipe = minimal_whole_recipe("grpo")
    recipe["policy"]["megatron_cfg"] = {"enabled": False, "anything": 1}
    assert errors("grpo", recipe) == []
    recipe["policy"]["megatron_cfg"] = {"enabled": True}
    assert ("policy.megatron_cfg.tensor_model_parallel_size", "missing") in errors("grpo", recipe)
    recipe["policy"]["megatron_cfg"] = {"enabled": "true"}
    assert ("policy.megatron_cfg.enabled", "value_error") in errors("grpo", recipe)


def test_datasets_are_open_and_picked_by_their_keys() -> None:
    """A dataset entry keeps keys of its own; a list of datasets is typed item by item; a preference dataset is
    recognised by its keys."""
    recipe = minimal_whole_recipe("dpo")
    recipe["data"]["train"] = {"dataset_name": "helpsteer", "prompt_key": "p", "chosen_key": "c", "repeat": 2}
    recipe["data"]["validation"] = [{"dataset_name": "a"}, {"dataset_name": 3}]
    assert errors("dpo", recipe) == [("data.validation.1.dataset_name", "value_error")]


def test_the_generation_section_is_left_to_its_own_check() -> None:
    """``policy.generation`` is not typed by the recipe model (``VllmConfig`` validates it, once)."""
    recipe = minimal_whole_recipe("grpo")
    recipe["policy"]["generation"] = {"backend": "vllm", "max_new_tokens": "many"}
    assert errors("grpo", recipe) == []


def test_declared_keys_are_read_from_the_models() -> None:
    """Every algorithm declares its sections' keys once each; the required ones include the sections and the keys
    NeMo RL cannot start without."""
    for algorithm in ALGORITHMS:
        keys = declared_keys(algorithm)
        paths = [key.path for key in keys]
        assert len(paths) == len(set(paths))
    grpo = {key.path: key.required for key in declared_keys("grpo")}
    assert grpo[("policy", "tokenizer", "name")]
    assert grpo[("checkpointing", "enabled")]
    assert not grpo[("grpo", "num_prompts_per_step")]
    assert ("policy", "generation", "vllm_cfg", "gpu_memory_utilization") in grpo
    assert ("teacher", "megatron_cfg", "optimizer", "lr") in {
        key.path for key in declared_keys("distillation")
    }


def test_the_cli_lists_every_algorithm() -> None:
    """``--algorithm``'s choices (written out so the parser imports no model) are :data:`ALGORITHMS`."""
    assert ALGORITHM_CHOICES == ALGORITHMS


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_every_algorithm_schema_is_draft_2020_12_with_its_id(algorithm: Algorithm) -> None:
    """Each algorithm's schema is valid under the 2020-12 meta-schema, with ``$schema`` and a stable ``$id`` first,
    and accepts the minimal recipe."""
    schema = algorithm_json_schema(algorithm)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert list(schema)[:2] == ["$schema", "$id"]
    assert schema["$schema"] == JSON_SCHEMA_DIALECT
    assert schema["$id"] == f"urn:rl-contracts:schema:recipe:{algorithm}:1"
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(minimal_whole_recipe(algorithm))) == []


def _every_error(errors: Iterable[jsonschema.ValidationError]) -> Iterator[jsonschema.ValidationError]:
    """The errors and, recursively, the errors of their ``anyOf`` branches."""
    for error in errors:
        yield error
        yield from _every_error(error.context or ())


@pytest.mark.parametrize(
    ("document", "path"),
    [
        ({"grpo": {"num_prompts_per_step": "many"}}, ["grpo", "num_prompts_per_step"]),
        ({"checkpointing": {"enabled": [True]}}, ["checkpointing", "enabled"]),
        ({"cluster": {"num_nodes": 0}}, ["cluster", "num_nodes"]),
        ({"logger": {"wandb": {"project": 3}}}, ["logger", "wandb", "project"]),
    ],
)
def test_the_schema_reports_a_wrong_value_at_its_key(document: dict[str, Any], path: list[str]) -> None:
    """A wrong type or a size of 0 in any section fails the GRPO schema, at or below its key; an interpolation is
    accepted there."""
    validator = jsonschema.Draft202012Validator(algorithm_json_schema("grpo"))
    assert path in [list(error.absolute_path) for error in _every_error(validator.iter_errors(document))]
    holder: Any = document
    for key in path[:-1]:
        holder = holder[key]
    holder[path[-1]] = "${oc.env:SOMEWHERE}"
    assert list(validator.iter_errors(document)) == []


def test_every_sample_file_as_written_validates_against_its_algorithm(corpus_recipe: Path) -> None:
    """Each corpus file, as an editor sees it, fits the schema of the algorithm its sections name (files without
    an algorithm section fit every algorithm's)."""
    document = OmegaConf.to_container(OmegaConf.load(corpus_recipe))
    assert isinstance(document, dict)
    algorithm = detect_algorithm(document) or "grpo"
    validator = jsonschema.Draft202012Validator(algorithm_json_schema(algorithm))
    assert [list(error.absolute_path) for error in validator.iter_errors(document)] == []
