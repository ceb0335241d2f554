"""Hypothesis strategies for the splice contracts."""

from __future__ import annotations

__all__: list[str] = []
