"""Reading recipe YAML as OmegaConf does, and the text of OmegaConf and YAML failures.

:class:`RecipeLoader` is a safe PyYAML loader whose scalars resolve as in OmegaConf's (node marks for provenance,
``--set`` values); :func:`reason` is the first line of a failure, bounded; :func:`kind` names a value's shape.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

from omegaconf import DictConfig, ListConfig

from ..._internal.messages import shorten, type_name

_yaml: Any = importlib.import_module("yaml")  # PyYAML (OmegaConf's parser) ships no type stubs

__all__ = ["REASON_CHARS", "RecipeLoader", "kind", "reason"]

REASON_CHARS = 300
"""Bound on the text of one OmegaConf/YAML failure quoted in an issue."""

_FLOAT_TAG = "tag:yaml.org,2002:float"
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
# YAML 1.2 floats that YAML 1.1 (PyYAML's default) reads as strings, such as 1e-8; OmegaConf reads them as floats.
_FLOAT = re.compile(
    r"""^(?:[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+
        |\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
        |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
    re.VERBOSE,
)


class RecipeLoader(getattr(_yaml, "CSafeLoader", _yaml.SafeLoader)):  # type: ignore[misc]
    """A safe PyYAML loader whose scalars resolve as in OmegaConf's loader: YAML 1.2 floats (``1e-8``), and
    timestamps read as strings.  Used for node marks (provenance) and ``--set`` values, never for composing."""


RecipeLoader.add_implicit_resolver(_FLOAT_TAG, _FLOAT, list("-+0123456789."))
RecipeLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP_TAG]
    for first, resolvers in RecipeLoader.yaml_implicit_resolvers.items()
}


def kind(value: object) -> str:
    """``"mapping"``, ``"list"`` or the type name of ``value``."""
    if isinstance(value, dict | DictConfig):
        return "mapping"
    if isinstance(value, list | ListConfig):
        return "list"
    return type_name(value)


def reason(exc: BaseException) -> str:
    """The first line of an exception message (OmegaConf appends ``full_key``/``object_type`` lines), shortened."""
    try:
        text = str(exc)
    except Exception:
        text = ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return shorten(lines[0] if lines else type_name(exc), REASON_CHARS)
