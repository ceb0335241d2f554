"""Every public strategy of ``rl_contracts.testing.strategies`` generates what its docstring says.

A strategy that claims valid inputs must only produce inputs its entry point accepts; one that claims broken
inputs must only produce inputs it rejects, with the error the docstring names; one that claims a mix must
produce both.  Each check draws a fixed, derandomized sample (:func:`_outcomes`), so "both occur" is stable.
"""

from __future__ import annotations

import copy
import inspect
import json
import math
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any, TypeVar

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from rl_contracts.chat import (
    attach_routed_experts_to_chat_response_choices,
    attach_token_information_to_chat_response_choices,
    normalize_tool_call_arguments,
)
from rl_contracts.codec import decode_routed_experts, encode_routed_experts
from rl_contracts.config import (
    VllmConfig,
    assert_reload_refit_config_supported,
    load_recipe,
    normalize_vllm_refit_config,
)
from rl_contracts.config.rules.preflight import PreflightOptions, preflight
from rl_contracts.errors import (
    ChatResponseContractError,
    ConfigContractError,
    ContractError,
    ContractTypeError,
    RolloutBatchError,
    RoutedExpertsError,
    RouteStitchError,
    SpliceError,
    UnsupportedConfigError,
    WeightVersionError,
)
from rl_contracts.logprobs import logprob_mismatch
from rl_contracts.metrics import (
    CounterSnapshot,
    aggregate_spec_decode_counters,
    compute_engine_step_metrics,
    is_kept,
    per_engine_delta,
)
from rl_contracts.multimodal import placeholder_range_bounds, remap_multimodal_placeholders
from rl_contracts.prompts import format_prompt_for_vllm_generation, validate_rollout_prompt
from rl_contracts.rollouts import rollout_batch
from rl_contracts.routed_experts import (
    as_routed_experts_tensor,
    pad_and_align_routed_expert_indices,
    routing_agreement,
    stitch_turn_routes,
)
from rl_contracts.splice import (
    check_turn_tokens,
    resolve_terminator_token_ids,
    splice_prefix_tokens,
    turn_trajectory,
)
from rl_contracts.testing import strategies as strategies_module
from rl_contracts.testing.strategies import (
    BASE_RECIPE,
    BREAKABLE_RULES,
    CROSS_FIELD_RULES,
    HOSTILE_KINDS,
    LOGPROB_MALFORMATIONS,
    MALFORMATIONS,
    MEDIA_TOKENS,
    ROLLOUT_FAULTS,
    ROLLOUT_LABELS,
    SPELLINGS,
    TERMINATOR,
    TEXT_TOKENS,
    TITO_TEMPLATES,
    TOKEN_CONTAINER_KINDS,
    BrokenRolloutGeneration,
    EngineFleetStep,
    HostileRecipe,
    RolloutGeneration,
    Spelling,
    TitoConversation,
    TurnRouteCase,
    aggregated_counter_pairs,
    alignment_cases,
    as_token_container,
    broken_recipes,
    broken_rollout_generations,
    broken_rule_vllm_configs,
    carry_dtypes,
    chat_exchanges,
    control_key_recipes,
    counter_keys,
    counter_snapshots,
    counter_values,
    deep_recipes,
    diamond_recipes,
    engine_fleet_steps,
    envelope_tensors,
    extreme_number_recipes,
    generation_batches,
    hostile_chat_exchanges,
    hostile_generation_batches,
    hostile_logprobs,
    hostile_placeholder_maps,
    hostile_placeholder_ranges,
    hostile_recipes,
    hostile_route_arguments,
    hostile_route_values,
    hostile_routed_chat_exchanges,
    hostile_splices,
    hostile_token_ids,
    hostile_tool_call_histories,
    interpolation_recipes,
    json_values,
    logprob_batches,
    malformed_logprob_batches,
    malformed_span_lists,
    media_prompts,
    minimal_vllm_generation,
    model_prefixes,
    planted_bad_vllm_configs,
    prometheus_pages,
    range_factories,
    reload_refit_cases,
    render_prometheus_text,
    rollout_generations,
    rollout_prompt_pairs,
    route_arrays,
    route_counts,
    route_pairs,
    routed_chat_exchanges,
    sampled_logprobs,
    span_forms,
    splice_cases,
    splice_token_inputs,
    terminator_declarations,
    tito_conversations,
    tool_call_histories,
    turn_route_cases,
    unsupported_refit_configs,
    valid_recipes,
    vllm_config_dicts,
    vllm_metric_objects,
    vllm_npy_arrays,
    weight_version_span_lists,
    worker_counters,
)
from rl_contracts.weights import weight_version_spans

T = TypeVar("T")
K = TypeVar("K")


def _outcomes(strategy: st.SearchStrategy[T], classify: Callable[[T], K], examples: int = 60) -> Counter[K]:
    """Classify ``examples`` derandomized draws of ``strategy``; a ``classify`` that raises fails the test."""
    seen: Counter[K] = Counter()

    @settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(value: T) -> None:
        seen[classify(value)] += 1

    collect()
    return seen


def _raised(call: Callable[[], object]) -> str:
    """``"ok"`` when ``call`` returns, else the name of the ``ContractError`` (or ``ValidationError``) it raised."""
    try:
        call()
    except (ContractError, ValidationError) as error:
        return type(error).__name__
    return "ok"


def _dotted(loc: tuple[str | int, ...]) -> str:
    text = ""
    for item in loc:
        text += f"[{item}]" if isinstance(item, int) else (f".{item}" if text else str(item))
    return text


def _error_locs(config: dict[str, Any]) -> list[tuple[str | int, ...]]:
    with pytest.raises(ValidationError) as info:
        VllmConfig.model_validate(config)
    return [tuple(line["loc"]) for line in info.value.errors()]


# --- every strategy is documented and tested -------------------------------------------------------------------


def test_every_exported_strategy_has_a_docstring() -> None:
    """Each public function and class of the strategies package says what it generates."""
    undocumented = [
        name
        for name in strategies_module.__all__
        if (
            inspect.isfunction(getattr(strategies_module, name))
            or inspect.isclass(getattr(strategies_module, name))
        )
        and not inspect.getdoc(getattr(strategies_module, name))
    ]
    assert undocumented == []


