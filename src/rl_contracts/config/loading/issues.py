"""The findings of one recipe: :class:`IssueReport` collects them with their code and provenance while a recipe is
checked, each value rendered and bounded (:func:`json_value`)."""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..._internal.config_absent import ABSENT, MISSING_VALUE
from ..._internal.config_paths import Keys, dotted_path, keys_in, lookup
from ..._internal.messages import render
from ..finding import Finding, Severity, SuggestedFix, json_value
from .provenance import Provenance

__all__ = ["OUTSIDE_VALUE", "ConfigIssue", "IssueReport"]


ConfigIssue = Finding
"""The name SPEC §1.8 gives a finding of ``load_recipe``: :class:`~rl_contracts.config.finding.Finding` itself."""


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
    issues: list[Finding] = field(default_factory=list)
    outside: Callable[[Keys], bool] | None = None
    secrets: tuple[str, ...] = ()

    def add(
        self,
        keys: Keys,
        code: str,
        why: str,
        severity: Severity,
        value: object = ABSENT,
        *,
        path: str | None = None,
        fix: SuggestedFix | None = None,
    ) -> None:
        """Add one issue at ``keys`` (``path`` when given: a preflight finding's own spelling) with its ``fix``;
        ``value`` :data:`~rl_contracts._internal.config_absent.ABSENT` marks a missing key."""
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
            Finding(
                path=dotted_path(keys, self.document) if path is None else path,
                value=MISSING_VALUE if missing else render(value),
                message=why,
                severity=severity,
                code=code,
                source=source,
                line=line,
                json_value=None if missing else json_value(value),
                missing=missing,
                fix=fix,
            )
        )

    def add_failure(self, failure: Finding) -> None:
        """Add the error issue of a leaf that did not resolve (one of ``Resolution.failures``)."""
        keys = keys_in(failure.path, self.document)
        self.add(keys, failure.code, failure.message, "error", failure.value, path=failure.path)

    def has_errors(self) -> bool:
        """Whether an error issue was added."""
        return any(issue.severity == "error" for issue in self.issues)
