"""Prompt hygiene: a BOS repeated at the start of a prompt, and learner and engine tokenizers that differ.

Both faults pass every id comparison when the learner and the engine agree on them; these checks look at what the
ids are and mean.  The tokenizers are :class:`rl_contracts.testing.chat_tokenizer.StandInChatTokenizer`; the real
``transformers`` tokenizer of the tiny vLLM model is checked in ``tests/vllm/test_vllm_arguments.py``.
"""

from __future__ import annotations

import pickle
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch

from rl_contracts.errors import (
    ContractTypeError,
    PromptFormatError,
    RolloutPromptMismatchError,
    TokenizerMismatchError,
)
from rl_contracts.prompts import (
    MEDIA_PLACEHOLDER_TOKENS,
    TOKENIZER_COMPONENTS,
    TokenizerFingerprint,
    check_bos_not_repeated,
    check_tokenizers_match,
    media_placeholder_token_ids,
    tokenizer_fingerprint,
    validate_rollout_prompt,
)
from rl_contracts.testing import assert_contract_error
from rl_contracts.testing.chat_tokenizer import (
    OPEN_LAST_TURN_TEMPLATE,
    AddedToken,
    StandInChatTokenizer,
)

BOS = 1
MESSAGES = [{"role": "user", "content": "hello world"}]


def doubled_and_exact() -> tuple[list[int], list[int]]:
    """A rendered chat prompt tokenized again with special tokens (BOS twice), and the exact ids (BOS once)."""
    tokenizer = StandInChatTokenizer()
    text = tokenizer.apply_chat_template(MESSAGES, tokenize=False, add_generation_prompt=True)
    return tokenizer.encode(text), tokenizer.encode(text, add_special_tokens=False)


def test_rendered_text_tokenized_with_special_tokens_repeats_the_bos() -> None:
    """The fault itself: a template that renders BOS, re-encoded with special tokens, starts with BOS twice."""
    doubled, exact = doubled_and_exact()
    assert doubled[:2] == [BOS, BOS]
    with pytest.raises(PromptFormatError, match="starts with the BOS id 1 twice") as info:
        check_bos_not_repeated(doubled, BOS)
    assert (info.value.key, info.value.value) == ("prompt", "[1, 1]")
    assert_contract_error(info.value)
    check_bos_not_repeated(exact, BOS)


@pytest.mark.parametrize("prompt", [[], [1], [1, 1], [1, 5, 1, 1], [5, 1, 1], [2, 2, 5], [1, 1, 1]])
def test_only_a_leading_double_bos_is_rejected(prompt: list[int]) -> None:
    """A prompt is rejected exactly when its first two ids are both the BOS."""
    try:
        check_bos_not_repeated(prompt, BOS)
    except PromptFormatError:
        rejected = True
    else:
        rejected = False
    assert rejected == (prompt[:2] == [BOS, BOS])


@pytest.mark.parametrize("prompt", [(1, 1, 5), np.array([1, 1, 5], dtype=np.int64), torch.tensor([1, 1, 5])])
def test_repeated_bos_in_any_int_sequence(prompt: Any) -> None:
    """Tuples, numpy arrays and tensors are read like lists; ``name`` is how the message calls the prompt."""
    with pytest.raises(PromptFormatError, match="learner prompt starts with") as info:
        check_bos_not_repeated(prompt, BOS, name="learner prompt")
    assert info.value.key == "learner prompt"


@pytest.mark.parametrize(
    ("arguments", "match"),
    [
        (([1, 1], True), "bos_token_id must be"),
        (([1, 1], 1.0), "bos_token_id must be"),
        (([1.0, 1], 1), r"prompt\[0\]"),
        (("ab", 1), "prompt must be"),
    ],
)
def test_repeated_bos_check_rejects_bad_arguments(arguments: tuple[Any, Any], match: str) -> None:
    """A bool or float BOS id, and a prompt that is not int ids, are ``ContractTypeError``s."""
    with pytest.raises(ContractTypeError, match=match) as info:
        check_bos_not_repeated(*arguments)
    assert_contract_error(info.value)