def test_every_exported_strategy_is_checked_here() -> None:
    """Every exported function of the strategies package is named in this module (a new one needs a check)."""
    source = inspect.getsource(inspect.getmodule(test_every_exported_strategy_is_checked_here))  # type: ignore[arg-type]
    functions = [
        name for name in strategies_module.__all__ if inspect.isfunction(getattr(strategies_module, name))
    ]
    assert [name for name in functions if source.count(name) < 2] == []


# --- config ----------------------------------------------------------------------------------------------------


def test_vllm_config_dicts_are_all_valid() -> None:
    """Every generated section validates as ``VllmConfig`` and is JSON-compatible."""
    seen = _outcomes(
        vllm_config_dicts(),
        lambda c: (_raised(lambda: VllmConfig.model_validate(c)), json.loads(json.dumps(c)) == c),
    )
    assert set(seen) == {("ok", True)}


@pytest.mark.parametrize("rule", CROSS_FIELD_RULES)
def test_broken_rule_vllm_configs_break_exactly_the_named_rule(rule: str) -> None:
    """Restricted to one rule, each section is rejected with exactly one error, at its ``loc``."""
    seen = _outcomes(
        broken_rule_vllm_configs(rules=(rule,)),
        lambda b: (b.rule, _error_locs(b.config) == [b.loc]),
        examples=12,
    )
    assert set(seen) == {(rule, True)}


def test_broken_rule_vllm_configs_draws_several_rules_by_default() -> None:
    """By default the broken rule is drawn among C1–C11; an unknown code is a ValueError."""
    assert len(_outcomes(broken_rule_vllm_configs(), lambda b: b.rule)) >= 5
    with pytest.raises(ValueError, match="C12"):
        broken_rule_vllm_configs(rules=("C12",))


def test_planted_bad_vllm_configs_are_rejected_at_their_loc() -> None:
    """Every planted defect is a validation error at the reported ``loc``; field and rule plants both occur."""
    seen = _outcomes(
        planted_bad_vllm_configs(), lambda p: (p.loc in _error_locs(p.config), p.loc[0]), examples=100
    )
    assert {ok for ok, _ in seen} == {True}
    assert len({first for _, first in seen}) > 5


def test_unsupported_refit_configs_are_rejected_at_their_path() -> None:
    """``normalize_vllm_refit_config`` rejects every generated mapping, with ``.path`` the dotted ``loc``."""

    def path(case: Any) -> bool:
        with pytest.raises(ConfigContractError) as info:
            normalize_vllm_refit_config(case.config)
        return bool(info.value.path == _dotted(case.loc))

    seen = _outcomes(unsupported_refit_configs(), lambda case: (path(case), case.description), examples=100)
    assert {ok for ok, _ in seen} == {True}
    assert len(seen) >= 6


def test_reload_refit_cases_cover_the_supported_and_the_rejected_combinations() -> None:
    """Every section is valid; reload refit rejects it at ``.path``, or accepts it when ``path`` is None; both occur."""

    def outcome(case: Any) -> str:
        VllmConfig.model_validate(case.config)
        if case.path is None:
            assert_reload_refit_config_supported(case.config)
            return "accepted"
        with pytest.raises(UnsupportedConfigError) as info:
            assert_reload_refit_config_supported(case.config)
        assert info.value.path == case.path
        return "rejected"

    assert set(_outcomes(reload_refit_cases(), outcome, examples=80)) == {"accepted", "rejected"}


def test_json_values_round_trip_through_json() -> None:
    """Every value is JSON-representable as it is; containers and scalars both occur."""
    seen = _outcomes(
        json_values(), lambda v: (json.loads(json.dumps(v, allow_nan=False)) == v, type(v).__name__)
    )
    assert {ok for ok, _ in seen} == {True}
    assert {"dict", "list"} <= {kind for _, kind in seen}


def test_minimal_vllm_generation_is_valid_and_fresh() -> None:
    """The minimal section validates, applies overrides, and never shares containers between calls."""
    first, second = minimal_vllm_generation(top_k=50), minimal_vllm_generation()
    assert VllmConfig.model_validate(first).top_k == 50
    first["vllm_cfg"]["max_model_len"] = 1
    assert second["vllm_cfg"]["max_model_len"] != 1


# --- chat ------------------------------------------------------------------------------------------------------


def _one_token_exchange(logprob: object) -> tuple[SimpleNamespace, SimpleNamespace]:
    message = SimpleNamespace(role="assistant", content="x")
    response = SimpleNamespace(choices=[SimpleNamespace(index=0, message=message, logprobs=None)])
    output = SimpleNamespace(index=0, token_ids=[5], logprobs=[{5: SimpleNamespace(logprob=logprob, rank=1)}])
    return response, SimpleNamespace(request_id="r", prompt_token_ids=[1, 2], outputs=[output])


def test_sampled_logprobs_are_accepted_and_cover_the_floor() -> None:
    """Every value is accepted as a sampled log-prob; -inf, the floor and values below it all occur."""

    def outcome(value: float) -> tuple[str, str]:
        status = _raised(
            lambda: attach_token_information_to_chat_response_choices(*_one_token_exchange(value))
        )
        kind = (
            "-inf"
            if value == -math.inf
            else ("floor" if value == -9999.0 else ("below" if value < -9999.0 else "above"))
        )
        return status, kind

    seen = _outcomes(sampled_logprobs(), outcome, examples=100)
    assert {status for status, _ in seen} == {"ok"}
    assert {kind for _, kind in seen} == {"-inf", "floor", "below", "above"}


def test_hostile_logprobs_are_all_rejected() -> None:
    """Every value is refused as a sampled log-prob with ``ChatResponseContractError``."""
    seen = _outcomes(
        hostile_logprobs(),
        lambda value: _raised(
            lambda: attach_token_information_to_chat_response_choices(*_one_token_exchange(value))
        ),
    )
    assert set(seen) == {"ChatResponseContractError"}


