"""The one dotted-path implementation (``rl_contracts._internal.config_paths``) and the one absent marker."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rl_contracts._internal.config_absent import ABSENT, MISSING_VALUE, Absent, render_value
from rl_contracts._internal.config_paths import (
    dotted,
    dotted_path,
    is_under,
    join,
    keys_in,
    lookup,
    split_path,
)
from rl_contracts.config import VllmRefitConfig

_KEY = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_0123456789", min_size=1, max_size=8).filter(
    lambda key: not key.isdigit()
)


@given(st.lists(st.one_of(_KEY, st.integers(min_value=0, max_value=99)), min_size=1, max_size=6))
def test_split_path_inverts_dotted(loc: list[str | int]) -> None:
    """For str keys without dots and int list indices, ``split_path(dotted(loc)) == loc``."""
    assert split_path(dotted(loc)) == tuple(loc)


@pytest.mark.parametrize(
    ("prefix", "key", "expected"),
    [("", "a", "a"), ("a", "b", "a.b"), ("a", 2, "a[2]"), ("", 0, "[0]"), ("a", True, "a.True")],
)
def test_join_writes_an_int_as_an_index(prefix: str, key: object, expected: str) -> None:
    """``join`` writes an int (never a bool) as ``[i]`` and anything else as ``.key``."""
    assert join(prefix, key) == expected


def test_dotted_path_reads_int_keys_by_the_document() -> None:
    """An int is an index where the document holds a list there, and a mapping key (``.5``) elsewhere."""
    document = {"a": [{"b": 1}], "m": {5: "x"}}
    assert dotted_path(("a", 0, "b"), document) == "a[0].b"
    assert dotted_path(("m", 5), document) == "m.5"
    assert lookup(document, ("a", 0, "b")) == (True, 1)
    assert lookup(document, ("a", 1)) == (False, None)


_DOCUMENT = {"a": [{"b": 1}], "m": {5: "x", "a.b:C": {"y": 2}, "a": {}, "": 3}, "k" * 300: 1}


@pytest.mark.parametrize(
    "keys", [("a", 0, "b"), ("m", 5), ("m", "a.b:C", "y"), ("m", "a"), ("m", ""), ("k" * 300,)]
)
def test_keys_in_inverts_dotted_path_in_its_document(keys: tuple[object, ...]) -> None:
    """``keys_in(dotted_path(keys, document), document) == keys``: keys holding dots, int keys of a mapping, empty
    and shortened keys are found as the document holds them."""
    assert keys_in(dotted_path(keys, _DOCUMENT), _DOCUMENT) == keys


def test_keys_in_ends_with_the_absent_key_and_reads_models() -> None:
    """The part of a path the data does not hold is one key; a model is read by its fields and extra keys."""
    assert keys_in("m.a.b:D.x", _DOCUMENT) == ("m", "a", "b:D.x")
    assert keys_in("x.y", {}) == ("x.y",)
    refit = VllmRefitConfig.model_validate({"pkg.mod:Engine": {"z": 1}})
    assert keys_in("pkg.mod:Engine.z", refit) == ("pkg.mod:Engine", "z")
    assert keys_in("sparse.tuning.zmq_retries", refit) == ("sparse", "tuning", "zmq_retries")


@pytest.mark.parametrize(
    ("path", "expected"), [("a", True), ("a.b", True), ("a[0]", True), ("ab", False), ("b.a", False)]
)
def test_is_under_a_root(path: str, expected: bool) -> None:
    """A path is under a root when it is the root or continues it with ``.`` or ``[``."""
    assert is_under(path, ("a",)) is expected


def test_absent_is_one_marker_that_pickles_to_itself() -> None:
    """ABSENT is a singleton (also after pickling), reads ``<absent>`` and is written ``<missing>`` in issues."""
    assert list(Absent) == [ABSENT]
    assert pickle.loads(pickle.dumps(ABSENT)) is ABSENT
    assert repr(ABSENT) == "<absent>"
    assert render_value(ABSENT) == MISSING_VALUE == "<missing>"
    assert render_value(None) == "None"
