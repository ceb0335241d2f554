"""Build the tiny random-weight models the real-vLLM tier runs on (no model hub is reachable).

Usage: ``python tests/vllm/build_models.py OUT_DIR`` (run by ``.ci/vllm_tier`` with the vLLM venv's Python).
Writes ``OUT_DIR/dense`` (llama) and ``OUT_DIR/moe`` (qwen3_moe, 4 experts, top-2, 2 MoE layers), each with the same
local byte-level BPE tokenizer (bos ``<s>``, eos ``</s>``, ``<pad>``, ``<unk>``, role tokens, a Jinja chat template;
plain-text encoding prepends ``<s>``). Deterministic: fixed seeds, fixed training corpus.

The dense model ties its input and output embeddings and has large embeddings, so greedy decoding mostly repeats
the previous token: n-gram speculative decoding then has drafts to accept.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import torch
import transformers  # type: ignore[import-not-found, unused-ignore]
from tokenizers import (  # type: ignore[import-not-found, unused-ignore]
    Tokenizer,
    decoders,
    models,
    pre_tokenizers,
    processors,
    trainers,
)

__all__ = ["CHAT_TEMPLATE", "SPECIAL_TOKENS", "build_all", "build_tokenizer"]

SPECIAL_TOKENS = ["<unk>", "<s>", "</s>", "<pad>", "<|system|>", "<|user|>", "<|assistant|>", "<image>"]
"""Special tokens, ids 0..7 in this order; ``<image>`` stands for a media placeholder token."""
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}<|{{ message['role'] }}|>{{ message['content'] }}{{ eos_token }}"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
_CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "Router replay records which experts every token was routed to during generation.",
    "A rollout prompt must be exactly the prompt the engine prefilled, token for token.",
    "Speculative decoding proposes draft tokens and the target model accepts or rejects them.",
    "Prefix caching reuses the key value blocks of a repeated prompt.",
    "Hello world! How are you today? I am fine, thank you.",
    "0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20",
]
_ARCH = {
    "hidden_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 32,  # the CPU attention backend supports 32, not 16
    "intermediate_size": 256,
    "max_position_embeddings": 512,
}


def build_tokenizer() -> Any:
    """Train the byte-level BPE tokenizer and wrap it in a ``PreTrainedTokenizerFast`` with the chat template."""
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_CORPUS * 4, trainer=trainer)
    bos_id = tok.token_to_id("<s>")
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", bos_id)]
    )
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        additional_special_tokens=SPECIAL_TOKENS[4:],
        chat_template=CHAT_TEMPLATE,
        model_max_length=512,
    )


def _save(model_type: str, out: Path, tokenizer: Any, tied: bool, **extra: object) -> None:
    ids = {
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.pad_token_id,
    }
    config = transformers.AutoConfig.for_model(
        model_type,
        **_ARCH,
        **ids,
        vocab_size=len(tokenizer),
        tie_word_embeddings=tied,
        dtype="float32",
        **extra,
    )
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config)
    if tied:
        with torch.no_grad():
            model.get_input_embeddings().weight.normal_(0.0, 1.0)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)


def build_all(out_dir: Path) -> dict[str, str]:
    """Build every model under ``out_dir`` (``dense``, ``moe``) and return ``{name: path}``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer()
    paths = {"dense": out_dir / "dense", "moe": out_dir / "moe"}
    _save("llama", paths["dense"], tokenizer, tied=True)
    _save(
        "qwen3_moe",
        paths["moe"],
        tokenizer,
        tied=False,
        num_experts=4,
        num_experts_per_tok=2,
        moe_intermediate_size=64,
        decoder_sparse_step=1,
        mlp_only_layers=[],
        norm_topk_prob=True,
    )
    return {name: str(path) for name, path in paths.items()}


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: build_models.py OUT_DIR")
    print(json.dumps(build_all(Path(sys.argv[1]))))
