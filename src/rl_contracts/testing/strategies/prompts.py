"""Hypothesis strategies for the prompts contracts."""

from __future__ import annotations

__all__: list[str] = []
