"""Read-only access to a generation section given as a validated model or a plain, possibly partial mapping, so
that the refit rules (SPEC §1.3, §1.4) serve ``VllmConfig`` and worker-side re-checks alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from pydantic import BaseModel

from ..errors import ConfigContractError
from .config_base import known_keys
from .config_paths import Loc, dotted
from .messages import render, type_name

__all__ = ["SECTION", "ConfigView"]

SECTION = "policy.generation"
"""The dotted path of the generation section, used in messages."""

_field_names = cache(known_keys)


class ConfigView:
    """Read-only access to a config given as a model or a (partial) mapping, by canonical key spelling (an
    underscore key also answers to its spelling without it; both at once is a ``ConfigContractError``)."""

    __slots__ = ("_loc", "_source")

    def __init__(self, source: BaseModel | Mapping[str, Any], loc: Loc = ()) -> None:
        self._source = source
        self._loc = loc

    def path(self, key: str) -> str:
        """The dotted path of ``key`` relative to the generation section."""
        return dotted((*self._loc, key))

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
                f"{SECTION}.{self.path(key)} is given twice, as {key!r} and {key[1:]!r}; give it once "
                f"(the canonical spelling is {key!r}).",
                path=self.path(key),
                value=render(source[key]),
            )
        return (True, source[present[0]]) if present else (False, None)

    def is_set(self, key: str) -> bool:
        """Whether ``key`` was given (a model's: set at construction or kept as an extra key)."""
        source = self._source
        if isinstance(source, BaseModel):
            name = _field_names(type(source)).get(key)
            return name in source.model_fields_set if name is not None else key in (source.model_extra or {})
        return self.lookup(key)[0]

    def get(self, key: str) -> object:
        """The value of ``key``, ``None`` when absent."""
        return self.lookup(key)[1]

    def is_empty(self) -> bool:
        """Whether the section has no keys (a model never is empty)."""
        return not isinstance(self._source, BaseModel) and len(self._source) == 0

    def section(self, key: str) -> ConfigView | None:
        """A view of the sub-section ``key``; ``None`` when absent or null; a non-mapping is an error."""
        value = self.get(key)
        if value is None:
            return None
        if isinstance(value, BaseModel | Mapping):
            return ConfigView(value, (*self._loc, key))
        raise self._wrong(key, "a mapping or null", value)

    def flag(self, key: str) -> bool | None:
        """The boolean ``key``; ``None`` when absent or null; any other type is an error naming the key."""
        value = self.get(key)
        if value is None or isinstance(value, bool):
            return value
        raise self._wrong(key, "a bool (true or false) or null", value)

    def _wrong(self, key: str, expected: str, value: object) -> ConfigContractError:
        return ConfigContractError(
            f"{SECTION}.{self.path(key)} must be {expected}, got {type_name(value)} {render(value)}.",
            path=self.path(key),
            value=render(value),
        )
