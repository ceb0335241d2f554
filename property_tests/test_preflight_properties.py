"""Properties of preflight over generated whole recipes (rl_contracts.testing.strategies.recipes).

Invariants: a recipe consistent by construction gets no error; breaking exactly one rule makes exactly that rule
report an error; no document, however malformed, makes preflight raise, and every message stays bounded.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rl_contracts.config.rules.preflight import PREFLIGHT_CODES, PreflightOptions, PreflightReport, preflight
from rl_contracts.testing.strategies import BREAKABLE_RULES, broken_recipes, json_values, valid_recipes

NO_ENV = PreflightOptions(environ={})
ALL_INPUTS = [
    NO_ENV,
    PreflightOptions(environ={}, vllm_version=(0, 30)),
    PreflightOptions(
        environ={},
        vllm_version=(0, 32),
        gpu_capability=(9, 0),
        model_config={"architectures": ["Qwen3MoeForCausalLM"], "num_experts": 128},
    ),
]
KNOWN_CODES = {code.code for code in PREFLIGHT_CODES}


def _errors(report: PreflightReport) -> list[tuple[str, str, str]]:
    return [(f.code, f.path, f.message) for f in report.errors]


@given(valid_recipes())
def test_valid_recipes_have_no_error(document: dict[str, Any]) -> None:
    """A recipe consistent by construction gets no error finding, whatever inputs unlock the version and N-rules."""
    for options in ALL_INPUTS:
        report = preflight(document, options)
        assert report.in_scope
        assert _errors(report) == []


@pytest.mark.parametrize("entrypoint", ["grpo", "grpo-gym", "grpo-sc"])
@given(data=st.data())
def test_valid_recipes_are_detected_as_their_entrypoint(entrypoint: Any, data: st.DataObject) -> None:
    """valid_recipes(entrypoint) yields recipes that detection assigns to that entrypoint."""
    document = data.draw(valid_recipes(entrypoint))
    assert preflight(document, NO_ENV).entrypoint == entrypoint


@pytest.mark.parametrize("rule", BREAKABLE_RULES)
@given(data=st.data())
def test_breaking_one_rule_fires_exactly_that_rule(rule: str, data: st.DataObject) -> None:
    """A valid recipe with one rule broken gets an error of that rule and no error of any other rule, whatever
    inputs unlock the version-dependent and runtime rules."""
    document = data.draw(broken_recipes(rule))
    for options in ALL_INPUTS:
        report = preflight(document, options)
        assert report.errors, f"{rule} did not fire"
        assert {f.code for f in report.errors} == {rule}, _errors(report)


def _paths(node: object, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every mapping path of ``node`` as a tuple of keys (keys may hold dots: JSON values are arbitrary)."""
    if isinstance(node, dict):
        for key, value in node.items():
            path = (*prefix, key)
            yield path
            yield from _paths(value, path)


def _replace(document: dict[str, Any], path: tuple[str, ...], value: object) -> None:
    *parents, last = path
    node: Any = document
    for key in parents:
        node = node[key]
    node[last] = value


def _check_report(report: PreflightReport) -> None:
    for finding in report.findings:
        assert finding.code in KNOWN_CODES
        assert 0 < len(finding.message) <= 2000
        assert finding.severity in ("error", "warning")
    for skipped in report.skipped:
        assert skipped.code in KNOWN_CODES
        assert len(skipped.reason) <= 2000


@given(valid_recipes(), st.data())
def test_corrupted_recipes_never_crash(document: dict[str, Any], data: st.DataObject) -> None:
    """Replacing up to three subtrees of a valid recipe with arbitrary JSON gives a report, never an exception;
    every finding has a catalogue code and a bounded message."""
    corrupted = copy.deepcopy(document)
    for _ in range(data.draw(st.integers(1, 3))):
        kept = (("grpo",), ("policy",), ("policy", "generation"))
        paths = sorted(p for p in _paths(corrupted) if p not in kept)
        if not paths:
            break
        _replace(corrupted, data.draw(st.sampled_from(paths)), data.draw(json_values()))
    dotted = sorted(".".join(path) for path in _paths(document))
    unresolved = data.draw(st.lists(st.sampled_from(dotted), max_size=3))
    for options in ALL_INPUTS:
        _check_report(preflight(corrupted, options, unresolved=unresolved))


_SECTION_KEYS = st.sampled_from(
    ["grpo", "policy", "generation", "cluster", "loss_fn", "data", "env", "async_rl", "vllm_cfg", "vllm_kwargs",
     "colocated", "resources", "enabled", "num_nodes", "gpus_per_node", "backend", "async_grpo", "train",
     "megatron_cfg", "dtensor_cfg", "router_replay", "on_policy_distillation", "teacher_model_by_agent_name",
     "default_teacher_cfg", "teacher_overrides", "non_colocated_teachers", "kv_transfer_config",
     "speculative_config", "data_plane", "reward_model", "env_name", "tensor_parallel_size"]
)  # fmt: skip
_HOSTILE = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 20) | st.floats(allow_nan=True) | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(_SECTION_KEYS | st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=30,
)


@given(
    st.dictionaries(_SECTION_KEYS, _HOSTILE, max_size=6),
    st.dictionaries(_SECTION_KEYS, _HOSTILE, max_size=6),
    st.dictionaries(_SECTION_KEYS, _HOSTILE, max_size=6),
    st.lists(st.text(max_size=30), max_size=3),
)
def test_arbitrary_documents_never_crash(
    root: dict[str, Any], grpo: dict[str, Any], generation: dict[str, Any], unresolved: list[str]
) -> None:
    """Arbitrary nested JSON-like sections under an in-scope root give a report, never an exception."""
    policy = root.get("policy")
    document = {
        **root,
        "grpo": grpo,
        "policy": {**(policy if isinstance(policy, dict) else {}), "generation": generation},
    }
    for options in (*ALL_INPUTS, PreflightOptions(environ={}, entrypoint="grpo-gym")):
        report = preflight(document, options, unresolved=unresolved)
        assert report.in_scope
        _check_report(report)


@given(valid_recipes())
def test_preflight_is_deterministic_and_pure(document: dict[str, Any]) -> None:
    """Two runs give equal reports and leave the document unchanged."""
    before = copy.deepcopy(document)
    assert preflight(document, NO_ENV) == preflight(document, NO_ENV)
    assert document == before
