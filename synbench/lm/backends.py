"""Language-model backends behind one call: `complete(requests, seed) -> texts`.

A backend is a registry plugin (`synbench.lm_backends`), selected by the
`_plugin_` key of a generator's `backend` node (conf/generator/backend/*.yaml):

- `local` (`LocalBackend`): the causal LM of the `model` config group (offline
  SmolLM2-135M-Instruct by default) through `synbench.lm.models.load_causal_lm`,
  prompted with its chat template, batched (`synbench.lm.generation.generate`).
  Requests are sorted by prompt length so batches need little padding; the
  output comes back in request order.
- `openai` (`synbench.lm.openai_compat.OpenAIBackend`): an OpenAI-compatible chat-completions API.

`make_backend` builds the one a node names.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Mapping, Sequence

import torch

from synbench.core import registry
from synbench.core.base import ChatRequest, LMBackend
from synbench.core.credentials import check_no_credentials
from synbench.core.errors import ConfigError
from synbench.lm.generation import chat_prompt, generate, torch_threads
from synbench.lm.models import LoadedModel, load_causal_lm
from synbench.lm.settings import LocalBackendOptions


@lru_cache(maxsize=1)
def load_shared(model_json: str, device: str) -> LoadedModel:
    """A model loaded once per process for prompting only (its weights are never changed, so runs may share it)."""
    return load_causal_lm(json.loads(model_json), device)


class LocalBackend(LMBackend):
    """The `model` config group's causal LM, on CUDA when available, else CPU with `num_threads` threads."""

    uses_model_group = True
    options = LocalBackendOptions

    def __init__(self, model: Mapping[str, Any], **options: Any) -> None:
        settings = LocalBackendOptions(**options)
        node = {**dict(model), **({"dtype": settings.dtype} if settings.dtype is not None else {})}
        self.model_json = json.dumps(node, sort_keys=True)
        self.name = str(node.get("name", "local"))
        self.batch_size, self.num_threads, self.top_k = settings.batch_size, settings.num_threads, settings.top_k

    def loaded(self) -> LoadedModel:
        return load_shared(self.model_json, "cuda" if torch.cuda.is_available() else "cpu")

    def complete(
        self, requests: Sequence[ChatRequest], *, max_new_tokens: int, temperature: float, top_p: float, seed: int
    ) -> list[str]:
        if not requests:
            return []
        loaded = self.loaded()
        tok = loaded.tokenizer
        prompts = [chat_prompt(tok, r.user, r.system) for r in requests]
        stop = [i for i in [tok.convert_tokens_to_ids("<|im_end|>")] if isinstance(i, int) and i != tok.unk_token_id]
        out: list[str] = [""] * len(requests)
        # One generate call per max_new_tokens value, prompts sorted by length inside it (less padding).
        for j, budget in enumerate(sorted({r.max_new_tokens or max_new_tokens for r in requests})):
            idx = sorted(
                (i for i, r in enumerate(requests) if (r.max_new_tokens or max_new_tokens) == budget),
                key=lambda i: len(prompts[i]),
            )
            with torch_threads(self.num_threads):
                texts, _ = generate(
                    loaded.model,
                    tok,
                    [prompts[i] for i in idx],
                    batch_size=self.batch_size,
                    max_new_tokens=budget,
                    temperature=temperature,
                    top_p=top_p,
                    top_k=self.top_k,
                    seed=seed + 7919 * j,
                    desc=f"{self.name} generate",
                    eos_token_ids=stop,
                )
            for i, text in zip(idx, texts):
                out[i] = text
        return out


def make_backend(node: Mapping[str, Any] | LMBackend, model: Mapping[str, Any] | None = None) -> LMBackend:
    """The backend a config node names with `_plugin_` (built with the `model` group if it uses it); a backend object
    is used as is."""
    if hasattr(node, "complete"):
        return node  # type: ignore[return-value]
    keys = dict(node)
    check_no_credentials(keys, "the backend config")  # an API key comes from the environment, never a URL
    if not keys.get(registry.PLUGIN_KEY):
        raise ConfigError(
            f"the generator's backend config has no '{registry.PLUGIN_KEY}' key naming its LM backend; "
            f"available: {', '.join(registry.available(LMBackend))} (conf/generator/backend/*.yaml)"
        )
    cls = registry.load(LMBackend, str(keys[registry.PLUGIN_KEY]))
    if not cls.uses_model_group:
        return registry.create(LMBackend, keys)
    if model is None:
        raise ConfigError(
            f"LM backend '{keys[registry.PLUGIN_KEY]}' runs the `model` config group's LM, and none was "
            "given: set the generator's `model: ${model}`"
        )
    return registry.create(LMBackend, keys, model=model)
