"""Exact error messages of ``splice_prefix_tokens`` and terminator matching at the int64 boundaries (SPEC §2.2)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from rl_contracts.errors import ContractTypeError, SpliceError
from rl_contracts.splice import PrefixSplice, splice_prefix_tokens
from rl_contracts.testing import assert_contract_error

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _splice(model: Any, template_prefix: Any, template: Any, **kwargs: Any) -> PrefixSplice:
    return splice_prefix_tokens(
        model_prefix_token_ids=model,
        template_prefix_token_ids=template_prefix,
        template_token_ids=template,
        **kwargs,
    )


class _Tokenizer:
    eos_token_id = 2

    @staticmethod
    def decode(ids: list[int]) -> str:
        return "<" + ",".join(map(str, ids)) + ">"


_TOO_FEW = (
    "EOS token #2 not found in template_token_ids (only found 1 EOS tokens total, searching for terminators [2])! "
    "template_prefix_token_ids=[2, 5, 2]; template_token_ids=[5, 2, 6]."
)

# (kwargs besides the three id lists, or the id lists overridden; the message as SPEC §2.2 quotes it, from its
# start; (terminators, needed, seen)).
SPLICE_ERRORS: list[tuple[dict[str, Any], str, tuple[Any, Any, Any]]] = [
    (
        {"terminator_ids": [], "eos_token_id": 2},
        "terminator_ids must not be empty when provided",
        ((), None, None),
    ),
    (
        {"tokenizer": SimpleNamespace(eos_token_id=None)},
        "Tokenizer must have an EOS token ID",  # SPEC §2.2 step 3 quotes this much
        (None, None, None),
    ),
    (
        {"template_prefix": [7, 8, 9], "template": [7, 8, 9, 2], "terminator_ids": [11, 2]},
        "No terminator token found in template_prefix_token_ids, so there is no splice boundary to find. "
        "Terminators searched for: [2, 11]. model_prefix_token_ids=[1, 2]; template_prefix_token_ids=[7, 8, 9]; "
        "template_token_ids=[7, 8, 9, 2]",
        ((2, 11), 0, None),
    ),
    (
        {"template_prefix": [7], "template": [7, 2], "terminator_ids": [*range(100, 110), 2]},
        "No terminator token found in template_prefix_token_ids, so there is no splice boundary to find. "
        "Terminators searched for: [2, 100, 101, 102, 103, 104, 105, 106] ... (11 total). "
        "model_prefix_token_ids=[1, 2]; template_prefix_token_ids=[7]; template_token_ids=[7, 2]",
        ((2, *range(100, 110)), 0, None),
    ),
    ({"eos_token_id": 2}, _TOO_FEW, ((2,), 2, 1)),
    # A tokenizer without ``decode`` (or with no tokenizer at all) adds no decoded text.
    ({"tokenizer": SimpleNamespace(eos_token_id=2)}, _TOO_FEW, ((2,), 2, 1)),
    (
        {"tokenizer": _Tokenizer()},
        _TOO_FEW + " Decoded template_prefix_token_ids: '<2,5,2>'; decoded template_token_ids: '<5,2,6>'.",
        ((2,), 2, 1),
    ),
    (
        {"terminator_ids": [2, *range(100, 110)]},
        "EOS token #2 not found in template_token_ids (only found 1 EOS tokens total, searching for terminators "
        "[2, 100, 101, 102, 103, 104, 105, 106] ... (11 total))! template_prefix_token_ids=[2, 5, 2]; "
        "template_token_ids=[5, 2, 6].",
        ((2, *range(100, 110)), 2, 1),
    ),
]


@pytest.mark.parametrize(("kwargs", "message", "attributes"), SPLICE_ERRORS)
def test_splice_error_messages(
    kwargs: dict[str, Any], message: str, attributes: tuple[Any, Any, Any]
) -> None:
    """Each SpliceError starts with its SPEC message (sorted terminators, summarised ids, decoded text) and carries
    its attributes."""
    arguments = dict(kwargs)
    template_prefix = arguments.pop("template_prefix", [2, 5, 2])
    template = arguments.pop("template", [5, 2, 6])
    with pytest.raises(SpliceError) as info:
        _splice([1, 2], template_prefix, template, **arguments)
    assert str(info.value).startswith(message)
    assert (info.value.terminators, info.value.count_needed, info.value.count_seen) == attributes
    assert_contract_error(info.value)


@pytest.mark.parametrize(
    ("kwargs", "argument", "actual"),
    [
        ({"eos_token_id": "2"}, "eos_token_id", "str"),
        ({"eos_token_id": True}, "eos_token_id", "bool"),
        ({"terminator_ids": {2: 3}}, "terminator_ids", "dict"),
        ({"terminator_ids": b"\x02"}, "terminator_ids", "bytes"),
        ({"terminator_ids": 2.0}, "terminator_ids", "float"),
        ({"tokenizer": SimpleNamespace(eos_token_id="</s>")}, "tokenizer.eos_token_id", "str"),
    ],
)
def test_terminator_source_type_errors(kwargs: dict[str, Any], argument: str, actual: str) -> None:
    """A terminator source that is neither an int nor a collection of ints names the argument and its type."""
    with pytest.raises(ContractTypeError) as info:
        _splice([1, 2], [2], [2, 3], **kwargs)
    error = info.value
    assert (error.argument, error.actual) == (argument, actual)
    assert "collection of ints" in (error.expected or "")
    assert str(error).startswith(f"{argument} must be {error.expected}")
    assert str(error).endswith(f"got {actual}")
    assert_contract_error(info.value)


def test_eos_token_id_takes_precedence_over_tokenizer() -> None:
    """An explicit ``eos_token_id`` wins over ``tokenizer.eos_token_id``; the tokenizer's EOS is only a fallback."""
    result = _splice(
        [100, 5], [9, 5], [9, 2, 5, 77], eos_token_id=5, tokenizer=SimpleNamespace(eos_token_id=2)
    )
    assert (result.token_ids, result.model_cut_end, result.template_cut_start) == ([100, 5, 77], 2, 3)
    fallback = _splice([100, 2], [9, 2], [9, 2, 5, 77], tokenizer=SimpleNamespace(eos_token_id=2))
    assert (fallback.token_ids, fallback.model_cut_end, fallback.template_cut_start) == (
        [100, 2, 5, 77],
        2,
        2,
    )


