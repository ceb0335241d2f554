"""Schema and model agree: documents generated from ``rl-contracts schema`` and ``VllmConfig`` (SPEC §1.1–§1.2).

The JSON Schema (``config_json_schema()``, what ``rl-contracts schema`` prints) expresses every field's type,
range, required-ness and extra-key policy.  It cannot express the cross-field rules below, which ``VllmConfig``'s
after-validator checks; a generated document is accepted unless it breaks one of them.  :func:`_broken_rules` is
an independent statement of each rule (from SPEC §1.2–§1.3), not a call into the library.

- **C1** ``top_k``/``val_top_k`` are null, -1 or >= 1, and ``0 < top_p, val_top_p <= 1`` (the schema types them
  only: the rule lives in the validator, with its own message);
- **C2** ``port_range_low <= port_range_high`` when both are set;
- **C3** ``pipeline_parallel_size > 1`` needs ``async_engine``;
- **C4** ``expert_parallel_size > 1`` is a multiple of ``tensor_parallel_size``;
- **C5** ``expert_parallel_size > 1`` and different from TP (DP inside vLLM) needs ``async_engine`` false;
- **C6** no non-null legacy ``checkpoint_engine`` (an extra key, which the schema allows);
- **C7** ``refit_transport`` is null, a selector or a ``module.path:ClassName`` string (the schema says str);
- **C8** no ``vllm_cfg.reset_encoder_cache_after_weight_update`` with a transport other than null/``nccl_reshard``;
- **C9** a ``module:ClassName`` transport has a valid plugin config under ``refit_cfg[<transport>]`` (an extra key);
- **C10** not both ``worker_extension_cls_fqn`` and ``quant_cfg``; NVFP4 per-token rollout excludes
  ``quant_cfg``, ``real_quant`` and a transport;
- **C11** ``real_quant`` true needs a bool ``real_quant_export_cpu_offload``; false needs colocated refit with no
  transport.

hypothesis-jsonschema 0.23.1 (the latest release) builds objects with ``while many(...).more():``, a method of
Hypothesis' internal ``many`` helper that Hypothesis 6.170 removed (``many`` is now used as ``with many(...) as
elements: for _ in elements:``), so ``from_schema`` raises ``AttributeError`` there.  :func:`_restore_many_more`
adds ``more()`` back, built on the new protocol, only when it is missing and only in this test process; delete it
once hypothesis-jsonschema calls the new protocol.  hypothesis-jsonschema is a ``dev`` dependency, for this file
only: nothing in the library imports it.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator
from typing import Any, cast

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.internal.conjecture import utils as conjecture_utils
from hypothesis_jsonschema import from_schema
from pydantic import ValidationError

from rl_contracts.config import VllmConfig, config_json_schema
from rl_contracts.testing.strategies import BrokenRuleConfig, broken_rule_vllm_configs, vllm_config_dicts

Loc = tuple[str | int, ...]

_SELECTORS = ("vllm_s3_sparse", "vllm_zmq_sparse", "nixl", "nccl_reshard")


def _restore_many_more() -> None:
    """Give ``many`` the ``more()`` of Hypothesis < 6.170: the first call enters the ``with`` block, each call
    advances the ``for`` loop (True while another element is to be drawn), and the last one exits the block."""
    if hasattr(conjecture_utils.many, "more"):
        return
    done = object()

    def more(self: Any) -> bool:
        if not hasattr(self, "_rl_contracts_steps"):
            self.__enter__()
            steps: Iterator[None] = iter(self)
            self._rl_contracts_steps = steps
        if next(self._rl_contracts_steps, done) is done:
            self.__exit__(None)
            return False
        return True

    conjecture_utils.many.more = more  # type: ignore[attr-defined]


_restore_many_more()
_SCHEMA = config_json_schema()
_VALIDATOR = jsonschema.Draft202012Validator(_SCHEMA)


def _documents(schema: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Documents valid under ``schema`` (an object schema, so every one is a dict)."""
    return cast("st.SearchStrategy[dict[str, Any]]", from_schema(schema))


_SCHEMA_DOCUMENTS = _documents(_SCHEMA)


