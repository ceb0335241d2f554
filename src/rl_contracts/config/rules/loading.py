"""The loading rules (V1–V5): a recipe that cannot be read or resolved, a section that breaks the schema, is
missing or is not validated.

They are raised by the loading stage (:mod:`rl_contracts.config.loading`): V1 by composition and overrides (a
:class:`~rl_contracts.errors.RecipeLoadError`), V2, V4 and V5 by the section check, V3 by the section's schema
(every pydantic line error without a rule of its own, and a key given in both spellings).
"""

from __future__ import annotations

from .rule import Rule

__all__ = ["V1", "V2", "V3", "V4", "V5"]

V1 = Rule(
    "V1",
    "recipe-unreadable",
    summary="the recipe cannot be read (I/O, YAML syntax, defaults cycle, missing parent)",
    reference="config load (S0)",
)
V2 = Rule(
    "V2",
    "unresolved-value",
    summary="a value cannot be resolved (missing ??? or a failed interpolation)",
    reference="config load (S0)",
)
V3 = Rule(
    "V3",
    "schema-violation",
    summary="a value breaks the VllmConfig schema (type, range, forbidden key)",
    reference="vllm_worker.py and the config TypedDicts (S1-S3)",
)
V4 = Rule(
    "V4",
    "section-missing",
    summary="the selected section is missing, or its backend is missing or not a string",
    reference="grpo.py:setup (S1)",
)
V5 = Rule(
    "V5",
    "section-not-validated",
    summary="the recipe has no generation section, or its backend is not validated",
    reference="never",
    severity="warning",
)
