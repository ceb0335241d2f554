"""``load_recipe``: every stage over one recipe file, each problem one :class:`~rl_contracts.config.finding.Finding`
with its code and provenance; no OmegaConf or YAML exception escapes, and neither torch nor vLLM is imported."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..._internal.config_paths import Keys, lookup
from ..._internal.messages import render_list, render_name
from ...checks import require_bool, require_str_collection
from ...errors import ContractTypeError, RecipeError
from ..rules.preflight import Entrypoint, PreflightOptions, SkippedRule
from ..rules.registry import check_patterns, code_selected
from ..rules.unknown_keys import K1
from ..section.generation import VllmConfig
from .check_recipe import algorithm_not_detected, algorithm_or_none, check_recipe, choose_algorithm
from .check_section import DEFAULT_SECTION, check_section, default_section
from .compose import V6, compose
from .expansion import analyse
from .issues import ConfigIssue, IssueReport
from .limits import DEFAULT_LIMITS, Limits, budget_scope
from .local_model import local_model_config, served_model_name
from .overrides import apply_overrides
from .provenance import Provenance
from .resolve import register_resolvers, resolve_document
from .run_preflight import preflight_issues

__all__ = ["LoadedRecipe", "load_recipe"]


@dataclass(frozen=True)
class LoadedRecipe:
    """A recipe whose selected section passed every check (``status="valid"``) or was not validated ("skipped").

    ``document``: the composed document (overrides applied, interpolations unresolved); ``generation``: the
    validated section (``None`` when skipped or every error was ignored); ``issues``: warnings only; ``skipped``:
    the preflight rules that could not run; ``entrypoint``: the trainer preflight checked against; ``algorithm``:
    the NeMo RL algorithm whose whole recipe was checked (``None`` for a fragment: ``skipped`` then holds N8);
    ``model_name``: the model the section serves, as the trainer sets it
    (:func:`~.local_model.served_model_name`; also ``generation.model_name`` when that is null).
    """

    file: str
    section: str
    status: Literal["valid", "skipped"]
    document: dict[Any, Any]
    generation: VllmConfig | None
    issues: tuple[ConfigIssue, ...] = field(default=())
    skipped: tuple[SkippedRule, ...] = field(default=())
    entrypoint: Entrypoint | None = None
    model_name: str | None = None
    algorithm: str | None = None


_SECRET_CHARS = 4  # shorter resolved texts (a digit, "true") are too common to scrub from reasons


def _secrets(resolved: dict[Any, Any], outside: Iterable[Keys]) -> tuple[str, ...]:
    """The texts of the resolved values read from outside the recipe, longest first (scrubbed from reasons)."""
    texts = set()
    for keys in outside:
        found, value = lookup(resolved, keys)
        if found and isinstance(value, str | int | float) and not isinstance(value, bool):
            text = str(value)
            if len(text) >= _SECRET_CHARS:
                texts.add(text)
    return tuple(sorted(texts, key=len, reverse=True))


def _sorted(issues: Iterable[ConfigIssue]) -> tuple[ConfigIssue, ...]:
    return tuple(sorted(issues, key=lambda issue: (issue.path, issue.reason)))


def load_recipe(
    path: str | os.PathLike[str],
    *,
    section: str | None = None,
    strict: bool = False,
    overrides: Sequence[str] = (),
    preflight_options: PreflightOptions | None = None,
    run_preflight: bool = True,
    select: Collection[str] = (),
    ignore: Collection[str] = (),
    root: str | os.PathLike[str] | None = None,
    limits: Limits | None = None,
    algorithm: str | None = None,
) -> LoadedRecipe:
    """Load one recipe file checked: composed, overridden, resolved, its generation section validated (``section``;
    default ``policy.generation``, else a top-level ``generation``), preflight run, findings filtered by
    ``select``/``ignore``; a recipe of a NeMo RL algorithm (``algorithm``, else the one its sections name) is also
    checked whole.  The steps and every option: docs/development/config-core.md ("load_recipe").

    Raises ``RecipeError`` for any error finding (``.issues`` every finding, sorted by path then message;
    ``.algorithm``),
    ``RecipeLoadError`` when the file or an override cannot be read (V1, V6 beyond ``limits``, V7 a parent
    outside ``root``), ``ContractTypeError`` for an argument of the wrong type, ``ConfigContractError`` for a
    ``select``/``ignore`` pattern that names no code.
    """
    if not isinstance(path, str | os.PathLike):
        raise ContractTypeError.for_value("path", "a str or os.PathLike", path)
    if section is not None and not isinstance(section, str):
        raise ContractTypeError.for_value("section", "a str or None", section)
    algorithm_or_none(algorithm)
    require_bool(strict, "strict")
    require_bool(run_preflight, "run_preflight")
    texts = tuple(require_str_collection(overrides, "overrides", "a collection of 'key=value' strings"))
    selected, ignored = check_patterns(select, "select"), check_patterns(ignore, "ignore")
    if preflight_options is not None and not isinstance(preflight_options, PreflightOptions):
        raise ContractTypeError.for_value(
            "preflight_options", "a PreflightOptions or None", preflight_options
        )
    file = os.fspath(path)
    if not isinstance(file, str):
        raise ContractTypeError.for_value("path", "a text path", file)
    if root is not None and not isinstance(root, str | os.PathLike):
        raise ContractTypeError.for_value("root", "a str, os.PathLike or None", root)
    if limits is not None and not isinstance(limits, Limits):
        raise ContractTypeError.for_value("limits", "a Limits or None", limits)
    bounds = DEFAULT_LIMITS if limits is None else limits
    register_resolvers()
    with budget_scope(bounds):
        return _load(
            file,
            section,
            strict,
            texts,
            preflight_options,
            run_preflight,
            selected,
            ignored,
            root,
            bounds,
            algorithm,
        )


def _load(
    file: str,
    section: str | None,
    strict: bool,
    texts: tuple[str, ...],
    preflight_options: PreflightOptions | None,
    run_preflight: bool,
    selected: tuple[str, ...],
    ignored: tuple[str, ...],
    root: str | os.PathLike[str] | None,
    limits: Limits,
    algorithm: str | None,
) -> LoadedRecipe:
    """:func:`load_recipe` once its arguments are checked, with the resolvers' budget in place."""
    composition = compose(Path(file), limits=limits, root=None if root is None else Path(root))
    composed = composition.document
    overridden, unapplied = apply_overrides(composed, texts, file, limits)
    analysis = analyse(composed, limits)
    resolution = resolve_document(composed, file, analysis.refused)
    report = IssueReport(
        composed,
        Provenance(composition.chain, (*overridden, *(missing.keys for missing in unapplied))),
        outside=analysis.is_outside,
        secrets=_secrets(resolution.document, analysis.outside),
    )
    chosen = section if section is not None else default_section(composed, resolution)
    whole = choose_algorithm(resolution.document, algorithm)
    status, config = check_section(
        report,
        resolution,
        chosen or DEFAULT_SECTION,
        explicit=section is not None,
        strict=strict,
        whole=whole,
    )
    for missing in unapplied:
        report.add(missing.keys, K1.code, missing.reason, "error", missing.override.text)
    reported = {issue.path for issue in report.issues}
    for failure in resolution.failures:  # a refused value is an error wherever it is, not only in the section
        if failure.code == V6.code and failure.path not in reported:
            report.add_failure(failure)
    skipped: tuple[SkippedRule, ...] = ()
    entrypoint: Entrypoint | None = None
    model_name = served_model_name(resolution.document, chosen or DEFAULT_SECTION)
    if config is not None and config.model_name is None and model_name is not None:
        config = config.model_copy(update={"model_name": model_name})
    if run_preflight and (preflight_options is None or preflight_options.model_config is None):
        local = local_model_config(model_name, file, root)
        if local is not None:  # a local model folder of the recipe's repository: N2 and N7 run on its config
            preflight_options = dataclasses.replace(
                preflight_options or PreflightOptions(), model_config=local
            )
    if run_preflight:
        skipped, entrypoint = preflight_issues(report, resolution, preflight_options)
    if whole is not None:  # after preflight: a key P1 reports missing is not reported again as V8
        check_recipe(report, resolution, whole, strict=strict)
    else:  # a fragment: say that the whole-recipe checks did not run
        skipped = (*skipped, algorithm_not_detected(resolution.document))
    issues = _sorted(i for i in report.issues if code_selected(i.code, select=selected, ignore=ignored))
    skipped = tuple(s for s in skipped if code_selected(s.code, select=selected, ignore=ignored))
    chosen = chosen or DEFAULT_SECTION
    errors = [issue for issue in issues if issue.severity == "error"]
    if errors:
        summary = render_list(f"{issue.path}: {issue.reason}" for issue in errors)
        raise RecipeError(
            f"{render_name(file)}: {len(errors)} error(s) (section {render_name(chosen)}): {summary}",
            file=file,
            issues=issues,
            skipped=skipped,
            section=chosen,
            entrypoint=entrypoint,
            algorithm=whole,
        )
    return LoadedRecipe(
        file, chosen, status, composed, config, issues, skipped, entrypoint, model_name, whole
    )
