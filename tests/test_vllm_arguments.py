"""``engine_kwargs`` and ``sampling_kwargs``: the arguments of ``vllm.LLM`` and ``vllm.SamplingParams`` from a recipe.

Recipes here are small YAML files loaded with ``load_recipe`` (preflight off: only the generation section matters).
``tests/vllm/test_vllm_arguments.py`` starts a real engine with these arguments and samples with them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from rl_contracts.config import GenerationConfig, LoadedRecipe, VllmConfig, load_recipe
from rl_contracts.errors import ConfigContractError, ContractTypeError, SamplingParamsError
from rl_contracts.testing import assert_contract_error
from rl_contracts.vllm_arguments import (
    DERIVED_ENGINE_ARGUMENTS,
    ENGINE_ARGUMENTS_SET_BY_TRAINER,
    FP8_BLOCK_QUANTIZATION,
    MXFP8_QUANTIZATION,
    SamplingSettings,
    check_scoring_matches_rollout,
    derived_executor_backend,
    engine_kwargs,
    resolve_model_name,
    sampling_kwargs,
    sampling_settings,
)

BUNDLED = Path(__file__).parents[1] / "src" / "rl_contracts" / "recipes" / "grpo_qwen3_moe.yaml"

RECIPE = """\
policy:
  model_name: /models/tiny
  generation:
    backend: vllm
    max_new_tokens: 16
    temperature: 0.7
    top_p: 0.9
    top_k: null
    val_temperature: ${.temperature}
    val_top_p: ${.top_p}
    val_top_k: ${.top_k}
    stop_token_ids: [2, 7]
    stop_strings: ["</answer>"]
    vllm_cfg:
      tensor_parallel_size: 1
      pipeline_parallel_size: 1
      expert_parallel_size: 1
      gpu_memory_utilization: 0.5
      max_model_len: 256
      async_engine: false
      precision: float32
      enforce_eager: true
