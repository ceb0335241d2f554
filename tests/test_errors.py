"""The error hierarchy and the bounded-message helpers (SPEC §0.3, §0.4)."""

from __future__ import annotations

import json
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
    (errors.WeightVersionError, (ValueError,)),
    (errors.LogprobContractError, (ValueError,)),
    (errors.LogprobMismatchError, (errors.LogprobContractError, ValueError)),
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


# --- Across Ray (SPEC §0.3, second release) -------------------------------------------------------------------


class _StandInRayError(Exception):
    """Stands in for ``ray.exceptions.RayError``."""


class _StandInRayTaskError(_StandInRayError):
    """Stands in for ``ray.exceptions.RayTaskError``: a traceback text and the cause object."""

    def __init__(self, function_name: str, traceback_str: str, cause: BaseException) -> None:
        super().__init__(function_name, traceback_str, cause)
        self.function_name = function_name
        self.traceback_str = traceback_str
        self.cause = cause

    def __str__(self) -> str:
        return f"\x1b[36mray::{self.function_name}()\x1b[39m (pid=4242)\n{self.traceback_str}"


def _ray_wrapped(cause: BaseException, traceback_lines: int = 120) -> BaseException:
    """The driver-side exception built the way Ray builds ``RayTaskError(X)``: a class made at run time."""
    traceback_str = (
        "".join(
            f'\x1b[31m  File "/tmp/actor.py", line {i}, in check\x1b[0m\n' for i in range(traceback_lines)
        )
        + f"{type(cause).__name__}: {cause}"
    )
    outer = _StandInRayTaskError("Checker.check", traceback_str, cause)
    text = str(outer)

    def init(self: Any, cause: BaseException) -> None:
        self.cause = cause
        self.args = (cause,)

    def getattr_(self: Any, name: str) -> Any:
        return getattr(self.cause, name)

    dual = type(
        f"RayTaskError({type(cause).__name__})",
        (_StandInRayTaskError, type(cause)),
        {"__init__": init, "__getattr__": getattr_, "__str__": lambda self: text},
    )
    return dual(cause)  # type: ignore[no-any-return]


def _library_error(cls: type[ContractError]) -> ContractError:
    """An instance of ``cls`` with every structured attribute set and a message at the 2,000-character cap."""
    return cls("m" * 5000, **{name: f"value-{i}" for i, name in enumerate(cls.attribute_names)})


ALL_CLASSES = [cls for cls, _ in HIERARCHY]


@pytest.mark.parametrize("cls", ALL_CLASSES)
def test_contract_error_returns_a_library_error_itself(cls: type[ContractError]) -> None:
    """contract_error(exc) is exc when exc's class is one of the library's."""
    err = _library_error(cls)
    assert errors.contract_error(err) is err


@pytest.mark.parametrize("cls", ALL_CLASSES)
def test_stand_in_wrapper_breaks_the_contract_as_ray_does(cls: type[ContractError]) -> None:
    """The stand-in is caught by the cause's class but has an unbounded str, the cause as args[0], no pickle."""
    cause = _library_error(cls)
    wrapped = _ray_wrapped(cause)
    assert isinstance(wrapped, cls)
    assert isinstance(wrapped, _StandInRayTaskError)
    assert len(str(wrapped)) > MAX_MESSAGE_CHARS
    assert "\x1b[31m" in str(wrapped)
    assert wrapped.args[0] is cause
    for name in cls.attribute_names:
        assert getattr(wrapped, name) == getattr(cause, name)
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        pickle.dumps(wrapped)
    with pytest.raises(AssertionError, match=r"is a wrapper, not a library class; check contract_error"):
        assert_contract_error(wrapped)


@pytest.mark.parametrize("cls", ALL_CLASSES)
def test_contract_error_unwraps_the_ray_dual_class(cls: type[ContractError]) -> None:
    """contract_error of RayTaskError(X) is the cause: own class, bounded message, attributes, and it pickles."""
    cause = _library_error(cls)
    found = errors.contract_error(_ray_wrapped(cause))
    assert found is cause
    assert type(found) is cls
    assert_contract_error(found)
    assert len(str(found)) == MAX_MESSAGE_CHARS


def test_contract_error_unwraps_nested_wrappers_and_cause_chains() -> None:
    """A wrapper of a wrapper, a plain RayTaskError and a `raise ... from` chain all lead to the library error."""
    cause = errors.RoutedExpertsError("routes", routes=3, expected=4)
    nested = _StandInRayTaskError(
        "outer", "trace", _ray_wrapped(cause)
    )  # a task that re-raised an actor's error
    assert errors.contract_error(nested) is cause
    plain = _StandInRayTaskError("f", "trace", cause)
    assert errors.contract_error(plain) is cause

    def rollout() -> None:
        try:
            raise cause
        except errors.RoutedExpertsError as inner:
            raise RuntimeError("rollout failed") from inner

    with pytest.raises(RuntimeError) as info:
        rollout()
    assert errors.contract_error(info.value) is cause


