"""Tests for safe reading of recipe files (config/loading/reading.py): file kinds, size, encoding, nesting, aliases."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from rl_contracts.cli import main
from rl_contracts.config import load_recipe
from rl_contracts.config.loading.limits import Limits
from rl_contracts.errors import ContractTypeError, RecipeLoadError
from rl_contracts.testing.strategies import minimal_vllm_generation


def refused(path: Path, **kwargs: object) -> RecipeLoadError:
    """The ``RecipeLoadError`` that loading ``path`` raises."""
    with pytest.raises(RecipeLoadError) as info:
        load_recipe(path, **kwargs)  # type: ignore[arg-type]
    return info.value


def nested(kind: str, depth: int) -> str:
    """A recipe whose key ``a`` holds ``depth`` nested flow lists or maps."""
    if kind == "list":
        return "a: " + "[" * depth + "]" * depth + "\n"
    return "a: " + "{b: " * depth + "1" + "}" * depth + "\n"


@pytest.mark.parametrize("kind", ["list", "map"])
@pytest.mark.parametrize("depth", [33, 100, 999, 30_000])
def test_deep_nesting_is_refused_as_v6(tmp_path: Path, kind: str, depth: int) -> None:
    """Nesting of 33 to 30,000 levels of lists or maps is a V6 refusal naming the limit, never a RecursionError."""
    path = tmp_path / "deep.yaml"
    path.write_text(nested(kind, depth), encoding="utf-8")
    error = refused(path)
    assert error.code == "V6"
    assert "nest" in error.message
    assert "limit 32 levels" in error.message


def test_nesting_at_the_limit_loads(tmp_path: Path) -> None:
    """A document exactly at the default depth limit (32 levels: the root mapping and 31 inside) loads."""
    path = tmp_path / "deep.yaml"
    path.write_text(nested("map", 31), encoding="utf-8")
    assert load_recipe(path).status == "skipped"


def test_deep_nesting_in_a_block_sequence_and_in_a_parent(tmp_path: Path) -> None:
    """Nesting anywhere counts: block-style ``- - - x`` lines and a parent file are refused the same way."""
    parent = tmp_path / "parent.yaml"
    parent.write_text("x:\n  " + "- " * 200 + "1\n", encoding="utf-8")
    child = tmp_path / "child.yaml"
    child.write_text("defaults: parent.yaml\n", encoding="utf-8")
    error = refused(child)
    assert (error.code, error.file) == ("V6", str(parent))


def test_alias_bomb_is_refused_before_omegaconf(tmp_path: Path) -> None:
    """Nested aliases that expand past ``Limits.nodes`` are V6 (our bound, on any OmegaConf version)."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 7)]
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    error = refused(path)
    assert error.code == "V6"
    assert "100,000 nodes" in error.message
    assert "YAML syntax error" not in error.message


def test_node_limit_is_a_parameter(tmp_path: Path) -> None:
    """A small ``Limits.nodes`` refuses an honest recipe with a message that says why, not a syntax error."""
    path = tmp_path / "big.yaml"
    path.write_text("".join(f"k{i}: {i}\n" for i in range(60)), encoding="utf-8")
    assert load_recipe(path).status == "skipped"
    error = refused(path, limits=Limits(nodes=100))
    assert error.code == "V6"
    assert "more than 100 nodes" in error.message


def test_more_keys_than_omegaconf_caps_load(tmp_path: Path) -> None:
    """12,000 keys (beyond OmegaConf 2.4's 10,000-node cap) are validated, not reported as a YAML error."""
    path = tmp_path / "big.yaml"
    path.write_text("".join(f"k{i}: {i}\n" for i in range(6_000)), encoding="utf-8")
    assert len(load_recipe(path).document) == 6_000


def test_recursive_alias_is_a_load_error(tmp_path: Path) -> None:
    """A YAML alias inside the node it names is refused (V1), not expanded."""
    path = tmp_path / "loop.yaml"
    path.write_text("a: &a\n  b: *a\n", encoding="utf-8")
    error = refused(path)
    assert error.code is None
    assert "refers to a mapping or list that contains it" in error.message


