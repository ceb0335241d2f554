"""The ``rl-contracts`` console script: ``validate``, ``rules``, ``schema`` and ``metrics``, and ``--version``.

Exit status: 0 success, 1 an invalid recipe, 2 bad usage, an unreadable file or an unreachable engine.  The CLI
never prints a traceback for bad input, and imports neither torch nor vLLM.

Start-up is kept short for pre-commit hooks (SPEC §0.2): building the parser imports the standard library only,
each command imports what it needs when it runs, and the console script does not load pydantic plugins and does
not collect garbage while a command imports (:mod:`.startup`).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Sequence

from .. import __version__
from . import metrics, rules, schema, startup, validate

__all__ = ["build_parser", "console_main", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with one sub-command per concern; ``--version`` prints ``rl-contracts {version}``."""
    parser = argparse.ArgumentParser(
        prog="rl-contracts",
        description="Fail-closed contracts between RL trainers and vLLM.",
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"rl-contracts {__version__}",
        help="print rl-contracts VERSION and exit",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    validate.register(commands)
    rules.register(commands)
    schema.register(commands)
    metrics.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return its exit status (``SystemExit`` from argparse carries 2 for usage errors, 0 for
    ``--help`` and ``--version``)."""
    args = build_parser().parse_args(argv)
    status: int = args.run(args)
    return status


def console_main() -> None:
    """Entry point of the ``rl-contracts`` console script (and of ``python -m rl_contracts.cli``).

    It sets ``PYDANTIC_DISABLE_PLUGINS=__all__`` in its own process unless the variable is set: looking for
    pydantic plugins reads the entry points of every installed distribution (2 ms in this repository's dev
    environment, more in a larger one), and no plugin has anything to observe in a config check.  :func:`main` leaves the environment alone.

    The cyclic garbage collector is paused while the command imports its code (:mod:`.startup`).  Once the
    command has run it calls ``gc.freeze()``: the interpreter's shutdown then no longer runs its cyclic
    collections over every object the run built (pydantic's schemas, OmegaConf's nodes), about 60 ms of CPU per
    ``validate``; shutdown is otherwise unchanged (``atexit`` handlers run, streams are flushed).  It ends the
    process (it always raises ``SystemExit``); a caller that catches that and carries on can ``gc.unfreeze()``.
    """
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    startup.pause_collection()
    try:
        status = main()
    finally:
        gc.freeze()
    sys.exit(status)