"""


def recipe(tmp_path: Path, extra: str = "", *, base: str = RECIPE) -> LoadedRecipe:
    """``base`` followed by the YAML lines ``extra`` (indented as they belong), loaded from a file."""
    path = tmp_path / "recipe.yaml"
    path.write_text(base + extra)
    return load_recipe(path, run_preflight=False)


def section(**changes: Any) -> VllmConfig:
    """The generation section of :data:`RECIPE` as a ``VllmConfig``, with ``vllm_cfg`` and top keys changed."""
    cfg = {
        "tensor_parallel_size": 1,
        "pipeline_parallel_size": 1,
        "expert_parallel_size": 1,
        "gpu_memory_utilization": 0.5,
        "max_model_len": 256,
        "async_engine": False,
        "precision": "float32",
        "enforce_eager": True,
    }
    cfg.update(changes.pop("vllm_cfg", {}))
    data: dict[str, Any] = {
        "backend": "vllm",
        "max_new_tokens": 16,
        "temperature": 0.7,
        "top_p": 0.9,
        "top_k": None,
        "val_temperature": 0.7,
        "val_top_p": 0.9,
        "val_top_k": None,
        "stop_token_ids": None,
        "stop_strings": None,
        "model_name": "/models/tiny",
        "vllm_cfg": cfg,
    }
    data.update(changes)
    return VllmConfig.model_validate(data)


def test_engine_kwargs_of_a_recipe_in_the_reference_order(tmp_path: Path) -> None:
    """Every argument the reference worker passes, in its order, with the model read from ``policy.model_name``."""
    kwargs = engine_kwargs(recipe(tmp_path), seed=3)
    assert kwargs == {
        "model": "/models/tiny",
        "served_model_name": "/models/tiny",
        "load_format": "auto",
        "skip_tokenizer_init": False,
        "tensor_parallel_size": 1,
        "pipeline_parallel_size": 1,
        "enable_expert_parallel": False,
        "gpu_memory_utilization": 0.5,
        "enable_prefix_caching": True,
        "dtype": "float32",
        "seed": 3,
        "enforce_eager": True,
        "max_model_len": 256,
        "trust_remote_code": True,
        "enable_sleep_mode": False,
        "disable_log_stats": False,
    }
    assert list(kwargs)[: len(ENGINE_ARGUMENTS_SET_BY_TRAINER) - 1] == [
        name for name in ENGINE_ARGUMENTS_SET_BY_TRAINER if name != "worker_extension_cls"
    ]


def test_bundled_recipe_derives_ray_and_passes_vllm_kwargs_through() -> None:
    """TP 4 gives the Ray executor, EP 4 expert parallelism, and the resolved ``vllm_kwargs`` come last."""
    loaded = load_recipe(BUNDLED)
    kwargs: dict[str, Any] = dict(engine_kwargs(loaded, seed=0))
    generation = loaded.generation
    assert generation is not None
    assert kwargs["model"] == "Qwen/Qwen3-30B-A3B"
    assert kwargs["dtype"] == generation.vllm_cfg.precision == "bfloat16"
    assert (kwargs["tensor_parallel_size"], kwargs["enable_expert_parallel"]) == (4, True)
    assert kwargs["distributed_executor_backend"] == "ray"
    assert kwargs["max_model_len"] == 8192
    assert list(kwargs)[-2:] == ["max_num_seqs", "enable_chunked_prefill"]
    assert kwargs["max_num_seqs"] == 64 * 4  # ${mul:${policy.generation_batch_size},4}, resolved


@pytest.mark.parametrize(
    ("cfg", "backend"),
    [
        ({}, None),
        ({"tensor_parallel_size": 2}, "ray"),
        ({"pipeline_parallel_size": 2, "async_engine": True}, "ray"),
        ({"expert_parallel_size": 2}, "uni"),
        ({"tensor_parallel_size": 2, "expert_parallel_size": 4}, "ray"),
        ({"tensor_parallel_size": 2, "expert_parallel_size": 2}, "ray"),
    ],
)
def test_executor_backend_is_derived_as_p16_states(cfg: dict[str, Any], backend: str | None) -> None:
    """``"ray"`` when TP × PP > 1, else ``"uni"`` when EP > TP, else left to vLLM (the key is absent)."""
    generation = section(vllm_cfg=cfg)
    assert derived_executor_backend(generation) == backend
    kwargs = engine_kwargs(generation, seed=0)
    assert kwargs.get("distributed_executor_backend") == backend
    assert kwargs["enable_expert_parallel"] == (generation.vllm_cfg.expert_parallel_size > 1)


def test_optional_engine_arguments_come_from_vllm_cfg(tmp_path: Path) -> None:
    """``logprobs_mode``, a non-auto ``kv_cache_dtype``, ``load_format``, ``skip_tokenizer_init`` and
    ``enable_prefix_caching`` are read from ``vllm_cfg`` when set."""
    keys = ["logprobs_mode: raw_logprobs", "kv_cache_dtype: fp8", "load_format: dummy"]
    keys += ["skip_tokenizer_init: true", "enable_prefix_caching: false"]
    extra = "".join(f"      {line}\n" for line in keys)  # under policy.generation.vllm_cfg
    kwargs: dict[str, Any] = dict(engine_kwargs(recipe(tmp_path, extra), seed=0))
    assert kwargs["logprobs_mode"] == "raw_logprobs"
    assert kwargs["kv_cache_dtype"] == "fp8"
    assert (kwargs["load_format"], kwargs["skip_tokenizer_init"], kwargs["enable_prefix_caching"]) == (
        "dummy",
        True,
        False,
    )
    assert "kv_cache_dtype" not in engine_kwargs(section(vllm_cfg={"kv_cache_dtype": "auto"}), seed=0)


def test_trainer_specific_keys_are_options() -> None:
    """Worker extension class, sleep mode, load format and the served name are the caller's choices."""
    kwargs = engine_kwargs(
        section(),
        seed=0,
        model="/other",
        served_model_name="tiny",
        load_format="dummy",
        skip_tokenizer_init=True,
        enable_prefix_caching=False,
        enable_sleep_mode=True,
        worker_extension_cls="trainer.workers.Extension",
    )
    assert (kwargs["model"], kwargs["served_model_name"]) == ("/other", "tiny")
    assert (kwargs["load_format"], kwargs["skip_tokenizer_init"], kwargs["enable_prefix_caching"]) == (
        "dummy",
        True,
        False,
    )
    assert (kwargs["enable_sleep_mode"], kwargs.get("worker_extension_cls")) == (
        True,
        "trainer.workers.Extension",
    )
    assert "worker_extension_cls" not in engine_kwargs(section(), seed=0)


