"""The cross-field rules of the generation section (SPEC §1.2): sampling (C1), ranges (C2), parallelism (C3–C5),
mutually exclusive options (C10) and the real-quant export (C11); C6–C9 are :mod:`.refit_transport`'s.

:mod:`rl_contracts.config.section.generation`'s models run them after field validation (C1 per field); each
returns findings whose paths are relative to the generation section.
"""

from __future__ import annotations

from pydantic import ValidationInfo
from pydantic_core import PydanticCustomError

from ..._internal.config_absent import ABSENT
from ..._internal.config_base import collected_findings
from ..._internal.config_examples import generation_example
from ..._internal.config_view import ConfigView
from ..._internal.messages import render
from ..finding import Finding
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
    "exclusive_option_findings",
    "nvfp4_findings",
    "parallelism_findings",
    "port_range_findings",
    "real_quant_findings",
]

_INIT = "vllm_generation.py:__init__ (S3)"
_INIT_RAISES = "`vllm_generation.py:__init__` raises a `ValueError` when vLLM generation starts (S3)"

C1 = Rule(
    "C1",
    "sampling-filter-out-of-range",
    summary="top_k/top_p (and their val_ variants) outside their valid values",
    reference=_INIT,
    what_it_checks="That `top_k` and `val_top_k` are null, -1 or at least 1, and `top_p` and `val_top_p` lie in (0, 1].",
    why_it_matters=(
        "`vllm_generation.py:__init__` rejects the sampling parameters with a `ValueError` when the vLLM "
        "generation starts (S3), after Ray, the data and the policy workers are up."
    ),
    example=generation_example("top_k: 0", "val_top_k: 0"),
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
    what_it_checks=(
        "That every numeric field lies in its range (counts at least 1, fractions in [0, 1], ports 1-65535, "
        "token ids at least 0, ...) and that `port_range_low` is not above `port_range_high`."
    ),
    why_it_matters=(
        "vLLM rejects the engine arguments when the engine is built (S3) with a `ValueError`, after the "
        "cluster and the workers started; a few values (a negative token id) fail only when the first request "
        "uses them."
    ),
    example=generation_example("max_new_tokens: 0"),
    fix="Give the field a value in the range the issue states.",
)
C3 = Rule(
    "C3",
    "pipeline-parallel-needs-async-engine",
    summary="pipeline_parallel_size > 1 needs async_engine=true",
    reference=_INIT,
    what_it_checks="That `vllm_cfg.pipeline_parallel_size` > 1 comes with `vllm_cfg.async_engine: true`.",
    why_it_matters=f"{_INIT_RAISES}: pipeline parallelism runs only on the async engine.",
    example=generation_example("vllm_cfg:", "  pipeline_parallel_size: 2"),
    fix="Set `vllm_cfg.async_engine: true`, or `pipeline_parallel_size: 1`.",
)
C4 = Rule(
    "C4",
    "expert-parallel-not-multiple-of-tensor-parallel",
    summary="expert_parallel_size > 1 must be a multiple of tensor_parallel_size",
    reference=_INIT,
    what_it_checks=(
        "That `vllm_cfg.expert_parallel_size` > 1 is a multiple of `vllm_cfg.tensor_parallel_size` (vLLM's EP "
        "is DP x TP)."
    ),
    why_it_matters=f"{_INIT_RAISES}.",
    example=generation_example("vllm_cfg:", "  tensor_parallel_size: 2", "  expert_parallel_size: 3"),
    fix="Make `expert_parallel_size` a multiple of `tensor_parallel_size` (here 2 or 4).",
)
C5 = Rule(
    "C5",
    "expert-data-parallel-needs-sync-engine",
    summary="expert parallelism with DP inside vLLM needs async_engine=false",
    reference=_INIT,
    what_it_checks=(
        "That expert parallelism with data parallelism inside vLLM (`expert_parallel_size` > 1 and not equal "
        "to `tensor_parallel_size`) runs on the synchronous engine (`async_engine: false`)."
    ),
    why_it_matters=(
        f"{_INIT_RAISES}: the async engine has known issues with DP inside vLLM (NeMo RL issue #1101)."
    ),
    example=generation_example("vllm_cfg:", "  expert_parallel_size: 2", "  async_engine: true"),
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
    example=generation_example("worker_extension_cls_fqn: my_package.workers.Extension", "quant_cfg: fp8"),
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
    example=generation_example("real_quant: true"),
    fix=(
        "Set `real_quant_export_cpu_offload: true`, or `false` with colocated generation and "
        "`refit_transport: null`."
    ),
)


def _sampling_finding(value: float, info: ValidationInfo, valid: str, shown: str) -> None:
    """C1 at the field (``valid``: its valid values, ``shown``: the value): added to the findings the validation
    context collects, else raised as its line error."""
    key = info.field_name
    message = f"{key} valid values: {valid}. Got {key}={shown}."
    collected = collected_findings(info)
    if collected is None:
        raise PydanticCustomError("config_rule_c1", message)
    collected.append(Finding(code=C1.code, path=info.field_name or "", value=value, message=message))


