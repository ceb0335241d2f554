"""P29, the loss-function options (PREFLIGHT.md P29): a violating and a passing ``loss_fn`` for every clause.

Each case sets ``loss_fn`` keys over ``tests/data/preflight/base.yaml`` (a recipe that passes every rule).  A
violating case pins the exact set of P29 findings (their paths) and fragments of the message at the first path
(the value and the fix); a passing case must report no error at all.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from rl_contracts.config.rules.preflight import ABSENT, ENTRYPOINTS, PreflightOptions, preflight

Recipe = Callable[..., dict[str, Any]]
"""The ``recipe`` fixture of ``conftest.py``: the base recipe with dotted-path overrides."""

NO_ENV = PreflightOptions(environ={})
SC: dict[str, object] = {
    "grpo.async_grpo": None,
    "data_plane.enabled": True,
    "grpo.val_period": 0,
    "async_rl.min_groups_for_streaming_train": 1,
}
L = "loss_fn"
CISPO: dict[str, object] = {"use_cispo": True, "token_level_loss": True}
TIS: dict[str, object] = {
    "use_importance_sampling_correction": True,
    "truncated_importance_sampling_type": "tis",
    "truncated_importance_sampling_ratio": 2.0,
}
ICEPOP: dict[str, object] = {
    **TIS,
    "truncated_importance_sampling_type": "icepop",
    "truncated_importance_sampling_ratio_min": 0.5,
}
SEQ_MASK: dict[str, object] = {**ICEPOP, "truncated_importance_sampling_type": "seq-mask-tis"}


@dataclass(frozen=True)
class Violation:
    """A ``loss_fn`` breaking P29 clauses: the paths of every P29 finding, and fragments of the first one's message."""

    id: str
    loss: Mapping[str, object]
    paths: tuple[str, ...]
    fragments: tuple[str, ...]


V = Violation