def test_chat_exchanges_are_accepted_with_and_without_weight_versions() -> None:
    """Token information attaches to every exchange; outputs with and without ``weight_versions`` both occur."""

    def outcome(exchange: tuple[SimpleNamespace, SimpleNamespace]) -> tuple[str, frozenset[bool]]:
        response, request_output = exchange
        spans = frozenset(getattr(o, "weight_versions", None) is not None for o in request_output.outputs)
        return _raised(
            lambda: attach_token_information_to_chat_response_choices(response, request_output)
        ), spans

    seen = _outcomes(chat_exchanges(), outcome)
    assert {status for status, _ in seen} == {"ok"}
    assert {True, False} <= set().union(*(spans for _, spans in seen))


def test_hostile_chat_exchanges_raise_the_documented_error_and_change_nothing() -> None:
    """Each break raises its documented error and leaves the response as it was; many kinds of break occur."""

    def outcome(case: tuple[SimpleNamespace, SimpleNamespace, str]) -> str:
        response, request_output, how = case
        before = copy.deepcopy(response)
        expected: tuple[type[ContractError], ...] = (
            (WeightVersionError, ContractTypeError)
            if how.startswith("weight_versions_")
            else (ChatResponseContractError,)
        )
        with pytest.raises(expected):
            attach_token_information_to_chat_response_choices(response, request_output)
        assert repr(response) == repr(before)
        return how

    assert len(_outcomes(hostile_chat_exchanges(), outcome, examples=150)) >= 15


def test_routed_chat_exchanges_attach_in_both_layouts() -> None:
    """Routes attach to every exchange; the current and the legacy layout both occur."""

    def outcome(case: tuple[SimpleNamespace, SimpleNamespace, int]) -> tuple[str, bool]:
        response, request_output, start = case
        status = _raised(
            lambda: attach_routed_experts_to_chat_response_choices(
                response, request_output, device="cpu", routes_start=start
            )
        )
        return status, hasattr(request_output, "prompt_routed_experts")

    assert set(_outcomes(routed_chat_exchanges(), outcome)) == {("ok", True), ("ok", False)}


def test_hostile_routed_chat_exchanges_are_all_rejected() -> None:
    """Each break raises ``ChatResponseContractError`` or ``RoutedExpertsError`` with the int8 carry dtype."""

    def outcome(case: tuple[SimpleNamespace, SimpleNamespace, int, str]) -> str:
        response, request_output, start, how = case
        with pytest.raises((ChatResponseContractError, RoutedExpertsError)):
            attach_routed_experts_to_chat_response_choices(
                response, request_output, device="cpu", routed_experts_dtype=torch.int8, routes_start=start
            )
        return how

    assert len(_outcomes(hostile_routed_chat_exchanges(), outcome, examples=100)) >= 3


def test_tool_call_histories_are_accepted_with_strings_to_parse_and_values_to_keep() -> None:
    """Every history normalises; JSON-object strings, other strings and non-string arguments all occur."""

    def arguments(messages: list[dict[str, Any]]) -> frozenset[str]:
        kinds = set()
        for message in messages:
            calls = message.get("tool_calls")
            for call in calls if isinstance(calls, list) else []:
                function = call.get("function") if isinstance(call, dict) else None
                if isinstance(function, dict) and "arguments" in function:
                    value = function["arguments"]
                    if isinstance(value, str):
                        try:
                            kinds.add("object" if isinstance(json.loads(value), dict) else "other string")
                        except (ValueError, RecursionError):
                            kinds.add("other string")
                    else:
                        kinds.add("not a string")
        return frozenset(kinds)

    seen = _outcomes(
        tool_call_histories(),
        lambda m: (arguments(m), _raised(lambda: normalize_tool_call_arguments(m))),
        examples=150,
    )
    assert {status for _, status in seen} == {"ok"}
    assert set().union(*(kinds for kinds, _ in seen)) == {"object", "other string", "not a string"}


def test_hostile_tool_call_histories_raise_and_leave_messages_alone() -> None:
    """``before_index_range`` raises ``SpliceError``, every other break ``ContractTypeError``; nothing changes."""

    def outcome(case: tuple[Any, Any, str]) -> str:
        messages, before_index, how = case
        before = repr(messages)
        with pytest.raises(SpliceError if how == "before_index_range" else ContractTypeError):
            normalize_tool_call_arguments(messages, before_index)
        assert repr(messages) == before
        return how

    assert set(_outcomes(hostile_tool_call_histories(), outcome)) == {
        "messages_not_list",
        "message_not_mapping",
        "read_only_function",
        "before_index_type",
        "before_index_range",
    }


# --- metrics ---------------------------------------------------------------------------------------------------


def test_counter_values_are_finite_and_non_negative() -> None:
    """Values are finite and >= 0; whole by default, fractional ones occur with ``integer_valued=False``."""
    whole = _outcomes(counter_values(), lambda v: math.isfinite(v) and v >= 0 and float(v).is_integer())
    fractional = _outcomes(
        counter_values(integer_valued=False), lambda v: (math.isfinite(v) and v >= 0, float(v).is_integer())
    )
    assert set(whole) == {True}
    assert set(fractional) == {(True, True), (True, False)}


def test_counter_keys_are_kept() -> None:
    """Every key is one ``is_kept`` keeps; plain, ``|part`` and ``finished_reason`` keys all occur."""
    seen = _outcomes(counter_keys(), lambda k: (is_kept(k), "finished_reason" in k, "|" in k))
    assert {kept for kept, _, _ in seen} == {True}
    assert {(reason, part) for _, reason, part in seen} >= {(False, False), (True, True), (False, True)}


def test_counter_snapshots_are_snapshots_of_kept_values() -> None:
    """Every draw is a ``CounterSnapshot`` holding only kept keys."""
    seen = _outcomes(
        counter_snapshots(), lambda s: isinstance(s, CounterSnapshot) and all(map(is_kept, s.values))
    )
    assert set(seen) == {True}


def test_worker_counters_aggregate_and_hold_unkept_junk() -> None:
    """Every worker dict aggregates; unkept keys occur by default and never with ``with_unkept=False``."""
    junk = _outcomes(
        worker_counters(),
        lambda w: (_raised(lambda: aggregate_spec_decode_counters([w])), any(not is_kept(k) for k in w)),
    )
    clean = _outcomes(worker_counters(with_unkept=False), lambda w: all(map(is_kept, w)))
    assert set(junk) == {("ok", True), ("ok", False)}
    assert set(clean) == {True}


