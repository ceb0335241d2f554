"""``typing.Protocol`` descriptions of the vLLM objects the library reads (SPEC §0.7).

The library never imports vLLM: it reads these objects by attribute.  Attributes the SPEC calls optional are read
with ``getattr(obj, name, None)``, so a missing one counts as ``None``; they are therefore not part of the
Protocols below (a Protocol attribute would make them required for type checkers).  ``weight_versions`` (vLLM
>= 0.32 completion outputs, >= 0.33 chat choices) is the exception: it is listed so that type checkers know its
type, and read like the others, a missing one counting as ``None``.  Real vLLM objects, pydantic
models and ``SimpleNamespace`` stand-ins all satisfy these Protocols.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

__all__ = [
    "ChatChoiceLike",
    "ChatResponseLike",
    "ChatTokenizerLike",
    "CompletionOutputLike",
    "CounterLike",
    "GenerationConfigLike",
    "HistogramLike",
    "LoggerLike",
    "LogprobLike",
    "MetricLike",
    "PlaceholderRangeLike",
    "ProcessorLike",
    "RequestOutputLike",
    "TokenizerLike",
    "VectorLike",
    "VocabularyTokenizerLike",
    "WeightVersionSpanLike",
]


class LogprobLike(Protocol):
    """vLLM ``vllm.logprobs.Logprob``: the log-probability of one token."""

    @property
    def logprob(self) -> float: ...


class WeightVersionSpanLike(Protocol):
    """vLLM >= 0.32 ``WeightVersionSpan`` (a dataclass): output tokens ``[start, end)`` sampled by ``version``."""

    @property
    def version(self) -> str: ...
    @property
    def start(self) -> int: ...
    @property
    def end(self) -> int: ...


class CompletionOutputLike(Protocol):
    """vLLM ``vllm.outputs.CompletionOutput``.

    Also read, optionally: ``routed_experts`` (numpy ``[rows, L, K]``, uint8/uint16) and ``finish_reason``.
    ``weight_versions`` exists from vLLM 0.32 on; older outputs lack it, which reads as ``None`` (SPEC §4.3).
    """

    @property
    def index(self) -> int: ...
    @property
    def token_ids(self) -> Sequence[int] | None: ...
    @property
    def logprobs(self) -> Sequence[Mapping[int, LogprobLike]] | None: ...
    @property
    def weight_versions(self) -> Sequence[WeightVersionSpanLike] | None: ...


class RequestOutputLike(Protocol):
    """vLLM ``vllm.outputs.RequestOutput``.

    Also read, optionally: ``outputs`` (missing means empty), ``prompt_routed_experts`` (legacy, vLLM 0.21.x),
    ``num_cached_tokens`` (quoted in messages only) and ``finished`` (``False`` fails the rollout hand-off of
    :mod:`rl_contracts.rollouts`).
    """

    @property
    def prompt_token_ids(self) -> Sequence[int] | None: ...


class PlaceholderRangeLike(Protocol):
    """vLLM ``vllm.multimodal.inputs.PlaceholderRange``: a frozen dataclass ``(offset, length, is_embed)``."""

    @property
    def offset(self) -> int: ...
    @property
    def length(self) -> int: ...


class ChatChoiceLike(Protocol):
    """One choice of an OpenAI-compatible chat response; ``message`` is any object whose attributes can be set."""

    @property
    def index(self) -> int: ...
    @property
    def message(self) -> Any: ...
    @property
    def weight_versions(self) -> Sequence[WeightVersionSpanLike] | None:
        """vLLM >= 0.33 copies the output's spans here when the request sets ``return_weight_versions``; older
        choices lack it, which reads as ``None``."""


class ChatResponseLike(Protocol):
    """vLLM's ``ChatCompletionResponse`` (pydantic, extra fields allowed); ``choices`` is read optionally."""

    def model_dump(self) -> dict[str, Any]: ...


class MetricLike(Protocol):
    """Any object of ``vllm.v1.metrics.reader`` (``Counter``, ``Gauge``, ``Histogram``, ``Vector``)."""

    @property
    def name(self) -> str: ...
    @property
    def labels(self) -> Mapping[str, str]: ...


class CounterLike(MetricLike, Protocol):
    """``Counter``/``Gauge``: one scalar ``value``."""

    @property
    def value(self) -> float: ...


class VectorLike(MetricLike, Protocol):
    """``Vector``: per-position ``values`` (index i is spec-decode position i, 0-based)."""

    @property
    def values(self) -> Sequence[float]: ...


class HistogramLike(MetricLike, Protocol):
    """``Histogram``: ``count``, ``sum`` and ``buckets`` (the buckets are ignored)."""

    @property
    def count(self) -> float: ...
    @property
    def sum(self) -> float: ...


class TokenizerLike(Protocol):
    """A tokenizer: ``eos_token_id``; ``decode`` is optional and only used to enrich error messages."""

    @property
    def eos_token_id(self) -> int | None: ...


class ChatTokenizerLike(TokenizerLike, Protocol):
    """A tokenizer with a chat template (a ``transformers`` tokenizer), as :func:`rl_contracts.splice.splice_turn`
    reads it: ``eos_token_id`` and ``apply_chat_template``.

    ``apply_chat_template(conversation, *, tokenize=True, add_generation_prompt, continue_final_message,
    **kwargs)`` returns the token ids as a list (transformers 4) or a mapping holding ``input_ids``
    (transformers 5's ``BatchEncoding``); ``kwargs`` carries ``tools`` and the template's own keyword arguments.
    """

    def apply_chat_template(
        self,
        conversation: list[dict[str, Any]],
        *,
        tokenize: bool,
        add_generation_prompt: bool,
        continue_final_message: bool,
        **kwargs: Any,
    ) -> Any: ...


class VocabularyTokenizerLike(Protocol):
    """A tokenizer as :func:`rl_contracts.prompts.tokenizer_fingerprint` reads it: ``get_vocab()`` (token to id).

    Also read, optionally: ``bos_token_id``, ``eos_token_id``, ``pad_token_id``, ``unk_token_id`` (ints or
    ``None``), ``all_special_ids`` (ints), ``chat_template`` (a str, a mapping from template name to str, or
    ``None``) and ``added_tokens_decoder`` (id to ``AddedToken`` or str; else ``get_added_vocab()``, token to id).
    A ``transformers`` tokenizer, and the one ``vllm.LLM.get_tokenizer()`` returns, have all of them.
    """

    def get_vocab(self) -> Mapping[str, int]: ...


class ProcessorLike(Protocol):
    """A multimodal processor (``transformers.AutoProcessor``), as
    :func:`rl_contracts.prompts.media_placeholder_token_ids` reads it: its ``tokenizer``.

    Also read, optionally: the media token attributes processors declare (``image_token``, ``video_token``,
    ``audio_token``, ``boi_token``, ``eoi_token``, ... as str; ``image_token_id``, ``video_token_id``, ... as int).
    """

    @property
    def tokenizer(self) -> VocabularyTokenizerLike: ...


class GenerationConfigLike(Protocol):
    """A ``transformers.GenerationConfig``, as terminator resolution reads it: ``eos_token_id`` (an int, a list
    of ints, or ``None``)."""

    @property
    def eos_token_id(self) -> int | Sequence[int] | None: ...


class LoggerLike(Protocol):
    """A ``logging.Logger``-like object with printf-style ``warning``."""

    def warning(self, msg: str, *args: object) -> None: ...
