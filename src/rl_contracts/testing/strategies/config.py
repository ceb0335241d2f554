"""Hypothesis strategies for the config contracts."""

from __future__ import annotations

__all__: list[str] = []
