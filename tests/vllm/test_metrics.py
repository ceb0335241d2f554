"""Engine counters and step metrics (SPEC §6, invariants 23-26) from real vLLM metrics.

In-process: ``LLM.get_metrics()`` and the process's Prometheus registry before and after a ``generate`` on the
dense engine with n-gram speculative decoding. Server: ``/metrics`` around a real chat request, and the
``rl-contracts metrics`` console script run against it. Expected values come from the outputs vLLM returned and
from the raw metric objects, never from the code under test.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import REGISTRY, generate_latest
from vllm import SamplingParams

from rl_contracts.metrics import (
    SPEC_DECODE_ACCEPTED_PER_POS,
    SPEC_DECODE_NUM_ACCEPTED_TOKENS,
    SPEC_DECODE_NUM_DRAFT_TOKENS,
    SPEC_DECODE_NUM_DRAFTS,
    CounterSnapshot,
    aggregate_spec_decode_counters,
    compute_engine_step_metrics,
    compute_spec_decode_metrics,
)

pytestmark = pytest.mark.vllm

NUM_SPECULATIVE_TOKENS = 2
CLI = Path(sys.executable).with_name("rl-contracts")
REPETITIVE = ["1 2 3 1 2 3 1 2", "hello world hello world hello", "the fox the fox the fox"]
_WORDS = ["the", "fox", "hello", "world", "1", "2", "3", "draft", "accept"]
prompts_strategy = st.lists(
    st.one_of(
        st.lists(st.sampled_from(_WORDS), min_size=2, max_size=8).map(" ".join),
        st.lists(st.integers(8, 263), min_size=2, max_size=12).map(lambda ids: {"prompt_token_ids": ids * 2}),
        st.sampled_from(REPETITIVE),
    ),
    min_size=1,
    max_size=4,
)


def scalar(snapshot: CounterSnapshot, key: str) -> float:
    """A scalar counter of a snapshot (0.0 when absent)."""
    value = snapshot.values.get(key, 0.0)
    assert isinstance(value, float)
    return value


def raw_value(metrics: list[Any], name: str) -> float:
    """The sum of a counter's ``value`` over all label sets, read straight from vLLM's metric objects."""
    return float(sum(metric.value for metric in metrics if metric.name == name))


def raw_histogram(metrics: list[Any], name: str) -> tuple[float, float]:
    """``(count, sum)`` of a histogram over all label sets."""
    found = [metric for metric in metrics if metric.name == name]
    return float(sum(metric.count for metric in found)), float(sum(metric.sum for metric in found))


def raw_per_position(metrics: list[Any]) -> list[float]:
    values: list[float] = [0.0] * NUM_SPECULATIVE_TOKENS
    for metric in metrics:
        if metric.name == SPEC_DECODE_ACCEPTED_PER_POS:
            for position, value in enumerate(metric.values):
                values[position] += value
    return values


def check_engine_step(
    step: dict[str, float], prompt_lengths: list[int], generated: list[int], ok: int
) -> None:
    """Step metrics equal the tokens and requests actually produced (``ok`` finished with stop or length)."""
    requests = len(prompt_lengths)
    assert step == pytest.approx(
        {
            "vllm/prompt_tokens": float(sum(prompt_lengths)),
            "vllm/generation_tokens": float(sum(generated)),
            "vllm/prompt_length_mean": sum(prompt_lengths) / requests,
            "vllm/generation_length_mean": sum(generated) / requests,
            "vllm/generations_ok": float(ok),
            "vllm/generations_failed": float(requests - ok),
        },
        rel=1e-9,
    )
    assert list(step) == [
        "vllm/prompt_tokens",
        "vllm/generation_tokens",
        "vllm/prompt_length_mean",
        "vllm/generation_length_mean",
        "vllm/generations_ok",
        "vllm/generations_failed",
    ]
    assert all(type(value) is float for value in step.values())


@settings(max_examples=8, deadline=None)
@given(prompts=prompts_strategy, max_tokens=st.integers(1, 24))
def test_engine_and_spec_decode_metrics_from_get_metrics(
    spec_llm: Any, prompts: list[Any], max_tokens: int
) -> None:
    """Counter snapshots around a real speculative generate give the produced counts and the acceptance identity."""
    before = spec_llm.get_metrics()
    outputs = spec_llm.generate(
        prompts, SamplingParams(max_tokens=max_tokens, temperature=0.0), use_tqdm=False
    )
    after = spec_llm.get_metrics()

    start_snapshot = CounterSnapshot.from_vllm_metrics(before)
    end_snapshot = CounterSnapshot.from_vllm_metrics(after)
    for name in ("vllm:prompt_tokens", "vllm:generation_tokens", SPEC_DECODE_NUM_DRAFTS):
        assert end_snapshot.values[name] == raw_value(after, name)
    assert (
        end_snapshot.values["vllm:request_prompt_tokens|count"]
        == raw_histogram(after, "vllm:request_prompt_tokens")[0]
    )
    assert end_snapshot.values[SPEC_DECODE_ACCEPTED_PER_POS] == tuple(raw_per_position(after))
    assert CounterSnapshot.from_worker_dict(end_snapshot.to_worker_dict()) == end_snapshot

    start = aggregate_spec_decode_counters([start_snapshot])
    end = aggregate_spec_decode_counters([end_snapshot])
    prompt_lengths = [len(output.prompt_token_ids) for output in outputs]
    generated = [len(output.outputs[0].token_ids) for output in outputs]
    finished_ok = sum(output.outputs[0].finish_reason in ("stop", "length") for output in outputs)
    check_engine_step(compute_engine_step_metrics(start, end), prompt_lengths, generated, finished_ok)

    drafts = raw_value(after, SPEC_DECODE_NUM_DRAFTS) - raw_value(before, SPEC_DECODE_NUM_DRAFTS)
    draft_tokens = raw_value(after, SPEC_DECODE_NUM_DRAFT_TOKENS) - raw_value(
        before, SPEC_DECODE_NUM_DRAFT_TOKENS
    )
    accepted = raw_value(after, SPEC_DECODE_NUM_ACCEPTED_TOKENS) - raw_value(
        before, SPEC_DECODE_NUM_ACCEPTED_TOKENS
    )
    per_position = [b - a for a, b in zip(raw_per_position(before), raw_per_position(after), strict=True)]
    assert sum(per_position) == accepted
    assert accepted <= draft_tokens <= NUM_SPECULATIVE_TOKENS * drafts

    spec = compute_spec_decode_metrics(start, end)
    assert spec["vllm/spec_num_drafts"] == drafts
    assert spec["vllm/spec_num_draft_tokens"] == draft_tokens
    assert spec["vllm/spec_num_accepted_tokens"] == accepted
    for position, count in enumerate(per_position, start=1):
        assert spec[f"vllm/{SPEC_DECODE_ACCEPTED_PER_POS}-{position}"] == count
    if drafts > 0:
        rates = [spec[f"vllm/spec_acceptance_rate-pos-{k}"] for k in range(1, NUM_SPECULATIVE_TOKENS + 1)]
        assert spec["vllm/spec_acceptance_length"] == pytest.approx(1 + accepted / drafts, rel=1e-9)
        assert spec["vllm/spec_acceptance_length"] == pytest.approx(1 + sum(rates), rel=1e-9)
        assert spec["vllm/spec_acceptance_rate"] == pytest.approx(accepted / draft_tokens, rel=1e-9)
    else:
        assert spec["vllm/spec_acceptance_length"] == 1.0
        assert spec["vllm/spec_acceptance_rate"] == 0.0
        assert not any(key.startswith("vllm/spec_acceptance_rate-pos-") for key in spec)


def test_repetitive_prompts_accept_drafts(spec_llm: Any) -> None:
    """The n-gram drafter really proposes and the target really accepts, so the identity is not vacuous."""
    before = CounterSnapshot.from_vllm_metrics(spec_llm.get_metrics())
    spec_llm.generate(REPETITIVE, SamplingParams(max_tokens=16, temperature=0.0), use_tqdm=False)
    after = CounterSnapshot.from_vllm_metrics(spec_llm.get_metrics())
    spec = compute_spec_decode_metrics(
        aggregate_spec_decode_counters([before]), aggregate_spec_decode_counters([after])
    )
    assert spec["vllm/spec_num_drafts"] > 0
    assert spec["vllm/spec_num_accepted_tokens"] > 0
    rates = [spec[f"vllm/spec_acceptance_rate-pos-{k}"] for k in range(1, NUM_SPECULATIVE_TOKENS + 1)]
    assert spec["vllm/spec_acceptance_length"] == pytest.approx(1 + sum(rates), rel=1e-9)
    assert 1.0 < spec["vllm/spec_acceptance_length"] <= 1 + NUM_SPECULATIVE_TOKENS


def test_prometheus_text_and_metric_objects_agree(spec_llm: Any) -> None:
    """The registry's Prometheus text and ``get_metrics()`` give the same snapshot; stop and length are both counted."""
    before = CounterSnapshot.from_vllm_metrics(spec_llm.get_metrics())
    outputs = spec_llm.generate(
        ["stop here", "run to the length limit"],
        [
            SamplingParams(max_tokens=6, temperature=0.0, stop_token_ids=list(range(400))),
            SamplingParams(max_tokens=3, temperature=0.0),
        ],
        use_tqdm=False,
    )
    from_objects = CounterSnapshot.from_vllm_metrics(spec_llm.get_metrics())
    from_text = CounterSnapshot.from_prometheus_text(generate_latest(REGISTRY).decode())
    assert from_text == from_objects
    assert [output.outputs[0].finish_reason for output in outputs] == ["stop", "length"]
    for reason in ("stop", "length"):
        key = f"vllm:request_success|finished_reason={reason}"
        assert scalar(from_objects, key) == scalar(before, key) + 1


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as response:
        body: bytes = response.read()
    return body.decode()