# fmt: off
VIOLATIONS = [
    # (a) sequence-level ratios need a sequence-level loss
    V("a-seq-level-token-loss", {"sequence_level_importance_ratios": True, "token_level_loss": True}, (f"{L}.token_level_loss",), ("sequence_level_importance_ratios=true", "token_level_loss: false")),
    # (b) CISPO
    V("b-disable-ppo-ratio", {**CISPO, "disable_ppo_ratio": True}, (f"{L}.disable_ppo_ratio",), ("use_cispo=true excludes", "disable_ppo_ratio: false")),
    V("b-force-on-policy", {**CISPO, "force_on_policy_ratio": True}, (f"{L}.force_on_policy_ratio",), ("force_on_policy_ratio=true", "turn use_cispo off")),
    V("b-seq-level", {**CISPO, "sequence_level_importance_ratios": True, "token_level_loss": False}, (f"{L}.sequence_level_importance_ratios", f"{L}.token_level_loss"), ("excludes loss_fn.sequence_level_importance_ratios=true",)),
    V("b-ratio-clip-c", {**CISPO, "ratio_clip_c": 3.0}, (f"{L}.ratio_clip_c",), ("ratio_clip_c=3.0", "ratio_clip_c: null")),
    V("b-token-level-false", {"use_cispo": True, "token_level_loss": False}, (f"{L}.token_level_loss",), ("needs loss_fn.token_level_loss=true", "token_level_loss: true")),
    V("b-token-level-absent", {"use_cispo": True}, (f"{L}.token_level_loss",), ("absent reads as false",)),
    V("b-everything", {"use_cispo": True, "disable_ppo_ratio": True, "force_on_policy_ratio": True, "ratio_clip_c": 3.0}, (f"{L}.disable_ppo_ratio", f"{L}.force_on_policy_ratio", f"{L}.ratio_clip_c", f"{L}.token_level_loss"), ("disable_ppo_ratio",)),
    # (c) truncated importance sampling
    V("c-no-correction", {**TIS, "use_importance_sampling_correction": False}, (f"{L}.use_importance_sampling_correction",), ("truncated_importance_sampling_type='tis' needs", "turn the correction on")),
    V("c-correction-absent", {**{k: v for k, v in TIS.items() if k != "use_importance_sampling_correction"}}, (f"{L}.use_importance_sampling_correction",), ("use_importance_sampling_correction=true",)),
    V("c-unknown-type", {**TIS, "truncated_importance_sampling_type": "clip"}, (f"{L}.truncated_importance_sampling_type",), ("'clip'", "'tis', 'icepop', 'seq-mask-tis'")),
    V("c-type-not-text", {**TIS, "truncated_importance_sampling_type": True}, (f"{L}.truncated_importance_sampling_type",), ("=True must be null or one of",)),
    V("c-ratio-absent", {k: v for k, v in TIS.items() if k != "truncated_importance_sampling_ratio"}, (f"{L}.truncated_importance_sampling_ratio",), ("=<absent> must be a finite number > 0", "set it")),
    V("c-ratio-null", {**TIS, "truncated_importance_sampling_ratio": None}, (f"{L}.truncated_importance_sampling_ratio",), ("=None must be a finite number > 0",)),
    V("c-ratio-zero", {**TIS, "truncated_importance_sampling_ratio": 0}, (f"{L}.truncated_importance_sampling_ratio",), ("=0 must be a finite number > 0",)),
    V("c-ratio-negative", {**TIS, "truncated_importance_sampling_ratio": -1.5}, (f"{L}.truncated_importance_sampling_ratio",), ("=-1.5",)),
    V("c-ratio-nan", {**TIS, "truncated_importance_sampling_ratio": float("nan")}, (f"{L}.truncated_importance_sampling_ratio",), ("=nan",)),
    V("c-ratio-bool", {**TIS, "truncated_importance_sampling_ratio": True}, (f"{L}.truncated_importance_sampling_ratio",), ("=True",)),
    V("c-ratio-text", {**TIS, "truncated_importance_sampling_ratio": "2"}, (f"{L}.truncated_importance_sampling_ratio",), ("='2'",)),
    V("c-min-above-ratio", {**TIS, "truncated_importance_sampling_ratio_min": 3.0}, (f"{L}.truncated_importance_sampling_ratio_min",), ("_ratio_min=3.0 must be a finite number >= 0 and <= loss_fn.truncated_importance_sampling_ratio=2.0", "set it in that range")),
    V("c-ratio-inf", {**TIS, "truncated_importance_sampling_ratio": float("inf")}, (f"{L}.truncated_importance_sampling_ratio",), ("=inf must be a finite number > 0",)),  # issue 30: a bound that never binds
    V("c-ratio-huge-int", {**TIS, "truncated_importance_sampling_ratio": 10**400}, (f"{L}.truncated_importance_sampling_ratio",), ("must be a finite number > 0",)),
    V("c-min-negative", {**ICEPOP, "truncated_importance_sampling_ratio_min": -0.5}, (f"{L}.truncated_importance_sampling_ratio_min",), ("=-0.5 must be a finite number >= 0", "can never bind")),
    V("c-min-neg-inf", {**ICEPOP, "truncated_importance_sampling_ratio_min": float("-inf")}, (f"{L}.truncated_importance_sampling_ratio_min",), ("=-inf",)),
    V("c-min-not-number", {**ICEPOP, "truncated_importance_sampling_ratio_min": "low"}, (f"{L}.truncated_importance_sampling_ratio_min",), ("='low'",)),
    V("c-icepop-no-min", {k: v for k, v in ICEPOP.items() if k != "truncated_importance_sampling_ratio_min"}, (f"{L}.truncated_importance_sampling_ratio_min",), ("type='icepop' needs", "lower bound")),
    V("c-seq-mask-null-min", {**SEQ_MASK, "truncated_importance_sampling_ratio_min": None}, (f"{L}.truncated_importance_sampling_ratio_min",), ("type='seq-mask-tis' needs",)),
    V("c-seq-mask-seq-level", {**SEQ_MASK, "sequence_level_importance_ratios": True}, (f"{L}.sequence_level_importance_ratios",), ("'seq-mask-tis' excludes", "use 'tis' or 'icepop'")),
    V("c-bad-ratio-and-min", {**ICEPOP, "use_importance_sampling_correction": False, "truncated_importance_sampling_ratio": 0, "truncated_importance_sampling_ratio_min": None}, (f"{L}.truncated_importance_sampling_ratio", f"{L}.truncated_importance_sampling_ratio_min", f"{L}.use_importance_sampling_correction"), ("=0 must be",)),
    # (d) dual-clip bound
    V("d-clip-c-one", {"ratio_clip_c": 1}, (f"{L}.ratio_clip_c",), ("ratio_clip_c=1 must be null or a number > 1", "first training step")),
    V("d-clip-c-below-one", {"ratio_clip_c": 0.5}, (f"{L}.ratio_clip_c",), ("=0.5",)),
    V("d-clip-c-text", {"ratio_clip_c": "3"}, (f"{L}.ratio_clip_c",), ("='3'",)),
    V("d-and-b-clip-c", {**CISPO, "ratio_clip_c": 0.5}, (f"{L}.ratio_clip_c", f"{L}.ratio_clip_c"), ("use_cispo=true excludes",)),
    # (e) KL type
    V("e-kl-type-unknown", {"reference_policy_kl_type": "k4"}, (f"{L}.reference_policy_kl_type",), ("='k4' must be one of 'k1', 'k2', 'k3'", "whatever the penalty")),
    V("e-kl-type-null", {"reference_policy_kl_type": None}, (f"{L}.reference_policy_kl_type",), ("=None",)),
    V("e-kl-type-zero-penalty", {"reference_policy_kl_type": "K3", "reference_policy_kl_penalty": 0}, (f"{L}.reference_policy_kl_type",), ("='K3'",)),
]

