"""Router replay (SPEC §3, invariants 10, 11, 15, 17) on routed experts that real vLLM returned.

The in-process MoE engine and the OpenAI server both run the tiny qwen3_moe model (4 experts, top-2, 2 MoE layers).
Every expectation is computed here from vLLM's raw numpy routes, independently of the code under test. Only the
0.30 CPU build returns routed experts, so the module runs on that release.
"""

from __future__ import annotations

import base64
import io
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from vllm import SamplingParams
from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionResponse

from rl_contracts.chat import attach_routed_experts_to_chat_response_choices
from rl_contracts.codec import decode_routed_experts, decode_vllm_routed_experts, encode_routed_experts
from rl_contracts.errors import RoutedExpertsError
from rl_contracts.routed_experts import (
    R3_MISSING_ROUTE_SENTINEL,
    pad_and_align_routed_expert_indices,
    resolve_routed_experts_dtype,
)

pytestmark = [pytest.mark.vllm, pytest.mark.vllm_releases("0.30")]

NUM_EXPERTS = 4
TOP_K = 2
NUM_MOE_LAYERS = 2
CARRY_DTYPES = (torch.int8, torch.int16, torch.int32, torch.int64)
ENVELOPE_DTYPES = (torch.int8, torch.int16, torch.int32)
LONG_PROMPT = "The quick brown fox jumps over the lazy dog. " * 6  # > 96 tokens: three full 32-token blocks
_WORDS = [
    "the",
    "quick",
    "router",
    "replay",
    "expert",
    "token",
    "prompt",
    "cache",
    "hello",
    "world",
    "42",
    "fox",
]

text_prompts = st.lists(st.sampled_from(_WORDS), min_size=3, max_size=12).map(" ".join)
token_id_prompts = st.lists(st.integers(8, 263), min_size=4, max_size=40).map(
    lambda ids: {"prompt_token_ids": ids}
)
prompt_batches = st.lists(
    st.one_of(text_prompts, token_id_prompts, st.just(LONG_PROMPT)), min_size=1, max_size=3
)
# (n, temperature): vLLM rejects greedy sampling with n > 1.
n_and_temperature = st.sampled_from([(1, 0.0), (2, 0.8), (1, 1.0), (2, 1.0)])


def check_aligned_routes(
    request_output: Any,
    completion_output: Any,
    routes: np.ndarray[Any, Any],
    *,
    padded_length: int,
    routes_start: int,
    dtype: torch.dtype,
) -> torch.Tensor:
    """Align one real output and check shape, dtype, the four row classes, the stats, strict mode and the codec.

    ``routes`` is vLLM's raw array for the output; ``valid_length`` is prompt + generated tokens. Returns the
    aligned tensor.
    """
    valid = len(request_output.prompt_token_ids) + len(completion_output.token_ids)
    rows, layers, top_k = routes.shape
    expected = min(max(valid - 1, 0), padded_length)
    aligned, stats = pad_and_align_routed_expert_indices(
        request_output,
        completion_output,
        valid_length=valid,
        padded_length=padded_length,
        device="cpu",
        return_stats=True,
        routed_experts_dtype=dtype,
        routes_start=routes_start,
    )
    assert aligned is not None
    assert aligned.shape == (padded_length, layers, top_k)
    assert aligned.dtype == dtype
    assert aligned.device.type == "cpu"

    got = aligned.numpy().astype(np.int64)
    omitted_end = min(routes_start, expected)
    copied_end = min(expected, routes_start + rows)
    assert (got[:omitted_end] == R3_MISSING_ROUTE_SENTINEL).all()
    if copied_end > routes_start:
        np.testing.assert_array_equal(got[routes_start:copied_end], routes[: copied_end - routes_start])
    assert (got[max(copied_end, omitted_end) : expected] == R3_MISSING_ROUTE_SENTINEL).all()
    assert (got[expected:] == np.arange(top_k)).all()

    missing = min(routes_start, expected) + max(expected - routes_start - rows, 0)
    surplus = min(rows, max(routes_start + rows - (expected + 1), 0))
    assert stats == {
        "actual_routes": rows,
        "expected_routes": expected,
        "missing_routes": missing,
        "surplus_routes": surplus,
    }

    def strict() -> torch.Tensor | None:
        return pad_and_align_routed_expert_indices(
            request_output,
            completion_output,
            valid_length=valid,
            padded_length=padded_length,
            device="cpu",
            routed_experts_dtype=dtype,
            routes_start=routes_start,
            require_complete_routed_experts=True,
            allow_missing_routed_experts_fallback=False,
        )

    if missing or surplus:
        with pytest.raises(RoutedExpertsError) as info:
            strict()
        assert info.value.routes == rows
        assert ("incomplete" if missing else "too many") in str(info.value)
    else:
        strict_result = strict()
        assert strict_result is not None
        assert torch.equal(strict_result, aligned)

    if dtype in ENVELOPE_DTYPES:
        envelope = encode_routed_experts(aligned)
        assert envelope.startswith(
            f"nrlre1:{str(dtype).removeprefix('torch.')}:{padded_length}x{layers}x{top_k}:"
        )
        decoded = decode_routed_experts(envelope, dtype)
        assert decoded.dtype == dtype
        assert torch.equal(decoded, aligned)
        assert torch.equal(decode_routed_experts(envelope, torch.int64), aligned.to(torch.int64))
    return aligned


