"""Fixes of recipe findings: computed without writing (:func:`plan_fixes`), then written (:func:`write_fixes`).

A finding is fixable when it carries a :class:`~rl_contracts.config.finding.SuggestedFix` and its rule a
``fix_safety``; unsafe fixes apply only with ``unsafe_fixes=True``.  Each edit goes to the file of the
``defaults:`` chain that set the value, as a splice (:mod:`.yaml_edits`).  Planning works on a private copy, in
rounds until one fixes nothing, so a second ``--fix`` changes nothing; docs/recipes/fixes.md has the details.
"""

from __future__ import annotations

import difflib
import os
import shutil
import tempfile
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .._internal.config_paths import Keys, lookup, split_path
from .._internal.messages import render_name
from ..errors import ConfigContractError, RecipeError, RecipeLoadError
from .finding import SuggestedFix
from .loading.compose import compose
from .loading.issues import ConfigIssue
from .loading.load_recipe import load_recipe
from .loading.provenance import OVERRIDE_SOURCE
from .rule import FixSafety
from .rules.preflight import PreflightOptions
from .rules.registry import rule_for
from .yaml_edits import Declined, insert_value, move_entry, remove_entry, rename_key, set_value

__all__ = [
    "AppliedFix",
    "DeclinedFix",
    "FileChange",
    "FixPlan",
    "edit_for",
    "plan_fixes",
    "read_text",
    "write_fixes",
]


@dataclass(frozen=True)
class FileChange:
    """The text of one file before and after its fixes."""

    file: str
    before: str
    after: str

    def diff(self, label: str | None = None) -> str:
        """The unified diff of the change (``--- a/FILE``, ``+++ b/FILE``), ``label`` naming the file."""
        name = label or self.file
        lines = difflib.unified_diff(
            self.before.splitlines(keepends=True),
            self.after.splitlines(keepends=True),
            f"a/{name}",
            f"b/{name}",
        )
        return "".join(
            line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n"
            for line in lines
        )


@dataclass(frozen=True)
class AppliedFix:
    """A fix that a plan applies: the finding, the file edited and the finding's line there, what it does."""

    recipe: str
    code: str
    path: str
    file: str
    line: int | None
    description: str
    safety: FixSafety


@dataclass(frozen=True)
class DeclinedFix:
    """A finding with a fix that was not applied, and why (``file`` ``None`` when no file holds the value)."""

    recipe: str
    code: str
    path: str
    file: str | None
    description: str
    reason: str


@dataclass(frozen=True)
class FixPlan:
    """What :func:`plan_fixes` found: file ``changes``; every finding with a fix in exactly one of ``applied``,
    ``declined``, ``hidden`` (unsafe, not asked for) and ``pending`` (behind others: run again); ``unreadable``
    recipes were not fixed."""

    changes: tuple[FileChange, ...]
    applied: tuple[AppliedFix, ...]
    declined: tuple[DeclinedFix, ...]
    hidden: tuple[DeclinedFix, ...]
    unreadable: tuple[str, ...] = field(default=())
    pending: tuple[DeclinedFix, ...] = field(default=())


def read_text(path: str) -> str:
    """A file's text as written (UTF-8, line endings kept)."""
    with open(path, encoding="utf-8", newline="") as stream:
        return stream.read()


def _write_text(path: str, text: str) -> None:
    """Write ``text`` atomically (a temporary file beside it, then a rename), keeping the file's mode."""
    folder = os.path.dirname(os.path.abspath(path))
    descriptor, temporary = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", dir=folder)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8", newline="") as stream:
            stream.write(text)
        shutil.copymode(path, temporary)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)  # mkstemp made it, and the rename, the last step, did not happen
        raise


def _edit(text: str, keys: Keys, issue: ConfigIssue, fix: SuggestedFix) -> str | Declined:
    if fix.action == "rename":
        return rename_key(text, keys, fix.target or "")
    if fix.action == "move":
        return move_entry(text, keys, split_path(fix.target or ""))
    if fix.action == "remove":
        return remove_entry(text, keys)
    return (insert_value if issue.missing else set_value)(text, keys, fix.value)


