"""Per-token weight versions (SPEC §4.3) read from real vLLM outputs.

vLLM 0.32 labels every sampled token with the version the trainer set with ``LLMEngine.set_weight_version``:
one span when the version is set before a ``generate``, two when it changes while a request is being stepped.
The expected spans come from the engine's own step outputs (how many tokens had been sampled before the switch),
never from the code under test. On 0.30, which has no weight versions, an output carries no labels.

With ``RL_CONTRACTS_VLLM_RECORD`` set to a directory, the 0.32 tests also write what they saw there as
``generate_weight_versions.json`` (the recorded file core tests load, ``tests/data/``); without it they check that
the recorded file still describes what this release produces.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import vllm
from vllm import SamplingParams
from vllm.entrypoints.openai.chat_completion.protocol import (
    ChatCompletionResponse,
    ChatCompletionResponseChoice,
    ChatMessage,
)
from vllm.entrypoints.serve.engine.protocol import UsageInfo

from rl_contracts.chat import (
    attach_token_information_to_chat_response_choices,
    model_dump_chat_response_with_dynamic_message_fields,
)
from rl_contracts.errors import WeightVersionError
from rl_contracts.testing import assert_contract_error
from rl_contracts.weights import (
    WeightVersionSpan,
    check_weight_versions,
    weight_version_per_token,
    weight_version_spans,
)

pytestmark = pytest.mark.vllm

RECORD_ENV = "RL_CONTRACTS_VLLM_RECORD"
RECORDED = Path(__file__).parents[1] / "data" / "generate_weight_versions.json"
PROMPTS = ["weights move while the rollout runs", {"prompt_token_ids": [1, 40, 41, 42, 43, 44, 45]}]
GENERATE_PARAMS: dict[str, Any] = {"n": 2, "max_tokens": 6, "temperature": 1.0, "seed": 3, "ignore_eos": True}
STEPPED_PARAMS: dict[str, Any] = {"max_tokens": 12, "temperature": 0.0, "ignore_eos": True}
STEPPED_PROMPT = "the trainer updates the weights mid-rollout"
STEPS_BEFORE_UPDATE = 4


def raw_spans(completion: Any) -> list[tuple[str, int, int]]:
    """vLLM's spans of one output as plain tuples, read straight from its dataclasses."""
    return [(span.version, span.start, span.end) for span in completion.weight_versions]


def as_record(request_output: Any) -> dict[str, Any]:
    """One real ``RequestOutput`` in the recorded JSON form (spans as ``{"version", "start", "end"}``)."""
    return {
        "request_id": request_output.request_id,
        "prompt_token_ids": list(request_output.prompt_token_ids),
        "outputs": [
            {
                "index": completion.index,
                "token_ids": list(completion.token_ids),
                "finish_reason": completion.finish_reason,
                "weight_versions": [
                    {"version": v, "start": s, "end": e} for v, s, e in raw_spans(completion)
                ],
            }
            for completion in request_output.outputs
        ],
    }


def check_against_recorded(scenario: str, how: dict[str, Any], records: list[dict[str, Any]]) -> None:
    """Record ``records`` (made as ``how`` says) under ``scenario`` when recording; else they must agree with the
    recorded file.

    Token ids are sampled and may differ between machines; prompt ids, lengths, finish reasons and spans may not.
    """
    directory = os.environ.get(RECORD_ENV)
    if directory:
        target = Path(directory) / RECORDED.name
        data = json.loads(target.read_text()) if target.exists() else {}
        data["meta"] = {
            "vllm_version": vllm.__version__,
            "model": "tiny qwen3_moe: 4 experts, top-2, 2 MoE layers, random weights, local BPE tokenizer",
            "engine_kwargs": {
                "dtype": "float32",
                "enforce_eager": True,
                "max_model_len": 256,
                "block_size": 32,
            },
        }
        data[scenario] = {**how, "request_outputs": records}
        target.write_text(json.dumps(data, indent=1) + "\n")
        return
    recorded = json.loads(RECORDED.read_text())[scenario]["request_outputs"]

    def shape(items: list[dict[str, Any]]) -> list[Any]:
        return [
            (
                item["prompt_token_ids"],
                [
                    (o["index"], len(o["token_ids"]), o["finish_reason"], o["weight_versions"])
                    for o in item["outputs"]
                ],
            )
            for item in items
        ]

    assert shape(records) == shape(recorded), f"re-record {RECORDED.name} with {RECORD_ENV}=DIR"


@pytest.mark.vllm_releases("0.32")
def test_version_set_before_generate_labels_every_token(moe_llm: Any) -> None:
    """``set_weight_version("7")`` before a generate gives one span ("7", 0, n) per output, read and checked."""
    moe_llm.llm_engine.set_weight_version("7")
    outputs = moe_llm.generate(PROMPTS, SamplingParams(**GENERATE_PARAMS), use_tqdm=False)
    for request_output in outputs:
        assert len(request_output.outputs) == GENERATE_PARAMS["n"]
        for completion in request_output.outputs:
            n = len(completion.token_ids)
            assert n == GENERATE_PARAMS["max_tokens"]
            assert raw_spans(completion) == [("7", 0, n)]
            expected = (WeightVersionSpan(version="7", start=0, end=n),)
            assert weight_version_spans(completion) == expected
            assert weight_version_spans(completion, required=True) == expected
            assert check_weight_versions(completion, allowed={"7"}) == expected
            assert check_weight_versions(completion, allowed=lambda label: label.isdigit()) == expected
            per_token = weight_version_per_token(expected, labels=["6", "7"])
            assert per_token.dtype == np.int32
            assert per_token.tolist() == [1] * n
            with pytest.raises(WeightVersionError) as info:
                check_weight_versions(completion, allowed={"8"})
            assert info.value.version == "7"
            assert info.value.span_index == 0
            assert f"output tokens [0, {n}) of completion output {completion.index}" in str(info.value)
            assert_contract_error(info.value)
    how = {
        "procedure": "set_weight_version('7'), then LLM.generate",
        "prompts": PROMPTS,
        "sampling": GENERATE_PARAMS,
    }
    check_against_recorded("generate", how, [as_record(output) for output in outputs])


