"""The message-level splice ``splice_turn``, the opt-in turn-count check and terminators from a generation config.

The tokenizer is :class:`rl_contracts.testing.chat_tokenizer.StandInChatTokenizer`: a real Jinja chat template
rendered as ``transformers`` renders it, over a vocabulary where text the model spelled in pieces re-tokenizes to
whole words.  The real ``transformers`` tokenizer of the tiny vLLM model runs the same flow in
``tests/vllm/test_vllm_arguments.py``.
"""

from __future__ import annotations

import copy
from types import SimpleNamespace
from typing import Any

import pytest

from rl_contracts.errors import ContractTypeError, SpliceError
from rl_contracts.splice import (
    PrefixSplice,
    replace_prefix_tokens,
    resolve_terminator_token_ids,
    splice_prefix_tokens,
    splice_turn,
)
from rl_contracts.testing import assert_contract_error
from rl_contracts.testing.chat_tokenizer import (
    OPEN_LAST_TURN_TEMPLATE,
    THINK_STRIPPING_TEMPLATE,
    StandInChatTokenizer,
)

TOKENIZER = StandInChatTokenizer()
EOS, PAD = 2, 3
ASSISTANT = TOKENIZER.get_vocab()["<|assistant|>"]
FIRST = [{"role": "user", "content": "hello world"}]


def spelled(text: str) -> list[int]:
    """``text`` as the model produced it: one id per character (the template re-tokenizes it to whole words)."""
    return [TOKENIZER.get_vocab()[character] for character in text]


def first_turn(
    tokenizer: StandInChatTokenizer, reply: str, *, stop: int | None
) -> tuple[list[int], list[int]]:
    """The first turn's prompt ids and the model's generated ids (``reply`` spelled, then ``stop`` if any)."""
    prompt = tokenizer.apply_chat_template(FIRST, add_generation_prompt=True)
    return prompt, spelled(reply) + ([] if stop is None else [stop])


def history(reply: str, *, follow_up: str = "yes") -> list[dict[str, Any]]:
    """The second turn's messages: the first user message, the model's reply, a new user message."""
    return [*FIRST, {"role": "assistant", "content": reply}, {"role": "user", "content": follow_up}]


def test_model_tokens_kept_and_new_turn_appended_once() -> None:
    """A reply that ended with EOS is kept exactly; the new user turn and one generation prompt follow it."""
    prompt, generated = first_turn(TOKENIZER, "the answer", stop=EOS)
    model = prompt + generated
    splice = splice_turn(TOKENIZER, history("the answer"), model)
    assert splice.token_ids == model + TOKENIZER.encode(
        "<|user|>yes</s><|assistant|>", add_special_tokens=False
    )
    assert splice.model_cut_end == len(model)
    assert splice.token_ids.count(ASSISTANT) == 2  # the first turn's and the new one: no turn prefilled twice
    template = TOKENIZER.apply_chat_template(history("the answer"), add_generation_prompt=True)
    assert splice.token_ids[splice.model_cut_end :] == template[splice.template_cut_start :]
    assert template != splice.token_ids  # the template re-tokenized "the answer" into whole words


def test_reply_stopped_at_max_tokens_gets_the_template_terminator() -> None:
    """A reply cut at max_tokens is kept, and the template supplies the EOS that closes it."""
    prompt, generated = first_turn(TOKENIZER, "the ans", stop=None)
    splice = splice_turn(TOKENIZER, history("the ans"), prompt + generated)
    tail = TOKENIZER.encode("</s><|user|>yes</s><|assistant|>", add_special_tokens=False)
    assert splice.token_ids == prompt + generated + tail


