"""The error hierarchy and the bounded-message helpers (SPEC §0.3, §0.4)."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

import rl_contracts
from rl_contracts import errors
from rl_contracts._messages import render, render_list, render_name, shorten
from rl_contracts.errors import MAX_MESSAGE_CHARS, ContractError
from rl_contracts.testing import assert_contract_error

# (class, built-ins it must also be) — SPEC §0.3 table.
HIERARCHY: list[tuple[type[ContractError], tuple[type[BaseException], ...]]] = [
    (errors.ContractTypeError, (TypeError,)),
    (errors.PlaceholderTypeError, (errors.ContractTypeError, TypeError)),
    (errors.PlaceholderRemapError, (ValueError,)),
    (errors.SpliceError, (ValueError, AssertionError)),
    (errors.RoutedExpertsError, (ValueError,)),
    (errors.EnvelopeError, (ValueError,)),
    (errors.RolloutPromptMismatchError, (ValueError,)),
    (errors.PromptFormatError, (ValueError,)),
    (errors.ChatResponseContractError, (RuntimeError,)),
    (errors.CounterSnapshotError, (ValueError,)),
    (errors.ConfigContractError, (ValueError,)),
    (errors.UnsupportedConfigError, (errors.ConfigContractError, ValueError, AssertionError)),
    (errors.RecipeError, (errors.ConfigContractError, ValueError)),
    (errors.RecipeLoadError, (errors.ConfigContractError, ValueError)),
]


@pytest.mark.parametrize(("cls", "builtins"), HIERARCHY)
def test_each_error_is_a_contract_error_and_its_builtin(
    cls: type[ContractError], builtins: tuple[type[BaseException], ...]
) -> None:
    """Every concrete class is a ContractError and also the built-in the reference raises."""
    err = cls("boom")
    assert isinstance(err, ContractError)
    for builtin in builtins:
        assert isinstance(err, builtin)


@pytest.mark.parametrize(("cls", "builtins"), HIERARCHY)
def test_errors_survive_pickle_with_message_and_attributes(
    cls: type[ContractError], builtins: tuple[type[BaseException], ...]
) -> None:
    """A pickle round-trip keeps the class, the message and every structured attribute."""
    del builtins
    values = {name: f"v-{i}" for i, name in enumerate(cls.attribute_names)}
    err = cls("a message", **values)
    clone = pickle.loads(pickle.dumps(err))
    assert type(clone) is cls
    assert str(clone) == str(err) == clone.args[0] == "a message"
    for name, value in values.items():
        assert getattr(clone, name) == value


def test_attributes_that_do_not_apply_are_none() -> None:
    """Attributes not given at construction read as None."""
    err = errors.RoutedExpertsError("x", routes=3)
    assert err.routes == 3
    assert err.expected is None
    assert err.num_cached_tokens is None


def test_unknown_attribute_is_a_programming_error() -> None:
    """Constructing an error with an attribute it does not declare fails loudly."""
    with pytest.raises(TypeError, match="no attributes"):
        errors.EnvelopeError("x", routes=1)


def test_messages_are_cut_to_the_bound() -> None:
    """A message longer than 2,000 characters is cut with shorten()."""
    err = errors.PromptFormatError("x" * 10_000)
    assert len(str(err)) == MAX_MESSAGE_CHARS
    assert str(err).endswith("...")


@pytest.mark.parametrize(
    ("text", "n", "expected"),
    [("abc", 3, "abc"), ("abcd", 3, "..."), ("abcdef", 5, "ab..."), ("", 4, "")],
)
def test_shorten(text: str, n: int, expected: str) -> None:
    """shorten keeps short text and cuts long text to n characters ending in '...'."""
    assert shorten(text, n) == expected


def test_render_list_short_and_long() -> None:
    """Lists of at most 8 print whole; longer ones print 8 and the total (SPEC §0.4 example)."""
    assert render_list(range(3)) == "[0, 1, 2]"
    assert render_list(range(12)) == "[0, 1, 2, 3, 4, 5, 6, 7] ... (12 total)"
    assert render_list([3, 1, 2]) == "[3, 1, 2]"


def test_render_list_of_a_million_ids_is_short() -> None:
    """Summarising 10^6 ids stays short."""
    assert len(render_list(range(1_000_000))) < 80


def test_render_values_are_bounded() -> None:
    """Huge ints, long strings and hostile reprs all render within 200 characters."""
    assert render(12) == "12"
    assert len(render(10**5000)) <= 200  # beyond Python's int-to-str digit limit
    assert len(render("y" * 1000)) == 200
    assert len(render_name("z" * 1000)) == 200

    class Hostile:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

        def __str__(self) -> str:
            raise RuntimeError("no str")

    assert render(Hostile()) == "<unrepresentable Hostile>"
    assert render_name(Hostile()) == "<unrepresentable Hostile>"


def test_package_root_exports_version_and_errors_only() -> None:
    """`import rl_contracts` exposes __version__ and the error classes, nothing else."""
    exported = set(rl_contracts.__all__)
    assert "__version__" in exported
    for name in exported - {"__version__"}:
        assert issubclass(getattr(rl_contracts, name), ContractError)
    assert {cls.__name__ for cls, _ in HIERARCHY} | {"ContractError"} == exported - {"__version__"}


class _ForgetfulError(errors.ContractTypeError):
    """An error whose pickle round-trip drops its structured attributes."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.message,))


@pytest.mark.parametrize(
    ("error", "fragment"),
    [
        (ValueError("plain"), "ValueError escaped"),
        (errors.ContractTypeError("x" * 2001), None),
        (_ForgetfulError("m", argument="a"), "pickle changed an attribute"),
    ],
    ids=["not-a-contract-error", "long-message", "lossy-pickle"],
)
def test_assert_contract_error_rejects_what_breaks_invariant_1(
    error: BaseException, fragment: str | None
) -> None:
    """assert_contract_error fails for a foreign exception and a lossy pickle; a cut message still passes."""
    if fragment is None:
        assert_contract_error(error)  # the constructor cut the message to 2,000 characters
        assert len(str(error)) == 2000
        return
    with pytest.raises(AssertionError, match=fragment):
        assert_contract_error(error)


def test_assert_contract_error_accepts_a_library_error() -> None:
    """Every attribute, the message and the args survive pickle for a real error, so the check passes."""
    assert_contract_error(errors.RoutedExpertsError("m", routes=1, expected=2, dtype_name="int8"))


def test_render_list_with_total_reads_only_the_shown_prefix() -> None:
    """With ``total`` the iterator is read only for the shown elements, and ``total`` is the count ."""
    iterator = iter(range(20))
    assert render_list(iterator, total=20) == "[0, 1, 2, 3, 4, 5, 6, 7] ... (20 total)"
    assert next(iterator) == 8
    assert render_list([2, 1], total=30) == "[2, 1] ... (30 total)"
    assert render_list(range(12), total=5) == "[0, 1, 2, 3, 4, 5, 6, 7]"
