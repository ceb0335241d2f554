"""Tests of the editor JSON Schemas (``rl_contracts.config.section.json_schema``, SPEC §1.8 second release).

The sample recipes are checked twice: each file as written (what an editor's YAML language server sees, parsed by
OmegaConf's loader so that ``1e-6`` is a number, as in YAML 1.2) and the composed document of its ``defaults:``
chain, resolved (``load_recipe(path, run_preflight=False).document``), which is what the trainer reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
from omegaconf import OmegaConf

from rl_contracts.config import config_json_schema, load_recipe, register_resolvers
from rl_contracts.config.section.json_schema import (
    GENERATION_SCHEMA_ID,
    JSON_SCHEMA_DIALECT,
    RECIPE_SCHEMA_ID,
    generation_json_schema,
    recipe_json_schema,
)

DATA = Path(__file__).parent / "data"
# The project's own recipes that load (broken/ and cli/child_recipe.yaml are meant to fail): each file as written
# and its composition must match the schema, as every recipe of the external corpus must (``corpus_recipe``,
# conftest.py).
FIXTURES = sorted(
    path
    for path in [*DATA.glob("recipes/**/*.yaml"), *DATA.glob("cli/*.yaml")]
    if "broken" not in path.parts and path.name != "child_recipe.yaml"
)
VALIDATOR = jsonschema.Draft202012Validator(recipe_json_schema())


def errors_of(document: object) -> list[tuple[str, str]]:
    """Every schema error of ``document`` as (dotted path, message)."""
    return [
        (".".join(str(part) for part in error.absolute_path), error.message)
        for error in VALIDATOR.iter_errors(document)
    ]


def test_the_fixture_set_covers_every_kind_of_recipe() -> None:
    """The schema checks below read GRPO, router-replay, SFT, evaluation, other-backend and refit fixtures."""
    names = {path.relative_to(DATA).as_posix() for path in FIXTURES}
    assert {
        "recipes/grpo_base.yaml",
        "recipes/router_replay.yaml",
        "recipes/sft_llama.yaml",
        "recipes/megatron_backend.yaml",
        "recipes/refit/nixl.yaml",
        "cli/eval.yaml",
    } <= names


@pytest.mark.parametrize("schema", [recipe_json_schema(), generation_json_schema()])
def test_schemas_are_draft_2020_12_with_a_stable_id(schema: dict[str, Any]) -> None:
    """Both schemas declare draft 2020-12, are valid under its meta-schema and carry an id that never varies."""
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == JSON_SCHEMA_DIALECT == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] in {RECIPE_SCHEMA_ID, GENERATION_SCHEMA_ID}
    assert list(schema)[:2] == ["$schema", "$id"]


def test_ids_are_pinned() -> None:
    """The ids are the published ones (an editor configuration may refer to them)."""
    assert (RECIPE_SCHEMA_ID, GENERATION_SCHEMA_ID) == (
        "urn:rl-contracts:schema:recipe:1",
        "urn:rl-contracts:schema:vllm-generation:1",
    )


def test_generation_schema_is_vllm_config_schema_plus_the_header() -> None:
    """The generation schema is VllmConfig's schema unchanged, with ``$schema`` and ``$id`` added."""
    schema = generation_json_schema()
    assert {
        key: value for key, value in schema.items() if key not in ("$schema", "$id")
    } == config_json_schema()


def _file_errors(path: Path) -> list[tuple[str, str]]:
    """The schema errors of a recipe file as written (a partial override of its chain, with interpolations)."""
    return errors_of(OmegaConf.to_container(OmegaConf.load(path)))


def _composed_errors(path: Path, root: Path | None = None) -> list[tuple[str, str]]:
    """The schema errors of a recipe's composed and resolved document (``root``: where its parents may come
    from, for a corpus outside a git work tree)."""
    register_resolvers()
    document = load_recipe(path, run_preflight=False, root=root).document
    return errors_of(OmegaConf.to_container(OmegaConf.create(document), resolve=True))


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.relative_to(DATA).as_posix())
def test_every_fixture_file_as_written_validates(path: Path) -> None:
    """Each fixture recipe file, as an editor sees it, has no schema error."""
    assert _file_errors(path) == []


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.relative_to(DATA).as_posix())
def test_every_composed_fixture_validates(path: Path) -> None:
    """Each fixture's composed and resolved document has no schema error."""
    assert _composed_errors(path) == []


