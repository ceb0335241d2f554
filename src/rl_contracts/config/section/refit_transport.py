"""The refit-transport rules C6–C9: SPEC §1.3's refit steps, one function per step, run in order by
:func:`check_refit` for ``VllmConfig`` (every finding) and ``normalize_vllm_refit_config`` (the first one).  A step
whose premise failed is not run (an unknown transport has no refit config to check).
"""

from __future__ import annotations

from typing import NamedTuple

from pydantic import ValidationError

from ..._internal.config_absent import ABSENT
from ..._internal.config_examples import generation_example
from ..._internal.config_paths import dotted
from ..._internal.config_view import ConfigView
from ..._internal.messages import render, type_name
from ..finding import Finding
from ..rule import Rule, checks
from .cross_field import nvfp4_findings
from .refit_cfg import (
    VLLM_REFIT_SELECTORS,
    VllmCheckpointEnginePluginConfig,
    VllmRefitConfig,
    is_plugin_path,
)

__all__ = ["C6", "C7", "C8", "C9", "RefitCheck", "check_refit"]

_NORMALISATION = "vllm/config.py refit normalisation (S1)"
_RAISES = "The refit normalisation of `vllm/config.py` (S1) raises a `ValueError`"

C6 = Rule(
    "C6",
    "legacy-checkpoint-engine-key",
    summary="the legacy checkpoint_engine key was replaced by refit_transport='nixl'",
    reference=_NORMALISATION,
    what_it_checks="That the legacy `policy.generation.checkpoint_engine` key is absent or null.",
    why_it_matters=(
        f"{_RAISES}: the key was replaced by `refit_transport: nixl` and `refit_cfg.nixl`, and is no longer read."
    ),
    example=generation_example("checkpoint_engine:", "  enabled: true"),
    fix="Remove `checkpoint_engine`; set `refit_transport: nixl` and its settings under `refit_cfg.nixl`.",
)
C7 = Rule(
    "C7",
    "unknown-refit-transport",
    summary="refit_transport is not a known selector or a module:ClassName path",
    reference=_NORMALISATION,
    what_it_checks=(
        "That `refit_transport` is null (the topology default), one of `nccl_reshard`, `vllm_s3_sparse`, "
        "`vllm_zmq_sparse`, `nixl`, or a `module.path:ClassName` checkpoint-engine plugin."
    ),
    why_it_matters=(
        f"{_RAISES} for an unknown transport before training starts; the first refit would have no way to send "
        "the weights."
    ),
    example=generation_example("refit_transport: nccl"),
    fix="Use `refit_transport: null` for the default NCCL/CUDA-IPC refit, or one of the names the issue lists.",
)
C8 = Rule(
    "C8",
    "encoder-cache-reset-unsupported",
    summary="reset_encoder_cache_after_weight_update with a transport that does not reset it",
    reference=_NORMALISATION,
    what_it_checks=(
        "That `vllm_cfg.reset_encoder_cache_after_weight_update` is set only with a transport that resets the "
        "multimodal encoder cache (null or `nccl_reshard`)."
    ),
    why_it_matters=f"{_RAISES}; without it, stale vision embeddings would silently survive every weight update.",
    example=generation_example(
        "refit_transport: nixl", "vllm_cfg:", "  reset_encoder_cache_after_weight_update: true"
    ),
    fix="Use `refit_transport: null` or `nccl_reshard`, or drop `reset_encoder_cache_after_weight_update`.",
)
C9 = Rule(
    "C9",
    "invalid-refit-cfg",
    summary="refit_cfg does not validate for the selected transport",
    reference=_NORMALISATION,
    what_it_checks=(
        "That `refit_cfg` validates for the selected transport, and that a `module:ClassName` transport has "
        'its plugin config under `refit_cfg["module:ClassName"]`.'
    ),
    why_it_matters=f"{_RAISES} (pydantic's errors) before training.",
    example=generation_example("refit_transport: my_package.engines:MyEngine"),
    fix=(
        'Add `refit_cfg: {"my_package.engines:MyEngine": {...}}` with the plugin\'s settings, or fix the keys '
        "the issue names."
    ),
)


class RefitCheck(NamedTuple):
    """The outcome of the refit steps: the findings, in step order, and the validated refit config.

    ``refit`` is ``None`` for the topology default and ``nccl_reshard``, and whenever a step failed.
    ``invalid`` says which config did not validate when the last findings are its pydantic errors (C9).
    """

    findings: tuple[Finding, ...]
    refit: VllmRefitConfig | None
    invalid: str = ""


def _legacy_checkpoint_engine(view: ConfigView) -> list[Finding]:
    """Step 1 (C6): a non-null legacy ``checkpoint_engine`` key."""
    legacy = view.get("checkpoint_engine")
    if legacy is None:
        return []
    message = (
        "policy.generation.checkpoint_engine was replaced by policy.generation.refit_transport='nixl' and "
        "policy.generation.refit_cfg.nixl."
    )
    return [Finding(code=C6.code, path="checkpoint_engine", value=legacy, message=message)]


