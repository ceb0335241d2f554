"""Property tests for the config contracts (SPEC §7 invariants 1, 2, 27, 28 and 29)."""

from __future__ import annotations

import copy
from typing import Any

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from rl_contracts._internal.config_paths import keys_in
from rl_contracts.config import (
    VllmConfig,
    assert_reload_refit_config_supported,
    config_json_schema,
    normalize_vllm_refit_config,
    resolve_generation_worker_cls,
    unknown_keys,
)
from rl_contracts.config.rules.unknown_keys import VLLM_CFG_KEYS
from rl_contracts.errors import ConfigContractError, UnsupportedConfigError
from rl_contracts.refit import format_refit_key_error
from rl_contracts.testing import assert_contract_error
from rl_contracts.testing.strategies import (
    PlantedConfig,
    ReloadRefitCase,
    planted_bad_vllm_configs,
    reload_refit_cases,
    unsupported_refit_configs,
    vllm_config_dicts,
)

_VALIDATOR = jsonschema.Draft202012Validator(config_json_schema())


def _dotted(loc: tuple[str | int, ...]) -> str:
    return ".".join(str(part) for part in loc)


@given(vllm_config_dicts())
def test_exclude_unset_dump_revalidates_equal(config: dict[str, Any]) -> None:
    """Invariant 29 (last bullet): re-validating ``model_dump(by_alias=True, exclude_unset=True)`` is equal."""
    model = VllmConfig.model_validate(config)
    dumped = model.model_dump(by_alias=True, exclude_unset=True)
    assert VllmConfig.model_validate(dumped) == model
    assert VllmConfig.model_validate(dumped).model_dump(by_alias=True, exclude_unset=True) == dumped


@given(vllm_config_dicts())
def test_json_round_trip(config: dict[str, Any]) -> None:
    """Invariant 29: a valid section survives ``model_dump_json`` -> ``model_validate_json`` unchanged."""
    model = VllmConfig.model_validate(config)
    assert VllmConfig.model_validate_json(model.model_dump_json(by_alias=True)) == model
    assert VllmConfig.model_validate_json(model.model_dump_json()) == model


@given(vllm_config_dicts())
def test_valid_sections_satisfy_the_json_schema(config: dict[str, Any]) -> None:
    """Invariant 29: every valid section, and its JSON dump, validates against ``VllmConfig``'s JSON Schema."""
    _VALIDATOR.validate(config)
    model = VllmConfig.model_validate(config)
    _VALIDATOR.validate(model.model_dump(mode="json", by_alias=True))


@given(vllm_config_dicts())
def test_validation_and_refit_functions_are_pure(config: dict[str, Any]) -> None:
    """Invariant 2: validation, normalisation and the reload check leave their input unchanged."""
    before = copy.deepcopy(config)
    model = VllmConfig.model_validate(config)
    model_before = model.model_copy(deep=True)
    for source in (config, model):
        normalize_vllm_refit_config(source)
        assert_reload_refit_config_supported(source)
        unknown_keys(model)
    assert config == before
    assert model == model_before


@given(vllm_config_dicts())
def test_normalize_agrees_on_models_and_mappings(config: dict[str, Any]) -> None:
    """Invariant 29: a valid section normalises to the same refit config as a mapping and as a model."""
    assert normalize_vllm_refit_config(config) == normalize_vllm_refit_config(
        VllmConfig.model_validate(config)
    )


@given(vllm_config_dicts())
def test_unknown_keys_are_the_planted_extras(config: dict[str, Any]) -> None:
    """The generator's unknown keys (all ``x_``-prefixed) are exactly what ``unknown_keys`` reports, besides the
    known dead or misplaced ``vllm_cfg`` keys (PREFLIGHT.md §5) the generator may also write."""
    model = VllmConfig.model_validate(config)
    found = [u for u in unknown_keys(model) if keys_in(u.path, model)[-1] not in VLLM_CFG_KEYS]
    assert all(str(keys_in(item.path, model)[-1]).startswith("x_") for item in found)
    top_level = {key for key in config if key.startswith("x_")}
    assert {item.path for item in found if len(keys_in(item.path, model)) == 1} == top_level


