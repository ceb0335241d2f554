"""NeMo RL-style recipe loading: composition, overrides, resolution, validation and preflight, as issues.

:func:`load_recipe` composes a recipe YAML (:mod:`.composition`), applies ``--set`` overrides (:mod:`.overrides`),
resolves the whole document leaf by leaf (:mod:`.resolution`), validates the generation section as
:class:`~rl_contracts.config.VllmConfig` with its reload-refit check and key classes (:mod:`.keys`), and runs the
preflight rules (:mod:`rl_contracts.config.preflight`).  Every problem becomes one :class:`ConfigIssue` with its
code and provenance (:mod:`.provenance`); any error issue raises :class:`RecipeError` holding all of them at once.
A file that cannot be read at all raises :class:`RecipeLoadError`.  No OmegaConf or YAML exception ever escapes.
This module imports neither torch nor vLLM.
"""

from __future__ import annotations

import difflib
import json
import math
import os
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from omegaconf import OmegaConf
from pydantic import BaseModel, ConfigDict, JsonValue, ValidationError
from pydantic_core import ErrorDetails

from .._messages import render, render_list, render_name, shorten
from ..checks import require_bool, require_collection
from ..errors import MAX_MESSAGE_CHARS, ContractTypeError, RecipeError, RecipeLoadError
from ._documents import Keys, dotted_path, is_under, kind, lookup, reason, split_path
from ._violations import MISSING
from .codes import code_selected
from .composition import compose
from .generation import VllmConfig
from .keys import unknown_keys
from .overrides import apply_overrides
from .preflight import ABSENT, Entrypoint, PreflightOptions, SkippedRule, preflight
from .provenance import Provenance
from .refit_models import is_plugin_path
from .refit_rules import reload_refit_violation
from .resolution import Resolution, register_resolvers, resolve_document
from .suggested_fix import SuggestedFix

__all__ = [
    "DEFAULT_SECTION",
    "EVALUATION_SECTION",
    "ConfigIssue",
    "LoadedRecipe",
    "load_recipe",
    "register_resolvers",
]

DEFAULT_SECTION = "policy.generation"
"""The section :func:`load_recipe` selects when ``section`` is ``None`` and the recipe has it."""

EVALUATION_SECTION = "generation"
"""The section :func:`load_recipe` selects when ``section`` is ``None`` and only this one exists (eval configs)."""

MISSING_VALUE = "<missing>"
_RANGE_ERRORS = frozenset({"greater_than", "greater_than_equal", "less_than", "less_than_equal"})
_JSON_CHARS = 2000


