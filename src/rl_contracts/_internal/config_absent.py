"""The one marker of an absent key, :data:`ABSENT` (``repr`` ``<absent>``), written in issues and errors as
:data:`MISSING_VALUE` (SPEC §1.8: ``"<missing>"``).
"""

from __future__ import annotations

from typing import Final

from .messages import render

__all__ = ["ABSENT", "MISSING_VALUE", "Absent", "render_value"]

MISSING_VALUE: Final = "<missing>"
"""The ``value`` text of an issue or error about an absent key."""


class Absent:
    """The type of :data:`ABSENT`: a single instance that pickles to itself (reports cross Ray processes)."""

    _instance: Absent | None = None

    def __new__(cls) -> Absent:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "<absent>"

    def __reduce__(self) -> str:
        return "ABSENT"


ABSENT: Final = Absent()
"""The value of an absent key (``repr`` ``<absent>``)."""


def render_value(value: object) -> str:
    """``value`` as an issue or error shows it: :data:`MISSING_VALUE` for :data:`ABSENT`, else ``render(value)``."""
    return MISSING_VALUE if value is ABSENT else render(value)
