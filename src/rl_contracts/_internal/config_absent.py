"""The one marker of an absent key, :data:`ABSENT` (``repr`` ``<absent>``), written in issues and errors as
:data:`MISSING_VALUE` (SPEC §1.8: ``"<missing>"``).
"""

from __future__ import annotations

import enum
from typing import Final

from .messages import render

__all__ = ["ABSENT", "MISSING_VALUE", "Absent", "render_value"]

MISSING_VALUE: Final = "<missing>"
"""The ``value`` text of an issue or error about an absent key."""


class Absent(enum.Enum):
    """The type of :data:`ABSENT`, its one member (which pickles to itself: reports cross Ray processes)."""

    ABSENT = "<absent>"

    def __repr__(self) -> str:
        return "<absent>"

    __str__ = __repr__


ABSENT: Final = Absent.ABSENT
"""The value of an absent key (``repr`` ``<absent>``)."""


def render_value(value: object) -> str:
    """``value`` as an issue or error shows it: :data:`MISSING_VALUE` for :data:`ABSENT`, else ``render(value)``."""
    return MISSING_VALUE if value is ABSENT else render(value)
