"""NEEDS-RUNTIME rules (PREFLIGHT.md §4): each is reported skipped, naming its input, only where it applies to the
recipe; N2/N7 run with ``PreflightOptions.model_config``, N3 with ``gpu_capability`` and a vLLM version."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from ...._internal.config_absent import ABSENT
from ...._internal.messages import render, render_list
from ...rule import Rule, checks
from .context import ALL_ENTRIES, LEGACY_ENTRIES, Context
from .facts import GENERATION, VLLM_CFG, VLLM_KWARGS, is_vllm, megatron, routed_experts_enabled

__all__ = [
    "N1",
    "N2",
    "N3",
    "N4",
    "N5",
    "N6",
    "N7",
    "check_megatron_arch_list",
    "check_moe_model",
    "check_prefix_caching_capability",
    "check_quantized_load_format",
    "check_ray_segments",
    "check_runner_v2_environment",
    "check_validation_dataset",
    "expert_count",
]

_EXPERT_KEYS = (
    "num_experts",
    "num_local_experts",
    "n_routed_experts",
    "moe_num_experts",
    "num_routed_experts",
)
_SEVERITY: Final = "skipped"


N1 = Rule(
    "N1",
    "validation-dataset-may-be-missing",
    summary="validation is enabled but there may be no validation dataset",
    reference="algorithms/grpo.py:setup ~640 (S1)",
    severity=_SEVERITY,
    what_it_checks=(
        "With validation on (`val_period` > 0 or `val_at_start`/`val_at_end`): that there is a validation "
        "dataset, which only the dataset loader knows. Reported as a skipped note unless the input is given."
    ),
    why_it_matters="`grpo.py:setup` (~640) fails at start-up (S1) when validation is on and no validation dataset loads.",
    example="""\
grpo:
  val_period: 10
""",
    fix="Give the recipe a validation dataset, or turn validation off.",
)


@checks(N1, entries=LEGACY_ENTRIES)
def check_validation_dataset(context: Context) -> None:
    """Needs the dataset loader: always skipped when validation is enabled."""
    reader = context.reader
    if (
        reader.integer("grpo.val_period") > 0
        or reader.flag("grpo.val_at_start")
        or reader.flag("grpo.val_at_end")
    ):
        context.skip("needs the dataset loader to know whether a validation dataset exists")


def expert_count(model_config: Mapping[str, object]) -> int:
    """The routed-expert count of a Hugging Face config (0 for a dense model); looks into ``text_config``
    too (vision-language models)."""
    for config in (model_config, model_config.get("text_config")):
        if not isinstance(config, Mapping):
            continue
        for key in _EXPERT_KEYS:
            value = config.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
    return 0


N2 = Rule(
    "N2",
    "router-replay-needs-moe-model",
    summary="router replay needs a mixture-of-experts model",
    reference="vLLM (0.32 engine config; 0.30 worker start)",
    severity=_SEVERITY,
    what_it_checks=(
        "That router replay runs on a mixture-of-experts model (the model's `config.json` has experts). "
        "Reported as a skipped note unless the input is given. Input: `--model-config`, or the served model "
        "naming a local folder of the repository with a `config.json`."
    ),
    why_it_matters=(
        "vLLM 0.32 rejects routed experts for a dense model at engine config (S3); 0.30 fails at worker start "
        "while binding the route capturer."
    ),
    example="""\
policy:
  generation:
    vllm_kwargs:
      enable_return_routed_experts: true
