"""``routing_agreement`` (SPEC §9.5): examples, per-layer figures and every error case."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

from rl_contracts.errors import ContractTypeError, RoutedExpertsError
from rl_contracts.routed_experts import RoutingAgreement, routing_agreement
from rl_contracts.testing import assert_contract_error

ENGINE = torch.tensor(
    [
        [[0, 1], [2, 3]],
        [[4, 5], [6, 7]],
        [[-1, -1], [1, 2]],
    ]
)
"""Three tokens, two layers, top-2; token 2 has no route in layer 0."""


def test_agreement_per_layer_and_first_disagreement() -> None:
    """Sets compare order-free, exact order separately; per layer and the first differing (b, t, layer) are given."""
    learner = torch.tensor(
        [
            [[1, 0], [2, 3]],  # layer 0 permuted: agrees as a set
            [[4, 5], [6, 0]],  # layer 1 differs
            [[3, 4], [2, 1]],  # layer 0 is a sentinel row in the engine: not counted
        ]
    )
    result = routing_agreement(ENGINE, learner)
    assert result == RoutingAgreement(
        pairs=5,
        sentinel_pairs=1,
        agreement=4 / 5,
        exact_order_agreement=2 / 5,
        per_layer=(1.0, 2 / 3),
        first_disagreement=(0, 1, 1),
    )
    assert pickle.loads(pickle.dumps(result)) == result


def test_mask_selects_tokens_and_batches_are_four_dimensional() -> None:
    """A [B, T] mask selects tokens of [B, T, L, K] routes; a layer without counted pairs reads None."""
    engine = ENGINE[None].repeat(2, 1, 1, 1)
    learner = engine.clone()
    learner[1, 0, 0] = torch.tensor([5, 6])
    mask = torch.tensor([[1, 0, 0], [1, 0, 0]])
    result = routing_agreement(engine, learner, mask=mask)
    assert (result.pairs, result.sentinel_pairs, result.agreement) == (4, 0, 3 / 4)
    assert result.first_disagreement == (1, 0, 0)
    only_sentinel = routing_agreement(ENGINE[2:, :1], ENGINE[2:, :1])
    assert (only_sentinel.pairs, only_sentinel.per_layer, only_sentinel.agreement) == (0, (None,), None)


def test_vllm_numpy_routes_against_learner_tensors() -> None:
    """vLLM's uint8 numpy routes compare with the learner's int64 tensor ids; no input is changed."""
    engine = np.array([[[0, 1]], [[2, 3]]], dtype=np.uint8)
    learner = torch.tensor([[[1, 0]], [[3, 1]]])
    before = engine.copy()
    result = routing_agreement(engine, learner, mask=np.array([True, True]))
    assert result.agreement == 0.5
    assert np.array_equal(engine, before)


ERRORS: list[tuple[str, Callable[[], object], type[Exception], str]] = [
    (
        "list",
        lambda: routing_agreement([[[0, 1]]], ENGINE),  # type: ignore[arg-type]
        ContractTypeError,
        "engine_routes",
    ),
    ("float", lambda: routing_agreement(ENGINE.float(), ENGINE), RoutedExpertsError, "integer"),
    ("bool", lambda: routing_agreement(ENGINE, ENGINE > 0), RoutedExpertsError, "integer"),
    ("shapes", lambda: routing_agreement(ENGINE, ENGINE[:, :1]), RoutedExpertsError, "one shape"),
    ("2-D", lambda: routing_agreement(ENGINE[0], ENGINE[0]), RoutedExpertsError, "[T, L, K]"),
    (
        "below -1",
        lambda: routing_agreement(ENGINE - 1, ENGINE),
        RoutedExpertsError,
        "below the missing-route",
    ),
    (
        "mixed row",
        lambda: routing_agreement(
            ENGINE, torch.tensor([[[0, 1], [2, 3]], [[4, 5], [6, -1]], [[0, 1], [1, 2]]])
        ),
        RoutedExpertsError,
        "learner_routes[0, 1, 1]",
    ),
    (
        "duplicate engine expert",
        lambda: routing_agreement(
            torch.tensor([[[0, 1], [2, 3]], [[4, 4], [6, 7]], [[-1, -1], [1, 2]]]), ENGINE
        ),
        RoutedExpertsError,
        "engine_routes[0, 1, 0] = [4, 4] names an expert twice",
    ),
    (
        "duplicate learner expert",
        lambda: routing_agreement(
            ENGINE, torch.tensor([[[0, 1], [2, 3]], [[4, 5], [6, 7]], [[1, 2], [2, 2]]])
        ),
        RoutedExpertsError,
        "learner_routes[0, 2, 1]",
    ),
    (
        "K = 0",
        lambda: routing_agreement(
            torch.zeros((3, 2, 0), dtype=torch.int64), torch.zeros((3, 2, 0), dtype=torch.int64)
        ),
        RoutedExpertsError,
        "K = 0",
    ),
    (
        "uint64 beyond int64",
        lambda: routing_agreement(np.full((1, 1, 1), 2**63, np.uint64), np.zeros((1, 1, 1), np.int64)),
        RoutedExpertsError,
        "beyond int64",
    ),
    (
        "mask shape",
        lambda: routing_agreement(ENGINE, ENGINE, mask=torch.ones(2)),
        RoutedExpertsError,
        "shape",
    ),
    (
        "mask values",
        lambda: routing_agreement(ENGINE, ENGINE, mask=torch.tensor([0, 2, 1])),
        RoutedExpertsError,
        "0 and 1",
    ),
    ("mask type", lambda: routing_agreement(ENGINE, ENGINE, mask=[1, 1, 1]), ContractTypeError, "mask"),  # type: ignore[arg-type]
    (
        "mask dtype",
        lambda: routing_agreement(ENGINE, ENGINE, mask=np.array(["a", "b", "c"])),
        RoutedExpertsError,
        "0/1",
    ),
]


@pytest.mark.parametrize(("case", "call", "error", "fragment"), ERRORS, ids=[case[0] for case in ERRORS])
def test_malformed_routes_raise(
    case: str, call: Callable[[], object], error: type[Exception], fragment: str
) -> None:
    """Each malformed input raises its error with a bounded, picklable message naming the fault."""
    del case
    with pytest.raises(error) as info:
        call()
    assert_contract_error(info.value)
    assert fragment in str(info.value)


def test_an_empty_route_tensor_counts_nothing() -> None:
    """Zero tokens give zero pairs and None fractions."""
    empty: Any = torch.zeros((0, 2, 2), dtype=torch.int64)
    result = routing_agreement(empty, empty)
    assert (result.pairs, result.agreement, result.per_layer) == (0, None, (None, None))


def test_sets_not_multisets_are_compared() -> None:
    """Rows are sets of distinct experts: [0, 0, 1] is refused, not compared as a multiset with [0, 1, 1].

    Before the fix the sorted rows were compared (multisets) and a repeated expert id was accepted.
    """
    with pytest.raises(RoutedExpertsError, match="twice"):
        routing_agreement(torch.tensor([[[0, 0, 1]]]), torch.tensor([[[0, 1, 1]]]))
    assert routing_agreement(torch.tensor([[[2, 0, 1]]]), torch.tensor([[[0, 1, 2]]])).agreement == 1.0


def test_k_zero_fails_closed_even_without_tokens() -> None:
    """K = 0 is refused whatever T is: with it every selected pair would be a sentinel pair and nothing compared."""
    empty: Any = torch.zeros((0, 2, 0), dtype=torch.int64)
    with pytest.raises(RoutedExpertsError, match="K >= 1"):
        routing_agreement(empty, empty)
