"""The loading rules (V1–V7): a recipe that cannot be read or resolved, a section that breaks the schema, is
missing or is not validated, a recipe beyond a loading limit (V6) or with a parent outside its root (V7).

They are raised by the loading stage (:mod:`rl_contracts.config.loading`): V1 by composition and overrides (a
:class:`~rl_contracts.errors.RecipeLoadError`), V2, V4 and V5 by the section check (V3, the schema, is declared with the base model,
:mod:`rl_contracts.config._internal.base`); V6 by reading, composing
and resolving (a ``RecipeLoadError``, or an error issue for a value whose resolution goes beyond a limit), V7 by
composition (a ``RecipeLoadError``).
"""

from __future__ import annotations

from ..rule import Rule

__all__ = ["V1", "V2", "V4", "V5", "V6", "V7"]

V1 = Rule(
    "V1",
    "recipe-unreadable",
    summary="the recipe cannot be read (I/O, YAML syntax, defaults cycle, missing parent)",
    reference="config load (S0)",
    what_it_checks=(
        "That the recipe file and every file of its `defaults:` chain can be read: it exists, is valid YAML, "
        "has no `defaults` cycle, and every parent it names exists."
    ),
    why_it_matters=(
        "NeMo RL loads the recipe before anything else (S0, config load) and stops with an OmegaConf or YAML "
        "traceback; nothing else in the recipe can be checked either."
    ),
    example="""\
policy:
  generation: [unclosed
""",
    fix="Fix the YAML at the line the issue names, or the path of the missing parent in `defaults:`.",
)
V2 = Rule(
    "V2",
    "unresolved-value",
    summary="a value cannot be resolved (missing ??? or a failed interpolation)",
    reference="config load (S0)",
    what_it_checks=(
        "That every value of the generation section resolves: no mandatory `???` left, and every `${...}` "
        "interpolation (resolvers `add`, `mul`, `div`, `max`, `oc.env`, ...) evaluates."
    ),
    why_it_matters=(
        "The trainer resolves the config at start-up (S0) and fails with an OmegaConf `MissingMandatoryValue` "
        "or `InterpolationResolutionError`; outside the section, an unresolved leaf only makes the rules "
        "reading it skip."
    ),
    example="""\
policy:
  generation:
    max_new_tokens: ${policy.max_new_token_count}
""",
    fix="Give the value in the recipe or with `--set KEY=VALUE`, or fix the interpolation.",
)
V4 = Rule(
    "V4",
    "section-missing",
    summary="the selected section is missing, or its backend is missing or not a string",
    reference="grpo.py:setup (S1)",
    what_it_checks="That the selected section exists and is a mapping, and that its `backend` is present and a string.",
    why_it_matters=(
        "`grpo.py:setup` (S1) reads `policy.generation.backend` to pick the generation backend and crashes "
        "with a `KeyError` or `TypeError` when it is missing or not a string."
    ),
    example="""\
policy:
  generation:
    backend: null
""",
    fix=(
        "Set `policy.generation.backend` (`vllm` to have it validated), or pass `--section` to select another "
        "section."
    ),
)
V5 = Rule(
    "V5",
    "section-not-validated",
    summary="the recipe has no generation section, or its backend is not validated",
    reference="never",
    severity="warning",
    what_it_checks=(
        "Whether the recipe has a generation section whose backend rl_contracts validates (only `vllm`); a "
        "recipe without one (SFT, DPO, reward models) or with another backend is reported as skipped."
    ),
    why_it_matters=(
        "Nothing fails in the trainer: this warning says that the section was not checked, so a broken "
        "non-vLLM section goes unnoticed until its own backend starts."
    ),
    example="""\
policy:
  generation:
    backend: sglang
""",
    fix=(
        "Nothing to fix for a recipe that is not a vLLM generation recipe; use `--select`/`--ignore V5` to "
        "silence it."
    ),
)
V6 = Rule(
    "V6",
    "loading-limit-exceeded",
    summary="the recipe goes beyond a loading limit (size, nesting, alias expansion, interpolation, resolver result)",
    reference="never",
    what_it_checks=(
        "Every bound of rl_contracts.config.loading.limits.Limits before the work it bounds: the file size "
        "(4 MiB), the nesting of mappings and lists (32 levels), the YAML nodes of a file after alias expansion "
        "(100,000), what the interpolations of the document expand to (10,000,000 characters and references), "
        "and the results of the add, mul, div and max resolvers (1,000,000 characters, 256-bit integers)."
    ),
    why_it_matters=(
        "Recipes reach rl-contracts validate from pull requests, forks included. A 500-byte file of nested "
        "aliases, doubling interpolations or ${mul:ab,500000000} would otherwise take gigabytes or hours, or "
        "overflow Python's stack, in the CI job that checks it."
    ),
    example="a: ${mul:ab,500000000}\n",
    fix=(
        "Write the values out instead of generating them; a recipe that honestly needs more can be loaded with "
        "load_recipe(limits=Limits(...)) naming larger bounds."
    ),
)
V7 = Rule(
    "V7",
    "parent-outside-root",
    summary="a defaults parent lies outside the recipe's repository (the --root folder)",
    reference="never",
    what_it_checks=(
        "Each parent a defaults list names, compared by real path (symlinks resolved), lies inside the root: the "
        "git work tree holding the recipe given (the nearest folder above it with a .git entry), else that "
        "recipe's folder, or the folder given as --root DIR (load_recipe(root=...))."
    ),
    why_it_matters=(
        "An interpolation of a parent's value is printed in issues, so a pull request naming a credentials file "
        "outside the repository as a parent would print its content into the CI log."
    ),
    example="defaults: /home/runner/.aws/credentials.yaml\n",
    fix=(
        "Keep parents inside the repository, or pass --root DIR naming a trusted folder that holds them "
        "(NeMo RL's recipes use ../../grpo_math_1B.yaml, inside their repository)."
    ),
)