""",
    fix="Use an MoE model, or turn router replay off.",
    example_options={"vllm_version": (0, 30)},
)


@checks(N2, entries=ALL_ENTRIES)
def check_moe_model(context: Context) -> None:
    """With routed experts: ``model_config`` must have routed experts (:func:`expert_count`)."""
    reader = context.reader
    if not (is_vllm(reader) and routed_experts_enabled(reader)):
        return
    model = context.options.model_config
    if model is None:
        context.skip(
            "needs the model's config.json (--model-config, or a local model folder) to tell whether the model has "
            "experts"
        )
        return
    if expert_count(model) == 0:
        path = "policy.router_replay.enabled"
        if not reader.flag(path):
            path = f"{VLLM_KWARGS}.enable_return_routed_experts"
        context.error(
            path,
            True,
            f"{path} asks for routed experts, but the model config has no routed experts (none of "
            f"{render_list(_EXPERT_KEYS)} > 0); disable router replay or use a mixture-of-experts model.",
        )


N3 = Rule(
    "N3",
    "routed-experts-need-prefix-caching",
    summary="vLLM 0.32 routed experts need prefix caching, which the trainer enables only on capability >= 8",
    reference="vllm/vllm_worker.py:_resolve_enable_prefix_caching ~84 (S3)",
    severity=_SEVERITY,
    what_it_checks=(
        "On vLLM 0.32 with routed experts and `enable_prefix_caching` null: that the generation GPUs have "
        "compute capability 8 or more, where the trainer turns prefix caching on (routed experts need it). "
        "Reported as a skipped note unless the input is given. Input: `--gpu-capability`."
    ),
    why_it_matters=(
        "`vllm_worker.py:_resolve_enable_prefix_caching` (~84) leaves prefix caching off below capability 8, "
        "and vLLM 0.32 then rejects routed experts at engine start (S3)."
    ),
    example="""\
policy:
  generation:
    vllm_kwargs:
      enable_return_routed_experts: true
""",
    fix="Run on GPUs of capability 8 or more, or set what the issue names.",
    example_options={"vllm_version": (0, 32), "gpu_capability": (7, 5)},
)


@checks(N3, entries=ALL_ENTRIES)
def check_prefix_caching_capability(context: Context) -> None:
    """:data:`N3` with routed experts, vLLM ≥ 0.32 (or no version) and ``enable_prefix_caching`` null."""
    reader = context.reader
    if not (is_vllm(reader) and routed_experts_enabled(reader)):
        return
    if reader.value(f"{VLLM_CFG}.enable_prefix_caching") not in (None, ABSENT):
        return
    version = context.options.vllm_version
    if version is not None and version < (0, 32):
        return
    capability = context.options.gpu_capability
    if capability is None or version is None:
        missing = " and ".join(
            name
            for name, given in (("--gpu-capability", capability), ("--vllm-version", version))
            if given is None
        )
        context.skip(f"needs {missing} to tell whether the trainer enables prefix caching")
        return
    if capability < (8, 0):
        context.error(
            f"{VLLM_CFG}.enable_prefix_caching",
            None,
            f"vLLM {version[0]}.{version[1]} with routed experts needs prefix caching, but with "
            f"enable_prefix_caching=null the trainer leaves it off on compute capability "
            f"{capability[0]}.{capability[1]} (< 8.0); run on newer GPUs or disable router replay.",
        )


N4 = Rule(
    "N4",
    "routed-experts-need-model-runner-v2",
    summary="vLLM 0.32 routed experts need Model Runner V2 in the launch environment",
    reference="vLLM config (S3)",
    severity=_SEVERITY,
    what_it_checks=(
        "On vLLM 0.32 with routed experts: that the vLLM workers run Model Runner V2 "
        "(`VLLM_USE_V2_MODEL_RUNNER`, Triton), which only the launch environment shows. Reported as a skipped "
        "note unless the input is given."
    ),
    why_it_matters="vLLM 0.32 rejects routed experts without Model Runner V2 at engine start (S3).",
    example="""\
policy:
  generation:
    vllm_cfg:
      enable_prefix_caching: true
    vllm_kwargs:
      enable_return_routed_experts: true
""",
    fix="Launch the vLLM workers with `VLLM_USE_V2_MODEL_RUNNER=1` and Triton installed.",
    example_options={"vllm_version": (0, 32)},
)


@checks(N4, entries=ALL_ENTRIES)
def check_runner_v2_environment(context: Context) -> None:
    """Skipped with routed experts unless the vLLM version is below 0.32."""
    reader = context.reader
    version = context.options.vllm_version
    if is_vllm(reader) and routed_experts_enabled(reader) and (version is None or version >= (0, 32)):
        context.skip("needs the launch environment (VLLM_USE_V2_MODEL_RUNNER, Triton) of the vLLM workers")


N5 = Rule(
    "N5",
    "megatron-needs-cuda-arch-list",
    summary="Megatron needs TORCH_CUDA_ARCH_LIST in the launch environment",
    reference="models/policy/lm_policy.py ~147 (S4)",
    severity=_SEVERITY,
    what_it_checks=(
        "With Megatron training: that `TORCH_CUDA_ARCH_LIST` is set in the policy workers' environment. "
        "Reported as a skipped note unless the input is given."
    ),
    why_it_matters="`models/policy/lm_policy.py` (~147) fails when the policy workers start (S4).",
    example="""\
