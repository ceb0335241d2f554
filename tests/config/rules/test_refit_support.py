"""Unit tests for refit normalisation, the reload-refit check and worker-class resolution (SPEC §1.3–§1.5)."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import pytest

from rl_contracts.config import (
    GENERATION_WORKER_OVERRIDES,
    VllmConfig,
    VllmRefitConfig,
    assert_reload_refit_config_supported,
    normalize_vllm_refit_config,
    resolve_generation_worker_cls,
)
from rl_contracts.errors import ConfigContractError, ContractError, ContractTypeError, UnsupportedConfigError
from rl_contracts.testing import assert_contract_error
from rl_contracts.testing.strategies import minimal_vllm_generation as section

PLUGIN = "my_pkg.engines:FastEngine"
SYNC_WORKER = "nemo_rl.models.generation.vllm.vllm_worker.VllmGenerationWorker"
ASYNC_WORKER = "nemo_rl.models.generation.vllm.vllm_worker_async.VllmAsyncGenerationWorker"
QUANT_SYNC = "nemo_rl.modelopt.models.generation.vllm_quant_worker.VllmQuantGenerationWorker"
QUANT_ASYNC = "nemo_rl.modelopt.models.generation.vllm_quant_worker.VllmQuantAsyncGenerationWorker"


# --- normalize_vllm_refit_config --------------------------------------------------------------------------------


@pytest.mark.parametrize("config", [{}, {"refit_transport": None}, {"refit_transport": "nccl_reshard"}])
def test_normalize_returns_none_for_default_and_nccl_reshard(config: dict[str, Any]) -> None:
    """No transport and ``nccl_reshard`` take no refit config."""
    assert normalize_vllm_refit_config(config) is None
    assert normalize_vllm_refit_config(VllmConfig.model_validate(section(**config))) is None


def test_nccl_reshard_ignores_an_invalid_refit_cfg() -> None:
    """``nccl_reshard`` returns before ``refit_cfg`` is looked at."""
    assert (
        normalize_vllm_refit_config({"refit_transport": "nccl_reshard", "refit_cfg": {"nixl": {"x": 1}}})
        is None
    )


@pytest.mark.parametrize("transport", ["nixl", "vllm_s3_sparse", "vllm_zmq_sparse"])
def test_normalize_resolves_defaults(transport: str) -> None:
    """A named transport without ``refit_cfg`` gets the default refit config."""
    assert normalize_vllm_refit_config({"refit_transport": transport}) == VllmRefitConfig()
    assert normalize_vllm_refit_config({"refit_transport": transport, "refit_cfg": None}) == VllmRefitConfig()


def test_normalize_validates_the_given_refit_cfg() -> None:
    """Given values override defaults and the rest are filled in."""
    refit = normalize_vllm_refit_config(
        {"refit_transport": "vllm_s3_sparse", "refit_cfg": {"sparse": {"storage": {"s3_bucket": "b"}}}}
    )
    assert refit is not None
    assert refit.sparse.storage.s3_bucket == "b"
    assert refit.sparse.storage.s3_region == "us-east-1"
    assert refit.nixl.device == "cuda"


def test_normalize_plugin_transport_keeps_its_plugin_config() -> None:
    """A ``module:ClassName`` transport's plugin config is validated and kept under its key."""
    plugin = {"release_after_refit": True, "x_custom": 1}
    refit = normalize_vllm_refit_config({"refit_transport": PLUGIN, "refit_cfg": {PLUGIN: plugin}})
    assert refit is not None
    assert refit.model_extra == {PLUGIN: plugin}


def test_normalize_model_and_mapping_agree() -> None:
    """A model and its source mapping normalise to equal refit configs."""
    config = section(
        refit_transport=PLUGIN, refit_cfg={PLUGIN: {}, "sparse": {"verify_samples_per_payload": 2}}
    )
    assert normalize_vllm_refit_config(VllmConfig.model_validate(config)) == normalize_vllm_refit_config(
        config
    )


