"""Issue 30's rollout hand-off defaults on real vLLM 0.32 outputs: forbidden tokens, mixed and stale versions.

The tiny models' tokenizer declares ``<image>`` (id 7) as a special token; ``logit_bias`` makes the policy sample it,
as verl #7038's policy sampled ``<|image_pad|>``.  Weight versions come from ``LLMEngine.set_weight_version``, set
before a generate (one span) or while a request is stepped (two spans, as SkyRL #1836's in-flight update).
"""

from __future__ import annotations

from typing import Any

import pytest
from vllm import SamplingParams

from rl_contracts.errors import ForbiddenTokenError, RolloutWeightVersionError
from rl_contracts.prompts import media_placeholder_token_ids
from rl_contracts.rollouts import rollout_batch
from rl_contracts.testing import assert_contract_error

pytestmark = [pytest.mark.vllm, pytest.mark.vllm_releases("0.32")]

PROMPT = [1, 40, 41, 42, 43, 44, 45]


def test_a_sampled_media_placeholder_is_refused(moe_llm: Any) -> None:
    """The real tokenizer's media ids hold <image>; a sampled <image> fails at row 0, choice 0, position 0."""
    tokenizer = moe_llm.get_tokenizer()
    forbidden = media_placeholder_token_ids(tokenizer)
    image = tokenizer.convert_tokens_to_ids("<image>")
    assert image in forbidden
    params = SamplingParams(max_tokens=3, logprobs=0, temperature=1.0, seed=5, logit_bias={image: 100.0})
    outputs = moe_llm.generate([{"prompt_token_ids": PROMPT}], params, use_tqdm=False)
    assert outputs[0].outputs[0].token_ids[0] == image
    with pytest.raises(ForbiddenTokenError) as info:
        rollout_batch([PROMPT], outputs, forbidden_token_ids=forbidden)
    assert_contract_error(info.value)
    assert (info.value.row, info.value.choice, info.value.position, info.value.token_id) == (0, 0, 0, image)
    clean = moe_llm.generate(
        [{"prompt_token_ids": PROMPT}],
        SamplingParams(max_tokens=3, logprobs=0, temperature=1.0, seed=5, logit_bias={image: -100.0}),
        use_tqdm=False,
    )
    assert len(rollout_batch([PROMPT], clean, forbidden_token_ids=forbidden)) == 1


def test_an_output_stepped_across_a_version_change_is_refused_by_default(moe_llm: Any) -> None:
    """Two spans from a real in-flight update: refused by default, accepted with allow_mixed_versions."""
    engine = moe_llm.llm_engine
    engine.set_weight_version("3")
    params = SamplingParams(max_tokens=8, logprobs=0, temperature=0.0, ignore_eos=True)
    engine.add_request("mixed-0", {"prompt_token_ids": PROMPT}, params)
    for _ in range(3):
        engine.step()
    engine.set_weight_version("4")
    finished = []
    while engine.has_unfinished_requests():
        finished += [output for output in engine.step() if output.finished]
    assert [span.version for span in finished[0].outputs[0].weight_versions] == ["3", "4"]
    with pytest.raises(RolloutWeightVersionError) as info:
        rollout_batch([PROMPT], finished)
    assert_contract_error(info.value)
    assert (info.value.row, info.value.choice, info.value.check, info.value.version) == (
        0,
        0,
        "mixed_versions",
        "4",
    )
    batch = rollout_batch([PROMPT], finished, allow_mixed_versions=True, current_version=4, max_staleness=1)
    assert batch.version_labels == ("3", "4")


def test_a_rollout_beyond_the_staleness_bound_is_refused(moe_llm: Any) -> None:
    """Labelled "2" and checked at current version 5: a lag of 3 fails a bound of 2 and passes a bound of 3."""
    moe_llm.llm_engine.set_weight_version("2")
    params = SamplingParams(max_tokens=4, logprobs=0, temperature=0.0)
    outputs = moe_llm.generate([{"prompt_token_ids": PROMPT}], params, use_tqdm=False)
    with pytest.raises(RolloutWeightVersionError) as info:
        rollout_batch([PROMPT], outputs, current_version=5, max_staleness=2)
    assert_contract_error(info.value)
    assert (info.value.check, info.value.version) == ("staleness", "2")
    assert "3 versions behind current_version=5" in str(info.value)
    assert len(rollout_batch([PROMPT], outputs, current_version=5, max_staleness=3)) == 1
