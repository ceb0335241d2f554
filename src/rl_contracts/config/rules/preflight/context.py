"""What a preflight check sees and how it registers: :class:`Context`, :func:`check` and :data:`CHECKS`.

Each check is a small function decorated with ``@check(RULE, entries=...)``, where ``RULE`` is the
:class:`~rl_contracts.config.rules.rule.Rule` record declared just above it; :data:`CHECKS` lists them in
registration order (:mod:`.engine` imports every check module).  A check receives a :class:`Context`, reads the
document through its :class:`~.reader.Reader` and reports with :meth:`Context.error`, :meth:`Context.warning` and
:meth:`Context.skip`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final, Literal, NamedTuple

from ...._messages import MAX_MESSAGE_CHARS, shorten
from ..._internal.absent import ABSENT
from ..rule import Rule
from ..suggested_fix import SuggestedFix
from .reader import Reader
from .report import Entrypoint, Finding, PreflightOptions, SkippedRule

__all__ = [
    "ALL_ENTRIES",
    "CHECKS",
    "LEGACY_ENTRIES",
    "ClusterSplit",
    "Context",
    "PreflightCheck",
    "check",
]

ALL_ENTRIES: Final[frozenset[Entrypoint]] = frozenset({"grpo", "grpo-gym", "grpo-sc"})
LEGACY_ENTRIES: Final[frozenset[Entrypoint]] = frozenset({"grpo", "grpo-gym"})
"""The entrypoints that call ``grpo.setup`` (the single-controller path never does)."""


class ClusterSplit(NamedTuple):
    """Nodes and GPUs per node of training and of generation, as P13 (P25 for ``grpo-sc``) splits the cluster."""

    train_nodes: int
    train_gpn: int
    gen_nodes: int
    gen_gpn: int


@dataclass
class Context:
    """What one check sees: the reader, the entrypoint, the options, the cluster split computed so far (by P13 or
    P25), its results."""

    reader: Reader
    entrypoint: Entrypoint
    options: PreflightOptions
    environ: Mapping[str, str]
    code: str = ""
    split: ClusterSplit | None = None
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


class PreflightCheck(NamedTuple):
    """One registered check: its rule record, the entrypoints it applies to, and the function that runs it."""

    rule: Rule
    entries: frozenset[Entrypoint]
    run: Check

    @property
    def code(self) -> str:
        """The code of its rule."""
        return self.rule.code


CHECKS: list[PreflightCheck] = []
"""Every registered check, in registration order."""


def check(rule: Rule, *, entries: frozenset[Entrypoint] = ALL_ENTRIES) -> Callable[[Check], Check]:
    """Register the decorated function as the check of ``rule`` for the scripts in ``entries``."""

    def register(function: Check) -> Check:
        CHECKS.append(PreflightCheck(rule, entries, function))
        return function

    return register
