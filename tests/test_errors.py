"""The error hierarchy and the bounded-message helpers (SPEC §0.3, §0.4)."""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import rl_contracts
from rl_contracts import errors
from rl_contracts._internal.messages import render, render_list, render_name, shorten
from rl_contracts.config import load_recipe
from rl_contracts.errors import MAX_MESSAGE_CHARS, ContractError
from rl_contracts.testing import assert_contract_error
from rl_contracts.weights import check_weight_versions

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
    (errors.TokenizerMismatchError, (ValueError,)),
    (errors.BaselineError, (errors.ConfigContractError, ValueError)),
    (errors.RolloutBatchError, (ValueError,)),
    (errors.RolloutPromptError, (errors.RolloutPromptMismatchError, errors.RolloutBatchError, ValueError)),
    (errors.RolloutWeightVersionError, (errors.WeightVersionError, errors.RolloutBatchError, ValueError)),
    (errors.ForbiddenTokenError, (errors.RolloutBatchError, ValueError)),
    (errors.RouteStitchError, (errors.RoutedExpertsError, ValueError)),
    (errors.TurnTokenMismatchError, (ValueError,)),
    (errors.LogprobContractError, (ValueError,)),
    (errors.LogprobMismatchError, (errors.LogprobContractError, ValueError)),
    (errors.SamplingParamsError, (ValueError,)),
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


# --- closed library API: contract_error's argument, JSON-representable details() ---------------------------------


@pytest.mark.parametrize("value", [None, "RoutedExpertsError", 7, ValueError, errors.EnvelopeError])
def test_contract_error_of_a_non_exception_is_a_contract_type_error(value: object) -> None:
    """contract_error(x) for an x that is no exception instance (None, a str, an int, a class) raises
    ContractTypeError naming the argument, instead of an AttributeError from inside the walk."""
    with pytest.raises(errors.ContractTypeError) as info:
        errors.contract_error(value)  # type: ignore[arg-type]
    assert (info.value.argument, info.value.actual) == ("exc", type(value).__name__)
    assert info.value.expected == "an exception instance"
    assert_contract_error(info.value)


RECIPES = Path(__file__).parent / "data" / "recipes"


def _recipe_error() -> errors.RecipeError:
    """A real RecipeError from loading a recipe with schema errors (issues are ConfigIssue models, skipped rules
    dataclasses)."""
    with pytest.raises(errors.RecipeError) as info:
        load_recipe(RECIPES / "broken" / "schema_errors.yaml")
    assert info.value.issues
    assert info.value.skipped
    return info.value


def _recipe_load_error() -> errors.RecipeLoadError:
    """A real RecipeLoadError from loading a file with a YAML syntax error (file, line and column set)."""
    with pytest.raises(errors.RecipeLoadError) as info:
        load_recipe(RECIPES / "broken" / "syntax_error.yaml")
    return info.value


def _weight_version_error() -> errors.WeightVersionError:
    """A real WeightVersionError from a disallowed label."""
    output = SimpleNamespace(index=1, token_ids=[5, 6, 7], weight_versions=[("7", 0, 2), ("8", 2, 3)])
    with pytest.raises(errors.WeightVersionError) as info:
        check_weight_versions(output, allowed={"8"})
    return info.value


def _logprob_error(mismatch: bool) -> errors.LogprobContractError:
    """A real LogprobContractError (a NaN logprob) or LogprobMismatchError (every token disagrees)."""
    import torch

    from rl_contracts.logprobs import check_logprob_agreement

    learner = torch.full((2, 4), -2.0) if mismatch else torch.tensor([[float("nan")] * 4] * 2)
    with pytest.raises(errors.LogprobContractError) as info:
        check_logprob_agreement(torch.full((2, 4), -1.0), learner)
    return info.value


