"""Route tensors and their integrity record (SPEC §3.4, ``routed_experts_tensor_metadata``) through Ray's store.

A worker aligns routes and ships the tensor with its record; the driver verifies what it received, sends it on to
another actor, and compares the envelope path. Expectations come from the raw routes, not the code under test.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch

from rl_contracts.codec import (
    decode_routed_experts,
    encode_routed_experts,
    routed_experts_tensor_metadata,
    verify_routed_experts_tensor_metadata,
)
from rl_contracts.errors import EnvelopeError
from rl_contracts.routed_experts import pad_and_align_routed_expert_indices
from rl_contracts.testing import assert_contract_error

pytestmark = pytest.mark.ray


class RouteWorker:
    """Aligns routes a generation worker received and ships them with their integrity record."""

    def aligned(self, seed: int, prompt: int, generated: int, shape: tuple[int, int, int]) -> dict[str, Any]:
        """Random vLLM-style uint8 routes for ``prompt + generated - 1`` tokens, aligned into an int16 tensor of
        ``shape`` (rows = padded length), with ``routed_experts_tensor_metadata`` and the raw routes."""
        padded, layers, top_k = shape
        rng = np.random.default_rng(seed)
        raw = rng.integers(0, 8, size=(prompt + generated - 1, layers, top_k), dtype=np.uint8)
        completion = SimpleNamespace(index=0, token_ids=list(range(generated)), routed_experts=raw)
        request = SimpleNamespace(
            prompt_token_ids=list(range(prompt)), outputs=[completion], num_cached_tokens=None
        )
        tensor = pad_and_align_routed_expert_indices(
            request,
            completion,
            valid_length=prompt + generated,
            padded_length=padded,
            device="cpu",
            routed_experts_dtype=torch.int16,
        )
        assert tensor is not None
        return {"tensor": tensor, "metadata": routed_experts_tensor_metadata(tensor), "raw": raw}

    def envelope(self, tensor: torch.Tensor) -> str:
        """The tensor as its ``nrlre1`` envelope string."""
        return encode_routed_experts(tensor)

    def verify(self, tensor: torch.Tensor, metadata: dict[str, Any]) -> dict[str, Any]:
        """Check a tensor received from the driver against its record; returns the record computed here."""
        verify_routed_experts_tensor_metadata(tensor, metadata)
        return routed_experts_tensor_metadata(tensor)


SHAPE = (96, 4, 2)  # padded tokens, MoE layers, top-k
PROMPT, GENERATED = 30, 50


@pytest.fixture(scope="module")
def route_workers(ray_cluster: Any) -> Iterator[list[Any]]:
    """Two ``RouteWorker`` actors: the producer and a consumer."""
    remote = ray_cluster.remote(num_cpus=0)(RouteWorker)
    actors = [remote.remote(), remote.remote()]
    yield actors
    for actor in actors:
        ray_cluster.kill(actor)


@pytest.fixture(scope="module")
def shipped(ray_cluster: Any, route_workers: list[Any]) -> dict[str, Any]:
    """What the producer returned through the object store for one request."""
    result: dict[str, Any] = ray_cluster.get(route_workers[0].aligned.remote(7, PROMPT, GENERATED, SHAPE))
    return result


def test_route_tensor_arrives_intact_with_its_record(shipped: dict[str, Any]) -> None:
    """The received tensor holds the raw routes, padding rows past them, and matches the record sent beside it."""
    tensor, metadata, raw = shipped["tensor"], shipped["metadata"], shipped["raw"]
    rows = PROMPT + GENERATED - 1
    assert tensor.dtype == torch.int16
    assert tuple(tensor.shape) == SHAPE
    np.testing.assert_array_equal(tensor[:rows].numpy(), raw.astype(np.int16))
    assert (tensor[rows:].numpy() == np.arange(SHAPE[2])).all()
    assert metadata == {"dtype": "int16", "shape": list(SHAPE), "sha256": metadata["sha256"]}
    assert routed_experts_tensor_metadata(tensor) == metadata
    verify_routed_experts_tensor_metadata(tensor, metadata)


def test_a_changed_route_is_caught_on_the_far_side(shipped: dict[str, Any]) -> None:
    """One flipped expert id, or a narrowed dtype, fails verification with the differing part named."""
    tampered = shipped["tensor"].clone()
    tampered[5, 1, 0] ^= 1
    with pytest.raises(EnvelopeError) as info:
        verify_routed_experts_tensor_metadata(tampered, shipped["metadata"])
    assert info.value.field == "value"
    assert_contract_error(info.value)
    with pytest.raises(EnvelopeError) as dtype_info:
        verify_routed_experts_tensor_metadata(shipped["tensor"].to(torch.int8), shipped["metadata"])
    assert dtype_info.value.field == "dtype"


def test_driver_to_actor_hop_and_envelope_agree(
    ray_cluster: Any, route_workers: list[Any], shipped: dict[str, Any]
) -> None:
    """A consumer actor verifies the tensor the driver put in the store; the envelope decodes to the same record."""
    ref = ray_cluster.put(shipped["tensor"])
    assert ray_cluster.get(route_workers[1].verify.remote(ref, shipped["metadata"])) == shipped["metadata"]
    envelope = ray_cluster.get(route_workers[0].envelope.remote(shipped["tensor"]))
    decoded = decode_routed_experts(envelope, torch.int16)
    assert torch.equal(decoded, shipped["tensor"])
    assert routed_experts_tensor_metadata(decoded) == shipped["metadata"]
