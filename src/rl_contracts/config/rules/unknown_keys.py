"""The unknown-key rules (SPEC §1.8, PREFLIGHT.md §5): each key kept in the ``model_extra`` of a validated
generation section's models is, most specific first, *misplaced* (``P28``, error: a ``vllm_cfg`` key of
:data:`VLLM_CFG_KEYS` the reference reads only elsewhere; ``W2`` when its value would change nothing there),
*dead* (``W2``, warning: a ``vllm_cfg`` key the reference never reads), a *typo* (``K1``, error: within
``difflib`` ratio 0.8 of a declared key of its model, so the inherited value silently stays) or *unknown*
(``K2``, warning; an error under ``--strict``, which leaves ``W2`` a warning: those keys are known).
"""

from __future__ import annotations

import difflib
import types
from collections.abc import Iterator, Mapping
from typing import Literal, NamedTuple

from pydantic import BaseModel

from ..._internal.config_base import known_keys
from ..._internal.config_examples import generation_example
from ..._internal.config_paths import Loc, dotted
from ..._internal.messages import render, render_name
from ..finding import Finding, SuggestedFix
from ..rule import Rule, checks
from ..section.generation import VllmConfig
from ..section.refit_cfg import VllmRefitConfig, is_plugin_path
from ..section.vllm_cfg import VllmSpecificArgs

__all__ = ["K1", "K2", "P28", "VLLM_CFG_KEYS", "W2", "KeyCode", "KnownKey", "UnknownKey", "unknown_keys"]

K1 = Rule(
    "K1",
    "misspelled-key",
    summary="a misspelled key (close to a declared one): the setting it meant is never applied",
    reference="never",
    what_it_checks=(
        "That no key of the generation section is a near-miss of a declared key (`difflib` ratio 0.8 or "
        "more), such as `gpu_memory_utilisation` for `gpu_memory_utilization`."
    ),
    why_it_matters=(
        "NeMo RL never reads the misspelled key, so the inherited value silently stays: the run starts with a "
        "setting the recipe did not ask for, and nothing ever fails."
    ),
    example=generation_example("vllm_cfg:", "  gpu_memory_utilisation: 0.5"),
    fix="Spell the key as the issue suggests.",
    fix_safety="safe",
)
K2 = Rule(
    "K2",
    "unknown-key",
    summary="an unknown key (not validated); an error under --strict",
    reference="never",
    severity="warning",
    what_it_checks="Keys that are neither declared nor known to NeMo RL; a warning, an error under `--strict`.",
    why_it_matters=(
        "An unknown key is not validated and usually not read: if it was meant to change something, it does "
        "not."
    ),
    example=generation_example("vllm_cfg:", "  my_custom_flag: true"),
    fix="Remove the key, or run without `--strict` when a fork of NeMo RL reads it.",
)
P28 = Rule(
    "P28",
    "misplaced-vllm-cfg-key",
    summary="a vllm_cfg key NeMo RL reads only from another place (misplaced): the setting silently does not apply",
    reference="never",
    what_it_checks=(
        "That no `vllm_cfg` key is one NeMo RL reads only from another place (`limit_mm_per_prompt` belongs "
        "in `vllm_kwargs`; `enable_return_routed_experts` is set from `policy.router_replay.enabled`)."
    ),
    why_it_matters=(
        "The setting the recipe asks for silently does not happen: the key is never read where it is, and "
        "nothing fails (never found by the reference)."
    ),
    example=generation_example("vllm_cfg:", "  limit_mm_per_prompt:", "    image: 2"),
    fix="Move the key where the issue says (here `policy.generation.vllm_kwargs.limit_mm_per_prompt`).",
    fix_safety="safe",
)
W2 = Rule(
    "W2",
    "dead-vllm-cfg-key",
    summary="a vllm_cfg key NeMo RL never reads (dead), or a misplaced one whose value changes nothing",
    reference="never",
    severity="warning",
    what_it_checks=(
        "`vllm_cfg` keys NeMo RL never reads (`distributed_executor_backend`, `enable_expert_parallel`, "
        "`enable_thinking`, `enforce_monotonicity`), misplaced keys whose value would change nothing, and "
        "`enable_expert_parallel: true` while `expert_parallel_size` is at most 1."
    ),
    why_it_matters=(
        "Nothing fails: the key has no effect, which a reader of the recipe would not guess (never found by "
        "the reference)."
    ),
    example=generation_example("vllm_cfg:", "  enforce_monotonicity: true"),
    fix="Remove the key (or set what it was meant to control, as the issue says).",
    fix_safety="unsafe",
)

