"""The ``schema`` sub-command of ``rl-contracts``: the JSON Schema of the generation section or of a whole recipe.

``rl-contracts schema`` prints ``VllmConfig``'s schema, ``rl-contracts schema --recipe`` the whole-recipe schema
(:mod:`rl_contracts.config.section.json_schema`); both with ``$schema`` and ``$id``, indent 2, keys sorted.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .validate import ALGORITHM_CHOICES, write

__all__ = ["register", "run_schema"]


def run_schema(args: argparse.Namespace) -> int:
    """The ``schema`` command: print the chosen JSON Schema and return 0."""
    from ..config.section.json_schema import (  # not at parser build
        algorithm_json_schema,
        generation_json_schema,
        recipe_json_schema,
    )

    if args.algorithm is not None:
        schema = algorithm_json_schema(args.algorithm)
    else:
        schema = recipe_json_schema() if args.recipe else generation_json_schema()
    text = json.dumps(schema, indent=2, sort_keys=True)
    write(lambda: sys.stdout.write(text + "\n"))
    return 0


def register(commands: Any) -> None:
    """Add ``schema`` to ``commands`` (an argparse sub-parsers action); it sets ``run``."""
    schema = commands.add_parser(
        "schema",
        help="print the JSON Schema of the vLLM generation section or of a whole recipe",
        description=(
            "Print VllmConfig's JSON Schema (by alias, validation mode), or with --recipe the schema of a whole "
            "recipe file (with --algorithm NAME: every section of that algorithm typed), for an editor's YAML "
            "language server."
        ),
    )
    schema.add_argument(
        "--recipe",
        action="store_true",
        help="the whole-recipe schema (generation and preflight sections typed, the rest open)",
    )
    schema.add_argument(
        "--algorithm",
        choices=ALGORITHM_CHOICES,
        default=None,
        metavar="NAME",
        help=(
            "the schema of a recipe of this NeMo RL algorithm, every section typed (implies --recipe): "
            + ", ".join(ALGORITHM_CHOICES)
        ),
    )
    schema.set_defaults(run=run_schema)