# One instance of every concrete class, with attribute values of the types the library itself stores.
REALISTIC: dict[type[ContractError], Callable[[], ContractError]] = {
    errors.ContractTypeError: lambda: errors.ContractTypeError.for_value("allowed", "a collection", "8"),
    errors.PlaceholderTypeError: lambda: errors.PlaceholderTypeError(
        "bad range",
        argument="mm_placeholders['image'][0].offset",
        expected="an int",
        actual="float",
        modality="image",
        item_index=0,
        offset=None,
        length=576,
    ),
    errors.PlaceholderRemapError: lambda: errors.PlaceholderRemapError(
        "out of bounds", modality="image", item_index=1, offset=4096, length=576
    ),
    errors.SpliceError: lambda: errors.SpliceError(
        "terminator 3 not found", terminators=(2, 151645), count_needed=3, count_seen=1
    ),
    errors.RoutedExpertsError: lambda: errors.RoutedExpertsError(
        "too few routes",
        routes=10,
        expected=12,
        valid_length=13,
        padded_length=16,
        num_cached_tokens=0,
        routes_start=0,
        min_id=-1,
        max_id=255,
        dtype_name="int16",
        limit=32767,
    ),
    errors.EnvelopeError: lambda: errors.EnvelopeError("bad length", field="length"),
    errors.RolloutPromptMismatchError: lambda: errors.RolloutPromptMismatchError(
        "differs", expected_length=3, actual_length=3, first_mismatch_index=2
    ),
    errors.RolloutBatchError: lambda: errors.RolloutBatchError(
        "row 3 choice 0 was aborted", row=3, choice=0, check="finish_reason"
    ),
    errors.RolloutPromptError: lambda: errors.RolloutPromptError(
        "row 1: differs",
        expected_length=3,
        actual_length=3,
        first_mismatch_index=2,
        row=1,
        choice=None,
        check="prompt",
    ),
    errors.RolloutWeightVersionError: lambda: errors.RolloutWeightVersionError(
        "row 0 choice 1: output tokens [0, 4) were sampled by weights 'step-6'",
        output_index=1,
        span_index=0,
        version="step-6",
        start=0,
        end=4,
        token_count=4,
        row=0,
        choice=1,
        check="weight_versions",
    ),
    errors.ForbiddenTokenError: lambda: errors.ForbiddenTokenError(
        "row 2 choice 1: generated <|image_pad|>",
        row=2,
        choice=1,
        check="forbidden_token",
        position=7,
        token_id=151655,
    ),
    errors.RouteStitchError: lambda: errors.RouteStitchError(
        "turn 1 leaves token 12 without a route", turn=1, position=12, routes=9, expected=12
    ),
    errors.TurnTokenMismatchError: lambda: errors.TurnTokenMismatchError(
        "turn 1: the separator is missing", turn=1, position=9, missing_ids=(198,), extra_ids=()
    ),
    errors.LogprobContractError: lambda: _logprob_error(mismatch=False),
    errors.LogprobMismatchError: lambda: _logprob_error(mismatch=True),
    errors.SamplingParamsError: lambda: errors.SamplingParamsError(
        "the teacher scores at temperature=1.0 but the rollout sampled at temperature=0.8",
        field="temperature",
        fields=("temperature",),
        rollout_value=0.8,
        scoring_value=1.0,
        scorer="teacher",
    ),
    errors.PromptFormatError: lambda: errors.PromptFormatError(
        "bad row", key="input_ids", row=1, value="[1, 2]"
    ),
    errors.ChatResponseContractError: lambda: errors.ChatResponseContractError(
        "missing",
        choice_index=0,
        token_id=5,
        token_count=4,
        logprob_count=3,
        missing_choice_indices=[1, 2],
        unexpected_output_indices=[3],
    ),
    errors.CounterSnapshotError: lambda: errors.CounterSnapshotError("negative", key="vllm:x", value="-1.0"),
    errors.BaselineError: lambda: errors.BaselineError(
        "baseline.json is not a findings baseline: version 9, expected 1",
        path="version",
        value="9",
        file="baseline.json",
    ),
    errors.TokenizerMismatchError: lambda: errors.TokenizerMismatchError(
        "tokenizers differ in: vocabulary",
        components=("vocabulary",),
        learner_digest="ab" * 32,
        engine_digest="cd" * 32,
    ),
    errors.ConfigContractError: lambda: errors.ConfigContractError("bad", path="vllm_cfg.x", value="3"),
    errors.UnsupportedConfigError: lambda: errors.UnsupportedConfigError(
        "bad", path="colocated", value="True"
    ),
    errors.RecipeError: _recipe_error,
    errors.RecipeLoadError: _recipe_load_error,
    errors.WeightVersionError: _weight_version_error,
}


