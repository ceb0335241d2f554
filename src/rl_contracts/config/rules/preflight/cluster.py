"""Cluster accounting: how the trainer splits ``cluster`` into training and generation GPUs (P13 for grpo and
grpo-gym, P25 for grpo-sc).  Each rule stores the :class:`~.context.ClusterSplit` it computes for P17/P18."""

from __future__ import annotations

from ...._internal.messages import render
from ...rule import Rule, checks
from .context import LEGACY_ENTRIES, SC_ENTRIES, ClusterSplit, Context
from .facts import GENERATION, backend, is_async, reward_model, teachers
from .reader import Reader

__all__ = ["P13", "P25", "check_cluster_accounting", "check_single_controller_accounting"]

_RES = f"{GENERATION}.colocated.resources"


def _cluster(context: Context) -> tuple[int, int] | None:
    """``cluster.num_nodes`` and ``cluster.gpus_per_node``, or None with an error for each one below 1."""
    nodes, node_gpus = (context.reader.integer(f"cluster.{name}") for name in ("num_nodes", "gpus_per_node"))
    for path, value in (("cluster.num_nodes", nodes), ("cluster.gpus_per_node", node_gpus)):
        if value < 1:
            context.error(path, value, f"{path}={value} must be >= 1; set the cluster size.")
    return (nodes, node_gpus) if min(nodes, node_gpus) >= 1 else None


P13 = Rule(
    "P13",
    "cluster-accounting-legacy",
    summary="the cluster leaves no GPUs for training or generation (legacy accounting)",
    reference="algorithms/grpo.py:setup ~760-915 (S1)",
    what_it_checks=(
        "The legacy split of `cluster` (N nodes of G GPUs) into training and generation GPUs, reward-model "
        "and non-colocated OPD teacher resources subtracted: every part gets at least one node and one GPU, "
        "and a non-colocated generation asks for a shape the split can give."
    ),
    why_it_matters=(
        "`grpo.py:setup` (~760-915) fails an assertion, or crashes with a `TypeError` for a null node count, "
        "at start-up (S1), after Ray connected."
    ),
    example="""\
policy:
  generation:
    colocated:
      enabled: false
      resources:
        gpus_per_node: 8
        num_nodes: 1
""",
    fix="Give generation fewer GPUs (`colocated.resources.gpus_per_node`) or the cluster more.",
)


@checks(P13, entries=LEGACY_ENTRIES)
def check_cluster_accounting(context: Context) -> None:
    """:data:`P13`: the reward model's and the teachers' nodes are taken first, then generation's share."""
    reader = context.reader
    cluster = _cluster(context)
    if cluster is None:
        return
    nodes, node_gpus = cluster
    reward_nodes, reward_gpus = reward_model(reader)
    policy_nodes = nodes if nodes == 1 else nodes - reward_nodes
    if policy_nodes <= 0:
        context.error_at(
            "cluster.num_nodes",
            f"no nodes left for the policy: cluster.num_nodes - env.reward_model.resources.num_nodes = {nodes} - "
            f"{reward_nodes} = {policy_nodes}; add nodes or give the reward model fewer.",
        )
        return
    found = teachers(reader)
    if found:
        teacher_nodes = sum(t.num_nodes for t in found)
        ok = is_async(reader)
        if not ok:
            context.error_at(
                "on_policy_distillation.non_colocated_teachers.enabled",
                "non-colocated teachers need async rollouts; set policy.generation.vllm_cfg.async_engine=true.",
            )
        for teacher in found:
            if teacher.gpus_per_node > node_gpus:
                context.error(
                    f"{teacher.path}.gpus_per_node",
                    teacher.gpus_per_node,
                    f"teacher {render(teacher.alias)} asks for gpus_per_node={teacher.gpus_per_node} > "
                    f"cluster.gpus_per_node={node_gpus}; lower it.",
                )
                ok = False
        if policy_nodes - teacher_nodes <= 0:
            context.error_at(
                "cluster.num_nodes",
                f"no nodes left for the policy after the teachers: {policy_nodes} - {teacher_nodes} = "
                f"{policy_nodes - teacher_nodes}; add nodes or give the teachers fewer.",
            )
            return
        if not ok:
            return
        policy_nodes -= teacher_nodes
    if reader.flag(f"{GENERATION}.colocated.enabled"):
        policy_gpus = node_gpus - reward_gpus if nodes == 1 else node_gpus
        if policy_gpus <= 0:
            context.error_at(
                "cluster.gpus_per_node",
                f"no GPUs left for the policy: cluster.gpus_per_node - env.reward_model.resources.gpus_per_node = "
                f"{node_gpus} - {reward_gpus} = {policy_gpus}; add GPUs or give the reward model fewer.",
            )
            return
        context.split = ClusterSplit(policy_nodes, policy_gpus, policy_nodes, policy_gpus)
        return
    if policy_nodes == 1:
        _one_policy_node(context, node_gpus, reward_gpus if nodes == 1 else 0)
    else:
        _many_policy_nodes(context, policy_nodes, node_gpus)


