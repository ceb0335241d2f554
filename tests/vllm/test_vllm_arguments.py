"""A real engine started from a recipe with ``engine_kwargs``, sampled with ``sampling_kwargs``; on it, the
message-level splice with the real ``transformers`` tokenizer, and prompt hygiene (repeated BOS, tokenizer
fingerprints) against what the engine really uses.

The recipe is a small YAML file whose ``policy.model_name`` is the tiny dense model; the engine is this module's
own (created after the session engines, deleted at the end of the module).
"""

from __future__ import annotations

import dataclasses
import gc
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
import transformers  # type: ignore[import-not-found, unused-ignore]
from vllm import LLM, SamplingParams
from vllm.engine.arg_utils import EngineArgs

from rl_contracts.config import LoadedRecipe, load_recipe
from rl_contracts.errors import PromptFormatError, SpliceError, TokenizerMismatchError
from rl_contracts.metrics import CounterSnapshot
from rl_contracts.prompts import check_tokenizers_match, tokenizer_fingerprint, validate_rollout_prompt
from rl_contracts.splice import splice_prefix_tokens, splice_turn
from rl_contracts.vllm_arguments import engine_kwargs, sampling_kwargs

pytestmark = pytest.mark.vllm

BOS, EOS = 1, 2
RECIPE = """\
policy:
  model_name: {model}
  generation:
    backend: vllm
    max_new_tokens: 8
    temperature: 1.0
    top_p: 1.0
    top_k: null
    val_temperature: ${{.temperature}}
    val_top_p: ${{.top_p}}
    val_top_k: ${{.top_k}}
    stop_token_ids: null
    stop_strings: null
    vllm_cfg:
      tensor_parallel_size: 1
      pipeline_parallel_size: 1
      expert_parallel_size: 1
      gpu_memory_utilization: 0.5
      max_model_len: 256
      async_engine: false
      precision: float32
      enforce_eager: true
    vllm_kwargs:
      max_num_seqs: 4
"""
QUESTION = [{"role": "user", "content": "hello world"}]


def model_dir(name: str) -> Path:
    """The tiny model ``name`` the tier built (``RL_CONTRACTS_VLLM_MODELS``, set by ``.ci/vllm_tier``)."""
    path = Path(os.environ.get("RL_CONTRACTS_VLLM_MODELS", "")) / name
    if not (path / "config.json").is_file():
        pytest.fail(f"tiny model {name!r} is missing at {path}; run the tier with `bash .ci/vllm_tier`")
    return path


@pytest.fixture(scope="module")
def recipe(tmp_path_factory: pytest.TempPathFactory) -> LoadedRecipe:
    """The recipe of the tiny dense model, loaded and validated (preflight off: only the section matters)."""
    path = tmp_path_factory.mktemp("recipe") / "tiny.yaml"
    path.write_text(RECIPE.format(model=model_dir("dense")))
    return load_recipe(path, run_preflight=False)


@pytest.fixture(scope="module")
def llm(recipe: LoadedRecipe) -> Iterator[Any]:
    """``LLM(**engine_kwargs(recipe, seed=0))``: nothing but the bridge's arguments."""
    engine = LLM(**engine_kwargs(recipe, seed=0))
    yield engine
    del engine
    gc.collect()


def ids_of(rendered: Any) -> list[int]:
    """Token ids of an ``apply_chat_template(tokenize=True)`` result (a ``BatchEncoding`` in transformers 5)."""
    return list(
        rendered["input_ids"] if isinstance(rendered, dict | transformers.BatchEncoding) else rendered
    )


def test_every_engine_argument_is_a_vllm_engine_argument(recipe: LoadedRecipe) -> None:
    """Each key ``engine_kwargs`` returns, options included, is a field of this release's ``EngineArgs``."""
    kwargs = engine_kwargs(
        recipe,
        seed=0,
        enable_sleep_mode=True,
        worker_extension_cls="x.Y",
        overrides={"kv_cache_dtype": "auto"},
    )
    fields = {field.name for field in dataclasses.fields(EngineArgs)}
    assert set(kwargs) <= fields, sorted(set(kwargs) - fields)


