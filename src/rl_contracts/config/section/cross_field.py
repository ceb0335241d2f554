"""The cross-field rules of the generation section (SPEC §1.2): sampling (C1), ranges (C2), parallelism (C3–C5),
mutually exclusive options (C10) and the real-quant export (C11).

``GenerationConfig`` and ``VllmConfig`` (:mod:`rl_contracts.config.section.generation`) run these checks after
field validation; the refit-transport rules C6–C9 are :mod:`.refit_transport`'s.  Each check returns
:class:`~rl_contracts._internal.config_violations.Violation` records (C1 raises a pydantic custom error per
field); a validated section is read through :class:`~rl_contracts._internal.config_view.ConfigView`.
"""

from __future__ import annotations

from typing import Final

from pydantic import ValidationInfo
from pydantic_core import ErrorDetails

from ..._internal.config_absent import ABSENT
from ..._internal.config_base import V3
from ..._internal.config_paths import Loc
from ..._internal.config_view import ConfigView
from ..._internal.config_violations import Violation, rule_code, rule_error
from ..._internal.messages import render
from ..rule import Rule, checks
from .vllm_cfg import VllmSpecificArgs

__all__ = [
    "C1",
    "C2",
    "C3",
    "C4",
    "C5",
    "C10",
    "C11",
    "check_top_k",
    "check_top_p",
    "code_of_error",
    "exclusive_option_violations",
    "nvfp4_violations",
    "parallelism_violations",
    "port_range_violations",
    "real_quant_violations",
]

