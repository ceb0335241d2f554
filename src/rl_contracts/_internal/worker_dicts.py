"""Snapshot values from a worker dict, the reference's worker format (SPEC §6.3, §6.4)."""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import ContractTypeError, CounterSnapshotError
from ..metrics.names import KEPT_COUNTER_NAMES, is_kept
from .counter_values import FrozenCounters, counter_value, counter_vector, is_vector, key_text
from .messages import render, type_name

__all__ = ["read_worker_dict"]


def read_worker_dict(values: object, *, drop_unkept: bool, where: str, argument: str) -> FrozenCounters:
    """Validate a worker-format mapping into snapshot values (scalars as floats, vectors as tuples).

    With ``drop_unkept`` (the sources), a non-``str`` key is a ``ContractTypeError`` and an unkept key is dropped
    without looking at its value; without it (direct construction), every key must be a kept ``str`` and any
    other key is a ``CounterSnapshotError``.  A value is checked by :func:`counter_value` or
    :func:`counter_vector`.  Raises ``ContractTypeError`` naming ``argument`` for a non-mapping.
    """
    if not isinstance(values, Mapping):
        raise ContractTypeError(
            f"{where} must be a mapping of counter keys to values, got {type_name(values)}",
            argument=argument,
            expected="Mapping[str, float | Sequence[float]]",
            actual=type_name(values),
        )
    result: dict[str, float | tuple[float, ...]] = {}
    for key, value in values.items():
        if drop_unkept:
            _check_str_key(key, where, argument)
            if not is_kept(key):
                continue
        else:
            _check_kept_key(key, value)
        result[key] = (
            counter_vector(value, key, where) if is_vector(value) else counter_value(value, key, where)
        )
    return FrozenCounters(result)


def _check_str_key(key: object, where: str, argument: str) -> None:
    if not isinstance(key, str):
        raise ContractTypeError(
            f"{where} has a key that is not a str: {type_name(key)} {render(key)}",
            argument=argument,
            expected="str",
            actual=type_name(key),
        )


def _check_kept_key(key: object, value: object) -> None:
    if not isinstance(key, str) or not key or not is_kept(key):
        raise CounterSnapshotError(
            f"snapshot key {render(key)} is not a kept counter key (a non-empty str naming a spec-decode "
            f"family or one of {list(KEPT_COUNTER_NAMES)}); build snapshots with from_worker_dict to drop "
            "other keys",
            key=key_text(key),
            value=render(value),
        )
