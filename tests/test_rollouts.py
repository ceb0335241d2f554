"""Unit tests of the batch-level rollout hand-off (``rl_contracts.rollouts``) on vLLM stand-ins and a recording.

``tests/data/generate_rollout_batch.json`` was written by the real-vLLM tier (``tests/vllm/test_rollouts.py`` with
``RL_CONTRACTS_VLLM_RECORD``): the learner's prompts, vLLM 0.32's request outputs of one ``generate`` call (n=2,
``logprobs=0``, weight version ``"r1"``) and the log-probabilities the same weights give the same tokens (vLLM's
``prompt_logprobs`` over each whole sequence, the learner's side of the agreement check).
"""

from __future__ import annotations

import copy
import importlib.util
import json
import math
import pickle
from pathlib import Path
from types import SimpleNamespace as O
from typing import Any

import numpy as np
import pytest
import torch

from rl_contracts.errors import (
    ContractTypeError,
    ForbiddenTokenError,
    RolloutBatchError,
    RolloutPromptError,
    RolloutPromptMismatchError,
    RolloutWeightVersionError,
    WeightVersionError,
)
from rl_contracts.rollouts import NO_VERSION, RolloutBatch, rollout_batch, sampled_logprobs
from rl_contracts.testing import assert_contract_error

RECORDED = json.loads((Path(__file__).parent / "data" / "generate_rollout_batch.json").read_text())


def choice(
    index: int,
    tokens: list[int],
    logprobs: list[float] | None = None,
    *,
    reason: str | None = "length",
    spans: list[Any] | None = None,
) -> O:
    """A ``CompletionOutput`` stand-in whose sampled tokens have the given log-probs (default ``-0.5 - i/10``)."""
    values = [-0.5 - i / 10 for i in range(len(tokens))] if logprobs is None else logprobs
    entries = [
        {token: O(logprob=value), token + 1000: O(logprob=-9.0)}
        for token, value in zip(tokens, values, strict=True)
    ]
    return O(
        index=index, token_ids=list(tokens), logprobs=entries, finish_reason=reason, weight_versions=spans
    )


def request(prompt: list[int], *choices: O, finished: bool = True) -> O:
    """A ``RequestOutput`` stand-in."""
    return O(prompt_token_ids=list(prompt), outputs=list(choices), finished=finished)


PROMPTS = [[1, 2, 3], [4, 5]]


def two_rows() -> list[O]:
    """Two requests, n=2, of different lengths, with weight versions changing in one choice (so a batch of them
    needs ``allow_mixed_versions=True``)."""
    return [
        request(
            PROMPTS[0],
            choice(1, [30, 31], spans=[("v2", 0, 2)]),
            choice(0, [20, 21, 22], spans=[("v1", 0, 1), ("v2", 1, 3)]),
        ),
        request(PROMPTS[1], choice(0, [40], reason="stop", spans=[("v2", 0, 1)]), choice(1, [], spans=[])),
    ]


def _batch_error(call: Any, error: type[Exception] = RolloutBatchError) -> Any:
    with pytest.raises(error) as info:
        call()
    assert_contract_error(info.value)
    return info.value


# ---------------------------------------------------------------------------------------------------- the batch


def test_a_batch_holds_every_choice_right_padded_in_token_coordinates() -> None:
    """Rows then choices by index; prompt + generated ids padded; mask, log-probs and codes at generated tokens."""
    batch = rollout_batch(
        PROMPTS, two_rows(), allow_mixed_versions=True, n=2, allowed_versions={"v1", "v2"}, pad_token_id=-7
    )
    assert len(batch) == 4
    assert batch.rows.tolist() == [0, 0, 1, 1]
    assert batch.choices.tolist() == [0, 1, 0, 1]
    assert batch.token_ids.tolist() == [
        [1, 2, 3, 20, 21, 22],
        [1, 2, 3, 30, 31, -7],
        [4, 5, 40, -7, -7, -7],
        [4, 5, -7, -7, -7, -7],
    ]
    assert batch.prompt_lengths.tolist() == [3, 3, 2, 2]
    assert batch.generation_lengths.tolist() == [3, 2, 1, 0]
    assert batch.lengths.tolist() == [6, 5, 3, 2]
    assert batch.loss_mask.tolist() == [
        [0, 0, 0, 1, 1, 1],
        [0, 0, 0, 1, 1, 0],
        [0, 0, 1, 0, 0, 0],
        [0, 0, 0, 0, 0, 0],
    ]
    lp = [-0.5, -0.6, -0.7]
    expected = torch.tensor(
        [[0, 0, 0, *lp], [0, 0, 0, *lp[:2], 0], [0, 0, lp[0], 0, 0, 0], [0] * 6], dtype=torch.float32
    )
    assert torch.equal(batch.generation_logprobs, expected)
    assert batch.version_labels == ("v1", "v2")  # first seen: row 0, choice 0, span 0
    n = NO_VERSION
    assert batch.version_codes.tolist() == [
        [n, n, n, 0, 1, 1],
        [n, n, n, 1, 1, n],
        [n, n, 1, n, n, n],
        [n] * 6,
    ]
    assert batch.finish_reasons == ("length", "length", "stop", "length")


