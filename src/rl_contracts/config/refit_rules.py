"""Refit-transport normalisation, the reload-refit support check and worker-class resolution (SPEC §1.3–§1.5).

Each function accepts a validated :class:`~rl_contracts.config.models.VllmConfig` or a plain, possibly partial
mapping (worker-side code re-checks partial configs), never mutates it, and raises
:class:`~rl_contracts.errors.ConfigContractError` (or its subclass ``UnsupportedConfigError``) with ``.path``
(the dotted key relative to the generation section) and ``.value`` (the offending value, rendered; ``"<missing>"``
for an absent key).  The refit steps here are also rules C6–C9 of ``VllmConfig`` (one implementation).
"""

from __future__ import annotations

import types
from collections.abc import Generator, Mapping
from functools import cache
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from .._messages import render, shorten, type_name
from ..errors import ConfigContractError, ContractTypeError, UnsupportedConfigError
from .models import (
    _MISSING,
    VLLM_REFIT_SELECTORS,
    Loc,
    VllmCheckpointEnginePluginConfig,
    VllmConfig,
    VllmRefitConfig,
    _is_plugin_path,
    _Violation,
)

__all__ = [
    "GENERATION_WORKER_OVERRIDES",
    "assert_reload_refit_config_supported",
    "normalize_vllm_refit_config",
    "resolve_generation_worker_cls",
]

_SECTION = "policy.generation"
_MISSING_TEXT = "<missing>"
_RELOAD = "policy.generation.vllm_cfg.refit_with_reload_api=true"

GENERATION_WORKER_OVERRIDES: Mapping[str, str] = types.MappingProxyType(
    {
        "nemo_rl.models.generation.vllm.vllm_worker.VllmGenerationWorker": (
            "nemo_rl.modelopt.models.generation.vllm_quant_worker.VllmQuantGenerationWorker"
        ),
        "nemo_rl.models.generation.vllm.vllm_worker_async.VllmAsyncGenerationWorker": (
            "nemo_rl.modelopt.models.generation.vllm_quant_worker.VllmQuantAsyncGenerationWorker"
        ),
    }
)
"""Read-only map from a default vLLM worker class to its ModelOpt-quantized twin (SPEC §1.5).

Divergence: the reference's map is a plain mutable dict.
"""


def _dotted(loc: Loc) -> str:
    """``("stop_token_ids", 2)`` -> ``"stop_token_ids[2]"``; ``("vllm_cfg", "x")`` -> ``"vllm_cfg.x"``."""
    text = ""
    for item in loc:
        text += f"[{item}]" if isinstance(item, int) else (f".{item}" if text else str(item))
    return text


@cache
def _field_names(model_cls: type[BaseModel]) -> dict[str, str]:
    """Map every accepted key spelling (field name and alias) of ``model_cls`` to its attribute name."""
    names: dict[str, str] = {}
    for name, field in model_cls.model_fields.items():
        names[name] = name
        if field.alias:
            names[field.alias] = name
    return names


