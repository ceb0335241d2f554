"""The drop-in facade keeps every name and call signature of the reference module (SPEC §0.8)."""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from rl_contracts import chat, config, metrics, multimodal, prompts, refit, routed_experts, vllm_utils

SEED = Path(__file__).parent / "data" / "nemo_rl_vllm_utils_api.txt"
PREFIX = "nemo_rl.models.generation.vllm.utils."

# Trailing keyword-only parameters rl_contracts adds (SPEC §0.8); every reference call stays valid.
ADDED_PARAMETERS = {
    "pad_and_align_routed_expert_indices": ["routes_start"],
    "attach_routed_experts_to_chat_response_choices": ["routes_start"],
    "validate_rollout_prompt": ["bos_token_id"],
}

IMPLEMENTATIONS = {
    "_format_refit_key_error": refit.format_refit_key_error,
    "assert_reload_refit_config_supported": config.assert_reload_refit_config_supported,
    "is_grouped_moe_expert_weight_name": refit.is_grouped_moe_expert_weight_name,
    "_placeholder_range_bounds": multimodal.placeholder_range_bounds,
    "remap_multimodal_placeholders": multimodal.remap_multimodal_placeholders,
    "_as_routed_experts_tensor": routed_experts.as_routed_experts_tensor,
    "validate_rollout_prompt": prompts.validate_rollout_prompt,
    "format_prompt_for_vllm_generation": prompts.format_prompt_for_vllm_generation,
    "pad_and_align_routed_expert_indices": routed_experts.pad_and_align_routed_expert_indices,
    "attach_routed_experts_to_chat_response_choices": chat.attach_routed_experts_to_chat_response_choices,
    "attach_token_information_to_chat_response_choices": chat.attach_token_information_to_chat_response_choices,
    "model_dump_chat_response_with_dynamic_message_fields": (
        chat.model_dump_chat_response_with_dynamic_message_fields
    ),
    "encode_counter_key": metrics.encode_counter_key,
    "_is_kept": metrics.is_kept,
    "aggregate_spec_decode_counters": metrics.aggregate_spec_decode_counters,
    "_first_delta": metrics.first_delta,
    "_mean_from_histogram": metrics.mean_from_histogram,
    "compute_engine_step_metrics": metrics.compute_engine_step_metrics,
    "compute_spec_decode_metrics": metrics.compute_spec_decode_metrics,
    "resolve_generation_worker_cls": config.resolve_generation_worker_cls,
}


@dataclass(frozen=True)
class SeedParam:
    name: str
    kind: inspect._ParameterKind
    default: str | None  # source text of the default, None when required


