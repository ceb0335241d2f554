"""Config contracts: models (being implemented)."""

from __future__ import annotations

__all__: list[str] = []