def test_aggregated_counter_pairs_compute_with_growth_and_resets() -> None:
    """Step metrics compute for every pair; growing, reset and one-sided series all occur."""

    def outcome(pair: tuple[Any, Any]) -> frozenset[str]:
        start, end = pair
        compute_engine_step_metrics(start, end)
        kinds = {"only start" for k in start if k not in end} | {"only end" for k in end if k not in start}
        kinds |= {"reset" if end[k] < start[k] else "grown or same" for k in start if k in end}
        return frozenset(kinds)

    seen = _outcomes(aggregated_counter_pairs(), outcome, examples=100)
    assert set().union(*seen) == {"only start", "only end", "reset", "grown or same"}


def test_rollout_generations_are_accepted_with_what_they_expect() -> None:
    """Every generate call passes ``rollout_batch`` and gives its expected rows; empty batches, several choices,
    empty choices and several weight versions in one choice all occur."""

    def outcome(generation: RolloutGeneration) -> frozenset[str]:
        batch = rollout_batch(
            generation.prompts,
            generation.request_outputs,
            n=generation.n,
            allowed_versions=ROLLOUT_LABELS,
            allow_mixed_versions=True,
        )
        assert batch.rows.tolist() == [e.row for e in generation.expected]
        kinds = {"empty batch"} if not generation.expected else set()
        kinds |= {"n > 1"} if generation.n > 1 else set()
        kinds |= {"no tokens" for e in generation.expected if not e.generated}
        kinds |= {"versions change" for e in generation.expected if len(set(e.versions)) > 1}
        return frozenset(kinds)

    seen = _outcomes(rollout_generations(), outcome, examples=80)
    assert set().union(*seen) == {"empty batch", "n > 1", "no tokens", "versions change"}


@pytest.mark.parametrize("fault", ROLLOUT_FAULTS)
def test_broken_rollout_generations_fail_at_the_planted_row_and_choice(fault: str) -> None:
    """Restricted to one fault, every draw raises at its row, choice and check; an unknown fault is a ValueError."""

    def outcome(case: BrokenRolloutGeneration) -> tuple[str, bool]:
        generation = case.generation
        try:
            rollout_batch(
                generation.prompts,
                generation.request_outputs,
                n=generation.n,
                allowed_versions=ROLLOUT_LABELS,
                allow_mixed_versions=True,
            )
        except RolloutBatchError as err:
            return case.fault, (err.row, err.choice, err.check) == (case.row, case.choice, case.check)
        return case.fault, False

    seen = _outcomes(broken_rollout_generations(faults=(fault,)), outcome, examples=15)  # type: ignore[arg-type]
    assert set(seen) == {(fault, True)}
    with pytest.raises(ValueError, match="unknown"):
        broken_rollout_generations(faults=("typo",))  # type: ignore[arg-type]


def test_engine_fleet_steps_hold_named_engines_with_and_without_restarts() -> None:
    """Every step's fleets aggregate with their engines; the drawn delta is per_engine_delta's, and steps with and
    without restarted engines both occur (never with ``resets=False``)."""

    def outcome(step: EngineFleetStep) -> tuple[bool, bool]:
        fleet = aggregate_spec_decode_counters(step.start)
        result = per_engine_delta(step.start, step.end)
        return fleet.snapshots is not None and result.delta == step.delta, bool(step.reset)

    assert set(_outcomes(engine_fleet_steps(), outcome)) == {(True, True), (True, False)}
    assert set(_outcomes(engine_fleet_steps(resets=False), outcome, examples=20)) == {(True, False)}


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_render_prometheus_text_parses_to_the_objects_snapshot(spelling: Spelling) -> None:
    """A page rendered in each spelling parses to the snapshot of the metric objects it was rendered from."""

    def outcome(metrics: Any) -> bool:
        page = render_prometheus_text(metrics, spelling=spelling)
        return CounterSnapshot.from_prometheus_text(page) == CounterSnapshot.from_vllm_metrics(metrics)

    assert set(_outcomes(vllm_metric_objects(), outcome, examples=20)) == {True}


def test_vllm_metric_objects_and_prometheus_pages_parse() -> None:
    """Metric objects and rendered pages become snapshots; several engines occur."""
    objects = _outcomes(
        vllm_metric_objects(),
        lambda ms: (
            isinstance(CounterSnapshot.from_vllm_metrics(ms), CounterSnapshot),
            len({getattr(m, "labels", {}).get("engine") for m in ms}) > 1,
        ),
    )
    pages = _outcomes(
        prometheus_pages(),
        lambda page: isinstance(CounterSnapshot.from_prometheus_text(page), CounterSnapshot),
    )
    assert set(objects) == {(True, True), (True, False)}
    assert set(pages) == {True}


# --- prompts ---------------------------------------------------------------------------------------------------


def test_as_token_container_holds_the_same_ids_in_each_kind() -> None:
    """Each container kind holds exactly the given ids."""
    for kind in TOKEN_CONTAINER_KINDS:
        container = as_token_container([3, 1, 2], kind)
        assert [int(i) for i in container] == [3, 1, 2]


def test_generation_batches_format_into_one_prompt_per_row() -> None:
    """Every batch formats into ``B`` prompts; batches with and without media both occur."""

    def outcome(data: Any) -> tuple[bool, bool]:
        prompts = format_prompt_for_vllm_generation(data)
        return len(prompts) == len(data["input_lengths"]), any("multi_modal_data" in p for p in prompts)

    assert set(_outcomes(generation_batches(media=True), outcome)) == {(True, True), (True, False)}


def test_hostile_generation_batches_are_all_rejected() -> None:
    """Every broken batch (or argument) raises a ``ContractError``."""
    seen = _outcomes(
        hostile_generation_batches(), lambda case: _raised(lambda: format_prompt_for_vllm_generation(*case))
    )
    assert "ok" not in seen
    assert seen


def test_rollout_prompt_pairs_hold_matches_and_mismatches() -> None:
    """Equal pairs pass ``validate_rollout_prompt`` and every other pair raises; both occur."""
    seen = _outcomes(rollout_prompt_pairs(), lambda pair: _raised(lambda: validate_rollout_prompt(*pair)))
    assert set(seen) == {"ok", "RolloutPromptMismatchError"}