def test_generation_config_terminator_is_kept_not_doubled() -> None:
    """A model that stopped on a generation_config terminator keeps it; the tokenizer alone adds a second one."""
    prompt, generated = first_turn(TOKENIZER, "no", stop=PAD)
    model = prompt + generated
    messages = history("no")
    tail = TOKENIZER.encode("<|user|>yes</s><|assistant|>", add_special_tokens=False)
    for config in ({"eos_token_id": [EOS, PAD]}, SimpleNamespace(eos_token_id=[EOS, PAD])):
        assert splice_turn(TOKENIZER, messages, model, generation_config=config).token_ids == model + tail
    assert splice_turn(TOKENIZER, messages, model, terminator_ids={EOS, PAD}).token_ids == model + tail
    # The tokenizer alone knows only EOS: PAD reads as "stopped at max_tokens" and EOS is added after it.
    assert splice_turn(TOKENIZER, messages, model, check_turn_count=False).token_ids == [*model, EOS, *tail]


def test_splice_prefix_tokens_reads_a_generation_config() -> None:
    """``splice_prefix_tokens(tokenizer=..., generation_config=...)`` uses the config's terminators too."""
    prompt, generated = first_turn(TOKENIZER, "no", stop=PAD)
    model = prompt + generated
    messages = history("no")
    arguments: dict[str, Any] = {
        "model_prefix_token_ids": model,
        "template_prefix_token_ids": TOKENIZER.apply_chat_template(messages[:2]),
        "template_token_ids": TOKENIZER.apply_chat_template(messages, add_generation_prompt=True),
    }
    tail = TOKENIZER.encode("<|user|>yes</s><|assistant|>", add_special_tokens=False)
    config = SimpleNamespace(eos_token_id=PAD)
    with_config = splice_prefix_tokens(tokenizer=TOKENIZER, generation_config=config, **arguments)
    assert with_config.token_ids == model + tail
    assert splice_prefix_tokens(tokenizer=TOKENIZER, **arguments).token_ids == [*model, EOS, *tail]
    positional = (arguments["model_prefix_token_ids"], arguments["template_prefix_token_ids"])
    wrapped = replace_prefix_tokens(
        TOKENIZER, *positional, arguments["template_token_ids"], generation_config={"eos_token_id": PAD}
    )
    assert wrapped == with_config.token_ids


def test_think_blocks_stripped_from_history_still_splice_by_count() -> None:
    """A template that drops ``<think>`` blocks from older turns still resumes right after the kept reply."""
    tokenizer = StandInChatTokenizer(THINK_STRIPPING_TEMPLATE)
    reply = "<think>step</think>yes"
    prompt = tokenizer.apply_chat_template(FIRST, add_generation_prompt=True)
    model = prompt + tokenizer.encode(reply, add_special_tokens=False) + [EOS]
    splice = splice_turn(tokenizer, history(reply), model)
    assert splice.token_ids == model + tokenizer.encode(
        "<|user|>yes</s><|assistant|>", add_special_tokens=False
    )
    template = tokenizer.apply_chat_template(history(reply), add_generation_prompt=True)
    assert tokenizer.get_vocab()["<think>"] not in template  # the history lost the block; the splice kept it


def test_template_that_leaves_the_last_turn_open_is_caught() -> None:
    """A template that omits a final assistant message's EOS fails the turn count instead of prefilling it twice."""
    tokenizer = StandInChatTokenizer(OPEN_LAST_TURN_TEMPLATE)
    prompt = tokenizer.apply_chat_template(FIRST, add_generation_prompt=True)
    model = prompt + spelled("yes") + [EOS]
    with pytest.raises(SpliceError, match="left open") as info:
        splice_turn(tokenizer, history("yes"), model)
    assert (info.value.count_needed, info.value.count_seen) == (1, 2)
    assert_contract_error(info.value)
    # Without the check (the reference's behaviour) the assistant turn appears twice in the prompt.
    duplicated = splice_turn(tokenizer, history("yes"), model, check_turn_count=False)
    assert duplicated.token_ids.count(ASSISTANT) == 3
    assert duplicated.token_ids == model + tokenizer.encode(
        "<|assistant|>yes</s><|user|>yes</s><|assistant|>", add_special_tokens=False
    )