def test_overrides_replace_anything_and_come_last() -> None:
    """``overrides`` is the caller's explicit word: it may replace a derived or recipe value, or add keys."""
    kwargs: dict[str, Any] = dict(
        engine_kwargs(
            section(vllm_kwargs={"max_num_seqs": 8}),
            seed=0,
            overrides={"distributed_executor_backend": "uni", "max_num_seqs": 4, "dtype": "bfloat16"},
        )
    )
    assert (kwargs["distributed_executor_backend"], kwargs["max_num_seqs"], kwargs["dtype"]) == (
        "uni",
        4,
        "bfloat16",
    )


@pytest.mark.parametrize("key", ENGINE_ARGUMENTS_SET_BY_TRAINER)
def test_vllm_kwargs_colliding_with_a_trainer_argument_is_rejected(key: str) -> None:
    """Each key the trainer sets would be a duplicate keyword for ``LLM``: a ``ConfigContractError`` naming it."""
    with pytest.raises(ConfigContractError, match="collides with the engine argument") as info:
        engine_kwargs(section(vllm_kwargs={key: 1}), seed=0)
    assert info.value.path == f"vllm_kwargs.{key}"
    assert_contract_error(info.value)


@pytest.mark.parametrize("key", DERIVED_ENGINE_ARGUMENTS)
def test_vllm_kwargs_the_trainer_would_overwrite_is_rejected(key: str) -> None:
    """``distributed_executor_backend`` and ``hf_overrides`` would be silently overwritten: refused, not dropped."""
    with pytest.raises(ConfigContractError, match="silently overwritten") as info:
        engine_kwargs(section(vllm_kwargs={key: "mp"}), seed=0)
    assert info.value.path == f"vllm_kwargs.{key}"


def test_kv_cache_dtype_in_both_places_is_rejected() -> None:
    """``kv_cache_dtype`` in ``vllm_kwargs`` beside a non-auto ``vllm_cfg.kv_cache_dtype`` is ambiguous."""
    with pytest.raises(ConfigContractError, match="both set"):
        engine_kwargs(
            section(vllm_cfg={"kv_cache_dtype": "fp8"}, vllm_kwargs={"kv_cache_dtype": "auto"}), seed=0
        )
    passed = engine_kwargs(section(vllm_kwargs={"kv_cache_dtype": "fp8"}), seed=0)
    assert passed.get("kv_cache_dtype") == "fp8"


def test_logprobs_mode_in_both_places_is_rejected() -> None:
    """``logprobs_mode`` in ``vllm_kwargs`` beside ``vllm_cfg.logprobs_mode`` is an error, not a silent winner.

    The trainer applies ``vllm_cfg.logprobs_mode`` after ``**vllm_kwargs``, and it is the setting logprob agreement
    depends on; before the fix ``vllm_kwargs`` silently won.
    """
    with pytest.raises(ConfigContractError, match="both set") as info:
        engine_kwargs(
            section(
                vllm_cfg={"logprobs_mode": "processed_logprobs"},
                vllm_kwargs={"logprobs_mode": "raw_logprobs"},
            ),
            seed=0,
        )
    assert info.value.path == "vllm_kwargs.logprobs_mode"
    assert_contract_error(info.value)
    passed = engine_kwargs(section(vllm_kwargs={"logprobs_mode": "raw_logprobs"}), seed=0)
    assert passed.get("logprobs_mode") == "raw_logprobs"


def test_fp8_precision_builds_quantization_kwargs_and_runs_bfloat16() -> None:
    """``precision: fp8`` is FP8 quantization of a bfloat16 engine, as the trainer's ``init_fp8`` sets it up.

    vLLM rejects ``dtype="fp8"``; before the fix the precision was passed through as the dtype.
    """
    kwargs = engine_kwargs(section(vllm_cfg={"precision": "fp8", "kv_cache_dtype": "fp8"}), seed=0)
    assert kwargs["dtype"] == "bfloat16"
    assert kwargs.get("quantization") == "fp8"
    assert kwargs.get("kv_cache_dtype") == "fp8"
    assert kwargs.get("hf_overrides") == {"quantization_config": dict(FP8_BLOCK_QUANTIZATION)}
    auto = engine_kwargs(
        section(vllm_cfg={"precision": "fp8", "kv_cache_dtype": "auto", "is_mx": True}), seed=0
    )
    assert auto.get("kv_cache_dtype") == "auto"
    assert auto.get("hf_overrides") == {"quantization_config": dict(MXFP8_QUANTIZATION)}
    assert "quantization" not in engine_kwargs(section(), seed=0)