policy:
  megatron_cfg:
    enabled: true
  dtensor_cfg:
    enabled: false
""",
    fix="Set `TORCH_CUDA_ARCH_LIST` in the launch environment.",
)


@checks(N5, entries=ALL_ENTRIES)
def check_megatron_arch_list(context: Context) -> None:
    """Skipped with Megatron."""
    if megatron(context.reader):
        context.skip("needs the launch environment of the policy workers (TORCH_CUDA_ARCH_LIST)")


N6 = Rule(
    "N6",
    "segment-size-needs-ray-nodes",
    summary="cluster.segment_size needs enough alive Ray nodes for training and generation",
    reference="algorithms/grpo.py:setup ~934 (S1)",
    severity=_SEVERITY,
    what_it_checks=(
        "With `cluster.segment_size` set: that the Ray cluster has enough alive nodes per segment for "
        "training and generation. Reported as a skipped note unless the input is given."
    ),
    why_it_matters="`grpo.py:setup` (~934) fails at start-up (S1) when too few nodes are alive.",
    example="""\
cluster:
  segment_size: 1
""",
    fix="Start enough Ray nodes, or unset `cluster.segment_size`.",
)


@checks(N6, entries=ALL_ENTRIES)
def check_ray_segments(context: Context) -> None:
    """Skipped when ``cluster.segment_size`` is set."""
    if context.reader.value("cluster.segment_size") not in (None, ABSENT):
        context.skip("needs the Ray cluster to count alive nodes per segment (cluster.segment_size is set)")


_QUANTIZED_ARCHS = ("GptOss", "Mistral3")


N7 = Rule(
    "N7",
    "quantized-checkpoint-needs-dummy-load",
    summary="quantized GPT-OSS / Mistral3 checkpoints need load_format dummy",
    reference="vllm/vllm_worker.py ~497-560 (S3)",
    severity=_SEVERITY,
    what_it_checks=(
        "With vLLM and a quantized GPT-OSS or Mistral3 checkpoint (the model's `config.json`): that the "
        "engine loads with `load_format: dummy` (the weights arrive by refit). Reported as a skipped note "
        "unless the input is given. Input: `--model-config`, or the served model naming a local folder of the "
        "repository with a `config.json`."
    ),
    why_it_matters="`vllm_worker.py` (~497-560) fails loading the quantized checkpoint at engine start (S3).",
    example="""\
policy:
  generation:
    vllm_cfg:
      load_format: auto
""",
    fix="Set `vllm_cfg.load_format: dummy`, or use a non-sparse refit transport.",
    example_options={
        "model_config": {
            "architectures": ["GptOssForCausalLM"],
            "quantization_config": {"quant_method": "mxfp4"},
        }
    },
)


@checks(N7, entries=ALL_ENTRIES)
def check_quantized_load_format(context: Context) -> None:
    """(vLLM) :data:`N7`; unset, the load format is ``auto`` for sparse refit transports, else ``dummy``."""
    reader = context.reader
    if not is_vllm(reader):
        return
    model = context.options.model_config
    if model is None:
        context.skip(
            "needs the model's config.json (--model-config, or a local model folder) to tell whether it is "
            "quantized GPT-OSS/Mistral3"
        )
        return
    architectures = model.get("architectures")
    names = [a for a in architectures if isinstance(a, str)] if isinstance(architectures, list) else []
    if not any(a.startswith(_QUANTIZED_ARCHS) for a in names) or not model.get("quantization_config"):
        return
    load_format = reader.opt_text(f"{VLLM_CFG}.load_format")
    if load_format is None:
        transport = reader.value(f"{GENERATION}.refit_transport")
        load_format = "auto" if transport in ("vllm_s3_sparse", "vllm_zmq_sparse") else "dummy"
    if load_format != "dummy":
        context.error(
            f"{VLLM_CFG}.load_format",
            load_format,
            f"the quantized {render(names[0])} checkpoint needs load_format 'dummy' (weights arrive by refit), "
            f"got {render(load_format)}; set vllm_cfg.load_format: dummy or use a non-sparse refit transport.",
        )