class _ConfigView:
    """Read-only access to a config given as a model or a (partial) mapping, by canonical key spelling.

    An underscore key (``_mtp_weights_from_refit``) also answers to its spelling without the underscore;
    a mapping that holds both spellings is rejected.  ``section`` and ``flag`` type-check what they read.
    """

    __slots__ = ("_loc", "_source")

    def __init__(self, source: BaseModel | Mapping[str, Any], loc: Loc = ()) -> None:
        self._source = source
        self._loc = loc

    def path(self, key: str) -> str:
        """The dotted path of ``key`` relative to the generation section."""
        return _dotted((*self._loc, key))

    def lookup(self, key: str) -> tuple[bool, object]:
        """``(present, value)`` of ``key``; ``(False, None)`` when absent."""
        source = self._source
        if isinstance(source, BaseModel):
            name = _field_names(type(source)).get(key)
            if name is not None:
                return True, getattr(source, name)
            extra = source.model_extra or {}
            return key in extra, extra.get(key)
        spellings = [key, key[1:]] if key.startswith("_") else [key]
        present = [spelling for spelling in spellings if spelling in source]
        if len(present) > 1:
            raise ConfigContractError(
                f"{_SECTION}.{self.path(key)} is given twice, as {key!r} and {key[1:]!r}; give it once "
                f"(the canonical spelling is {key!r}).",
                path=self.path(key),
                value=render(source[key]),
            )
        return (True, source[present[0]]) if present else (False, None)

    def get(self, key: str) -> object:
        """The value of ``key``, ``None`` when absent."""
        return self.lookup(key)[1]

    def is_empty(self) -> bool:
        """Whether the section has no keys (a model never is empty)."""
        return not isinstance(self._source, BaseModel) and len(self._source) == 0

    def section(self, key: str) -> _ConfigView | None:
        """A view of the sub-section ``key``; ``None`` when absent or null; a non-mapping is an error."""
        value = self.get(key)
        if value is None:
            return None
        if isinstance(value, BaseModel | Mapping):
            return _ConfigView(value, (*self._loc, key))
        raise ConfigContractError(
            f"{_SECTION}.{self.path(key)} must be a mapping or null, got {type_name(value)} {render(value)}.",
            path=self.path(key),
            value=render(value),
        )

    def flag(self, key: str) -> bool | None:
        """The boolean ``key``; ``None`` when absent or null; any other type is an error naming the key."""
        value = self.get(key)
        if value is None or isinstance(value, bool):
            return value
        raise ConfigContractError(
            f"{_SECTION}.{self.path(key)} must be a bool (true or false) or null, got {type_name(value)} "
            f"{render(value)}.",
            path=self.path(key),
            value=render(value),
        )


def _view_of(config: object) -> _ConfigView:
    if isinstance(config, VllmConfig | Mapping):
        return _ConfigView(config)
    raise ContractTypeError.for_value("config", "a VllmConfig or a mapping of the generation section", config)


def _nvfp4_violations(view: _ConfigView, keys: tuple[str, ...]) -> list[_Violation]:
    """Rule C10 (second part): with NVFP4 per-token rollout on, each of ``keys`` that is set is a violation."""
    nvfp4 = view.section("nvfp4_pertoken_rollout")
    if nvfp4 is None or not nvfp4.flag("enabled"):
        return []
    violations = []
    for key in keys:
        value: object = view.flag(key) if key == "real_quant" else view.get(key)
        if (value is True) if key == "real_quant" else (value is not None):
            violations.append(
                _Violation(
                    "C10",
                    (key,),
                    "nvfp4_pertoken_rollout.enabled=true requires quant_cfg=null, real_quant=false and "
                    f"refit_transport=null; got {key}={render(value)}.",
                    value,
                )
            )
    return violations


def _errors_of(exc: ValidationError) -> tuple[ErrorDetails, ...]:
    """The line errors of a nested validation (only their ``type``, ``loc``, ``msg`` and ``input`` are read)."""
    return tuple(exc.errors())