def _vllm_routes(completion_output: Any) -> np.ndarray[Any, Any]:
    """vLLM's routes for one output, checked against its documented shape, dtype and id range."""
    routes = completion_output.routed_experts
    assert isinstance(routes, np.ndarray)
    assert routes.dtype == np.uint8
    assert routes.ndim == 3
    assert routes.shape[1:] == (NUM_MOE_LAYERS, TOP_K)
    assert routes.size == 0 or int(routes.max()) < NUM_EXPERTS
    return routes


@settings(max_examples=20, deadline=None)
@given(
    prompts=prompt_batches,
    n_temperature=n_and_temperature,
    max_tokens=st.integers(1, 8),
    ignore_eos=st.booleans(),
    seed=st.integers(0, 2**16),
    routes_start=st.sampled_from([0, 3, 1]),
    pad_delta=st.integers(-3, 8),
    dtype=st.sampled_from(CARRY_DTYPES),
)
def test_real_routes_align_for_any_prompts_and_sampling(
    moe_llm: Any,
    prompts: list[Any],
    n_temperature: tuple[int, float],
    max_tokens: int,
    ignore_eos: bool,
    seed: int,
    routes_start: int,
    pad_delta: int,
    dtype: torch.dtype,
) -> None:
    """Every real (RequestOutput, CompletionOutput) aligns into the four row classes with exact stats (inv. 10, 11)."""
    n, temperature = n_temperature
    params = SamplingParams(
        n=n,
        max_tokens=max_tokens,
        temperature=temperature,
        ignore_eos=ignore_eos,
        seed=seed,
        routed_experts_prompt_start=routes_start,
    )
    outputs = moe_llm.generate(prompts, params, use_tqdm=False)
    assert len(outputs) == len(prompts)
    for request_output, prompt in zip(outputs, prompts, strict=True):
        if isinstance(prompt, dict):
            assert list(request_output.prompt_token_ids) == prompt["prompt_token_ids"]
        assert len(request_output.outputs) == n
        for completion in request_output.outputs:
            routes = _vllm_routes(completion)
            valid = len(request_output.prompt_token_ids) + len(completion.token_ids)
            # vLLM: one row per token except the last, minus the omitted prompt rows.
            assert routes.shape[0] == valid - 1 - routes_start
            check_aligned_routes(
                request_output,
                completion,
                routes,
                padded_length=max(valid + pad_delta, 0),
                routes_start=routes_start,
                dtype=dtype,
            )


def test_prefix_cached_prompt_routes_align(moe_llm: Any) -> None:
    """A repeated long prompt is served from the prefix cache and still yields complete, aligned routes."""
    params = SamplingParams(n=2, max_tokens=5, ignore_eos=True, seed=3)
    outputs = moe_llm.generate([LONG_PROMPT, LONG_PROMPT], params, use_tqdm=False)
    assert max(output.num_cached_tokens for output in outputs) >= 96
    for request_output in outputs:
        for completion in request_output.outputs:
            routes = _vllm_routes(completion)
            valid = len(request_output.prompt_token_ids) + len(completion.token_ids)
            assert routes.shape[0] == valid - 1
            aligned = check_aligned_routes(
                request_output, completion, routes, padded_length=valid + 5, routes_start=0, dtype=torch.int8
            )
            assert (aligned[: valid - 1] >= 0).all()