PASSING: list[tuple[str, Mapping[str, object]]] = [
    ("defaults", {}),
    ("explicit-defaults", {"use_cispo": False, "disable_ppo_ratio": False, "sequence_level_importance_ratios": False, "token_level_loss": True, "ratio_clip_c": None, "truncated_importance_sampling_type": None, "truncated_importance_sampling_ratio": None, "truncated_importance_sampling_ratio_min": None, "reference_policy_kl_type": "k3"}),
    ("a-seq-level-seq-loss", {"sequence_level_importance_ratios": True, "token_level_loss": False}),
    ("a-seq-level-loss-absent", {"sequence_level_importance_ratios": True}),
    ("b-cispo", CISPO),
    ("b-cispo-null-switches", {**CISPO, "disable_ppo_ratio": None, "force_on_policy_ratio": None, "ratio_clip_c": None}),
    ("b-cispo-with-tis", {**CISPO, **TIS}),
    ("b-no-cispo-with-switches", {"disable_ppo_ratio": True, "ratio_clip_c": 3.0}),
    ("c-tis", TIS),
    ("c-tis-int-ratio", {**TIS, "truncated_importance_sampling_ratio": 2}),
    ("c-tis-min-equal", {**TIS, "truncated_importance_sampling_ratio_min": 2.0}),
    ("c-icepop", ICEPOP),
    ("c-seq-mask", SEQ_MASK),
    ("c-icepop-seq-level", {**ICEPOP, "sequence_level_importance_ratios": True, "token_level_loss": False}),
    ("c-null-type-ignores-ratios", {"truncated_importance_sampling_type": None, "truncated_importance_sampling_ratio": -1}),
    ("d-clip-c", {"ratio_clip_c": 3}),
    ("d-clip-c-just-above", {"ratio_clip_c": 1.0001}),
    ("e-kl-types", {"reference_policy_kl_type": "k1"}),
    ("e-kl-k2-zero-penalty", {"reference_policy_kl_type": "k2", "reference_policy_kl_penalty": 0}),
]
# fmt: on


def loss_fn(options: Mapping[str, object]) -> dict[str, object]:
    """The ``loss_fn`` options as dotted-path overrides of the base recipe."""
    return {f"{L}.{key}": value for key, value in options.items()}


def p29_paths(document: Mapping[str, Any], options: PreflightOptions = NO_ENV) -> list[str]:
    """The paths of every P29 finding of ``document``, in report order."""
    return [f.path for f in preflight(document, options).findings if f.code == "P29"]


