"""The ``metrics`` sub-command (placeholder until implemented)."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["register"]


def register(commands: Any) -> None:
    """Add the sub-command(s) of this module to ``commands`` (an argparse sub-parsers action)."""
    del commands


def _unused(args: argparse.Namespace) -> int:
    return 0