def _refit_steps(view: _ConfigView, *, nvfp4: bool) -> Generator[_Violation, None, VllmRefitConfig | None]:
    """Run SPEC §1.3's steps, yielding each violation; return the validated refit config (``None`` if none).

    Steps whose premise failed are skipped (an unknown transport has no refit config to check).
    ``normalize_vllm_refit_config`` (``nvfp4=True``) raises the first violation; ``VllmConfig``
    (``nvfp4=False``) reports them all as C6–C9 and checks the NVFP4 conflict as part of its own rule C10.
    """
    legacy = view.get("checkpoint_engine")
    if legacy is not None:
        yield _Violation(
            "C6",
            ("checkpoint_engine",),
            "policy.generation.checkpoint_engine was replaced by policy.generation.refit_transport='nixl' and "
            "policy.generation.refit_cfg.nixl.",
            legacy,
        )
    if nvfp4:
        yield from _nvfp4_violations(view, ("refit_transport",))
    transport = view.get("refit_transport")
    if transport is not None and not isinstance(transport, str):
        yield _Violation(
            "C7",
            ("refit_transport",),
            f"policy.generation.refit_transport must be null or a str, got {type_name(transport)} "
            f"{render(transport)}.",
            transport,
        )
        return None
    if transport is None or transport == "nccl_reshard":
        return None
    shown = render(transport)
    if transport not in VLLM_REFIT_SELECTORS and not _is_plugin_path(transport):
        yield _Violation(
            "C7",
            ("refit_transport",),
            f"Unknown vLLM refit transport {shown}: expected null, 'nccl_reshard', 'vllm_s3_sparse', "
            "'vllm_zmq_sparse', 'nixl', or a 'module:ClassName' checkpoint-engine path.",
            transport,
        )
        return None
    vllm_cfg = view.section("vllm_cfg")
    if vllm_cfg is not None and vllm_cfg.flag("reset_encoder_cache_after_weight_update"):
        yield _Violation(
            "C8",
            ("vllm_cfg", "reset_encoder_cache_after_weight_update"),
            "vllm_cfg.reset_encoder_cache_after_weight_update is not supported with "
            f"refit_transport={shown}: this transport's refit path does not reset the multimodal encoder "
            "cache, so stale vision embeddings would silently survive weight updates. Supported transports: "
            "null (collective/IPC) and 'nccl_reshard'.",
            True,
        )
    raw = view.get("refit_cfg")
    try:
        refit = VllmRefitConfig.model_validate({} if raw is None else raw)
    except ValidationError as exc:
        yield _Violation(
            "C9",
            ("refit_cfg",),
            "policy.generation.refit_cfg is not a valid VllmRefitConfig",
            raw,
            _errors_of(exc),
        )
        return None
    if _is_plugin_path(transport):
        plugin = (refit.model_extra or {}).get(transport)
        if plugin is None:
            yield _Violation(
                "C9",
                ("refit_cfg", transport),
                f"Custom checkpoint-engine transport {shown} requires policy.generation.refit_cfg[{shown}].",
                _MISSING,
            )
            return None
        try:
            VllmCheckpointEnginePluginConfig.model_validate(plugin)
        except ValidationError as exc:
            yield _Violation(
                "C9",
                ("refit_cfg", transport),
                f"policy.generation.refit_cfg[{shown}] is not a valid VllmCheckpointEnginePluginConfig",
                plugin,
                _errors_of(exc),
            )
            return None
    return refit


def _as_error(violation: _Violation) -> ConfigContractError:
    """The ``ConfigContractError`` for one violation; a nested validation lists its error locations."""
    if not violation.nested:
        # render(_MISSING) is "<missing>", the text of an absent key
        return ConfigContractError(
            violation.message, path=_dotted(violation.loc), value=render(violation.value)
        )
    errors = violation.nested
    shown = "; ".join(shorten(f"{_dotted((*violation.loc, *e['loc']))}: {e['msg']}", 200) for e in errors[:8])
    more = f" ... ({len(errors)} total)" if len(errors) > 8 else ""
    first = errors[0]
    return ConfigContractError(
        f"{violation.message} ({len(errors)} validation error(s)): {shown}{more}",
        path=_dotted((*violation.loc, *first["loc"])),
        value=_MISSING_TEXT if first["type"] == "missing" else render(first["input"]),
    )


