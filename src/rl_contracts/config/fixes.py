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
from collections.abc import Callable, Collection, Sequence
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
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def _edit(text: str, keys: Keys, issue: ConfigIssue, fix: SuggestedFix) -> str | Declined:
    if fix.action == "rename":
        return rename_key(text, keys, fix.target or "")
    if fix.action == "move":
        return move_entry(text, keys, split_path(fix.target or ""))
    if fix.action == "remove":
        return remove_entry(text, keys)
    if issue.missing:
        return insert_value(text, keys, fix.value)
    return set_value(text, keys, fix.value)


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
    keys = split_path(issue.path)
    if fix.action == "move" and document is not None and lookup(document, split_path(fix.target or ""))[0]:
        return Declined(f"{fix.target} is already set; moving {issue.path} there would overwrite it")
    try:
        before = text_of(file)
    except (OSError, UnicodeDecodeError) as exc:
        return Declined(f"cannot read {render_name(file)} ({type(exc).__name__})")
    after = _edit(before, keys, issue, fix)
    if isinstance(after, Declined):
        return after
    return FileChange(file, before, after)


# ---------------------------------------------------------------------------------------------- planning


@dataclass
class _Mirror:
    """A private copy of the files of every chain, each once by real path; ``originals`` maps a copy back."""

    folder: Path
    copies: dict[str, str] = field(default_factory=dict)
    originals: dict[str, str] = field(default_factory=dict)

    def add(self, files: Collection[Path]) -> None:
        for path in files:
            real = os.path.realpath(path)
            if real in self.copies:
                continue
            copy = self.folder / Path(real).relative_to(Path(real).anchor)
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(real, copy)
            self.copies[real] = str(copy)
            self.originals[str(copy)] = os.path.normpath(str(path))

    def copy_of(self, path: Path) -> str:
        return self.copies[os.path.realpath(path)]

    def original(self, path: str) -> str:
        return self.originals.get(os.path.realpath(path), path)


def _findings(recipe: str, kwargs: dict[str, object]) -> tuple[tuple[ConfigIssue, ...], dict[object, object]]:
    try:
        loaded = load_recipe(recipe, **kwargs)  # type: ignore[arg-type]
    except RecipeError as exc:
        root = kwargs["root"]
        return tuple(exc.issues or ()), compose(Path(recipe), root=Path(str(root))).document
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
        recipes: list[tuple[str, str]] = []
        unreadable: list[str] = []
        for recipe in files:
            try:
                chain = compose(Path(recipe), root=None if root is None else Path(root)).chain
            except RecipeLoadError:
                unreadable.append(recipe)
                continue
            mirror.add(chain)
            recipes.append((recipe, mirror.copy_of(chain[-1])))
        before = {mirror.originals[copy]: read_text(copy) for copy in mirror.copies.values()}
        applied: list[AppliedFix] = []
        edited: set[tuple[str, str]] = set()
        declined: dict[tuple[str, str, str], DeclinedFix] = {}
        hidden: dict[tuple[str, str, str], DeclinedFix] = {}
        progress = True
        for _ in range(max_rounds):
            declined.clear()
            hidden.clear()
            progress = False
            for recipe, copy in recipes:
                try:
                    issues, document = _findings(copy, kwargs)
                except RecipeLoadError:
                    continue
                for issue in issues:
                    progress |= _apply(
                        recipe, copy, issue, document, mirror, unsafe_fixes, applied, edited, declined, hidden
                    )
            if not progress:
                break
        pending = _pending(recipes, kwargs, mirror, {*declined, *hidden}) if progress else []
        changes = tuple(
            FileChange(original, text, after)
            for original, text in before.items()
            if (after := read_text(mirror.copy_of(Path(original)))) != text
        )
    return FixPlan(
        changes,
        tuple(applied),
        tuple(declined.values()),
        tuple(hidden.values()),
        tuple(unreadable),
        tuple(pending),
    )


def _pending(
    recipes: list[tuple[str, str]],
    kwargs: dict[str, object],
    mirror: _Mirror,
    accounted: set[tuple[str, str, str]],
) -> list[DeclinedFix]:
    """The findings that still carry a fix after the last round and are not ``accounted`` for."""
    found = []
    for recipe, copy in recipes:
        try:
            issues, _ = _findings(copy, kwargs)
        except RecipeLoadError:
            continue
        for issue in issues:
            if issue.fix is not None and (recipe, issue.code, issue.path) not in accounted:
                source = None if issue.source is None else mirror.original(issue.source)
                found.append(
                    DeclinedFix(
                        recipe,
                        issue.code,
                        issue.path,
                        source,
                        issue.fix.description,
                        "waits for the fixes applied before it; run again",
                    )
                )
    return found


def _apply(
    recipe: str,
    copy: str,
    issue: ConfigIssue,
    document: dict[object, object],
    mirror: _Mirror,
    unsafe_fixes: bool,
    applied: list[AppliedFix],
    edited: set[tuple[str, str]],
    declined: dict[tuple[str, str, str], DeclinedFix],
    hidden: dict[tuple[str, str, str], DeclinedFix],
) -> bool:
    """Apply one issue's fix to the mirror; whether a file changed."""
    rule = rule_for(issue.code)
    safety = None if rule is None else rule.fix_safety
    fix = issue.fix
    if fix is None:
        return False
    source = None if issue.source is None else mirror.original(issue.source)
    key = (recipe, issue.code, issue.path)
    if safety is None:
        reason = f"rule {issue.code} has no automatic fix (its record has no fix safety)"
        declined[key] = DeclinedFix(recipe, issue.code, issue.path, source, fix.description, reason)
        return False
    if safety == "unsafe" and not unsafe_fixes:
        hidden[key] = DeclinedFix(recipe, issue.code, issue.path, source, fix.description, "an unsafe fix")
        return False
    change = edit_for(copy, issue, document)
    if isinstance(change, FileChange) and (os.path.realpath(change.file), issue.path) in edited:
        change = Declined(
            f"{issue.path} in {render_name(mirror.original(change.file))} was already fixed once "
            "(recipes sharing this file need different values); fix it by hand"
        )
    if isinstance(change, Declined):
        declined[key] = DeclinedFix(recipe, issue.code, issue.path, source, fix.description, change.reason)
        return False
    _write_text(change.file, change.after)
    edited.add((os.path.realpath(change.file), issue.path))
    file = mirror.original(change.file)
    applied.append(AppliedFix(recipe, issue.code, issue.path, file, issue.line, fix.description, safety))
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
