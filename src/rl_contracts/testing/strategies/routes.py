"""Hypothesis strategies for the routes contracts."""

from __future__ import annotations

__all__: list[str] = []
