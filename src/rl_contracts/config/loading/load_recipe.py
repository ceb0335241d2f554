"""NeMo RL-style recipe loading: composition, overrides, resolution, validation and preflight, as issues.

:func:`load_recipe` composes a recipe YAML (:mod:`.compose`), applies ``--set`` overrides (:mod:`.overrides`),
resolves the whole document leaf by leaf (:mod:`.resolve`), validates the generation section as
:class:`~rl_contracts.config.VllmConfig` with its reload-refit check and key classes (:mod:`.check_section`), and
runs the preflight rules (:mod:`.run_preflight`).  Every problem becomes one :class:`~.issues.ConfigIssue` with its
code and provenance (:mod:`.provenance`); any error issue raises :class:`RecipeError` holding all of them at once.
A file that cannot be read at all raises :class:`RecipeLoadError`.  No OmegaConf or YAML exception ever escapes.
This module imports neither torch nor vLLM.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from omegaconf import OmegaConf

from ..._messages import render_list, render_name
from ...checks import require_bool, require_collection
from ...errors import ContractTypeError, RecipeError, RecipeLoadError
from ..rules.preflight import Entrypoint, PreflightOptions, SkippedRule
from ..rules.registry import code_selected
from ..section.generation import VllmConfig
from .check_section import DEFAULT_SECTION, check_section, default_section
from .compose import compose
from .issues import ConfigIssue, IssueReport
from .local_model import local_model_config, served_model_name
from .overrides import apply_overrides
from .parsing import reason
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


def _codes(value: object, argument: str) -> tuple[str, ...]:
    items = require_collection(value, argument, "a collection of code strings such as ['P', 'W2']")
    for item in items:
        if not isinstance(item, str):
            raise ContractTypeError.for_value(f"{argument}[i]", "a code string such as 'P7'", item)
    return tuple(items)


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
) -> LoadedRecipe:
    """Compose a recipe, validate its generation section, run preflight, and return it with its warnings.

    Composition as :func:`rl_contracts.config.loading.compose.compose` (SPEC §1.8); then ``overrides``
    (``key=value``, ``+key=value``, ``++key=value``, :mod:`.overrides`) apply in order (an issue at or below an
    overridden key has the source ``"--set"`` and line ``None``); then the whole document is
    resolved leaf by leaf with the ``add``, ``mul``, ``div`` and ``max`` resolvers (a failing leaf inside the
    section is an error issue ``V2``; elsewhere it only makes the preflight rules that read it skip).  The section
    (``section``; when ``None``: ``policy.generation``, else a top-level ``generation`` mapping) is validated as
    ``VllmConfig`` when its ``backend`` is ``"vllm"``, checked with the reload-refit steps, and its unknown keys
    are classified (typo ``K1`` and misplaced ``P28`` are errors, dead ``W2`` a warning, unknown ``K2`` a warning
    or, with ``strict=True``, an error).  When ``run_preflight`` is true, preflight runs over the resolved document
    with ``preflight_options`` (its findings become issues; its skipped rules go to ``.skipped``); when they give
    no ``model_config`` and the served model (``LoadedRecipe.model_name``) is a local folder inside the recipe's
    repository holding a ``config.json``, that file is the model config (:func:`~.local_model.local_model_config`,
    so N2 and N7 run; its content is never printed).  Finally
    ``select``/``ignore`` (codes or code families, as :func:`~rl_contracts.config.rules.registry.code_selected`) filter
    issues and skipped rules before the result is decided.

    Returns:
        ``LoadedRecipe`` with status ``"valid"``, or ``"skipped"`` when ``section`` is ``None`` and the recipe has
        no generation section, or when the backend is not ``"vllm"``.

    Raises:
        RecipeError: any error issue (``.issues`` holds every issue, warnings included, sorted by path, reason;
            ``.skipped`` the skipped preflight rules; ``.section`` the section validated, as
            ``LoadedRecipe.section``; ``.entrypoint`` as ``LoadedRecipe.entrypoint``).
        RecipeLoadError: the recipe cannot be read (see :func:`~rl_contracts.config.loading.compose.compose`), or an
            override is malformed or names a key it cannot set.
        ContractTypeError: ``path`` is not a ``str``/``PathLike``, ``section`` is not a ``str`` or ``None``,
            ``strict``/``run_preflight`` is not a ``bool``, ``overrides``/``select``/``ignore`` is not a
            collection of ``str``, or ``preflight_options`` is not a ``PreflightOptions`` or ``None``.

    Example::

        recipe = load_recipe("src/rl_contracts/recipes/grpo_qwen3_moe.yaml")
        recipe.generation.vllm_cfg.tensor_parallel_size  # -> 4
    """
    if not isinstance(path, str | os.PathLike):
        raise ContractTypeError.for_value("path", "a str or os.PathLike", path)
    if section is not None and not isinstance(section, str):
        raise ContractTypeError.for_value("section", "a str or None", section)
    require_bool(strict, "strict")
    require_bool(run_preflight, "run_preflight")
    texts = _codes(overrides, "overrides")
    selected, ignored = _codes(select, "select"), _codes(ignore, "ignore")
    if preflight_options is not None and not isinstance(preflight_options, PreflightOptions):
        raise ContractTypeError.for_value(
            "preflight_options", "a PreflightOptions or None", preflight_options
        )
    file = os.fspath(path)
    if not isinstance(file, str):
        raise ContractTypeError.for_value("path", "a text path", file)
    register_resolvers()
    composition = compose(Path(file))
    composed = composition.document
    overridden = apply_overrides(composed, texts, file)
    try:
        document = OmegaConf.create(composed)
    except (RecursionError, MemoryError):
        raise
    except Exception as exc:
        raise RecipeLoadError(
            f"{render_name(file)}: cannot build the composed document: {reason(exc)}", file=file
        ) from None
    resolution = resolve_document(document)
    report = IssueReport(composed, Provenance(composition.chain, overridden))
    chosen = section if section is not None else default_section(composed, resolution)
    status, config = check_section(
        report, resolution, chosen or DEFAULT_SECTION, explicit=section is not None, strict=strict
    )
    skipped: tuple[SkippedRule, ...] = ()
    entrypoint: Entrypoint | None = None
    model_name = served_model_name(resolution.document, chosen or DEFAULT_SECTION)
    if config is not None and config.model_name is None and model_name is not None:
        config = config.model_copy(update={"model_name": model_name})
    if run_preflight and (preflight_options is None or preflight_options.model_config is None):
        local = local_model_config(model_name, file)
        if local is not None:  # a local model folder of the recipe's repository: N2 and N7 run on its config
            preflight_options = dataclasses.replace(
                preflight_options or PreflightOptions(), model_config=local
            )
    if run_preflight:
        skipped, entrypoint = preflight_issues(report, resolution, preflight_options)
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
    return LoadedRecipe(file, chosen, status, composed, config, issues, skipped, entrypoint, model_name)