class ConfigIssue(BaseModel):
    """One problem found in a recipe (frozen).

    ``path`` is the full dotted path from the document root, a mapping key written ``.key`` (an int key too:
    ``.5``) and a list index ``[i]`` (``policy.generation.stop_token_ids[2]``); a load error reported by the CLI
    has an empty ``path``.  ``value`` is ``shorten(repr(v), 200)`` or ``"<missing>"``; ``json_value`` is the same
    value as JSON (JSON values unchanged, anything else its ``repr`` string, ``None`` when missing or when its JSON
    text would exceed 2,000 characters, then the shortened ``repr``); ``missing`` marks an absent key.  ``code`` is
    its stable code (:data:`rl_contracts.config.catalogue.CODES`).  ``source`` is the file of the ``defaults``
    chain that last set the value at ``path`` and ``line`` its 1-based line there; a value a ``--set`` override
    wrote (at or below the overridden key) has the source ``"--set"`` (:data:`.provenance.OVERRIDE_SOURCE`) and
    line ``None``; a missing key has both ``None``.  ``fix`` is the change that removes the finding when its rule
    has one (:mod:`.suggested_fix`; applied by :mod:`.fixes`), else ``None``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

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
    def for_load_error(cls, error: RecipeLoadError) -> ConfigIssue:
        """The issue (code ``V1``, empty path) that reports a recipe that could not be read."""
        return cls(
            path="",
            value=error.value or "",
            reason=error.message,
            severity="error",
            code="V1",
            source=error.file,
            line=error.line,
            json_value=error.value,
        )


@dataclass(frozen=True)
class LoadedRecipe:
    """A recipe whose selected section passed every check (``status="valid"``) or was not validated ("skipped").

    ``document`` is the composed document (overrides applied) as plain containers with interpolations left
    unresolved; ``generation`` is the validated section (``None`` when skipped, or when ``ignore`` filtered out
    every error of an invalid section); ``issues`` holds warnings only;
    ``skipped`` the preflight rules that could not run; ``entrypoint`` the trainer preflight checked against
    (``None`` when preflight did not run or the recipe is not a GRPO recipe).
    """

    file: str
    section: str
    status: Literal["valid", "skipped"]
    document: dict[Any, Any]
    generation: VllmConfig | None
    issues: tuple[ConfigIssue, ...] = field(default=())
    skipped: tuple[SkippedRule, ...] = field(default=())
    entrypoint: Entrypoint | None = None


def _json_value(value: object) -> JsonValue:
    """``value`` as JSON: JSON values unchanged, other values (or parts) as their ``repr``; bounded."""

    def convert(item: object, depth: int) -> JsonValue:
        if item is None or isinstance(item, bool | str):
            return item
        if isinstance(item, int):
            return item if abs(item) < 2**63 else render(item)
        if isinstance(item, float):
            return item if math.isfinite(item) else repr(item)
        if depth < 32 and isinstance(item, list):
            return [convert(element, depth + 1) for element in item]
        if depth < 32 and isinstance(item, dict) and all(isinstance(key, str) for key in item):
            return {key: convert(element, depth + 1) for key, element in item.items()}
        return render(item)

    converted = convert(value, 0)
    if isinstance(converted, list | dict) and len(json.dumps(converted)) > _JSON_CHARS:
        return render(value)
    return converted


@dataclass
class _Report:
    """Collects the issues of one recipe, each with its code and provenance."""

    document: dict[Any, Any]
    provenance: Provenance
    issues: list[ConfigIssue] = field(default_factory=list)

    def add(
        self,
        keys: Keys,
        code: str,
        why: str,
        severity: Literal["error", "warning"],
        value: object = MISSING,
        *,
        path: str | None = None,
        fix: SuggestedFix | None = None,
    ) -> None:
        """Add one issue at ``keys`` (``path`` when given: a preflight finding's own spelling) with its ``fix``."""
        missing = value is MISSING
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
                json_value=None if missing else _json_value(value),
                missing=missing,
                fix=fix,
            )
        )

    def has_errors(self) -> bool:
        return any(issue.severity == "error" for issue in self.issues)


# --------------------------------------------------------------------------------------------- the section


def _pydantic_message(error: ErrorDetails) -> str:
    return shorten(error["msg"].removeprefix("Value error, "), MAX_MESSAGE_CHARS)


def _typo_hint(data: dict[Any, Any], keys: Sequence[Any]) -> str:
    """For a missing key, a hint naming a present key that looks like a misspelling of it."""
    found, holder = lookup(data, keys[:-1])
    if not (found and isinstance(holder, dict) and keys and isinstance(keys[-1], str)):
        return ""
    present = [key for key in holder if isinstance(key, str) and key != keys[-1]]
    match = difflib.get_close_matches(keys[-1], present, n=1, cutoff=0.8)
    return f"; found unknown key '{render_name(match[0])}' (a misspelling?)" if match else ""


def _schema_code(error: ErrorDetails) -> str:
    """The code of one pydantic line error: its rule, C9 for a plugin config, C2 for a range, else V3."""
    kind_ = str(error["type"])
    if kind_.startswith("config_rule_"):
        rule = kind_.removeprefix("config_rule_").removesuffix("_missing")
        return "V3" if rule == "duplicate_key" else rule.upper()
    loc = error["loc"]
    if len(loc) > 1 and loc[0] == "refit_cfg" and isinstance(loc[1], str) and is_plugin_path(loc[1]):
        return "C9"
    return "C2" if kind_ in _RANGE_ERRORS else "V3"


