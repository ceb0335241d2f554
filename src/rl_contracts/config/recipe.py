"""Config contracts: recipe (being implemented)."""

from __future__ import annotations

__all__: list[str] = []
