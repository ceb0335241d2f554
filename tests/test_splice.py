"""Unit tests for ``rl_contracts.splice``: the SPEC §2.2 table, the ``PrefixSplice`` model and every error path."""

from __future__ import annotations

import dataclasses
import pickle
import re
import subprocess
import sys
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from rl_contracts.errors import ContractTypeError, SpliceError
from rl_contracts.splice import PrefixSplice, replace_prefix_tokens, splice_prefix_tokens
from rl_contracts.testing import assert_contract_error

# (model prefix, template prefix, template, eos_token_id, expected token_ids, cut_end, cut_start): SPEC §2.2 table.
Row = tuple[list[int], list[int], list[int], Any, list[int], int, int]

TABLE: list[Row] = [
    (
        [11, 12, 13, 40, 41, 220, 17, 2],
        [11, 12, 13, 40, 41, 1001, 2],
        [11, 12, 13, 40, 41, 1001, 2, 21, 22, 40, 41],
        2,
        [11, 12, 13, 40, 41, 220, 17, 2, 21, 22, 40, 41],
        8,
        7,
    ),
    (
        [11, 12, 13, 40, 41, 220, 17],
        [11, 12, 13, 40, 41, 1001, 2],
        [11, 12, 13, 40, 41, 1001, 2, 21, 22, 40, 41],
        2,
        [11, 12, 13, 40, 41, 220, 17, 2, 21, 22, 40, 41],
        7,
        6,
    ),
    ([100, 2], [9, 2, 9, 2], [9, 2, 9, 2, 77, 88], 2, [100, 2, 77, 88], 2, 4),
    (
        [11, 12, 99, 99, 99, 55, 2],
        [11, 12, 88, 88, 88, 56, 2],
        [11, 12, 56, 2, 70, 71, 2, 40, 41],
        2,
        [11, 12, 99, 99, 99, 55, 2, 70, 71, 2, 40, 41],
        7,
        4,
    ),
    ([100, 11], [9, 2], [9, 2, 77, 88], [2, 11], [100, 11, 77, 88], 2, 2),
    ([], [5, 6], [1, 2, 3], 2, [1, 2, 3], 0, 0),
]


def _splice(model: Any, template_prefix: Any, template: Any, **kwargs: Any) -> PrefixSplice:
    return splice_prefix_tokens(
        model_prefix_token_ids=model,
        template_prefix_token_ids=template_prefix,
        template_token_ids=template,
        **kwargs,
    )


@pytest.mark.parametrize("row", TABLE)
def test_spec_table(row: Row) -> None:
    """Every row of the SPEC §2.2 worked-example table gives the listed tokens and cut coordinates."""
    model, template_prefix, template, eos, expected, cut_end, cut_start = row
    result = _splice(model, template_prefix, template, eos_token_id=eos)
    assert result == PrefixSplice(token_ids=expected, model_cut_end=cut_end, template_cut_start=cut_start)
    assert replace_prefix_tokens(None, model, template_prefix, template, eos_token_id=eos) == expected


@pytest.mark.parametrize("row", TABLE)
def test_spec_table_terminator_ids_and_tokenizer(row: Row) -> None:
    """The same rows splice identically with ``terminator_ids`` or a tokenizer's ``eos_token_id``."""
    model, template_prefix, template, eos, expected, cut_end, cut_start = row
    terminators = eos if isinstance(eos, list) else [eos]
    by_ids = _splice(model, template_prefix, template, terminator_ids=iter(terminators), eos_token_id=999)
    by_tokenizer = _splice(model, template_prefix, template, tokenizer=SimpleNamespace(eos_token_id=eos))
    for result in (by_ids, by_tokenizer):
        assert (result.token_ids, result.model_cut_end, result.template_cut_start) == (
            expected,
            cut_end,
            cut_start,
        )


def test_numpy_and_tuple_inputs_and_new_lists() -> None:
    """numpy arrays and tuples are accepted as ids, and the result never aliases an input list."""
    template = [9, 2, 9, 2, 77, 88]
    result = _splice(np.array([100, 2]), (9, 2, 9, 2), template, eos_token_id=np.int64(2))
    assert result.token_ids == [100, 2, 77, 88]
    identity = _splice([], [2], template, eos_token_id=2)
    assert identity.token_ids == template
    assert identity.token_ids is not template
    replaced = replace_prefix_tokens(None, [], [2], template, eos_token_id=2)
    assert replaced == template
    assert replaced is not template


def test_ids_beyond_int64_and_negative() -> None:
    """Ids that do not fit in int64, and negative ids, are counted exactly (object-array path)."""
    big = 2**80
    result = _splice([5, big], [-1, big], [-1, big, 7, big, 8], eos_token_id=big)
    assert (result.token_ids, result.model_cut_end, result.template_cut_start) == ([5, big, 7, big, 8], 2, 2)
    int64_template = _splice([5, big], [-1, big], [-1, 4, 7], terminator_ids=[big, 4])
    assert int64_template.token_ids == [5, big, 7]


def test_model_may_stop_on_another_terminator() -> None:
    """With a terminator set the model's own terminator is kept even when the template renders another member."""
    result = _splice([100, 11], [9, 2], [9, 2, 77, 88], terminator_ids={2, 11})
    assert result.token_ids[:2] == [100, 11]
    assert result.template_cut_start == 2


def test_terminator_ids_take_precedence_over_eos() -> None:
    """``terminator_ids`` replaces ``eos_token_id`` and the tokenizer's EOS entirely."""
    result = _splice([100, 5], [9, 5, 9, 2], [9, 5, 9, 2, 77], eos_token_id=2, terminator_ids=[5])
    assert result.template_cut_start == 2
    assert result.token_ids == [100, 5, 9, 2, 77]


def test_empty_terminator_ids() -> None:
    """An empty ``terminator_ids`` raises SpliceError, also an AssertionError and a ValueError."""
    with pytest.raises(SpliceError, match="terminator_ids must not be empty when provided") as info:
        _splice([1, 2], [2], [2, 3], terminator_ids=[], eos_token_id=2)
    assert isinstance(info.value, AssertionError)
    assert isinstance(info.value, ValueError)
    assert info.value.terminators == ()
    assert info.value.count_needed is None
    assert_contract_error(info.value)


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"tokenizer": SimpleNamespace(eos_token_id=None)}, {"tokenizer": object()}, {"eos_token_id": []}],
)
def test_no_eos(kwargs: dict[str, Any]) -> None:
    """Without any terminator source the splice raises SpliceError naming the missing EOS."""
    with pytest.raises(SpliceError, match="Tokenizer must have an EOS token ID") as info:
        _splice([1, 2], [2], [2, 3], **kwargs)
    assert info.value.terminators is None
    assert_contract_error(info.value)


def test_empty_model_prefix_needs_no_terminator() -> None:
    """An empty model prefix returns the identity splice without looking for a terminator."""
    result = _splice([], [5], [1, 2, 3])
    assert (result.token_ids, result.model_cut_end, result.template_cut_start) == ([1, 2, 3], 0, 0)


def test_no_terminator_in_template_prefix() -> None:
    """A template prefix without terminators raises with the sorted terminators and summarised ids."""
    with pytest.raises(SpliceError) as info:
        _splice([1, 2], [7, 8, 9], [7, 8, 9, 2], terminator_ids=[11, 2])
    message = str(info.value)
    assert message.startswith(
        "No terminator token found in template_prefix_token_ids, so there is no splice boundary to find. "
        "Terminators searched for: [2, 11]."
    )
    assert "template_prefix_token_ids=[7, 8, 9]" in message
    assert "template_token_ids=[7, 8, 9, 2]" in message
    assert (info.value.terminators, info.value.count_needed, info.value.count_seen) == ((2, 11), 0, None)
    assert_contract_error(info.value)


def test_too_few_terminators_in_template() -> None:
    """Fewer template terminators than the prefix needs raises with the count and the ids, without decode."""
    with pytest.raises(SpliceError) as info:
        _splice([1, 2], [2, 5, 2], [5, 2, 6], eos_token_id=2)
    message = str(info.value)
    assert message.startswith(
        "EOS token #2 not found in template_token_ids (only found 1 EOS tokens total, searching for terminators "
        "[2])!"
    )
    assert "template_token_ids=[5, 2, 6]" in message
    assert "decoded" not in message.lower()
    assert (info.value.terminators, info.value.count_needed, info.value.count_seen) == ((2,), 2, 1)
    assert_contract_error(info.value)


class _Tokenizer:
    eos_token_id = 2

    def __init__(self, decode: Any) -> None:
        self.decode = decode


def _raise(ids: list[int]) -> str:
    raise RuntimeError("tokenizer broke")