def _schema_issues(
    report: _Report, section: Keys, data: dict[Any, Any], exc: ValidationError, failed: list[str]
) -> None:
    """One error issue per pydantic line error, at the full dotted path, with the value as written."""
    for error in exc.errors():
        keys = tuple(error["loc"])
        if is_under(dotted_path((*section, *keys), report.document), failed):
            continue
        found, value = lookup(data, keys)
        why = _pydantic_message(error)
        type_ = str(error["type"])
        if not found and (type_ == "missing" or type_.endswith("_missing")):
            report.add((*section, *keys), _schema_code(error), why + _typo_hint(data, keys), "error")
        else:
            report.add(
                (*section, *keys), _schema_code(error), why, "error", value if found else error.get("input")
            )


def _config_issues(
    report: _Report, section: Keys, data: dict[Any, Any], strict: bool, failed: list[str]
) -> VllmConfig | None:
    """Validate the resolved section; add schema, rule, reload-refit and key issues; the model when valid.

    Schema issues at or below a ``failed`` path (already reported as V2) are suppressed.
    """
    try:
        config = VllmConfig.model_validate(data)
    except ValidationError as exc:
        _schema_issues(report, section, data, exc, failed)
        return None
    violation = reload_refit_violation(config)
    if violation is not None:
        report.add((*section, *violation.loc), violation.code, violation.message, "error", violation.value)
    for unknown in unknown_keys(config):
        error = unknown.code in ("K1", "P28") or (strict and unknown.code == "K2")
        report.add(
            (*section, *unknown.path),
            unknown.code,
            unknown.reason,
            "error" if error else "warning",
            unknown.value,
            fix=unknown.fix,
        )
    return config


def _default_section(composed: dict[Any, Any], resolution: Resolution) -> str | None:
    """``policy.generation`` when the recipe has it (or a ``policy`` that is not a mapping), else a top-level
    ``generation`` mapping (or one that failed resolution, so that its failure is reported), else ``None``."""
    policy = composed.get("policy")
    if policy is not None and (not isinstance(policy, dict) or policy.get("generation") is not None):
        return DEFAULT_SECTION
    failed = any(failure.keys == (EVALUATION_SECTION,) for failure in resolution.failures)
    return (
        EVALUATION_SECTION
        if failed or isinstance(resolution.document.get(EVALUATION_SECTION), dict)
        else None
    )


def _locate(report: _Report, resolution: Resolution, section: Keys) -> dict[Any, Any] | None:
    """The resolved section mapping; ``None`` when it is missing, null or failed (issues added for the last two
    and for a non-mapping on the way)."""
    failed = resolution.failed_under([section])
    above = [failure for failure in failed if len(failure.keys) <= len(section)]
    for failure in above:
        report.add(failure.keys, "V2", failure.reason, "error", failure.raw, path=failure.path)
    if above:
        return None
    holder: Any = resolution.document
    for depth, key in enumerate(section):
        if not isinstance(holder, dict):
            where = section[:depth]
            what = f"{dotted_path(where)} must be a mapping (it holds {dotted_path(section)}), got a {kind(holder)}"
            report.add(where, "V4", what, "error", holder)
            return None
        holder = holder.get(key)
        if holder is None:
            return None
    if not isinstance(holder, dict):
        report.add(
            section,
            "V4",
            f"section {dotted_path(section)} must be a mapping, got a {kind(holder)}",
            "error",
            holder,
        )
        return None
    return holder


def _check_section(
    report: _Report, resolution: Resolution, section: str, *, explicit: bool, strict: bool
) -> tuple[Literal["valid", "skipped"], VllmConfig | None]:
    """Validate the selected section; the status and the model (``None`` when skipped or invalid)."""
    keys = tuple(section.split("."))
    data = _locate(report, resolution, keys)
    if data is None:
        if report.has_errors():
            return "valid", None
        if explicit:
            report.add(keys, "V4", f"section {render_name(section)} not found", "error")
            return "valid", None
        why = (
            f"no generation section ({DEFAULT_SECTION} or a top-level {EVALUATION_SECTION} mapping): not a "
            "generation recipe; pass --section DOTTED.PATH to validate another section"
        )
        report.add(keys, "V5", why, "warning")
        return "skipped", None
    backend_keys = (*keys, "backend")
    backend = data.get("backend")
    failed = resolution.failed_under([keys])
    if isinstance(backend, str) and backend != "vllm":  # not validated, so its failed leaves do not matter
        why = f"backend '{render_name(backend)}' is not validated (only 'vllm' is)"
        report.add(backend_keys, "V5", why, "warning", backend)
        return "skipped", None
    for failure in failed:
        report.add(failure.keys, "V2", failure.reason, "error", failure.raw, path=failure.path)
    if any(failure.keys == backend_keys for failure in failed):
        return "valid", None
    if backend is None:
        why = "backend is required (set backend: vllm to validate this section)"
        report.add(backend_keys, "V4", why, "error", MISSING if "backend" not in data else None)
        return "valid", None
    if not isinstance(backend, str):
        why = f"backend must be a string such as 'vllm', got {kind(backend)}"
        report.add(backend_keys, "V4", why, "error", backend)
        return "valid", None
    return "valid", _config_issues(report, keys, data, strict, [failure.path for failure in failed])