def test_normalize_returns_an_independent_copy() -> None:
    """Mutating the result never reaches the input (model or mapping)."""
    plugin_cfg: dict[str, Any] = {"x_list": [1]}
    config = section(refit_transport=PLUGIN, refit_cfg={PLUGIN: plugin_cfg})
    model = VllmConfig.model_validate(config)
    for source in (config, model):
        refit = normalize_vllm_refit_config(source)
        assert refit is not None
        refit.sparse.tuning.zmq_retries = 99
        refit.model_extra[PLUGIN]["x_list"].append(2)  # type: ignore[index]
    assert plugin_cfg == {"x_list": [1]}
    assert model.refit_cfg is not None
    assert model.refit_cfg.sparse.tuning.zmq_retries == 3


C6 = (
    "policy.generation.checkpoint_engine was replaced by policy.generation.refit_transport='nixl' and "
    "policy.generation.refit_cfg.nixl."
)
C7 = (
    "Unknown vLLM refit transport {}: expected null, 'nccl_reshard', 'vllm_s3_sparse', 'vllm_zmq_sparse', 'nixl', "
    "or a 'module:ClassName' checkpoint-engine path."
)
C8 = (
    "vllm_cfg.reset_encoder_cache_after_weight_update is not supported with refit_transport={}: this "
    "transport's refit path does not reset the multimodal encoder cache, so stale vision embeddings would "
    "silently survive weight updates. Supported transports: null (collective/IPC) and 'nccl_reshard'."
)
NVFP4 = (
    "nvfp4_pertoken_rollout.enabled=true requires quant_cfg=null, real_quant=false and refit_transport=null; "
    "got refit_transport={}."
)

NORMALIZE_FAILURES: list[tuple[dict[str, Any], str, str, str]] = [
    ({"checkpoint_engine": {"enabled": True}}, "checkpoint_engine", "{'enabled': True}", C6),
    ({"checkpoint_engine": 0, "refit_transport": "bogus"}, "checkpoint_engine", "0", C6),
    (
        {"nvfp4_pertoken_rollout": {"enabled": True}, "refit_transport": "nccl_reshard"},
        "refit_transport",
        "'nccl_reshard'",
        NVFP4.format("'nccl_reshard'"),
    ),
    (
        {"nvfp4_pertoken_rollout": {"enabled": True}, "refit_transport": "bogus"},
        "refit_transport",
        "'bogus'",
        NVFP4.format("'bogus'"),
    ),
    (
        {"refit_transport": 3},
        "refit_transport",
        "3",
        "policy.generation.refit_transport must be null or a str, got int 3.",
    ),
    ({"refit_transport": "bogus"}, "refit_transport", "'bogus'", C7.format("'bogus'")),
    ({"refit_transport": "pkg:mod:Cls"}, "refit_transport", "'pkg:mod:Cls'", C7.format("'pkg:mod:Cls'")),
    ({"refit_transport": "pkg.:Cls"}, "refit_transport", "'pkg.:Cls'", C7.format("'pkg.:Cls'")),
    ({"refit_transport": "pkg:Cls-1"}, "refit_transport", "'pkg:Cls-1'", C7.format("'pkg:Cls-1'")),
    ({"refit_transport": ""}, "refit_transport", "''", C7.format("''")),
    (
        {"refit_transport": "nixl", "vllm_cfg": {"reset_encoder_cache_after_weight_update": True}},
        "vllm_cfg.reset_encoder_cache_after_weight_update",
        "True",
        C8.format("'nixl'"),
    ),
    (
        {"refit_transport": PLUGIN, "refit_cfg": {}},
        f"refit_cfg.{PLUGIN}",
        "<missing>",
        f"Custom checkpoint-engine transport {PLUGIN!r} requires policy.generation.refit_cfg[{PLUGIN!r}].",
    ),
    (
        {"refit_transport": PLUGIN, "refit_cfg": {PLUGIN: None}},
        f"refit_cfg.{PLUGIN}",
        "<missing>",
        f"Custom checkpoint-engine transport {PLUGIN!r} requires policy.generation.refit_cfg[{PLUGIN!r}].",
    ),
    (
        {"refit_transport": PLUGIN},
        f"refit_cfg.{PLUGIN}",
        "<missing>",
        f"Custom checkpoint-engine transport {PLUGIN!r} requires policy.generation.refit_cfg[{PLUGIN!r}].",
    ),
]


