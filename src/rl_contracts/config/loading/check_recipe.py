"""The whole-recipe check of ``load_recipe``: every section of the recipe's algorithm, typed and checked.

NeMo RL's entry point resolves the whole recipe and validates it as its algorithm's ``MasterConfig`` before Ray
starts, so here every value that cannot be resolved is an error (``V2``) wherever it is, then come the schema
(:mod:`~..rules.recipe_schema`: V8, V9, P32), the undeclared keys (:mod:`~..rules.recipe_keys`: K1, K3, K2; K2 an
error under ``strict``), the static arithmetic (:mod:`~..rules.recipe_arithmetic`: P33-P36) and, for
distillation, the teacher's scoring against the student's sampling (P31, which GRPO's preflight cannot run).  Nothing is
reported twice: a finding at or below a value that did not resolve, or at a path already reported, is dropped.
"""

from __future__ import annotations

from ..._internal.config_paths import is_under, keys_in, split_path
from ..rules.preflight.sampling import distillation_scoring_findings
from ..rules.recipe_arithmetic import arithmetic_findings
from ..rules.recipe_keys import recipe_key_findings
from ..rules.recipe_schema import schema_findings
from ..section.recipe import ALGORITHMS, RECIPE_MODELS, Algorithm, detect_algorithm
from .issues import IssueReport
from .resolve import V2, Resolution

__all__ = ["check_recipe", "choose_algorithm", "required_sections"]


def choose_algorithm(document: dict[object, object], algorithm: str | None) -> Algorithm | None:
    """``algorithm`` when given (one of :data:`~..section.recipe.ALGORITHMS`), else the one the recipe's top-level
    sections name (:func:`~..section.recipe.detect_algorithm`) when the recipe is whole, else ``None``.

    A recipe that names an algorithm but lacks one of its required top-level sections (``logger``, ``cluster``,
    ...) is a fragment of a recipe, not one NeMo RL could start: it is checked as before (its generation section
    and preflight) unless ``algorithm`` is given.
    """
    if algorithm is not None:
        return next(name for name in ALGORITHMS if name == algorithm)
    detected = detect_algorithm(document)
    if detected is None or any(section not in document for section in required_sections(detected)):
        return None
    return detected


def required_sections(algorithm: Algorithm) -> list[str]:
    """The top-level sections the recipe of ``algorithm`` requires."""
    return [name for name, field in RECIPE_MODELS[algorithm].model_fields.items() if field.is_required()]


def check_recipe(report: IssueReport, resolution: Resolution, algorithm: Algorithm, *, strict: bool) -> None:
    """Add the whole-recipe issues of the resolved recipe (see the module) to ``report``."""
    reported = {issue.path for issue in report.issues}
    for failure in resolution.failures:
        if failure.path not in reported and not is_under(failure.path, reported):
            why = f"{failure.message} (NeMo RL resolves the whole recipe before it starts)"
            keys = keys_in(failure.path, report.document)
            report.add(keys, V2.code, why, "error", failure.value, path=failure.path)
            reported.add(failure.path)
    failed = [failure.path for failure in resolution.failures]
    document = resolution.document
    findings = [
        *schema_findings(document, algorithm),
        *recipe_key_findings(document, algorithm),
        *arithmetic_findings(document, algorithm),
    ]
    if algorithm == "distillation":
        findings += distillation_scoring_findings(document, unresolved=failed)
    for finding in findings:
        if finding.path in reported or is_under(finding.path, failed):
            continue
        reported.add(finding.path)
        severity = "error" if strict and finding.code == "K2" else finding.severity
        keys = split_path(finding.path)
        report.add(
            keys, finding.code, finding.message, severity, finding.value, path=finding.path, fix=finding.fix
        )