def test_turn_count_check_catches_a_prefix_rendered_with_continue_final_message() -> None:
    """``check_turn_count=True`` rejects a template prefix whose last assistant turn was left open, both ways."""
    messages = history("yes")
    open_prefix = TOKENIZER.apply_chat_template(messages[:2], continue_final_message=True)
    template = TOKENIZER.apply_chat_template(messages, add_generation_prompt=True)
    prompt = TOKENIZER.apply_chat_template(FIRST, add_generation_prompt=True)
    for generated, expected in (([*spelled("yes"), EOS], 1), (spelled("ye"), 0)):
        arguments: dict[str, Any] = {
            "model_prefix_token_ids": prompt + generated,
            "template_prefix_token_ids": open_prefix,
            "template_token_ids": template,
            "eos_token_id": EOS,
        }
        with pytest.raises(SpliceError) as info:
            splice_prefix_tokens(check_turn_count=True, **arguments)
        assert f"which implies {expected}" in str(info.value)
        assert (info.value.count_needed, info.value.count_seen) == (1, 2 if generated[-1] == EOS else 1)
        assert_contract_error(info.value)
        unchecked = splice_prefix_tokens(**arguments)  # opt-in: the reference accepts the call
        assert unchecked.token_ids.count(ASSISTANT) == 3


def test_turn_count_check_reports_a_model_prefix_missing_a_turn() -> None:
    """A model prefix with fewer turns than the history (an inserted message) is named as such."""
    messages = [*FIRST, {"role": "assistant", "content": "no"}, {"role": "user", "content": "yes"}]
    extra = [{"role": "system", "content": "the"}, *messages]
    prompt = TOKENIZER.apply_chat_template(FIRST, add_generation_prompt=True)
    with pytest.raises(SpliceError, match="closes more turns") as info:
        splice_turn(
            TOKENIZER, [*extra, {"role": "assistant", "content": "x"}], prompt + spelled("no") + [EOS]
        )
    assert info.value.count_seen == 2
    assert_contract_error(info.value)


def test_check_does_not_change_a_consistent_splice() -> None:
    """When the counts agree, ``check_turn_count=True`` returns exactly the unchecked splice."""
    prompt, generated = first_turn(TOKENIZER, "the answer", stop=EOS)
    arguments: dict[str, Any] = {
        "model_prefix_token_ids": prompt + generated,
        "template_prefix_token_ids": TOKENIZER.apply_chat_template(history("the answer")[:2]),
        "template_token_ids": TOKENIZER.apply_chat_template(
            history("the answer"), add_generation_prompt=True
        ),
        "eos_token_id": EOS,
    }
    assert splice_prefix_tokens(check_turn_count=True, **arguments) == splice_prefix_tokens(**arguments)


class DictResultTokenizer(StandInChatTokenizer):
    """transformers 5: ``apply_chat_template(tokenize=True)`` returns a ``BatchEncoding`` by default."""

    def apply_chat_template(self, conversation: Any, **kwargs: Any) -> Any:
        return super().apply_chat_template(conversation, return_dict=True, **kwargs)


def test_a_mapping_result_with_input_ids_is_read() -> None:
    """A render returned as a mapping holding ``input_ids`` (transformers 5) splices like a plain list."""
    prompt, generated = first_turn(TOKENIZER, "yes", stop=EOS)
    expected = splice_turn(TOKENIZER, history("yes"), prompt + generated)
    assert splice_turn(DictResultTokenizer(), history("yes"), prompt + generated) == expected


def test_tools_and_template_kwargs_reach_both_renders() -> None:
    """``tools`` and ``chat_template_kwargs`` are passed to the prefix render and the full render alike."""
    template = (
        "{{ bos_token }}{% if tools %}<|system|>{{ tools[0]['name'] }}{{ eos_token }}{% endif %}"
        "{% for message in messages %}<|{{ message['role'] }}|>{{ prefix }}{{ message['content'] }}{{ eos_token }}"
        "{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
    )
    tokenizer = StandInChatTokenizer(template)
    tools = [{"name": "tool"}]
    prompt = tokenizer.apply_chat_template(FIRST, add_generation_prompt=True, tools=tools, prefix="the ")
    model = prompt + spelled("the no") + [EOS]
    splice = splice_turn(
        tokenizer, history("no"), model, tools=tools, chat_template_kwargs={"prefix": "the "}
    )
    assert splice.token_ids == model + tokenizer.encode(
        "<|user|>the yes</s><|assistant|>", add_special_tokens=False
    )


