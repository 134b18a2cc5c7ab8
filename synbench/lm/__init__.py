"""Causal-LM text generation shared by generators (and, later, filters and detectors).

- `generation`: batched sampling with a KV cache and left padding, chat prompts
  (the tokenizer's chat template when it has one), CPU thread control.
- `backends`: one `complete(requests)` interface over the local model of the
  `model` config group and an OpenAI-compatible HTTP API (`api`).
"""
from synbench.lm.backends import ChatRequest, LMBackend, LocalBackend, make_backend
from synbench.lm.generation import GenerationStats, chat_prompt, generate, generated_lengths, torch_threads

__all__ = ["ChatRequest", "GenerationStats", "LMBackend", "LocalBackend", "chat_prompt", "generate", "generated_lengths",
           "make_backend", "torch_threads"]
