"""Unit tests for the refit-key diagnostic and grouped-MoE slab names (SPEC §1.6, §1.7)."""

from __future__ import annotations

from typing import Any

import pytest

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


KEYS_EXPECTED = "a collection of str keys (not a bare str)"
ELEMENT = "keys must hold only str keys, got an element of type"


@pytest.mark.parametrize(
    ("label", "keys", "message", "argument", "expected", "actual"),
    [
        ("missing keys", "abc", f"keys must be {KEYS_EXPECTED}, got str", "keys", KEYS_EXPECTED, "str"),
        ("missing keys", b"abc", f"keys must be {KEYS_EXPECTED}, got bytes", "keys", KEYS_EXPECTED, "bytes"),
        ("missing keys", 5, f"keys must be {KEYS_EXPECTED}, got int", "keys", KEYS_EXPECTED, "int"),
        (
            "missing keys",
            None,
            f"keys must be {KEYS_EXPECTED}, got NoneType",
            "keys",
            KEYS_EXPECTED,
            "NoneType",
        ),
        ("missing keys", ["a", 1], f"{ELEMENT} int", "keys", "Iterable[str]", "int"),
        ("missing keys", ["a", ["unhashable"]], f"{ELEMENT} list", "keys", "Iterable[str]", "list"),
        ("missing keys", [None], f"{ELEMENT} NoneType", "keys", "Iterable[str]", "NoneType"),
        ("missing keys", [b"a"], f"{ELEMENT} bytes", "keys", "Iterable[str]", "bytes"),
        (None, ["a"], "label must be a str, got NoneType", "label", "a str", "NoneType"),
        (3, ["a"], "label must be a str, got int", "label", "a str", "int"),
    ],
)
def test_format_refit_key_error_types(
    label: Any, keys: Any, message: str, argument: str, expected: str, actual: str
) -> None:
    """A bare str, a non-iterable, a non-str element or a non-str label is a ``ContractTypeError`` naming it."""
    with pytest.raises(ContractTypeError) as info:
        format_refit_key_error(label, keys)
    err = info.value
    assert (str(err), err.argument, err.expected, err.actual) == (message, argument, expected, actual)
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
    assert str(info.value) == f"name must be a str (a checkpoint key), got {actual}"
    assert (info.value.argument, info.value.expected, info.value.actual) == (
        "name",
        "a str (a checkpoint key)",
        actual,
    )
