"""Trainer glue and its property test: which positions replay the routes vLLM sampled (router replay, R3).

The learner replays vLLM's expert choices only where vLLM returned routes: after alignment a row vLLM did not
return is all -1, and rows past the routed positions are padding.  Run with ``pytest`` or ``python``.
"""

import torch
from hypothesis import given

from rl_contracts.routed_experts import R3_MISSING_ROUTE_SENTINEL, pad_and_align_routed_expert_indices
from rl_contracts.testing.strategies import AlignmentCase, alignment_cases


def replay_mask(routes: torch.Tensor, valid_length: int) -> torch.Tensor:
    """A ``[S]`` bool mask over aligned ``[S, L, K]`` routes: True where vLLM returned the route row."""
    routed = min(max(valid_length - 1, 0), routes.shape[0])  # the last valid token routes nothing
    returned = (routes != R3_MISSING_ROUTE_SENTINEL).flatten(1).any(dim=1)
    return returned & (torch.arange(routes.shape[0], device=routes.device) < routed)


@given(alignment_cases())
def test_replay_mask_never_replays_a_sentinel_row(case: AlignmentCase) -> None:
    """Rows vLLM did not return (all -1) and padding rows are never replayed; every returned row is."""
    routes, stats = pad_and_align_routed_expert_indices(
        case.request_output,
        case.completion_output,
        valid_length=case.valid_length,
        padded_length=case.padded_length,
        device="cpu",
        routed_experts_dtype=case.dtype,
        routes_start=case.routes_start,
        return_stats=True,
    )
    if routes is None:  # vLLM returned no routes at all: nothing to replay
        return
    mask = replay_mask(routes, case.valid_length)
    assert not mask[(routes == -1).flatten(1).all(dim=1)].any()
    assert not mask[stats["expected_routes"] :].any()
    if routes.shape[1] * routes.shape[2] > 0:  # with no layer or no top-k slot there is no route to replay
        assert int(mask.sum()) == stats["expected_routes"] - stats["missing_routes"]


if __name__ == "__main__":
    test_replay_mask_never_replays_a_sentinel_row()