def test_engine_runs_with_the_recipe_settings(llm: Any, recipe: LoadedRecipe) -> None:
    """The started engine holds the recipe's dtype, context length, seed and ``vllm_kwargs``, and logs stats."""
    config = llm.llm_engine.vllm_config
    assert config.model_config.dtype == torch.float32
    assert config.model_config.max_model_len == 256
    assert config.model_config.seed == 0
    assert config.model_config.enforce_eager is True
    assert config.scheduler_config.max_num_seqs == 4
    assert config.parallel_config.tensor_parallel_size == 1
    assert config.model_config.served_model_name == str(model_dir("dense"))
    before = CounterSnapshot.from_vllm_metrics(llm.get_metrics())
    llm.generate(["hello"], SamplingParams(**sampling_kwargs(recipe, greedy=True)), use_tqdm=False)
    after = CounterSnapshot.from_vllm_metrics(llm.get_metrics())
    assert after.values != before.values  # disable_log_stats=False: the counters moved


def test_sampling_kwargs_sample_with_sampled_token_logprobs(llm: Any, recipe: LoadedRecipe) -> None:
    """The recipe's sampling (``top_k: null`` as -1) runs; every generated token carries its own log-prob."""
    params = SamplingParams(**sampling_kwargs(recipe))
    assert params.top_k in (-1, 0)  # vLLM >= 0.31 normalises "no filtering" to 0
    [output] = llm.generate(["the quick brown fox"], params, use_tqdm=False)
    completion = output.outputs[0]
    assert 1 <= len(completion.token_ids) <= 8
    assert len(completion.logprobs) == len(completion.token_ids)
    for token, logprobs in zip(completion.token_ids, completion.logprobs, strict=True):
        assert token in logprobs  # logprobs=0: the sampled token's own log-probability


def test_greedy_max_tokens_and_stop_token(llm: Any, recipe: LoadedRecipe) -> None:
    """Greedy is deterministic, ``max_new_tokens`` caps the output, and a recipe stop token ends it, included."""
    prompt = {
        "prompt_token_ids": ids_of(
            llm.get_tokenizer().apply_chat_template(QUESTION, add_generation_prompt=True)
        )
    }
    greedy = SamplingParams(**sampling_kwargs(recipe, greedy=True))
    first, second = (llm.generate([prompt], greedy, use_tqdm=False)[0].outputs[0] for _ in range(2))
    assert list(first.token_ids) == list(second.token_ids)
    capped = llm.generate([prompt], SamplingParams(**sampling_kwargs(recipe, greedy=True, max_new_tokens=3)))
    assert len(capped[0].outputs[0].token_ids) == 3
    stop = first.token_ids[2]
    assert recipe.generation is not None
    stopping = recipe.generation.model_copy(update={"stop_token_ids": [stop]})
    [stopped] = llm.generate(
        [prompt], SamplingParams(**sampling_kwargs(stopping, greedy=True)), use_tqdm=False
    )
    tokens = list(stopped.outputs[0].token_ids)
    assert tokens[-1] == stop
    assert tokens.count(stop) == 1
    assert stopped.outputs[0].finish_reason == "stop"


def _first_turn(llm: Any) -> tuple[Any, list[int], list[int]]:
    """The real tokenizer, the first turn's prompt ids and the greedy generated ids (cut at max_tokens)."""
    tokenizer = llm.get_tokenizer()
    prompt = ids_of(tokenizer.apply_chat_template(QUESTION, add_generation_prompt=True))
    params = SamplingParams(temperature=0.0, max_tokens=6)
    [output] = llm.generate([{"prompt_token_ids": prompt}], params, use_tqdm=False)
    assert list(output.prompt_token_ids) == prompt
    return tokenizer, prompt, list(output.outputs[0].token_ids)


@pytest.mark.parametrize("stopped_on_eos", [False, True])
def test_splice_turn_with_the_real_tokenizer(llm: Any, stopped_on_eos: bool) -> None:
    """The second turn's prompt keeps turn one's exact ids, adds the new turn once, and is what vLLM prefills."""
    tokenizer, prompt, generated = _first_turn(llm)
    generated = [token for token in generated if token != EOS] + ([EOS] if stopped_on_eos else [])
    model = prompt + generated
    reply = tokenizer.decode(generated, skip_special_tokens=True)
    messages = [*QUESTION, {"role": "assistant", "content": reply}, {"role": "user", "content": "the fox"}]
    config = transformers.GenerationConfig.from_pretrained(model_dir("dense"))
    splice = splice_turn(tokenizer, messages, model, generation_config=config)
    assert splice.token_ids[: len(model)] == model
    template = ids_of(tokenizer.apply_chat_template(messages, add_generation_prompt=True))
    assert splice.token_ids[len(model) :] == template[splice.template_cut_start :]
    new_turn = tokenizer.decode(splice.token_ids[len(model) :])
    assert new_turn == ("" if stopped_on_eos else "</s>") + "<|user|>the fox</s><|assistant|>"
    [second] = llm.generate(
        [{"prompt_token_ids": splice.token_ids}], SamplingParams(max_tokens=1), use_tqdm=False
    )
    validate_rollout_prompt(splice.token_ids, second.prompt_token_ids, bos_token_id=tokenizer.bos_token_id)