def _generation_resources(reader: Reader) -> tuple[int | None, int | None]:
    """Non-colocated generation's ``gpus_per_node`` and ``num_nodes`` (each an int or null)."""
    return reader.opt_integer(f"{_RES}.gpus_per_node"), reader.opt_integer(f"{_RES}.num_nodes")


def _one_policy_node(context: Context, node_gpus: int, reward_gpus: int) -> None:
    """Non-colocated generation on one policy node: generation and the reward model take GPUs, training the rest."""
    gen_node_gpus, gen_nodes = _generation_resources(context.reader)
    ok = gen_node_gpus is not None and gen_node_gpus > 0
    if not ok:
        context.error(
            f"{_RES}.gpus_per_node",
            gen_node_gpus,
            f"non-colocated generation on one policy node needs {_RES}.gpus_per_node > 0, got {render(gen_node_gpus)}; set "
            "the number of generation GPUs.",
        )
    if gen_nodes not in (None, 1):
        context.error_at(
            f"{_RES}.num_nodes",
            f"non-colocated generation on one policy node needs {_RES}.num_nodes null or 1, got {gen_nodes}; set it to 1 "
            "or add nodes to the cluster.",
        )
        ok = False
    if gen_node_gpus is None or not ok:
        return
    train_gpus = node_gpus - gen_node_gpus - reward_gpus
    if train_gpus <= 0:
        context.error_at(
            f"{_RES}.gpus_per_node",
            f"no GPUs left for training: cluster.gpus_per_node - generation gpus_per_node - reward-model "
            f"gpus_per_node = {node_gpus} - {gen_node_gpus} - {reward_gpus} = {train_gpus}; lower {_RES}.gpus_per_node or raise "
            "cluster.gpus_per_node.",
        )
        return
    context.split = ClusterSplit(1, train_gpus, 1, gen_node_gpus)


def _many_policy_nodes(context: Context, policy_nodes: int, node_gpus: int) -> None:
    """Non-colocated generation on several policy nodes: it takes ``gen_nodes`` whole nodes, training the rest."""
    gen_node_gpus, gen_nodes = _generation_resources(context.reader)
    ok = gen_nodes is not None and gen_nodes > 0
    if not ok:
        context.error(
            f"{_RES}.num_nodes",
            gen_nodes,
            f"non-colocated generation on {policy_nodes} policy nodes needs {_RES}.num_nodes an int > 0, got "
            f"{render(gen_nodes)} (null crashes the trainer with a TypeError); set the number of generation nodes.",
        )
    if gen_node_gpus != node_gpus:
        context.error(
            f"{_RES}.gpus_per_node",
            gen_node_gpus,
            f"non-colocated generation on {policy_nodes} policy nodes uses whole nodes: {_RES}.gpus_per_node must "
            f"equal cluster.gpus_per_node={node_gpus}, got {render(gen_node_gpus)}; set it to {node_gpus}.",
        )
        ok = False
    if gen_nodes is None or not ok:
        return
    train_nodes = policy_nodes - gen_nodes
    if train_nodes <= 0:
        context.error_at(
            f"{_RES}.num_nodes",
            f"no nodes left for training: policy nodes - generation nodes = {policy_nodes} - {gen_nodes} = {train_nodes}; "
            f"lower {_RES}.num_nodes or raise cluster.num_nodes.",
        )
        return
    context.split = ClusterSplit(train_nodes, node_gpus, gen_nodes, node_gpus)