def normalize_vllm_refit_config(config: VllmConfig | Mapping[str, Any]) -> VllmRefitConfig | None:
    """Validate the selected refit transport and return its refit config (SPEC §1.3).

    Returns ``None`` for the topology default (``refit_transport`` null or absent) and for ``"nccl_reshard"``;
    otherwise a new validated :class:`VllmRefitConfig` (``refit_cfg``, ``{}`` when absent or null).  A
    ``module:ClassName`` transport's plugin config stays under its key in ``model_extra``, as given, after being
    validated as :class:`VllmCheckpointEnginePluginConfig`.

    Raises ``ConfigContractError`` (``.path``, ``.value``) at the first failing step: a non-null legacy
    ``checkpoint_engine`` (C6); NVFP4 per-token rollout with a transport (C10); a non-str or unknown transport
    (C7); ``vllm_cfg.reset_encoder_cache_after_weight_update`` with a transport (C8); an invalid ``refit_cfg``
    or a missing/invalid plugin config (C9; the message lists pydantic's error locations).  A non-mapping
    section or a non-bool flag in a mapping is a ``ConfigContractError`` naming the key; a ``config`` that is
    neither a ``VllmConfig`` nor a mapping is a ``ContractTypeError``.

    Divergence: the reference writes the validated model back into ``config["refit_cfg"]``; this returns it and
    leaves the input untouched.  The reference accepts any string with a colon as a plugin path; this requires
    ``module.path:ClassName``.

    Example::

        >>> normalize_vllm_refit_config({"refit_transport": "nixl"}).nixl.device
        'cuda'
    """
    steps = _refit_steps(_view_of(config), nvfp4=True)
    try:
        violation = next(steps)
    except StopIteration as stop:
        refit: VllmRefitConfig | None = stop.value
        return None if refit is None else refit.model_copy(deep=True)
    steps.close()
    raise _as_error(violation)


def _unsupported(message: str, path: str, value: object) -> UnsupportedConfigError:
    return UnsupportedConfigError(message, path=path, value=render(value))