def _split_top_level(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in text:
        depth += char in "([{"
        depth -= char in ")]}"
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    if current.strip():
        parts.append(current.strip())
    return parts


def _seed_signatures() -> dict[str, list[SeedParam]]:
    """Parse `name(params) →` entries of the seed listing into parameter lists."""
    text = SEED.read_text().replace("\n", " ")
    found: dict[str, list[SeedParam]] = {}
    for match in re.finditer(re.escape(PREFIX) + r"(\w+)\((.*?)\)\s*→", text):
        name, raw = match.group(1), match.group(2)
        if name in found:
            continue
        params: list[SeedParam] = []
        kind: inspect._ParameterKind = inspect.Parameter.POSITIONAL_OR_KEYWORD
        for part in _split_top_level(raw):
            if part == "*":
                kind = inspect.Parameter.KEYWORD_ONLY
                continue
            head, _, default = part.partition("=")
            params.append(SeedParam(head.split(":")[0].strip(), kind, default.strip() or None))
        found[name] = params
    return found


SEED_SIGNATURES = _seed_signatures()
SEED_DATA = ["R3_MISSING_ROUTE_SENTINEL", "VLLM_LOGPROB_FLOOR", "G_ROUTED_EXPERTS_RANGE_CHECKED"]
SEED_DATA += ["_GROUPED_MOE_EXPERT_WEIGHT_SUFFIXES", "COUNTER_KEY_SEP", "HISTOGRAM_SUM_PART"]
SEED_DATA += ["HISTOGRAM_COUNT_PART", "_KEPT_COUNTER_NAMES", "GENERATION_WORKER_OVERRIDES"]


def test_seed_listing_parses_to_twenty_functions() -> None:
    """The parser finds every function of the seed listing (guards the signature test itself)."""
    assert set(SEED_SIGNATURES) == set(IMPLEMENTATIONS)


def test_all_lists_exactly_the_reference_names() -> None:
    """__all__ holds the 29 names of the reference module."""
    assert sorted(vllm_utils.__all__) == sorted([*SEED_SIGNATURES, *SEED_DATA])
    assert len(vllm_utils.__all__) == 29


@pytest.mark.parametrize("name", sorted(IMPLEMENTATIONS))
def test_facade_binds_the_implementation_object(name: str) -> None:
    """Each facade function is the implementation object itself."""
    assert getattr(vllm_utils, name) is IMPLEMENTATIONS[name]


def _render_default(value: object) -> str:
    if value is routed_experts.ROUTED_EXPERTS_FALLBACK_DTYPE:
        return "ROUTED_EXPERTS_FALLBACK_DTYPE"
    return repr(value)


@pytest.mark.parametrize("name", sorted(SEED_SIGNATURES))
def test_signature_matches_the_seed(name: str) -> None:
    """Parameter names, kinds, order and defaults equal the reference's, plus only the documented additions."""
    actual = list(inspect.signature(getattr(vllm_utils, name)).parameters.values())
    expected = SEED_SIGNATURES[name]
    added = ADDED_PARAMETERS.get(name, [])
    assert [p.name for p in actual] == [p.name for p in expected] + added
    for param, seed in zip(actual, expected, strict=False):
        assert param.kind == seed.kind, param.name
        if seed.default is None:
            assert param.default is inspect.Parameter.empty, param.name
        else:
            assert _render_default(param.default) == seed.default, param.name
    for param in actual[len(expected) :]:
        assert param.kind == inspect.Parameter.KEYWORD_ONLY
        assert param.default is not inspect.Parameter.empty


def test_constants_have_the_reference_values() -> None:
    """The data names carry the reference values."""
    assert vllm_utils.R3_MISSING_ROUTE_SENTINEL == -1
    assert vllm_utils.VLLM_LOGPROB_FLOOR == -9999.0
    assert vllm_utils.COUNTER_KEY_SEP == "|"
    assert vllm_utils.HISTOGRAM_SUM_PART == "sum"
    assert vllm_utils.HISTOGRAM_COUNT_PART == "count"
    assert vllm_utils._GROUPED_MOE_EXPERT_WEIGHT_SUFFIXES == (
        "mlp.experts.gate_up_proj",
        "mlp.experts.down_proj",
    )
    assert vllm_utils._KEPT_COUNTER_NAMES[0] == "vllm:prompt_tokens"
    assert dict(vllm_utils.GENERATION_WORKER_OVERRIDES) == dict(config.GENERATION_WORKER_OVERRIDES)


def test_range_checked_flag_reads_through_and_is_assignable(monkeypatch: pytest.MonkeyPatch) -> None:
    """The flag shows the implementation's current value; assigning it on the facade never disables checks."""

    def flag() -> object:
        return vllm_utils.G_ROUTED_EXPERTS_RANGE_CHECKED

    monkeypatch.setattr(routed_experts, "G_ROUTED_EXPERTS_RANGE_CHECKED", False)
    assert flag() is False
    routed_experts.as_routed_experts_tensor([[[1]]], device="cpu", dtype=torch.int8)
    assert flag() is True
    assert "G_ROUTED_EXPERTS_RANGE_CHECKED" in dir(vllm_utils)
    monkeypatch.setattr(routed_experts, "G_ROUTED_EXPERTS_RANGE_CHECKED", False)
    monkeypatch.setattr(vllm_utils, "G_ROUTED_EXPERTS_RANGE_CHECKED", True, raising=False)
    assert flag() is True
    with pytest.raises(ValueError, match="exceeds the resolved carry dtype"):
        vllm_utils._as_routed_experts_tensor([[[200]]], device="cpu", dtype=torch.int8)


def test_unknown_module_attribute_raises_attribute_error_naming_it() -> None:
    """Reading an unknown attribute of the module raises AttributeError with the standard module message."""
    with pytest.raises(AttributeError) as caught:
        _ = vllm_utils.no_such_name
    assert str(caught.value) == "module 'rl_contracts.vllm_utils' has no attribute 'no_such_name'"
