"""Causal language models: loading, batched generation, prompts, scoring, and the backends generators call.

- `settings`: the schema of the `model` node and of the backends' options (no torch: the ConfigStore reads it).
- `models`: load a causal LM and its tokenizer from a `model` config node.
- `generation`: batched sampling with a KV cache and left padding, chat prompts
  (the tokenizer's chat template when it has one), CPU thread control.
- `prompts`: the prompt sets (conf/prompts/) of the generators that prompt an LM.
- `backends`: one `complete(requests)` interface, a registry kind (`synbench.lm_backends`): the local model
  of the `model` config group (`local`) and an OpenAI-compatible API (`openai`, `openai_compat`).
"""

from synbench.core.exports import lazy_exports

# each public name and the module it lives in: imported on first use (PEP 562), so that the schema reads
# `synbench.lm.settings` without importing torch
_HOME = {
    "ChatRequest": "synbench.core.base",
    "LMBackend": "synbench.core.base",
    "LocalBackend": "synbench.lm.backends",
    "load_shared": "synbench.lm.backends",
    "make_backend": "synbench.lm.backends",
    "GenerationStats": "synbench.lm.generation",
    "chat_prompt": "synbench.lm.generation",
    "generate": "synbench.lm.generation",
    "generated_lengths": "synbench.lm.generation",
    "torch_threads": "synbench.lm.generation",
    "LoadedModel": "synbench.lm.models",
    "load_causal_lm": "synbench.lm.models",
    "ModelSpec": "synbench.lm.settings",
    "Prompts": "synbench.lm.prompts",
    "load_prompts": "synbench.lm.prompts",
}
__all__ = sorted(_HOME)

__getattr__ = lazy_exports(__name__, _HOME)