def test_no_generation_prompt_when_asked() -> None:
    """``add_generation_prompt=False`` leaves the new turn closed, without an opened assistant turn."""
    prompt, generated = first_turn(TOKENIZER, "yes", stop=EOS)
    splice = splice_turn(TOKENIZER, history("yes"), prompt + generated, add_generation_prompt=False)
    assert splice.token_ids == prompt + generated + TOKENIZER.encode(
        "<|user|>yes</s>", add_special_tokens=False
    )


def test_first_turn_is_the_identity_splice() -> None:
    """With no assistant message yet and an empty model prefix, the result is the rendered prompt itself."""
    splice = splice_turn(TOKENIZER, FIRST, [])
    assert splice == PrefixSplice(TOKENIZER.apply_chat_template(FIRST, add_generation_prompt=True), 0, 0)


def test_model_tokens_without_an_assistant_message_are_rejected() -> None:
    """Model tokens but no assistant turn in the history: there is nothing to splice onto."""
    with pytest.raises(SpliceError, match="no assistant message") as info:
        splice_turn(TOKENIZER, FIRST, [1, 5, 6])
    assert_contract_error(info.value)


def test_inputs_are_not_mutated() -> None:
    """The messages, their contents and the model prefix are unchanged after a splice."""
    prompt, generated = first_turn(TOKENIZER, "yes", stop=EOS)
    messages, model = history("yes"), prompt + generated
    before = copy.deepcopy((messages, model))
    splice_turn(TOKENIZER, messages, model, tools=[{"name": "tool"}])
    assert (messages, model) == before


class ListOfListsTokenizer(StandInChatTokenizer):
    """A render that returns a batch (a list of lists), not one sequence of ids."""

    def apply_chat_template(self, conversation: Any, **kwargs: Any) -> Any:
        return [super().apply_chat_template(conversation, **kwargs)]


class NoInputIdsTokenizer(StandInChatTokenizer):
    """A render that returns a mapping without ``input_ids``."""

    def apply_chat_template(self, conversation: Any, **kwargs: Any) -> Any:
        return {"ids": super().apply_chat_template(conversation, **kwargs)}


BAD_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("tokenizer", {"tokenizer": SimpleNamespace(eos_token_id=2)}, "apply_chat_template"),
    ("messages", {"messages": "hello"}, "messages must be"),
    ("message", {"messages": [*FIRST, ["assistant", "x"]]}, r"messages\[1\] must be"),
    ("role", {"messages": [{"role": None, "content": "x"}]}, r"messages\[0\]\['role'\]"),
    ("kwargs", {"chat_template_kwargs": {"tokenize": False}}, "sets itself"),
    ("kwargs keys", {"chat_template_kwargs": {1: "x"}}, "chat_template_kwargs must be"),
    ("tools", {"tools": "tool"}, "tools must be"),
    ("both", {"generation_config": {"eos_token_id": 2}, "terminator_ids": {2}}, "both given"),
    ("config", {"generation_config": 7}, "generation_config must be"),
    ("flag", {"check_turn_count": 1}, "check_turn_count must be"),
    ("model", {"model_prefix_token_ids": [1.0]}, r"model_prefix_token_ids\[0\]"),
    ("batch", {"tokenizer": ListOfListsTokenizer()}, r"apply_chat_template\(messages\)\[0\]"),
    ("mapping", {"tokenizer": NoInputIdsTokenizer()}, "input_ids"),
]


