"""Invariants of reading sampling parameters back and of the scoring-matches-rollout check (issue 30)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rl_contracts.errors import SamplingParamsError
from rl_contracts.testing import assert_contract_error
from rl_contracts.vllm_arguments import check_scoring_matches_rollout, sampling_settings

MODES = ("raw_logprobs", "raw_logits", "processed_logprobs", "processed_logits")
FIELDS = {
    "temperature": st.floats(0.0, 4.0),
    "top_p": st.floats(0.01, 1.0),
    "top_k": st.one_of(st.none(), st.integers(-1, 200)),
    "min_p": st.floats(0.0, 1.0),
    "logprobs_mode": st.sampled_from(MODES),
}
PARAMETERS = st.fixed_dictionaries({}, optional=FIELDS)


@given(PARAMETERS)
def test_a_rollout_matches_itself_and_reading_is_idempotent(parameters: dict[str, Any]) -> None:
    """check_scoring_matches_rollout(x, x) returns sampling_settings(x); reading a read record gives it back;
    top-k off (None, 0, -1) reads as -1; it truncates exactly when top_p < 1, top_k > 0 or min_p > 0."""
    settings = sampling_settings(parameters)
    assert check_scoring_matches_rollout(parameters, dict(parameters)) == settings
    assert sampling_settings(settings) == settings
    top_k = parameters.get("top_k")
    assert settings.top_k == (top_k if top_k is not None and top_k > 0 else -1)
    truncates = parameters.get("top_p", 1.0) < 1.0 or settings.top_k > 0 or parameters.get("min_p", 0.0) > 0.0
    assert settings.truncates is truncates


@given(PARAMETERS, st.sampled_from(sorted(FIELDS)), st.data())
def test_changing_one_parameter_is_named_with_both_values(
    parameters: dict[str, Any], field: str, data: st.DataObject
) -> None:
    """A scorer whose parameters differ from the rollout's in one field only raises naming exactly that field and
    both read values (logprobs_mode only when both sides state it)."""
    scoring = dict(parameters)
    scoring[field] = data.draw(FIELDS[field])
    rollout_settings, scoring_settings = sampling_settings(parameters), sampling_settings(scoring)
    before, after = getattr(rollout_settings, field), getattr(scoring_settings, field)
    # Relative tolerance only: pytest.approx's default absolute 1e-12 would call min_p=1e-23 equal to min_p=0.
    differs = (
        before != pytest.approx(after, rel=1e-6, abs=0) if isinstance(before, float) else before != after
    )
    if field == "logprobs_mode" and before is None:
        differs = False
    if not differs:
        assert check_scoring_matches_rollout(parameters, scoring, scorer="teacher") == rollout_settings
        return
    with pytest.raises(SamplingParamsError) as info:
        check_scoring_matches_rollout(parameters, scoring, scorer="teacher")
    error = info.value
    assert (error.field, error.fields, error.rollout_value, error.scoring_value, error.scorer) == (
        field,
        (field,),
        before,
        after,
        "teacher",
    )
    assert_contract_error(error)
