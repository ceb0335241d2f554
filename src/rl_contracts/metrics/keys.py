"""Flat counter keys: encoding a histogram part or a label into a key, and which keys a snapshot keeps (§6.2)."""

from __future__ import annotations

from typing import Final

from .._messages import render, shorten
from ..errors import CounterSnapshotError
from ._values import require_str
from .names import COUNTER_KEY_SEP, KEPT_COUNTER_NAMES

__all__ = ["encode_counter_key", "is_kept"]

_KEPT_NAME_SET: Final = frozenset(KEPT_COUNTER_NAMES)


def encode_counter_key(name: str, part: str) -> str:
    """Encode a histogram component or a label into a flat counter key: ``name + "|" + part``.

    ``part`` is not escaped and may itself contain ``|`` or ``=``.  Raises ``ContractTypeError`` when either
    argument is not a ``str``, and ``CounterSnapshotError`` when ``name`` is empty or contains ``|``.

    Divergence: the reference does not validate ``name``.

    >>> encode_counter_key("vllm:request_success", "finished_reason=stop")
    'vllm:request_success|finished_reason=stop'
    """
    require_str(name, "name")
    require_str(part, "part")
    if not name or COUNTER_KEY_SEP in name:
        raise CounterSnapshotError(
            f"counter name must be non-empty and must not contain '{COUNTER_KEY_SEP}', got {render(name)}; "
            "pass the bare metric name and put the component in part",
            key=shorten(name, 200),
        )
    return name + COUNTER_KEY_SEP + part


def is_kept(metric_name: str) -> bool:
    """Whether a snapshot key belongs to a family the driver consumes.

    The base is the key up to the first ``|``; it is kept when it contains ``"spec_decode"`` or is exactly one of
    :data:`~rl_contracts.metrics.KEPT_COUNTER_NAMES`.  Raises ``ContractTypeError`` for a non-``str``.

    >>> is_kept("vllm:request_prompt_tokens|count"), is_kept("vllm:prompt_tokens_cached")
    (True, False)
    """
    require_str(metric_name, "metric_name")
    base = metric_name.partition(COUNTER_KEY_SEP)[0]
    return "spec_decode" in base or base in _KEPT_NAME_SET