@pytest.mark.parametrize(("config", "path", "value", "message"), NORMALIZE_FAILURES)
def test_normalize_failures(config: dict[str, Any], path: str, value: str, message: str) -> None:
    """Each step fails with its exact message, ``.path`` and rendered ``.value``."""
    with pytest.raises(ConfigContractError) as info:
        normalize_vllm_refit_config(config)
    err = info.value
    assert type(err) is ConfigContractError
    assert (str(err), err.path, err.value) == (message, path, value)
    assert_contract_error(err)


def test_normalize_invalid_refit_cfg_lists_error_locations() -> None:
    """An invalid ``refit_cfg`` reports every pydantic error location, the first as ``.path``."""
    config = {
        "refit_transport": "vllm_zmq_sparse",
        "refit_cfg": {"sparse": {"tuning": {"zmq_retries": -1}, "request_timeout_s": "1"}, "nixl": {"x": 1}},
    }
    with pytest.raises(ConfigContractError) as info:
        normalize_vllm_refit_config(config)
    err = info.value
    assert str(err).startswith(
        "policy.generation.refit_cfg is not a valid VllmRefitConfig (3 validation error(s)): "
    )
    for location in (
        "refit_cfg.sparse.tuning.zmq_retries",
        "refit_cfg.sparse.request_timeout_s",
        "refit_cfg.nixl.x",
    ):
        assert location in str(err)
    assert err.path == "refit_cfg.sparse.tuning.zmq_retries"
    assert err.value == "-1"
    assert_contract_error(err)


def test_normalize_invalid_plugin_config() -> None:
    """An invalid plugin config names the plugin key and the failing field."""
    config = {"refit_transport": PLUGIN, "refit_cfg": {PLUGIN: {"release_after_refit": "yes"}}}
    with pytest.raises(ConfigContractError) as info:
        normalize_vllm_refit_config(config)
    assert str(info.value).startswith(
        f"policy.generation.refit_cfg[{PLUGIN!r}] is not a valid VllmCheckpointEnginePluginConfig (1 validation"
    )
    assert info.value.path == f"refit_cfg.{PLUGIN}.release_after_refit"


def test_normalize_invalid_refit_cfg_message_is_bounded() -> None:
    """Many invalid keys give a bounded message that counts them."""
    refit_cfg = {"nixl": {f"unknown_{i:03}": i for i in range(500)}}
    with pytest.raises(ConfigContractError) as info:
        normalize_vllm_refit_config({"refit_transport": "nixl", "refit_cfg": refit_cfg})
    assert len(str(info.value)) <= 2000
    assert "... (500 total)" in str(info.value)


def test_normalize_refit_cfg_that_is_not_a_mapping() -> None:
    """A non-mapping ``refit_cfg`` is a ``ConfigContractError`` at ``refit_cfg``."""
    with pytest.raises(ConfigContractError) as info:
        normalize_vllm_refit_config({"refit_transport": "nixl", "refit_cfg": ["nixl"]})
    assert info.value.path == "refit_cfg"


@pytest.mark.parametrize(
    ("config", "path"),
    [
        (
            {"refit_transport": "nixl", "vllm_cfg": {"reset_encoder_cache_after_weight_update": "yes"}},
            "vllm_cfg.",
        ),
        ({"refit_transport": "nixl", "vllm_cfg": ["not", "a", "mapping"]}, "vllm_cfg"),
        (
            {"nvfp4_pertoken_rollout": {"enabled": 1}, "refit_transport": "nixl"},
            "nvfp4_pertoken_rollout.enabled",
        ),
        ({"nvfp4_pertoken_rollout": "on", "refit_transport": "nixl"}, "nvfp4_pertoken_rollout"),
    ],
)
def test_normalize_rejects_mistyped_sections_and_flags(config: dict[str, Any], path: str) -> None:
    """A non-bool flag or non-mapping section in a mapping is a ``ConfigContractError`` naming the key."""
    with pytest.raises(ConfigContractError) as info:
        normalize_vllm_refit_config(config)
    assert info.value.path is not None
    assert info.value.path.startswith(path)
    assert_contract_error(info.value)


