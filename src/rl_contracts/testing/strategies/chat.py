"""Hypothesis strategies for the chat contracts."""

from __future__ import annotations

__all__: list[str] = []
