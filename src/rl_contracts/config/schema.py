"""The JSON Schema of the generation section, as ``rl-contracts schema`` prints it."""

from __future__ import annotations

from typing import Any

from .generation import VllmConfig

__all__ = ["config_json_schema"]


def config_json_schema() -> dict[str, Any]:
    """``VllmConfig``'s JSON Schema by alias in validation mode (what ``rl-contracts schema`` prints).

    Both are pydantic's defaults of ``model_json_schema``.
    """
    return VllmConfig.model_json_schema()