def test_token_id_prompt_routes_cover_prompt_and_generation(moe_llm: Any) -> None:
    """A prompt given as token ids is prefilled unchanged; its routes cover prompt + generated - 1 tokens."""
    prompt_ids = [1, 40, 41, 42, 43, 44, 45, 46, 47, 48]
    [request_output] = moe_llm.generate(
        [{"prompt_token_ids": prompt_ids}], SamplingParams(max_tokens=6, ignore_eos=True), use_tqdm=False
    )
    assert list(request_output.prompt_token_ids) == prompt_ids
    [completion] = request_output.outputs
    assert len(completion.token_ids) == 6
    routes = _vllm_routes(completion)
    assert routes.shape == (len(prompt_ids) + 6 - 1, NUM_MOE_LAYERS, TOP_K)
    carry = resolve_routed_experts_dtype(NUM_EXPERTS)
    assert carry == torch.int8
    check_aligned_routes(request_output, completion, routes, padded_length=32, routes_start=0, dtype=carry)


def _chat(server: Any, **extra: Any) -> dict[str, Any]:
    body = {
        "model": "tiny",
        "messages": [{"role": "user", "content": "Router replay records the experts of every token."}],
        "max_tokens": 6,
        "n": 2,
        "logprobs": True,
        "top_logprobs": 1,
        "return_token_ids": True,
        "seed": 0,
        **extra,
    }
    result: dict[str, Any] = server.chat(body)
    return result


def _npy(payload: str) -> np.ndarray[Any, Any]:
    """vLLM's documented decoding of ``choices[i].routed_experts``, used as the independent reference."""
    array: np.ndarray[Any, Any] = np.load(io.BytesIO(base64.b64decode(payload)), allow_pickle=False)
    return array


@pytest.mark.parametrize("prompt_start", [0, 3])
def test_server_routed_experts_decode_and_align(openai_server: Any, prompt_start: int) -> None:
    """The server's base64 ``.npy`` routes decode exactly, align per choice, and attach to the real response."""
    extra = {"routed_experts_prompt_start": prompt_start} if prompt_start else {}
    body = _chat(openai_server, **extra)
    prompt_ids = body["prompt_token_ids"]
    assert prompt_ids[0] == 1  # the chat template's BOS
    outputs = []
    for choice in body["choices"]:
        raw = _npy(choice["routed_experts"])
        valid = len(prompt_ids) + len(choice["token_ids"])
        assert raw.shape == (valid - 1 - prompt_start, NUM_MOE_LAYERS, TOP_K)
        routes, start = decode_vllm_routed_experts(
            choice["routed_experts"], dtype=torch.int16, prompt_start=prompt_start
        )
        assert start == prompt_start
        assert routes.dtype == torch.int16
        assert torch.equal(routes, torch.from_numpy(raw.astype(np.int16)))
        completion = SimpleNamespace(
            index=choice["index"], token_ids=choice["token_ids"], routed_experts=routes
        )
        outputs.append(completion)
        request_output = SimpleNamespace(
            prompt_token_ids=prompt_ids, outputs=[completion], num_cached_tokens=None
        )
        aligned = check_aligned_routes(
            request_output, completion, raw, padded_length=valid + 2, routes_start=start, dtype=torch.int8
        )
        assert (aligned[:start] == R3_MISSING_ROUTE_SENTINEL).all()
        assert (aligned[start : valid - 1] >= 0).all()

    response = ChatCompletionResponse.model_validate(body)
    assert response.prompt_token_ids == prompt_ids
    final = SimpleNamespace(prompt_token_ids=prompt_ids, outputs=list(reversed(outputs)))
    assert (
        attach_routed_experts_to_chat_response_choices(
            response, final, device="cpu", routes_start=prompt_start
        )
        is response
    )
    for choice in response.choices:
        completion = next(o for o in outputs if o.index == choice.index)
        valid = len(prompt_ids) + len(completion.token_ids)
        expected = pad_and_align_routed_expert_indices(
            final,
            completion,
            valid_length=valid,
            padded_length=valid,
            device="cpu",
            routes_start=prompt_start,
        )
        assert expected is not None
        assert torch.equal(decode_routed_experts(choice.message.routed_experts, torch.int16), expected)
