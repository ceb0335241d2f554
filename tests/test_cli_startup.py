"""Tests for the console script's start-up (cli/startup.py): the collector is paused while a command imports, and
``validate`` and ``metrics`` turn it back on before they read input."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from rl_contracts.cli import main, startup

RECIPE = Path(__file__).parent / "data" / "recipes" / "grpo_qwen3_8b.yaml"


@pytest.fixture
def collector() -> Iterator[None]:
    """Leave the collector as the test found it: enabled, nothing frozen, no pause pending."""
    was_enabled = gc.isenabled()
    try:
        yield
    finally:
        startup.imports_done()
        gc.unfreeze()
        if was_enabled:
            gc.enable()
        else:
            gc.disable()


def test_pause_then_imports_done_restores_the_collector(collector: None) -> None:
    """A pause disables the collector; imports_done freezes what exists and enables it again, once."""
    gc.enable()
    startup.pause_collection()
    assert not gc.isenabled()
    before = gc.get_freeze_count()
    startup.imports_done()
    assert gc.isenabled()
    assert gc.get_freeze_count() > before
    gc.disable()
    startup.imports_done()  # no pause pending: the caller's choice stands
    assert not gc.isenabled()


def test_a_collector_the_caller_disabled_stays_disabled(collector: None) -> None:
    """pause_collection does not take over a collector that was already off, so imports_done leaves it off."""
    gc.disable()
    startup.pause_collection()
    startup.imports_done()
    assert not gc.isenabled()


def test_validate_collects_again_before_reading_recipes(
    collector: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """After its imports, validate has the collector running: a paused start-up does not last into the recipes."""
    gc.enable()
    startup.pause_collection()
    assert main(["validate", str(RECIPE)]) == 0
    capsys.readouterr()
    assert gc.isenabled()


def test_main_alone_never_pauses(collector: None, capsys: pytest.CaptureFixture[str]) -> None:
    """Only console_main pauses: main() in an embedding process leaves the collector and the freeze alone."""
    gc.enable()
    frozen = gc.get_freeze_count()
    assert main(["validate", str(RECIPE)]) == 0
    capsys.readouterr()
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen
