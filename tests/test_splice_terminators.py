"""Terminator sets of a splice: ``resolve_terminator_token_ids`` (SPEC §2.2.1) and the types §2.2 step 3 accepts."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch

from rl_contracts.errors import ContractTypeError, SpliceError
from rl_contracts.splice import replace_prefix_tokens, resolve_terminator_token_ids, splice_prefix_tokens
from rl_contracts.testing import assert_contract_error

_IDS: dict[str, Any] = {
    "model_prefix_token_ids": [100, 2],
    "template_prefix_token_ids": [9, 2],
    "template_token_ids": [9, 2, 7],
}


@pytest.mark.parametrize(
    ("eos", "config", "expected"),
    [
        (1, {"eos_token_id": [1, 106, 50]}, {1, 50, 106}),
        (1, {"eos_token_id": 2}, {1, 2}),
        (1, {}, {1}),
        (1, {"top_p": 0.95}, {1}),
        (1, None, {1}),
        (None, None, set()),
        (None, {"eos_token_id": (106, 50)}, {50, 106}),
        (1, {"eos_token_id": None}, {1}),
        (np.int64(1), {"eos_token_id": [np.int32(106)]}, {1, 106}),
        (np.array(1), {"eos_token_id": []}, {1}),
    ],
)
def test_resolve_examples(eos: object, config: dict[str, Any] | None, expected: set[int]) -> None:
    """The result is the union of the tokenizer's EOS and the config's eos_token_id (SPEC §2.2.1 examples)."""
    result = resolve_terminator_token_ids(SimpleNamespace(eos_token_id=eos), config)
    assert result == frozenset(expected)
    assert isinstance(result, frozenset)
    assert {type(i) for i in result} <= {int}


def test_resolve_without_tokenizer_or_attribute() -> None:
    """A ``None`` tokenizer, or one without ``eos_token_id``, adds nothing."""
    assert resolve_terminator_token_ids(None, {"eos_token_id": [106]}) == frozenset({106})
    assert resolve_terminator_token_ids(SimpleNamespace(), None) == frozenset()


@pytest.mark.parametrize(
    ("eos", "config", "argument"),
    [
        (True, None, "tokenizer.eos_token_id"),
        ("1", None, "tokenizer.eos_token_id"),
        (1.0, None, "tokenizer.eos_token_id"),
        ([1, 2], None, "tokenizer.eos_token_id"),
        (np.array(2.0), None, "tokenizer.eos_token_id"),
        (torch.tensor(True), None, "tokenizer.eos_token_id"),
        (1, {"eos_token_id": True}, "generation_config['eos_token_id']"),
        (1, {"eos_token_id": "106"}, "generation_config['eos_token_id']"),
        (1, {"eos_token_id": 106.0}, "generation_config['eos_token_id']"),
        (1, {"eos_token_id": {106}}, "generation_config['eos_token_id']"),
        (1, {"eos_token_id": [106, "50"]}, "generation_config['eos_token_id'][1]"),
        (1, {"eos_token_id": [106, False]}, "generation_config['eos_token_id'][1]"),
        (1, [("eos_token_id", 2)], "generation_config"),
    ],
)
def test_resolve_rejects_values_that_are_no_token_ids(eos: object, config: Any, argument: str) -> None:
    """A bool, str, float, set, nested non-int or non-mapping config raises ContractTypeError naming the source."""
    with pytest.raises(ContractTypeError) as info:
        resolve_terminator_token_ids(SimpleNamespace(eos_token_id=eos), config)
    assert info.value.argument == argument
    assert argument in str(info.value)
    assert_contract_error(info.value)


@pytest.mark.parametrize(
    ("eos", "config", "source"),
    [
        (-1, None, "tokenizer.eos_token_id"),
        (1, {"eos_token_id": [106, -5]}, "generation_config['eos_token_id']"),
    ],
)
def test_resolve_rejects_negative_ids(eos: int, config: dict[str, Any] | None, source: str) -> None:
    """A negative id raises SpliceError naming the source and the id."""
    with pytest.raises(SpliceError) as info:
        resolve_terminator_token_ids(SimpleNamespace(eos_token_id=eos), config)
    assert source in str(info.value)
    assert "negative token id -" in str(info.value)
    assert_contract_error(info.value)


def test_resolved_set_drives_the_splice() -> None:
    """Gemma-4 style: the model stops on 106 while the EOS is 1; the resolved set finds the template boundary."""
    terminators = resolve_terminator_token_ids(
        SimpleNamespace(eos_token_id=1), {"eos_token_id": [1, 106, 50]}
    )
    splice = splice_prefix_tokens(
        model_prefix_token_ids=[30, 31, 106],
        template_prefix_token_ids=[30, 40, 106],
        template_token_ids=[30, 40, 106, 8, 9],
        terminator_ids=terminators,
    )
    assert (splice.token_ids, splice.model_cut_end, splice.template_cut_start) == ([30, 31, 106, 8, 9], 3, 3)


def test_an_empty_resolved_set_raises_the_usual_splice_error() -> None:
    """Nothing declared gives the empty set, which §2.2 rejects as empty terminator_ids."""
    empty = resolve_terminator_token_ids(SimpleNamespace(eos_token_id=None))
    with pytest.raises(SpliceError, match="terminator_ids must not be empty"):
        splice_prefix_tokens(**_IDS, terminator_ids=empty)


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"eos_token_id": np.array(2.0)}, "eos_token_id"),
        ({"eos_token_id": torch.tensor(2.0)}, "eos_token_id"),
        ({"terminator_ids": torch.tensor(2.0)}, "terminator_ids"),
        ({"terminator_ids": np.array(2.0)}, "terminator_ids"),
        ({"tokenizer": SimpleNamespace(eos_token_id=np.array(2.0))}, "tokenizer.eos_token_id"),
        ({"tokenizer": SimpleNamespace(eos_token_id=torch.tensor(2.0))}, "tokenizer.eos_token_id"),
        ({"eos_token_id": torch.tensor(True)}, "eos_token_id"),
        ({"eos_token_id": np.array([True, False])}, "eos_token_id[0]"),
        ({"terminator_ids": torch.tensor([2.0])}, "terminator_ids[0]"),
    ],
)
def test_0d_and_bool_arrays_raise_contract_type_error(kwargs: dict[str, Any], argument: str) -> None:
    """0-d float arrays and tensors and bool arrays raise ContractTypeError, not ``iteration over a 0-d array``."""
    for call in (
        lambda: splice_prefix_tokens(**_IDS, **kwargs),
        lambda: replace_prefix_tokens(
            kwargs.get("tokenizer"),
            _IDS["model_prefix_token_ids"],
            _IDS["template_prefix_token_ids"],
            _IDS["template_token_ids"],
            **{k: v for k, v in kwargs.items() if k != "tokenizer"},
        ),
    ):
        with pytest.raises(ContractTypeError) as info:
            call()
        assert info.value.argument == argument
        assert "dimensions" in (info.value.actual or "") or "bool" in (info.value.actual or "")
        assert_contract_error(info.value)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"eos_token_id": np.array(2)},
        {"eos_token_id": torch.tensor(2)},
        {"terminator_ids": torch.tensor([2, 3])},
        {"terminator_ids": np.array([2], dtype=np.uint8)},
        {"tokenizer": SimpleNamespace(eos_token_id=np.array(2))},
    ],
)
def test_integer_arrays_are_terminators(kwargs: dict[str, Any]) -> None:
    """0-d integer arrays are one id and 1-D integer arrays a collection of ids."""
    assert splice_prefix_tokens(**_IDS, **kwargs).token_ids == [100, 2, 7]
