"""Cluster accounting: how the trainer splits ``cluster`` into training and generation GPUs (P13 for grpo and
grpo-gym, P25 for grpo-sc).  Each rule stores the :class:`~._catalogue.Layout` it computes for P17/P18."""

from __future__ import annotations

from ..._messages import render
from ._catalogue import Context, Layout, rule
from ._document import Reader
from .derived import PG, backend, is_async, reward_model, teachers

__all__ = ["check_cluster_accounting", "check_single_controller_accounting"]

_RES = f"{PG}.colocated.resources"


def _cluster(context: Context) -> tuple[int, int] | None:
    reader = context.reader
    n = reader.integer("cluster.num_nodes")
    g = reader.integer("cluster.gpus_per_node")
    ok = True
    for path, value in (("cluster.num_nodes", n), ("cluster.gpus_per_node", g)):
        if value < 1:
            context.error(path, value, f"{path}={value} must be >= 1; set the cluster size.")
            ok = False
    return (n, g) if ok else None


def _colocated(reader: Reader) -> bool:
    return reader.flag(f"{PG}.colocated.enabled")


@rule(
    "P13",
    "the cluster leaves no GPUs for training or generation (legacy accounting)",
    "algorithms/grpo.py:setup ~760-915 (S1)",
    entries=frozenset({"grpo", "grpo-gym"}),
)
def check_cluster_accounting(context: Context) -> None:
    """The legacy split of ``cluster`` (N nodes of G GPUs) into training and generation.

    policy_nodes = N if N == 1 else N − rm_nodes (> 0).  Non-colocated OPD teachers need async rollouts,
    ``gpus_per_node`` ≤ G each, and policy_nodes − teacher_nodes > 0.  Colocated: both get (policy_nodes,
    G − rm_gpn if N == 1 else G), which must be > 0.  Not colocated (gg, gn = ``colocated.resources``
    ``gpus_per_node``, ``num_nodes``): one policy node needs gg > 0, gn null or 1, and train_gpn = G − gg −
    (rm_gpn if N == 1 and RM) > 0; several need gn an int > 0, gg == G and policy_nodes − gn > 0.
    Reading: teacher nodes are taken from the policy nodes (the layout uses policy_nodes − teacher_nodes), and
    N, G < 1 are reported.
    """
    reader = context.reader
    cluster = _cluster(context)
    if cluster is None:
        return
    n, g = cluster
    has_rm, rm_nodes, rm_gpn = reward_model(reader)
    policy_nodes = n if n == 1 else n - rm_nodes
    if policy_nodes <= 0:
        context.error(
            "cluster.num_nodes",
            n,
            f"no nodes left for the policy: cluster.num_nodes - env.reward_model.resources.num_nodes = {n} - "
            f"{rm_nodes} = {policy_nodes}; add nodes or give the reward model fewer.",
        )
        return
    found = teachers(reader)
    teacher_nodes = sum(t.num_nodes for t in found)
    if teacher_nodes > 0:
        ok = True
        if not is_async(reader):
            context.error(
                "on_policy_distillation.non_colocated_teachers.enabled",
                True,
                "non-colocated teachers need async rollouts; set policy.generation.vllm_cfg.async_engine=true.",
            )
            ok = False
        for teacher in found:
            if teacher.gpus_per_node > g:
                context.error(
                    f"{teacher.path}.gpus_per_node",
                    teacher.gpus_per_node,
                    f"teacher {render(teacher.alias)} asks for gpus_per_node={teacher.gpus_per_node} > "
                    f"cluster.gpus_per_node={g}; lower it.",
                )
                ok = False
        if policy_nodes - teacher_nodes <= 0:
            context.error(
                "cluster.num_nodes",
                n,
                f"no nodes left for the policy after the teachers: {policy_nodes} - {teacher_nodes} = "
                f"{policy_nodes - teacher_nodes}; add nodes or give the teachers fewer.",
            )
            return
        if not ok:
            return
        policy_nodes -= teacher_nodes
    if _colocated(reader):
        gpn = g - rm_gpn if n == 1 else g
        if gpn <= 0:
            context.error(
                "cluster.gpus_per_node",
                g,
                f"no GPUs left for the policy: cluster.gpus_per_node - env.reward_model.resources.gpus_per_node = "
                f"{g} - {rm_gpn} = {gpn}; add GPUs or give the reward model fewer.",
            )
            return
        context.layout = Layout(policy_nodes, gpn, policy_nodes, gpn)
        return
    gg = reader.opt_integer(f"{_RES}.gpus_per_node")
    gn = reader.opt_integer(f"{_RES}.num_nodes")
    if policy_nodes == 1:
        _one_policy_node(context, n, g, gg, gn, rm_gpn if n == 1 and has_rm else 0)
    else:
        _many_policy_nodes(context, policy_nodes, g, gg, gn)


