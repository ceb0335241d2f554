"""Properties of prompt hygiene: the repeated-BOS check and the learner-versus-engine tokenizer check."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rl_contracts.errors import PromptFormatError, RolloutPromptMismatchError, TokenizerMismatchError
from rl_contracts.prompts import (
    TOKENIZER_COMPONENTS,
    check_bos_not_repeated,
    check_tokenizers_match,
    tokenizer_fingerprint,
    validate_rollout_prompt,
)
from rl_contracts.testing import assert_contract_error
from rl_contracts.testing.chat_tokenizer import (
    CLOSED_TEMPLATE,
    OPEN_LAST_TURN_TEMPLATE,
    SPECIAL_TOKENS,
    WORDS,
    StandInChatTokenizer,
)

BOS = 1
prompts = st.lists(st.integers(0, 3), max_size=5)


def outcome(call: Any) -> type[Exception] | None:
    """The library error class ``call()`` raises, or ``None``."""
    try:
        call()
    except (PromptFormatError, RolloutPromptMismatchError) as error:
        assert_contract_error(error)
        return type(error)
    return None


@given(prompts)
def test_repeated_bos_rejected_exactly_when_the_first_two_ids_are_bos(prompt: list[int]) -> None:
    """``check_bos_not_repeated`` raises ``PromptFormatError`` if and only if ``prompt[:2] == [bos, bos]``."""
    raised = outcome(lambda: check_bos_not_repeated(prompt, BOS))
    assert (raised is PromptFormatError) == (prompt[:2] == [BOS, BOS])


@given(prompts, st.none() | prompts)
def test_rollout_check_with_bos_id_adds_only_the_bos_rejection(
    expected: list[int], actual: list[int] | None
) -> None:
    """With ``bos_token_id``, ``validate_rollout_prompt`` raises ``PromptFormatError`` exactly when either prompt
    starts with the BOS twice, and otherwise behaves exactly as without it."""
    doubled = any(side is not None and side[:2] == [BOS, BOS] for side in (expected, actual))
    with_bos = outcome(lambda: validate_rollout_prompt(expected, actual, bos_token_id=BOS))
    without = outcome(lambda: validate_rollout_prompt(expected, actual))
    assert with_bos == (PromptFormatError if doubled else without)


_SWAPPABLE = [*SPECIAL_TOKENS[:3], *WORDS[:4], "a", "b"]


@dataclass(frozen=True)
class Build:
    """How one stand-in tokenizer is built: a vocabulary swap, its template, its EOS and an added-token flag."""

    swap: tuple[str, str] | None
    template: str | None
    eos: int | None
    lstrip_user: bool

    def tokenizer(self) -> StandInChatTokenizer:
        tokenizer = StandInChatTokenizer(self.template, swap=self.swap, eos_token_id=self.eos)
        if self.lstrip_user:
            user = tokenizer.get_vocab()["<|user|>"]
            decoder = tokenizer.added_tokens_decoder
            tokenizer.added_tokens_decoder = {i: replace(t, lstrip=i == user) for i, t in decoder.items()}
        return tokenizer


builds = st.builds(
    Build,
    swap=st.none() | st.tuples(st.sampled_from(_SWAPPABLE), st.sampled_from(_SWAPPABLE)),
    template=st.sampled_from([CLOSED_TEMPLATE, OPEN_LAST_TURN_TEMPLATE, None]),
    eos=st.sampled_from([2, 3, None]),
    lstrip_user=st.booleans(),
)


def raw_components(tokenizer: StandInChatTokenizer) -> dict[str, object]:
    """The four components read directly from the tokenizer, without any digest: the oracle of the property."""
    added = tokenizer.added_tokens_decoder
    return {
        "vocabulary": tokenizer.get_vocab(),
        "special_token_ids": (
            tokenizer.bos_token_id,
            tokenizer.eos_token_id,
            tokenizer.pad_token_id,
            tokenizer.unk_token_id,
            sorted(set(tokenizer.all_special_ids)),
        ),
        "chat_template": tokenizer.chat_template,
        "added_tokens": sorted(added.items()),
    }


@given(builds, builds)
def test_tokenizer_check_names_exactly_the_components_that_differ(first: Build, second: Build) -> None:
    """``check_tokenizers_match`` raises ``TokenizerMismatchError`` if and only if some component differs when read
    directly from the two tokenizers; ``.components`` lists exactly those, in ``TOKENIZER_COMPONENTS`` order; and
    equal fingerprints have equal digests."""
    learner, engine = first.tokenizer(), second.tokenizer()
    mine, theirs = raw_components(learner), raw_components(engine)
    differing = tuple(name for name in TOKENIZER_COMPONENTS if mine[name] != theirs[name])
    if not differing:
        check_tokenizers_match(learner, engine)
        assert tokenizer_fingerprint(learner).digest == tokenizer_fingerprint(engine).digest
        return
    with pytest.raises(TokenizerMismatchError) as info:
        check_tokenizers_match(learner, engine)
    assert info.value.components == differing
    assert_contract_error(info.value)