def test_normalize_steps_run_in_order() -> None:
    """The legacy key is reported before NVFP4, NVFP4 before C7, and C8 before C9."""
    config: dict[str, Any] = {
        "checkpoint_engine": {"a": 1},
        "nvfp4_pertoken_rollout": {"enabled": True},
        "refit_transport": PLUGIN,
        "vllm_cfg": {"reset_encoder_cache_after_weight_update": True},
    }
    paths = []
    for key in ("checkpoint_engine", "nvfp4_pertoken_rollout", "vllm_cfg", None):
        with pytest.raises(ConfigContractError) as info:
            normalize_vllm_refit_config(config)
        paths.append(info.value.path)
        if key is not None:
            del config[key]
    assert paths == [
        "checkpoint_engine",
        "refit_transport",
        "vllm_cfg.reset_encoder_cache_after_weight_update",
        f"refit_cfg.{PLUGIN}",
    ]


@pytest.mark.parametrize("function", [normalize_vllm_refit_config, assert_reload_refit_config_supported])
@pytest.mark.parametrize("config", [None, "refit_transport: nixl", ["refit_transport"], 3])
def test_config_argument_type(function: Any, config: Any) -> None:
    """A ``config`` that is neither a ``VllmConfig`` nor a mapping is a ``ContractTypeError``."""
    with pytest.raises(ContractTypeError) as info:
        function(config)
    expected = "a VllmConfig or a mapping of the generation section"
    actual = type(config).__name__
    assert (info.value.argument, info.value.expected, info.value.actual) == ("config", expected, actual)
    assert info.value.message == f"config must be {expected}, got {actual}"
    assert_contract_error(info.value)


def test_mapping_with_both_spellings_of_an_underscore_key_is_rejected() -> None:
    """A mapping that gives both spellings of an underscore key the function reads is rejected."""
    config: dict[str, Any] = {
        "vllm_cfg": {"refit_with_reload_api": True},
        "colocated": {"enabled": False},
        "_draft_weights_from_refit": False,
        "draft_weights_from_refit": True,
    }
    with pytest.raises(ConfigContractError) as info:
        assert_reload_refit_config_supported(config)
    assert info.value.path == "_draft_weights_from_refit"


@pytest.mark.parametrize("function", [normalize_vllm_refit_config, assert_reload_refit_config_supported])
def test_functions_never_mutate_mappings(function: Any) -> None:
    """Neither function changes its mapping argument, whether it passes or fails."""
    configs = [
        section(refit_transport=PLUGIN, refit_cfg={PLUGIN: {"x": [1]}}),
        section(refit_transport="nixl", checkpoint_engine={"a": 1}),
        {"vllm_cfg": {"refit_with_reload_api": True}, "colocated": {"enabled": True}},
    ]
    for config in configs:
        before = copy.deepcopy(config)
        with contextlib.suppress(ContractError):
            function(config)
        assert config == before


def test_functions_accept_read_only_mappings() -> None:
    """Any ``Mapping`` works, not only ``dict``."""
    config: Mapping[str, Any] = MappingProxyType({"refit_transport": "nixl"})
    assert normalize_vllm_refit_config(config) == VllmRefitConfig()
    assert_reload_refit_config_supported(MappingProxyType({"vllm_cfg": MappingProxyType({})}))


# --- assert_reload_refit_config_supported -----------------------------------------------------------------------

RELOAD = "policy.generation.vllm_cfg.refit_with_reload_api=true"
SUPPORTED: dict[str, Any] = {
    "vllm_cfg": {"refit_with_reload_api": True},
    "colocated": {"enabled": False, "resources": {"gpus_per_node": 8, "num_nodes": 1}},
}


def reload(**overrides: Any) -> dict[str, Any]:
    """The supported reload-refit combination with top-level overrides."""
    config = copy.deepcopy(SUPPORTED)
    config.update(overrides)
    return config


