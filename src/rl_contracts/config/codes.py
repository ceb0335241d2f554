"""Stable codes of every recipe finding, and the ``--select``/``--ignore`` filter over them.

Each issue that ``load_recipe`` or ``rl-contracts validate`` reports carries one code, as ruff's and mypy's do, so
users can select, ignore and search findings.  Families:

- ``V``: loading, resolution and schema validation (this module);
- ``C1``-``C11``: the cross-field rules of ``VllmConfig`` (SPEC §1.2);
- ``R2``-``R8``: the reload-refit support checks, numbered by their step in SPEC §1.4;
- ``K``: unknown keys (typo, unknown); misplaced and dead keys are ``P28`` and ``W2`` (PREFLIGHT.md §5);
- ``P``, ``W``, ``N``: preflight's cross-section rules (:mod:`rl_contracts.config.preflight`).

This module holds the record type, the codes that are not preflight's, and the filter; the full catalogue that
``rl-contracts rules`` and the README table read is :data:`rl_contracts.config.catalogue.CODES`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

__all__ = ["BASE_CODES", "FAMILIES", "KEY_PLACEMENT_CODES", "Code", "Severity", "code_selected"]

Severity = Literal["error", "warning", "skipped"]
"""``skipped``: a rule that needs an input it was not given (the N-rules) is reported as a skipped note."""


@dataclass(frozen=True)
class Code:
    """One stable finding code.

    ``summary`` is one line; ``severity`` is the severity its findings usually carry (a few rules report both);
    ``reference`` says where NeMo RL (the reference) checks the same thing, or ``"never"``.
    """

    code: str
    summary: str
    severity: Severity
    reference: str


BASE_CODES: tuple[Code, ...] = (
    Code(
        "V1",
        "the recipe cannot be read (I/O, YAML syntax, defaults cycle, missing parent)",
        "error",
        "config load (S0)",
    ),
    Code(
        "V2",
        "a value cannot be resolved (missing ??? or a failed interpolation)",
        "error",
        "config load (S0)",
    ),
    Code(
        "V3",
        "a value breaks the VllmConfig schema (type, range, forbidden key)",
        "error",
        "vllm_worker.py and the config TypedDicts (S1-S3)",
    ),
    Code(
        "V4",
        "the selected section is missing, or its backend is missing or not a string",
        "error",
        "grpo.py:setup (S1)",
    ),
    Code("V5", "the recipe has no generation section, or its backend is not validated", "warning", "never"),
    Code(
        "C1",
        "top_k/top_p (and their val_ variants) outside their valid values",
        "error",
        "vllm_generation.py:__init__ (S3)",
    ),
    Code("C2", "a numeric field outside its range", "error", "vLLM engine arguments (S3)"),
    Code(
        "C3",
        "pipeline_parallel_size > 1 needs async_engine=true",
        "error",
        "vllm_generation.py:__init__ (S3)",
    ),
    Code(
        "C4",
        "expert_parallel_size > 1 must be a multiple of tensor_parallel_size",
        "error",
        "vllm_generation.py:__init__ (S3)",
    ),
    Code(
        "C5",
        "expert parallelism with DP inside vLLM needs async_engine=false",
        "error",
        "vllm_generation.py:__init__ (S3)",
    ),
    Code(
        "C6",
        "the legacy checkpoint_engine key was replaced by refit_transport='nixl'",
        "error",
        "vllm/config.py refit normalisation (S1)",
    ),
    Code(
        "C7",
        "refit_transport is not a known selector or a module:ClassName path",
        "error",
        "vllm/config.py refit normalisation (S1)",
    ),
    Code(
        "C8",
        "reset_encoder_cache_after_weight_update with a transport that does not reset it",
        "error",
        "vllm/config.py refit normalisation (S1)",
    ),
    Code(
        "C9",
        "refit_cfg does not validate for the selected transport",
        "error",
        "vllm/config.py refit normalisation (S1)",
    ),
    Code(
        "C10",
        "mutually exclusive options (worker extension and quant_cfg; nvfp4 per-token rollout)",
        "error",
        "vllm/config.py (S1)",
    ),
    Code("C11", "real_quant export offload settings that cannot work", "error", "vllm/config.py (S1)"),
    Code("R2", "reload refit with colocated vLLM", "error", "vllm_worker.py reload refit (S5)"),
    Code(
        "R3", "reload refit with refit_transport='nccl_reshard'", "error", "vllm_worker.py reload refit (S5)"
    ),
    Code(
        "R4", "reload refit with a checkpoint-engine transport", "error", "vllm_worker.py reload refit (S5)"
    ),
    Code("R5", "reload refit with a sparse refit transport", "error", "vllm_worker.py reload refit (S5)"),
    Code("R6", "reload refit with quant_cfg set", "error", "vllm_worker.py reload refit (S5)"),
    Code("R7", "reload refit with Eagle draft-weight refit", "error", "vllm_worker.py reload refit (S5)"),
    Code(
        "R8",
        "reload refit while refit also updates MTP draft weights",
        "error",
        "vllm_worker.py reload refit (S5)",
    ),
    Code(
        "K1",
        "a misspelled key (close to a declared one): the setting it meant is never applied",
        "error",
        "never",
    ),
    Code("K2", "an unknown key (not validated); an error under --strict", "warning", "never"),
)
"""Every code that is not a preflight rule, in catalogue order."""

KEY_PLACEMENT_CODES: tuple[Code, ...] = (
    Code(
        "P28",
        "a vllm_cfg key NeMo RL reads only from another place (misplaced): the setting silently does not apply",
        "error",
        "never",
    ),
    Code(
        "W2",
        "a vllm_cfg key NeMo RL never reads (dead), or a misplaced one whose value changes nothing",
        "warning",
        "never",
    ),
)
"""The codes of the known dead and misplaced ``vllm_cfg`` keys (PREFLIGHT.md §5), produced by
:mod:`rl_contracts.config.keys`; they number among preflight's rules."""

FAMILIES: tuple[str, ...] = ("V", "C", "R", "K", "P", "W", "N")
"""The code families in catalogue order."""


def _matches(code: str, patterns: Iterable[str]) -> bool:
    """Whether ``code`` equals a pattern or starts with it (``P`` selects every P-rule; ``P1`` only P1)."""
    return any(
        code == pattern or (code.startswith(pattern) and not pattern[-1:].isdigit()) for pattern in patterns
    )


def code_selected(code: str, *, select: Iterable[str] = (), ignore: Iterable[str] = ()) -> bool:
    """Whether a finding with ``code`` is reported under ``--select``/``--ignore``.

    A pattern is a whole code (``P7``) or a family prefix without digits (``P``, ``W``, ``C``).  An empty
    ``select`` selects everything; ``ignore`` wins over ``select``.  Divergence from ruff: ``P1`` selects only
    P1, not P10-P19, because these codes are not zero-padded.
    """
    selected = tuple(select)
    return (not selected or _matches(code, selected)) and not _matches(code, ignore)
