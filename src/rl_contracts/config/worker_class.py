"""Worker-class resolution (SPEC §1.5): the ModelOpt-quantized twin of a default vLLM worker class when the
generation section sets ``quant_cfg``."""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Any

from ..errors import ContractTypeError
from .section.generation import VllmConfig

__all__ = ["GENERATION_WORKER_OVERRIDES", "resolve_generation_worker_cls"]

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
"""Read-only map from a default vLLM worker class to its ModelOpt-quantized twin (SPEC §1.5)."""


def resolve_generation_worker_cls(default_cls: str, config: Mapping[str, Any] | VllmConfig) -> str:
    """The ModelOpt-quantized twin of ``default_cls`` when ``quant_cfg`` is set (not ``None``; SPEC §1.5), else
    ``default_cls`` (also for a class without a twin); imports nothing.  ``ContractTypeError`` when
    ``default_cls`` is not a ``str`` or ``config`` neither a mapping nor a ``VllmConfig``."""
    if not isinstance(default_cls, str):
        raise ContractTypeError.for_value("default_cls", "a str (a fully qualified class name)", default_cls)
    if isinstance(config, VllmConfig):
        quant_cfg: object = config.quant_cfg
    elif isinstance(config, Mapping):
        quant_cfg = config.get("quant_cfg")
    else:
        raise ContractTypeError.for_value("config", "a mapping or a VllmConfig", config)
    return default_cls if quant_cfg is None else GENERATION_WORKER_OVERRIDES.get(default_cls, default_cls)