@pytest.mark.parametrize(
    ("decode", "fragment"),
    [
        (lambda ids: "<" + ",".join(map(str, ids)) + ">", "decoded template_token_ids: '<5,2,6>'"),
        (_raise, "decoded template_token_ids: <decode failed: RuntimeError>"),
        (lambda ids: b"bytes", "decoded template_token_ids: <decode failed: bytes>"),
    ],
)
def test_decode_in_message(decode: Any, fragment: str) -> None:
    """A callable ``decode`` adds decoded text; a failing or non-str decode is rendered, never propagated."""
    with pytest.raises(SpliceError) as info:
        _splice([1, 2], [2, 5, 2], [5, 2, 6], tokenizer=_Tokenizer(decode))
    assert fragment in str(info.value)
    assert_contract_error(info.value)


def test_decode_not_callable_is_ignored() -> None:
    """A tokenizer whose ``decode`` is not callable is not called, and the message has no decoded text."""
    with pytest.raises(SpliceError) as info:
        _splice([1, 2], [2, 5, 2], [5, 2, 6], tokenizer=_Tokenizer("not callable"))
    assert "decoded" not in str(info.value).lower()


def test_decoded_text_is_shortened() -> None:
    """Decoded text is shortened so the message stays bounded."""
    with pytest.raises(SpliceError) as info:
        _splice([1, 2], [2, 5, 2], [5, 2, 6], tokenizer=_Tokenizer(lambda ids: "x" * 100_000))
    assert len(str(info.value)) <= 2000
    assert "xxx..." in str(info.value)


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"model_prefix_token_ids": [1, True]}, "model_prefix_token_ids"),
        ({"template_prefix_token_ids": "22"}, "template_prefix_token_ids"),
        ({"template_token_ids": [2.0]}, "template_token_ids"),
        ({"template_token_ids": None}, "template_token_ids"),
        ({"eos_token_id": True}, "eos_token_id"),
        ({"eos_token_id": "2"}, "eos_token_id"),
        ({"eos_token_id": [2, False]}, "eos_token_id"),
        ({"terminator_ids": 2.5}, "terminator_ids"),
        ({"terminator_ids": [2, None]}, "terminator_ids"),
        ({"terminator_ids": {2: 3}}, "terminator_ids"),
        ({"tokenizer": SimpleNamespace(eos_token_id=True)}, "tokenizer.eos_token_id"),
    ],
)
def test_type_errors(kwargs: dict[str, Any], argument: str) -> None:
    """Non-int ids, bools and strings raise ContractTypeError naming the argument."""
    arguments: dict[str, Any] = {
        "model_prefix_token_ids": [1, 2],
        "template_prefix_token_ids": [2],
        "template_token_ids": [2, 3],
    }
    arguments.update(kwargs)
    with pytest.raises(ContractTypeError) as info:
        splice_prefix_tokens(**arguments)
    assert info.value.argument is not None
    assert info.value.argument.startswith(argument)
    assert str(info.value).startswith(argument)
    assert_contract_error(info.value)


def test_huge_inputs_keep_messages_bounded() -> None:
    """A 200k-token input with huge ids and a huge terminator set still gives a message of at most 2000 chars."""
    huge = [10**300 + i for i in range(10)] + list(range(5, 200_000))
    with pytest.raises(SpliceError) as info:
        _splice(huge, huge, huge, terminator_ids=[10**400 + i for i in range(1000)])
    assert len(str(info.value)) <= 2000
    assert "(1000 total)" in str(info.value)
    with pytest.raises(SpliceError) as info:
        _splice(huge, [2] * 50_000, huge, eos_token_id=2)
    assert len(str(info.value)) <= 2000
    assert "(50000 total)" in str(info.value)


def test_prefix_splice_forms_and_equality() -> None:
    """Positional, keyword and mixed construction agree; equality holds only between PrefixSplice instances."""

    @dataclasses.dataclass
    class ReferenceSplice:
        token_ids: list[int]
        model_cut_end: int
        template_cut_start: int

    positional = PrefixSplice([1, 2, 3], 1, 0)
    assert positional == PrefixSplice([1, 2, 3], model_cut_end=1, template_cut_start=0)
    assert positional == PrefixSplice(token_ids=[1, 2, 3], model_cut_end=1, template_cut_start=0)
    assert positional != PrefixSplice([1, 2, 3], 2, 0)
    assert positional != ReferenceSplice([1, 2, 3], 1, 0)
    assert hash(positional) == hash(PrefixSplice((1, 2, 3), np.int64(1), 0))
    assert pickle.loads(pickle.dumps(positional)) == positional