# --- routes ----------------------------------------------------------------------------------------------------


def test_alignment_cases_align_and_cover_missing_and_surplus_rows() -> None:
    """Every case aligns; exact, missing and surplus route counts and every layout occur."""

    def outcome(case: Any) -> tuple[str, str]:
        _, stats = pad_and_align_routed_expert_indices(
            case.request_output,
            case.completion_output,
            valid_length=case.valid_length,
            padded_length=case.padded_length,
            device="cpu",
            routed_experts_dtype=case.dtype,
            routes_start=case.routes_start,
            return_stats=True,
        )
        count = "missing" if stats["missing_routes"] else ("surplus" if stats["surplus_routes"] else "exact")
        return count, case.layout

    seen = _outcomes(alignment_cases(), outcome, examples=150)
    assert {count for count, _ in seen} == {"exact", "missing", "surplus"}
    assert {layout for _, layout in seen} == {"current", "legacy", "prompt_only", "none"}


def test_carry_dtypes_are_the_supported_ones() -> None:
    """The four carry dtypes occur, and int64 only when allowed."""
    assert set(_outcomes(carry_dtypes(), str)) == {"torch.int8", "torch.int16", "torch.int32", "torch.int64"}
    assert "torch.int64" not in _outcomes(carry_dtypes(include_int64=False), str)


def test_envelope_tensors_round_trip_through_the_envelope() -> None:
    """Every tensor survives encode/decode; empty tensors occur."""
    seen = _outcomes(
        envelope_tensors(),
        lambda t: (torch.equal(decode_routed_experts(encode_routed_experts(t), t.dtype), t), t.numel() == 0),
    )
    assert set(seen) == {(True, True), (True, False)}


def test_hostile_route_arguments_hold_valid_and_invalid_calls() -> None:
    """Argument sets are sometimes accepted and sometimes rejected, never with a non-contract error."""
    request = SimpleNamespace(prompt_token_ids=[1, 2, 3])
    completion = SimpleNamespace(token_ids=[4, 5], routed_experts=np.zeros((4, 1, 2), dtype=np.uint8))
    align: Callable[..., object] = (
        pad_and_align_routed_expert_indices  # the arguments are ill-typed on purpose
    )
    seen = _outcomes(
        hostile_route_arguments(),
        lambda kwargs: _raised(lambda: align(request, completion, **kwargs)) == "ok",
        examples=100,
    )
    assert set(seen) == {True, False}


def test_hostile_route_values_are_never_valid_route_arrays() -> None:
    """No value converts to a 3-D ``[S, L, K]`` route tensor under every carry dtype (a bad shape counts)."""

    def refused(value: object) -> bool:
        for dtype in (torch.int8, torch.int16, torch.int32, torch.int64):
            try:
                if as_routed_experts_tensor(value, device="cpu", dtype=dtype).dim() != 3:
                    return True
            except RoutedExpertsError:
                return True
        return False

    assert set(_outcomes(hostile_route_values(), refused)) == {True}


def test_route_arrays_convert_for_every_carry_dtype() -> None:
    """Every default route source converts to int8 and int32 with its ids unchanged; empty arrays occur."""

    def outcome(array: Any) -> tuple[bool, bool]:
        tensors = [
            as_routed_experts_tensor(array.value, device="cpu", dtype=d) for d in (torch.int8, torch.int32)
        ]
        return all(np.array_equal(t.numpy(), array.ids) for t in tensors), tensors[0].numel() == 0

    assert set(_outcomes(route_arrays(), outcome)) == {(True, True), (True, False)}


def test_route_counts_cover_exact_missing_and_surplus() -> None:
    """For ``E = 6`` the counts are >= 0 and below, equal to and above ``E`` all occur."""
    seen = _outcomes(
        route_counts(6, 0),
        lambda r: "neg" if r < 0 else ("below" if r < 6 else ("exact" if r == 6 else "above")),
    )
    assert set(seen) == {"below", "exact", "above"}


def test_vllm_npy_arrays_are_three_dimensional_integer_arrays() -> None:
    """Every array is 3-D with an integer dtype; C and Fortran order both occur."""
    seen = _outcomes(
        vllm_npy_arrays(),
        lambda a: (
            a.ndim == 3 and a.dtype.kind in "iu",
            bool(a.flags.f_contiguous and not a.flags.c_contiguous),
        ),
    )
    assert set(seen) == {(True, True), (True, False)}


# --- splice and placeholders -----------------------------------------------------------------------------------


def test_media_prompts_place_pad_runs_at_their_spans() -> None:
    """Each span covers a run of its modality's pad token; every turn ends with the terminator."""

    def outcome(prompt: Any) -> bool:
        for modality, spans in prompt.spans.items():
            for offset, length in spans:
                pads = {MEDIA_TOKENS[m][1] for m in MEDIA_TOKENS}
                if not set(prompt.token_ids[offset : offset + length]) <= pads:
                    return False
                assert modality in MEDIA_TOKENS
        return bool(prompt.token_ids) and prompt.token_ids[-1] == TERMINATOR

    assert set(_outcomes(media_prompts(), outcome)) == {True}


def test_model_prefixes_end_with_and_without_a_terminator() -> None:
    """Prefixes ending on a terminator and (max_tokens) without one both occur."""
    strategy = media_prompts().flatmap(lambda history: model_prefixes(history))
    seen = _outcomes(strategy, lambda prefix: bool(prefix) and prefix[-1] == TERMINATOR)
    assert set(seen) == {True, False}


def test_range_factories_build_ranges_with_the_given_bounds() -> None:
    """Every factory's range reads back as the ``(offset, length)`` it was built from; several kinds occur."""
    seen = _outcomes(
        range_factories(),
        lambda make: (placeholder_range_bounds(make(3, 4)) == (3, 4), type(make(3, 4)).__name__),
    )
    assert {ok for ok, _ in seen} == {True}
    assert len(seen) >= 2