@pytest.mark.parametrize(
    "terminator",
    [_INT64_MIN, _INT64_MAX, _INT64_MAX + 1, 2**64 - 1, 2**64, 2**53 + 1, -(2**63) - 1, 0],
)
def test_terminator_at_and_beyond_int64_bounds(terminator: int) -> None:
    """A terminator is matched exactly at either int64 bound, in the unsigned range and beyond it."""
    model, template_prefix, template = [1, terminator], [3, terminator], [3, terminator, 4]
    result = _splice(model, template_prefix, template, terminator_ids=[terminator])
    assert (result.token_ids, result.model_cut_end, result.template_cut_start) == ([1, terminator, 4], 2, 2)
    # Mixed with a negative id (a list numpy would otherwise read as float64) and without a terminator at the end.
    stopped = _splice([1], [-1, terminator], [-1, 2**53, terminator, 4], eos_token_id=terminator)
    assert (stopped.token_ids, stopped.model_cut_end, stopped.template_cut_start) == (
        [1, terminator, 4],
        1,
        2,
    )


def test_near_miss_ids_never_match_a_terminator() -> None:
    """Ids one off a terminator, or equal to it only after a float rounding, are not terminators."""
    terminators = [-1, 2**63, 2**53 + 1]
    # The template holds an id beyond int64, so every id is compared exactly as a Python int.
    result = _splice([5, 2**63], [2**80, -1], [2**80, 2**53, 2**63 + 1, -1, 9], terminator_ids=terminators)
    assert (result.token_ids, result.model_cut_end, result.template_cut_start) == ([5, 2**63, 9], 2, 4)
    # Int64 template ids next to a terminator that fits int64.
    near = _splice([5], [2**53, 2**53 + 1], [2**53, 2**53 + 2, 2**53 + 1, 8], eos_token_id=2**53 + 1)
    assert (near.token_ids, near.template_cut_start) == ([5, 2**53 + 1, 8], 2)


def test_terminators_outside_int64_never_match_int64_ids() -> None:
    """With every terminator outside int64, a template of int64 ids holds no terminator at all."""
    with pytest.raises(SpliceError) as info:
        _splice([1, 2], [1, 2, 3], [1, 2, 3, 4], terminator_ids=[2**63, -(2**63) - 1])
    assert (info.value.terminators, info.value.count_needed, info.value.count_seen) == (
        (-(2**63) - 1, 2**63),
        0,
        None,
    )
    with pytest.raises(SpliceError) as info:
        _splice([1, 2], [1, 2**63], [1, 2, 3, 4], terminator_ids=[2**63])
    assert (info.value.terminators, info.value.count_needed, info.value.count_seen) == ((2**63,), 1, 0)
    assert str(info.value).startswith(
        "EOS token #1 not found in template_token_ids (only found 0 EOS tokens total, searching for terminators "
        "[9223372036854775808])! "
    )
