"""Library errors raised inside Ray actors, caught on the driver (SPEC §0.3, "Across Ray").

Ray hands the driver ``RayTaskError(X)``: caught by ``X``, attributes forwarded, but its ``str`` is Ray's traceback
and it does not pickle. ``contract_error`` must recover the library error itself, equal to the one the same call
raises on the driver, bounded, with ``details()``, and pickling.

``FAILING_CALLS`` holds one real library call per error class, each failing with exactly that class through a public
entry point with inputs a trainer could pass; nothing constructs an error by hand. ``LIBRARY_ERROR_CLASSES`` lists
every concrete class the library exports, so a class added later without a call here fails the coverage test.
Workers import this module by name (the conftest puts ``tests/ray`` on ``PYTHONPATH``).
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from rl_contracts import errors
from rl_contracts.chat import attach_token_information_to_chat_response_choices
from rl_contracts.codec import decode_routed_experts
from rl_contracts.config import assert_reload_refit_config_supported, load_recipe, normalize_vllm_refit_config
from rl_contracts.config.baseline import read_baseline
from rl_contracts.errors import MAX_MESSAGE_CHARS, ContractError, ContractTypeError, contract_error
from rl_contracts.logprobs import check_logprob_agreement, logprob_mismatch
from rl_contracts.metrics import CounterSnapshot
from rl_contracts.multimodal import placeholder_range_bounds, remap_multimodal_placeholders
from rl_contracts.prompts import (
    check_tokenizers_match,
    format_prompt_for_vllm_generation,
    validate_rollout_prompt,
)
from rl_contracts.refit import format_refit_key_error
from rl_contracts.rollouts import rollout_batch
from rl_contracts.routed_experts import as_routed_experts_tensor, stitch_turn_routes
from rl_contracts.splice import splice_prefix_tokens, turn_trajectory
from rl_contracts.testing import assert_contract_error
from rl_contracts.testing.chat_tokenizer import StandInChatTokenizer
from rl_contracts.vllm_arguments import check_scoring_matches_rollout
from rl_contracts.weights import check_weight_versions

pytestmark = pytest.mark.ray

RECIPES = Path(__file__).parents[1] / "data" / "recipes"

LIBRARY_ERROR_CLASSES: tuple[type[ContractError], ...] = tuple(
    cls
    for cls in (getattr(errors, name) for name in errors.__all__)
    if isinstance(cls, type) and issubclass(cls, ContractError) and cls is not ContractError
)


def _chat_without_logprobs() -> object:
    response = SimpleNamespace(choices=[SimpleNamespace(index=0, message=SimpleNamespace())])
    output = SimpleNamespace(
        prompt_token_ids=[1, 5], outputs=[SimpleNamespace(index=0, token_ids=[7], logprobs=None)]
    )
    return attach_token_information_to_chat_response_choices(response, output)


def _rollout(
    prompt_token_ids: list[int],
    finish_reason: str,
    spans: list[tuple[str, int, int]],
    forbidden: frozenset[int] = frozenset(),
) -> object:
    """The rollout hand-off of one row whose learner prompt is ``[1, 5]`` and whose generated token is 7."""
    logprobs = [{7: SimpleNamespace(logprob=-0.5)}]
    choice = SimpleNamespace(
        index=0, token_ids=[7], logprobs=logprobs, finish_reason=finish_reason, weight_versions=spans
    )
    output = SimpleNamespace(prompt_token_ids=prompt_token_ids, outputs=[choice], finished=True)
    return rollout_batch([[1, 5]], [output], allowed_versions={"7"}, forbidden_token_ids=forbidden)


FAILING_CALLS: dict[type[ContractError], Callable[[], object]] = {
    errors.ContractTypeError: lambda: format_refit_key_error("missing keys", "model.layers.0.weight"),
    errors.PlaceholderTypeError: lambda: placeholder_range_bounds(object()),
    errors.PlaceholderRemapError: lambda: remap_multimodal_placeholders(
        template_token_ids=[1, 7, 7],
        final_token_ids=[1, 7, 7],
        mm_placeholders={"image": [{"offset": 2, "length": 5}]},
    ),
    errors.SpliceError: lambda: splice_prefix_tokens(
        model_prefix_token_ids=[1, 2],
        template_prefix_token_ids=[5],
        template_token_ids=[5, 6],
        eos_token_id=9,
    ),
    errors.RoutedExpertsError: lambda: as_routed_experts_tensor([[[200]]], device="cpu", dtype=torch.int8),
    errors.EnvelopeError: lambda: decode_routed_experts("nrlre2:int16:1x1x1:AAA=", torch.int16),
    errors.RolloutPromptMismatchError: lambda: validate_rollout_prompt([1, 2, 3], [1, 2, 4]),
    errors.PromptFormatError: lambda: format_prompt_for_vllm_generation(
        {"input_ids": torch.ones(2, 3, dtype=torch.long), "input_lengths": torch.tensor([3])}
    ),
    errors.ChatResponseContractError: _chat_without_logprobs,
    errors.CounterSnapshotError: lambda: CounterSnapshot.from_worker_dict({"vllm:prompt_tokens": -1.0}),
    errors.ConfigContractError: lambda: normalize_vllm_refit_config(
        {"refit_transport": "vllm_zmq_sparse", "refit_cfg": {"sparse": {"tuning": {"zmq_retries": -1}}}}
    ),
    errors.UnsupportedConfigError: lambda: assert_reload_refit_config_supported(
        {"vllm_cfg": {"refit_with_reload_api": True}, "colocated": {"enabled": True, "resources": {}}}
    ),
    errors.RecipeError: lambda: load_recipe(RECIPES / "broken" / "typo_key.yaml"),
    errors.RecipeLoadError: lambda: load_recipe(RECIPES / "broken" / "missing_parent.yaml"),
    errors.WeightVersionError: lambda: check_weight_versions(
        SimpleNamespace(index=0, token_ids=[4, 5], weight_versions=None), allowed={"7"}
    ),
    errors.BaselineError: lambda: read_baseline("/nonexistent/rl-contracts-baseline.json"),
    errors.TokenizerMismatchError: lambda: check_tokenizers_match(
        StandInChatTokenizer(), StandInChatTokenizer(swap=("a", "b"))
    ),
    errors.RolloutBatchError: lambda: _rollout([1, 5], "abort", [("7", 0, 1)]),
    errors.RolloutPromptError: lambda: _rollout([1, 6], "stop", [("7", 0, 1)]),
    errors.RolloutWeightVersionError: lambda: _rollout([1, 5], "stop", [("6", 0, 1)]),
    errors.LogprobContractError: lambda: logprob_mismatch(
        torch.tensor([[float("nan")]]), torch.tensor([[-1.0]])
    ),
    errors.ForbiddenTokenError: lambda: _rollout([1, 5], "stop", [("7", 0, 1)], frozenset({7})),
    errors.RouteStitchError: lambda: stitch_turn_routes([], device="cpu"),
    errors.TurnTokenMismatchError: lambda: turn_trajectory([([1, 2], [3]), ([1, 9, 3], [4])]),
    errors.SamplingParamsError: lambda: check_scoring_matches_rollout(
        {"temperature": 1.0}, {"temperature": 0.8}
    ),
    errors.LogprobMismatchError: lambda: check_logprob_agreement(
        torch.full((2, 4), -1.0), torch.full((2, 4), -2.0)
    ),
}


def call_failing(name: str) -> None:
    """Run the failing call of the error class called ``name`` (it raises; returning is a bug in the table)."""
    [call] = [call for cls, call in FAILING_CALLS.items() if cls.__name__ == name]
    call()
    raise AssertionError(f"the call for {name} did not raise")


def error_of(cls: type[ContractError]) -> ContractError:
    """The error the call of ``cls`` raises in this process, the reference a remote error is compared with."""
    try:
        FAILING_CALLS[cls]()
    except ContractError as error:
        return error
    raise AssertionError(f"the call for {cls.__name__} did not raise")


class Raiser:
    """Runs one failing library call per request, so the error crosses the actor boundary as Ray ships it."""

    def fail(self, name: str) -> None:
        """Raise the library error called ``name`` from its real call (``failing_calls``)."""
        call_failing(name)

    def fail_with_long_argument(self, length: int) -> None:
        """Raise ``ContractTypeError.for_value`` for an argument name of ``length`` characters (a capped message)."""
        raise ContractTypeError.for_value("a" * length, "an int (not bool)", True)


@pytest.fixture(scope="module")
def raiser(ray_cluster: Any) -> Iterator[Any]:
    """One ``Raiser`` actor (no CPU reserved)."""
    actor = ray_cluster.remote(num_cpus=0)(Raiser).remote()
    yield actor
    ray_cluster.kill(actor)


def test_every_library_error_class_has_a_failing_call() -> None:
    """The table of real failing calls covers every concrete error class the library exports."""
    assert set(FAILING_CALLS) == set(LIBRARY_ERROR_CLASSES)
    assert len(LIBRARY_ERROR_CLASSES) >= 15


@pytest.mark.parametrize("cls", LIBRARY_ERROR_CLASSES, ids=lambda cls: cls.__name__)
def test_actor_error_is_caught_by_its_class_and_recovered(
    ray_cluster: Any, raiser: Any, cls: type[ContractError]
) -> None:
    """The driver catches the actor's error by its class; contract_error gives that error itself, intact."""
    local = error_of(cls)
    assert type(local) is cls
    with pytest.raises(cls) as info:
        ray_cluster.get(raiser.fail.remote(cls.__name__))
    wrapped = info.value
    assert isinstance(wrapped, ray_cluster.exceptions.RayTaskError)
    assert type(wrapped) is not cls
    assert wrapped.args[0] is wrapped.cause
    assert str(wrapped) != str(local)  # Ray's traceback text
    for name in cls.attribute_names:  # forwarded by Ray's wrapper
        assert getattr(wrapped, name) == getattr(local, name)
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        pickle.dumps(wrapped)
    with pytest.raises(AssertionError, match="is a wrapper, not a library class"):
        assert_contract_error(wrapped)

    found = contract_error(wrapped)
    assert type(found) is cls
    assert found is wrapped.cause
    assert str(found) == found.args[0] == str(local)
    assert len(str(found)) <= MAX_MESSAGE_CHARS
    assert found.details() == local.details()
    assert found.details()["error"] == cls.__name__
    assert_contract_error(found)
    clone = pickle.loads(pickle.dumps(found))
    assert type(clone) is cls
    assert clone.details() == found.details()


def test_capped_message_is_recovered_at_the_cap(ray_cluster: Any, raiser: Any) -> None:
    """An error whose message hit the 2,000-character cap comes back at the cap; Ray's own text is longer."""
    with pytest.raises(ContractTypeError) as info:
        ray_cluster.get(raiser.fail_with_long_argument.remote(5000))
    assert len(str(info.value)) > MAX_MESSAGE_CHARS
    found = contract_error(info.value)
    assert found is not None
    assert len(str(found)) == MAX_MESSAGE_CHARS
    assert str(found).endswith("...")
    assert found.details()["argument"] == "a" * 5000
    assert_contract_error(found)


def test_details_log_as_json(ray_cluster: Any, raiser: Any) -> None:
    """details() of a recovered error is a flat record a structured logger can write as JSON."""
    with pytest.raises(ContractError) as info:
        ray_cluster.get(raiser.fail.remote("RolloutPromptMismatchError"))
    found = contract_error(info.value)
    assert found is not None
    record = json.loads(json.dumps(found.details()))
    assert record == {
        "error": "RolloutPromptMismatchError",
        "message": str(found),
        "expected_length": 3,
        "actual_length": 3,
        "first_mismatch_index": 2,
    }
