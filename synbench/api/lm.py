"""LM helpers for plugins that prompt a causal LM, opt-in beside the contracts of `synbench.api` (they load torch).

Loading a model of the `model` config group (`load_causal_lm`, or
`load_shared` for one process-wide copy used for prompting only), chat
prompts with the tokenizer's template, batched generation with CPU thread
control, and the shared prompt sets of the generators that prompt an LM.
"""

from __future__ import annotations

from synbench.lm.backends import load_shared
from synbench.lm.generation import chat_prompt, generate, torch_threads
from synbench.lm.models import LoadedModel, load_causal_lm
from synbench.lm.prompts import Prompts, load_prompts
from synbench.lm.settings import ModelSpec

__all__ = [
    "LoadedModel",
    "ModelSpec",
    "Prompts",
    "chat_prompt",
    "generate",
    "load_causal_lm",
    "load_prompts",
    "load_shared",
    "torch_threads",
]
