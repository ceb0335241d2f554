"""Config contracts: refit_rules (being implemented)."""

from __future__ import annotations

__all__: list[str] = []
