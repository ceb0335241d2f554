"""Message rendering shared by every module: the bounded-length rules of SPEC §0.4.

Internal: library modules compose every message with :func:`shorten`, :func:`render`, :func:`render_name` and
:func:`render_list`; nothing else formats long lists.  Users read the bound as
:data:`rl_contracts.errors.MAX_MESSAGE_CHARS`.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable

__all__ = [
    "CONTROL_CHARACTERS",
    "MAX_LIST_ITEMS",
    "MAX_MESSAGE_CHARS",
    "MAX_VALUE_CHARS",
    "printable",
    "render",
    "render_list",
    "render_name",
    "shorten",
    "type_name",
]

MAX_MESSAGE_CHARS = 2000
"""Upper bound on the length of every error message."""
MAX_VALUE_CHARS = 200
"""Upper bound on one interpolated value."""
MAX_LIST_ITEMS = 8
"""How many elements of a long list a message shows before ``... (N total)``."""


def shorten(text: str, n: int) -> str:
    """Return ``text`` when it has at most ``n`` characters, else its first ``n - 3`` followed by ``...``."""
    return text if len(text) <= n else text[: max(n - 3, 0)] + "..."


def _render_int(value: int) -> str:
    try:
        return shorten(str(value), MAX_VALUE_CHARS)
    except ValueError:  # beyond sys.get_int_max_str_digits()
        return f"<int of {value.bit_length()} bits>"


def render(value: object) -> str:
    """Render one interpolated value: ints in decimal, anything else as ``shorten(repr(value), 200)``.

    A ``repr`` that raises is rendered as ``<unrepresentable {type}>`` so a hostile object can never mask the
    error being reported.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return _render_int(value)
    return _bounded_text(value, repr)


def render_name(value: object) -> str:
    """Render a name (modality, dtype, label, quoted string) as ``shorten(str(value), 200)``."""
    return _bounded_text(value, str)


def _bounded_text(value: object, text_of: Callable[[object], str]) -> str:
    """``shorten(text_of(value), 200)``, or ``<unrepresentable {type}>`` when ``text_of`` raises."""
    try:
        text = text_of(value)
    except Exception:
        return f"<unrepresentable {type_name(value)}>"
    return shorten(text, MAX_VALUE_CHARS)


def type_name(value: object) -> str:
    """The ``__name__`` of ``value``'s class, shortened."""
    return shorten(type(value).__name__, MAX_VALUE_CHARS)


def render_list(items: Iterable[object], *, total: int | None = None) -> str:
    """Render ids, indices or keys as a list literal of at most 8 elements, then ``... (N total)``.

    ``total`` gives the count when ``items`` is a lazy prefix of a longer collection; a list or tuple is counted
    with ``len``, without a pass.
    """
    iterator = iter(items)
    head = list(itertools.islice(iterator, MAX_LIST_ITEMS))
    if total is not None:
        count = total
    elif isinstance(items, list | tuple):
        count = len(items)  # no pass over a long list just to count it
    else:
        count = len(head) + sum(1 for _ in iterator)
    body = "[" + ", ".join(render(item) for item in head) + "]"
    return body if count <= MAX_LIST_ITEMS else f"{body} ... ({count} total)"


CONTROL_CHARACTERS = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")
"""What :func:`printable` escapes: C0 (NUL, BEL, BS, TAB, LF, CR, ESC, ...), DEL, C1 (NEL, CSI, ...), the line and
paragraph separators and the bidirectional controls (which make a terminal show text in another order)."""

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(match: re.Match[str]) -> str:
    character = match.group()
    named = _NAMED.get(character)
    if named is not None:
        return named
    code = ord(character)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every character of :data:`CONTROL_CHARACTERS` written as a Python escape (``\\n``,
    ``\\r``, ``\\t``, ``\\x1b``, ``\\u2028``), so that text from a recipe can never end an output line, start
    a new one, move the cursor or send a terminal sequence.  Other characters, backslashes included, are kept.

    >>> printable("key\\n::error::x\\x1b[31m")
    'key\\\\n::error::x\\\\x1b[31m'
    """
    return CONTROL_CHARACTERS.sub(_escaped, text)
