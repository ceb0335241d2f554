"""Trainer glue: the behaviour policy of every output token, from the weight versions vLLM labelled it with.

With in-flight weight updates one trajectory is sampled by several policies.  vLLM (0.32+) reports which
weights sampled which output tokens as ``weight_versions`` spans; the trainer maps each label to the training
step that produced those weights, so importance-sampling correction uses each token's own behaviour policy, and
tokens sampled by weights older than the trainer accepts are masked out of the loss.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from rl_contracts.weights import WeightVersionSpan, weight_version_per_token

__all__ = ["fresh_token_mask", "token_policy_steps"]


def token_policy_steps(
    spans: Sequence[WeightVersionSpan], steps_by_label: Mapping[str, int]
) -> npt.NDArray[np.int64]:
    """The training step of the weights that sampled each output token (one entry per token)."""
    labels = list(steps_by_label)
    steps = np.asarray([steps_by_label[label] for label in labels], dtype=np.int64)
    return steps[weight_version_per_token(spans, labels=labels)]


def fresh_token_mask(
    spans: Sequence[WeightVersionSpan], steps_by_label: Mapping[str, int], *, current_step: int, max_age: int
) -> npt.NDArray[np.bool_]:
    """True for the tokens sampled by weights at most ``max_age`` steps older than ``current_step``."""
    return current_step - token_policy_steps(spans, steps_by_label) <= max_age