COLOCATED_MSG = (
    f"{RELOAD} is not supported yet with colocated vLLM refit. Support for the colocated IPC/ZMQ reload-refit path "
    "will be added later. Set refit_with_reload_api=false for now."
)
NCCL_MSG = (
    f"{RELOAD} is explicitly unsupported with policy.generation.refit_transport='nccl_reshard'. nccl_reshard_refit "
    "is its own refit path and does not use vLLM's reload_weights API."
)
CKPT_MSG = (
    f"{RELOAD} is not supported yet with checkpoint-engine refit (update_weights_from_checkpoint_engine). Support "
    "for using vLLM's reload_weights API with checkpoint-engine transports is future work. Set refit_transport=null "
    "or set refit_with_reload_api=false for now."
)
OTHER_MSG = (
    f"{RELOAD} is only supported with the default non-colocated collective refit path. Got "
    "policy.generation.refit_transport={}. Set refit_transport=null or set refit_with_reload_api=false."
)
QUANT_MSG = (
    f"{RELOAD} is explicitly unsupported with policy.generation.quant_cfg set. ModelOpt quantized refit requires "
    "the ModelOpt weight-loading path. Set quant_cfg=null or set refit_with_reload_api=false."
)
DRAFT_MSG = (
    f"{RELOAD} is not supported yet when policy.draft.enabled=true. Support for Eagle draft-weight refit with "
    "vLLM's reload_weights API will be added later. Set policy.draft.enabled=false or set refit_with_reload_api=false "
    "for now."
)
MTP_MSG = (
    f"{RELOAD} is not supported yet when vLLM refit also updates MTP draft weights. Support for MTP speculative "
    "decoding with reload refit will be added later. Set refit_with_reload_api=false for now."
)


def mtp(method: str, **spec: Any) -> dict[str, Any]:
    """Overrides that configure a speculative ``method`` and trained-MTP refit."""
    return {
        "vllm_kwargs": {"speculative_config": {"method": method, **spec}},
        "_mtp_weights_from_refit": True,
    }


UNSUPPORTED: list[tuple[dict[str, Any], str, str, str]] = [
    (reload(colocated={"enabled": True, "resources": {}}), "colocated.enabled", "True", COLOCATED_MSG),
    (reload(refit_transport="nccl_reshard"), "refit_transport", "'nccl_reshard'", NCCL_MSG),
    (reload(refit_transport="nixl"), "refit_transport", "'nixl'", CKPT_MSG),
    (reload(refit_transport=PLUGIN), "refit_transport", repr(PLUGIN), CKPT_MSG),
    (reload(refit_transport="a:b:c"), "refit_transport", "'a:b:c'", CKPT_MSG),
    (
        reload(refit_transport="vllm_s3_sparse"),
        "refit_transport",
        "'vllm_s3_sparse'",
        OTHER_MSG.format("'vllm_s3_sparse'"),
    ),
    (
        reload(refit_transport="vllm_zmq_sparse"),
        "refit_transport",
        "'vllm_zmq_sparse'",
        OTHER_MSG.format("'vllm_zmq_sparse'"),
    ),
    (reload(refit_transport=7), "refit_transport", "7", OTHER_MSG.format("7")),
    (reload(quant_cfg="FP8_DEFAULT_CFG"), "quant_cfg", "'FP8_DEFAULT_CFG'", QUANT_MSG),
    (reload(quant_cfg=""), "quant_cfg", "''", QUANT_MSG),
    (reload(_draft_weights_from_refit=True), "_draft_weights_from_refit", "True", DRAFT_MSG),
    (reload(draft_weights_from_refit=True), "_draft_weights_from_refit", "True", DRAFT_MSG),
    (reload(**mtp("mtp")), "_mtp_weights_from_refit", "True", MTP_MSG),
    (reload(**mtp("deepseek_mtp", num_speculative_tokens=1)), "_mtp_weights_from_refit", "True", MTP_MSG),
    (reload(**mtp("mtp", num_speculative_tokens=None)), "_mtp_weights_from_refit", "True", MTP_MSG),
]


@pytest.mark.parametrize(("config", "path", "value", "message"), UNSUPPORTED)
def test_reload_refit_unsupported_combinations(
    config: dict[str, Any], path: str, value: str, message: str
) -> None:
    """Each unsupported combination raises ``UnsupportedConfigError`` with its exact message, path and value."""
    with pytest.raises(UnsupportedConfigError) as info:
        assert_reload_refit_config_supported(config)
    err = info.value
    assert (str(err), err.path, err.value) == (message, path, value)
    assert isinstance(err, ValueError)
    assert isinstance(err, AssertionError)
    assert isinstance(err, ConfigContractError)
    assert_contract_error(err)