def _with_rule_c1(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with rule C1 added (it could express C1; the model keeps it in the validator instead)."""
    narrowed = copy.deepcopy(schema)
    for key in ("top_p", "val_top_p"):
        narrowed["properties"][key] = {"type": "number", "exclusiveMinimum": 0, "maximum": 1}
    for key in ("top_k", "val_top_k"):
        narrowed["properties"][key] = {
            "anyOf": [{"type": "null"}, {"const": -1}, {"type": "integer", "minimum": 1}]
        }
    return narrowed


_C1_DOCUMENTS = _documents(_with_rule_c1(_SCHEMA))
"""Schema documents that keep rule C1, so filtering out the other rules' breaches rejects few."""


def _is_plugin_path(transport: str) -> bool:
    module, colon, name = transport.partition(":")
    return bool(colon) and all(part.isidentifier() for part in module.split(".")) and name.isidentifier()


def _plugin_config_valid(value: object) -> bool:
    """``VllmCheckpointEnginePluginConfig``: a mapping; ratio a non-bool number in (0, 1); release a bool."""
    if not isinstance(value, dict):
        return False
    ratio = value.get("update_weights_bucket_memory_ratio", 0.05)
    release = value.get("release_after_refit", False)
    ratio_ok = isinstance(ratio, int | float) and not isinstance(ratio, bool) and 0 < ratio < 1
    return ratio_ok and math.isfinite(ratio) and isinstance(release, bool)


def _broken_rules(doc: dict[str, Any]) -> dict[str, list[Loc]]:
    """The cross-field rules a schema-valid ``doc`` breaks, each with the locs it may be reported at."""
    broken: dict[str, list[Loc]] = {}

    def add(code: str, *locs: Loc) -> None:
        broken.setdefault(code, []).extend(locs)

    for key in ("top_k", "val_top_k"):
        if doc[key] is not None and doc[key] != -1 and doc[key] < 1:
            add("C1", (key,))
    for key in ("top_p", "val_top_p"):
        if not 0 < doc[key] <= 1:
            add("C1", (key,))
    low, high = doc.get("port_range_low"), doc.get("port_range_high")
    if low is not None and high is not None and low > high:
        add("C2", ("port_range_high",), ("port_range_low",))
    vllm = doc["vllm_cfg"]
    tp, pp, ep = vllm["tensor_parallel_size"], vllm["pipeline_parallel_size"], vllm["expert_parallel_size"]
    if pp > 1 and not vllm["async_engine"]:
        add("C3", ("vllm_cfg", "pipeline_parallel_size"))
    if ep > 1 and ep % tp:
        add("C4", ("vllm_cfg", "expert_parallel_size"))
    if ep > 1 and ep != tp and vllm["async_engine"]:
        add("C5", ("vllm_cfg", "async_engine"))
    if doc.get("checkpoint_engine") is not None:
        add("C6", ("checkpoint_engine",))
    transport = doc.get("refit_transport")
    nvfp4 = isinstance(doc.get("nvfp4_pertoken_rollout"), dict) and doc["nvfp4_pertoken_rollout"].get(
        "enabled"
    )
    if transport is not None and transport != "nccl_reshard":
        if transport not in _SELECTORS and not _is_plugin_path(transport):
            add("C7", ("refit_transport",))
        elif vllm.get("reset_encoder_cache_after_weight_update"):
            add("C8", ("vllm_cfg", "reset_encoder_cache_after_weight_update"))
        elif transport not in _SELECTORS:
            refit = doc.get("refit_cfg") or {}
            if not _plugin_config_valid(refit.get(transport)):
                add("C9", ("refit_cfg", transport))
    if doc.get("worker_extension_cls_fqn") is not None and doc.get("quant_cfg") is not None:
        add("C10", ("worker_extension_cls_fqn",))
    if nvfp4:
        for key in ("quant_cfg", "refit_transport"):
            if doc.get(key) is not None:
                add("C10", (key,))
        if doc.get("real_quant") is True:
            add("C10", ("real_quant",))
    if doc.get("real_quant") is True:
        offload = doc.get("real_quant_export_cpu_offload")
        colocated = isinstance(doc.get("colocated"), dict) and doc["colocated"]["enabled"]
        if offload is None or (offload is False and (not colocated or transport is not None)):
            add("C11", ("real_quant_export_cpu_offload",))
    return broken


def _error_locs(error: ValidationError) -> list[Loc]:
    return [tuple(line["loc"]) for line in error.errors()]


@given(_SCHEMA_DOCUMENTS)
def test_schema_documents_are_accepted_unless_they_break_a_listed_rule(doc: dict[str, Any]) -> None:
    """A document valid under the schema is accepted iff it breaks none of C1–C11; each rejection is at a rule's loc."""
    broken = _broken_rules(doc)
    if not broken:
        VllmConfig.model_validate(doc)  # the schema and the model agree: no error
        return
    with pytest.raises(ValidationError) as info:
        VllmConfig.model_validate(doc)
    allowed = [loc for locs in broken.values() for loc in locs]
    for loc in _error_locs(info.value):
        assert any(loc[: len(rule_loc)] == rule_loc for rule_loc in allowed), (loc, broken)


@given(st.one_of(vllm_config_dicts(), _C1_DOCUMENTS.filter(lambda doc: not _broken_rules(doc))))
def test_documents_the_model_accepts_validate_against_the_schema(doc: dict[str, Any]) -> None:
    """Every accepted document, and its JSON dumps (all fields and set fields only), is valid under the schema."""
    model = VllmConfig.model_validate(doc)
    _VALIDATOR.validate(doc)
    _VALIDATOR.validate(model.model_dump(mode="json", by_alias=True))
    _VALIDATOR.validate(model.model_dump(mode="json", by_alias=True, exclude_unset=True))


@given(broken_rule_vllm_configs())
def test_a_broken_cross_field_rule_passes_the_schema(case: BrokenRuleConfig) -> None:
    """A section breaking one cross-field rule still satisfies the schema, and the rule list names just that rule."""
    _VALIDATOR.validate(case.config)
    broken = _broken_rules(case.config)
    assert list(broken) == [case.rule]
    assert case.loc in broken[case.rule]