def edit_for(
    recipe: str,
    issue: ConfigIssue,
    document: dict[object, object] | None = None,
    *,
    text_of: Callable[[str], str] = read_text,
) -> FileChange | Declined:
    """The change of one file that applies ``issue``'s fix (a value it adds goes to ``recipe``); writes nothing.
    Declined when there is no fix, the value was set by ``--set`` or by no file, the target is already set in
    ``document``, or :mod:`.yaml_edits` declines the edit."""
    fix = issue.fix
    if fix is None:
        return Declined(f"{issue.code} at {issue.path} has no automatic fix")
    if issue.source == OVERRIDE_SOURCE:
        return Declined(f"{issue.path} was set by --set: change the override, not a file")
    if issue.source is None and not (fix.action == "set" and issue.missing):
        return Declined(f"no file of the defaults chain sets {issue.path}")
    file = recipe if issue.source is None else issue.source
    if fix.action == "move" and document is not None and lookup(document, split_path(fix.target or ""))[0]:
        return Declined(f"{fix.target} is already set; moving {issue.path} there would overwrite it")
    try:
        before = text_of(file)
    except (OSError, UnicodeDecodeError) as exc:
        return Declined(f"cannot read {render_name(file)} ({type(exc).__name__})")
    after = _edit(before, split_path(issue.path), issue, fix)
    return after if isinstance(after, Declined) else FileChange(file, before, after)


@dataclass
class _Mirror:
    """A private copy under ``folder`` of the files of every chain, each once by real path; ``originals`` maps a
    copy back to the path it was first given as."""

    folder: Path
    originals: dict[str, str] = field(default_factory=dict)

    def add(self, files: Collection[Path]) -> None:
        for path in files:
            copy = self.copy_of(path)
            if copy not in self.originals:
                os.makedirs(os.path.dirname(copy), exist_ok=True)
                shutil.copyfile(os.path.realpath(path), copy)
                self.originals[copy] = os.path.normpath(str(path))

    def copy_of(self, path: Path) -> str:
        real = Path(os.path.realpath(path))
        return str(self.folder / real.relative_to(real.anchor))

    def original(self, path: str) -> str:
        return self.originals.get(os.path.realpath(path), path)


def _findings(recipe: str, kwargs: dict[str, object]) -> tuple[tuple[ConfigIssue, ...], dict[object, object]]:
    try:
        loaded = load_recipe(recipe, **kwargs)  # type: ignore[arg-type]
    except RecipeError as exc:
        return tuple(exc.issues or ()), compose(Path(recipe), root=Path(str(kwargs["root"]))).document
    return loaded.issues, loaded.document


def plan_fixes(
    files: Sequence[str],
    *,
    unsafe_fixes: bool = False,
    section: str | None = None,
    strict: bool = False,
    overrides: Sequence[str] = (),
    preflight_options: PreflightOptions | None = None,
    select: Collection[str] = (),
    ignore: Collection[str] = (),
    root: str | os.PathLike[str] | None = None,
    max_rounds: int = 8,
    algorithm: str | None = None,
) -> FixPlan:
    """Every fix of the findings of ``files`` (validated as :func:`~rl_contracts.config.load_recipe` with the same
    options), computed without writing anything; a recipe that cannot be read is listed in ``unreadable``."""
    kwargs: dict[str, object] = {
        "section": section,
        "strict": strict,
        "overrides": overrides,
        "preflight_options": preflight_options,
        "select": select,
        "ignore": ignore,
        "algorithm": algorithm,
    }
    with tempfile.TemporaryDirectory(prefix="rl-contracts-fix-") as folder:
        kwargs["root"] = folder  # the private copies of every chain lie under it
        mirror = _Mirror(Path(folder))
        planner = _Planner(mirror, kwargs, unsafe_fixes)
        unreadable: list[str] = []
        for recipe in files:
            try:
                chain = compose(Path(recipe), root=None if root is None else Path(root)).chain
            except RecipeLoadError:
                unreadable.append(recipe)
                continue
            mirror.add(chain)
            planner.recipes.append((recipe, mirror.copy_of(chain[-1])))
        before = {copy: read_text(copy) for copy in mirror.originals}
        # rounds until one fixes nothing; if the last one still fixed something, what is left waits for a rerun
        progress = all(planner.run_round() for _ in range(max_rounds))
        pending = planner.pending() if progress else []
        changes = tuple(
            FileChange(mirror.originals[copy], text, after)
            for copy, text in before.items()
            if (after := read_text(copy)) != text
        )
    return FixPlan(
        changes,
        tuple(planner.applied),
        tuple(planner.declined.values()),
        tuple(planner.hidden.values()),
        tuple(unreadable),
        tuple(pending),
    )