def test_batch_dtypes_fit_the_agreement_check() -> None:
    """Token ids int64, log-probs and mask float32 0/1 of one shape [B, T], codes int64, on the device asked."""
    batch = rollout_batch(PROMPTS, two_rows(), allow_mixed_versions=True, device=torch.device("cpu"))
    assert batch.token_ids.dtype == torch.int64
    assert batch.generation_logprobs.dtype == torch.float32
    assert batch.loss_mask.dtype == torch.float32
    assert batch.version_codes.dtype == torch.int64
    assert batch.generation_logprobs.shape == batch.loss_mask.shape == batch.token_ids.shape
    assert set(batch.loss_mask.flatten().tolist()) == {0.0, 1.0}
    for tensor in (batch.token_ids, batch.loss_mask, batch.rows, batch.lengths):
        assert tensor.device == torch.device("cpu")


@pytest.mark.skipif(
    importlib.util.find_spec("rl_contracts.logprobs") is None,
    reason="rl_contracts.logprobs (SPEC §9) not here",
)
def test_the_batch_feeds_check_logprob_agreement_directly() -> None:
    """``check_logprob_agreement(batch.generation_logprobs, learner, batch.loss_mask)`` takes the batch as it is."""
    logprobs = importlib.import_module("rl_contracts.logprobs")
    batch = rollout_batch(PROMPTS, two_rows(), allow_mixed_versions=True)
    report = logprobs.check_logprob_agreement(
        batch.generation_logprobs, batch.generation_logprobs, batch.loss_mask
    )
    assert report.tokens == int(batch.loss_mask.sum().item())


def test_version_labels_fix_the_codes_and_a_missing_label_names_the_row() -> None:
    """Given labels index the codes; a label the rollout carries but the list lacks is a row error."""
    batch = rollout_batch(PROMPTS, two_rows(), allow_mixed_versions=True, version_labels=["v2", "v1"])
    assert batch.version_labels == ("v2", "v1")
    assert batch.version_codes[0, 3:].tolist() == [1, 0, 0]
    err = _batch_error(
        lambda: rollout_batch(PROMPTS, two_rows(), allow_mixed_versions=True, version_labels=["v2"]),
        RolloutWeightVersionError,
    )
    assert (err.row, err.choice, err.check, err.version) == (0, 0, "weight_versions", "v1")
    assert err.message.startswith("rollout row 0, choice 0: ")


def test_without_allowed_versions_labels_are_optional() -> None:
    """With no allowed set, an output without labels gets NO_VERSION codes; present labels are still checked."""
    rows = [request([1], choice(0, [5, 6]))]
    batch = rollout_batch([[1]], rows)
    assert batch.version_codes.tolist() == [[NO_VERSION] * 3]
    assert batch.version_labels == ()
    bad = [request([1], choice(0, [5, 6], spans=[("a", 0, 1)]))]  # does not reach the output's end
    err = _batch_error(lambda: rollout_batch([[1]], bad), RolloutWeightVersionError)
    assert (err.row, err.choice, err.span_index, err.token_count) == (0, 0, 0, 2)


