"""Hypothesis strategies for the metrics contracts."""

from __future__ import annotations

__all__: list[str] = []