def test_rollout_check_catches_a_doubled_bos_both_sides_agree_on() -> None:
    """With ``bos_token_id``, a BOS doubled on the learner and the engine alike is rejected; without, it passes."""
    doubled, _ = doubled_and_exact()
    validate_rollout_prompt(doubled, list(doubled))  # the reference's check: equal ids, accepted
    with pytest.raises(PromptFormatError) as info:
        validate_rollout_prompt(doubled, list(doubled), bos_token_id=BOS)
    assert info.value.key == "expected"
    assert_contract_error(info.value)


def test_rollout_check_names_the_engine_prompt_when_only_it_doubles_the_bos() -> None:
    """A text prompt that vLLM tokenized with its own BOS doubles it on the engine side only: ``actual`` is named."""
    doubled, exact = doubled_and_exact()
    with pytest.raises(PromptFormatError) as info:
        validate_rollout_prompt(exact, doubled, bos_token_id=BOS)
    assert info.value.key == "actual"
    with pytest.raises(RolloutPromptMismatchError):
        validate_rollout_prompt(exact, doubled)


def test_rollout_check_with_bos_id_otherwise_unchanged() -> None:
    """Clean prompts still pass, and mismatches and a missing engine prompt still raise as before."""
    _, exact = doubled_and_exact()
    validate_rollout_prompt(exact, tuple(exact), bos_token_id=BOS)
    with pytest.raises(RolloutPromptMismatchError):
        validate_rollout_prompt(exact, [*exact, 5], bos_token_id=BOS)
    with pytest.raises(RolloutPromptMismatchError):
        validate_rollout_prompt(exact, None, bos_token_id=BOS)
    with pytest.raises(ContractTypeError, match="bos_token_id"):
        validate_rollout_prompt(exact, exact, bos_token_id=False)


def test_fingerprint_is_deterministic_and_equal_for_equal_tokenizers() -> None:
    """Two tokenizers built alike have equal fingerprints and digests, and the check passes."""
    first, second = (
        tokenizer_fingerprint(StandInChatTokenizer()),
        tokenizer_fingerprint(StandInChatTokenizer()),
    )
    assert first == second
    assert first.digest == second.digest
    assert len(first.digest) == 64
    assert first.vocabulary_size == len(StandInChatTokenizer())
    assert dict(first.special_token_ids) == {
        "bos_token_id": 1,
        "eos_token_id": 2,
        "pad_token_id": 3,
        "unk_token_id": 0,
    }
    assert first.all_special_ids == tuple(range(9))
    assert first.added_token_count == 9
    check_tokenizers_match(StandInChatTokenizer(), StandInChatTokenizer())


def test_fingerprint_survives_pickle_and_stands_in_for_a_tokenizer() -> None:
    """A fingerprint computed elsewhere (a Ray worker) pickles, and may replace either side of the check."""
    fingerprint = pickle.loads(pickle.dumps(tokenizer_fingerprint(StandInChatTokenizer())))
    assert isinstance(fingerprint, TokenizerFingerprint)
    check_tokenizers_match(fingerprint, StandInChatTokenizer())
    check_tokenizers_match(StandInChatTokenizer(), fingerprint)
    with pytest.raises(TokenizerMismatchError):
        check_tokenizers_match(fingerprint, StandInChatTokenizer(swap=("a", "b")))


def test_retrained_vocabulary_with_the_same_ids_is_caught() -> None:
    """Same id space, two tokens swapped: only the vocabulary differs, and the first differing id is shown."""
    learner, engine = StandInChatTokenizer(swap=("fox", "the")), StandInChatTokenizer()
    with pytest.raises(TokenizerMismatchError) as info:
        check_tokenizers_match(learner, engine)
    error = info.value
    assert error.components == ("vocabulary",)
    the = engine.get_vocab()["the"]
    assert f"first differing id {the}: learner 'fox', engine 'the'" in str(error)
    assert error.learner_digest == tokenizer_fingerprint(learner).digest
    assert error.engine_digest == tokenizer_fingerprint(engine).digest
    assert_contract_error(error)