def test_allowed_versions_require_labels_by_default() -> None:
    """With an allowed set, an output without labels fails unless require_weight_versions=False."""
    rows = [request([1], choice(0, [5]))]
    err = _batch_error(lambda: rollout_batch([[1]], rows, allowed_versions={"v1"}), RolloutWeightVersionError)
    assert "carries no weight_versions" in err.message
    assert (
        rollout_batch([[1]], rows, allowed_versions={"v1"}, require_weight_versions=False).version_labels
        == ()
    )
    err = _batch_error(
        lambda: rollout_batch([[1]], rows, require_weight_versions=True), RolloutWeightVersionError
    )
    assert err.check == "weight_versions"


def test_a_disallowed_version_names_the_row_and_choice_and_stays_a_weight_version_error() -> None:
    """The n=1 message names the row (not only "completion output 0"); except WeightVersionError still catches."""
    rows = [
        request([1], choice(0, [5], spans=[("v2", 0, 1)])),
        request([2], choice(0, [6, 7], spans=[("v2", 0, 1), ("v1", 1, 2)])),
    ]
    err = _batch_error(lambda: rollout_batch([[1], [2]], rows, allowed_versions=["v2"]), WeightVersionError)
    assert isinstance(err, RolloutWeightVersionError)
    assert isinstance(err, RolloutBatchError)
    assert (err.row, err.choice, err.version, err.start, err.end, err.span_index) == (1, 0, "v1", 1, 2, 1)
    assert err.message.startswith("rollout row 1, choice 0: output tokens [1, 2) of completion output 0")
    assert rollout_batch(
        [[1], [2]], rows, allowed_versions=lambda v: v in "v1v2", allow_mixed_versions=True
    ).version_labels == (
        "v2",
        "v1",
    )


# ---------------------------------------------------------------------------------------------------- row checks


def test_a_different_prompt_is_a_rollout_prompt_error_naming_the_row() -> None:
    """vLLM prefilled another prompt for row 1: RolloutPromptError, also a RolloutPromptMismatchError."""
    rows = two_rows()
    rows[1].prompt_token_ids = [4, 5, 9]
    err = _batch_error(
        lambda: rollout_batch(PROMPTS, rows, allow_mixed_versions=True), RolloutPromptMismatchError
    )
    assert isinstance(err, RolloutPromptError)
    assert (err.row, err.choice, err.check) == (1, None, "prompt")
    assert (err.expected_length, err.actual_length, err.first_mismatch_index) == (2, 3, 2)
    assert err.message.startswith("rollout row 1 (every choice): vLLM processed prompt differs")
    rows[1].prompt_token_ids = None
    err = _batch_error(lambda: rollout_batch(PROMPTS, rows, allow_mixed_versions=True), RolloutPromptError)
    assert (err.actual_length, err.first_mismatch_index) == (None, None)


def test_prompts_compare_by_value_whatever_the_container() -> None:
    """Tuples, numpy arrays and tensors as learner prompts equal the engine's list (SPEC §4.1 semantics)."""
    prompts = [np.array([1, 2, 3]), torch.tensor([4, 5])]
    assert len(rollout_batch(prompts, two_rows(), allow_mixed_versions=True)) == 4  # type: ignore[arg-type]
    assert len(rollout_batch([(1, 2, 3), (4, 5)], two_rows(), allow_mixed_versions=True)) == 4