def test_contract_error_follows_ray_cause_before_dunder_cause() -> None:
    """When both links hold a library error, Ray's `cause` wins; a non-exception `cause` is skipped."""
    by_ray = errors.EnvelopeError("ray", field="prefix")
    by_chain = errors.EnvelopeError("chain", field="dtype")
    wrapper = _StandInRayTaskError("f", "trace", by_ray)
    wrapper.__cause__ = by_chain
    assert errors.contract_error(wrapper) is by_ray
    odd = RuntimeError("odd")
    odd.cause = "not an exception"  # type: ignore[attr-defined]
    odd.__cause__ = by_chain
    assert errors.contract_error(odd) is by_chain


def test_contract_error_is_none_without_a_library_error() -> None:
    """A foreign exception, a chain without a library error and a cause cycle all give None."""
    assert errors.contract_error(ValueError("plain")) is None
    first, second = RuntimeError("a"), RuntimeError("b")
    first.__cause__, second.__cause__ = second, first
    assert errors.contract_error(first) is None
    self_caused = _StandInRayTaskError("f", "trace", ValueError("v"))
    self_caused.cause = self_caused
    assert errors.contract_error(self_caused) is None


def _chain_to(error: BaseException, links: int) -> BaseException:
    """``error`` behind ``links`` RuntimeErrors chained with ``raise ... from``."""
    current = error
    for i in range(links):
        outer = RuntimeError(f"hop {i}")
        outer.__cause__ = current
        current = outer
    return current


def test_contract_error_depth_is_bounded() -> None:
    """At most MAX_CAUSE_DEPTH exceptions are inspected: the exception itself and the next 31 along the chain."""
    err = errors.PromptFormatError("p", key="k")
    assert errors.contract_error(_chain_to(err, errors.MAX_CAUSE_DEPTH - 1)) is err
    assert errors.contract_error(_chain_to(err, errors.MAX_CAUSE_DEPTH)) is None


def test_contract_error_does_not_return_a_foreign_mixin_subclass() -> None:
    """A ContractError subclass mixing in a foreign class is not returned itself; one built on ours only is."""

    class Foreign(Exception):
        pass

    class Mixed(errors.EnvelopeError, Foreign):
        pass

    class Derived(errors.EnvelopeError):
        pass

    assert errors.contract_error(Mixed("m")) is None
    derived = Derived("d", field="value")
    assert errors.contract_error(derived) is derived


@pytest.mark.parametrize("cls", ALL_CLASSES)
def test_details_lists_class_message_and_every_attribute(cls: type[ContractError]) -> None:
    """details() is {"error", "message", **attributes} in attribute_names order, values unchanged."""
    err = _library_error(cls)
    record = err.details()
    assert list(record) == ["error", "message", *cls.attribute_names]
    assert record["error"] == cls.__name__
    assert record["message"] == str(err)
    for name in cls.attribute_names:
        assert record[name] == getattr(err, name)
    assert json.loads(json.dumps(record)) == record


def test_details_of_an_unwrapped_ray_error_names_the_library_class() -> None:
    """details() of what contract_error returns names the cause's class, not Ray's wrapper class."""
    wrapped = _ray_wrapped(errors.CounterSnapshotError("bad counter", key="vllm:prompt_tokens", value="-1"))
    found = errors.contract_error(wrapped)
    assert found is not None
    assert found.details() == {
        "error": "CounterSnapshotError",
        "message": "bad counter",
        "key": "vllm:prompt_tokens",
        "value": "-1",
    }


def test_attribute_names_are_public_tuples_of_declared_attributes() -> None:
    """Every class's attribute_names is a tuple of str, and an instance has each as an attribute (None unset)."""
    classes: list[type[ContractError]] = [ContractError, *ALL_CLASSES]
    for cls in classes:
        assert isinstance(cls.attribute_names, tuple)
        err = cls("x")
        for name in cls.attribute_names:
            assert isinstance(name, str)
            assert getattr(err, name) is None


def test_assert_contract_error_rejects_none() -> None:
    """None, what contract_error returns for a foreign exception, fails the invariant with a clear reason."""
    with pytest.raises(AssertionError, match="no library error"):
        assert_contract_error(errors.contract_error(ValueError("plain")))