def test_splice_cases_splice_and_remap() -> None:
    """Every case splices with its terminators and its placeholders remap onto the spliced prompt."""

    def outcome(case: Any) -> bool:
        splice = splice_prefix_tokens(
            model_prefix_token_ids=case.model_prefix_token_ids,
            template_prefix_token_ids=case.template_prefix_token_ids,
            template_token_ids=case.template_token_ids,
            terminator_ids=case.terminators,
        )
        remapped = remap_multimodal_placeholders(
            template_token_ids=case.template_token_ids,
            final_token_ids=splice.token_ids,
            mm_placeholders=case.mm_placeholders,
            splice=splice,
        )
        return {m: len(r) for m, r in remapped.items()} == {
            m: len(r) for m, r in case.mm_placeholders.items()
        }

    assert set(_outcomes(splice_cases(), outcome)) == {True}


def test_splice_token_inputs_always_splice() -> None:
    """Every input splices on :data:`TERMINATOR`."""
    seen = _outcomes(
        splice_token_inputs(),
        lambda inputs: _raised(
            lambda: splice_prefix_tokens(
                model_prefix_token_ids=inputs[0],
                template_prefix_token_ids=inputs[1],
                template_token_ids=inputs[2],
                eos_token_id=TERMINATOR,
            )
        ),
    )
    assert set(seen) == {"ok"}


def test_terminator_declarations_resolve_to_their_set() -> None:
    """Every declaration resolves to its ``terminators``; empty and multi-id sets both occur."""

    def outcome(case: Any) -> str:
        assert resolve_terminator_token_ids(case.tokenizer, case.generation_config) == case.terminators
        return "empty" if not case.terminators else ("one" if len(case.terminators) == 1 else "several")

    assert set(_outcomes(terminator_declarations(), outcome)) == {"empty", "one", "several"}


def test_hostile_placeholder_ranges_hold_valid_and_invalid_ranges() -> None:
    """Some ranges read back and most are refused, always with a ``ContractError``."""
    seen = _outcomes(
        hostile_placeholder_ranges(),
        lambda r: _raised(lambda: placeholder_range_bounds(r)) == "ok",
        examples=100,
    )
    assert set(seen) == {True, False}


def test_hostile_placeholder_maps_are_mostly_refused() -> None:
    """Remapping a hostile map raises a ``ContractError`` for most draws (an empty map is fine)."""
    ids = [*TEXT_TOKENS][:6]
    seen = _outcomes(
        hostile_placeholder_maps(),
        lambda m: _raised(
            lambda: remap_multimodal_placeholders(
                template_token_ids=ids, final_token_ids=ids, mm_placeholders=m
            )
        ),
    )
    assert sum(count for outcome, count in seen.items() if outcome != "ok") > sum(seen.values()) // 2


def test_hostile_token_ids_hold_valid_and_invalid_ids() -> None:
    """Valid id sequences and refused ones both occur."""
    seen = _outcomes(
        hostile_token_ids(), lambda ids: _raised(lambda: validate_rollout_prompt(ids, ids)) == "ok"
    )
    assert set(seen) == {True, False}


def test_hostile_splices_hold_none_and_refused_splices() -> None:
    """``None`` (no splice) and refused splice objects both occur."""
    ids = [*TEXT_TOKENS][:4]
    seen = _outcomes(
        hostile_splices(),
        lambda s: (
            _raised(
                lambda: remap_multimodal_placeholders(
                    template_token_ids=ids, final_token_ids=ids, mm_placeholders={}, splice=s
                )
            )
            == "ok"
        ),
    )
    assert set(seen) == {True, False}


# --- recipes ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("entrypoint", ["grpo", "grpo-gym", "grpo-sc"])
def test_valid_recipes_pass_preflight(entrypoint: Any) -> None:
    """Every recipe is in scope, detected as its entrypoint, and has no error finding."""

    def outcome(recipe: dict[str, Any]) -> tuple[bool, Any, tuple[str, ...]]:
        report = preflight(recipe, PreflightOptions(environ={}))
        errors = tuple(f.code for f in report.findings if f.severity == "error")
        return report.in_scope, report.entrypoint, errors

    assert set(_outcomes(valid_recipes(entrypoint), outcome, examples=8)) == {(True, entrypoint, ())}


def test_the_breakers_are_keyed_by_the_rule_table() -> None:
    """Every recipe breaker is keyed by a preflight error rule of the table, and the breakable and cross-field code
    lists follow the table's order."""
    from rl_contracts.config.rules.preflight import PREFLIGHT_RULES
    from rl_contracts.config.rules.registry import RULES
    from rl_contracts.testing.strategies import recipes

    preflight_errors = [
        rule.code for rule in PREFLIGHT_RULES if rule.family == "P" and rule.severity == "error"
    ]
    assert set(recipes._BREAKERS) <= set(preflight_errors)
    assert list(BREAKABLE_RULES) == [code for code in preflight_errors if code in recipes._BREAKERS]
    assert list(CROSS_FIELD_RULES) == [rule.code for rule in RULES if rule.family == "C"]


@pytest.mark.parametrize("rule", BREAKABLE_RULES)
def test_broken_recipes_break_exactly_their_rule(rule: str) -> None:
    """Every recipe gets an error of ``rule`` and no error of any other rule."""

    def outcome(recipe: dict[str, Any]) -> frozenset[str]:
        report = preflight(recipe, PreflightOptions(environ={}))
        return frozenset(f.code for f in report.findings if f.severity == "error")

    assert set(_outcomes(broken_recipes(rule), outcome, examples=4)) == {frozenset({rule})}


# --- weight versions -------------------------------------------------------------------------------------------


def _output(token_count: int, spans: list[Any]) -> SimpleNamespace:
    return SimpleNamespace(index=0, token_ids=list(range(token_count)), weight_versions=spans)


def test_weight_version_span_lists_are_accepted() -> None:
    """Every list tiles its output; empty outputs and several spans both occur."""

    def outcome(case: Any) -> str:
        assert weight_version_spans(_output(case.token_count, list(case.spans))) == case.spans
        return "empty" if not case.spans else ("one" if len(case.spans) == 1 else "several")

    assert set(_outcomes(weight_version_span_lists(), outcome)) == {"empty", "one", "several"}