# --------------------------------------------------------------------------------------------- preflight


def _preflight(
    report: _Report, resolution: Resolution, options: PreflightOptions | None
) -> tuple[tuple[SkippedRule, ...], Entrypoint | None]:
    """Run preflight over the resolved document; its findings become issues with provenance.

    A finding at a path whose value the section check already rejected as unresolvable or of the wrong type (V2,
    V3) is dropped: preflight would only report the same bad value again.
    """
    result = preflight(resolution.document, options, unresolved=resolution.unresolved)
    rejected = {issue.path for issue in report.issues if issue.code in ("V2", "V3")}
    for finding in result.findings:
        if finding.path in rejected:
            continue
        value = MISSING if finding.value is ABSENT else finding.value
        keys = split_path(finding.path)
        report.add(
            keys, finding.code, finding.message, finding.severity, value, path=finding.path, fix=finding.fix
        )
    return result.skipped, result.entrypoint


# --------------------------------------------------------------------------------------------- entry point


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

    Composition as :func:`rl_contracts.config.composition.compose` (SPEC §1.8); then ``overrides``
    (``key=value``, ``+key=value``, ``++key=value``, :mod:`.overrides`) apply in order (an issue at or below an
    overridden key has the source ``"--set"`` and line ``None``); then the whole document is
    resolved leaf by leaf with the ``add``, ``mul``, ``div`` and ``max`` resolvers (a failing leaf inside the
    section is an error issue ``V2``; elsewhere it only makes the preflight rules that read it skip).  The section
    (``section``; when ``None``: ``policy.generation``, else a top-level ``generation`` mapping) is validated as
    ``VllmConfig`` when its ``backend`` is ``"vllm"``, checked with the reload-refit steps, and its unknown keys
    are classified (typo ``K1`` and misplaced ``P28`` are errors, dead ``W2`` a warning, unknown ``K2`` a warning
    or, with ``strict=True``, an error).  When ``run_preflight`` is true, preflight runs over the resolved document
    with ``preflight_options`` (its findings become issues; its skipped rules go to ``.skipped``).  Finally
    ``select``/``ignore`` (codes or code families, as :func:`~rl_contracts.config.codes.code_selected`) filter
    issues and skipped rules before the result is decided.

    Returns:
        ``LoadedRecipe`` with status ``"valid"``, or ``"skipped"`` when ``section`` is ``None`` and the recipe has
        no generation section, or when the backend is not ``"vllm"``.

    Raises:
        RecipeError: any error issue (``.issues`` holds every issue, warnings included, sorted by path, reason;
            ``.skipped`` the skipped preflight rules; ``.section`` the section validated, as
            ``LoadedRecipe.section``; ``.entrypoint`` as ``LoadedRecipe.entrypoint``).
        RecipeLoadError: the recipe cannot be read (see :func:`~rl_contracts.config.composition.compose`), or an
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
    report = _Report(composed, Provenance(composition.chain, overridden))
    chosen = section if section is not None else _default_section(composed, resolution)
    status, config = _check_section(
        report, resolution, chosen or DEFAULT_SECTION, explicit=section is not None, strict=strict
    )
    skipped: tuple[SkippedRule, ...] = ()
    entrypoint: Entrypoint | None = None
    if run_preflight:
        skipped, entrypoint = _preflight(report, resolution, preflight_options)
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
    return LoadedRecipe(file, chosen, status, composed, config, issues, skipped, entrypoint)