@pytest.mark.parametrize(
    ("mutate", "check", "choice_index", "fragment"),
    [
        (lambda rows: setattr(rows[1], "finished", False), "finished", None, "not finished"),
        (lambda rows: setattr(rows[1], "outputs", []), "choices", None, "expected n=2 choices"),
        (lambda rows: setattr(rows[1], "outputs", None), "choices", None, "expected n=2 choices"),
        (lambda rows: setattr(rows[1], "outputs", "ab"), "choices", None, "not a sequence"),
        (lambda rows: rows[0].outputs.pop(), "choices", None, "a choice is missing"),
        (lambda rows: setattr(rows[0].outputs[0], "index", 0), "choices", None, "duplicated"),
        (lambda rows: setattr(rows[0].outputs[0], "index", "1"), "choices", None, "not an int"),
        (lambda rows: setattr(rows[1].outputs[0], "finish_reason", "abort"), "finish_reason", 0, "'abort'"),
        (lambda rows: setattr(rows[1].outputs[0], "finish_reason", None), "finish_reason", 0, "unfinished"),
        (lambda rows: setattr(rows[1].outputs[0], "token_ids", None), "token_ids", 0, "no token_ids"),
        (
            lambda rows: setattr(rows[1].outputs[0], "token_ids", [1.5]),
            "token_ids",
            0,
            "not a sequence of ints",
        ),
        (
            lambda rows: setattr(rows[1].outputs[0], "logprobs", None),
            "logprobs",
            0,
            "SamplingParams(logprobs=0)",
        ),
        (lambda rows: setattr(rows[1].outputs[0], "logprobs", []), "logprobs", 0, "logprobs for 0 positions"),
        (lambda rows: setattr(rows[1].outputs[0], "logprobs", 3), "logprobs", 0, "'int' positions"),
        (
            lambda rows: rows[1].outputs[0].logprobs[0].pop(40),
            "logprobs",
            0,
            "no log-probability for the sampled",
        ),
        (
            lambda rows: setattr(rows[1].outputs[0].logprobs[0][40], "logprob", float("nan")),
            "logprobs",
            0,
            "non-finite log-probability (nan)",
        ),
        (
            lambda rows: setattr(rows[1].outputs[0].logprobs[0][40], "logprob", math.inf),
            "logprobs",
            0,
            "non-finite",
        ),
        (
            lambda rows: setattr(rows[1].outputs[0].logprobs[0][40], "logprob", "x"),
            "logprobs",
            0,
            "not a number ('x')",
        ),
        (
            lambda rows: setattr(rows[1], "prompt_token_ids", [4, 5.0]),
            "prompt",
            None,
            "not a sequence of ints",
        ),
    ],
)
def test_each_row_check_names_row_choice_and_check(
    mutate: Any, check: str, choice_index: int | None, fragment: str
) -> None:
    """Every fault of row 1 (or 0 for choices) is a RolloutBatchError with the row, the choice and the check."""
    rows = two_rows()
    mutate(rows)
    err = _batch_error(lambda: rollout_batch(PROMPTS, rows, n=2, allow_mixed_versions=True))
    assert err.check == check
    assert err.choice == choice_index
    assert err.row in (0, 1)
    assert err.message.startswith(f"rollout row {err.row}")
    assert fragment in err.message


def test_finish_reasons_and_n_are_the_callers_to_choose() -> None:
    """An aborted choice passes when finish_reasons allows it; without n, any k >= 1 choices indexed 0..k-1 pass."""
    rows = two_rows()
    rows[1].outputs[0].finish_reason = "abort"
    assert (
        rollout_batch(
            PROMPTS, rows, finish_reasons={"stop", "length", "abort"}, allow_mixed_versions=True
        ).finish_reasons[2]
        == "abort"
    )
    rows = [request([1], choice(0, [5])), request([2], choice(0, [6]), choice(1, [7]), choice(2, [8]))]
    assert rollout_batch([[1], [2]], rows).choices.tolist() == [0, 0, 1, 2]
    err = _batch_error(lambda: rollout_batch([[1], [2]], rows, n=3))
    assert (err.row, err.check) == (0, "choices")


def test_minus_infinity_is_floored_unless_the_floor_is_none() -> None:
    """A sampled token of probability 0 (-inf) gets the chat floor -9999.0, or stays -inf with floor None."""
    rows = [request([1], choice(0, [5, 6], [-math.inf, -0.25]))]
    assert rollout_batch([[1]], rows).generation_logprobs.tolist() == [[0.0, -9999.0, -0.25]]
    kept = rollout_batch([[1]], rows, logprob_floor=None).generation_logprobs.tolist()
    assert kept == [[0.0, -math.inf, -0.25]]


