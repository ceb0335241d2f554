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
from ...checks import require_bool, require_collection
from ...errors import ContractTypeError, RecipeError
from ..rules.preflight import Entrypoint, PreflightOptions, SkippedRule
from ..rules.registry import check_patterns, code_selected
from ..rules.unknown_keys import K1
from ..section.generation import VllmConfig
from ..section.recipe import ALGORITHMS
from .check_recipe import check_recipe, choose_algorithm
from .check_section import DEFAULT_SECTION, check_section, default_section
from .compose import V6, build_tree, compose
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

    ``document`` is the composed document (overrides applied) as plain containers with interpolations left
    unresolved; ``generation`` is the validated section (``None`` when skipped, or when ``ignore`` filtered out
    every error of an invalid section); ``issues`` holds warnings only;
    ``skipped`` the preflight rules that could not run; ``entrypoint`` the trainer preflight checked against
    (``None`` when preflight did not run or the recipe is not a GRPO recipe).

    ``algorithm`` is the NeMo RL algorithm whose whole recipe was checked (given, or read from the recipe's
    top-level sections; ``None`` when it names none: then only the generation section and preflight ran).

    ``model_name`` is the model the section serves, as the trainer sets it
    (:func:`~.local_model.served_model_name`): for ``policy.generation``, ``policy.model_name`` (NeMo RL's
    ``grpo.setup`` overwrites the section's own ``model_name`` with it), else the section's own; ``None`` when
    the recipe names none.  ``generation.model_name`` carries it when the section leaves its own absent or null;
    a section's own non-null ``model_name`` is kept as written (the trainer would overwrite it: read
    ``model_name`` for what runs).
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


def _codes(value: object, argument: str) -> tuple[str, ...]:
    items = require_collection(value, argument, "a collection of code strings such as ['P', 'W2']")
    for item in items:
        if not isinstance(item, str):
            raise ContractTypeError.for_value(f"{argument}[i]", "a code string such as 'P7'", item)
    return tuple(items)


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
    ``select``/``ignore``.  The steps and every option: docs/development/config-core.md ("load_recipe").

    Returns:
        ``LoadedRecipe`` with status ``"valid"``, or ``"skipped"`` (no generation section, or a backend other than
        ``"vllm"``); its ``issues`` are warnings, each with its code and provenance.

    Raises:
        RecipeError: any error finding; ``.issues`` holds every finding (warnings included, sorted by path then
            message), ``.skipped``, ``.section`` and ``.entrypoint`` as on the result.
        RecipeLoadError: the file or an override cannot be read (``.code`` ``V1``; ``V6`` beyond ``limits``;
            ``V7`` a ``defaults`` parent outside ``root``).
        ContractTypeError: an argument of the wrong type (``algorithm`` one of
            :data:`~..section.recipe.ALGORITHMS` or ``None``).
        ConfigContractError: a ``select``/``ignore`` pattern that names no code or family.

    When the recipe is of a NeMo RL algorithm (``algorithm``, else the one its top-level sections name, if it has
    every required top-level section), every section is checked as that algorithm's whole recipe
    (:mod:`.check_recipe`), and a recipe without a generation section is validated, not skipped.
    """
    if not isinstance(path, str | os.PathLike):
        raise ContractTypeError.for_value("path", "a str or os.PathLike", path)
    if section is not None and not isinstance(section, str):
        raise ContractTypeError.for_value("section", "a str or None", section)
    if algorithm is not None and algorithm not in ALGORITHMS:
        raise ContractTypeError.for_value("algorithm", f"one of {', '.join(ALGORITHMS)} or None", algorithm)
    require_bool(strict, "strict")
    require_bool(run_preflight, "run_preflight")
    texts = _codes(overrides, "overrides")
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
    # --set values changed the plain document only: they need a tree of their own
    document = build_tree(composed, file, "the composed document") if texts else composition.config
    analysis = analyse(composed, limits)
    resolution = resolve_document(document, analysis.refused)
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
        )
    return LoadedRecipe(
        file, chosen, status, composed, config, issues, skipped, entrypoint, model_name, whole
    )
