"""Trainer glue: the loss mask of a multi-turn rollout after an exact-token prefix splice.

Turn N's prompt is the model's exact tokens of turns 1..N-1 followed by the re-rendered template from the turn
boundary on (``splice_prefix_tokens``).  The trainer already holds a loss mask over the model's tokens (True on
the assistant tokens it sampled); that mask carries over unchanged, and everything the template adds (the new
user or tool turn, the generation prompt) is never trained on.
"""

from __future__ import annotations

from collections.abc import Sequence

from rl_contracts.splice import PrefixSplice

__all__ = ["extend_loss_mask"]


def extend_loss_mask(previous_mask: Sequence[bool], splice: PrefixSplice) -> list[bool]:
    """The loss mask over ``splice.token_ids``: ``previous_mask`` on the model prefix, False on the rest.

    ``previous_mask`` must cover the model prefix exactly (one flag per token), else ``ValueError``.
    """
    if len(previous_mask) != splice.model_cut_end:
        raise ValueError(
            f"previous_mask has {len(previous_mask)} flags but the model prefix has {splice.model_cut_end} tokens"
        )
    return [*previous_mask, *([False] * (len(splice.token_ids) - splice.model_cut_end))]
