"""Property tests of the batch-level rollout hand-off (``rl_contracts.rollouts``).

Generate calls come from ``rl_contracts.testing.strategies.rollout_generations`` (valid, with the expected content of
every sequence) and ``broken_rollout_generations`` (one planted fault and where it is).
"""

from __future__ import annotations

import copy

import pytest
import torch
from hypothesis import given

from rl_contracts.errors import RolloutBatchError
from rl_contracts.rollouts import NO_VERSION, rollout_batch
from rl_contracts.testing import assert_contract_error
from rl_contracts.testing.strategies import (
    ROLLOUT_LABELS,
    BrokenRolloutGeneration,
    RolloutGeneration,
    broken_rollout_generations,
    rollout_generations,
)


@given(rollout_generations())
def test_every_sequence_round_trips_into_the_batch(generation: RolloutGeneration) -> None:
    """Each (row, choice), in row then choice order, holds its prompt and tokens, its sampled log-probs (float32)
    and version codes at exactly its generated positions, and padding everywhere else."""
    batch = rollout_batch(
        generation.prompts,
        generation.request_outputs,
        n=generation.n,
        allowed_versions=ROLLOUT_LABELS,
        allow_mixed_versions=True,
    )
    assert len(batch) == len(generation.expected)
    width = max((len(e.prompt) + len(e.generated) for e in generation.expected), default=0)
    assert (
        batch.token_ids.shape
        == batch.loss_mask.shape
        == batch.generation_logprobs.shape
        == (len(batch), width)
    )
    for index, expected in enumerate(generation.expected):
        start, end = len(expected.prompt), len(expected.prompt) + len(expected.generated)
        assert (int(batch.rows[index]), int(batch.choices[index])) == (expected.row, expected.choice)
        assert batch.token_ids[index, :end].tolist() == expected.prompt + expected.generated
        assert (batch.token_ids[index, end:] == 0).all()
        mask = torch.zeros(width)
        mask[start:end] = 1.0
        assert torch.equal(batch.loss_mask[index], mask)
        logprobs = torch.zeros(width, dtype=torch.float32)
        logprobs[start:end] = torch.tensor(expected.logprobs, dtype=torch.float32)
        assert torch.equal(batch.generation_logprobs[index], logprobs)
        codes = batch.version_codes[index].tolist()
        assert [batch.version_labels[c] for c in codes[start:end]] == expected.versions
        assert set(codes[:start] + codes[end:]) <= {NO_VERSION}
        assert batch.finish_reasons[index] == expected.finish_reason
        assert int(batch.lengths[index]) == end


@given(rollout_generations())
def test_labels_are_the_versions_met_in_order_and_inputs_stay_unchanged(
    generation: RolloutGeneration,
) -> None:
    """Default labels are the distinct versions in order of first appearance; nothing passed in is changed."""
    before = copy.deepcopy((generation.prompts, generation.request_outputs))
    batch = rollout_batch(generation.prompts, generation.request_outputs, allow_mixed_versions=True)
    seen = list(dict.fromkeys(v for e in generation.expected for v in e.versions))
    assert list(batch.version_labels) == seen
    assert repr((generation.prompts, generation.request_outputs)) == repr(before)


@given(broken_rollout_generations())
def test_a_planted_fault_is_reported_at_its_row_and_choice(case: BrokenRolloutGeneration) -> None:
    """One fault anywhere in the batch raises a bounded RolloutBatchError naming its row, its choice and the check
    that failed; the message starts with the row."""
    generation = case.generation
    with pytest.raises(RolloutBatchError) as info:
        rollout_batch(
            generation.prompts,
            generation.request_outputs,
            n=generation.n,
            allowed_versions=ROLLOUT_LABELS,
            allow_mixed_versions=True,
        )
    err = info.value
    assert_contract_error(err)
    assert (err.row, err.choice, err.check) == (case.row, case.choice, case.check)
    assert err.message.startswith(f"rollout row {case.row}")
