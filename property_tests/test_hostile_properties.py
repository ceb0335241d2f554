"""Hostile inputs against every public function of the facade (SPEC §7 invariant 1).

Invariant 1: for any arguments, including arguments of the wrong type, a public function either returns or
raises an exception that is a ``ContractError`` (and the built-in of SPEC §0.3), whose message is at most 2,000
characters and which survives a pickle round-trip unchanged.  Never an AttributeError/IndexError/KeyError/
TypeError from inside, and never a hang (each example has a deadline).

The hostile values mix garbage (None, bools, NaN/inf, huge and negative ints, strings, bytes, arbitrary objects;
0-d and n-d arrays of every dtype, real bool arrays, ndarray subclasses such as ``np.matrix`` and masked arrays,
torch tensors including 0-d ones) with near-valid stand-ins for vLLM objects whose attributes are garbage, so
checks deep inside are reached too.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rl_contracts import vllm_utils
from rl_contracts.errors import MAX_MESSAGE_CHARS
from rl_contracts.logprobs import (
    MismatchBounds,
    check_logprob_agreement,
    importance_weights,
    logprob_mismatch,
    sequence_logprob_error_mask,
    truncated_importance_weights,
)
from rl_contracts.metrics import CounterSnapshot, per_engine_delta
from rl_contracts.rollouts import rollout_batch, sampled_logprobs
from rl_contracts.routed_experts import routing_agreement
from rl_contracts.splice import replace_prefix_tokens, resolve_terminator_token_ids, splice_prefix_tokens
from rl_contracts.testing import assert_contract_error
from rl_contracts.weights import check_weight_versions, weight_version_per_token, weight_version_spans

SCALARS: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=300),
    st.integers(min_value=-(2**80), max_value=2**80),
    # Beyond Python's int-to-str limit, so a message that skips errors.render() fails.
    st.sampled_from([1, -1]).map(lambda sign: sign * 10**5000),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.binary(max_size=6),
    st.just(object()),
    st.sampled_from([np.int64(3), np.uint8(200), np.bool_(True), np.float32("nan"), torch.tensor(2)]),
)


class _Tagged(np.ndarray):
    """An ndarray subclass that adds nothing: array checks must not depend on the exact class."""


_NUMPY_DTYPES = [np.uint8, np.uint16, np.int8, np.int64, np.float32, np.bool_]
_TORCH_DTYPES = [torch.uint8, torch.int32, torch.int64, torch.float32, torch.bool]
_SHAPES = st.lists(st.integers(0, 3), min_size=0, max_size=3).map(tuple)


def _numpy(shape: tuple[int, ...], dtype: Any, kind: str) -> Any:
    """An array of ones (``True`` for bool) of ``shape`` and ``dtype``; 0-d when ``shape == ()``."""
    base = np.ones(shape, dtype=dtype)  # np.ones((), d) is a 0-d array, never a numpy scalar
    if kind == "matrix":  # np.matrix keeps every slice 2-D; its constructor warns, a view does not
        return base.reshape(-1)[:3].view(np.matrix) if base.ndim > 2 else base.view(np.matrix)
    if kind == "masked":
        return np.ma.masked_array(base, mask=np.arange(base.size).reshape(shape) % 2 == 1)
    if kind == "tagged":
        return base.view(_Tagged)
    return base


def _arrays() -> st.SearchStrategy[Any]:
    """0-d and n-d numpy arrays of every dtype (bool ones really bool), ndarray subclasses, and torch tensors."""
    numpy_arrays = st.builds(
        _numpy,
        _SHAPES,
        st.sampled_from(_NUMPY_DTYPES),
        st.sampled_from(["plain", "matrix", "masked", "tagged"]),
    )
    tensors = st.builds(
        lambda shape, dtype: torch.ones(shape, dtype=dtype), _SHAPES, st.sampled_from(_TORCH_DTYPES)
    )
    zero_d = st.one_of(
        st.builds(np.array, st.sampled_from([2, 2.0, True, -1])),
        st.builds(torch.tensor, st.sampled_from([2, 2.0, True, -1])),
    )
    return st.one_of(numpy_arrays, tensors, zero_d)


LEAVES = st.one_of(SCALARS, _arrays())

HOSTILE: st.SearchStrategy[Any] = st.recursive(
    LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(st.one_of(st.text(max_size=8), st.integers(-2, 5)), inner, max_size=4),
        st.builds(SimpleNamespace, **dict.fromkeys(["index", "message", "token_ids", "logprobs"], inner)),
        st.builds(
            SimpleNamespace,
            **dict.fromkeys(
                [
                    "prompt_token_ids",
                    "outputs",
                    "routed_experts",
                    "prompt_routed_experts",
                    "num_cached_tokens",
                ],
                inner,
            ),
        ),
        st.builds(SimpleNamespace, choices=inner, model_dump=st.just(lambda: {"choices": []})),
        st.builds(SimpleNamespace, **dict.fromkeys(["offset", "length", "token_ids"], inner)),
    ),
    max_leaves=12,
)

FACADE_FUNCTIONS = sorted(
    name for name in vllm_utils.__all__ if callable(getattr(vllm_utils, name)) and not name.isupper()
)

# Keyword-only arguments that select an environment (not data) get plausible values half of the time.
DEVICE = st.one_of(st.just("cpu"), HOSTILE)
DTYPE = st.one_of(
    st.sampled_from([torch.int8, torch.int16, torch.int32, torch.int64, torch.float32]), HOSTILE
)


def _call(function: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    try:
        function(*args, **kwargs)
    except Exception as exc:  # the property is about which exceptions escape
        assert_contract_error(exc)


def test_every_facade_function_is_covered() -> None:
    """The table below drives every public function of the facade."""
    assert set(FACADE_FUNCTIONS) == set(CALLS)


CALLS: dict[str, Callable[[st.DataObject], None]] = {
    "_format_refit_key_error": lambda d: _call(
        vllm_utils._format_refit_key_error, d.draw(HOSTILE), d.draw(HOSTILE)
    ),
    "assert_reload_refit_config_supported": lambda d: _call(
        vllm_utils.assert_reload_refit_config_supported,
        d.draw(
            st.one_of(
                HOSTILE,
                st.fixed_dictionaries(
                    {"vllm_cfg": st.just({"refit_with_reload_api": True})},
                    optional={
                        "colocated": HOSTILE,
                        "refit_transport": HOSTILE,
                        "quant_cfg": HOSTILE,
                        "vllm_kwargs": HOSTILE,
                        "_draft_weights_from_refit": HOSTILE,
                        "_mtp_weights_from_refit": HOSTILE,
                    },
                ),
            )
        ),
    ),
    "is_grouped_moe_expert_weight_name": lambda d: _call(
        vllm_utils.is_grouped_moe_expert_weight_name, d.draw(HOSTILE)
    ),
    "_placeholder_range_bounds": lambda d: _call(vllm_utils._placeholder_range_bounds, d.draw(HOSTILE)),
    "remap_multimodal_placeholders": lambda d: _call(
        vllm_utils.remap_multimodal_placeholders,
        template_token_ids=d.draw(st.one_of(st.lists(st.integers(0, 5), max_size=12), HOSTILE)),
        final_token_ids=d.draw(st.one_of(st.lists(st.integers(0, 5), max_size=12), HOSTILE)),
        mm_placeholders=d.draw(
            st.one_of(
                HOSTILE, st.dictionaries(st.text(max_size=4), st.lists(HOSTILE, max_size=3), max_size=2)
            )
        ),
        splice=d.draw(HOSTILE),
    ),
    "_as_routed_experts_tensor": lambda d: _call(
        vllm_utils._as_routed_experts_tensor, d.draw(HOSTILE), device=d.draw(DEVICE), dtype=d.draw(DTYPE)
    ),
    "validate_rollout_prompt": lambda d: _call(
        vllm_utils.validate_rollout_prompt, d.draw(HOSTILE), d.draw(HOSTILE)
    ),
    "format_prompt_for_vllm_generation": lambda d: _call(
        vllm_utils.format_prompt_for_vllm_generation,
        d.draw(
            st.one_of(
                HOSTILE,
                st.fixed_dictionaries(
                    {
                        "input_ids": st.one_of(HOSTILE, st.just(np.zeros((2, 3), np.int64))),
                        "input_lengths": st.one_of(HOSTILE, st.just(np.array([1, 2]))),
                    },
                    optional={
                        "vllm_content": HOSTILE,
                        "vllm_multi_modal_data": HOSTILE,
                        "vllm_images": HOSTILE,
                    },
                ),
            )
        ),
        d.draw(HOSTILE),
    ),
    "pad_and_align_routed_expert_indices": lambda d: _call(
        vllm_utils.pad_and_align_routed_expert_indices,
        d.draw(HOSTILE),
        d.draw(HOSTILE),
        valid_length=d.draw(HOSTILE),
        padded_length=d.draw(HOSTILE),
        device=d.draw(DEVICE),
        require_complete_routed_experts=d.draw(HOSTILE),
        allow_missing_routed_experts_fallback=d.draw(HOSTILE),
        return_stats=d.draw(HOSTILE),
        routed_experts_dtype=d.draw(DTYPE),
        routes_start=d.draw(HOSTILE),
    ),
    "attach_routed_experts_to_chat_response_choices": lambda d: _call(
        vllm_utils.attach_routed_experts_to_chat_response_choices,
        d.draw(HOSTILE),
        d.draw(HOSTILE),
        device=d.draw(DEVICE),
        logger=None,
        routed_experts_dtype=d.draw(DTYPE),
        routes_start=d.draw(HOSTILE),
    ),
    "attach_token_information_to_chat_response_choices": lambda d: _call(
        vllm_utils.attach_token_information_to_chat_response_choices, d.draw(HOSTILE), d.draw(HOSTILE)
    ),
    "model_dump_chat_response_with_dynamic_message_fields": lambda d: _call(
        vllm_utils.model_dump_chat_response_with_dynamic_message_fields, d.draw(HOSTILE)
    ),
    "encode_counter_key": lambda d: _call(vllm_utils.encode_counter_key, d.draw(HOSTILE), d.draw(HOSTILE)),
    "_is_kept": lambda d: _call(vllm_utils._is_kept, d.draw(HOSTILE)),
    "aggregate_spec_decode_counters": lambda d: _call(
        vllm_utils.aggregate_spec_decode_counters,
        d.draw(
            st.one_of(
                HOSTILE,
                st.lists(
                    st.dictionaries(
                        st.sampled_from(
                            ["vllm:prompt_tokens", "vllm:spec_decode_num_accepted_tokens_per_pos"]
                        ),
                        HOSTILE,
                    ),
                    max_size=3,
                ),
            )
        ),
    ),
    "_first_delta": lambda d: _call(
        vllm_utils._first_delta, d.draw(HOSTILE), d.draw(HOSTILE), d.draw(HOSTILE)
    ),
    "_mean_from_histogram": lambda d: _call(
        vllm_utils._mean_from_histogram, d.draw(HOSTILE), d.draw(HOSTILE)
    ),
    "compute_engine_step_metrics": lambda d: _call(
        vllm_utils.compute_engine_step_metrics, d.draw(HOSTILE), d.draw(HOSTILE)
    ),
    "compute_spec_decode_metrics": lambda d: _call(
        vllm_utils.compute_spec_decode_metrics, d.draw(HOSTILE), d.draw(HOSTILE)
    ),
    "resolve_generation_worker_cls": lambda d: _call(
        vllm_utils.resolve_generation_worker_cls, d.draw(HOSTILE), d.draw(HOSTILE)
    ),
}


@pytest.mark.parametrize("name", sorted(CALLS))
@settings(deadline=timedelta(seconds=5))
@given(data=st.data())
def test_hostile_arguments_only_raise_contract_errors(name: str, data: st.DataObject) -> None:
    """Invariant 1: any garbage in any argument either returns or raises a bounded, picklable ContractError."""
    CALLS[name](data)


WEIGHT_OUTPUTS = st.one_of(
    HOSTILE,
    st.builds(
        SimpleNamespace,
        index=HOSTILE,
        token_ids=st.one_of(HOSTILE, st.lists(st.integers(0, 5), max_size=6)),
        weight_versions=st.one_of(
            HOSTILE,
            st.lists(
                st.tuples(st.sampled_from(["7", "8", ""]), st.integers(-1, 7), st.integers(-1, 7)), max_size=3
            ),
        ),
    ),
)

ROLLOUT_CHOICES = st.builds(
    SimpleNamespace,
    index=st.one_of(st.integers(0, 2), HOSTILE),
    token_ids=st.one_of(HOSTILE, st.lists(st.integers(0, 5), max_size=4)),
    logprobs=st.one_of(
        HOSTILE,
        st.lists(st.dictionaries(st.integers(0, 5), st.builds(SimpleNamespace, logprob=HOSTILE)), max_size=4),
    ),
    finish_reason=st.one_of(st.sampled_from(["stop", "length", "abort"]), HOSTILE),
    weight_versions=st.one_of(
        HOSTILE,
        st.lists(st.tuples(st.sampled_from(["7", "8"]), st.integers(0, 4), st.integers(0, 4)), max_size=2),
    ),
)
ROLLOUT_OUTPUTS = st.builds(
    SimpleNamespace,
    prompt_token_ids=st.one_of(HOSTILE, st.lists(st.integers(0, 5), max_size=4)),
    outputs=st.one_of(HOSTILE, st.lists(ROLLOUT_CHOICES, max_size=3)),
    finished=st.one_of(st.booleans(), HOSTILE),
)
ENGINE_SNAPSHOTS = st.builds(
    CounterSnapshot.from_worker_dict,
    st.dictionaries(st.sampled_from(["vllm:prompt_tokens", "vllm:generation_tokens"]), st.integers(0, 9)),
    process=st.sampled_from(["a", "b"]),
    taken_at=st.floats(0, 3),
)
ENGINE_SIDES = st.one_of(
    HOSTILE,
    st.lists(ENGINE_SNAPSHOTS, max_size=3),
    st.lists(st.one_of(ENGINE_SNAPSHOTS, HOSTILE), max_size=3),
)

# Public functions of the splice and weights modules that the facade does not carry (the reference has none).
LOGPROBS = st.one_of(
    HOSTILE,
    st.sampled_from(
        [torch.full((2, 3), -1.0), np.full((2, 3), -0.5), torch.full((3,), -2.0, dtype=torch.float16)]
    ),
    st.builds(
        lambda value: torch.full((2, 3), value, dtype=torch.float64),
        st.floats(allow_nan=True, allow_infinity=True),
    ),
)
"""Logprob inputs: garbage, near-valid batches and batches holding one hostile float."""
MASKS = st.one_of(HOSTILE, st.sampled_from([None, torch.ones(2, 3), np.array([[1, 0, 1], [0, 1, 1]])]))
ROUTES = st.one_of(
    HOSTILE,
    st.sampled_from(
        [
            torch.zeros((2, 1, 2), dtype=torch.int64),
            np.array([[[0, 1]], [[-1, -1]]], np.int8),
            torch.ones((1, 2, 1, 2)),
        ]
    ),
)

# Public functions outside the facade (the reference has none): splice, weights, logprobs and routing agreement.
MODULE_CALLS: dict[str, Callable[[st.DataObject], None]] = {
    "splice_prefix_tokens": lambda d: _call(
        splice_prefix_tokens,
        tokenizer=d.draw(HOSTILE),
        model_prefix_token_ids=d.draw(st.one_of(st.lists(st.integers(0, 5), max_size=6), HOSTILE)),
        template_prefix_token_ids=d.draw(st.one_of(st.lists(st.integers(0, 5), max_size=6), HOSTILE)),
        template_token_ids=d.draw(st.one_of(st.lists(st.integers(0, 5), max_size=8), HOSTILE)),
        eos_token_id=d.draw(HOSTILE),
        terminator_ids=d.draw(HOSTILE),
    ),
    "replace_prefix_tokens": lambda d: _call(
        replace_prefix_tokens,
        d.draw(st.one_of(HOSTILE, st.builds(SimpleNamespace, eos_token_id=HOSTILE))),
        d.draw(HOSTILE),
        d.draw(HOSTILE),
        d.draw(HOSTILE),
        eos_token_id=d.draw(HOSTILE),
    ),
    "resolve_terminator_token_ids": lambda d: _call(
        resolve_terminator_token_ids,
        d.draw(st.one_of(HOSTILE, st.builds(SimpleNamespace, eos_token_id=HOSTILE))),
        d.draw(st.one_of(HOSTILE, st.fixed_dictionaries({"eos_token_id": HOSTILE}))),
    ),
    "weight_version_spans": lambda d: _call(
        weight_version_spans, d.draw(WEIGHT_OUTPUTS), required=d.draw(st.one_of(st.booleans(), HOSTILE))
    ),
    "check_weight_versions": lambda d: _call(
        check_weight_versions,
        d.draw(WEIGHT_OUTPUTS),
        allowed=d.draw(st.one_of(HOSTILE, st.frozensets(st.sampled_from(["7", "8"])))),
        required=d.draw(st.one_of(st.booleans(), HOSTILE)),
    ),
    "weight_version_per_token": lambda d: _call(
        weight_version_per_token, d.draw(HOSTILE), labels=d.draw(st.one_of(HOSTILE, st.just(["7", "8"])))
    ),
    "rollout_batch": lambda d: _call(
        rollout_batch,
        d.draw(st.one_of(HOSTILE, st.lists(st.lists(st.integers(0, 5), max_size=4), max_size=3))),
        d.draw(st.one_of(HOSTILE, st.lists(ROLLOUT_OUTPUTS, max_size=3))),
        n=d.draw(st.one_of(st.none(), st.integers(0, 3), HOSTILE)),
        allowed_versions=d.draw(st.one_of(st.none(), st.just({"7"}), HOSTILE)),
        version_labels=d.draw(st.one_of(st.none(), HOSTILE)),
        finish_reasons=d.draw(st.one_of(st.just(("stop", "length")), HOSTILE)),
        pad_token_id=d.draw(st.one_of(st.just(0), HOSTILE)),
        logprob_floor=d.draw(st.one_of(st.none(), HOSTILE)),
        forbidden_token_ids=d.draw(st.one_of(st.none(), st.just({5}), HOSTILE)),
        allow_mixed_versions=d.draw(st.one_of(st.just(False), HOSTILE)),
        current_version=d.draw(st.one_of(st.none(), st.just(3), HOSTILE)),
        max_staleness=d.draw(st.one_of(st.none(), st.just(1), HOSTILE)),
        version_order=d.draw(st.one_of(st.none(), HOSTILE)),
        prefix_cache_version=d.draw(st.one_of(st.none(), st.just("7"), HOSTILE)),
    ),
    "sampled_logprobs": lambda d: _call(
        sampled_logprobs,
        d.draw(st.one_of(HOSTILE, ROLLOUT_CHOICES)),
        floor=d.draw(st.one_of(st.none(), HOSTILE)),
    ),
    "per_engine_delta": lambda d: _call(per_engine_delta, d.draw(ENGINE_SIDES), d.draw(ENGINE_SIDES)),
    "CounterSnapshot.from_vllm_metrics(process, taken_at)": lambda d: _call(
        CounterSnapshot.from_vllm_metrics, d.draw(HOSTILE), process=d.draw(HOSTILE), taken_at=d.draw(HOSTILE)
    ),
    "logprob_mismatch": lambda d: _call(
        logprob_mismatch,
        d.draw(LOGPROBS),
        d.draw(LOGPROBS),
        d.draw(MASKS),
        kl_type=d.draw(st.one_of(st.just("k3"), HOSTILE)),
        band=d.draw(st.one_of(st.just((0.8, 1.25)), HOSTILE)),
        neg_inf=d.draw(st.one_of(st.sampled_from(["error", "drop"]), HOSTILE)),
        positive_tolerance=d.draw(st.one_of(st.just(1e-4), HOSTILE)),
    ),
    "check_logprob_agreement": lambda d: _call(
        check_logprob_agreement,
        d.draw(LOGPROBS),
        d.draw(LOGPROBS),
        d.draw(MASKS),
        bounds=d.draw(st.one_of(st.builds(MismatchBounds), HOSTILE)),
        neg_inf=d.draw(st.one_of(st.just("drop"), HOSTILE)),
    ),
    "importance_weights": lambda d: _call(
        importance_weights,
        d.draw(LOGPROBS),
        d.draw(LOGPROBS),
        d.draw(MASKS),
        level=d.draw(st.one_of(st.sampled_from(["token", "sequence"]), HOSTILE)),
    ),
    "truncated_importance_weights": lambda d: _call(
        truncated_importance_weights,
        d.draw(LOGPROBS),
        d.draw(LOGPROBS),
        d.draw(MASKS),
        kind=d.draw(st.one_of(st.sampled_from(["tis", "icepop", "seq-mask-tis"]), HOSTILE)),
        high=d.draw(st.one_of(st.just(1.2), HOSTILE)),
        low=d.draw(st.one_of(st.just(0.8), HOSTILE)),
    ),
    "sequence_logprob_error_mask": lambda d: _call(
        sequence_logprob_error_mask,
        d.draw(LOGPROBS),
        d.draw(LOGPROBS),
        d.draw(MASKS),
        threshold=d.draw(st.one_of(st.just(1.5), HOSTILE)),
    ),
    "routing_agreement": lambda d: _call(
        routing_agreement, d.draw(ROUTES), d.draw(ROUTES), mask=d.draw(st.one_of(st.none(), MASKS))
    ),
}


@pytest.mark.parametrize("name", sorted(MODULE_CALLS))
@settings(deadline=timedelta(seconds=5))
@given(data=st.data())
def test_hostile_arguments_to_module_functions(name: str, data: st.DataObject) -> None:
    """Invariant 1 for the splice, weights, rollouts and per-engine metrics functions outside the facade: returns
    or a bounded ContractError."""
    """Invariant 1 for the public functions outside the facade: returns or a bounded ContractError."""
    MODULE_CALLS[name](data)


HUGE = list(range(1_000_000))


@pytest.mark.parametrize(
    ("call", "raises"),
    [
        (lambda: vllm_utils._format_refit_key_error("missing keys", {f"k{i}" for i in range(100_000)}), None),
        (lambda: vllm_utils.validate_rollout_prompt(HUGE, [*HUGE[:-1], -5]), ValueError),
        (lambda: vllm_utils.validate_rollout_prompt(HUGE, None), ValueError),
        (
            lambda: vllm_utils.remap_multimodal_placeholders(
                template_token_ids=HUGE,
                final_token_ids=HUGE,
                mm_placeholders={"image": [{"offset": 999_999, "length": 5}]},
            ),
            ValueError,
        ),
        (
            lambda: vllm_utils.aggregate_spec_decode_counters(
                [{"vllm:spec_decode_num_accepted_tokens_per_pos": [*([1.0] * 999_999), float("nan")]}]
            ),
            ValueError,
        ),
        (
            lambda: vllm_utils._as_routed_experts_tensor(
                np.full((1000, 10, 100), 300, dtype=np.uint16), device="cpu", dtype=torch.int8
            ),
            ValueError,
        ),
        (lambda: vllm_utils.encode_counter_key("|" * 1_000_000, "sum"), ValueError),
    ],
)
def test_million_element_inputs_give_bounded_results_or_errors(
    call: Callable[[], object], raises: type[Exception] | None
) -> None:
    """Inputs of 10^6 elements finish; errors are bounded ContractErrors, results bounded strings."""
    if raises is None:
        result = call()
        assert isinstance(result, str)
        assert len(result) <= MAX_MESSAGE_CHARS
        return
    with pytest.raises(raises) as info:
        call()
    assert_contract_error(info.value)