@pytest.mark.parametrize("case", VIOLATIONS, ids=[c.id for c in VIOLATIONS])
def test_violating_loss_options_are_p29_findings(case: Violation, recipe: Recipe) -> None:
    """Each violated clause is one P29 error at the key that must change, naming the value and the fix."""
    report = preflight(recipe(loss_fn(case.loss)), NO_ENV)
    findings = [f for f in report.findings if f.code == "P29"]
    assert sorted(f.path for f in findings) == sorted(case.paths)
    assert all(f.severity == "error" for f in findings)
    assert {f.code for f in report.errors} == {"P29"}
    first = next(f for f in findings if f.path == case.paths[0])
    for fragment in case.fragments:
        assert fragment in first.message, first.message


@pytest.mark.parametrize(("name", "loss"), PASSING, ids=[name for name, _ in PASSING])
def test_passing_loss_options_have_no_error(name: str, loss: Mapping[str, object], recipe: Recipe) -> None:
    """A ``loss_fn`` that meets every clause it exercises gets no error finding at all."""
    report = preflight(recipe(loss_fn(loss)), NO_ENV)
    assert report.in_scope
    assert report.errors == (), [(f.code, f.path, f.message) for f in report.errors]


@pytest.mark.parametrize("entrypoint", ENTRYPOINTS)
def test_p29_applies_to_every_entrypoint(entrypoint: str, recipe: Recipe) -> None:
    """Every trainer script builds the same loss, so P29 runs for grpo, grpo-gym and grpo-sc alike."""
    layers: tuple[Mapping[str, object], ...] = (SC,) if entrypoint == "grpo-sc" else ()
    options = PreflightOptions(environ={}, entrypoint=entrypoint)  # type: ignore[arg-type]
    assert p29_paths(recipe(loss_fn({"reference_policy_kl_type": "k9"}), *layers), options) == [
        f"{L}.reference_policy_kl_type"
    ]


def test_wrong_shaped_flag_is_one_finding_at_its_path(recipe: Recipe) -> None:
    """A loss flag that is not a boolean is reported once, as P29, at its own path."""
    assert p29_paths(recipe(loss_fn({"use_cispo": "yes"}))) == [f"{L}.use_cispo"]


def test_absent_and_null_loss_section_read_the_defaults(recipe: Recipe) -> None:
    """Without ``loss_fn`` (or with ``loss_fn: null``) every option takes its default and P29 reports nothing."""
    absent = recipe()
    del absent["loss_fn"]
    null = recipe()
    null["loss_fn"] = None
    assert p29_paths(absent) == []
    assert p29_paths(null) == []


def test_absent_ratio_finding_carries_absent_value(recipe: Recipe) -> None:
    """A truncation type without a ratio is a finding whose value is the absent marker."""
    loss = {k: v for k, v in TIS.items() if k != "truncated_importance_sampling_ratio"}
    (finding,) = [f for f in preflight(recipe(loss_fn(loss)), NO_ENV).findings if f.code == "P29"]
    assert finding.value is ABSENT


def test_unresolved_loss_key_skips_p29(recipe: Recipe) -> None:
    """A loss option that did not resolve makes P29 a skipped note instead of a guess."""
    report = preflight(recipe(), NO_ENV, unresolved=[f"{L}.use_cispo"])
    assert [s.code for s in report.skipped if s.code == "P29"] == ["P29"]
    assert p29_paths(recipe()) == []


@pytest.mark.parametrize(("clip_c", "paths"), [(10**400, []), (-(10**400), [f"{L}.ratio_clip_c"])])
def test_an_int_beyond_the_float_range_is_read_by_its_sign(
    clip_c: int, paths: list[str], recipe: Recipe
) -> None:
    """A ``ratio_clip_c`` of 400 digits (YAML reads it as an int that no float holds) is compared by its sign: a
    huge positive bound passes, a huge negative one is the finding, never an ``OverflowError``."""
    assert p29_paths(recipe(loss_fn({"ratio_clip_c": clip_c}))) == paths
