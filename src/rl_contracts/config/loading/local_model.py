"""The model a recipe serves, and its ``config.json`` when the model is a local folder of the recipe's repository
(so that N2 and N7 run without ``--model-config``).  Only a ``config.json`` inside the repository root and the
load's ``root`` (symbolic links resolved) is read, never printed (docs/security.md).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from ..._internal.config_paths import value_at
from .compose import find_root

__all__ = ["MAX_CONFIG_BYTES", "local_model_config", "served_model_name"]

MAX_CONFIG_BYTES: Final = 4 * 1024 * 1024
"""The largest ``config.json`` read (Hugging Face configs are a few KiB)."""

_POLICY_GENERATION: Final = "policy.generation"


def served_model_name(document: Mapping[Any, Any], section: str) -> str | None:
    """The model the generation ``section`` of the resolved ``document`` serves, as the trainer sets it: for
    ``policy.generation``, ``policy.model_name`` (``grpo.setup`` overwrites the section's own with it), else the
    section's own ``model_name``; ``None`` when there is no non-empty string."""
    candidates = [f"{section}.model_name"]
    if section == _POLICY_GENERATION:
        candidates.insert(0, "policy.model_name")
    for dotted in candidates:
        value = value_at(document, dotted)
        if isinstance(value, str) and value:
            return value
    return None


def local_model_config(
    model_name: str | None, recipe_file: str | Path, root: str | os.PathLike[str] | None = None
) -> dict[str, Any] | None:
    """The parsed ``config.json`` of ``model_name`` (a path, absolute or relative to the repository root) when it
    is a folder inside the repository root and ``root`` (symbolic links followed) holding a regular, UTF-8 JSON
    object ``config.json`` of at most :data:`MAX_CONFIG_BYTES`; else ``None``, never an exception."""
    if not model_name or "\x00" in model_name:
        return None
    try:
        repository = find_root(Path(recipe_file))
        bounds = [repository] if root is None else [repository, Path(root).resolve()]
        folder = (repository / model_name).resolve(strict=True)  # an absolute model_name replaces the root
        config = (folder / "config.json").resolve(strict=True)
        inside = all(folder.is_relative_to(bound) and config.is_relative_to(bound) for bound in bounds)
        if not folder.is_dir() or not inside:
            return None
        if not config.is_file() or config.stat().st_size > MAX_CONFIG_BYTES:
            return None
        with config.open("rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
        if len(raw) > MAX_CONFIG_BYTES:
            return None
        parsed = json.loads(raw.decode("utf-8"))
    except (OSError, RuntimeError, ValueError, RecursionError):
        return None
    return parsed if isinstance(parsed, dict) else None