def _selected_transport(view: ConfigView) -> str | Finding | None:
    """Steps 3–4 (C7): the transport string, ``None`` when absent or null, or the finding of a bad one."""
    transport = view.get("refit_transport")
    if transport is None:
        return None
    if not isinstance(transport, str):
        message = (
            f"policy.generation.refit_transport must be null or a str, got {type_name(transport)} "
            f"{render(transport)}."
        )
    elif transport not in VLLM_REFIT_SELECTORS and not is_plugin_path(transport):
        message = (
            f"Unknown vLLM refit transport {render(transport)}: expected null, 'nccl_reshard', 'vllm_s3_sparse', "
            "'vllm_zmq_sparse', 'nixl', or a 'module:ClassName' checkpoint-engine path."
        )
    else:
        return transport
    return Finding(code=C7.code, path="refit_transport", value=transport, message=message)


def _encoder_cache_reset(view: ConfigView, transport: str) -> list[Finding]:
    """Step 5 (C8): ``vllm_cfg.reset_encoder_cache_after_weight_update`` with a transport that does not reset it."""
    vllm_cfg = view.section("vllm_cfg")
    if vllm_cfg is None or not vllm_cfg.flag("reset_encoder_cache_after_weight_update"):
        return []
    message = (
        "vllm_cfg.reset_encoder_cache_after_weight_update is not supported with "
        f"refit_transport={render(transport)}: this transport's refit path does not reset the multimodal "
        "encoder cache, so stale vision embeddings would silently survive weight updates. Supported "
        "transports: null (collective/IPC) and 'nccl_reshard'."
    )
    path = "vllm_cfg.reset_encoder_cache_after_weight_update"
    return [Finding(code=C8.code, path=path, value=True, message=message)]


def _invalid(loc: tuple[str, ...], what: str, exc: ValidationError) -> RefitCheck:
    """C9: one finding per pydantic error of the config at ``loc`` that did not validate (``what``)."""
    findings = tuple(
        Finding(code=C9.code, path=dotted((*loc, *error["loc"])), value=error["input"], message=error["msg"])
        for error in exc.errors()
    )
    return RefitCheck(findings, None, what)


def _validated_refit_cfg(view: ConfigView, transport: str) -> VllmRefitConfig | RefitCheck:
    """Step 6 (C9): ``refit_cfg`` (``{}`` when absent or null) as ``VllmRefitConfig``, with a plugin's config."""
    raw = view.get("refit_cfg")
    try:
        refit = VllmRefitConfig.model_validate({} if raw is None else raw)
    except ValidationError as exc:
        return _invalid(("refit_cfg",), "policy.generation.refit_cfg is not a valid VllmRefitConfig", exc)
    if not is_plugin_path(transport):
        return refit
    shown = render(transport)
    plugin = (refit.model_extra or {}).get(transport)
    if plugin is None:
        message = f"Custom checkpoint-engine transport {shown} requires policy.generation.refit_cfg[{shown}]."
        finding = Finding(code=C9.code, path=dotted(("refit_cfg", transport)), value=ABSENT, message=message)
        return RefitCheck((finding,), None)
    try:
        VllmCheckpointEnginePluginConfig.model_validate(plugin)
    except ValidationError as exc:
        what = f"policy.generation.refit_cfg[{shown}] is not a valid VllmCheckpointEnginePluginConfig"
        return _invalid(("refit_cfg", transport), what, exc)
    return refit


@checks(C6, C7, C8, C9)
def check_refit(view: ConfigView, *, nvfp4: bool, first_only: bool) -> RefitCheck:
    """Run SPEC §1.3's steps 1–6 in order; ``nvfp4`` adds step 2 (the C10 conflict with a transport).

    ``VllmConfig`` passes ``nvfp4=False`` (it checks that conflict as part of its own rule C10).  Raises
    ``ConfigContractError`` for a non-mapping section or a non-bool flag in a mapping (:class:`ConfigView`).
    """
    found = _legacy_checkpoint_engine(view)
    if nvfp4 and not (first_only and found):
        found += nvfp4_findings(view, ("refit_transport",))
    if first_only and found:
        return RefitCheck(tuple(found), None)
    transport = _selected_transport(view)
    if isinstance(transport, Finding):
        return RefitCheck((*found, transport), None)
    if transport is None or transport == "nccl_reshard":
        return RefitCheck(tuple(found), None)
    found += _encoder_cache_reset(view, transport)
    if first_only and found:
        return RefitCheck(tuple(found), None)
    refit = _validated_refit_cfg(view, transport)
    if isinstance(refit, RefitCheck):
        return refit._replace(findings=(*found, *refit.findings))
    return RefitCheck(tuple(found), refit)