def test_every_sample_file_as_written_validates(corpus_recipe: Path) -> None:
    """Each recipe file of the external corpus, a partial override of its chain with interpolations, has no schema
    error."""
    assert _file_errors(corpus_recipe) == []


def test_every_composed_sample_validates(corpus_recipe: Path, recipe_corpus: Path) -> None:
    """Each corpus recipe's composed and resolved document has no schema error."""
    assert _composed_errors(corpus_recipe, root=recipe_corpus) == []


@pytest.mark.parametrize(
    ("document", "path"),
    [
        ({"cluster": {"num_nodes": "two"}}, "cluster.num_nodes"),
        ({"cluster": {"gpus_per_node": -1}}, "cluster.gpus_per_node"),
        ({"grpo": {"use_dynamic_sampling": "yes"}}, "grpo.use_dynamic_sampling"),
        ({"grpo": {"batch_multiplier": True}}, "grpo.batch_multiplier"),
        ({"loss_fn": {"reference_policy_kl_penalty": "0.01"}}, "loss_fn.reference_policy_kl_penalty"),
        ({"loss_fn": {"use_cispo": "yes"}}, "loss_fn.use_cispo"),
        ({"loss_fn": {"reference_policy_kl_type": "k4"}}, "loss_fn.reference_policy_kl_type"),
        (
            {"loss_fn": {"truncated_importance_sampling_type": "clip"}},
            "loss_fn.truncated_importance_sampling_type",
        ),
        (
            {"loss_fn": {"truncated_importance_sampling_ratio": "2"}},
            "loss_fn.truncated_importance_sampling_ratio",
        ),
        ({"policy": {"megatron_cfg": {"enabled": 1}}}, "policy.megatron_cfg.enabled"),
        ({"policy": {"train_global_batch_size": 1.5}}, "policy.train_global_batch_size"),
        ({"policy": {"generation": {"top_k": "abc"}}}, "policy.generation.top_k"),
        (
            {"policy": {"generation": {"backend": "vllm", "temperature": "hot"}}},
            "policy.generation.temperature",
        ),
        (
            {"policy": {"generation": {"vllm_cfg": {"gpu_memory_utilization": 1.5}}}},
            "policy.generation.vllm_cfg",
        ),
        ({"generation": {"stop_token_ids": [-1]}}, "generation.stop_token_ids"),
        ({"policy": {"generation": ["vllm"]}}, "policy.generation"),
        ({"defaults": 3}, "defaults"),
        (
            {"env": {"reward_model": {"resources": {"num_nodes": "x"}}}},
            "env.reward_model.resources.num_nodes",
        ),
        ({"data_plane": {"enabled": "no"}}, "data_plane.enabled"),
    ],
)
def test_wrong_values_are_reported_at_their_key(document: dict[str, Any], path: str) -> None:
    """A value of the wrong type or range in a typed section is one error at (or just above) its key."""
    found = errors_of(document)
    assert [where for where, _ in found] == [path]


@pytest.mark.parametrize(
    "document",
    [
        {},
        {"policy": {"generation": None}},
        {"policy": {"generation": "${other.generation}"}},
        {"cluster": {"num_nodes": "${oc.env:NUM_NODES}", "gpus_per_node": "???"}},
        {"policy": {"generation": {"max_new_tokens": "${policy.max_total_sequence_length}"}}},
        {"policy": {"generation": {"stop_token_ids": ["${data.eos}"]}}},
        {"policy": {"generation": {"backend": "megatron", "top_k": "abc"}}},
        {"sft": {"anything": [1, "x"]}, "logger": {"wandb": None}},
        {"policy": {"generation": {"vllm_cfg": {"gpu_memory_utilisation": 0.3}}}},
        {"defaults": ["a.yaml", "b.yaml"]},
        {
            "loss_fn": {
                "truncated_importance_sampling_type": None,
                "ratio_clip_c": None,
                "token_level_loss": None,
            }
        },
        {"loss_fn": {"truncated_importance_sampling_type": "icepop", "reference_policy_kl_type": "${kl}"}},
    ],
)
def test_partial_files_interpolations_and_open_sections_pass(document: dict[str, Any]) -> None:
    """No key is required, interpolations and ``???`` stand for any typed value, other backends and keys are open
    (unknown keys are validate's business, not the editor schema's)."""
    assert errors_of(document) == []