C1 = Rule(
    "C1",
    "sampling-filter-out-of-range",
    summary="top_k/top_p (and their val_ variants) outside their valid values",
    reference="vllm_generation.py:__init__ (S3)",
    what_it_checks="That `top_k` and `val_top_k` are null, -1 or at least 1, and `top_p` and `val_top_p` lie in (0, 1].",
    why_it_matters=(
        "`vllm_generation.py:__init__` rejects the sampling parameters with a `ValueError` when the vLLM "
        "generation starts (S3), after Ray, the data and the policy workers are up."
    ),
    example="""\
policy:
  generation:
    top_k: 0
    val_top_k: 0
""",
    fix=(
        "Use `top_k: null` (or -1) for no filtering, or a value of at least 1; keep `top_p` in (0, 1], 1.0 "
        "for none."
    ),
)
C2 = Rule(
    "C2",
    "value-out-of-range",
    summary="a numeric field outside its range",
    reference="vLLM engine arguments (S3)",
    pydantic_types=frozenset({"greater_than", "greater_than_equal", "less_than", "less_than_equal"}),
    what_it_checks=(
        "That every numeric field lies in its range (counts at least 1, fractions in [0, 1], ports 1-65535, "
        "token ids at least 0, ...) and that `port_range_low` is not above `port_range_high`."
    ),
    why_it_matters=(
        "vLLM rejects the engine arguments when the engine is built (S3) with a `ValueError`, after the "
        "cluster and the workers started; a few values (a negative token id) fail only when the first request "
        "uses them."
    ),
    example="""\
policy:
  generation:
    max_new_tokens: 0
""",
    fix="Give the field a value in the range the issue states.",
)
C3 = Rule(
    "C3",
    "pipeline-parallel-needs-async-engine",
    summary="pipeline_parallel_size > 1 needs async_engine=true",
    reference="vllm_generation.py:__init__ (S3)",
    what_it_checks="That `vllm_cfg.pipeline_parallel_size` > 1 comes with `vllm_cfg.async_engine: true`.",
    why_it_matters=(
        "`vllm_generation.py:__init__` raises a `ValueError` when vLLM generation starts (S3): pipeline "
        "parallelism runs only on the async engine."
    ),
    example="""\
policy:
  generation:
    vllm_cfg:
      pipeline_parallel_size: 2
""",
    fix="Set `vllm_cfg.async_engine: true`, or `pipeline_parallel_size: 1`.",
)
C4 = Rule(
    "C4",
    "expert-parallel-not-multiple-of-tensor-parallel",
    summary="expert_parallel_size > 1 must be a multiple of tensor_parallel_size",
    reference="vllm_generation.py:__init__ (S3)",
    what_it_checks=(
        "That `vllm_cfg.expert_parallel_size` > 1 is a multiple of `vllm_cfg.tensor_parallel_size` (vLLM's EP "
        "is DP x TP)."
    ),
    why_it_matters="`vllm_generation.py:__init__` raises a `ValueError` when vLLM generation starts (S3).",
    example="""\
policy:
  generation:
    vllm_cfg:
      tensor_parallel_size: 2
      expert_parallel_size: 3
""",
    fix="Make `expert_parallel_size` a multiple of `tensor_parallel_size` (here 2 or 4).",
)
C5 = Rule(
    "C5",
    "expert-data-parallel-needs-sync-engine",
    summary="expert parallelism with DP inside vLLM needs async_engine=false",
    reference="vllm_generation.py:__init__ (S3)",
    what_it_checks=(
        "That expert parallelism with data parallelism inside vLLM (`expert_parallel_size` > 1 and not equal "
        "to `tensor_parallel_size`) runs on the synchronous engine (`async_engine: false`)."
    ),
    why_it_matters=(
        "`vllm_generation.py:__init__` raises a `ValueError` when vLLM generation starts (S3): the async "
        "engine has known issues with DP inside vLLM (NeMo RL issue #1101)."
    ),
    example="""\
policy:
  generation:
    vllm_cfg:
      expert_parallel_size: 2
      async_engine: true
""",
    fix="Set `vllm_cfg.async_engine: false`, or make `expert_parallel_size` equal to `tensor_parallel_size`.",
)
C10 = Rule(
    "C10",
    "mutually-exclusive-options",
    summary="mutually exclusive options (worker extension and quant_cfg; nvfp4 per-token rollout)",
    reference="vllm/config.py (S1)",
    what_it_checks=(
        "That mutually exclusive options are not combined: `worker_extension_cls_fqn` with `quant_cfg`, and "
        "NVFP4 per-token rollout (`nvfp4_pertoken_rollout.enabled`) with `quant_cfg`, `real_quant` or a "
        "`refit_transport`."
    ),
    why_it_matters=(
        "`vllm/config.py` (S1) raises a `ValueError`: the quantized worker replaces the worker extension, and "
        "NVFP4 rollout has its own quantization and refit path."
    ),
    example="""\
policy:
  generation:
    worker_extension_cls_fqn: my_package.workers.Extension
    quant_cfg: fp8
""",
    fix="Keep one of the two options the issue names.",
)
C11 = Rule(
    "C11",
    "real-quant-offload-unsupported",
    summary="real_quant export offload settings that cannot work",
    reference="vllm/config.py (S1)",
    what_it_checks=(
        "That a real-quant export (`real_quant: true`) states `real_quant_export_cpu_offload` as a boolean, "
        "and that `false` (no offload) comes with colocated CUDA-IPC refit and no explicit `refit_transport`."
    ),
    why_it_matters=(
        "`vllm/config.py` (S1) raises a `ValueError`; without the offload only colocated IPC refit can hand "
        "the exported weights over."
    ),
    example="""\
policy:
  generation:
    real_quant: true
""",
    fix=(
        "Set `real_quant_export_cpu_offload: true`, or `false` with colocated generation and "
        "`refit_transport: null`."
    ),
)


@checks(C1)
def check_top_k(value: int, info: ValidationInfo) -> int:
    """Rule C1 for a top-k field (``top_k``, ``val_top_k``): ``-1`` or ``>= 1`` (``None`` never reaches it)."""
    if value != -1 and value < 1:
        key = info.field_name
        raise rule_error(
            C1,
            f"{key} valid values: i) None or -1: no filtering. ii) >= 1: top-k filtering. "
            f"Got {key}={render(value)}.",
        )
    return value


@checks(C1)
def check_top_p(value: float, info: ValidationInfo) -> float:
    """Rule C1 for a top-p field (``top_p``, ``val_top_p``): ``0 < p <= 1``."""
    if not 0 < value <= 1:
        key = info.field_name
        raise rule_error(
            C1, f"{key} valid values: i) 1.0: no filtering. ii) (0, 1]: top-p filtering. Got {key}={value!r}."
        )
    return value


@checks(C2)
def port_range_violations(low: int | None, high: int | None) -> list[Violation]:
    """Rule C2 across fields: ``port_range_low`` ≤ ``port_range_high`` when both are set."""
    if low is not None and high is not None and low > high:
        return [
            Violation(
                C2,
                ("port_range_high",),
                f"port_range_low must be <= port_range_high: got port_range_low={low} and "
                f"port_range_high={high}.",
                high,
            )
        ]
    return []


