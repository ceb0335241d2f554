"""The facts about a recipe that the rules share (PREFLIGHT.md §1 "Derived values"): entrypoint, backend, async,
routed experts (R3), training parallelism, reward-model and teacher resources."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, NamedTuple

from ...._internal.config_paths import join
from .reader import MAX_RECIPE_INT, Reader, Unresolved, WrongShape
from .report import Entrypoint

__all__ = [
    "GENERATION",
    "GYM_FORCED",
    "VLLM_CFG",
    "VLLM_KWARGS",
    "Teacher",
    "TrainParallel",
    "backend",
    "detect_entrypoint",
    "dtensor",
    "gym",
    "in_scope",
    "is_async",
    "is_vllm",
    "megatron",
    "reward_model",
    "routed_experts_enabled",
    "teachers",
    "train_parallel",
    "vllm_parallel",
]

GENERATION: Final = "policy.generation"
"""The dotted path of the generation section."""
VLLM_CFG: Final = "policy.generation.vllm_cfg"
"""The dotted path of the vLLM engine arguments."""
VLLM_KWARGS: Final = "policy.generation.vllm_kwargs"
"""The dotted path of the keyword arguments passed through to the vLLM engine."""

GYM_FORCED: Final[Mapping[str, object]] = {
    f"{VLLM_CFG}.async_engine": True,
    f"{VLLM_CFG}.expose_http_server": True,
    f"{GENERATION}.stop_strings": None,
    f"{GENERATION}.stop_token_ids": None,
}
"""What examples/nemo_gym/run_grpo_nemo_gym.py forces before setup."""


def in_scope(document: Mapping[Any, Any]) -> bool:
    """A GRPO recipe: a ``grpo`` mapping at the root and ``policy.generation`` a mapping."""
    policy = document.get("policy")
    return (
        isinstance(document.get("grpo"), Mapping)
        and isinstance(policy, Mapping)
        and isinstance(policy.get("generation"), Mapping)
    )


def detect_entrypoint(document: Mapping[Any, Any]) -> Entrypoint:
    """``grpo-sc`` when ``grpo.async_grpo`` is present and null, ``grpo-gym`` when ``env.should_use_nemo_gym`` is
    literally ``true``, else ``grpo``."""
    grpo = document.get("grpo")
    if isinstance(grpo, Mapping) and "async_grpo" in grpo and grpo["async_grpo"] is None:
        return "grpo-sc"
    env = document.get("env")
    if isinstance(env, Mapping) and env.get("should_use_nemo_gym") is True:
        return "grpo-gym"
    return "grpo"


def backend(reader: Reader) -> str:
    """``policy.generation.backend`` (required: the trainer indexes it)."""
    return reader.text(f"{GENERATION}.backend")


def is_vllm(reader: Reader) -> bool:
    """*vllm*: the generation backend is vLLM."""
    return backend(reader) == "vllm"


def megatron(reader: Reader) -> bool:
    """*megatron*: ``policy.megatron_cfg.enabled``."""
    return reader.flag("policy.megatron_cfg.enabled")


def dtensor(reader: Reader) -> bool:
    """*dtensor*: ``policy.dtensor_cfg.enabled``."""
    return reader.flag("policy.dtensor_cfg.enabled")


def gym(reader: Reader) -> bool:
    """*gym*: ``env.should_use_nemo_gym``."""
    return reader.flag("env.should_use_nemo_gym")


def is_async(reader: Reader) -> bool:
    """*async*: vLLM ``vllm_cfg.async_engine``; dynamo, megatron, trtllm always; sglang
    ``generation.use_async_rollouts``; any other backend never."""
    name = backend(reader)
    if name == "vllm":
        return reader.flag(f"{VLLM_CFG}.async_engine")
    if name in ("dynamo", "megatron", "trtllm"):
        return True
    if name == "sglang":
        return reader.flag(f"{GENERATION}.use_async_rollouts")
    return False


def routed_experts_enabled(reader: Reader) -> bool:
    """*R3* (routed experts are returned): ``policy.router_replay.enabled`` or a truthy ``vllm_kwargs.enable_return_routed_experts``."""
    return reader.flag("policy.router_replay.enabled") or reader.truthy(
        f"{VLLM_KWARGS}.enable_return_routed_experts"
    )


def vllm_parallel(reader: Reader) -> tuple[int, int, int]:
    """vLLM's TP, PP and EP sizes (``vllm_cfg.*_parallel_size``, each at least 1; 1 when absent)."""
    sizes = ("tensor", "pipeline", "expert")
    tp, pp, ep = (reader.count(f"{VLLM_CFG}.{name}_parallel_size") for name in sizes)
    return tp, pp, ep


