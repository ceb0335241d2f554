"""Text-splicing YAML edits (``rl_contracts.config.yaml_edits``): each edit changes its entry and nothing else."""

from __future__ import annotations

import importlib
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rl_contracts.config.loading.parsing import RecipeLoader
from rl_contracts.config.yaml_edits import (
    Declined,
    insert_value,
    move_entry,
    remove_entry,
    rename_key,
    render_scalar,
    set_value,
)

_yaml: Any = importlib.import_module("yaml")

CHILD = """\
# a child recipe
defaults: base.yaml
policy:
  generation:
    vllm_cfg:
      gpu_memory_utilisation: 0.3  # misspelled
      # the engine's limit
      limit_mm_per_prompt:
        image: 2   # two images
      enable_thinking: True
    vllm_kwargs: {}  # none yet
  train_global_batch_size: 512   # prompts x generations
"""


def read(text: str) -> Any:
    """The text parsed as the library parses recipes (for checking what an edit means)."""
    loader = RecipeLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def test_rename_changes_only_the_key() -> None:
    """Renaming replaces the key's characters; its value, comment and every other byte stay."""
    keys = ("policy", "generation", "vllm_cfg", "gpu_memory_utilisation")
    edited = rename_key(CHILD, keys, "gpu_memory_utilization")
    assert edited == CHILD.replace("gpu_memory_utilisation:", "gpu_memory_utilization:")


def test_rename_never_overwrites_a_key_beside_it() -> None:
    """A rename onto a key the same mapping already has is declined, naming the key."""
    text = "a:\n  gpu_memory_utilisation: 0.3\n  gpu_memory_utilization: 0.5\n"
    result = rename_key(text, ("a", "gpu_memory_utilisation"), "gpu_memory_utilization")
    assert isinstance(result, Declined)
    assert "a.gpu_memory_utilization is already set" in result.reason


def test_rename_works_in_a_flow_mapping_and_keeps_quotes() -> None:
    """A key inside ``{...}`` is renamed in place, quoted as the old key was (a JSON recipe stays JSON)."""
    assert rename_key("a: {tp: 1, x: 2}\n", ("a", "tp"), "t") == "a: {t: 1, x: 2}\n"
    assert rename_key('{"a": {"tp": 1}}', ("a", "tp"), "t") == '{"a": {"t": 1}}'
    assert rename_key("a:\n  'tp': 1\n", ("a", "tp"), "t") == "a:\n  't': 1\n"


def test_remove_takes_the_entry_lines_with_their_comments() -> None:
    """Removing an entry removes its key line through its value's last line, and only those."""
    keys = ("policy", "generation", "vllm_cfg", "limit_mm_per_prompt")
    edited = remove_entry(CHILD, keys)
    assert edited == CHILD.replace("      limit_mm_per_prompt:\n        image: 2   # two images\n", "")


def test_removing_the_only_key_leaves_an_empty_mapping() -> None:
    """A mapping left without keys becomes ``{}`` (a key with no value would merge as null over the parent)."""
    text = "policy:\n  vllm_cfg:  # engine\n    enable_thinking: true\n  x: 1\n"
    edited = remove_entry(text, ("policy", "vllm_cfg", "enable_thinking"))
    assert edited == "policy:\n  vllm_cfg: {}  # engine\n  x: 1\n"
    assert read(edited) == {"policy": {"vllm_cfg": {}, "x": 1}}


@pytest.mark.parametrize(
    ("text", "keys", "fragment"),
    [
        ("a: {b: 1, c: 2}\n", ("a", "b"), "flow-style mapping"),
        ("base: &b\n  k: 1\nchild:\n  <<: *b\n  j: 2\n", ("child", "k"), "merge key"),
        ("base: &b\n  k: 1\nchild: *b\n", ("child", "k"), "anchor"),
        ("a:\n  b: 1\n", ("a", "c"), "not written in this file"),
        ("a:\n  - b: 1\n    c: 2\n", ("a", "b"), "not a mapping"),
    ],
)
def test_remove_declines_what_it_cannot_edit_alone(text: str, keys: tuple[str, ...], fragment: str) -> None:
    """Flow mappings, merge keys, aliases, absent keys and list items are declined with the reason."""
    result = remove_entry(text, keys)
    assert isinstance(result, Declined)
    assert fragment in result.reason