def test_a_batch_size_mismatch_and_an_empty_batch() -> None:
    """Prompts and outputs of different lengths fail; no rows give [0, 0] tensors."""
    err = _batch_error(lambda: rollout_batch(PROMPTS, two_rows()[:1]))
    assert (err.check, err.row, err.choice) == ("batch", None, None)
    assert "2 prompts but 1 request outputs" in err.message
    empty = rollout_batch([], [])
    assert empty.token_ids.shape == (0, 0)
    assert empty.loss_mask.shape == (0, 0)
    assert len(empty) == 0


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"prompts": "123"}, "prompts"),
        ({"prompts": [[1, 2, 3], [4, 5.5]]}, "prompts[1][1]"),
        ({"request_outputs": {"a": 1}}, "request_outputs"),
        ({"n": True}, "n"),
        ({"pad_token_id": 0.0}, "pad_token_id"),
        ({"finish_reasons": "stop"}, "finish_reasons"),
        ({"finish_reasons": [1]}, "finish_reasons[0]"),
        ({"finish_reasons": torch.tensor(1, dtype=torch.uint8)}, "finish_reasons"),  # 0-d: iterating it fails
        ({"finish_reasons": np.array("stop")}, "finish_reasons"),
        ({"allowed_versions": "v1"}, "allowed_versions"),
        ({"allowed_versions": 3}, "allowed_versions"),
        ({"allowed_versions": np.array("v1")}, "allowed_versions"),
        ({"allowed_versions": iter(["v1"])}, "allowed_versions"),
        ({"version_labels": "v1"}, "version_labels"),
        ({"version_labels": [1]}, "version_labels[0]"),
        ({"require_weight_versions": 1}, "require_weight_versions"),
        ({"logprob_floor": "low"}, "logprob_floor"),
        ({"logprob_floor": 10**400}, "logprob_floor"),
        ({"logprob_floor": math.nan}, "logprob_floor"),
        ({"logprob_floor": math.inf}, "logprob_floor"),  # a floor is finite and <= 0 (issue 30)
        ({"logprob_floor": 5.0}, "logprob_floor"),
        ({"device": 3}, "device"),
        ({"device": "no-such-device"}, "device"),
    ],
)
def test_arguments_of_the_wrong_type_are_contract_type_errors(kwargs: dict[str, Any], argument: str) -> None:
    """Each argument of the wrong type names itself in a ContractTypeError."""
    call = {"prompts": PROMPTS, "request_outputs": two_rows(), "allow_mixed_versions": True, **kwargs}
    err = _batch_error(lambda: rollout_batch(**call), ContractTypeError)
    assert err.argument == argument


@pytest.mark.parametrize(
    ("prompts", "generated", "pad", "where"),
    [
        ([[2**63]], [5], 0, (0, None, "prompt", "prompts[0]")),
        ([[1]], [5, 2**63], 0, (0, 0, "token_ids", "token_ids")),
        ([[1]], [-(2**63) - 1], 0, (0, 0, "token_ids", "token_ids")),
        ([[1]], [5], 2**63, (None, None, "batch", "pad_token_id")),
    ],
)
def test_token_ids_beyond_int64_are_a_rollout_batch_error_naming_the_argument(
    prompts: list[list[int]], generated: list[int], pad: int, where: tuple[Any, ...]
) -> None:
    """An id the int64 token tensor cannot hold (prompt, generated or pad) is a typed error, never OverflowError."""
    rows = [request(prompts[0], choice(0, generated))]
    err = _batch_error(lambda: rollout_batch(prompts, rows, pad_token_id=pad))
    row, choice_index, check, argument = where
    assert (err.row, err.choice, err.check) == (row, choice_index, check)
    assert argument in err.message
    assert "int64" in err.message


def test_n_below_one_is_refused() -> None:
    """n=0 can never be satisfied."""
    assert (
        _batch_error(lambda: rollout_batch(PROMPTS, two_rows(), allow_mixed_versions=True, n=0)).check
        == "batch"
    )


def test_malformed_span_objects_name_the_row_and_choice() -> None:
    """A span of the wrong type stays a ContractTypeError, with the row and choice in its message."""
    rows = [request([1], choice(0, [5], spans=["v1"]))]
    err = _batch_error(lambda: rollout_batch([[1]], rows), ContractTypeError)
    assert err.message.startswith("rollout row 0, choice 0: ")