def test_fp8_recipe_overrides_win_over_the_quantization_config(tmp_path: Path) -> None:
    """``policy.hf_config_overrides`` keys win over the FP8 setup's, which they sit beside."""
    text = RECIPE.replace("precision: float32", "precision: fp8\n      kv_cache_dtype: auto")
    loaded = recipe(tmp_path, "  hf_config_overrides:\n    rope_theta: 1000\n", base=text)
    overrides = engine_kwargs(loaded, seed=0).get("hf_overrides")
    assert overrides == {"quantization_config": dict(FP8_BLOCK_QUANTIZATION), "rope_theta": 1000}


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"vllm_kwargs": {"quantization": "fp8"}}, "vllm_kwargs.quantization"),
        ({"vllm_kwargs": {"kv_cache_dtype": "fp8"}}, "vllm_kwargs.kv_cache_dtype"),
        ({"vllm_cfg": {"num_last_layers_in_bf16": 2}}, "vllm_cfg.num_last_layers_in_bf16"),
    ],
)
def test_fp8_settings_the_trainer_would_overwrite_or_derive_from_the_model(
    change: dict[str, Any], path: str
) -> None:
    """With ``precision: fp8``, FP8 keys in ``vllm_kwargs`` are overwritten and bf16 layers need the model."""
    cfg = {"precision": "fp8", "kv_cache_dtype": "auto", **change.pop("vllm_cfg", {})}
    with pytest.raises(ConfigContractError) as info:
        engine_kwargs(section(vllm_cfg=cfg, **change), seed=0)
    assert info.value.path == path
    assert_contract_error(info.value)
    if path.startswith("vllm_cfg"):
        chosen = {"quantization_config": {"ignored_layers": ["model.layers.1"]}}
        kwargs = engine_kwargs(section(vllm_cfg=cfg), seed=0, overrides={"hf_overrides": chosen})
        assert kwargs.get("hf_overrides") == chosen


def test_hf_config_overrides_become_hf_overrides(tmp_path: Path) -> None:
    """``policy.hf_config_overrides`` is what the trainer passes as ``hf_overrides``; it must be a mapping."""
    base = RECIPE.replace("policy:\n", "policy:\n  hf_config_overrides: {rope_theta: 10000}\n")
    kwargs = engine_kwargs(recipe(tmp_path, base=base), seed=0)
    assert kwargs.get("hf_overrides") == {"rope_theta": 10000}
    bad = RECIPE.replace("policy:\n", "policy:\n  hf_config_overrides: [1]\n")
    with pytest.raises(ConfigContractError, match="must be a mapping") as info:
        engine_kwargs(recipe(tmp_path, base=bad), seed=0)
    assert info.value.path == "policy.hf_config_overrides"


def test_model_name_sources_in_order(tmp_path: Path) -> None:
    """``model=`` first, then the section's ``model_name``, then ``policy.model_name`` (interpolations resolved)."""
    interpolated = RECIPE.replace(
        "  model_name: /models/tiny\n", "  root: /models\n  model_name: ${.root}/tiny\n"
    )
    loaded = recipe(tmp_path, base=interpolated)
    assert resolve_model_name(loaded) == "/models/tiny"
    assert resolve_model_name(loaded, model="/elsewhere") == "/elsewhere"
    filled = recipe(
        tmp_path, base=RECIPE.replace("    backend: vllm\n", "    backend: vllm\n    model_name: /runtime\n")
    )
    assert resolve_model_name(filled) == "/runtime"
    assert resolve_model_name(section()) == "/models/tiny"


