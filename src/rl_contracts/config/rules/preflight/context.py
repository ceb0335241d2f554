"""What a preflight check sees: :class:`Context`, and the entrypoint sets a check declares."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Literal, NamedTuple

from ...._internal.config_absent import ABSENT
from ...._internal.messages import MAX_MESSAGE_CHARS, shorten
from ...finding import Finding, SuggestedFix
from .reader import Reader
from .report import Entrypoint, PreflightOptions

__all__ = ["ALL_ENTRIES", "LEGACY_ENTRIES", "SC_ENTRIES", "ClusterSplit", "Context"]

ALL_ENTRIES: Final[frozenset[Entrypoint]] = frozenset({"grpo", "grpo-gym", "grpo-sc"})
LEGACY_ENTRIES: Final[frozenset[Entrypoint]] = frozenset({"grpo", "grpo-gym"})
"""The entrypoints that call ``grpo.setup`` (the single-controller path never does)."""
SC_ENTRIES: Final[frozenset[Entrypoint]] = frozenset({"grpo-sc"})


class ClusterSplit(NamedTuple):
    """Nodes and GPUs per node of training and of generation, as P13 (P25 for ``grpo-sc``) splits the cluster."""

    train_nodes: int
    train_gpn: int
    gen_nodes: int
    gen_gpn: int


@dataclass
class Context:
    """What one check sees (the reader, entrypoint, options, the split P13/P25 computed) and its results."""

    reader: Reader
    entrypoint: Entrypoint
    options: PreflightOptions
    environ: Mapping[str, str]
    code: str = ""
    split: ClusterSplit | None = None
    findings: list[Finding] = field(default_factory=list)
    skipped: list[Finding] = field(default_factory=list)
    reported: set[str] = field(default_factory=set)

    def error(
        self,
        path: str,
        value: object,
        message: str,
        *,
        code: str | None = None,
        fix: SuggestedFix | None = None,
        severity: Literal["error", "warning"] = "error",
    ) -> None:
        """Report an error (or a ``severity`` warning) of the running rule (or of ``code``) at ``path``, with
        its ``fix`` when it has one."""
        message = shorten(message, MAX_MESSAGE_CHARS)
        self.findings.append(
            Finding(
                code=code or self.code, path=path, value=value, message=message, severity=severity, fix=fix
            )
        )

    def error_at(self, path: str, message: str, *, fix: SuggestedFix | None = None) -> None:
        """Report an error of the running rule at ``path``, with the value read there (and ``fix``)."""
        self.error(path, self.reader.value(path), message, fix=fix)

    def warning(self, path: str, value: object, message: str) -> None:
        """Report a warning of the running rule at ``path``."""
        self.error(path, value, message, severity="warning")

    def once(self, path: str, value: object, message: str, *, code: str | None = None) -> None:
        """Report an error at ``path`` unless :meth:`once` already reported one there (for any rule)."""
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
        self.skipped.append(
            Finding(
                code=self.code,
                path=path or "",
                message=shorten(reason, MAX_MESSAGE_CHARS),
                severity="skipped",
            )
        )

    def layout(self) -> ClusterSplit | None:
        """The split P13/P25 computed; ``None``, reported as a skip of the running rule, when they could not."""
        if self.split is None:
            self.skip("needs the cluster layout, which P13/P25 could not compute")
        return self.split