@dataclass
class _Planner:
    """The rounds of one plan over the ``recipes`` (as given, and their copies in ``mirror``) and what they found;
    ``declined`` and ``hidden`` hold the last round's."""

    mirror: _Mirror
    kwargs: dict[str, object]
    unsafe_fixes: bool
    recipes: list[tuple[str, str]] = field(default_factory=list)
    applied: list[AppliedFix] = field(default_factory=list)
    edited: set[tuple[str, str]] = field(default_factory=set)
    declined: dict[tuple[str, str, str], DeclinedFix] = field(default_factory=dict)
    hidden: dict[tuple[str, str, str], DeclinedFix] = field(default_factory=dict)

    def _issues(self) -> Iterator[tuple[str, str, ConfigIssue, dict[object, object]]]:
        for recipe, copy in self.recipes:
            try:
                issues, document = _findings(copy, self.kwargs)
            except RecipeLoadError:
                continue
            yield from ((recipe, copy, issue, document) for issue in issues)

    def run_round(self) -> bool:
        """Apply every fix the findings carry, once; whether a file changed (the rounds stop when none did)."""
        self.declined.clear()
        self.hidden.clear()
        changed = [self._apply(*found) for found in self._issues()]
        return any(changed)

    def pending(self) -> list[DeclinedFix]:
        """The findings that still carry a fix after the last round and were not declined or hidden."""
        accounted = {*self.declined, *self.hidden}
        return [
            self._declined(recipe, issue, "waits for the fixes applied before it; run again")
            for recipe, _, issue, _ in self._issues()
            if issue.fix is not None and (recipe, issue.code, issue.path) not in accounted
        ]

    def _declined(self, recipe: str, issue: ConfigIssue, reason: str) -> DeclinedFix:
        source = None if issue.source is None else self.mirror.original(issue.source)
        description = "" if issue.fix is None else issue.fix.description
        return DeclinedFix(recipe, issue.code, issue.path, source, description, reason)

    def _apply(self, recipe: str, copy: str, issue: ConfigIssue, document: dict[object, object]) -> bool:
        """Apply one issue's fix to the mirror; whether a file changed."""
        rule = rule_for(issue.code)
        safety = None if rule is None else rule.fix_safety
        fix = issue.fix
        if fix is None:
            return False
        key = (recipe, issue.code, issue.path)
        if safety is None:
            reason = f"rule {issue.code} has no automatic fix (its record has no fix safety)"
            self.declined[key] = self._declined(recipe, issue, reason)
            return False
        if safety == "unsafe" and not self.unsafe_fixes:
            self.hidden[key] = self._declined(recipe, issue, "an unsafe fix")
            return False
        change = edit_for(copy, issue, document)
        if isinstance(change, FileChange) and (os.path.realpath(change.file), issue.path) in self.edited:
            change = Declined(
                f"{issue.path} in {render_name(self.mirror.original(change.file))} was already fixed once "
                "(recipes sharing this file need different values); fix it by hand"
            )
        if isinstance(change, Declined):
            self.declined[key] = self._declined(recipe, issue, change.reason)
            return False
        _write_text(change.file, change.after)
        self.edited.add((os.path.realpath(change.file), issue.path))
        file = self.mirror.original(change.file)
        self.applied.append(
            AppliedFix(recipe, issue.code, issue.path, file, issue.line, fix.description, safety)
        )
        return True


def write_fixes(plan: FixPlan) -> None:
    """Write every change of ``plan``, atomically per file; ``ConfigContractError`` (nothing written) when a file
    changed since the plan was computed."""
    for change in plan.changes:
        if read_text(change.file) != change.before:
            raise ConfigContractError(
                f"{render_name(change.file)} changed since its fixes were computed; run --fix again",
                path=None,
                value=render_name(change.file),
            )
    for change in plan.changes:
        _write_text(change.file, change.after)