KeyCode = Literal["K1", "K2", "P28", "W2"]
"""The code of an unknown key: typo ``K1``, unknown ``K2``, misplaced ``P28``, dead (or inert misplaced) ``W2``."""


class KnownKey(NamedTuple):
    """A ``vllm_cfg`` key that is not declared but known to the reference (PREFLIGHT.md §5).

    ``verdict`` ``"dead"``: ``why`` says why it has no effect.  ``"misplaced"``: ``place`` is what to set instead
    (a key, or a key with its value), ``fix`` says so, and ``inert`` are the values that would change nothing
    there.
    """

    verdict: Literal["dead", "misplaced"]
    why: str
    place: str | None = None
    fix: str = ""
    inert: tuple[object, ...] = (None,)


VLLM_CFG_KEYS: Mapping[str, KnownKey] = types.MappingProxyType(
    {
        "distributed_executor_backend": KnownKey(
            "dead",
            "NeMo RL never reads it from vllm_cfg; the vLLM worker derives the executor backend itself "
            "(and overwrites vllm_kwargs.distributed_executor_backend too)",
        ),
        "limit_mm_per_prompt": KnownKey(
            "misplaced",
            "it is read only from vllm_kwargs, which the trainer passes to the engine",
            "policy.generation.vllm_kwargs.limit_mm_per_prompt",
            "NeMo RL reads it from policy.generation.vllm_kwargs.limit_mm_per_prompt: move it there",
        ),
        "enable_expert_parallel": KnownKey(
            "dead",
            "vLLM's expert parallelism is switched on by vllm_cfg.expert_parallel_size > 1; this key was read "
            "only before NeMo RL #1081",
        ),
        "enable_thinking": KnownKey(
            "dead",
            "NeMo RL never reads it from vllm_cfg; chat-template switches come from "
            "policy.tokenizer.chat_template_kwargs or vllm_cfg.http_server_serving_chat_kwargs",
        ),
        "enforce_monotonicity": KnownKey("dead", "no NeMo RL code reads it"),
        "enable_return_routed_experts": KnownKey(
            "misplaced",
            "the vLLM workers read vllm_kwargs.enable_return_routed_experts, which the trainer sets from "
            "policy.router_replay.enabled, so a recipe that sets only this key gets no routes",
            "policy.router_replay.enabled",
            "set policy.router_replay.enabled: true instead, and the trainer turns routed experts on",
            (None, False),
        ),
    }
)
"""The dead and misplaced ``policy.generation.vllm_cfg`` keys of the vLLM backend (PREFLIGHT.md §5)."""


UnknownKey = Finding
"""The finding of an unknown key (the name earlier releases gave its record): a
:class:`~rl_contracts.config.finding.Finding` itself."""


def _finding(
    path: Loc,
    value: object,
    rule: Rule = K2,
    message: str = "unknown key (not validated)",
    fix: SuggestedFix | None = None,
) -> Finding:
    """The finding at ``path`` (relative to the validated section) of ``rule``, with its severity."""
    return Finding(
        code=rule.code, path=dotted(path), value=value, message=message, severity=rule.severity, fix=fix
    )


def _is_judged_elsewhere(model: BaseModel, parent: BaseModel | None, key: str) -> bool:
    """Extra keys judged elsewhere: C6's ``checkpoint_engine`` and a custom transport's plugin config."""
    if isinstance(model, VllmConfig):
        return key == "checkpoint_engine"
    if isinstance(model, VllmRefitConfig):
        return key == parent.refit_transport if isinstance(parent, VllmConfig) else is_plugin_path(key)
    return False


def _known_vllm_cfg_key(path: Loc, key: str, value: object, known: KnownKey) -> Finding:
    """The ``P28``/``W2`` finding of a key of :data:`VLLM_CFG_KEYS`."""
    remove = SuggestedFix(action="remove", description=f"remove {render_name(key)}")
    if known.verdict == "dead":
        return _finding(path, value, W2, f"has no effect: {known.why}; remove it", remove)
    place = render_name(known.place or "")
    if any(value is inert for inert in known.inert):
        reason = (
            f"has no effect here, and its value {render(value)} would change nothing at {place} either "
            f"({known.why}); remove it"
        )
        return _finding(path, value, W2, reason, remove)
    reason = f"has no effect here ({known.why}); {known.fix}"
    move = None
    if known.place is not None and known.place.endswith(f".vllm_kwargs.{key}"):
        move = SuggestedFix(
            action="move", target=known.place, description=f"move {render_name(key)} to {place}"
        )
    return _finding(path, value, P28, reason, move)


