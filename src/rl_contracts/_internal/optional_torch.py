"""torch for the tensor helpers, or an error naming the extra that installs it.

torch is an optional dependency (``pip install "rl-contracts[torch]"``): the configuration layer, the command line
and the token-level helpers never import it.  The tensor modules import it through this module, as
``from ._internal.optional_torch import torch``, so a missing torch raises one :class:`ModuleNotFoundError` that
says what to install instead of a bare ``No module named 'torch'``.
"""

from __future__ import annotations

EXTRA = "rl-contracts[torch]"
"""The extra that installs torch."""

try:
    import torch
except ModuleNotFoundError as missing:
    if missing.name != "torch":  # torch is installed, but one of its own imports failed: not ours to rename
        raise
    raise ModuleNotFoundError(
        "the tensor helpers of rl_contracts (routed_experts, codec, chat, rollouts, logprobs, vllm_utils) need "
        f'torch, which is not installed: pip install "{EXTRA}"',
        name="torch",
    ) from None

__all__ = ["EXTRA", "torch"]
