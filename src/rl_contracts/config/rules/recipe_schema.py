"""The schema of a whole recipe: a required key that is missing (V8), a value of the wrong type or outside its
enumeration (V9), a size or count outside its range (P32), each at its key.

:func:`schema_findings` validates the resolved document as the model of its algorithm
(:data:`~rl_contracts.config.section.recipe.RECIPE_MODELS`) and turns every pydantic line error into one
:class:`Finding` with the full key path (variant tags removed).  The generation section is not part of it (it
is validated as ``VllmConfig`` on its own).

Divergence from NeMo RL, which validates the same ``MasterConfig`` with pydantic's lax mode: ``"8"`` is not an int
here, ``true`` not an int, ``1`` not a bool, ``null`` not a value of a key NeMo RL declares optional but not
nullable, and sizes and counts must be at least 1.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from ..._internal.config_absent import ABSENT
from ..._internal.config_paths import dotted_path, lookup
from ..._internal.messages import render, render_name, shorten
from ...errors import MAX_MESSAGE_CHARS
from ..finding import Finding, Severity, SuggestedFix
from ..rule import Rule, checks
from ..section.recipe import RECIPE_MODELS, RUN_SCRIPTS, Algorithm, RecipeModel
from ..section.variants import strip_tags

__all__ = ["P32", "V8", "V9", "finding", "schema_findings"]

V8 = Rule(
    "V8",
    "recipe-key-missing",
    summary="a key the algorithm's recipe requires is missing: NeMo RL refuses to start",
    reference="examples/run_*.py: MasterConfig(**config) before Ray starts (S0)",
    what_it_checks=(
        "That every key the algorithm's `MasterConfig` requires is present in the composed recipe, in every section "
        "(`policy.tokenizer`, `checkpointing.enabled`, `logger.wandb`, `data.train`, ...); the algorithm comes from "
        "the recipe's top-level sections or `--algorithm`."
    ),
    why_it_matters=(
        "NeMo RL's entry point validates the recipe as its `MasterConfig` and stops with a pydantic error; found "
        "here, before any job is queued. A missing key that NeMo RL's own example recipes also omit is a warning "
        "that says so."
    ),
    example="""\
checkpointing:
  _override_: true
  enabled: true
""",
    fix="Add the key (the finding names the section and, when a close misspelling is present, the typo).",
)
V9 = Rule(
    "V9",
    "wrong-value-type",
    summary="a value of the wrong type or outside its enumeration in a section of the whole recipe",
    reference="examples/run_*.py: MasterConfig(**config) before Ray starts (S0), laxer",
    what_it_checks=(
        "That every value of the whole recipe has its declared type and, for enumerations, one of the declared "
        'values: strictly (no `"8"` for 8, no `true` for 1, no `[true]` for `true`, no `null` where NeMo RL '
        "declares a key optional but not nullable)."
    ),
    why_it_matters=(
        'NeMo RL rejects some of these at start-up and coerces the others (`"8"` becomes 8), so a quoting '
        "mistake silently changes type; the strict check reports both at the key."
    ),
    example="""\
grpo:
  num_prompts_per_step: many
""",
    fix="Write the value with its declared type (the finding says which).",
)
P32 = Rule(
    "P32",
    "size-out-of-range",
    summary="a size, count or period outside its range (a batch size of 0, a negative micro-batch size, ...)",
    reference="never at start-up (a ZeroDivisionError or an assertion minutes into the run)",
    what_it_checks=(
        "That sizes and counts of every section are at least 1 (batch and micro-batch sizes, generations per "
        "prompt, prompts per step, parallel sizes, nodes and GPUs, epochs and steps) and that periods, ports and "
        "fractions are within their ranges."
    ),
    why_it_matters=(
        "NeMo RL's models type these as plain ints, so `num_generations_per_prompt: 0` or "
        "`train_micro_batch_size: -2` start a run that fails with a ZeroDivisionError or an assertion after Ray "
        "and the workers have started."
    ),
    example="""\
grpo:
  num_generations_per_prompt: 0