SUPPORTED_CASES: list[dict[str, Any]] = [
    reload(),
    reload(
        refit_transport=None, quant_cfg=None, _draft_weights_from_refit=False, _mtp_weights_from_refit=False
    ),
    reload(**mtp("mtp", num_speculative_tokens=0)),
    reload(**mtp("ngram", num_speculative_tokens=2)),
    reload(**mtp("eagle")),
    reload(vllm_kwargs={"speculative_config": {"method": "mtp"}}, _mtp_weights_from_refit=False),
    reload(vllm_kwargs={"speculative_config": "mtp"}, _mtp_weights_from_refit=True),
    reload(vllm_kwargs=None, _mtp_weights_from_refit=True),
    reload(checkpoint_engine={"enabled": True}),  # not this function's concern
]


@pytest.mark.parametrize("config", SUPPORTED_CASES)
def test_reload_refit_supported_combinations(config: dict[str, Any]) -> None:
    """The supported combination passes, including MTP setups that do not refit MTP weights."""
    assert_reload_refit_config_supported(config)


@pytest.mark.parametrize(
    "config",
    [
        {},
        {"vllm_cfg": None},
        {"vllm_cfg": {}},
        {
            "vllm_cfg": {"refit_with_reload_api": False},
            "refit_transport": "nixl",
            "colocated": {"enabled": True},
        },
        {"vllm_cfg": {"refit_with_reload_api": None}, "quant_cfg": "FP8"},
        {"vllm_cfg": {"tensor_parallel_size": 1}, "_draft_weights_from_refit": True},
    ],
)
def test_reload_refit_off_checks_nothing(config: dict[str, Any]) -> None:
    """Without ``refit_with_reload_api=true`` nothing else is checked."""
    assert_reload_refit_config_supported(config)


@pytest.mark.parametrize(
    ("config", "path", "message"),
    [
        (
            {"vllm_cfg": {"refit_with_reload_api": True}},
            "colocated",
            f"policy.generation.colocated is required when {RELOAD}.",
        ),
        (
            {"vllm_cfg": {"refit_with_reload_api": True}, "colocated": None},
            "colocated",
            f"policy.generation.colocated is required when {RELOAD}.",
        ),
        (
            {"vllm_cfg": {"refit_with_reload_api": True}, "colocated": {}},
            "colocated.enabled",
            f"policy.generation.colocated.enabled is required when {RELOAD}.",
        ),
        (
            {"vllm_cfg": {"refit_with_reload_api": True}, "colocated": {"enabled": None}},
            "colocated.enabled",
            f"policy.generation.colocated.enabled is required when {RELOAD}.",
        ),
    ],
)
def test_reload_refit_missing_colocation(config: dict[str, Any], path: str, message: str) -> None:
    """A missing ``colocated`` section or ``enabled`` key is a ``ConfigContractError`` (not unsupported)."""
    with pytest.raises(ConfigContractError) as info:
        assert_reload_refit_config_supported(config)
    err = info.value
    assert type(err) is ConfigContractError
    assert (str(err), err.path, err.value) == (message, path, "<missing>")
    assert_contract_error(err)


@pytest.mark.parametrize(
    ("config", "path"),
    [
        ({"vllm_cfg": {"refit_with_reload_api": "true"}}, "vllm_cfg.refit_with_reload_api"),
        ({"vllm_cfg": {"refit_with_reload_api": 1}}, "vllm_cfg.refit_with_reload_api"),
        ({"vllm_cfg": "on"}, "vllm_cfg"),
        (reload(colocated={"enabled": 0}), "colocated.enabled"),
        (reload(colocated=[]), "colocated"),
        (reload(_draft_weights_from_refit="yes"), "_draft_weights_from_refit"),
        (reload(_mtp_weights_from_refit=1), "_mtp_weights_from_refit"),
        (reload(vllm_kwargs=["speculative_config"]), "vllm_kwargs"),
    ],
)
def test_reload_refit_rejects_mistyped_flags(config: dict[str, Any], path: str) -> None:
    """A flag that is neither a bool nor absent/null, or a non-mapping section, is a ``ConfigContractError``."""
    with pytest.raises(ConfigContractError) as info:
        assert_reload_refit_config_supported(config)
    assert type(info.value) is ConfigContractError
    assert info.value.path == path
    assert "policy.generation." + path in str(info.value)