def test_prefix_rendered_with_an_open_last_turn_fails_the_turn_count(llm: Any) -> None:
    """``continue_final_message=True`` on the real template leaves the last turn open: the check rejects it."""
    tokenizer, prompt, generated = _first_turn(llm)
    model = [*prompt, *(token for token in generated if token != EOS), EOS]
    reply = tokenizer.decode(model[len(prompt) : -1], skip_special_tokens=True)
    messages = [*QUESTION, {"role": "assistant", "content": reply}, {"role": "user", "content": "yes"}]
    open_prefix = ids_of(tokenizer.apply_chat_template(messages[:2], continue_final_message=True))
    arguments: dict[str, Any] = {
        "model_prefix_token_ids": model,
        "template_prefix_token_ids": open_prefix,
        "template_token_ids": ids_of(tokenizer.apply_chat_template(messages, add_generation_prompt=True)),
        "eos_token_id": EOS,
    }
    with pytest.raises(SpliceError, match="left open"):
        splice_prefix_tokens(check_turn_count=True, **arguments)
    unchecked = splice_prefix_tokens(**arguments)  # the reference's behaviour: the assistant turn comes twice
    template = arguments["template_token_ids"]
    after_question = template.index(EOS) + 1  # the template resumes after the user message, not the reply
    assert unchecked.token_ids[len(model) :] == template[after_question:]
    assert template[after_question] == tokenizer.convert_tokens_to_ids("<|assistant|>")


def test_doubled_bos_both_sides_agree_on_is_caught(llm: Any) -> None:
    """Rendered chat text sent as text: vLLM adds a BOS to the template's, and so does the learner's tokenizer."""
    tokenizer = llm.get_tokenizer()
    text = tokenizer.apply_chat_template(QUESTION, add_generation_prompt=True, tokenize=False)
    [output] = llm.generate([text], SamplingParams(max_tokens=1), use_tqdm=False)
    engine = list(output.prompt_token_ids)
    learner = tokenizer(text).input_ids
    assert engine[:2] == [BOS, BOS]
    validate_rollout_prompt(learner, engine)  # equal ids: the plain check passes
    with pytest.raises(PromptFormatError, match="starts with the BOS id 1 twice"):
        validate_rollout_prompt(learner, engine, bos_token_id=tokenizer.bos_token_id)


def _retrained(tmp_path: Path) -> Any:
    """The dense model's tokenizer files with two ordinary tokens' ids swapped: same size, other vocabulary."""
    source = model_dir("dense")
    target = tmp_path / "retrained"
    target.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        if (source / name).exists():
            shutil.copy(source / name, target / name)
    data = json.loads((target / "tokenizer.json").read_text())
    vocab = data["model"]["vocab"]
    ordinary = [token for token, index in sorted(vocab.items(), key=lambda item: item[1]) if index >= 100]
    first, second = ordinary[:2]
    vocab[first], vocab[second] = vocab[second], vocab[first]
    (target / "tokenizer.json").write_text(json.dumps(data))
    return transformers.AutoTokenizer.from_pretrained(target)


def test_learner_tokenizer_is_the_engines_or_named(llm: Any, tmp_path: Path) -> None:
    """The learner's ``AutoTokenizer`` matches the engine's; a retrained one (same ids) and another template fail."""
    engine = llm.get_tokenizer()
    learner = transformers.AutoTokenizer.from_pretrained(model_dir("dense"))
    check_tokenizers_match(learner, engine)
    check_tokenizers_match(tokenizer_fingerprint(learner), engine)
    retrained = _retrained(tmp_path)
    assert len(retrained) == len(learner)
    with pytest.raises(TokenizerMismatchError) as info:
        check_tokenizers_match(retrained, engine)
    assert info.value.components == ("vocabulary",)
    assert "first differing id 100" in str(info.value)
    learner.chat_template = learner.chat_template.replace("<|assistant|>", "<|assistant|>\n")
    with pytest.raises(TokenizerMismatchError) as info:
        check_tokenizers_match(learner, engine)
    assert info.value.components == ("chat_template",)
