"""A stand-in chat tokenizer: a real Jinja chat template over a tiny vocabulary, with no model files.

:class:`StandInChatTokenizer` renders its chat template the way ``transformers`` does (a sandboxed Jinja
environment with ``trim_blocks`` and ``lstrip_blocks``; ``continue_final_message`` cuts the render after the last
message's content) and encodes text by greedy longest match over its vocabulary, so a word the model spelled in
pieces re-tokenizes to one id, as real tokenizers do.  It has every attribute the library reads from a tokenizer
(``eos_token_id``, ``bos_token_id``, ``get_vocab``, ``all_special_ids``, ``added_tokens_decoder``,
``chat_template``, ``apply_chat_template``, ``encode``, ``decode``), so trainers can test splice and prompt glue
without a model hub.

The templates below cover what the splice must handle: :data:`CLOSED_TEMPLATE` (every turn ends with the EOS),
:data:`OPEN_LAST_TURN_TEMPLATE` (a final assistant message gets no EOS, as some templates render a prefill),
:data:`SEPARATED_TEMPLATE` (a separator after each turn's EOS, as ChatML renders) and
:data:`THINK_STRIPPING_TEMPLATE` (``<think>`` blocks dropped from assistant turns before the last user message, as
Qwen3's template does).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from jinja2.sandbox import ImmutableSandboxedEnvironment

__all__ = [
    "CLOSED_TEMPLATE",
    "OPEN_LAST_TURN_TEMPLATE",
    "SEPARATED_TEMPLATE",
    "SPECIAL_TOKENS",
    "THINK_STRIPPING_TEMPLATE",
    "WORDS",
    "AddedToken",
    "StandInChatTokenizer",
]

SPECIAL_TOKENS = (
    "<unk>",
    "<s>",
    "</s>",
    "<pad>",
    "<|system|>",
    "<|user|>",
    "<|assistant|>",
    "<think>",
    "</think>",
)
"""Special tokens, ids 0..8 in this order: unk, BOS, EOS, pad, three role markers and the thinking markers."""

WORDS = ("hello", "world", "the", "fox", "answer", "is", "42", "tool", "call", "think", "step", "yes", "no")
"""Whole-word tokens after the single characters: text spelled in pieces re-tokenizes to these ids."""

_CHARACTERS = tuple(chr(code) for code in range(32, 127))
"""Every printable ASCII character is one token, so any ASCII text encodes."""

CLOSED_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}<|{{ message['role'] }}|>{{ message['content'] }}{{ eos_token }}"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
"""Every message ends with the EOS; the generation prompt opens an assistant turn."""

SEPARATED_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}<|{{ message['role'] }}|>{{ message['content'] }}{{ eos_token }}\n"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
"""Like :data:`CLOSED_TEMPLATE`, with a newline after every turn's EOS, as ChatML templates (Qwen's) render
``<|im_end|>\\n``: the model stops at the EOS and never generates the separator."""

OPEN_LAST_TURN_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}<|{{ message['role'] }}|>{{ message['content'] }}"
    "{% if not (loop.last and message['role'] == 'assistant') %}{{ eos_token }}{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
"""Like :data:`CLOSED_TEMPLATE`, but a final assistant message is left open (no EOS): a prefill template."""

THINK_STRIPPING_TEMPLATE = (
    "{{ bos_token }}{% set ns = namespace(last_user=-1) %}"
    "{% for message in messages %}{% if message['role'] == 'user' %}{% set ns.last_user = loop.index0 %}"
    "{% endif %}{% endfor %}"
    "{% for message in messages %}{% set content = message['content'] %}"
    "{% if message['role'] == 'assistant' and loop.index0 < ns.last_user and '</think>' in content %}"
    "{% set content = content.split('</think>')[-1] %}{% endif %}"
    "<|{{ message['role'] }}|>{{ content }}{{ eos_token }}{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
"""Every message ends with the EOS; assistant turns before the last user message lose their ``<think>`` block."""


@dataclass(frozen=True)
class AddedToken:
    """What ``transformers.AddedToken`` holds for one added token."""

    content: str
    special: bool = True
    lstrip: bool = False
    rstrip: bool = False
    normalized: bool = False
    single_word: bool = False


class StandInChatTokenizer:
    """A tokenizer with a Jinja chat template and a tiny greedy longest-match vocabulary.

    Ids: :data:`SPECIAL_TOKENS` (0..8), then the printable ASCII characters, then ``words`` (default
    :data:`WORDS`).  ``swap`` exchanges the ids of two tokens: the same id space with a different vocabulary,
    as a retrained tokenizer has.  ``eos_token_id`` may be overridden (``None`` for a tokenizer without EOS).

    ``apply_chat_template`` returns a list of ids (``tokenize=True``, transformers 4's result) or, with
    ``return_dict=True``, a dict holding ``input_ids`` (transformers 5's default), or the text
    (``tokenize=False``).  ``encode(text, add_special_tokens=True)`` prepends the BOS, as many tokenizers do.
    """

    def __init__(
        self,
        chat_template: str | None = CLOSED_TEMPLATE,
        *,
        words: Sequence[str] = WORDS,
        swap: tuple[str, str] | None = None,
        eos_token_id: int | None = 2,
    ) -> None:
        tokens = [*SPECIAL_TOKENS, *_CHARACTERS, *(word for word in words if word not in _CHARACTERS)]
        if swap is not None:
            first, second = tokens.index(swap[0]), tokens.index(swap[1])
            tokens[first], tokens[second] = tokens[second], tokens[first]
        self._vocab = {token: index for index, token in enumerate(tokens)}
        self._tokens = tokens
        self._by_length = sorted(self._vocab, key=len, reverse=True)
        self.chat_template = chat_template
        self.bos_token, self.eos_token, self.pad_token, self.unk_token = "<s>", "</s>", "<pad>", "<unk>"
        self.bos_token_id = self._vocab["<s>"]
        self.eos_token_id = eos_token_id
        self.pad_token_id = self._vocab["<pad>"]
        self.unk_token_id = self._vocab["<unk>"]
        self.all_special_ids = [self._vocab[token] for token in SPECIAL_TOKENS]
        self.added_tokens_decoder = {self._vocab[token]: AddedToken(token) for token in SPECIAL_TOKENS}

    def get_vocab(self) -> dict[str, int]:
        """Token to id, a new dict."""
        return dict(self._vocab)

    def __len__(self) -> int:
        return len(self._tokens)

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        """Greedy longest match over the vocabulary; unknown characters become ``<unk>``."""
        ids = [self.bos_token_id] if add_special_tokens else []
        position = 0
        while position < len(text):
            match = next((token for token in self._by_length if text.startswith(token, position)), None)
            if match is None:
                ids.append(self.unk_token_id)
                position += 1
            else:
                ids.append(self._vocab[match])
                position += len(match)
        return ids

    def decode(self, ids: Iterable[int]) -> str:
        """The tokens of ``ids`` joined."""
        return "".join(self._tokens[index] for index in ids)

    def apply_chat_template(
        self,
        conversation: Sequence[Mapping[str, Any]],
        *,
        tokenize: bool = True,
        add_generation_prompt: bool = False,
        continue_final_message: bool = False,
        return_dict: bool = False,
        tools: Sequence[Mapping[str, Any]] | None = None,
        **kwargs: Any,
    ) -> Any:
        """Render ``conversation`` with the chat template (transformers' semantics), then encode it without BOS."""
        if self.chat_template is None:
            raise ValueError("this tokenizer has no chat template")
        if continue_final_message and add_generation_prompt:
            raise ValueError("continue_final_message and add_generation_prompt are not compatible")
        environment = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        text = environment.from_string(self.chat_template).render(
            messages=[dict(message) for message in conversation],
            tools=tools,
            add_generation_prompt=add_generation_prompt,
            bos_token=self.bos_token,
            eos_token=self.eos_token,
            **kwargs,
        )
        if continue_final_message:
            final = str(conversation[-1]["content"]).strip()
            text = text[: text.rindex(final) + len(final)]
        if not tokenize:
            return text
        ids = self.encode(text, add_special_tokens=False)
        return {"input_ids": ids, "attention_mask": [1] * len(ids)} if return_dict else ids
