"""Unit tests for the refit-key diagnostic and grouped-MoE slab names (SPEC §1.6, §1.7)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from rl_contracts.errors import ContractTypeError
from rl_contracts.refit import (
    GROUPED_MOE_EXPERT_WEIGHT_SUFFIXES,
    format_refit_key_error,
    is_grouped_moe_expert_weight_name,
)
from rl_contracts.testing import assert_contract_error


@pytest.mark.parametrize(
    ("label", "keys", "expected"),
    [
        ("missing keys", {"b", "a"}, "missing keys (2): ['a', 'b']"),
        ("missing keys", set(), "missing keys (0): []"),
        (
            "unexpected keys",
            {f"k{i}" for i in range(10)},
            "unexpected keys (10): ['k0', 'k1', 'k2', 'k3', 'k4', 'k5', 'k6', 'k7'] ...",
        ),
        ("duplicate keys", ["b", "a", "b", "a"], "duplicate keys (2): ['a', 'b']"),
        ("k", [f"k{i}" for i in range(8)], "k (8): ['k0', 'k1', 'k2', 'k3', 'k4', 'k5', 'k6', 'k7']"),
        ("k", [f"k{i}" for i in range(9)], "k (9): ['k0', 'k1', 'k2', 'k3', 'k4', 'k5', 'k6', 'k7'] ..."),
        ("k", ["B", "a", "_", "A"], "k (4): ['A', 'B', '_', 'a']"),
        ("k", ["it's"], 'k (1): ["it\'s"]'),
        ("", [""], " (1): ['']"),
    ],
)
def test_format_refit_key_error_examples(label: str, keys: Any, expected: str) -> None:
    """The diagnostic lists the first 8 distinct keys in sorted order, then ``" ..."`` when there are more."""
    assert format_refit_key_error(label, keys) == expected


@pytest.mark.parametrize(
    "keys",
    [
        ["b", "a"],
        ("a", "b"),
        frozenset({"a", "b"}),
        {"a": 1, "b": 2},
        {"b": 0, "a": 0}.keys(),
    ],
)
def test_format_refit_key_error_accepts_any_iterable(keys: Any) -> None:
    """Lists, tuples, frozensets, dicts (their keys), views and iterators all work."""
    assert format_refit_key_error("missing keys", keys) == "missing keys (2): ['a', 'b']"


def test_format_refit_key_error_accepts_a_generator() -> None:
    """A generator of keys is consumed once and works like a list."""
    assert (
        format_refit_key_error("missing keys", (key for key in ["b", "a"])) == "missing keys (2): ['a', 'b']"
    )


def test_format_refit_key_error_is_bounded_for_many_keys() -> None:
    """100,000 keys give the count, the 8 smallest keys and ``" ..."``."""
    keys = [f"model.layers.{i}.weight" for i in range(100_000)]
    text = format_refit_key_error("missing keys", reversed(keys))
    smallest = sorted(keys)[:8]
    assert text == f"missing keys (100000): {smallest!r} ..."


def test_format_refit_key_error_is_bounded_for_long_keys_and_label() -> None:
    """Keys and a label of 10,000 characters still give at most 2,000 characters."""
    keys = {f"{i:04d}" + "x" * 10_000 for i in range(1_000)}
    text = format_refit_key_error("L" * 10_000, keys)
    assert len(text) <= 2000
    assert text.startswith("L" * 197 + "... (1000): ['0000xxx")
    assert text.endswith("...")


def test_format_refit_key_error_shortens_each_key() -> None:
    """A long key is shown as ``shorten(repr(key), 200)``."""
    key = "w" * 500
    text = format_refit_key_error("missing keys", {key})
    assert text == "missing keys (1): [" + repr(key)[:197] + "...]"


@pytest.mark.parametrize(
    ("label", "keys", "argument", "actual"),
    [
        ("missing keys", "abc", "keys", "str"),
        ("missing keys", b"abc", "keys", "bytes"),
        ("missing keys", bytearray(b"abc"), "keys", "bytearray"),
        ("missing keys", 5, "keys", "int"),
        ("missing keys", None, "keys", "NoneType"),
        ("missing keys", np.array(5), "keys", "ndarray with dtype int64 and 0 dimensions"),
        ("missing keys", torch.tensor(2.0), "keys", "Tensor with dtype float32 and 0 dimensions"),
        ("missing keys", ["a", 1], "keys", "int"),
        ("missing keys", ["a", ["unhashable"]], "keys", "list"),
        ("missing keys", [None], "keys", "NoneType"),
        ("missing keys", [b"a"], "keys", "bytes"),
        (None, ["a"], "label", "NoneType"),
        (3, ["a"], "label", "int"),
    ],
)
def test_format_refit_key_error_types(label: Any, keys: Any, argument: str, actual: str) -> None:
    """A bare str, a 0-d array, a non-iterable, a non-str element or a non-str label is a ``ContractTypeError``
    naming the argument and what it got."""
    with pytest.raises(ContractTypeError) as info:
        format_refit_key_error(label, keys)
    err = info.value
    assert (err.argument, err.actual) == (argument, actual)
    assert str(err).startswith(f"{argument} must ")
    assert actual in str(err)
    assert_contract_error(err)


def test_grouped_moe_suffixes() -> None:
    """The grouped-MoE suffixes are the two fused expert slab names."""
    assert GROUPED_MOE_EXPERT_WEIGHT_SUFFIXES == ("mlp.experts.gate_up_proj", "mlp.experts.down_proj")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("model.layers.3.mlp.experts.gate_up_proj", True),
        ("model.layers.3.mlp.experts.down_proj", True),
        ("model.layers.3.mlp.experts.gate_up_proj.weight", False),
        ("xmlp.experts.down_proj", True),
        ("", False),
        ("mlp.experts.down_proj", True),
        ("model.layers.3.mlp.experts.0.down_proj", False),
        ("model.layers.3.mlp.shared_experts.down_proj", False),
    ],
)
def test_is_grouped_moe_expert_weight_name(name: str, expected: bool) -> None:
    """A pure suffix test against the two slab suffixes."""
    assert is_grouped_moe_expert_weight_name(name) is expected


@pytest.mark.parametrize("name", [None, b"mlp.experts.down_proj", 3, ["mlp.experts.down_proj"]])
def test_is_grouped_moe_expert_weight_name_types(name: Any) -> None:
    """A non-str name is a ``ContractTypeError``."""
    with pytest.raises(ContractTypeError) as info:
        is_grouped_moe_expert_weight_name(name)
    actual = type(name).__name__
    assert str(info.value).startswith("name must be a str")
    assert str(info.value).endswith(f"got {actual}")
    assert (info.value.argument, info.value.expected, info.value.actual) == (
        "name",
        "a str (a checkpoint key)",
        actual,
    )
