"""The one catalogue of preflight rules: each rule is a small function registered with its code.

:func:`rule` registers a check; :data:`RULES` lists them in registration order (:mod:`.engine` imports every rule
module and sorts the catalogue by code).  A check receives a :class:`Context`, reads the document through its
:class:`~._document.Reader` and reports with :meth:`Context.error`, :meth:`Context.warning` and
:meth:`Context.skip`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

from ..._messages import MAX_MESSAGE_CHARS, shorten
from ..codes import Severity
from ..suggested_fix import SuggestedFix
from ._document import Reader
from .report import ABSENT, Entrypoint, Finding, PreflightOptions, SkippedRule

__all__ = [
    "ALL_ENTRIES",
    "LEGACY_ENTRIES",
    "RULES",
    "Context",
    "Layout",
    "Rule",
    "rule",
]

ALL_ENTRIES: Final[frozenset[Entrypoint]] = frozenset({"grpo", "grpo-gym", "grpo-sc"})
LEGACY_ENTRIES: Final[frozenset[Entrypoint]] = frozenset({"grpo", "grpo-gym"})
"""The entrypoints that call ``grpo.setup`` (the single-controller path never does)."""


@dataclass(frozen=True)
class Layout:
    """Nodes and GPUs per node of training and of generation, as P13 (P25 for ``grpo-sc``) computes them."""

    train_nodes: int
    train_gpn: int
    gen_nodes: int
    gen_gpn: int


@dataclass
class Context:
    """What one check sees: the reader, the entrypoint, the options, the layout computed so far, its results."""

    reader: Reader
    entrypoint: Entrypoint
    options: PreflightOptions
    environ: Mapping[str, str]
    code: str = ""
    layout: Layout | None = None
    findings: list[Finding] = field(default_factory=list)
    skipped: list[SkippedRule] = field(default_factory=list)
    reported: set[str] = field(default_factory=set)

    def error(
        self,
        path: str,
        value: object,
        message: str,
        *,
        code: str | None = None,
        fix: SuggestedFix | None = None,
    ) -> None:
        """Report an error of the running rule (or of ``code``) at ``path``; ``fix`` the value that makes the
        rule pass, when the rule names a single one."""
        self._report(path, value, message, "error", code, fix)

    def warning(self, path: str, value: object, message: str) -> None:
        """Report a warning of the running rule at ``path``."""
        self._report(path, value, message, "warning", None, None)

    def once(self, path: str, value: object, message: str, *, code: str | None = None) -> None:
        """Report an error at ``path`` unless one of any rule was already reported there by :meth:`once`
        (a malformed value read by many rules is reported once)."""
        if path not in self.reported:
            self.reported.add(path)
            self.error(path, value, message, code=code)

    def missing(self, path: str) -> None:
        """Report the P1 error for an absent key the trainer indexes directly (once per path)."""
        self.once(
            path,
            ABSENT,
            f"{path} is required: the trainer reads it at start-up and crashes with a KeyError; add it.",
            code="P1",
        )

    def skip(self, reason: str, path: str | None = None) -> None:
        """Report that (part of) the running rule could not run."""
        self.skipped.append(SkippedRule(self.code, shorten(reason, MAX_MESSAGE_CHARS), path))

    def _report(
        self,
        path: str,
        value: object,
        message: str,
        severity: Literal["error", "warning"],
        code: str | None,
        fix: SuggestedFix | None,
    ) -> None:
        self.findings.append(
            Finding(code or self.code, path, value, shorten(message, MAX_MESSAGE_CHARS), severity, fix)
        )


Check = Callable[[Context], None]


@dataclass(frozen=True)
class Rule:
    """One registered rule: its code, one-line summary, usual severity, where the reference checks it, the
    entrypoints it applies to, and its check."""

    code: str
    summary: str
    severity: Severity
    reference: str
    entries: frozenset[Entrypoint]
    check: Check


RULES: list[Rule] = []
"""Every registered rule, in registration order."""


def rule(
    code: str,
    summary: str,
    reference: str,
    *,
    entries: frozenset[Entrypoint] = ALL_ENTRIES,
    severity: Severity = "error",
) -> Callable[[Check], Check]:
    """Register the decorated check as rule ``code``."""

    def register(check: Check) -> Check:
        RULES.append(Rule(code, summary, severity, reference, entries, check))
        return check

    return register
