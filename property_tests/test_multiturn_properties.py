"""Property tests of the multi-turn and hand-off contracts of issue 30.

- token in, token out (``splice.check_turn_tokens``) on ``tito_conversations``;
- route stitching (``routed_experts.stitch_turn_routes``) on ``turn_route_cases``;
- forbidden tokens, weight versions by default, staleness and int64 ids (``rollouts.rollout_batch``) on
  ``rollout_generations``.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from rl_contracts.errors import (
    ForbiddenTokenError,
    RolloutBatchError,
    RolloutWeightVersionError,
    RouteStitchError,
    TurnTokenMismatchError,
)
from rl_contracts.rollouts import rollout_batch
from rl_contracts.routed_experts import stitch_turn_routes
from rl_contracts.splice import check_turn_tokens, turn_trajectory
from rl_contracts.testing import assert_contract_error
from rl_contracts.testing.strategies import (
    ROLLOUT_LABELS,
    RolloutGeneration,
    TitoConversation,
    TurnRouteCase,
    rollout_generations,
    tito_conversations,
    turn_route_cases,
)

# Each example renders a chat template a few times: fewer examples keep the CI tier fast.
_RENDERS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_RENDERS
@given(tito_conversations())
def test_a_correct_tito_trajectory_passes(case: TitoConversation) -> None:
    """Invariant: a trajectory whose every turn was spliced from the full render passes ``check_turn_tokens``,
    however the model tokenized its own turns and whether it stopped on the EOS or at max_tokens."""
    ids, spans = turn_trajectory(case.turns)
    check_turn_tokens(case.tokenizer, case.messages, ids, spans)


@_RENDERS
@given(tito_conversations(), st.data())
def test_one_id_dropped_outside_the_models_turns_is_named(
    case: TitoConversation, data: st.DataObject
) -> None:
    """Invariant: deleting any one id outside the generated spans raises ``TurnTokenMismatchError`` with exactly
    that id missing, nothing extra, at a position where the deletion fits (deleting there gives the same ids)."""
    ids, spans = turn_trajectory(case.turns)
    outside = [p for p in range(len(ids)) if not any(start <= p < end for start, end in spans)]
    assume(outside)
    dropped = data.draw(st.sampled_from(outside))
    shorter = ids[:dropped] + ids[dropped + 1 :]
    shifted = [(s - (s > dropped), e - (e > dropped)) for s, e in spans]
    with pytest.raises(TurnTokenMismatchError) as info:
        check_turn_tokens(case.tokenizer, case.messages, shorter, shifted)
    assert_contract_error(info.value)
    assert info.value.missing_ids == (ids[dropped],)
    assert info.value.extra_ids == ()
    position = info.value.position
    assert position is not None
    assert ids[:position] + ids[position + 1 :] == shorter


@given(turn_route_cases(covered=True))
def test_stitched_routes_are_the_engines_for_every_token_before_the_last(case: TurnRouteCase) -> None:
    """Invariant: when the turns' routes cover every token before the last, row t is token t's route and rows
    from the last token on are the default route."""
    routes = stitch_turn_routes(case.turns, device="cpu", routes_start=case.routes_start)
    count = case.expected.shape[0]
    assert routes[:count].tolist() == case.expected.astype(np.int16).tolist()
    top_k = routes.shape[2]
    assert (routes[count:] == torch.arange(top_k, dtype=routes.dtype)).all()


@given(turn_route_cases())
def test_a_token_no_turn_routed_is_refused_at_its_position(case: TurnRouteCase) -> None:
    """Invariant: the stitch raises ``RouteStitchError`` iff some token before the last has no route in any turn,
    and ``.position`` is the first such token."""
    if case.uncovered is None:
        stitch_turn_routes(case.turns, device="cpu", routes_start=case.routes_start)
        return
    with pytest.raises(RouteStitchError) as info:
        stitch_turn_routes(case.turns, device="cpu", routes_start=case.routes_start)
    assert_contract_error(info.value)
    assert info.value.position == case.uncovered


def _generated(generation: RolloutGeneration) -> list[tuple[int, int, int, int]]:
    """Every generated token as (row, choice, position, id), in the order rollout_batch checks them."""
    return [
        (e.row, e.choice, position, token)
        for e in generation.expected
        for position, token in enumerate(e.generated)
    ]


@given(rollout_generations(), st.sets(st.integers(0, 600), max_size=20))
def test_the_first_forbidden_generated_token_is_named(
    generation: RolloutGeneration, forbidden: set[int]
) -> None:
    """Invariant: ``forbidden_token_ids`` raises ``ForbiddenTokenError`` iff a generated id is forbidden, naming
    the first in row, choice and position order; prompts may hold forbidden ids."""
    hits = [token for token in _generated(generation) if token[3] in forbidden]

    def call() -> object:
        return rollout_batch(
            generation.prompts,
            generation.request_outputs,
            forbidden_token_ids=forbidden,
            allow_mixed_versions=True,
        )

    if not hits:
        call()
        return
    with pytest.raises(ForbiddenTokenError) as info:
        call()
    assert_contract_error(info.value)
    assert (info.value.row, info.value.choice, info.value.position, info.value.token_id) == hits[0]


@given(rollout_generations())
def test_mixed_versions_fail_closed_by_default(generation: RolloutGeneration) -> None:
    """Invariant: without ``allow_mixed_versions`` the batch is refused iff some output carries two labels, at the
    first such (row, choice)."""
    mixed = [(e.row, e.choice) for e in generation.expected if len(set(e.versions)) > 1]
    if not mixed:
        rollout_batch(generation.prompts, generation.request_outputs)
        return
    with pytest.raises(RolloutWeightVersionError) as info:
        rollout_batch(generation.prompts, generation.request_outputs)
    assert (info.value.row, info.value.choice, info.value.check) == (*mixed[0], "mixed_versions")


@given(rollout_generations(), st.integers(0, 2))
def test_staleness_is_refused_beyond_the_bound(generation: RolloutGeneration, bound: int) -> None:
    """Invariant: with ``version_order=ROLLOUT_LABELS`` and the newest label current, the batch is refused iff some
    token's label lags more than ``max_staleness`` positions, at the first such (row, choice)."""
    newest = len(ROLLOUT_LABELS) - 1
    stale = [
        (e.row, e.choice)
        for e in generation.expected
        if any(newest - ROLLOUT_LABELS.index(v) > bound for v in e.versions)
    ]

    def call() -> object:
        return rollout_batch(
            generation.prompts,
            generation.request_outputs,
            allow_mixed_versions=True,
            current_version=ROLLOUT_LABELS[newest],
            max_staleness=bound,
            version_order=ROLLOUT_LABELS,
            require_weight_versions=False,
        )

    if not stale:
        call()
        return
    with pytest.raises(RolloutWeightVersionError) as info:
        call()
    assert (info.value.row, info.value.choice, info.value.check) == (*stale[0], "staleness")


@given(rollout_generations(), st.data())
def test_ids_beyond_int64_are_a_typed_error(generation: RolloutGeneration, data: st.DataObject) -> None:
    """Invariant: a generated id outside int64 is a ``RolloutBatchError`` at its row and choice, never an
    ``OverflowError``; the inputs are not changed."""
    tokens = _generated(generation)
    assume(tokens)
    row, choice, position, _ = data.draw(st.sampled_from(tokens))
    outputs = copy.deepcopy(generation.request_outputs)
    huge = data.draw(st.sampled_from([2**63, 2**64 + 5, -(2**63) - 1]))
    output = next(o for o in outputs[row].outputs if o.index == choice)
    output.logprobs[position][huge] = output.logprobs[position][output.token_ids[position]]
    output.token_ids[position] = huge
    before = repr(outputs)
    with pytest.raises(RolloutBatchError) as info:
        rollout_batch(generation.prompts, outputs, allow_mixed_versions=True)
    assert_contract_error(info.value)
    assert info.value.check == "token_ids"
    assert (info.value.row, info.value.choice) <= (row, choice)
    assert repr(outputs) == before
