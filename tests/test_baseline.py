"""The findings baseline (``rl_contracts.config.baseline``): entries, matching, the file format and its errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import JsonValue

from rl_contracts.config.baseline import (
    BASELINE_VERSION,
    BaselineEntry,
    compare_baseline,
    entry_for,
    read_baseline,
    write_baseline,
)
from rl_contracts.config.finding import Finding
from rl_contracts.errors import BaselineError


def finding(code: str, path: str, json_value: JsonValue, *, missing: bool = False) -> Finding:
    """A finding with what a baseline entry reads: code, path, the value as JSON, whether it is missing."""
    return Finding(
        code=code, path=path, value=repr(json_value), message="m", json_value=json_value, missing=missing
    )


P9 = finding("P9", "policy.train_global_batch_size", 512)


def test_entry_is_relative_to_the_baseline_folder_and_hashes_the_value(tmp_path: Path) -> None:
    """An entry names the recipe relative to the baseline's folder; a changed value changes its hash."""
    recipe = str(tmp_path / "recipes" / "a.yaml")
    entry = entry_for(recipe, P9, tmp_path)
    assert (entry.file, entry.code, entry.path) == ("recipes/a.yaml", "P9", "policy.train_global_batch_size")
    assert len(entry.value) == 16
    assert entry_for(recipe, finding("P9", P9.path, 700), tmp_path).value != entry.value
    assert entry_for(recipe, finding("P9", P9.path, None, missing=True), tmp_path).value != entry.value


def test_write_then_read_round_trips_sorted_entries(tmp_path: Path) -> None:
    """A written baseline reads back as the same entries, sorted, with the format version."""
    entries = [BaselineEntry("b.yaml", "W2", "x", "0" * 16), BaselineEntry("a.yaml", "P9", "y", "1" * 16)]
    file = tmp_path / "baseline.json"
    write_baseline(file, entries)
    assert json.loads(file.read_text())["rl_contracts_baseline"] == BASELINE_VERSION
    assert read_baseline(file).entries == tuple(sorted(entries))


def test_compare_splits_new_known_gone_and_untouched(tmp_path: Path) -> None:
    """Known findings match entries once each; unmatched entries of checked recipes are gone, others untouched."""
    a, b = str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml")
    other = BaselineEntry("c.yaml", "P7", "grpo.batch_multiplier", "2" * 16)
    fixed = BaselineEntry("a.yaml", "W2", "policy.generation.vllm_cfg.enable_thinking", "3" * 16)
    write_baseline(tmp_path / "base.json", [entry_for(a, P9, tmp_path), fixed, other])
    baseline = read_baseline(tmp_path / "base.json")
    new_finding = finding("K1", "policy.generation.vllm_cfg.tp", 1)
    result = compare_baseline(baseline, [(a, P9), (a, P9), (b, new_finding)], [a, b])
    assert result.known == ((a, P9),)
    assert result.new == ((a, P9), (b, new_finding))
    assert result.gone == (fixed,)
    assert result.untouched == (other,)
    assert result.shrunk(tmp_path) == tuple(sorted([entry_for(a, P9, tmp_path), other]))


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (None, "cannot be read"),
        (b"\xff\xfe", "is not JSON"),
        (b"{", "is not JSON"),
        (b"[]", "is not an rl-contracts baseline"),
        (b'{"rl_contracts_baseline": 2, "findings": []}', "format version 2"),
        (b'{"rl_contracts_baseline": true, "findings": []}', "format version True"),
        (b'{"rl_contracts_baseline": 1}', "is malformed"),
        (b'{"rl_contracts_baseline": 1, "findings": [{"file": "a"}]}', "findings[0]"),
        (
            b'{"rl_contracts_baseline": 1, "findings": [{"file": "a", "code": 7, "path": "", "value": "v"}]}',
            "findings[0].code",
        ),
    ],
)
def test_unusable_baselines_raise_never_read_as_empty(
    tmp_path: Path, content: bytes | None, fragment: str
) -> None:
    """A missing, non-JSON, foreign, version-mismatched or malformed baseline raises BaselineError."""
    file = tmp_path / "baseline.json"
    if content is not None:
        file.write_bytes(content)
    with pytest.raises(BaselineError) as raised:
        read_baseline(file)
    assert fragment in str(raised.value)
    assert raised.value.file == str(file)
    assert "--write-baseline" in str(raised.value)