@pytest.mark.parametrize(
    ("engine", "components", "shown"),
    [
        (StandInChatTokenizer(OPEN_LAST_TURN_TEMPLATE), ("chat_template",), "chat_template (learner sha256"),
        (StandInChatTokenizer(None), ("chat_template",), "engine sha256 none"),
        (StandInChatTokenizer(eos_token_id=3), ("special_token_ids",), "eos_token_id 2 vs 3"),
        (
            StandInChatTokenizer(swap=("<s>", "a")),
            ("vocabulary", "special_token_ids", "added_tokens"),
            "bos_token_id 1 vs",
        ),
    ],
)
def test_each_differing_component_is_named(engine: Any, components: tuple[str, ...], shown: str) -> None:
    """A different chat template, a moved EOS, or a moved BOS (which moves its id in three components)."""
    with pytest.raises(TokenizerMismatchError) as info:
        check_tokenizers_match(StandInChatTokenizer(), engine)
    assert info.value.components == components
    assert shown in str(info.value)
    assert set(components) <= set(TOKENIZER_COMPONENTS)


def test_added_token_flags_count() -> None:
    """An added token whose ``lstrip`` flag changed tokenizes differently: ``added_tokens`` differs."""
    engine = StandInChatTokenizer()
    engine.added_tokens_decoder = {
        index: replace(token, lstrip=index == 6) for index, token in engine.added_tokens_decoder.items()
    }
    with pytest.raises(TokenizerMismatchError) as info:
        check_tokenizers_match(StandInChatTokenizer(), engine)
    assert info.value.components == ("added_tokens",)


def test_added_vocab_is_read_without_a_decoder() -> None:
    """A tokenizer with ``get_added_vocab()`` but no ``added_tokens_decoder`` still fingerprints its added tokens."""
    vocab = {"a": 0, "b": 1, "<x>": 2}
    tokenizer = SimpleNamespace(get_vocab=lambda: vocab, get_added_vocab=lambda: {"<x>": 2})
    bare = SimpleNamespace(get_vocab=lambda: vocab)
    assert tokenizer_fingerprint(tokenizer).added_token_count == 1
    assert tokenizer_fingerprint(bare).added_token_count == 0
    assert tokenizer_fingerprint(bare).chat_template is None
    with pytest.raises(TokenizerMismatchError) as info:
        check_tokenizers_match(tokenizer, bare)
    assert info.value.components == ("added_tokens",)


def test_named_chat_templates_are_fingerprinted_by_content() -> None:
    """A mapping of named templates fingerprints by its items, whatever their order."""
    vocab = {"a": 0}
    first = SimpleNamespace(get_vocab=lambda: vocab, chat_template={"default": "x", "tool_use": "y"})
    second = SimpleNamespace(get_vocab=lambda: vocab, chat_template={"tool_use": "y", "default": "x"})
    check_tokenizers_match(first, second)
    third = SimpleNamespace(get_vocab=lambda: vocab, chat_template={"default": "x", "tool_use": "z"})
    with pytest.raises(TokenizerMismatchError):
        check_tokenizers_match(first, third)


def test_numpy_ids_in_a_vocabulary_are_plain_ints() -> None:
    """A vocabulary whose ids are numpy ints fingerprints like the same vocabulary with Python ints."""
    plain = SimpleNamespace(get_vocab=lambda: {"a": 0, "b": 1})
    numpy_ids = SimpleNamespace(get_vocab=lambda: {"a": np.int64(0), "b": np.int32(1)})
    assert tokenizer_fingerprint(plain) == tokenizer_fingerprint(numpy_ids)


def _added(token: object) -> SimpleNamespace:
    return SimpleNamespace(get_vocab=lambda: {"a": 0}, added_tokens_decoder={0: token})