@checks(C1)
def check_top_k(value: int, info: ValidationInfo) -> int:
    """Rule C1 for a top-k field (``top_k``, ``val_top_k``): ``-1`` or ``>= 1`` (``None`` never reaches it)."""
    if value != -1 and value < 1:
        _sampling_finding(
            value, info, "i) None or -1: no filtering. ii) >= 1: top-k filtering", render(value)
        )
    return value


@checks(C1)
def check_top_p(value: float, info: ValidationInfo) -> float:
    """Rule C1 for a top-p field (``top_p``, ``val_top_p``): ``0 < p <= 1``."""
    if not 0 < value <= 1:
        _sampling_finding(value, info, "i) 1.0: no filtering. ii) (0, 1]: top-p filtering", repr(value))
    return value


@checks(C2)
def port_range_findings(low: int | None, high: int | None) -> list[Finding]:
    """Rule C2 across fields: ``port_range_low`` ≤ ``port_range_high`` when both are set."""
    if low is None or high is None or low <= high:
        return []
    message = (
        f"port_range_low must be <= port_range_high: got port_range_low={low} and port_range_high={high}."
    )
    return [Finding(code=C2.code, path="port_range_high", value=high, message=message)]


@checks(C3, C4, C5)
def parallelism_findings(vllm: VllmSpecificArgs) -> list[Finding]:
    """Rules C3–C5: pipeline parallelism needs the async engine; EP is a multiple of TP; DP inside vLLM is sync."""
    tp, pp, ep = vllm.tensor_parallel_size, vllm.pipeline_parallel_size, vllm.expert_parallel_size
    findings = []
    if pp > 1 and not vllm.async_engine:
        message = (
            "When pipeline_parallel_size > 1, async_engine must be set to True in the vLLM configuration."
        )
        findings.append(
            Finding(code=C3.code, path="vllm_cfg.pipeline_parallel_size", value=pp, message=message)
        )
    if ep > 1 and ep % tp != 0:
        message = "When EP > 1, EP must be a multiple of TP since vLLM's EP = DP * TP."
        findings.append(
            Finding(code=C4.code, path="vllm_cfg.expert_parallel_size", value=ep, message=message)
        )
    if ep > 1 and ep != tp and vllm.async_engine:
        message = (
            "vLLM async_engine has some issues when using DP inside vLLM. Please update your configuration to "
            "set `policy.generation.vllm_cfg.async_engine=false`."
        )
        findings.append(Finding(code=C5.code, path="vllm_cfg.async_engine", value=True, message=message))
    return findings


@checks(C10)
def nvfp4_findings(view: ConfigView, keys: tuple[str, ...]) -> list[Finding]:
    """Rule C10 (second part): with NVFP4 per-token rollout on, each of ``keys`` that is set is a finding."""
    nvfp4 = view.section("nvfp4_pertoken_rollout")
    if nvfp4 is None or not nvfp4.flag("enabled"):
        return []
    findings = []
    for key in keys:
        value: object = view.flag(key) if key == "real_quant" else view.get(key)
        if (value is True) if key == "real_quant" else (value is not None):
            message = (
                "nvfp4_pertoken_rollout.enabled=true requires quant_cfg=null, real_quant=false and "
                f"refit_transport=null; got {key}={render(value)}."
            )
            findings.append(Finding(code=C10.code, path=key, value=value, message=message))
    return findings


@checks(C10)
def exclusive_option_findings(view: ConfigView) -> list[Finding]:
    """Rule C10: a worker extension excludes ``quant_cfg``; NVFP4 per-token rollout excludes three options."""
    findings = []
    extension, quant_cfg = view.get("worker_extension_cls_fqn"), view.get("quant_cfg")
    if extension is not None and quant_cfg is not None:
        message = (
            "worker_extension_cls_fqn and quant_cfg are mutually exclusive: got "
            f"worker_extension_cls_fqn={render(extension)} and quant_cfg={render(quant_cfg)}."
        )
        findings.append(
            Finding(code=C10.code, path="worker_extension_cls_fqn", value=extension, message=message)
        )
    findings.extend(nvfp4_findings(view, ("quant_cfg", "real_quant", "refit_transport")))
    return findings


@checks(C11)
def real_quant_findings(view: ConfigView) -> list[Finding]:
    """Rule C11: a real-quant export states its CPU offload, and no offload needs colocated CUDA-IPC refit."""
    if view.get("real_quant") is not True:
        return []
    key = "real_quant_export_cpu_offload"
    offload = view.get(key)
    if offload is None:
        message = "generation.real_quant_export_cpu_offload must be a boolean"
        return [Finding(code=C11.code, path=key, value=None if view.is_set(key) else ABSENT, message=message)]
    colocated = view.section("colocated")
    colocated_enabled = colocated is not None and colocated.get("enabled") is True
    if offload is False and (not colocated_enabled or view.get("refit_transport") is not None):
        message = (
            "generation.real_quant_export_cpu_offload=false requires colocated CUDA-IPC refit with no explicit "
            "refit_transport"
        )
        return [Finding(code=C11.code, path=key, value=offload, message=message)]
    return []
