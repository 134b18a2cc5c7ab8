"""Causal language models: loading, batched generation, prompts, scoring, and the backends generators call.

- `models`: load a causal LM and its tokenizer from a `model` config node.
- `generation`: batched sampling with a KV cache and left padding, chat prompts
  (the tokenizer's chat template when it has one), CPU thread control.
- `prompts`: the prompt sets (conf/prompts/) of the generators that prompt an LM.
- `backends`: one `complete(requests)` interface, a registry kind (`synbench.lm_backends`): the local model
  of the `model` config group (`local`) and an OpenAI-compatible API (`openai`, `openai_compat`).
"""

from synbench.base import ChatRequest, LMBackend
from synbench.lm.backends import LocalBackend, load_shared, make_backend
from synbench.lm.generation import GenerationStats, chat_prompt, generate, generated_lengths, torch_threads
from synbench.lm.models import LoadedModel, ModelSpec, load_causal_lm
from synbench.lm.prompts import Prompts, load_prompts

__all__ = [
    "ChatRequest",
    "GenerationStats",
    "LMBackend",
    "LoadedModel",
    "LocalBackend",
    "ModelSpec",
    "Prompts",
    "chat_prompt",
    "generate",
    "generated_lengths",
    "load_causal_lm",
    "load_prompts",
    "load_shared",
    "make_backend",
    "torch_threads",
]
