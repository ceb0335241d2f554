"""Trainer glue: which positions of a sequence replay the routes vLLM sampled (router replay, R3).

The learner replays vLLM's expert choices only at positions where vLLM actually returned routes.  After
``pad_and_align_routed_expert_indices``, a row vLLM did not return is all ``-1`` and a row past the sequence's
routed positions is padding, so both must stay out of the replay mask.
"""

from __future__ import annotations

import torch

from rl_contracts.routed_experts import R3_MISSING_ROUTE_SENTINEL

__all__ = ["replay_mask"]


def replay_mask(routes: torch.Tensor, valid_length: int) -> torch.Tensor:
    """A ``[S]`` bool mask over aligned ``[S, L, K]`` routes: True where vLLM returned the route row.

    Positions from ``valid_length - 1`` on are padding (the last valid token routes nothing); a row that is
    entirely the missing-route sentinel was not returned.
    """
    rows = routes.shape[0]
    routed = min(max(valid_length - 1, 0), rows)
    returned = (routes != R3_MISSING_ROUTE_SENTINEL).flatten(1).any(dim=1)
    return returned & (torch.arange(rows, device=routes.device) < routed)
