"""Language-model backends behind one call: `complete(requests, seed) -> texts`.

- `LocalBackend`: the causal LM of the `model` config group (offline
  SmolLM2-135M-Instruct by default) through `synbench.models.load_causal_lm`,
  prompted with its chat template, batched (`synbench.lm.generation.generate`).
  Requests are sorted by prompt length so batches need little padding; the
  output comes back in request order.
- `APIBackend` (`synbench.lm.api`): an OpenAI-compatible chat-completions HTTP API.

A backend node is `{type: local | openai, ...}`; `make_backend` builds it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Mapping, Protocol, Sequence

import torch

from synbench.errors import ConfigError
from synbench.lm.generation import chat_prompt, generate, torch_threads
from synbench.models import LoadedModel, load_causal_lm

BACKENDS = ("local", "openai")


@dataclass(frozen=True)
class ChatRequest:
    """One completion to write: a user turn, an optional system turn, and its own max_new_tokens (None: the call's)."""

    user: str
    system: str | None = None
    max_new_tokens: int | None = None


class LMBackend(Protocol):
    """What a generator needs from an LM: one sampled reply per request, reproducible from `seed` where the LM allows."""

    name: str

    def complete(self, requests: Sequence[ChatRequest], *, max_new_tokens: int, temperature: float, top_p: float,
                 seed: int) -> list[str]: ...


@lru_cache(maxsize=1)
def load_shared(model_json: str, device: str) -> LoadedModel:
    """A model loaded once per process for prompting only (its weights are never changed, so runs may share it)."""
    return load_causal_lm(json.loads(model_json), device)


class LocalBackend:
    """The `model` config group's causal LM, on CUDA when available, else CPU with `num_threads` threads."""

    def __init__(self, model: Mapping[str, Any], batch_size: int = 32, num_threads: int | None = None) -> None:
        if batch_size < 1:
            raise ConfigError("backend.batch_size must be at least 1")
        self.model_json = json.dumps(dict(model), sort_keys=True)
        self.name = str(dict(model).get("name", "local"))
        self.batch_size, self.num_threads = int(batch_size), num_threads

    def loaded(self) -> LoadedModel:
        return load_shared(self.model_json, "cuda" if torch.cuda.is_available() else "cpu")

    def complete(self, requests: Sequence[ChatRequest], *, max_new_tokens: int, temperature: float, top_p: float,
                 seed: int) -> list[str]:
        if not requests:
            return []
        loaded = self.loaded()
        tok = loaded.tokenizer
        prompts = [chat_prompt(tok, r.user, r.system) for r in requests]
        stop = [i for i in [tok.convert_tokens_to_ids("<|im_end|>")] if isinstance(i, int) and i != tok.unk_token_id]
        out: list[str] = [""] * len(requests)
        # One generate call per max_new_tokens value, prompts sorted by length inside it (less padding).
        for j, budget in enumerate(sorted({r.max_new_tokens or max_new_tokens for r in requests})):
            idx = sorted((i for i, r in enumerate(requests) if (r.max_new_tokens or max_new_tokens) == budget),
                         key=lambda i: len(prompts[i]))
            with torch_threads(self.num_threads):
                texts, _ = generate(loaded.model, tok, [prompts[i] for i in idx], batch_size=self.batch_size,
                                    max_new_tokens=budget, temperature=temperature, top_p=top_p, seed=seed + 7919 * j,
                                    desc=f"{self.name} generate", eos_token_ids=stop)
            for i, text in zip(idx, texts):
                out[i] = text
        return out


def make_backend(node: Mapping[str, Any] | LMBackend, model: Mapping[str, Any] | None = None) -> LMBackend:
    """The backend a config node names (`type: local | openai`); an object with `complete` is used as is."""
    if hasattr(node, "complete"):
        return node  # type: ignore[return-value]
    keys = dict(node)
    kind = keys.pop("type", "local")
    if kind == "local":
        if model is None:
            raise ConfigError("backend type 'local' needs the `model` config group")
        allowed = {"batch_size", "num_threads"}
        _check_keys(keys, allowed, kind)
        return LocalBackend(model, **keys)
    if kind == "openai":
        from synbench.lm.api import APIBackend

        _check_keys(keys, set(APIBackend.KEYS), kind)
        return APIBackend(**keys)
    raise ConfigError(f"backend type {kind!r} is unknown; choose one of {', '.join(BACKENDS)}")


def _check_keys(keys: Mapping[str, Any], allowed: set[str], kind: str) -> None:
    unknown = sorted(set(keys) - allowed)
    if unknown:
        raise ConfigError(f"backend type '{kind}' has unknown keys {unknown}; it takes {', '.join(sorted(allowed))}")