def test_reload_refit_stops_at_the_first_failure() -> None:
    """Checks run in SPEC order: colocation, transport, quant_cfg, draft, MTP."""
    config = reload(
        colocated={"enabled": True},
        refit_transport="nixl",
        quant_cfg="FP8",
        _draft_weights_from_refit=True,
        **mtp("mtp"),
    )
    expected = [
        "colocated.enabled",
        "refit_transport",
        "quant_cfg",
        "_draft_weights_from_refit",
        "_mtp_weights_from_refit",
    ]
    seen = []
    for path in expected:
        with pytest.raises(UnsupportedConfigError) as info:
            assert_reload_refit_config_supported(config)
        seen.append(info.value.path)
        if path == "colocated.enabled":
            config["colocated"] = {"enabled": False}
        else:
            del config[path]
    assert seen == expected
    assert_reload_refit_config_supported(config)


def test_reload_refit_on_validated_models() -> None:
    """A ``VllmConfig`` is checked like its mapping."""
    base = section()
    base["vllm_cfg"]["refit_with_reload_api"] = True
    with pytest.raises(ConfigContractError) as info:
        assert_reload_refit_config_supported(VllmConfig.model_validate(base))
    assert info.value.path == "colocated"
    supported = VllmConfig.model_validate({**base, "colocated": SUPPORTED["colocated"]})
    assert_reload_refit_config_supported(supported)
    quantized = VllmConfig.model_validate({**base, "colocated": SUPPORTED["colocated"], "quant_cfg": "FP8"})
    with pytest.raises(UnsupportedConfigError) as unsupported:
        assert_reload_refit_config_supported(quantized)
    assert unsupported.value.path == "quant_cfg"


# --- resolve_generation_worker_cls ------------------------------------------------------------------------------


def test_worker_overrides_map() -> None:
    """The override map holds exactly the two SPEC entries and is read-only."""
    assert dict(GENERATION_WORKER_OVERRIDES) == {SYNC_WORKER: QUANT_SYNC, ASYNC_WORKER: QUANT_ASYNC}
    with pytest.raises(TypeError):
        GENERATION_WORKER_OVERRIDES[SYNC_WORKER] = "x"  # type: ignore[index]


@pytest.mark.parametrize(
    ("default_cls", "config", "expected"),
    [
        (SYNC_WORKER, {}, SYNC_WORKER),
        (SYNC_WORKER, {"quant_cfg": None}, SYNC_WORKER),
        (SYNC_WORKER, {"quant_cfg": "FP8"}, QUANT_SYNC),
        (ASYNC_WORKER, {"quant_cfg": "FP8"}, QUANT_ASYNC),
        (ASYNC_WORKER, {"quant_cfg": ""}, QUANT_ASYNC),
        ("my.Worker", {"quant_cfg": "FP8"}, "my.Worker"),
        ("", {"quant_cfg": "FP8"}, ""),
    ],
)
def test_resolve_generation_worker_cls(default_cls: str, config: dict[str, Any], expected: str) -> None:
    """The quantized twin is chosen only when ``quant_cfg`` is set; unknown classes pass through."""
    assert resolve_generation_worker_cls(default_cls, config) == expected


def test_resolve_generation_worker_cls_with_a_model() -> None:
    """A ``VllmConfig`` is read through its ``quant_cfg`` attribute."""
    config = section()
    assert resolve_generation_worker_cls(SYNC_WORKER, VllmConfig.model_validate(config)) == SYNC_WORKER
    quantized = VllmConfig.model_validate({**config, "quant_cfg": "FP8"})
    assert resolve_generation_worker_cls(SYNC_WORKER, quantized) == QUANT_SYNC


CLS_EXPECTED = "a str (a fully qualified class name)"
CONFIG_EXPECTED = "a mapping or a VllmConfig"