def _chat(server: Any, n: int) -> dict[str, Any]:
    body = {
        "model": "tiny",
        "messages": [{"role": "user", "content": "count the engine tokens"}],
        "max_tokens": 5,
        "n": n,
        "return_token_ids": True,
        "seed": 1,
    }
    result: dict[str, Any] = server.chat(body)
    return result


def _expected_from_chat(body: dict[str, Any]) -> tuple[list[int], list[int], int]:
    """Per child request (vLLM counts each of the n choices): prompt lengths, generated lengths, ok count."""
    choices = body["choices"]
    prompt = len(body["prompt_token_ids"])
    assert body["usage"]["prompt_tokens"] == prompt
    generated = [len(choice["token_ids"]) for choice in choices]
    assert body["usage"]["completion_tokens"] == sum(generated)
    ok = sum(choice["finish_reason"] in ("stop", "length") for choice in choices)
    return [prompt] * len(choices), generated, ok


def _total(text: str, family: str) -> float:
    """Sum of the ``<family>_total`` samples of a Prometheus page, read with a regular expression."""
    pattern = re.compile(rf"^{re.escape(family)}_total(?:\{{[^}}]*\}})? (\S+)$", re.MULTILINE)
    return sum(float(value) for value in pattern.findall(text))


def test_server_metrics_page_step_metrics(openai_server: Any) -> None:
    """``/metrics`` before and after a real n=2 chat gives that request's tokens and outcomes."""
    before_text = _get(openai_server.url + "/metrics")
    body = _chat(openai_server, n=2)
    after_text = _get(openai_server.url + "/metrics")
    before = CounterSnapshot.from_prometheus_text(before_text)
    after = CounterSnapshot.from_prometheus_text(after_text)
    for family in ("vllm:prompt_tokens", "vllm:generation_tokens"):
        assert after.values[family] == _total(after_text, family)
    prompt_lengths, generated, ok = _expected_from_chat(body)
    step = compute_engine_step_metrics(
        aggregate_spec_decode_counters([before]), aggregate_spec_decode_counters([after])
    )
    check_engine_step(step, prompt_lengths, generated, ok)