def test_inputs_are_never_mutated_and_errors_pickle() -> None:
    """A passing and a failing call leave prompts and outputs as they were; errors survive pickle."""
    rows, prompts = two_rows(), copy.deepcopy(PROMPTS)
    before = copy.deepcopy(rows)
    rollout_batch(prompts, rows, allowed_versions={"v1", "v2"}, allow_mixed_versions=True)
    rows[1].outputs[0].finish_reason = "error"
    before[1].outputs[0].finish_reason = "error"
    err = _batch_error(lambda: rollout_batch(prompts, rows, allow_mixed_versions=True))
    assert repr(rows) == repr(before)
    assert prompts == PROMPTS
    clone = pickle.loads(pickle.dumps(err))
    assert (type(clone), clone.row, clone.choice, clone.check) == (RolloutBatchError, 1, 0, "finish_reason")


def test_the_batch_is_frozen_and_pickles() -> None:
    """A RolloutBatch cannot be reassigned and crosses processes (Ray) with its tensors."""
    batch = rollout_batch(PROMPTS, two_rows(), allow_mixed_versions=True)
    with pytest.raises(AttributeError):
        batch.version_labels = ()  # type: ignore[misc]
    clone = pickle.loads(pickle.dumps(batch))
    assert isinstance(clone, RolloutBatch)
    assert torch.equal(clone.token_ids, batch.token_ids)
    assert clone.finish_reasons == batch.finish_reasons


# ---------------------------------------------------------------------------------------------------- sampled_logprobs


def test_sampled_logprobs_reads_the_sampled_token_of_every_position() -> None:
    """Only the sampled token's log-prob is read (other entries ignored); -inf is floored; empty outputs give []."""
    output = choice(3, [7, 8, 9], [-0.1, -math.inf, -2.0])
    assert sampled_logprobs(output) == [-0.1, -9999.0, -2.0]
    assert sampled_logprobs(output, floor=None) == [-0.1, -math.inf, -2.0]
    assert sampled_logprobs(output, floor=-1) == [-0.1, -1.0, -1.0]
    assert sampled_logprobs(O(index=0, token_ids=[], logprobs=None)) == []
    mapping_like = O(index=0, token_ids=[7], logprobs=[_Entries({7: O(logprob=-0.3)})])
    assert sampled_logprobs(mapping_like) == [-0.3]


class _Entries(dict[int, Any]):
    """A dict subclass of per-position log-probs (read on the per-position path)."""


@pytest.mark.parametrize(
    ("output", "check", "fragment"),
    [
        (
            O(index=2, token_ids=None, logprobs=None),
            "token_ids",
            "completion output 2: the completion output has no",
        ),
        (O(index=2, token_ids=[1], logprobs=None), "logprobs", "1 tokens but no logprobs"),
        (O(index=2, token_ids=[1], logprobs=[{2: O(logprob=-1.0)}]), "logprobs", "position 0 (token_id=1)"),
        (O(index=2, token_ids=[1], logprobs=[{1: O()}]), "logprobs", "not a number (None)"),
    ],
)
def test_sampled_logprobs_errors_name_the_choice(output: O, check: str, fragment: str) -> None:
    """Each fault is a RolloutBatchError with the output's index as ``choice`` and no row."""
    err = _batch_error(lambda: sampled_logprobs(output))
    assert (err.row, err.choice, err.check) == (None, 2, check)
    assert fragment in err.message
    for floor in ("x", 10**5000, math.nan):  # not a number, no float holds it, NaN
        with pytest.raises(ContractTypeError, match="floor"):
            sampled_logprobs(output, floor=floor)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------------- recorded


def _recorded_outputs() -> list[O]:
    """The recorded vLLM request outputs as stand-ins with vLLM's attributes."""
    return [
        O(
            prompt_token_ids=r["prompt_token_ids"],
            finished=r["finished"],
            outputs=[
                O(
                    index=o["index"],
                    token_ids=o["token_ids"],
                    finish_reason=o["finish_reason"],
                    weight_versions=o["weight_versions"],
                    logprobs=[{int(t): O(logprob=v) for t, v in entry.items()} for entry in o["logprobs"]],
                )
                for o in r["outputs"]
            ],
        )
        for r in RECORDED["request_outputs"]
    ]