def _rename_fix(key: str, matches: list[str]) -> SuggestedFix | None:
    """The rename of ``key`` to the one declared key of ``matches`` (a key and its ``_`` spelling counted once, as
    the spelling that matches ``key``'s leading ``_``); ``None`` when there are several."""
    seen: dict[str, str] = {}
    for match in matches:
        canonical = match.lstrip("_")
        if canonical not in seen or match.startswith("_") == key.startswith("_"):
            seen[canonical] = match
    if len(seen) != 1:
        return None
    [target] = seen.values()
    description = f"rename {render_name(key)} to {render_name(target)}"
    return SuggestedFix(action="rename", target=target, description=description)


def _classify(model: BaseModel, path: Loc, key: str, value: object, declared: list[str]) -> Finding:
    known = VLLM_CFG_KEYS.get(key) if isinstance(model, VllmSpecificArgs) else None
    if known is not None:
        return _known_vllm_cfg_key(path, key, value, known)
    matches = difflib.get_close_matches(key, declared, n=len(declared) or 1, cutoff=0.8)
    if not matches:
        return _finding(path, value)
    reason = (
        "unknown key, probably a misspelling: its setting is never applied and an inherited value stays; "
        f"did you mean '{render_name(matches[0])}'?"
    )
    return _finding(path, value, K1, reason, _rename_fix(key, matches))


def _expert_parallel_switch(vllm: VllmSpecificArgs, path: Loc) -> list[Finding]:
    """The warning for ``enable_expert_parallel: true`` while ``expert_parallel_size`` ≤ 1 (PREFLIGHT.md §3 W2)."""
    value = (vllm.model_extra or {}).get("enable_expert_parallel")
    if value is not True or vllm.expert_parallel_size > 1:
        return []
    reason = (
        "vllm_cfg.enable_expert_parallel=true but expert_parallel_size ≤ 1: vLLM runs without expert "
        f"parallelism (expert_parallel_size={vllm.expert_parallel_size}); set expert_parallel_size > 1 to "
        "enable it"
    )
    remove = SuggestedFix(action="remove", description="remove enable_expert_parallel")
    return [_finding((*path, "enable_expert_parallel"), True, W2, reason, remove)]


def _walk(model: BaseModel, parent: BaseModel | None, path: Loc) -> Iterator[Finding]:
    declared = list(known_keys(type(model)))
    for key, value in (model.model_extra or {}).items():
        if not _is_judged_elsewhere(model, parent, key):
            yield _classify(model, (*path, key), key, value, declared)
    if isinstance(model, VllmSpecificArgs):
        yield from _expert_parallel_switch(model, path)
    for name, field in type(model).model_fields.items():
        child = getattr(model, name)
        if isinstance(child, BaseModel):
            yield from _walk(child, model, (*path, field.alias or name))


@checks(K1, K2, P28, W2)
def unknown_keys(config: BaseModel) -> list[Finding]:
    """The finding of every unknown key kept in ``model_extra`` of ``config`` and of the models nested in it
    (their extra keys in input order, then their model-valued fields; never opaque dicts or extra values): its
    class (:data:`KeyCode`), path relative to ``config``, value, message and fix (a ``K1`` key renamed when exactly
    one declared key passes the typo test, a ``P28`` key moved to ``vllm_kwargs``, a ``W2`` key removed).

    Not reported: a :class:`VllmConfig`'s legacy ``checkpoint_engine`` (rule C6) and a custom transport's plugin
    config in ``refit_cfg``.  ``enable_expert_parallel: true`` with ``expert_parallel_size`` ≤ 1 is a second
    ``W2`` finding.

    Example::

        >>> refit = VllmRefitConfig.model_validate({"spars": {}})
        >>> [(u.path, u.code, u.fix.target) for u in unknown_keys(refit)]
        [('spars', 'K1', 'sparse')]
    """
    return list(_walk(config, None, ()))