@pytest.mark.parametrize(
    ("replacement", "match"),
    [
        ("", "policy.model_name is None"),
        ("  model_name: '???'\n", "cannot be resolved"),
        ("  model_name: 7\n", "policy.model_name is 7"),
        ("  model_name: ''\n", "policy.model_name is ''"),
    ],
)
def test_missing_or_bad_model_name_is_named(tmp_path: Path, replacement: str, match: str) -> None:
    """No usable model name anywhere: a ``ConfigContractError`` naming ``policy.model_name`` and the fix."""
    loaded = recipe(tmp_path, base=RECIPE.replace("  model_name: /models/tiny\n", replacement))
    with pytest.raises(ConfigContractError, match=match) as info:
        engine_kwargs(loaded, seed=0)
    assert info.value.path == "policy.model_name"
    assert_contract_error(info.value)


def test_a_bare_section_without_model_name_needs_model() -> None:
    """A ``VllmConfig`` has no document to read ``policy.model_name`` from: ``model=`` or ``model_name`` is needed."""
    with pytest.raises(ConfigContractError, match="pass model=") as info:
        engine_kwargs(section(model_name=None), seed=0)
    assert info.value.path == "model_name"
    assert engine_kwargs(section(model_name=None), seed=0, model="/m")["model"] == "/m"


@pytest.mark.parametrize("key", ["precision", "enforce_eager"])
def test_unset_engine_keys_the_trainer_reads_are_required(key: str) -> None:
    """``vllm_cfg.precision`` and ``vllm_cfg.enforce_eager`` are read by the trainer (P1): unset is an error."""
    with pytest.raises(ConfigContractError, match=f"vllm_cfg.{key} is required") as info:
        engine_kwargs(section(vllm_cfg={key: None}), seed=0)
    assert info.value.path == f"vllm_cfg.{key}"


BAD_ENGINE_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("recipe", {"recipe": {"backend": "vllm"}}, "recipe must be a LoadedRecipe"),
    ("seed", {"seed": True}, "seed must be an int"),
    ("model", {"model": 3}, "model must be"),
    ("empty model", {"model": ""}, "empty string"),
    ("format", {"load_format": 1}, "load_format must be"),
    ("skip", {"skip_tokenizer_init": "yes"}, "skip_tokenizer_init must be"),
    ("caching", {"enable_prefix_caching": 1}, "enable_prefix_caching must be"),
    ("sleep", {"enable_sleep_mode": None}, "enable_sleep_mode must be"),
    ("extension", {"worker_extension_cls": object}, "worker_extension_cls must be"),
    ("overrides", {"overrides": [("a", 1)]}, "overrides must be"),
    ("override keys", {"overrides": {1: 2}}, "overrides must be"),
]


@pytest.mark.parametrize(
    ("case", "change", "match"), BAD_ENGINE_CALLS, ids=[c for c, _, _ in BAD_ENGINE_CALLS]
)
def test_bad_engine_arguments(case: str, change: dict[str, Any], match: str) -> None:
    """Each malformed argument is a contract error naming it."""
    del case
    arguments: dict[str, Any] = {"recipe": section(), "seed": 0, **change}
    with pytest.raises((ContractTypeError, ConfigContractError), match=match) as info:
        engine_kwargs(arguments.pop("recipe"), **arguments)
    assert_contract_error(info.value)


def test_skipped_recipe_has_no_section_to_start(tmp_path: Path) -> None:
    """A recipe whose section was skipped (a non-vLLM backend) cannot start vLLM."""
    other = RECIPE.replace("backend: vllm", "backend: megatron")
    loaded = recipe(tmp_path, base=other)
    assert loaded.status == "skipped"
    with pytest.raises(ConfigContractError, match="was not validated") as info:
        engine_kwargs(loaded, seed=0)
    assert info.value.path == "policy.generation"


def test_sampling_kwargs_of_a_recipe(tmp_path: Path) -> None:
    """Temperature, top-p, ``top_k: null`` as -1, max tokens, sampled-token log-probs and the stop settings."""
    assert sampling_kwargs(recipe(tmp_path)) == {
        "temperature": 0.7,
        "top_p": 0.9,
        "top_k": -1,
        "max_tokens": 16,
        "logprobs": 0,
        "stop_token_ids": [2, 7],
        "stop": ["</answer>"],
        "include_stop_str_in_output": True,
        "bad_words": None,
        "ignore_eos": False,
    }


