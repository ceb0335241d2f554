"""The model a recipe serves, and its ``config.json`` when the model is a local folder of the recipe's repository.

NeMo RL's ``grpo.setup`` overwrites the generation section's ``model_name`` with ``policy.model_name`` before it
configures generation (``generation_config["model_name"] = policy_config["model_name"]``), so a GRPO recipe names
its model once, at ``policy.model_name``; an evaluation config names it at ``generation.model_name``.
:func:`served_model_name` reads it that way; :func:`local_model_config` reads the model's ``config.json`` when
``model_name`` is a local folder, so that the rules needing the model's configuration (N2, N7) run without
``--model-config``.

Security: a recipe may come from anyone, so only a ``config.json`` inside the recipe's repository root (the nearest
folder above the recipe holding ``.git``, else the recipe's own folder: :func:`~.compose.find_root`) is read, and
inside the ``root=`` the load was given too (the folder trusted for ``defaults`` parents never widens what is read,
only narrows it), after resolving symbolic links, as a regular file of at most :data:`MAX_CONFIG_BYTES`; its content is parsed as JSON and never printed (rules
report findings about it, not its text).  Any other model (a hub id, a folder elsewhere) reads as ``None`` and the
rules stay skipped, naming ``--model-config``: an explicitly given config is the only way to use one from elsewhere.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from .compose import find_root

__all__ = ["MAX_CONFIG_BYTES", "local_model_config", "served_model_name"]

MAX_CONFIG_BYTES: Final = 4 * 1024 * 1024
"""The largest ``config.json`` read (Hugging Face configs are a few KiB)."""

_POLICY_GENERATION: Final = "policy.generation"


def _lookup(document: Mapping[Any, Any], dotted: str) -> object:
    node: object = document
    for key in dotted.split("."):
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node


def served_model_name(document: Mapping[Any, Any], section: str) -> str | None:
    """The model the generation ``section`` of the resolved ``document`` serves, as the trainer sets it.

    For ``policy.generation``: ``policy.model_name`` when it is a non-empty string (the trainer overwrites the
    section's own ``model_name`` with it), else the section's own.  For any other section (an evaluation's
    ``generation``): the section's own ``model_name``.  ``None`` when there is no such string.
    """
    candidates = [f"{section}.model_name"]
    if section == _POLICY_GENERATION:
        candidates.insert(0, "policy.model_name")
    for dotted in candidates:
        value = _lookup(document, dotted)
        if isinstance(value, str) and value:
            return value
    return None


def local_model_config(
    model_name: str | None, recipe_file: str | Path, root: str | os.PathLike[str] | None = None
) -> dict[str, Any] | None:
    """The parsed ``config.json`` of ``model_name`` when it is a local folder inside the recipe's repository (and
    inside ``root``, the folder the load trusts for parents, when one is given).

    ``model_name`` is a path, absolute or relative to the repository root (:func:`~.compose.find_root`: where the
    trainer is launched from).  Returns ``None`` when it is ``None``, not an existing folder, resolves (symbolic
    links followed) outside the repository root or ``root``, has no regular ``config.json`` there of at most
    :data:`MAX_CONFIG_BYTES`, or the file is not a UTF-8 JSON object.  Never raises for an unreadable or hostile
    path; never prints the file.
    """
    if not model_name or "\x00" in model_name:
        return None
    try:
        repository = find_root(Path(recipe_file))
        bounds = [repository] if root is None else [repository, Path(root).resolve()]
        candidate = Path(model_name)
        if not candidate.is_absolute():
            candidate = repository / candidate
        folder = candidate.resolve(strict=True)
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
