"""The console script's start-up: Python's cyclic garbage collector is paused while a command imports its code.

Importing pydantic, OmegaConf and the recipe rules builds tens of thousands of long-lived objects (schemas,
validators, model classes); each collection the interpreter starts meanwhile walks all of them and frees nothing,
about 10 ms of a ``validate`` run.  :func:`pause_collection` (called by ``console_main`` only, never by
:func:`rl_contracts.cli.main`, so an embedding process is left alone) disables the collector; a command that then
reads input of unbounded size calls :func:`imports_done` once its imports are in (``validate``: once its first
file, which creates that algorithm's models, is checked): the objects built so far move to the permanent
generation (``gc.freeze()``, never scanned again) and the collector runs again as before, so a run over many
recipes frees their garbage cycles (OmegaConf trees are cyclic) as it goes.  A command that never calls
it (``rules``, ``schema``: a fixed catalogue) ends with the collector paused.
"""

from __future__ import annotations

import gc

__all__ = ["imports_done", "pause_collection"]

_paused = False


def pause_collection() -> None:
    """Disable the cyclic collector until :func:`imports_done` (nothing if it is already disabled)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def imports_done() -> None:
    """Freeze what the imports built and re-enable the collector that :func:`pause_collection` disabled (nothing
    when it did not)."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()