def test_the_recorded_generate_becomes_a_batch_that_agrees_with_the_same_weights() -> None:
    """The recorded outputs give a batch whose log-probs are the recorded sampled ones, whose codes all name "r1",
    and which agrees with the same weights' log-probs of the same tokens at every counted position."""
    batch = rollout_batch(
        RECORDED["prompts"], _recorded_outputs(), n=RECORDED["sampling"]["n"], allowed_versions={"r1"}
    )
    mask = batch.loss_mask.bool()
    assert batch.version_labels == ("r1",)
    assert (batch.version_codes[mask] == 0).all()
    assert (batch.version_codes[~mask] == NO_VERSION).all()
    sampled = [
        entry[str(token)]
        for r in RECORDED["request_outputs"]
        for o in sorted(r["outputs"], key=lambda o: o["index"])
        for token, entry in zip(o["token_ids"], o["logprobs"], strict=True)
    ]
    assert batch.generation_logprobs[mask].tolist() == pytest.approx(sampled, abs=1e-6)
    learner = torch.zeros_like(batch.generation_logprobs)
    for index, row in enumerate(RECORDED["learner_logprobs"]):
        start = int(batch.prompt_lengths[index])
        learner[index, start : start + len(row)] = torch.tensor(row)
    difference = (learner - batch.generation_logprobs).abs()[mask]
    assert float(difference.max()) < RECORDED["agreement_tolerance"]
    assert int(mask.sum()) == sum(len(row) for row in RECORDED["learner_logprobs"])


# ---------------------------------------------------------------------------------------------------- issue 30


def test_a_generated_media_placeholder_names_row_choice_position_and_token() -> None:
    """verl #7038: a sampled <|image_pad|> (id 151655 here) is refused with where it is; other ids pass."""
    rows = [request([1], choice(0, [5])), request([2], choice(0, [7, 151655, 8]))]
    err = _batch_error(
        lambda: rollout_batch([[1], [2]], rows, forbidden_token_ids={151655, 151656}), ForbiddenTokenError
    )
    assert (err.row, err.choice, err.check, err.position, err.token_id) == (
        1,
        0,
        "forbidden_token",
        1,
        151655,
    )
    assert err.message.startswith(
        "rollout row 1, choice 0: generated token 151655 at position 1 is forbidden"
    )
    assert len(rollout_batch([[1], [2]], rows, forbidden_token_ids={9})) == 2
    assert len(rollout_batch([[1], [2]], rows)) == 2  # nothing is forbidden by default


def test_forbidden_token_ids_must_be_ints() -> None:
    """A bare int, a str or a float among the ids is a ContractTypeError naming the argument."""
    rows = [request([1], choice(0, [5]))]
    for value, argument in (
        (5, "forbidden_token_ids"),
        ("5", "forbidden_token_ids"),
        ([1.5], "forbidden_token_ids[0]"),
    ):
        err = _batch_error(
            lambda value=value: rollout_batch([[1]], rows, forbidden_token_ids=value), ContractTypeError
        )
        assert err.argument == argument


def test_an_output_under_two_weight_versions_is_refused_by_default() -> None:
    """SkyRL #1836: one output sampled by two versions fails closed, naming both spans; allow_mixed_versions passes."""
    rows = [request([1], choice(0, [5, 6, 7], spans=[("3", 0, 2), ("4", 2, 3)]))]
    err = _batch_error(lambda: rollout_batch([[1]], rows), RolloutWeightVersionError)
    assert (err.row, err.choice, err.check, err.span_index, err.version, err.start, err.end) == (
        0,
        0,
        "mixed_versions",
        1,
        "4",
        2,
        3,
    )
    assert "allow_mixed_versions=True" in err.message
    err = _batch_error(
        lambda: rollout_batch([[1]], rows, allowed_versions={"3", "4"}), RolloutWeightVersionError
    )
    assert err.check == "mixed_versions"  # allowing both labels is not allowing them in one output
    batch = rollout_batch([[1]], rows, allow_mixed_versions=True)
    assert batch.version_codes.tolist() == [[NO_VERSION, 0, 0, 1]]


def _versioned(*labels: str) -> list[O]:
    """One row per label, each a single-version output of two tokens."""
    return [request([row], choice(0, [5, 6], spans=[(label, 0, 2)])) for row, label in enumerate(labels)]