def test_greedy_sampling_and_call_options() -> None:
    """Greedy is temperature 0 and top-k 1; ``max_new_tokens`` and ``stop_strings`` add to the recipe's."""
    generation = section(top_k=20, stop_strings=["a", "b"], bad_words=["x"])
    kwargs = sampling_kwargs(
        generation, greedy=True, max_new_tokens=3, stop_strings=("b", "c", "c"), ignore_eos=True
    )
    assert (kwargs["temperature"], kwargs["top_k"], kwargs["top_p"]) == (0.0, 1, 0.9)
    assert (kwargs["max_tokens"], kwargs["stop"], kwargs["bad_words"], kwargs["ignore_eos"]) == (
        3,
        ["a", "b", "c"],
        ["x"],
        True,
    )
    assert sampling_kwargs(generation)["top_k"] == 20
    assert sampling_kwargs(section())["stop"] is None


def test_sampling_kwargs_accept_a_backend_agnostic_section() -> None:
    """Any ``GenerationConfig`` samples; the result is new lists, not the section's own."""
    generation = GenerationConfig.model_validate(
        {
            "backend": "megatron",
            "max_new_tokens": 4,
            "temperature": 1.0,
            "top_p": 1.0,
            "top_k": -1,
            "val_temperature": 1.0,
            "val_top_p": 1.0,
            "val_top_k": None,
            "stop_token_ids": [5],
            "stop_strings": None,
        }
    )
    kwargs = sampling_kwargs(generation)
    assert (kwargs["top_k"], kwargs["stop_token_ids"]) == (-1, [5])
    assert kwargs["stop_token_ids"] is not generation.stop_token_ids


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        ({"generation": object()}, ContractTypeError, "generation must be"),
        ({"greedy": 1}, ContractTypeError, "greedy must be"),
        ({"ignore_eos": None}, ContractTypeError, "ignore_eos must be"),
        ({"max_new_tokens": 2.0}, ContractTypeError, "max_new_tokens must be"),
        ({"max_new_tokens": 0}, ConfigContractError, "at least 1"),
        ({"stop_strings": "stop"}, ContractTypeError, "stop_strings must be"),
        ({"stop_strings": ["a", 1]}, ContractTypeError, "stop_strings must be"),
        ({"stop_strings": {"a": 1}}, ContractTypeError, "stop_strings must be"),
    ],
)
def test_bad_sampling_arguments(change: dict[str, Any], error: type[Exception], match: str) -> None:
    """Each malformed argument is a contract error naming it."""
    arguments: dict[str, Any] = {"generation": section(), **change}
    with pytest.raises(error, match=match) as info:
        sampling_kwargs(arguments.pop("generation"), **arguments)
    assert_contract_error(info.value)


# --------------------------------------------------------------------------------------------------------------
# sampling_settings and check_scoring_matches_rollout (issue 30: slime #2085, TRL #4159's cousin)


def test_sources_read_alike() -> None:
    """A SamplingParams-like object, a mapping and defaults give one record; top-k off is -1 however spelled."""
    params = SimpleNamespace(temperature=0.8, top_p=0.95, top_k=0, min_p=0.05)
    settings = sampling_settings(params, logprobs_mode="processed_logprobs")
    assert settings == SamplingSettings(0.8, 0.95, -1, 0.05, "processed_logprobs")
    assert sampling_settings(
        {"temperature": 0.8, "top_p": 0.95, "top_k": None, "min_p": 0.05}
    ) == SamplingSettings(0.8, 0.95, -1, 0.05, None)
    assert sampling_settings({}) == SamplingSettings()
    assert not SamplingSettings().truncates
    assert SamplingSettings().truncation == ""
    assert settings.truncates
    assert settings.truncation == "top_p=0.95, min_p=0.05"
    assert sampling_settings(settings) is settings


def test_a_recipe_generation_section_carries_its_logprobs_mode() -> None:
    """A loaded recipe (through its validated generation section) and sampling_kwargs of it agree."""
    recipe = load_recipe(BUNDLED, run_preflight=False)
    assert recipe.generation is not None
    from_recipe = sampling_settings(recipe)  # type: ignore[arg-type]
    assert from_recipe == sampling_settings(recipe.generation)
    rollout = dict(sampling_kwargs(recipe))  # what SamplingParams gets: no logprobs_mode (an engine argument)
    assert check_scoring_matches_rollout(rollout, recipe) == replace(from_recipe, logprobs_mode=None)  # type: ignore[arg-type]
    section: Mapping[str, Any] = {"temperature": 1.0, "vllm_cfg": {"logprobs_mode": "raw_logprobs"}}
    assert sampling_settings(section).logprobs_mode == "raw_logprobs"


