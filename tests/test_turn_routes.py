"""Multi-turn router replay: per-turn routes stitched into one trajectory (``rl_contracts.routed_experts.stitch_turn_routes``)."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from types import SimpleNamespace as O
from typing import Any

import numpy as np
import pytest
import torch

from rl_contracts.errors import ContractTypeError, RoutedExpertsError, RouteStitchError
from rl_contracts.routed_experts import pad_and_align_routed_expert_indices, stitch_turn_routes
from rl_contracts.testing import assert_contract_error

# Two turns, L=1 and K=2; the route of token t is [[t + 10, t + 20]].  Turn 0: prompt [1, 2], generated [3, 4];
# turn 1: prompt [1, 2, 3, 4, 5] (turn 0's ids plus a tool result), generated [6, 7].
ROUTES = np.array([[[t + 10, t + 20]] for t in range(8)], np.uint8)


def turn(prompt: list[int], generated: list[int], first_row: int = 0, rows: int | None = None) -> tuple[O, O]:
    """A turn's outputs holding the routes of tokens ``[first_row, first_row + rows)`` (default: all but the last)."""
    count = len(prompt) + len(generated) - 1 - first_row if rows is None else rows
    routes = ROUTES[first_row : first_row + count]
    return O(prompt_token_ids=prompt), O(index=0, token_ids=generated, routed_experts=routes)


TURN_0 = turn([1, 2], [3, 4])
TURN_1 = turn([1, 2, 3, 4, 5], [6, 7])


def _stitch_error(call: Any) -> RouteStitchError:
    with pytest.raises(RouteStitchError) as info:
        call()
    assert_contract_error(info.value)
    return info.value


def test_concatenating_per_turn_alignments_replays_a_default_route_nemo_rl_3485() -> None:
    """Each turn aligned alone is valid, but turn 0's last generated token (token 3) gets the default route."""
    first = pad_and_align_routed_expert_indices(*TURN_0, valid_length=4, padded_length=4, device="cpu")
    assert first is not None
    assert first[3].tolist() == [[0, 1]]  # the default route, not token 3's [[13, 23]]


def test_the_next_turns_prefill_supplies_the_last_generated_tokens_route() -> None:
    """Stitched: every row before the last token is the engine's route; the last token and padding are default."""
    routes = stitch_turn_routes([TURN_0, TURN_1], device="cpu", padded_length=9)
    assert routes.dtype == torch.int16
    assert routes.shape == (9, 1, 2)
    assert routes[:6].tolist() == ROUTES[:6].astype(np.int16).tolist()
    assert routes[6:].tolist() == [[[0, 1]]] * 3


def test_a_turn_may_return_only_its_new_rows() -> None:
    """With routes_start per turn (vLLM's routed_experts_prompt_start), turn 1 returns tokens 3.. only."""
    later = turn([1, 2, 3, 4, 5], [6, 7], first_row=3)
    routes = stitch_turn_routes(
        [TURN_0, later], device="cpu", routes_start=[0, 3], routed_experts_dtype=torch.int8
    )
    assert routes.dtype == torch.int8
    assert routes[:6].tolist() == ROUTES[:6].astype(np.int8).tolist()


def test_a_last_generated_token_no_turn_routed_names_turn_and_position() -> None:
    """Turn 1's routes start after token 3 (turn 0's last generated token): RouteStitchError turn 0, position 3."""
    late = turn([1, 2, 3, 4, 5], [6, 7], first_row=4)
    err = _stitch_error(lambda: stitch_turn_routes([TURN_0, late], device="cpu", routes_start=[0, 4]))
    assert isinstance(err, RoutedExpertsError)
    assert (err.turn, err.position) == (0, 3)
    assert "turn 0's last generated token" in err.message
    clone = pickle.loads(pickle.dumps(err))
    assert (clone.turn, clone.position) == (0, 3)


def test_a_missing_row_inside_a_turn_names_the_turn_that_introduced_it() -> None:
    """Turn 1 returned too few rows: token 5 (its tool result's last token) has no route anywhere."""
    short = turn([1, 2, 3, 4, 5], [6, 7], rows=5)
    err = _stitch_error(lambda: stitch_turn_routes([TURN_0, short], device="cpu"))
    assert (err.turn, err.position) == (1, 5)


def test_a_single_turn_stitches_like_pad_and_align() -> None:
    """One complete turn gives the strict pad-and-align result; its final token keeps the default route."""
    routes = stitch_turn_routes([TURN_1], device="cpu")
    expected = pad_and_align_routed_expert_indices(*TURN_1, valid_length=7, padded_length=7, device="cpu")
    assert expected is not None
    assert torch.equal(routes, expected)


@pytest.mark.parametrize(
    ("turns", "kwargs", "attributes"),
    [
        ([TURN_0, turn([1, 2, 9, 4, 5], [6, 7])], {}, (1, 2)),  # re-tokenized history
        ([TURN_0, (O(prompt_token_ids=None), TURN_1[1])], {}, (1, None)),
        ([TURN_0, (TURN_1[0], O(index=0, token_ids=[6, 7], routed_experts=None))], {}, (1, None)),
        (
            [TURN_0, (TURN_1[0], O(index=0, token_ids=[6, 7], routed_experts=np.zeros((6, 2, 2), np.uint8)))],
            {},
            (1, None),
        ),
        ([TURN_0, turn([1, 2, 3, 4, 5], [6, 7], rows=8)], {}, (1, None)),  # two surplus rows (strict)
        ([TURN_0, TURN_1], {"padded_length": 6}, (None, None)),
        ([TURN_0, TURN_1], {"routes_start": [0]}, (None, None)),
        ([], {}, (None, None)),
    ],
)
def test_turns_that_cannot_be_stitched(
    turns: list[Any], kwargs: dict[str, Any], attributes: tuple[Any, Any]
) -> None:
    """Every fault is a RouteStitchError with the turn (and the token, where one is at fault)."""
    err = _stitch_error(lambda: stitch_turn_routes(turns, device="cpu", **kwargs))
    assert (err.turn, err.position) == attributes


def test_arguments_of_the_wrong_type() -> None:
    """Turns that are not pairs, and lengths that are not ints, are ContractTypeErrors."""
    calls: list[Callable[[], object]] = [
        lambda: stitch_turn_routes("turns", device="cpu"),  # type: ignore[arg-type]
        lambda: stitch_turn_routes([TURN_0[0]], device="cpu"),  # type: ignore[list-item]
        lambda: stitch_turn_routes([TURN_0], device="cpu", padded_length=4.0),  # type: ignore[arg-type]
        lambda: stitch_turn_routes([TURN_0], device="cpu", routes_start=True),
    ]
    for call in calls:
        with pytest.raises(ContractTypeError) as info:
            call()
        assert_contract_error(info.value)
