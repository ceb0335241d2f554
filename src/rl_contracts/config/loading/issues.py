"""The issues of one recipe: :class:`ConfigIssue`, and :class:`IssueReport`, which collects them with their code
and provenance while a recipe is checked."""

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, JsonValue

from ..._messages import MAX_VALUE_CHARS, render, shorten
from ...errors import RecipeLoadError
from .._internal.absent import ABSENT, MISSING_VALUE
from .._internal.paths import Keys, dotted_path, lookup
from ..rules.suggested_fix import SuggestedFix
from .provenance import Provenance

__all__ = ["OUTSIDE_VALUE", "ConfigIssue", "IssueReport", "json_value"]

_JSON_CHARS = 2000


class ConfigIssue(BaseModel):
    """One problem found in a recipe (frozen).

    ``path`` is the full dotted path from the document root, a mapping key written ``.key`` (an int key too:
    ``.5``) and a list index ``[i]`` (``policy.generation.stop_token_ids[2]``); a load error reported by the CLI
    has an empty ``path``.  ``value`` is ``shorten(repr(v), 200)`` or ``"<missing>"``; ``json_value`` is the same
    value as JSON (JSON values unchanged, anything else its ``repr`` string, ``None`` when missing; bounded as
    :func:`json_value` says: a string to 200 characters, a container to 2,000 characters of JSON, else the
    shortened ``repr``); ``missing`` marks an absent key.  ``code`` is
    its stable code (:data:`rl_contracts.config.rules.registry.RULES`).  ``source`` is the file of the ``defaults``
    chain that last set the value at ``path`` and ``line`` its 1-based line there; a value a ``--set`` override
    wrote (at or below the overridden key) has the source ``"--set"`` (:data:`.provenance.OVERRIDE_SOURCE`) and
    line ``None``; a missing key has both ``None``.  ``fix`` is the change that removes the finding when its rule
    has one (:mod:`rl_contracts.config.rules.suggested_fix`; applied by :mod:`rl_contracts.config.fixes`), else
    ``None``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    path: str
    value: str
    reason: str
    severity: Literal["error", "warning"]
    code: str
    source: str | None = None
    line: int | None = None
    json_value: JsonValue = None
    missing: bool = False
    fix: SuggestedFix | None = None

    @classmethod
    def for_load_error(cls, error: RecipeLoadError) -> "ConfigIssue":
        """The issue (empty path; code ``V1``, or the error's ``code``) that reports a recipe that could not be
        read."""
        return cls(
            path="",
            value=error.value or "",
            reason=error.message,
            severity="error",
            code=error.code or "V1",
            source=error.file,
            line=error.line,
            json_value=json_value(error.value),
        )


class _TooLarge(Exception):
    """A container whose JSON text would exceed the bound whatever its elements are."""


def json_value(value: object) -> JsonValue:
    """``value`` as JSON: JSON values unchanged, other values (or parts) as their ``repr``; bounded.

    A string is shortened to 200 characters (``...`` at the end), like :attr:`ConfigIssue.value`; a list or
    mapping whose JSON text would exceed 2,000 characters, or nested deeper than 32 levels, is its shortened
    ``repr`` instead.  Work is bounded too: a container of more than 1,000 elements is never walked.

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


OUTSIDE_VALUE = "<value from outside the recipe>"
"""Stands in for a value read from outside the recipe (the environment) wherever an issue would show it."""


@dataclass
class IssueReport:
    """Collects the issues of one recipe, each with its code and provenance.

    ``outside`` (:meth:`~.expansion.Analysis.is_outside`) marks the values derived from outside state (``oc.env``):
    an issue at or above one shows the value as written in the recipe (``${oc.env:HF_HOME}/data``), never resolved,
    and a V2 issue there does not quote OmegaConf's reason; each of ``secrets`` (their resolved texts) is replaced by :data:`OUTSIDE_VALUE` in every reason.
    """

    document: dict[Any, Any]
    provenance: Provenance
    issues: list[ConfigIssue] = field(default_factory=list)
    outside: Callable[[Keys], bool] | None = None
    secrets: tuple[str, ...] = ()

    def add(
        self,
        keys: Keys,
        code: str,
        why: str,
        severity: Literal["error", "warning"],
        value: object = ABSENT,
        *,
        path: str | None = None,
        fix: SuggestedFix | None = None,
    ) -> None:
        """Add one issue at ``keys`` (``path`` when given: a preflight finding's own spelling) with its ``fix``;
        ``value`` :data:`~rl_contracts.config._internal.absent.ABSENT` marks a missing key."""
        missing = value is ABSENT
        if not missing and self.outside is not None and self.outside(keys):
            found, written = lookup(self.document, keys)
            value = written if found else OUTSIDE_VALUE
            if code == "V2":  # OmegaConf's reason may quote what the environment held (a key it looked up)
                why = "cannot be resolved (the reason is not shown: the value reads outside the recipe)"
        for secret in self.secrets:
            why = why.replace(secret, OUTSIDE_VALUE)
        source, line = (None, None) if missing else self.provenance.locate(keys)
        self.issues.append(
            ConfigIssue(
                path=dotted_path(keys, self.document) if path is None else path,
                value=MISSING_VALUE if missing else render(value),
                reason=why,
                severity=severity,
                code=code,
                source=source,
                line=line,
                json_value=None if missing else json_value(value),
                missing=missing,
                fix=fix,
            )
        )

    def has_errors(self) -> bool:
        """Whether an error issue was added."""
        return any(issue.severity == "error" for issue in self.issues)
