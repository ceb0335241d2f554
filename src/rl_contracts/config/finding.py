"""The one record of what a check found: :class:`Finding`, and the :class:`SuggestedFix` it may carry.

Every check makes findings and every output reads them; ``ConfigIssue`` is another name of :class:`Finding`.

>>> Finding(code="P9", path="grpo.num_prompts_per_step", value=3, message="m").severity
'error'
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, JsonValue, field_serializer

from .._internal.messages import MAX_VALUE_CHARS, render, shorten
from ..errors import RecipeLoadError

__all__ = ["Finding", "FixAction", "Severity", "SuggestedFix", "json_value"]

_JSON_CHARS = 2000

Severity = Literal["error", "warning", "skipped"]
"""``skipped``: a rule that needs an input it was not given, or reads a value that did not resolve."""

FixAction = Literal["rename", "move", "remove", "set"]
"""``rename``: the key, in place; ``move``: the entry, to another path; ``remove``: the entry; ``set``: the value
(the key added to the recipe given when it is absent)."""


class SuggestedFix(BaseModel):
    """The change at a finding's path that removes it (frozen): ``target`` the new key (``rename``) or dotted path
    (``move``), ``value`` the new value (``set``), ``description`` one line."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    action: FixAction
    description: str
    target: str | None = None
    value: JsonValue = None


class Finding(BaseModel):
    """One finding of one rule (frozen), docs/development/config-core.md ("The finding").

    ``path``: dotted from the root (``""`` for the file); ``value``: the offending value (``load_recipe`` renders
    it, with ``json_value`` its bounded JSON form and ``missing`` for an absent key); ``message`` (also
    ``reason``): what is wrong and the fix; ``source``/``line``/``column``: where the ``defaults:`` chain set it.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True, populate_by_name=True)

    code: str
    path: str = ""
    value: Any = None
    message: str = Field(validation_alias=AliasChoices("message", "reason"))
    severity: Severity = "error"
    fix: SuggestedFix | None = None
    source: str | None = None
    line: int | None = None
    column: int | None = None
    json_value: JsonValue = None
    missing: bool = False

    if TYPE_CHECKING:  # the message is accepted as ``message`` or as ``reason`` (ConfigIssue's keyword)

        def __init__(
            self,
            *,
            code: str,
            path: str = "",
            value: Any = None,
            message: str = ...,
            reason: str = ...,
            severity: Severity = "error",
            fix: SuggestedFix | None = None,
            source: str | None = None,
            line: int | None = None,
            column: int | None = None,
            json_value: JsonValue = None,
            missing: bool = False,
        ) -> None: ...

    @classmethod
    def for_load_error(cls, error: RecipeLoadError, *, file: str | None = None) -> Finding:
        """The finding (empty path; code ``V1``, or the error's ``code``) of a recipe that could not be read, in
        the error's file (else ``file``)."""
        return cls(
            code=error.code or "V1",
            value=error.value or "",
            message=error.message,
            source=error.file or file,
            line=error.line,
            column=error.column,
            json_value=json_value(error.value),
        )

    @property
    def reason(self) -> str:
        """The message (the name SPEC §1.8 gives it)."""
        return self.message

    @field_serializer("value", when_used="json")
    def _value_as_json(self, value: Any) -> JsonValue:
        """A JSON scalar as it is; anything else (a container, ``ABSENT``) its bounded ``repr``."""
        if value is None or isinstance(value, str | int | float | bool):
            return render(value) if isinstance(value, int) and abs(value) >= 2**63 else value
        return render(value)


class _TooLarge(Exception):
    """A container whose JSON text would exceed the bound whatever its elements are."""


def json_value(value: object) -> JsonValue:
    """``value`` as JSON, other values (or parts) as their ``repr``: strings shortened to 200 characters, a
    container over 2,000 characters of JSON, 1,000 elements or 32 levels as its shortened ``repr``.

    >>> json_value("x" * 300)[-5:], json_value(list(range(5000)))[-3:]
    ('xx...', '...')
    """

    def convert(item: object, depth: int) -> JsonValue:
        if item is None or isinstance(item, bool):
            return item
        if isinstance(item, str):
            return shorten(item, MAX_VALUE_CHARS)
        if isinstance(item, int):
            return item if abs(item) < 2**63 else render(item)
        if isinstance(item, float):
            return item if math.isfinite(item) else repr(item)
        if isinstance(item, list | dict) and len(item) > _JSON_CHARS // 2:
            raise _TooLarge  # each element takes at least two characters ("0,")
        if depth < 32 and isinstance(item, list):
            return [convert(element, depth + 1) for element in item]
        if depth < 32 and isinstance(item, dict) and all(isinstance(key, str) for key in item):
            return {
                shorten(key, MAX_VALUE_CHARS): convert(element, depth + 1) for key, element in item.items()
            }
        return render(item)

    try:
        converted = convert(value, 0)
    except _TooLarge:
        return render(value)
    if isinstance(converted, list | dict) and len(json.dumps(converted)) > _JSON_CHARS:
        return render(value)
    return converted