def test_malformed_span_lists_are_rejected_at_their_first_bad_span() -> None:
    """Every list raises ``WeightVersionError`` naming ``bad_index``; every malformation occurs."""

    def outcome(case: Any) -> str:
        with pytest.raises(WeightVersionError) as info:
            weight_version_spans(_output(case.token_count, list(case.spans)))
        assert info.value.span_index == case.bad_index
        return str(case.malformation)

    assert set(_outcomes(malformed_span_lists(), outcome, examples=150)) == set(MALFORMATIONS)


def test_span_forms_read_back_as_the_same_spans() -> None:
    """Every form of a span list reads back as the spans it came from; several forms occur."""
    strategy = weight_version_span_lists().flatmap(
        lambda case: st.tuples(st.just(case), span_forms(case.spans))
    )

    def outcome(pair: tuple[Any, list[Any]]) -> frozenset[str]:
        case, forms = pair
        assert weight_version_spans(_output(case.token_count, forms)) == case.spans
        return frozenset(type(form).__name__ for form in forms)

    assert len(set().union(*_outcomes(strategy, outcome))) >= 3


# --- hostile recipes -------------------------------------------------------------------------------------------


def _top(recipe: HostileRecipe) -> str:
    return dict(recipe.files)[recipe.top]


def test_base_recipe_of_the_hostile_recipes_is_valid(tmp_path: Path) -> None:
    """BASE_RECIPE, the parent of every hostile recipe, passes every check (so each finding is the attack's)."""
    path = tmp_path / "base.yaml"
    path.write_text(BASE_RECIPE)
    assert load_recipe(path).status == "valid"


def test_deep_recipes_nest_as_deep_as_drawn() -> None:
    """Each deep recipe's top file holds one flow collection nested at least 100 levels, lists and maps both."""

    def shape(recipe: HostileRecipe) -> tuple[str, bool]:
        text = _top(recipe)
        depth = max(text.count("["), text.count("{a: "))
        return recipe.kind, depth >= 100

    assert set(_outcomes(deep_recipes(max_depth=500), shape, examples=20)) == {("depth", True)}


def test_extreme_number_recipes_hold_extreme_numbers() -> None:
    """Each numbers recipe sets at least one size or factor to a non-finite, huge, negative or zero number."""
    extreme = ("inf", "nan", "0x", "-", "e308", "e-324", str(2**63)[:6], ": 0")

    def has_extreme(recipe: HostileRecipe) -> tuple[str, bool]:
        return recipe.kind, any(marker in _top(recipe) for marker in extreme)

    assert set(_outcomes(extreme_number_recipes(), has_extreme, examples=30)) == {("numbers", True)}


def test_control_key_recipes_hold_quoted_hostile_keys() -> None:
    """Each keys recipe writes its keys as double-quoted YAML scalars, and over many draws they hold control
    characters (as escapes), workflow commands and Unicode digits."""
    texts = _outcomes(control_key_recipes(), lambda recipe: (recipe.kind, _top(recipe)), examples=60)
    assert {kind for kind, _ in texts} == {"keys"}
    joined = "".join(text for _, text in texts)
    assert all(marker in joined for marker in ("\\n::error", "\\u001b", "\\u00b2", '""'))


def test_interpolation_recipes_interpolate() -> None:
    """Each interpolation recipe holds a doubling chain or a resolver call."""

    def interpolates(recipe: HostileRecipe) -> tuple[str, bool]:
        text = _top(recipe)
        return recipe.kind, "${.l" in text or any(f"${{{op}:" in text for op in ("mul", "add", "div", "max"))

    assert set(_outcomes(interpolation_recipes(), interpolates, examples=30)) == {("interpolation", True)}


def test_diamond_recipes_list_each_parent_twice(tmp_path: Path) -> None:
    """Every file of a diamond but the base lists its parent twice, and the files written are the files given."""

    def check(recipe: HostileRecipe) -> bool:
        directory = Path(tempfile.mkdtemp(dir=tmp_path))
        if recipe.write(directory) != directory / recipe.top:
            return False
        for name, text in recipe.files:
            if (directory / name).read_text() != text:
                return False
            if name != "base.yaml":
                first = text.splitlines()[0]
                parent = first.removeprefix("defaults: [").split(",")[0]
                if first != f"defaults: [{parent}, {parent}]":
                    return False
        return True

    assert set(_outcomes(diamond_recipes(max_levels=4), check, examples=10)) == {True}


def test_hostile_recipes_draw_the_kinds_asked_for() -> None:
    """hostile_recipes() draws every class; restricted to some classes it draws only those; no class is an
    error."""
    kinds = _outcomes(hostile_recipes(), lambda recipe: recipe.kind, examples=80)
    assert set(kinds) == set(HOSTILE_KINDS)
    assert set(_outcomes(hostile_recipes(("keys",)), lambda recipe: recipe.kind, examples=10)) == {"keys"}
    with pytest.raises(ValueError, match="kinds"):
        hostile_recipes(())


# --- training-inference agreement (SPEC §9) ----------------------------------------------------------------------


def test_logprob_batches_are_accepted_within_their_agreement() -> None:
    """Every batch is accepted with max |Δ| within its agreement; masks, 1-D inputs and numpy arrays all occur."""

    def outcome(batch: Any) -> tuple[bool, int, str]:
        report = logprob_mismatch(batch.generation, batch.learner, batch.mask)
        assert report.tokens == int(batch.counted.sum())
        if report.abs_diff_max is not None:
            assert report.abs_diff_max <= batch.max_abs_diff + 1e-5
        return batch.mask is None, batch.generation.ndim, batch.container

    seen = set(_outcomes(logprob_batches(), outcome, examples=100))
    assert {masked for masked, _, _ in seen} == {True, False}
    assert {ndim for _, ndim, _ in seen} == {1, 2}
    assert {container for _, _, container in seen} == {"torch", "numpy"}


def test_malformed_logprob_batches_raise_their_error_at_their_position() -> None:
    """Every malformed batch raises the recorded class naming its argument and position; each malformation occurs."""

    def outcome(case: Any) -> str:
        with pytest.raises(case.error) as info:
            logprob_mismatch(case.generation, case.learner, case.mask)
        assert info.value.argument == case.argument
        if case.position is not None:
            assert (info.value.sequence_index, info.value.token_index) == case.position
        return str(case.malformation)

    assert set(_outcomes(malformed_logprob_batches(), outcome, examples=200)) == set(LOGPROB_MALFORMATIONS)