def _one_policy_node(context: Context, n: int, g: int, gg: int | None, gn: int | None, rm_gpn: int) -> None:
    ok = True
    if gg is None or gg <= 0:
        context.error(
            f"{_RES}.gpus_per_node",
            gg,
            f"non-colocated generation on one policy node needs {_RES}.gpus_per_node > 0, got {render(gg)}; set "
            "the number of generation GPUs.",
        )
        ok = False
    if gn is not None and gn != 1:
        context.error(
            f"{_RES}.num_nodes",
            gn,
            f"non-colocated generation on one policy node needs {_RES}.num_nodes null or 1, got {gn}; set it to 1 "
            "or add nodes to the cluster.",
        )
        ok = False
    if gg is None or not ok:
        return
    train_gpn = g - gg - rm_gpn
    if train_gpn <= 0:
        context.error(
            f"{_RES}.gpus_per_node",
            gg,
            f"no GPUs left for training: cluster.gpus_per_node - generation gpus_per_node - reward-model "
            f"gpus_per_node = {g} - {gg} - {rm_gpn} = {train_gpn}; lower {_RES}.gpus_per_node or raise "
            "cluster.gpus_per_node.",
        )
        return
    context.layout = Layout(1, train_gpn, 1, gg)


def _many_policy_nodes(context: Context, policy_nodes: int, g: int, gg: int | None, gn: int | None) -> None:
    ok = True
    if gn is None or gn <= 0:
        context.error(
            f"{_RES}.num_nodes",
            gn,
            f"non-colocated generation on {policy_nodes} policy nodes needs {_RES}.num_nodes an int > 0, got "
            f"{render(gn)} (null crashes the trainer with a TypeError); set the number of generation nodes.",
        )
        ok = False
    if gg != g:
        context.error(
            f"{_RES}.gpus_per_node",
            gg,
            f"non-colocated generation on {policy_nodes} policy nodes uses whole nodes: {_RES}.gpus_per_node must "
            f"equal cluster.gpus_per_node={g}, got {render(gg)}; set it to {g}.",
        )
        ok = False
    if gn is None or not ok:
        return
    train_nodes = policy_nodes - gn
    if train_nodes <= 0:
        context.error(
            f"{_RES}.num_nodes",
            gn,
            f"no nodes left for training: policy nodes - generation nodes = {policy_nodes} - {gn} = {train_nodes}; "
            f"lower {_RES}.num_nodes or raise cluster.num_nodes.",
        )
        return
    context.layout = Layout(train_nodes, g, gn, g)


@rule(
    "P25",
    "the cluster leaves no GPUs for training or generation (single-controller accounting)",
    "single_controller_utils/setup.py ~129-199, ~505-560, single_controller_utils/config.py ~678, examples/run_grpo_single_controller.py ~95 (S1)",
    entries=frozenset({"grpo-sc"}),
)
def check_single_controller_accounting(context: Context) -> None:
    """The single-controller split.  Colocated: (N, G, N, G).  Otherwise the backend is not megatron,
    ``colocated.resources.gpus_per_node`` (gg) is set, gn' = ``num_nodes`` or 1; N == 1 needs G − gg > 0,
    layout (1, G − gg, gn', gg); else N − gn' > 0, layout (N − gn', G, gn', gg).  Reading: N, G < 1 and
    gg ≤ 0 are reported too."""
    reader = context.reader
    cluster = _cluster(context)
    if cluster is None:
        return
    n, g = cluster
    if _colocated(reader):
        context.layout = Layout(n, g, n, g)
        return
    ok = True
    if backend(reader) == "megatron":
        context.error(
            f"{PG}.backend",
            "megatron",
            "the single-controller path cannot run megatron generation non-colocated; set "
            "policy.generation.colocated.enabled=true or use backend vllm.",
        )
        ok = False
    gg = reader.opt_integer(f"{_RES}.gpus_per_node")
    gn = reader.opt_integer(f"{_RES}.num_nodes") or 1
    if gg is None or gg <= 0:
        context.error(
            f"{_RES}.gpus_per_node",
            gg,
            f"non-colocated generation needs {_RES}.gpus_per_node > 0, got {render(gg)}; set it.",
        )
        return
    if n == 1:
        if g - gg <= 0:
            context.error(
                f"{_RES}.gpus_per_node",
                gg,
                f"no GPUs left for training: cluster.gpus_per_node - generation gpus_per_node = {g} - {gg} = "
                f"{g - gg}; lower {_RES}.gpus_per_node or raise cluster.gpus_per_node.",
            )
        elif ok:
            context.layout = Layout(1, g - gg, gn, gg)
        return
    if n - gn <= 0:
        context.error(
            f"{_RES}.num_nodes",
            gn,
            f"no nodes left for training: cluster.num_nodes - generation num_nodes = {n} - {gn} = {n - gn}; lower "
            f"{_RES}.num_nodes or raise cluster.num_nodes.",
        )
    elif ok:
        context.layout = Layout(n - gn, g, gn, gg)