@pytest.mark.parametrize(
    ("source", "kwargs", "error", "fragment"),
    [
        ({"temperature": -0.1}, {}, SamplingParamsError, "temperature=-0.1 must be finite"),
        ({"temperature": float("inf")}, {}, SamplingParamsError, "temperature"),
        ({"top_p": 0.0}, {}, SamplingParamsError, "top_p=0.0 must lie in (0, 1]"),
        ({"top_p": 1.01}, {}, SamplingParamsError, "top_p"),
        ({"top_k": -2}, {}, SamplingParamsError, "top_k=-2"),
        ({"top_k": 2.0}, {}, ContractTypeError, "top_k"),
        ({"min_p": 1.5}, {}, SamplingParamsError, "min_p"),
        ({"temperature": True}, {}, ContractTypeError, "temperature"),
        ({"temperature": "0.8"}, {}, ContractTypeError, "temperature"),
        ({"logprobs_mode": "processed"}, {}, SamplingParamsError, "not a vLLM logprobs_mode"),
        ({"logprobs_mode": 1}, {}, ContractTypeError, "logprobs_mode"),
        (
            {"logprobs_mode": "raw_logprobs"},
            {"logprobs_mode": "processed_logprobs"},
            SamplingParamsError,
            "pass one",
        ),
        (0.8, {}, ContractTypeError, "sampling"),
    ],
)
def test_invalid_sampling_parameters(
    source: Any, kwargs: dict[str, Any], error: type[Exception], fragment: str
) -> None:
    """A value vLLM refuses, or of the wrong type, raises naming the field."""
    with pytest.raises(error) as info:
        sampling_settings(source, **kwargs)
    assert fragment in str(info.value)
    assert_contract_error(info.value)


def test_a_teacher_at_another_temperature_is_named_with_both_values() -> None:
    """Every differing field is named with both values; the attributes carry the first and the scorer."""
    rollout = {"temperature": 0.8, "top_p": 0.95, "top_k": 20}
    with pytest.raises(SamplingParamsError) as info:
        check_scoring_matches_rollout(rollout, {"temperature": 1.0, "top_p": 0.95}, scorer="teacher")
    error = info.value
    assert (error.field, error.fields, error.rollout_value, error.scoring_value, error.scorer) == (
        "temperature",
        ("temperature", "top_k"),
        0.8,
        1.0,
        "teacher",
    )
    assert "the teacher scores with temperature=1.0 but the rollout sampled at temperature=0.8" in str(error)
    assert "top_k=-1 but the rollout sampled at top_k=20" in str(error)
    assert_contract_error(error)


def test_equal_parameters_pass_to_float32_rounding_and_modes_compare_when_both_are_stated() -> None:
    """0.8 stored in float32 equals 0.8; an unstated logprobs_mode is not compared, two stated ones are."""
    assert (
        check_scoring_matches_rollout({"temperature": 0.8}, {"temperature": 0.800000011920929}).temperature
        == 0.8
    )
    check_scoring_matches_rollout({"logprobs_mode": "processed_logprobs"}, {})
    with pytest.raises(SamplingParamsError, match="logprobs_mode='raw_logprobs' but the rollout sampled at"):
        check_scoring_matches_rollout(
            {"logprobs_mode": "processed_logprobs"}, {"logprobs_mode": "raw_logprobs"}
        )
    with pytest.raises(ContractTypeError, match="scorer"):
        check_scoring_matches_rollout({}, {}, scorer=None)  # type: ignore[arg-type]


def test_a_tiny_min_p_is_not_zero() -> None:
    """The tolerance is relative only: min_p=1e-23 still truncates (vLLM drops tokens below 1e-23 of the top
    probability), so a scorer at min_p=0 differs from it."""
    with pytest.raises(SamplingParamsError, match=r"min_p=0.0 but the rollout sampled at min_p=1e-23"):
        check_scoring_matches_rollout({"min_p": 1e-23}, {"min_p": 0.0})