def assert_reload_refit_config_supported(config: VllmConfig | Mapping[str, Any]) -> None:
    """Reject config combinations that vLLM's native ``reload_weights`` refit does not support (SPEC §1.4).

    Returns ``None`` when ``vllm_cfg`` is absent or empty or ``vllm_cfg.refit_with_reload_api`` is not true, and
    for the single supported combination: not colocated, ``refit_transport`` null, no ``quant_cfg``, no Eagle
    draft refit, and no trained-MTP refit while an MTP speculative method is configured.

    Raises ``UnsupportedConfigError`` (also ``ValueError`` and ``AssertionError``) at the first unsupported
    combination, with ``.path`` ``colocated.enabled``, ``refit_transport``, ``quant_cfg``,
    ``_draft_weights_from_refit`` or ``_mtp_weights_from_refit``; ``ConfigContractError`` for a missing
    ``colocated`` section or ``colocated.enabled``, for a non-mapping section, and for a flag in a mapping that
    is neither a bool nor absent/null; ``ContractTypeError`` for a ``config`` of another type.

    Divergence: the reference uses ``assert`` for some checks (removed by ``python -O``), fails with a
    ``KeyError`` when ``colocated`` or ``colocated.enabled`` is missing, and reads flags by truthiness.
    """
    view = _view_of(config)
    vllm_cfg = view.section("vllm_cfg")
    if vllm_cfg is None or vllm_cfg.is_empty() or vllm_cfg.flag("refit_with_reload_api") is not True:
        return
    colocated = view.section("colocated")
    if colocated is None:
        raise ConfigContractError(
            f"policy.generation.colocated is required when {_RELOAD}.", path="colocated", value=_MISSING_TEXT
        )
    enabled = colocated.flag("enabled")
    if enabled is None:
        raise ConfigContractError(
            f"policy.generation.colocated.enabled is required when {_RELOAD}.",
            path="colocated.enabled",
            value=_MISSING_TEXT,
        )
    if enabled:
        raise _unsupported(
            f"{_RELOAD} is not supported yet with colocated vLLM refit. Support for the colocated IPC/ZMQ "
            "reload-refit path will be added later. Set refit_with_reload_api=false for now.",
            "colocated.enabled",
            enabled,
        )
    transport = view.get("refit_transport")
    if transport == "nccl_reshard":
        raise _unsupported(
            f"{_RELOAD} is explicitly unsupported with policy.generation.refit_transport='nccl_reshard'. "
            "nccl_reshard_refit is its own refit path and does not use vLLM's reload_weights API.",
            "refit_transport",
            transport,
        )
    if transport == "nixl" or (isinstance(transport, str) and ":" in transport):
        raise _unsupported(
            f"{_RELOAD} is not supported yet with checkpoint-engine refit (update_weights_from_checkpoint_engine). "
            "Support for using vLLM's reload_weights API with checkpoint-engine transports is future work. "
            "Set refit_transport=null or set refit_with_reload_api=false for now.",
            "refit_transport",
            transport,
        )
    if transport is not None:
        raise _unsupported(
            f"{_RELOAD} is only supported with the default non-colocated collective refit path. Got "
            f"policy.generation.refit_transport={render(transport)}. Set refit_transport=null or set "
            "refit_with_reload_api=false.",
            "refit_transport",
            transport,
        )
    quant_cfg = view.get("quant_cfg")
    if quant_cfg is not None:
        raise _unsupported(
            f"{_RELOAD} is explicitly unsupported with policy.generation.quant_cfg set. ModelOpt quantized refit "
            "requires the ModelOpt weight-loading path. Set quant_cfg=null or set refit_with_reload_api=false.",
            "quant_cfg",
            quant_cfg,
        )
    if view.flag("_draft_weights_from_refit"):
        raise _unsupported(
            f"{_RELOAD} is not supported yet when policy.draft.enabled=true. Support for Eagle draft-weight "
            "refit with vLLM's reload_weights API will be added later. Set policy.draft.enabled=false or set "
            "refit_with_reload_api=false for now.",
            "_draft_weights_from_refit",
            True,
        )
    vllm_kwargs = view.section("vllm_kwargs")
    spec = vllm_kwargs.get("speculative_config") if vllm_kwargs is not None else None
    method = (
        spec.get("method") if isinstance(spec, Mapping) and spec.get("num_speculative_tokens") != 0 else None
    )
    mtp_from_refit = view.flag("_mtp_weights_from_refit")
    if method in ("deepseek_mtp", "mtp") and mtp_from_refit:
        raise _unsupported(
            f"{_RELOAD} is not supported yet when vLLM refit also updates MTP draft weights. Support for MTP "
            "speculative decoding with reload refit will be added later. Set refit_with_reload_api=false for now.",
            "_mtp_weights_from_refit",
            True,
        )


def resolve_generation_worker_cls(default_cls: str, config: Mapping[str, Any] | VllmConfig) -> str:
    """Return the ModelOpt-quantized worker class for ``default_cls`` when ``quant_cfg`` is set (SPEC §1.5).

    Returns ``default_cls`` when ``quant_cfg`` is absent or ``None``; otherwise
    ``GENERATION_WORKER_OVERRIDES.get(default_cls, default_cls)`` (an empty-string ``quant_cfg`` counts as
    set; an unknown class is returned unchanged).  Imports nothing, so it works without ModelOpt.

    Raises ``ContractTypeError`` when ``default_cls`` is not a ``str`` or ``config`` is neither a mapping nor a
    ``VllmConfig``.

    Divergence: the reference does not check the type of ``default_cls``.
    """
    if not isinstance(default_cls, str):
        raise ContractTypeError.for_value("default_cls", "a str (a fully qualified class name)", default_cls)
    if isinstance(config, VllmConfig):
        quant_cfg: object = config.quant_cfg
    elif isinstance(config, Mapping):
        quant_cfg = config.get("quant_cfg")
    else:
        raise ContractTypeError.for_value("config", "a mapping or a VllmConfig", config)
    if quant_cfg is None:
        return default_cls
    return GENERATION_WORKER_OVERRIDES.get(default_cls, default_cls)