@given(planted_bad_vllm_configs())
def test_planted_bad_values_are_rejected_at_their_location(planted: PlantedConfig) -> None:
    """Invariant 1 (config part): every planted defect raises ``ValidationError`` with an error at its ``loc``.

    At or below it: a bad element of a planted list (``stop_strings=[1]``) is reported at its index.
    """
    with pytest.raises(ValidationError) as info:
        VllmConfig.model_validate(planted.config)
    locs = [tuple(error["loc"]) for error in info.value.errors()]
    depth = len(planted.loc)
    assert any(loc[:depth] == tuple(planted.loc) for loc in locs), (planted.description, locs)


@given(unsupported_refit_configs())
def test_unsupported_refit_configs_are_rejected(planted: PlantedConfig) -> None:
    """Invariant 1: ``normalize_vllm_refit_config`` rejects each planted refit defect with the right ``.path``."""
    before = copy.deepcopy(planted.config)
    with pytest.raises(ConfigContractError) as info:
        normalize_vllm_refit_config(planted.config)
    assert type(info.value) is ConfigContractError
    assert info.value.path == _dotted(planted.loc), planted.description
    assert_contract_error(info.value)
    assert planted.config == before


@given(reload_refit_cases())
def test_reload_refit_rejects_each_unsupported_combination(case: ReloadRefitCase) -> None:
    """Invariant 27: with the flag on, each §1.4 combination raises ``UnsupportedConfigError``; the supported
    combination passes, for mappings and for models alike."""
    model = VllmConfig.model_validate(case.config)
    for source in (case.config, model):
        if case.path is None:
            assert_reload_refit_config_supported(source)
            continue
        with pytest.raises(UnsupportedConfigError) as info:
            assert_reload_refit_config_supported(source)
        assert info.value.path == case.path
        assert_contract_error(info.value)


@given(reload_refit_cases(), st.sampled_from(["absent", False, None]))
def test_reload_refit_off_never_raises(case: ReloadRefitCase, flag: Any) -> None:
    """Invariant 27: with ``refit_with_reload_api`` absent or false, the check never raises."""
    config = copy.deepcopy(case.config)
    if flag == "absent":
        del config["vllm_cfg"]["refit_with_reload_api"]
    else:
        config["vllm_cfg"]["refit_with_reload_api"] = flag
    assert_reload_refit_config_supported(config)
    assert_reload_refit_config_supported(VllmConfig.model_validate(config))


@given(st.text())
def test_worker_class_without_quant_cfg_is_unchanged(default_cls: str) -> None:
    """Invariant 28: ``resolve_generation_worker_cls(d, {"quant_cfg": None}) == d`` for every str ``d``."""
    assert resolve_generation_worker_cls(default_cls, {"quant_cfg": None}) == default_cls


@given(st.text(max_size=200), st.lists(st.text(max_size=30), max_size=40))
def test_refit_key_diagnostic_shape(label: str, keys: list[str]) -> None:
    """Invariant 28: the diagnostic starts with ``"{label} ({N}): ["``, shows ``min(N, 8)`` sorted keys and ends
    with ``" ..."`` exactly when ``N > 8``."""
    text = format_refit_key_error(label, keys)
    distinct = sorted(set(keys))
    assert text.startswith(f"{label} ({len(distinct)}): [")
    assert len(text) <= 2000
    if len(distinct) > 8:
        assert text.endswith("] ...")
        body = text[len(f"{label} ({len(distinct)}): ") : -len(" ...")]
    else:
        assert text.endswith("]")
        body = text[len(f"{label} ({len(distinct)}): ") :]
    assert body == repr(distinct[:8])
