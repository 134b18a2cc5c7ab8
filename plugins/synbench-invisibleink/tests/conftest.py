"""A tiny random chat LM on disk for the plugin's tests (the real SmolLM2 is too slow for the conformance kit)."""

from __future__ import annotations

import os
from typing import Any

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

CHAT_TEMPLATE = (
    "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}"
)


@pytest.fixture(scope="session")
def chat_model(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A `model` config node: a 2-layer Llama (hidden 32) with a byte-level tokenizer and a chat template."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    folder = tmp_path_factory.mktemp("chat-llama")
    symbols = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {**{s: i for i, s in enumerate(symbols)}, "<eos>": len(symbols), "<|im_end|>": len(symbols) + 1}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<eos>", pad_token="<eos>", additional_special_tokens=["<|im_end|>"]
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(folder)
    config = LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        eos_token_id=vocab["<eos>"],
        pad_token_id=vocab["<eos>"],
    )
    torch.manual_seed(1)
    LlamaForCausalLM(config).save_pretrained(folder)
    return {
        "name": "chat-tiny",
        "pretrained": str(folder),
        "package": None,
        "gguf_file": None,
        "dtype": "float32",
        "attn_implementation": "auto",
    }