BAD_TOKENIZERS: list[tuple[str, Any, str]] = [
    ("no get_vocab", SimpleNamespace(eos_token_id=2), "learner must be a tokenizer with get_vocab"),
    (
        "vocab list",
        SimpleNamespace(get_vocab=lambda: [("a", 0)]),
        r"learner\.get_vocab\(\) must be a mapping",
    ),
    ("bytes token", SimpleNamespace(get_vocab=lambda: {b"a": 0}), "str tokens"),
    ("bool id", SimpleNamespace(get_vocab=lambda: {"a": True}), r"get_vocab\(\)\['a'\] must be an int"),
    ("eos str", SimpleNamespace(get_vocab=dict, eos_token_id="2"), r"learner\.eos_token_id must be"),
    ("specials", SimpleNamespace(get_vocab=dict, all_special_ids=[1, None]), r"all_special_ids\[1\]"),
    ("specials str", SimpleNamespace(get_vocab=dict, all_special_ids="12"), "all_special_ids must be"),
    ("template", SimpleNamespace(get_vocab=dict, chat_template=3), r"learner\.chat_template must be"),
    ("template map", SimpleNamespace(get_vocab=dict, chat_template={"a": 3}), "chat_template must be"),
    ("decoder", SimpleNamespace(get_vocab=dict, added_tokens_decoder=[1]), "added_tokens_decoder must be"),
    ("content", _added(SimpleNamespace(content=None)), r"added_tokens_decoder\[0\] must be"),
    ("flags", _added(AddedToken("x", special=1)), "flags are bools"),  # type: ignore[arg-type]
    ("added", SimpleNamespace(get_vocab=dict, get_added_vocab=lambda: {"x": "1"}), "get_added_vocab"),
]


@pytest.mark.parametrize(
    ("case", "tokenizer", "match"), BAD_TOKENIZERS, ids=[c for c, _, _ in BAD_TOKENIZERS]
)
def test_unreadable_tokenizers_raise_contract_type_errors(case: str, tokenizer: Any, match: str) -> None:
    """Each malformed tokenizer attribute is a ``ContractTypeError`` naming the side and the attribute."""
    del case
    with pytest.raises(ContractTypeError, match=match) as info:
        check_tokenizers_match(tokenizer, StandInChatTokenizer())
    assert_contract_error(info.value)
    with pytest.raises(ContractTypeError):
        tokenizer_fingerprint(tokenizer)


# ---------------------------------------------------------------------------------------------------- media tokens


def test_media_placeholder_ids_come_from_known_names_added_tokens_and_declared_attributes() -> None:
    """Known placeholders in the vocabulary, added tokens naming a medium, and a processor's declared tokens."""
    tokenizer = StandInChatTokenizer(
        words=("<|image_pad|>", "<|video_pad|>", "<start_of_image>", "image", "hello")
    )
    vocab = tokenizer.get_vocab()
    found = media_placeholder_token_ids(tokenizer)
    assert found == {vocab["<|image_pad|>"], vocab["<|video_pad|>"], vocab["<start_of_image>"]}
    assert vocab["image"] not in found  # an ordinary word is not a media token
    assert media_placeholder_token_ids(StandInChatTokenizer()) == frozenset()
    added = StandInChatTokenizer()
    added.added_tokens_decoder = {**added.added_tokens_decoder, 7: AddedToken("<|patch_marker|>")}
    assert media_placeholder_token_ids(added) == {7}
    processor = SimpleNamespace(tokenizer=StandInChatTokenizer(), image_token="</s>", video_token_id=3)
    assert media_placeholder_token_ids(processor) == {2, 3}


def test_media_placeholder_names_are_unique() -> None:
    """The known-name table lists each token once."""
    assert len(set(MEDIA_PLACEHOLDER_TOKENS)) == len(MEDIA_PLACEHOLDER_TOKENS)


@pytest.mark.parametrize(
    ("source", "argument"),
    [
        (object(), "source"),
        (SimpleNamespace(tokenizer=object()), "source.tokenizer"),
        (SimpleNamespace(tokenizer=StandInChatTokenizer(), image_token=5), "source.image_token"),
        (SimpleNamespace(tokenizer=StandInChatTokenizer(), image_token_id="5"), "source.image_token_id"),
    ],
)
def test_media_placeholder_ids_refuse_unreadable_sources(source: Any, argument: str) -> None:
    """No vocabulary, or a declared media attribute of the wrong type, is a ContractTypeError naming it."""
    with pytest.raises(ContractTypeError) as info:
        media_placeholder_token_ids(source)
    assert info.value.argument == argument