@pytest.mark.vllm_releases("0.32")
def test_version_changed_while_stepping_gives_two_spans(moe_llm: Any) -> None:
    """A request stepped past ``set_weight_version("8")`` has spans 7 then 8 split where the switch happened;
    every token maps to its label and a rollout allowing only "8" is rejected at the first span."""
    engine = moe_llm.llm_engine
    engine.set_weight_version("7")
    engine.add_request("stepped-0", STEPPED_PROMPT, SamplingParams(**STEPPED_PARAMS))
    sampled_before_update = 0
    for _ in range(STEPS_BEFORE_UPDATE):
        for request_output in engine.step():
            sampled_before_update = len(request_output.outputs[0].token_ids)
    assert 0 < sampled_before_update < STEPPED_PARAMS["max_tokens"]
    engine.set_weight_version("8")
    finished = []
    while engine.has_unfinished_requests():
        finished += [output for output in engine.step() if output.finished]
    [request_output] = finished
    [completion] = request_output.outputs
    total = len(completion.token_ids)
    assert total == STEPPED_PARAMS["max_tokens"]
    assert raw_spans(completion) == [("7", 0, sampled_before_update), ("8", sampled_before_update, total)]

    spans = weight_version_spans(completion, required=True)
    assert spans == (
        WeightVersionSpan(version="7", start=0, end=sampled_before_update),
        WeightVersionSpan(version="8", start=sampled_before_update, end=total),
    )
    per_token = weight_version_per_token(spans, labels=["8", "7"])
    assert per_token.tolist() == [1] * sampled_before_update + [0] * (total - sampled_before_update)
    assert check_weight_versions(completion, allowed={"7", "8"}) == spans
    with pytest.raises(WeightVersionError) as info:
        check_weight_versions(completion, allowed={"8"})
    assert info.value.version == "7"
    assert info.value.span_index == 0
    assert (
        f"output tokens [0, {sampled_before_update}) of completion output 0 were sampled by weights '7'"
        in str(info.value)
    )
    assert_contract_error(info.value)
    with pytest.raises(WeightVersionError) as unknown:
        weight_version_per_token(spans, labels=["8"])
    assert "7" in str(unknown.value)
    how = {
        "procedure": f"set_weight_version('7'), add_request, {STEPS_BEFORE_UPDATE} x step(), "
        "set_weight_version('8'), step() until finished",
        "prompt": STEPPED_PROMPT,
        "sampling": STEPPED_PARAMS,
    }
    check_against_recorded("stepped", how, [as_record(request_output)])


@pytest.mark.vllm_releases("0.32")
def test_chat_message_carries_the_real_spans(moe_llm: Any) -> None:
    """Token information attached from a labelled real chat output puts the spans on the message and the dump."""
    moe_llm.llm_engine.set_weight_version("9")
    params = SamplingParams(max_tokens=5, logprobs=1, ignore_eos=True, temperature=0.0)
    [request_output] = moe_llm.chat([{"role": "user", "content": "label my tokens"}], params, use_tqdm=False)
    [completion] = request_output.outputs
    n = len(completion.token_ids)
    response = ChatCompletionResponse(
        model="tiny",
        choices=[
            ChatCompletionResponseChoice(
                index=0,
                message=ChatMessage(role="assistant", content=completion.text),
                finish_reason=completion.finish_reason,
                token_ids=list(completion.token_ids),
            )
        ],
        usage=UsageInfo(
            prompt_tokens=len(request_output.prompt_token_ids), completion_tokens=n, total_tokens=0
        ),
        prompt_token_ids=list(request_output.prompt_token_ids),
    )
    attach_token_information_to_chat_response_choices(response, request_output)
    assert response.choices[0].message.weight_versions == [{"version": "9", "start": 0, "end": n}]
    dump = model_dump_chat_response_with_dynamic_message_fields(response)
    assert dump["choices"][0]["message"]["weight_versions"] == [{"version": "9", "start": 0, "end": n}]


@pytest.mark.vllm_releases("0.30")
def test_release_without_weight_versions_reports_no_labels(moe_llm: Any) -> None:
    """0.30 outputs carry no ``weight_versions``: spans read as None, and a rollout that requires them is refused."""
    [request_output] = moe_llm.generate(["no labels here"], SamplingParams(max_tokens=3), use_tqdm=False)
    [completion] = request_output.outputs
    assert getattr(completion, "weight_versions", None) is None
    assert weight_version_spans(completion) is None
    with pytest.raises(WeightVersionError) as info:
        check_weight_versions(completion, allowed={"7"})
    assert "carries no weight_versions" in str(info.value)
    assert "vLLM >= 0.32" in str(info.value)
    assert_contract_error(info.value)