def test_file_over_the_size_limit_is_refused(tmp_path: Path) -> None:
    """A file larger than ``Limits.file_bytes`` is V6 before it is read; the default limit is 4 MiB."""
    path = tmp_path / "big.yaml"
    path.write_text("a: " + "x" * 200 + "\n", encoding="utf-8")
    error = refused(path, limits=Limits(file_bytes=100))
    assert error.code == "V6"
    assert "204 bytes" in error.message
    assert "limit 100 bytes" in error.message
    path.write_bytes(b"# " + b"x" * (4 * 2**20) + b"\n")
    assert refused(path).code == "V6"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"a: 1\nb: \xff\xfe\n", "not UTF-8 text (byte 0xff at line 2, column 4)"),
        (b"a: 1\nb: x\x00y\n", "holds a NUL byte at line 2, column 5"),
    ],
)
def test_bytes_that_are_not_text_are_refused_with_their_place(
    tmp_path: Path, content: bytes, message: str
) -> None:
    """Non-UTF-8 bytes and NUL bytes are V1 load errors naming the line and column."""
    path = tmp_path / "r.yaml"
    path.write_bytes(content)
    error = refused(path)
    assert message in error.message
    assert error.line == 2


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    """A FIFO given as the recipe is refused at once (opened non-blocking, checked with fstat)."""
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    assert "a FIFO (named pipe), not a regular file" in refused(fifo).message


@pytest.mark.parametrize(
    ("make", "what"),
    [
        (lambda d: d, "a directory"),
        (lambda d: Path(os.devnull), "a character device"),
    ],
)
def test_non_regular_files_are_refused(tmp_path: Path, make: object, what: str) -> None:
    """A directory and a device are not recipes."""
    path = make(tmp_path)  # type: ignore[operator]
    assert f"it is {what}, not a regular file" in refused(path).message


def test_a_symlink_loop_is_refused(tmp_path: Path) -> None:
    """A symlink loop, as the recipe or as a parent, is a load error."""
    (tmp_path / "a.yaml").symlink_to(tmp_path / "b.yaml")
    (tmp_path / "b.yaml").symlink_to(tmp_path / "a.yaml")
    assert refused(tmp_path / "a.yaml").code is None
    child = tmp_path / "child.yaml"
    child.write_text("defaults: a.yaml\n", encoding="utf-8")
    assert refused(child).code is None


def test_keys_with_unicode_digits_are_located(tmp_path: Path) -> None:
    """A key such as ``"²"`` (``isdigit()`` but not ``int()``) reaches an issue with its line, no ValueError."""
    generation = {**minimal_vllm_generation(), "²": 1, "٣": 2, "": 3, "\x1b[31m": 4}
    path = tmp_path / "r.yaml"
    path.write_text(json.dumps({"policy": {"generation": generation}}, indent=1), encoding="utf-8")
    issues = load_recipe(path).issues
    lines = {issue.path: issue.line or 0 for issue in issues}
    text = path.read_text(encoding="utf-8").splitlines()
    assert text[lines["policy.generation.²"] - 1].strip().startswith('"\\u00b2"')
    assert text[lines["policy.generation.٣"] - 1].strip().startswith('"\\u0663"')
    assert len(issues) == 4


def test_limits_are_checked() -> None:
    """Every bound of ``Limits`` is a positive int; ``load_recipe`` checks ``limits`` and ``root``."""
    with pytest.raises(ContractTypeError, match=r"limits\.depth"):
        Limits(depth=0)
    with pytest.raises(ContractTypeError, match="limits"):
        load_recipe("r.yaml", limits={"depth": 3})  # type: ignore[arg-type]
    with pytest.raises(ContractTypeError, match="root"):
        load_recipe("r.yaml", root=5)  # type: ignore[arg-type]


@pytest.mark.parametrize("form", ["human", "json", "github"])
def test_cli_refuses_with_exit_2_and_one_line_in_every_format(
    tmp_path: Path, form: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A refused recipe is exit status 2 with one line naming the limit, in every format; no traceback."""
    path = tmp_path / "deep.yaml"
    path.write_text(nested("list", 5_000), encoding="utf-8")
    assert main(["validate", "--format", form, str(path)]) == 2
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    if form == "json":
        (report,) = json.loads(out)
        (issue,) = report["issues"]
        assert (report["status"], issue["code"]) == ("error", "V6")
    else:
        assert "V6" in out
        assert "nest" in out
    assert sys.getrecursionlimit() >= 1000