""",
    fix="Set the value within the range the finding names.",
)

_RANGE_ERRORS = frozenset({"greater_than", "greater_than_equal", "less_than", "less_than_equal"})
_MISSING_ERRORS = frozenset({"missing"})

EXAMPLE_OMISSIONS: Mapping[tuple[str, ...], str] = {
    (
        "data_plane",
        "controller_address",
    ): "grpo_math_1B.yaml, grpo-llama3.1-8b-instruct-2n8g-async-1off-single-controller-streaming2.yaml",
    (
        "data_plane",
        "ack_timeout_ms",
    ): "grpo_math_1B.yaml, grpo-llama3.1-8b-instruct-2n8g-async-1off-single-controller-streaming2.yaml",
    (
        "data_plane",
        "observability",
    ): "grpo_math_1B.yaml, grpo-llama3.1-8b-instruct-2n8g-async-1off-single-controller-streaming2.yaml",
}
"""Required keys that NeMo RL's own example recipes omit, enabled data plane included (they disagree with NeMo RL's
own model): reported as a warning that says so, never an error."""


def finding(
    keys: tuple[Any, ...],
    code: str,
    severity: Severity,
    message: str,
    value: object,
    fix: SuggestedFix | None = None,
) -> Finding:
    """The :class:`~rl_contracts.config.finding.Finding` of a whole-recipe check at ``keys`` (``value``
    :data:`~rl_contracts._internal.config_absent.ABSENT` for a missing key)."""
    return Finding(
        code=code, path=dotted_path(keys), value=value, message=message, severity=severity, fix=fix
    )


def _typo_hint(document: Mapping[Any, Any], keys: tuple[Any, ...]) -> str:
    found, holder = lookup(document, keys[:-1])
    if not found or not isinstance(holder, Mapping) or not isinstance(keys[-1], str):
        return ""
    present = [key for key in holder if isinstance(key, str)]
    match = difflib.get_close_matches(keys[-1], present, n=1, cutoff=0.8)
    return f"; found '{render_name(match[0])}' (a misspelling?)" if match else ""


def _message(error: ErrorDetails, value: object) -> str:
    """The finding's message: pydantic's, as "<path> must be <what pydantic expects>, got <value>" when it says
    what the input should be."""
    if error["type"] == "union_tag_invalid":
        context = error.get("ctx") or {}
        expected = str(context.get("expected_tags", "")).replace("<", "").replace(">", "")
        tag = str(context.get("tag", "")).strip("<>")
        return shorten(f"unknown variant '{render_name(tag)}': expected one of {expected}", MAX_MESSAGE_CHARS)
    text = error["msg"].removeprefix("Value error, ")
    if text.startswith("Input should be "):
        path = dotted_path(tuple(strip_tags(tuple(error["loc"]))))
        text = f"{path} must be {text.removeprefix('Input should be ')}, got {render(value)}; fix the value at {path}"
    return shorten(text, MAX_MESSAGE_CHARS)


def _missing(
    document: Mapping[Any, Any], keys: tuple[Any, ...], model: type[RecipeModel], algorithm: Algorithm
) -> Finding:
    script = RUN_SCRIPTS[algorithm]
    example = EXAMPLE_OMISSIONS.get(tuple(str(key) for key in keys))
    if example is not None:
        reason = (
            f"required by NeMo RL's model of {algorithm} ({model.__name__}), but NeMo RL's own example recipes "
            f"({example}) omit it: the two disagree; add it to be safe"
        )
        return finding(keys, V8.code, "warning", reason, ABSENT)
    reason = f"required: {script} refuses to start without it ({model.__name__}); add it" + _typo_hint(
        document, keys
    )
    return finding(keys, V8.code, "error", reason, ABSENT)


@checks(V8, V9, P32)
def schema_findings(document: Mapping[Any, Any], algorithm: Algorithm) -> list[Finding]:
    """Validate the resolved ``document`` as the recipe model of ``algorithm``: one finding per line error (see the
    module), none when it validates."""
    model = RECIPE_MODELS[algorithm]
    try:
        model.model_validate(document)
    except ValidationError as exc:
        errors = exc.errors()
    else:
        return []
    findings: list[Finding] = []
    for error in errors:
        keys = tuple(strip_tags(tuple(error["loc"])))
        if error["type"] in _MISSING_ERRORS:
            findings.append(_missing(document, keys, model, algorithm))
            continue
        found, value = lookup(document, keys)
        shown = value if found else error.get("input")
        code = P32.code if error["type"] in _RANGE_ERRORS else V9.code
        findings.append(finding(keys, code, "error", _message(error, shown), shown))
    return findings