@pytest.mark.parametrize(
    ("default_cls", "config", "argument", "expected", "actual"),
    [
        (None, {}, "default_cls", CLS_EXPECTED, "NoneType"),
        (b"cls", {}, "default_cls", CLS_EXPECTED, "bytes"),
        (SYNC_WORKER, None, "config", CONFIG_EXPECTED, "NoneType"),
        (SYNC_WORKER, [("quant_cfg", "x")], "config", CONFIG_EXPECTED, "list"),
    ],
)
def test_resolve_generation_worker_cls_types(
    default_cls: Any, config: Any, argument: str, expected: str, actual: str
) -> None:
    """A non-str class name or a config that is no mapping is a ``ContractTypeError`` naming the argument."""
    with pytest.raises(ContractTypeError) as info:
        resolve_generation_worker_cls(default_cls, config)
    err = info.value
    assert str(err) == f"{argument} must be {expected}, got {actual}"
    assert (err.argument, err.expected, err.actual) == (argument, expected, actual)
    assert_contract_error(err)


REFIT_INVALID = "policy.generation.refit_cfg is not a valid VllmRefitConfig"
EXTRA = "Extra inputs are not permitted"


@pytest.mark.parametrize("count", [1, 8, 9])
def test_normalize_nested_errors_show_eight_then_the_total(count: int) -> None:
    """Up to 8 nested errors are joined with '; '; from the 9th on only the total is added."""
    refit_cfg = {"nixl": {f"u{i}": i for i in range(count)}}
    with pytest.raises(ConfigContractError) as info:
        normalize_vllm_refit_config({"refit_transport": "nixl", "refit_cfg": refit_cfg})
    shown = "; ".join(f"refit_cfg.nixl.u{i}: {EXTRA}" for i in range(min(count, 8)))
    more = f" ... ({count} total)" if count > 8 else ""
    err = info.value
    assert str(err) == f"{REFIT_INVALID} ({count} validation error(s)): {shown}{more}"
    assert (err.path, err.value) == ("refit_cfg.nixl.u0", "0")


def test_normalize_nested_error_entries_are_shortened() -> None:
    """Each listed nested error is shortened to 200 characters."""
    key = "k" * 300
    with pytest.raises(ConfigContractError) as info:
        normalize_vllm_refit_config({"refit_transport": "nixl", "refit_cfg": {"nixl": {key: 1}}})
    entry = f"refit_cfg.nixl.{key}: {EXTRA}"
    assert str(info.value) == f"{REFIT_INVALID} (1 validation error(s)): {entry[:197]}..."
    assert (info.value.path, info.value.value) == (f"refit_cfg.nixl.{key}", "1")


def test_normalize_nested_error_paths_show_int_locations_in_brackets() -> None:
    """An int in a pydantic location (here a dict key) is shown as [i], not .i."""
    refit_cfg = {"sparse": {"tuning": {"encode_workers": {1: 5}}}}
    with pytest.raises(ConfigContractError) as info:
        normalize_vllm_refit_config({"refit_transport": "vllm_zmq_sparse", "refit_cfg": refit_cfg})
    assert info.value.path == "refit_cfg.sparse.tuning.encode_workers[1].[key]"
    assert "refit_cfg.sparse.tuning.encode_workers[1].[key]: " in str(info.value)


@pytest.mark.parametrize(
    ("refit_cfg", "path", "value", "first"),
    [
        ({"nixl": {"device": 5}}, "refit_cfg.nixl.device", "5", "expected a str"),
        ({"nixl": {"fps": 2}}, "refit_cfg.nixl.fps", "2", "Extra inputs are not permitted"),
        (
            {"sparse": {"verify_samples_per_payload": -1}},
            "refit_cfg.sparse.verify_samples_per_payload",
            "-1",
            "Input should be greater than or equal to 0",
        ),
    ],
)
def test_nested_error_names_the_first_location_and_its_input(
    refit_cfg: dict[str, Any], path: str, value: str, first: str
) -> None:
    """An invalid ``refit_cfg`` is reported at the first failing location with its rendered input."""
    with pytest.raises(ConfigContractError) as info:
        normalize_vllm_refit_config({"refit_transport": "nixl", "refit_cfg": refit_cfg})
    err = info.value
    assert (err.path, err.value) == (path, value)
    assert "(1 validation error(s))" in str(err)
    assert f"{path}: " in str(err)
    assert first in str(err)
    assert_contract_error(err)