@checks(C3, C4, C5)
def parallelism_violations(vllm: VllmSpecificArgs) -> list[Violation]:
    """Rules C3–C5: pipeline parallelism needs the async engine; EP is a multiple of TP; DP inside vLLM is sync."""
    tp, pp, ep = vllm.tensor_parallel_size, vllm.pipeline_parallel_size, vllm.expert_parallel_size
    violations = []
    if pp > 1 and not vllm.async_engine:
        violations.append(
            Violation(
                C3,
                ("vllm_cfg", "pipeline_parallel_size"),
                "When pipeline_parallel_size > 1, async_engine must be set to True in the vLLM configuration.",
                pp,
            )
        )
    if ep > 1 and ep % tp != 0:
        violations.append(
            Violation(
                C4,
                ("vllm_cfg", "expert_parallel_size"),
                "When EP > 1, EP must be a multiple of TP since vLLM's EP = DP * TP.",
                ep,
            )
        )
    if ep > 1 and ep != tp and vllm.async_engine:
        violations.append(
            Violation(
                C5,
                ("vllm_cfg", "async_engine"),
                "vLLM async_engine has some issues when using DP inside vLLM. Please update your "
                "configuration to set `policy.generation.vllm_cfg.async_engine=false`.",
                vllm.async_engine,
            )
        )
    return violations


@checks(C10)
def nvfp4_violations(view: ConfigView, keys: tuple[str, ...]) -> list[Violation]:
    """Rule C10 (second part): with NVFP4 per-token rollout on, each of ``keys`` that is set is a violation."""
    nvfp4 = view.section("nvfp4_pertoken_rollout")
    if nvfp4 is None or not nvfp4.flag("enabled"):
        return []
    violations = []
    for key in keys:
        value: object = view.flag(key) if key == "real_quant" else view.get(key)
        if (value is True) if key == "real_quant" else (value is not None):
            violations.append(
                Violation(
                    C10,
                    (key,),
                    "nvfp4_pertoken_rollout.enabled=true requires quant_cfg=null, real_quant=false and "
                    f"refit_transport=null; got {key}={render(value)}.",
                    value,
                )
            )
    return violations


@checks(C10)
def exclusive_option_violations(view: ConfigView) -> list[Violation]:
    """Rule C10: a worker extension excludes ``quant_cfg``; NVFP4 per-token rollout excludes three options."""
    violations = []
    extension, quant_cfg = view.get("worker_extension_cls_fqn"), view.get("quant_cfg")
    if extension is not None and quant_cfg is not None:
        violations.append(
            Violation(
                C10,
                ("worker_extension_cls_fqn",),
                "worker_extension_cls_fqn and quant_cfg are mutually exclusive: got "
                f"worker_extension_cls_fqn={render(extension)} and quant_cfg={render(quant_cfg)}.",
                extension,
            )
        )
    violations.extend(nvfp4_violations(view, ("quant_cfg", "real_quant", "refit_transport")))
    return violations


@checks(C11)
def real_quant_violations(view: ConfigView) -> list[Violation]:
    """Rule C11: a real-quant export states its CPU offload, and no offload needs colocated CUDA-IPC refit."""
    if view.get("real_quant") is not True:
        return []
    key = "real_quant_export_cpu_offload"
    offload = view.get(key)
    loc: Loc = (key,)
    if offload is None:
        return [
            Violation(
                C11,
                loc,
                "generation.real_quant_export_cpu_offload must be a boolean",
                None if view.is_set(key) else ABSENT,
            )
        ]
    colocated = view.section("colocated")
    colocated_enabled = colocated is not None and colocated.get("enabled") is True
    if offload is False and (not colocated_enabled or view.get("refit_transport") is not None):
        return [
            Violation(
                C11,
                loc,
                "generation.real_quant_export_cpu_offload=false requires colocated CUDA-IPC refit with no "
                "explicit refit_transport",
                offload,
            )
        ]
    return []


_CLAIMED: Final[dict[str, Rule]] = {
    error_type: rule for rule in (C1, C2, C3, C4, C5, C10, C11) for error_type in rule.pydantic_types
}


def code_of_error(error: ErrorDetails) -> str:
    """The code of one pydantic line error of the section: the rule its violation carries, else the rule that
    claims pydantic's error type (a range error is C2), else V3 (the schema)."""
    code = rule_code(error)
    if code is not None:
        return code
    claimed = _CLAIMED.get(str(error["type"]))
    return claimed.code if claimed is not None else V3.code