class TrainParallel(NamedTuple):
    """Training TP/PP/CP and the path TP was read from (for messages)."""

    tp: int
    pp: int
    cp: int
    tp_path: str


def train_parallel(reader: Reader) -> TrainParallel | None:
    """*train TP/PP/CP* of Megatron, else of DTensor (PP 1); ``None`` with neither.  Absent sizes read as 1."""
    if megatron(reader):
        names = ("tensor_model", "pipeline_model", "context")
        tp, pp, cp = (reader.count(f"policy.megatron_cfg.{name}_parallel_size", 1) for name in names)
        return TrainParallel(tp, pp, cp, "policy.megatron_cfg.tensor_model_parallel_size")
    if dtensor(reader):
        tp = reader.count("policy.dtensor_cfg.tensor_parallel_size", 1)
        cp = reader.count("policy.dtensor_cfg.context_parallel_size", 1)
        return TrainParallel(tp, 1, cp, "policy.dtensor_cfg.tensor_parallel_size")
    return None


def _uses_reward_model(reader: Reader) -> bool:
    for split in ("train", "validation", "default"):
        node = reader.shallow(f"data.{split}")
        for index, entry in enumerate(node if isinstance(node, list) else [node]):
            path = f"data.{split}[{index}]" if isinstance(node, list) else f"data.{split}"
            if reader.is_unresolved(path):
                raise Unresolved(path)
            if isinstance(entry, Mapping) and reader.value(f"{path}.env_name") == "reward_model":
                return True
    return False


def reward_model(reader: Reader) -> tuple[int, int]:
    """*RM*'s ``env.reward_model.resources.{num_nodes,gpus_per_node}`` (required, each >= 0) when an entry of
    ``data.{train,validation,default}`` has ``env_name: reward_model`` (an unresolved one skips the rule),
    else ``(0, 0)``."""
    if not _uses_reward_model(reader):
        return 0, 0
    base = "env.reward_model.resources"
    return reader.count(f"{base}.num_nodes", minimum=0), reader.count(f"{base}.gpus_per_node", minimum=0)


class Teacher(NamedTuple):
    """One non-colocated OPD teacher after overlaying its overrides."""

    alias: str
    path: str
    num_nodes: int
    gpus_per_node: int


def teachers(reader: Reader) -> tuple[Teacher, ...]:
    """The non-colocated OPD teachers whose nodes P13 subtracts, one per alias of ``teacher_model_by_agent_name``
    (``default_teacher_cfg`` overlaid by ``teacher_overrides[alias]``; 1 node, 8 GPUs by default), a shared
    checkpoint counted once unless ``deduplicate_shared_teacher_checkpoints`` is false."""
    base = "on_policy_distillation"
    if not (reader.flag(f"{base}.enabled") and reader.flag(f"{base}.non_colocated_teachers.enabled")):
        return ()
    by_agent = reader.mapping(f"{base}.teacher_model_by_agent_name") or {}
    default = reader.mapping(f"{base}.default_teacher_cfg") or {}
    dedup = reader.flag(f"{base}.deduplicate_shared_teacher_checkpoints", True)
    found: list[Teacher] = []
    seen_alias: set[str] = set()
    seen_checkpoint: list[object] = []
    for agent, named in by_agent.items():
        agent_path = join(f"{base}.teacher_model_by_agent_name", agent)
        alias = named.get("alias") if isinstance(named, Mapping) else named
        if not isinstance(alias, str):
            raise WrongShape(agent_path, named, "a teacher alias (a string)")
        if alias in seen_alias:
            continue
        seen_alias.add(alias)
        override_path = join(f"{base}.teacher_overrides", alias)
        merged = {**default, **(reader.mapping(override_path) or {})}
        checkpoint = merged.get("model_name", alias)
        if dedup and checkpoint in seen_checkpoint:
            continue
        seen_checkpoint.append(checkpoint)
        where = override_path if reader.present(override_path) else f"{base}.default_teacher_cfg"
        nodes = _teacher_int(merged.get("num_nodes", 1), f"{where}.num_nodes")
        gpn = _teacher_int(merged.get("gpus_per_node", 8), f"{where}.gpus_per_node")
        found.append(Teacher(alias, override_path, nodes, gpn))
    return tuple(found)


def _teacher_int(number: object, path: str) -> int:
    """A teacher's node or GPU count, from 1 to :data:`~.reader.MAX_RECIPE_INT`, else a shape finding at ``path``."""
    if not isinstance(number, int) or isinstance(number, bool) or not 1 <= number <= MAX_RECIPE_INT:
        raise WrongShape(path, number, f"an int between 1 and {MAX_RECIPE_INT}")
    return number