@pytest.mark.parametrize(
    ("args", "kwargs", "fragment", "attributes"),
    [
        (
            ([1], 0, 0, 5),
            {},
            "at most 3 positional arguments",
            ("args", "at most 3 positional arguments", "4"),
        ),
        (
            ([1], 0),
            {"model_cut_end": 0, "template_cut_start": 0},
            "multiple values for argument 'model_cut_end'",
            ("model_cut_end", "one value", "two values"),
        ),
        (
            ([1],),
            {"token_ids": [1], "model_cut_end": 0, "template_cut_start": 0},
            "multiple values for argument 'token_ids'",
            ("token_ids", "one value", "two values"),
        ),
    ],
)
def test_prefix_splice_bad_positional_form(
    args: tuple[Any, ...], kwargs: dict[str, Any], fragment: str, attributes: tuple[str, str, str]
) -> None:
    """Too many positional arguments, or a field given twice, is a ContractTypeError (a TypeError) with details."""
    with pytest.raises(TypeError) as info:
        PrefixSplice(*args, **kwargs)
    assert isinstance(info.value, ContractTypeError)
    assert str(info.value).startswith("PrefixSplice() ")
    assert fragment in str(info.value)
    assert (info.value.argument, info.value.expected, info.value.actual) == attributes


def test_prefix_splice_hash_distinguishes_fields() -> None:
    """Splices differing in any one field hash differently (the hash uses every field), equal ones hash equal."""
    splices = [PrefixSplice([1, 2], 1, 0), PrefixSplice([1, 3], 1, 0), PrefixSplice([1, 2], 2, 0)]
    splices.append(PrefixSplice([1, 2], 1, 5))
    assert len({hash(splice) for splice in splices}) == len(splices)
    assert hash(PrefixSplice([1, 2], 1, 0)) == hash(splices[0])


def test_replace_prefix_tokens_passes_tokenizer_and_terminator_ids_on() -> None:
    """replace_prefix_tokens uses the tokenizer's eos_token_id and the terminator_ids it is given."""
    assert replace_prefix_tokens(SimpleNamespace(eos_token_id=2), [100, 2], [9, 2], [9, 2, 77]) == [
        100,
        2,
        77,
    ]
    assert replace_prefix_tokens(
        None, [100, 5], [9, 5], [9, 2, 5, 77], eos_token_id=2, terminator_ids=[5]
    ) == [
        100,
        5,
        77,
    ]


@pytest.mark.parametrize(
    "fields",
    [
        ([1, 2], 3, 0),
        ([1, 2], -1, 0),
        ([1, 2], 1, -1),
        ([1, True], 1, 0),
        ([1, 2], True, 0),
        ([1, 2], 1, 1.0),
        ([1, "2"], 1, 0),
        ("12", 1, 0),
    ],
)
def test_prefix_splice_invariants(fields: tuple[Any, Any, Any]) -> None:
    """Out-of-range cuts, bools, floats and strings are rejected with pydantic's ValidationError."""
    with pytest.raises(ValidationError):
        PrefixSplice(*fields)


def test_prefix_splice_model_validate_rejects_non_str_keys_with_validation_error() -> None:
    """``model_validate`` of a mapping with non-str keys raises ValidationError, not pydantic-core's TypeError."""
    with pytest.raises(ValidationError):
        PrefixSplice.model_validate({1: 2, "token_ids": [1], "model_cut_end": 0, "template_cut_start": 0})
    assert PrefixSplice.model_validate({"token_ids": [1], "model_cut_end": 1, "template_cut_start": 0}) == (
        PrefixSplice([1], 1, 0)
    )


def test_prefix_splice_renders_a_huge_cut_in_its_message() -> None:
    """A model_cut_end beyond Python's int-to-str limit is reported as such, not as a conversion failure."""
    with pytest.raises(
        ValidationError, match=re.escape("model_cut_end=<int of 16610 bits> exceeds len(token_ids)=1")
    ):
        PrefixSplice([1], 10**5000, 0)


def test_prefix_splice_is_frozen() -> None:
    """Assigning a field of a PrefixSplice raises ValidationError."""
    splice = PrefixSplice([1], 0, 0)
    with pytest.raises(ValidationError):
        splice.model_cut_end = 1  # type: ignore[misc]


def test_modules_do_not_import_torch() -> None:
    """Importing the splice and multimodal modules pulls in neither torch nor vLLM."""
    code = "import sys, rl_contracts.splice, rl_contracts.multimodal; print('torch' in sys.modules, 'vllm' in sys.modules)"
    output = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert output.strip() == "False False"
