"""Properties of composition without OmegaConf trees (config/loading/compose.py).

Invariant: composing a recipe gives exactly the plain containers OmegaConf's own ``load`` and ``merge`` give:
``_read`` of a YAML file equals ``OmegaConf.to_container(OmegaConf.load(file))``, and where ``_merged`` merges two
documents itself (it declines only an inherited interpolation meeting a mapping, a list or ``???``) its result equals
``OmegaConf.unsafe_merge``'s, and neither input changes.
"""

from __future__ import annotations

import copy
import tempfile
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]  # PyYAML (an omegaconf dependency), no stubs installed
from hypothesis import assume, given
from hypothesis import strategies as st
from omegaconf import OmegaConf

from rl_contracts.config.loading.compose import _merge_conflict, _merged, _read
from rl_contracts.config.loading.limits import DEFAULT_LIMITS
from rl_contracts.config.loading.resolve import register_resolvers

KEYS = st.one_of(st.sampled_from(["a", "b", "c", "x"]), st.integers(0, 2))
SCALARS: st.SearchStrategy[Any] = st.one_of(
    st.integers(-5, 5),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.sampled_from(
        ["???", "${a}", "${b}", "${a.x}", "pre${c}", "${oc.env:RL_CONTRACTS_UNSET_VAR}", "text", ""]
    ),
)
TREES: st.SearchStrategy[Any] = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(KEYS, inner, max_size=4)),
    max_leaves=12,
)
DOCUMENTS: st.SearchStrategy[dict[Any, Any]] = st.dictionaries(KEYS, TREES, max_size=4)


@given(DOCUMENTS, DOCUMENTS)
def test_a_merge_is_omegaconfs_merge(base: dict[Any, Any], over: dict[Any, Any]) -> None:
    """Where ``_merged`` merges (no list meets a mapping, no inherited interpolation meets a container), its
    result is OmegaConf's, and neither input changes."""
    assume(_merge_conflict(base, over, ()) is None)
    register_resolvers()
    before = copy.deepcopy((base, over))
    merged = _merged(base, over)
    assume(merged is not None)
    expected = OmegaConf.to_container(OmegaConf.unsafe_merge(OmegaConf.create(base), OmegaConf.create(over)))
    assert merged == expected
    assert (base, over) == before


@given(DOCUMENTS)
def test_a_file_reads_as_omegaconf_loads_it(document: dict[Any, Any]) -> None:
    """A mapping written as YAML (anchors included where values repeat) reads as ``OmegaConf.load`` reads it."""
    shared = {"k": [1, 2]}
    text = yaml.safe_dump({**document, "extra": shared, "again": shared}, sort_keys=False)
    assert "&id" in text  # the shared mapping is written once, as an anchor and an alias
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "r.yaml"
        path.write_text(text, encoding="utf-8")
        assert _read(path, None, DEFAULT_LIMITS) == OmegaConf.to_container(OmegaConf.load(path))