def test_a_rollout_lagging_beyond_max_staleness_is_refused() -> None:
    """AReaL #1388: with integer labels, lag = current - label; a lag of 5 against a bound of 2 names the row."""
    rows = _versioned("7", "5", "2")
    prompts = [[0], [1], [2]]
    err = _batch_error(
        lambda: rollout_batch(prompts, rows, current_version=7, max_staleness=2), RolloutWeightVersionError
    )
    assert (err.row, err.choice, err.check, err.version) == (2, 0, "staleness", "2")
    assert "5 versions behind current_version=7, beyond max_staleness=2" in err.message
    assert len(rollout_batch(prompts, rows, current_version=7, max_staleness=5)) == 3
    assert len(rollout_batch(prompts, rows, current_version="7", max_staleness=5)) == 3


def test_staleness_needs_an_order_and_both_arguments() -> None:
    """Opaque labels are never ordered by guess: vLLM's "default" needs version_order; half a bound is an error."""
    rows = _versioned("default")
    err = _batch_error(
        lambda: rollout_batch([[0]], rows, current_version=3, max_staleness=1), RolloutWeightVersionError
    )
    assert err.check == "staleness"
    assert "cannot be ordered" in err.message
    ordered = rollout_batch(
        [[0]], rows, current_version="b", max_staleness=2, version_order=["default", "a", "b"]
    )
    assert ordered.version_labels == ("default",)
    err = _batch_error(
        lambda: rollout_batch(
            [[0]], rows, current_version="a", max_staleness=0, version_order=["default", "a"]
        ),
        RolloutWeightVersionError,
    )
    assert "1 versions behind" in err.message
    for kwargs in ({"current_version": 3}, {"max_staleness": 1}, {"version_order": ["a"]}):
        assert _batch_error(lambda kwargs=kwargs: rollout_batch([[0]], rows, **kwargs)).check == "batch"
    newer = _versioned("9")
    err = _batch_error(
        lambda: rollout_batch([[0]], newer, current_version=3, max_staleness=1), RolloutWeightVersionError
    )
    assert "newer than current_version=3" in err.message


def test_a_staleness_bound_requires_weight_versions() -> None:
    """An output without labels cannot pass a staleness bound unchecked."""
    rows = [request([1], choice(0, [5]))]
    err = _batch_error(
        lambda: rollout_batch([[1]], rows, current_version=1, max_staleness=1), RolloutWeightVersionError
    )
    assert "carries no weight_versions" in err.message


def test_a_cached_prefix_under_another_version_is_refused() -> None:
    """With prefix_cache_version, a request served partly from cache whose first span is another version fails."""
    rows = _versioned("8")
    rows[0].num_cached_tokens = 32
    err = _batch_error(
        lambda: rollout_batch([[0]], rows, prefix_cache_version="7"), RolloutWeightVersionError
    )
    assert (err.row, err.choice, err.check, err.version) == (0, 0, "prefix_cache", "8")
    assert "served 32 prompt tokens from its prefix cache" in err.message
    assert len(rollout_batch([[0]], rows, prefix_cache_version="8")) == 1
    rows[0].num_cached_tokens = 0
    assert len(rollout_batch([[0]], rows, prefix_cache_version="7")) == 1  # nothing came from the cache
    numeric: Any = 7
    err = _batch_error(lambda: rollout_batch([[0]], rows, prefix_cache_version=numeric), ContractTypeError)
    assert err.argument == "prefix_cache_version"


@pytest.mark.parametrize("floor", [math.inf, -math.inf, 5.0, 1])
def test_a_floor_must_be_finite_and_not_positive(floor: float) -> None:
    """A log-prob floor of inf, -inf or above 0 is refused by both readers (before the fix inf and 5.0 passed,
    flooring every log-probability to a positive value)."""
    with pytest.raises(ContractTypeError, match="finite and <= 0") as info:
        sampled_logprobs(O(index=0, token_ids=[7], logprobs=[{7: O(logprob=-0.5)}]), floor=floor)
    assert_contract_error(info.value)
    with pytest.raises(ContractTypeError, match="logprob_floor"):
        rollout_batch([[1]], [], logprob_floor=floor)
    assert sampled_logprobs(O(index=0, token_ids=[7], logprobs=[{7: O(logprob=-0.5)}]), floor=0) == [0.0]
