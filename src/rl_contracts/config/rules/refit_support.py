"""Whether a refit configuration is supported: refit-transport normalisation (SPEC §1.3, rules C6–C9 of
``VllmConfig``, in :mod:`.refit_transport`) and the reload-refit rules R2–R8 (SPEC §1.4, numbered by its steps).

Each function accepts a validated :class:`~rl_contracts.config.VllmConfig` or a plain, possibly partial mapping,
never mutates it, and raises :class:`~rl_contracts.errors.ConfigContractError` (or ``UnsupportedConfigError``)
with ``.path`` relative to the generation section and ``.value`` rendered (``"<missing>"`` for an absent key).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..._internal.config_absent import ABSENT, render_value
from ..._internal.config_examples import generation_example
from ..._internal.config_view import ConfigView
from ..._internal.messages import render, shorten
from ...errors import ConfigContractError, ContractTypeError, UnsupportedConfigError
from ..finding import Finding
from ..rule import Rule, checks
from ..section.generation import VllmConfig
from ..section.refit_cfg import VllmRefitConfig
from ..section.refit_transport import RefitCheck, check_refit

__all__ = [
    "R2",
    "R3",
    "R4",
    "R5",
    "R6",
    "R7",
    "R8",
    "assert_reload_refit_config_supported",
    "normalize_vllm_refit_config",
    "reload_refit_violation",
]

_WORKER = "vllm_worker.py reload refit (S5)"
_FAILS = (
    "The reload-refit check of `vllm_worker.py` (S5, once every worker loaded its model) fails with an "
    "`AssertionError`/`NotImplementedError`"
)
_MEGATRON = ("megatron_cfg:", "  enabled: true", "dtensor_cfg:", "  enabled: false")
_NOT_COLOCATED = (
    "colocated:",
    "  enabled: false",
    "  resources:",
    "    gpus_per_node: 4",
    "    num_nodes: 1",
)


def _example(*settings: str, megatron: bool = False) -> str:
    """A fragment with reload refit on and ``settings`` (lines of the generation section) on dedicated generation
    GPUs, under Megatron when ``megatron``; with no ``settings``, colocated as the base recipe is."""
    apart = (*_NOT_COLOCATED, *settings) if settings else ()
    reload = ("vllm_cfg:", "  refit_with_reload_api: true")
    return generation_example(*apart, *reload, policy=_MEGATRON if megatron else ())


R2 = Rule(
    "R2",
    "reload-refit-colocated",
    summary="reload refit with colocated vLLM",
    reference=_WORKER,
    what_it_checks=(
        "With `vllm_cfg.refit_with_reload_api: true`: that generation is not colocated (`colocated.enabled` "
        "present and false)."
    ),
    why_it_matters=f"{_FAILS}: reload refit has no colocated IPC/ZMQ path yet.",
    example=_example(),
    fix="Set `refit_with_reload_api: false`, or run generation on its own GPUs (`colocated.enabled: false`).",
)
R3 = Rule(
    "R3",
    "reload-refit-nccl-reshard",
    summary="reload refit with refit_transport='nccl_reshard'",
    reference=_WORKER,
    what_it_checks="With reload refit on: that `refit_transport` is not `nccl_reshard`, which is its own refit path.",
    why_it_matters=f"{_FAILS}: `nccl_reshard` refit does not use vLLM's `reload_weights` API.",
    example=_example("refit_transport: nccl_reshard", megatron=True),
    fix="Set `refit_transport: null` or `refit_with_reload_api: false`.",
)
R4 = Rule(
    "R4",
    "reload-refit-checkpoint-engine",
    summary="reload refit with a checkpoint-engine transport",
    reference=_WORKER,
    what_it_checks=(
        "With reload refit on: that `refit_transport` is not a checkpoint-engine transport (`nixl` or a "
        "`module:ClassName` plugin)."
    ),
    why_it_matters=f"{_FAILS}: reload refit with checkpoint engines is future work.",
    example=_example("refit_transport: nixl"),
    fix="Set `refit_transport: null` or `refit_with_reload_api: false`.",
)
R5 = Rule(
    "R5",
    "reload-refit-sparse-transport",
    summary="reload refit with a sparse refit transport",
    reference=_WORKER,
    what_it_checks=(
        "With reload refit on: that `refit_transport` is not a sparse transport (`vllm_s3_sparse`, "
        "`vllm_zmq_sparse`); only the default non-colocated collective refit is supported."
    ),
    why_it_matters=f"{_FAILS}.",
    example=_example("refit_transport: vllm_zmq_sparse", megatron=True),
    fix="Set `refit_transport: null` or `refit_with_reload_api: false`.",
)
R6 = Rule(
    "R6",
    "reload-refit-quantized",
    summary="reload refit with quant_cfg set",
    reference=_WORKER,
    what_it_checks="With reload refit on: that `quant_cfg` is not set.",
    why_it_matters=f"{_FAILS}: ModelOpt quantized refit needs the ModelOpt weight-loading path.",
    example=_example("quant_cfg: fp8"),
    fix="Set `quant_cfg: null` or `refit_with_reload_api: false`.",
)
R7 = Rule(
    "R7",
    "reload-refit-eagle-draft",
    summary="reload refit with Eagle draft-weight refit",
    reference=_WORKER,
    what_it_checks=(
        "With reload refit on: that Eagle draft weights do not arrive by refit (`_draft_weights_from_refit`, "
        "which the trainer sets from `policy.draft.enabled`)."
    ),
    why_it_matters=f"{_FAILS}: draft-weight refit with `reload_weights` is not supported yet.",
    example=_example("_draft_weights_from_refit: true"),
    fix="Set `policy.draft.enabled: false` or `refit_with_reload_api: false`.",
)
R8 = Rule(
    "R8",
    "reload-refit-mtp-draft",
    summary="reload refit while refit also updates MTP draft weights",
    reference=_WORKER,
    what_it_checks=(
        "With reload refit on: that refit does not also update MTP draft weights (`_mtp_weights_from_refit` "
        "with an MTP speculative method in `vllm_kwargs.speculative_config`)."
    ),
    why_it_matters=f"{_FAILS}: MTP speculative decoding with reload refit is not supported yet.",
    example=_example(
        "_mtp_weights_from_refit: true",
        "vllm_kwargs:",
        "  speculative_config:",
        "    method: mtp",
        "    num_speculative_tokens: 1",
    ),
    fix="Set `refit_with_reload_api: false`, or stop training the MTP layer.",
)

_RELOAD = "policy.generation.vllm_cfg.refit_with_reload_api=true"


def _view_of(config: object) -> ConfigView:
    if isinstance(config, VllmConfig | Mapping):
        return ConfigView(config)
    raise ContractTypeError.for_value("config", "a VllmConfig or a mapping of the generation section", config)


def _as_error(check: RefitCheck) -> ConfigContractError:
    """The ``ConfigContractError`` of the first failing step; a config that did not validate lists its errors."""
    first = check.findings[0]
    if not check.invalid:
        return ConfigContractError(first.message, path=first.path, value=render_value(first.value))
    errors = check.findings
    shown = "; ".join(shorten(f"{error.path}: {error.message}", 200) for error in errors[:8])
    more = f" ... ({len(errors)} total)" if len(errors) > 8 else ""
    return ConfigContractError(
        f"{check.invalid} ({len(errors)} validation error(s)): {shown}{more}",
        path=first.path,
        value=render(first.value),  # the refit models have no required key: every error has an input
    )


def normalize_vllm_refit_config(config: VllmConfig | Mapping[str, Any]) -> VllmRefitConfig | None:
    """Validate the selected refit transport (SPEC §1.3) and return a new validated :class:`VllmRefitConfig`
    (``refit_cfg``, ``{}`` when absent or null; a ``module:ClassName`` plugin's config validated and kept under
    its key), or ``None`` for the topology default (``refit_transport`` null or absent) and ``"nccl_reshard"``.

    Raises ``ConfigContractError`` at the first failing step (C6 legacy ``checkpoint_engine``, C10 NVFP4 rollout
    with a transport, C7 unknown transport, C8 encoder-cache reset, C9 invalid ``refit_cfg`` or plugin config,
    listing pydantic's errors), for a non-mapping section and for a non-bool flag; ``ContractTypeError`` for a
    ``config`` that is neither a ``VllmConfig`` nor a mapping.

    Divergence: the reference writes the model back into ``config["refit_cfg"]`` and takes any string with a
    colon as a plugin path; this leaves the input untouched and requires ``module.path:ClassName``.

    Example::

        >>> normalize_vllm_refit_config({"refit_transport": "nixl"}).nixl.device
        'cuda'
    """
    check = check_refit(_view_of(config), nvfp4=True, first_only=True)
    if check.findings:
        raise _as_error(check)
    return None if check.refit is None else check.refit.model_copy(deep=True)


def _reload_requested(view: ConfigView) -> bool:
    """Step 1: a non-empty ``vllm_cfg`` with ``refit_with_reload_api: true``."""
    vllm_cfg = view.section("vllm_cfg")
    return vllm_cfg is not None and not vllm_cfg.is_empty() and vllm_cfg.flag("refit_with_reload_api") is True


def _colocation_step(view: ConfigView) -> Finding | None:
    """Step 2 (R2): ``colocated.enabled`` is present and false."""
    colocated = view.section("colocated")
    enabled = None if colocated is None else colocated.flag("enabled")
    if enabled is None:
        path = "colocated" if colocated is None else "colocated.enabled"
        message = f"policy.generation.{path} is required when {_RELOAD}."
        return Finding(code=R2.code, path=path, value=ABSENT, message=message)
    if not enabled:
        return None
    message = (
        f"{_RELOAD} is not supported yet with colocated vLLM refit. Support for the colocated IPC/ZMQ "
        "reload-refit path will be added later. Set refit_with_reload_api=false for now."
    )
    return Finding(code=R2.code, path="colocated.enabled", value=enabled, message=message)


def _transport_step(view: ConfigView) -> Finding | None:
    """Steps 3–5 (R3–R5): ``refit_transport`` is null (the NCCL collective)."""
    transport = view.get("refit_transport")
    if transport is None:
        return None
    if transport == "nccl_reshard":
        rule, message = (
            R3,
            f"{_RELOAD} is explicitly unsupported with policy.generation.refit_transport='nccl_reshard'. "
            "nccl_reshard_refit is its own refit path and does not use vLLM's reload_weights API.",
        )
    elif transport == "nixl" or (isinstance(transport, str) and ":" in transport):
        rule, message = (
            R4,
            f"{_RELOAD} is not supported yet with checkpoint-engine refit (update_weights_from_checkpoint_engine). "
            "Support for using vLLM's reload_weights API with checkpoint-engine transports is future work. "
            "Set refit_transport=null or set refit_with_reload_api=false for now.",
        )
    else:
        rule, message = (
            R5,
            f"{_RELOAD} is only supported with the default non-colocated collective refit path. Got "
            f"policy.generation.refit_transport={render(transport)}. Set refit_transport=null or set "
            "refit_with_reload_api=false.",
        )
    return Finding(code=rule.code, path="refit_transport", value=transport, message=message)


def _quantization_step(view: ConfigView) -> Finding | None:
    """Step 6 (R6): no ``quant_cfg``."""
    quant_cfg = view.get("quant_cfg")
    if quant_cfg is None:
        return None
    message = (
        f"{_RELOAD} is explicitly unsupported with policy.generation.quant_cfg set. ModelOpt quantized refit "
        "requires the ModelOpt weight-loading path. Set quant_cfg=null or set refit_with_reload_api=false."
    )
    return Finding(code=R6.code, path="quant_cfg", value=quant_cfg, message=message)


def _draft_step(view: ConfigView) -> Finding | None:
    """Step 7 (R7): no Eagle draft-weight refit."""
    if not view.flag("_draft_weights_from_refit"):
        return None
    message = (
        f"{_RELOAD} is not supported yet when policy.draft.enabled=true. Support for Eagle draft-weight "
        "refit with vLLM's reload_weights API will be added later. Set policy.draft.enabled=false or set "
        "refit_with_reload_api=false for now."
    )
    return Finding(code=R7.code, path="_draft_weights_from_refit", value=True, message=message)


def _mtp_step(view: ConfigView) -> Finding | None:
    """Step 8 (R8): no trained-MTP refit while ``vllm_kwargs.speculative_config`` drafts tokens by MTP."""
    vllm_kwargs = view.section("vllm_kwargs")
    spec = vllm_kwargs.get("speculative_config") if vllm_kwargs is not None else None
    if not isinstance(spec, Mapping) or spec.get("num_speculative_tokens") == 0:
        spec = {}
    mtp_from_refit = view.flag("_mtp_weights_from_refit")  # type-checked whatever the method
    if spec.get("method") not in ("deepseek_mtp", "mtp") or not mtp_from_refit:
        return None
    message = (
        f"{_RELOAD} is not supported yet when vLLM refit also updates MTP draft weights. Support for MTP "
        "speculative decoding with reload refit will be added later. Set refit_with_reload_api=false for now."
    )
    return Finding(code=R8.code, path="_mtp_weights_from_refit", value=True, message=message)


_RELOAD_STEPS = (_colocation_step, _transport_step, _quantization_step, _draft_step, _mtp_step)


@checks(R2, R3, R4, R5, R6, R7, R8)
def reload_refit_violation(config: VllmConfig | Mapping[str, Any]) -> Finding | None:
    """The finding (code ``R2``..``R8``, path relative to the section) of the first failing step of SPEC §1.4, or
    ``None`` when supported.

    Same contract as :func:`assert_reload_refit_config_supported`, which raises what this returns.  Raises
    ``ConfigContractError`` for a non-mapping section or a non-bool flag in a mapping, ``ContractTypeError`` for a
    ``config`` of another type.
    """
    view = _view_of(config)
    if not _reload_requested(view):
        return None
    return next(filter(None, (step(view) for step in _RELOAD_STEPS)), None)


def assert_reload_refit_config_supported(config: VllmConfig | Mapping[str, Any]) -> None:
    """Reject config combinations that vLLM's native ``reload_weights`` refit does not support (SPEC §1.4).

    Passes when reload refit is off (``vllm_cfg`` absent, empty, or without ``refit_with_reload_api: true``) and
    for the one supported combination: not colocated, ``refit_transport`` null, no ``quant_cfg``, no Eagle draft
    refit, no trained-MTP refit with an MTP speculative method.  Raises ``UnsupportedConfigError`` (also
    ``ValueError`` and ``AssertionError``) at the first unsupported step; ``ConfigContractError`` for a missing
    ``colocated``/``colocated.enabled``, a non-mapping section or a non-bool flag; ``ContractTypeError`` for a
    ``config`` of another type.

    Divergence: the reference uses ``assert`` for some checks (removed by ``python -O``), fails with a
    ``KeyError`` when ``colocated`` or ``colocated.enabled`` is missing, and reads flags by truthiness.
    """
    finding = reload_refit_violation(config)
    if finding is None:
        return
    error = ConfigContractError if finding.value is ABSENT else UnsupportedConfigError
    raise error(finding.message, path=finding.path, value=render_value(finding.value))