def test_realistic_instances_cover_every_error_class() -> None:
    """REALISTIC holds an instance builder for every concrete ContractError subclass that errors.py defines."""
    defined = {
        value
        for value in vars(errors).values()
        if isinstance(value, type) and issubclass(value, ContractError) and value is not ContractError
    }
    assert set(REALISTIC) == defined


@pytest.mark.parametrize("cls", list(REALISTIC), ids=lambda cls: cls.__name__)
def test_details_of_every_class_round_trips_through_strict_json(cls: type[ContractError]) -> None:
    """json.dumps(details(), allow_nan=False) works for an instance of every class with realistic attributes,
    and json.loads gives the same record back (no tuple, model or dataclass left in it)."""
    error = REALISTIC[cls]()
    assert type(error) is cls
    record = error.details()
    assert list(record) == ["error", "message", *cls.attribute_names]
    assert json.loads(json.dumps(record, allow_nan=False)) == record


def test_details_of_a_recipe_error_gives_issues_and_skipped_rules_as_dicts() -> None:
    """RecipeError's findings (issues and skipped rules, both ``Finding`` models) become their JSON dumps."""
    error = _recipe_error()
    record = error.details()
    assert error.issues is not None
    assert error.skipped is not None
    assert record["issues"] == [issue.model_dump(mode="json") for issue in error.issues]
    assert record["skipped"] == [rule.model_dump(mode="json") for rule in error.skipped]
    assert all(isinstance(issue, dict) and issue["code"] for issue in record["issues"])


def test_details_of_a_splice_error_gives_its_terminators_as_a_list() -> None:
    """A tuple attribute becomes a list, the JSON array json.loads returns."""
    assert REALISTIC[errors.SpliceError]().details()["terminators"] == [2, 151645]


class _Unprintable:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ((1, (2, 3)), [1, [2, 3]]),
        (np.int64(7), 7),
        (np.float32(0.5), 0.5),
        (float("nan"), "nan"),
        (float("-inf"), "-inf"),
        ({"a": (1,), 2: None}, {"a": [1], "2": None}),
        (frozenset({"b", "a"}), ["a", "b"]),
        (object, "<class 'object'>"),
        (_Unprintable(), "<unrepresentable _Unprintable>"),
        ("x" * 5000, "x" * 5000),
    ],
    ids=[
        "tuple",
        "numpy_int",
        "numpy_float",
        "nan",
        "inf",
        "dict",
        "frozenset",
        "class",
        "unprintable",
        "long_str",
    ],
)
def test_details_converts_what_json_cannot_hold(value: object, expected: object) -> None:
    """Tuples become lists, numpy scalars Python numbers, non-finite floats their repr, mapping keys strings, sets
    sorted lists and anything else its bounded repr; strings are unchanged."""
    record = errors.EnvelopeError("m", field=value).details()
    assert record["field"] == expected
    assert json.loads(json.dumps(record, allow_nan=False)) == record


def test_details_bounds_huge_ints_deep_nesting_and_cycles() -> None:
    """An int beyond 200 digits is rendered (json.dumps would fail past 4,300), nesting is cut at a bounded depth
    and a self-containing list ends; the record still dumps."""
    nested: list[Any] = []
    for _ in range(10_000):
        nested = [nested]
    cyclic: list[Any] = [1]
    cyclic.append(cyclic)
    for value in (10**5000, nested, cyclic):
        record = errors.EnvelopeError("m", field=value).details()
        text = json.dumps(record, allow_nan=False)
        assert len(text) < 10_000
    assert isinstance(errors.EnvelopeError("m", field=10**300).details()["field"], str)
    assert errors.EnvelopeError("m", field=10**150).details()["field"] == 10**150