@pytest.mark.parametrize(("case", "change", "match"), BAD_CALLS, ids=[case for case, _, _ in BAD_CALLS])
def test_bad_arguments_raise_contract_type_errors(case: str, change: dict[str, Any], match: str) -> None:
    """Each malformed argument raises ``ContractTypeError`` naming it, within the error contract."""
    del case
    prompt, generated = first_turn(TOKENIZER, "yes", stop=EOS)
    arguments: dict[str, Any] = {
        "tokenizer": TOKENIZER,
        "messages": history("yes"),
        "model_prefix_token_ids": prompt + generated,
    }
    arguments.update(change)
    positional = [arguments.pop(name) for name in ("tokenizer", "messages", "model_prefix_token_ids")]
    with pytest.raises(ContractTypeError, match=match) as info:
        splice_turn(*positional, **arguments)
    assert_contract_error(info.value)


def test_no_terminator_known_raises_the_usual_splice_error() -> None:
    """A tokenizer without EOS and no generation config: the splice has no terminator to count."""
    tokenizer = StandInChatTokenizer(eos_token_id=None)
    with pytest.raises(SpliceError, match="must have an EOS token ID"):
        splice_turn(tokenizer, history("yes"), [1, 5, 2])


def test_template_errors_propagate_unchanged() -> None:
    """An exception from the caller's chat template is not wrapped (SPEC §0.3: caller code propagates)."""
    tokenizer = StandInChatTokenizer("{{ raise_exception_here() }}")
    with pytest.raises(Exception, match="undefined") as info:
        splice_turn(tokenizer, history("yes"), [1])
    assert not isinstance(info.value, ContractTypeError)


def test_splice_prefix_tokens_rejects_generation_config_with_explicit_terminators() -> None:
    """``generation_config`` with ``eos_token_id`` or ``terminator_ids`` is ambiguous and rejected, even for an
    empty model prefix; a malformed config is rejected there too."""
    base: dict[str, Any] = {
        "model_prefix_token_ids": [],
        "template_prefix_token_ids": [],
        "template_token_ids": [],
    }
    for extra in ({"eos_token_id": 2}, {"terminator_ids": [2]}):
        with pytest.raises(ContractTypeError, match="both given"):
            splice_prefix_tokens(generation_config={"eos_token_id": 2}, **extra, **base)
    with pytest.raises(ContractTypeError, match=r"generation_config\.eos_token_id"):
        splice_prefix_tokens(generation_config=SimpleNamespace(eos_token_id=True), **base)


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (SimpleNamespace(eos_token_id=[1, 106, 50]), {1, 50, 106}),
        (SimpleNamespace(eos_token_id=2), {1, 2}),
        (SimpleNamespace(eos_token_id=None), {1}),
        (SimpleNamespace(eos_token_id=(106,)), {1, 106}),
    ],
)
def test_resolve_terminators_from_a_generation_config_object(config: Any, expected: set[int]) -> None:
    """An object with an ``eos_token_id`` attribute (``transformers.GenerationConfig``) reads like the mapping."""
    assert resolve_terminator_token_ids(SimpleNamespace(eos_token_id=1), config) == expected


@pytest.mark.parametrize(
    ("config", "match"),
    [
        (SimpleNamespace(top_p=0.9), "generation_config must be"),
        (SimpleNamespace(eos_token_id="2"), r"generation_config\.eos_token_id must be"),
        (SimpleNamespace(eos_token_id=[1, False]), r"generation_config\.eos_token_id\[1\]"),
        ("eos", "generation_config must be"),
    ],
)
def test_resolve_terminators_rejects_bad_config_objects(config: Any, match: str) -> None:
    """An object without ``eos_token_id``, or with a non-int id there, is a ``ContractTypeError`` naming it."""
    with pytest.raises(ContractTypeError, match=match) as info:
        resolve_terminator_token_ids(None, config)
    assert_contract_error(info.value)


def test_negative_id_in_a_config_object_is_a_splice_error() -> None:
    """A negative terminator id declared by a config object is rejected like one from a mapping."""
    with pytest.raises(SpliceError, match="negative"):
        resolve_terminator_token_ids(None, SimpleNamespace(eos_token_id=[-1]))