def test_set_replaces_the_scalar_and_keeps_the_comment() -> None:
    """Setting a one-line scalar replaces its characters only."""
    edited = set_value(CHILD, ("policy", "train_global_batch_size"), 1024)
    assert edited == CHILD.replace("512   # prompts", "1024   # prompts")


def test_set_declines_a_collection_value() -> None:
    """A value that is a mapping is not replaced by a scalar edit."""
    result = set_value(CHILD, ("policy", "generation", "vllm_cfg", "limit_mm_per_prompt"), 3)
    assert isinstance(result, Declined)


def test_insert_follows_the_file_indentation() -> None:
    """New keys go after the deepest existing mapping's last line, indented as the file is (4 here)."""
    text = "grpo:\n    num_prompts_per_step: 8  # small\npolicy:\n    x: 1\n"
    edited = insert_value(text, ("grpo", "async", "enabled"), False)
    assert (
        edited
        == "grpo:\n    num_prompts_per_step: 8  # small\n    async:\n        enabled: false\npolicy:\n    x: 1\n"
    )


@pytest.mark.parametrize("empty", ["{}", "null", "~", ""])
def test_insert_into_an_empty_value(empty: str) -> None:
    """An empty ``{}``/``null`` value of the deepest key is replaced by block entries on the next line."""
    text = f"a:\n  kw: {empty}  # none\nb: 1\n".replace(":   #", ":  #")
    edited = insert_value(text, ("a", "kw", "limit"), 2)
    assert isinstance(edited, str)
    assert read(edited) == {"a": {"kw": {"limit": 2}}, "b": 1}
    assert "# none" in edited


def test_insert_declines_a_key_already_set() -> None:
    """Inserting where the file already sets the key is declined."""
    assert isinstance(insert_value("a:\n  b: 1\n", ("a", "b"), 2), Declined)


def test_move_keeps_the_entry_text_and_comments() -> None:
    """A moved entry keeps its lines (comments included), re-indented, at the new place; the old place goes."""
    edited = move_entry(
        CHILD,
        ("policy", "generation", "vllm_cfg", "limit_mm_per_prompt"),
        ("policy", "generation", "vllm_kwargs", "limit_mm_per_prompt"),
    )
    assert isinstance(edited, str)
    assert edited == CHILD.replace(
        "      limit_mm_per_prompt:\n        image: 2   # two images\n", ""
    ).replace(
        "    vllm_kwargs: {}  # none yet\n",
        "    vllm_kwargs:  # none yet\n      limit_mm_per_prompt:\n        image: 2   # two images\n",
    )
    assert read(edited)["policy"]["generation"]["vllm_kwargs"] == {"limit_mm_per_prompt": {"image": 2}}


def test_edits_keep_crlf_line_endings() -> None:
    """A file written with CRLF keeps CRLF on every line, new ones included."""
    text = "a:\r\n  b: 1\r\n  c: 2\r\n"
    edited = insert_value(text, ("a", "d"), 3)
    assert edited == "a:\r\n  b: 1\r\n  c: 2\r\n  d: 3\r\n"
    assert remove_entry(text, ("a", "b")) == "a:\r\n  c: 2\r\n"


JSON_SCALARS = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
)


@given(JSON_SCALARS)
def test_rendered_scalars_read_back_as_the_same_value(value: object) -> None:
    """Invariant: render_scalar's text, read by the recipe loader, is the value it rendered (same type)."""
    try:
        text = render_scalar(value)
    except ValueError:
        return  # a string YAML cannot hold (control characters): refused, never written wrong
    read_back = read(f"k: {text}\n")["k"]
    assert read_back == value
    assert type(read_back) is type(value)


_DOUBLING_ALIASES = """\
import sys
from rl_contracts.config.yaml_edits import Declined, insert_value
lines = ["l0: &l0\\n  k: 1\\n"] + [f"l{i}: &l{i}\\n  x: *l{i - 1}\\n  y: *l{i - 1}\\n" for i in range(1, 60)]
result = insert_value("".join(lines), ("new", "key"), 1)
sys.exit(0 if not isinstance(result, Declined) and result.endswith("new:\\n  key: 1\\n") else 1)
"""


def test_an_edit_of_doubling_aliases_takes_linear_time() -> None:
    """Sixty levels of mappings each naming the one below twice (2**59 paths through 60 nodes): the edit reads
    each node once and finishes (in a child process, so a regression fails by timeout instead of hanging)."""
    done = subprocess.run(
        [sys.executable, "-c", _DOUBLING_ALIASES], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