def _metrics_cli(url: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(CLI), "metrics", url, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _records(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def test_cli_idle_interval_reports_zero(openai_server: Any) -> None:
    """``rl-contracts metrics URL --count 1 --interval 0.5 --json`` on an idle server prints one all-zero interval."""
    assert CLI.is_file(), f"console script missing at {CLI}"
    process = _metrics_cli(openai_server.url + "/metrics", "--count", "1", "--interval", "0.5", "--json")
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    [record] = _records(stdout)
    assert record["engine"] == {
        "vllm/prompt_tokens": 0.0,
        "vllm/generation_tokens": 0.0,
        "vllm/generations_ok": 0.0,
        "vllm/generations_failed": 0.0,
    }
    assert record["spec_decode"] == {
        "vllm/spec_num_drafts": 0.0,
        "vllm/spec_num_draft_tokens": 0.0,
        "vllm/spec_num_accepted_tokens": 0.0,
        "vllm/spec_acceptance_length": 1.0,
        "vllm/spec_acceptance_rate": 0.0,
    }


def _metrics_requests(server: Any) -> int:
    """How many ``GET /metrics`` the server has answered, from its access log."""
    text: str = server.log_text()
    return text.count('"GET /metrics HTTP/1.1" 200')


def test_cli_interval_counts_a_real_request(openai_server: Any) -> None:
    """A chat request made between the CLI's two scrapes appears in its JSON interval with the request's counts."""
    scrapes = _metrics_requests(openai_server)
    process = _metrics_cli(openai_server.url + "/metrics", "--count", "1", "--interval", "6", "--json")
    try:
        deadline = time.monotonic() + 30
        while _metrics_requests(openai_server) == scrapes:  # wait for the CLI's first scrape
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the CLI never scraped the server"
            time.sleep(0.05)
        body = _chat(openai_server, n=2)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, stderr
    assert _metrics_requests(openai_server) == scrapes + 2, "the request must fall between the two scrapes"
    [record] = _records(stdout)
    prompt_lengths, generated, ok = _expected_from_chat(body)
    check_engine_step(record["engine"], prompt_lengths, generated, ok)
    assert record["spec_decode"]["vllm/spec_num_drafts"] == 0.0
    assert record["interval"] == 1
    assert math.isfinite(record["start"])
    assert record["end"] >= record["start"]


@pytest.mark.parametrize("path", ["/health", "/no-such-page"])
def test_cli_rejects_a_page_that_is_not_metrics(openai_server: Any, path: str) -> None:
    """A non-metrics page of the real server fails with one stderr line and exit status 2."""
    process = _metrics_cli(openai_server.url + path, "--count", "1", "--interval", "0.1", "--json")
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 2
    assert stdout == ""
    assert stderr.startswith("rl-contracts metrics: error:")
    assert stderr.count("\n") == 1