def test_route_pairs_hold_changed_permuted_and_sentinel_rows() -> None:
    """Every pair is accepted; changed, permuted and sentinel rows, masks and both ranks occur."""

    def outcome(pair: Any) -> frozenset[str]:
        result = routing_agreement(pair.engine, pair.learner, mask=pair.mask)
        assert result.pairs + result.sentinel_pairs == int(pair.counted.sum()) * int(pair.learner.shape[-2])
        kinds = {name for name in ("changed", "permuted", "sentinel") if getattr(pair, name)}
        return frozenset({*kinds, f"{pair.learner.ndim}-D", "masked" if pair.mask is not None else "all"})

    seen = set().union(*_outcomes(route_pairs(), outcome, examples=100))
    assert {"changed", "permuted", "sentinel", "3-D", "4-D", "masked", "all"} <= seen


# --- multi-turn ------------------------------------------------------------------------------------------------


def test_tito_conversations_pass_the_turn_check_across_templates_and_stops() -> None:
    """Every conversation's trajectory passes ``check_turn_tokens``; every template, tool turns, cut turns and
    turns spelled in pieces occur."""

    def outcome(case: TitoConversation) -> frozenset[str]:
        ids, spans = turn_trajectory(case.turns)
        check_turn_tokens(case.tokenizer, case.messages, ids, spans)
        kinds = {case.tokenizer.chat_template or ""}
        kinds |= {"tool" for m in case.messages if m["role"] == "tool"}
        kinds |= {"cut" for _, generated in case.turns if not generated or generated[-1] != 2}
        return frozenset(kinds)

    seen = set().union(*_outcomes(tito_conversations(), outcome, examples=30))
    assert {"tool", "cut", *TITO_TEMPLATES} <= seen


def test_turn_route_cases_stitch_or_name_the_first_uncovered_token() -> None:
    """Covered cases stitch to their expected routes; others raise at ``uncovered``; both occur."""

    def outcome(case: TurnRouteCase) -> str:
        if case.uncovered is not None:
            with pytest.raises(RouteStitchError) as info:
                stitch_turn_routes(case.turns, device="cpu", routes_start=case.routes_start)
            assert info.value.position == case.uncovered
            return "refused"
        routes = stitch_turn_routes(case.turns, device="cpu", routes_start=case.routes_start)
        assert routes[: case.expected.shape[0]].tolist() == case.expected.tolist()
        return "stitched"

    assert set(_outcomes(turn_route_cases(), outcome)) == {"stitched", "refused"}


# --- whole recipes ----------------------------------------------------------------------------------------------


def _whole_recipe_findings(algorithm: Any, recipe: dict[str, Any]) -> set[tuple[str, str]]:
    """(code, dotted path) of every whole-recipe finding of ``recipe`` read as ``algorithm``'s."""
    from rl_contracts.config.rules.recipe_arithmetic import arithmetic_findings
    from rl_contracts.config.rules.recipe_keys import recipe_key_findings
    from rl_contracts.config.rules.recipe_schema import schema_findings

    found = [
        *schema_findings(recipe, algorithm),
        *recipe_key_findings(recipe, algorithm),
        *arithmetic_findings(recipe, algorithm),
    ]
    return {(finding.code, finding.path) for finding in found}


def test_whole_recipes_and_the_minimal_whole_recipe_pass_every_whole_recipe_check() -> None:
    """Drawn recipes (``whole_recipes``) and ``minimal_whole_recipe`` of every algorithm have no finding."""
    from rl_contracts.config.section.recipe import ALGORITHMS

    seen = _outcomes(strategies_module.whole_recipes(), lambda drawn: len(_whole_recipe_findings(*drawn)))
    assert set(seen) == {0}
    for algorithm in ALGORITHMS:
        assert _whole_recipe_findings(algorithm, strategies_module.minimal_whole_recipe(algorithm)) == set()


def test_broken_whole_recipes_are_reported_with_their_code_at_their_path() -> None:
    """Each planted finding of ``broken_whole_recipes`` is reported with its code at its path, and nothing else but
    what the plant implies (``also``); every code is drawn."""
    seen = _outcomes(
        strategies_module.broken_whole_recipes(),
        lambda planted: (
            planted.code,
            _whole_recipe_findings(planted.algorithm, planted.recipe)
            == {(planted.code, planted.path), *planted.also},
        ),
        examples=200,
    )
    assert {reported for _, reported in seen} == {True}
    assert {code for code, _ in seen} == set(strategies_module.PLANTED_CODES)


@pytest.mark.parametrize("algorithm", ["grpo", "sft"])
def test_broken_whole_recipes_plant_placement_and_batch_codes(algorithm: Any) -> None:
    """K3 and P33-P36 are planted and reported alone at their path, on recipes drawn for GRPO (every one of them)
    and SFT (all but P33, which needs a step of prompts and generations)."""
    seen = _outcomes(
        strategies_module.broken_whole_recipes(algorithm),
        lambda planted: (
            planted.code,
            _whole_recipe_findings(planted.algorithm, planted.recipe) == {(planted.code, planted.path)},
        ),
        examples=150,
    )
    wanted = {"K3", "P33", "P34", "P35", "P36"} - ({"P33"} if algorithm == "sft" else set())
    assert {code for code, reported in seen if reported} >= wanted
    assert {code for code, reported in seen if not reported} <= {"K1"}  # a typo of a required key: also V8
    assert "P33" not in {code for code, _ in seen} or algorithm == "grpo"


def test_the_planted_codes_follow_the_rule_table() -> None:
    """Every code ``broken_whole_recipes`` plants is a rule of the table, listed in the table's order, and every
    whole-recipe error rule (V8, V9, K1, K3, P32-P36) and K2 is among them."""
    from rl_contracts.config.rules.registry import RULES

    order = [rule.code for rule in RULES]
    planted = list(strategies_module.PLANTED_CODES)
    assert planted == [code for code in order if code in planted]
    assert {"V8", "V9", "K1", "K2", "K3", "P32", "P33", "P34", "P35", "P36"} <= set(planted)
