"""The ``--select``/``--ignore`` filter over finding codes (``rl_contracts.config.codes.code_selected``)."""

from __future__ import annotations

import pytest

from rl_contracts.config.catalogue import CODES
from rl_contracts.config.codes import code_selected


@pytest.mark.parametrize(
    ("code", "select", "ignore", "expected"),
    [
        ("P7", (), (), True),
        ("P7", ("P",), (), True),
        ("P7", ("P7",), (), True),
        ("P17", ("P1",), (), False),
        ("P1", ("P1",), (), True),
        ("P10", ("P10",), (), True),
        ("P10", ("P1",), (), False),
        ("C10", ("C1",), (), False),
        ("W1", ("P",), (), False),
        ("P7", ("P",), ("P7",), False),
        ("P7", (), ("P",), False),
        ("P17", (), ("P1",), True),
        ("K1", ("K", "V"), (), True),
    ],
)
def test_a_pattern_is_a_whole_code_or_a_family_prefix(
    code: str, select: tuple[str, ...], ignore: tuple[str, ...], expected: bool
) -> None:
    """A pattern ending in a digit matches only that code (P1 is not P10-P19); a letter prefix a whole family."""
    assert code_selected(code, select=select, ignore=ignore) is expected


def test_every_catalogue_code_selects_itself_and_only_itself() -> None:
    """Each code of the catalogue, used as a pattern, selects exactly one catalogue code: itself."""
    names = [entry.code for entry in CODES]
    assert len(names) == len(set(names))
    for name in names:
        assert [other for other in names if code_selected(other, select=[name])] == [name]
