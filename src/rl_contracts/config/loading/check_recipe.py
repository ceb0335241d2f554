"""The whole-recipe check of ``load_recipe``: every section of the recipe's algorithm, typed and checked.

NeMo RL's entry point resolves the whole recipe and validates it as its algorithm's ``MasterConfig`` before Ray
starts, so here every value that cannot be resolved is an error (``V2``) wherever it is, then come the schema
(:mod:`~..rules.recipe_schema`: V8, V9, P32), the undeclared keys (:mod:`~..rules.recipe_keys`: K1, K3, K2; K2 an
error under ``strict``), the static arithmetic (:mod:`~..rules.recipe_arithmetic`: P33-P36) and, for
distillation, the teacher's scoring against the student's sampling (P31, which GRPO's preflight cannot run).  Nothing is
reported twice: a finding at or below a value that did not resolve, or at a path already reported, is dropped.

A recipe checked as no algorithm's (a fragment) gets the skipped note N8, declared here beside
:func:`algorithm_not_detected`.
"""

from __future__ import annotations

from ..._internal.config_paths import is_under, keys_in, split_path
from ...errors import ContractTypeError
from ..finding import Finding
from ..rule import Rule, checks
from ..rules.preflight.sampling import distillation_scoring_findings
from ..rules.recipe_arithmetic import arithmetic_findings
from ..rules.recipe_keys import recipe_key_findings
from ..rules.recipe_schema import schema_findings
from ..section.recipe import ALGORITHMS, RECIPE_MODELS, Algorithm, detect_algorithm
from .issues import IssueReport
from .resolve import V2, Resolution

__all__ = [
    "N8",
    "algorithm_not_detected",
    "algorithm_or_none",
    "check_recipe",
    "choose_algorithm",
    "required_sections",
]

N8 = Rule(
    "N8",
    "algorithm-not-detected",
    summary="the recipe is no whole recipe of a NeMo RL algorithm (a fragment): the whole-recipe checks did not run",
    reference="examples/run_*.py: each entry point validates its algorithm's MasterConfig (S0)",
    severity="skipped",
    what_it_checks=(
        "Whether the recipe's top-level sections name a NeMo RL algorithm and hold every section it requires; "
        "a fragment (a child recipe holding only `policy.generation`, a file without `logger` or `cluster`) "
        "gets only its generation section and preflight checked, and this note says so."
    ),
    why_it_matters=(
        "The whole-recipe rules (V8, V9, K1-K3 outside the generation section, P32-P36) need the algorithm: "
        "without it a typo in `policy`, `grpo` or `checkpointing` of the fragment is not reported."
    ),
    example="""\
defaults: []
policy:
  generation:
    backend: vllm
    max_new_tokens: 512
    temperature: 1.0
    top_p: 1.0
    top_k: null
    val_temperature: 1.0
    val_top_p: 1.0
    val_top_k: null
    stop_token_ids: null
    stop_strings: null
    vllm_cfg:
      tensor_parallel_size: 1
      pipeline_parallel_size: 1
      expert_parallel_size: 1
      gpu_memory_utilization: 0.6
      max_model_len: 4096
      async_engine: false
""",
    fix=(
        "Pass `--algorithm NAME` (`load_recipe(algorithm=...)`) to check the fragment as that algorithm's whole "
        "recipe, or validate the recipe that composes it; use `--ignore N8` to silence the note."
    ),
)


def algorithm_or_none(value: object) -> Algorithm | None:
    """``value`` as an :data:`~..section.recipe.Algorithm` (``None`` stays ``None``); ``ContractTypeError`` naming
    ``algorithm`` for anything else."""
    for name in ALGORITHMS:
        if value == name:
            return name
    if value is None:
        return None
    raise ContractTypeError.for_value("algorithm", f"one of {', '.join(ALGORITHMS)} or None", value)


def choose_algorithm(document: dict[object, object], algorithm: str | None) -> Algorithm | None:
    """``algorithm`` when given (:func:`algorithm_or_none`), else the one the recipe's top-level
    sections name (:func:`~..section.recipe.detect_algorithm`) when the recipe is whole, else ``None``.

    A recipe that names an algorithm but lacks one of its required top-level sections (``logger``, ``cluster``,
    ...) is a fragment of a recipe, not one NeMo RL could start: it is checked as before (its generation section
    and preflight) unless ``algorithm`` is given.
    """
    if algorithm is not None:
        return algorithm_or_none(algorithm)
    detected = detect_algorithm(document)
    if detected is None or any(section not in document for section in required_sections(detected)):
        return None
    return detected


@checks(N8)
def algorithm_not_detected(document: dict[object, object]) -> Finding:
    """The skipped note (N8, at the whole file) of a recipe that :func:`choose_algorithm` checks as no algorithm's,
    naming the algorithm its sections suggest and the required sections it lacks, if any."""
    detected = detect_algorithm(document)
    why, name = "no algorithm detected from the top-level sections", "NAME"
    if detected is not None:
        absent = ", ".join(section for section in required_sections(detected) if section not in document)
        why, name = f"no algorithm detected: the sections of {detected} lack {absent} (a fragment)", detected
    message = f"{why}: whole-recipe checks skipped (pass --algorithm {name} to run them)"
    return Finding(code=N8.code, severity="skipped", message=message)


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