P25 = Rule(
    "P25",
    "cluster-accounting-single-controller",
    summary="the cluster leaves no GPUs for training or generation (single-controller accounting)",
    reference="single_controller_utils/setup.py ~129-199, ~505-560, single_controller_utils/config.py ~678, examples/run_grpo_single_controller.py ~95 (S1)",
    what_it_checks=(
        "The single-controller split of `cluster` into training and generation GPUs: colocated uses every GPU "
        "for both; otherwise generation takes `colocated.resources` and training must keep at least one "
        "GPU/node."
    ),
    why_it_matters="`single_controller_utils/setup.py` fails an assertion or raises a `ValueError` at start-up (S1).",
    example="""\
grpo:
  async_grpo: null
data_plane:
  enabled: true
async_rl:
  min_groups_for_streaming_train: 8
policy:
  generation:
    colocated:
      enabled: false
      resources:
        gpus_per_node: 8
        num_nodes: 1
""",
    fix="Give generation fewer GPUs or the cluster more.",
)


@checks(P25, entries=SC_ENTRIES)
def check_single_controller_accounting(context: Context) -> None:
    """:data:`P25`: colocated shares every GPU, else generation takes ``colocated.resources``."""
    reader = context.reader
    cluster = _cluster(context)
    if cluster is None:
        return
    nodes, node_gpus = cluster
    if reader.flag(f"{GENERATION}.colocated.enabled"):
        context.split = ClusterSplit(nodes, node_gpus, nodes, node_gpus)
        return
    ok = backend(reader) != "megatron"
    if not ok:
        context.error_at(
            f"{GENERATION}.backend",
            "the single-controller path cannot run megatron generation non-colocated; set "
            "policy.generation.colocated.enabled=true or use backend vllm.",
        )
    gen_node_gpus = reader.opt_integer(f"{_RES}.gpus_per_node")
    gen_nodes = reader.opt_count(f"{_RES}.num_nodes", minimum=0) or 1
    if gen_node_gpus is None or gen_node_gpus <= 0:
        context.error(
            f"{_RES}.gpus_per_node",
            gen_node_gpus,
            f"non-colocated generation needs {_RES}.gpus_per_node > 0, got {render(gen_node_gpus)}; set it.",
        )
        return
    if nodes == 1:
        if node_gpus - gen_node_gpus <= 0:
            context.error_at(
                f"{_RES}.gpus_per_node",
                f"no GPUs left for training: cluster.gpus_per_node - generation gpus_per_node = {node_gpus} - {gen_node_gpus} = "
                f"{node_gpus - gen_node_gpus}; lower {_RES}.gpus_per_node or raise cluster.gpus_per_node.",
            )
        elif ok:
            context.split = ClusterSplit(1, node_gpus - gen_node_gpus, gen_nodes, gen_node_gpus)
        return
    if nodes - gen_nodes <= 0:
        context.error_at(
            f"{_RES}.num_nodes",
            f"no nodes left for training: cluster.num_nodes - generation num_nodes = {nodes} - {gen_nodes} = {nodes - gen_nodes}; lower "
            f"{_RES}.num_nodes or raise cluster.num_nodes.",
        )
    elif ok:
        context.split = ClusterSplit(nodes - gen_nodes, node_gpus, gen_nodes, gen_node_gpus)
