"""An OpenAI-compatible chat-completions backend on the official `openai` client, with optional concurrency.

Each request is one `chat.completions.create(model, messages, max_tokens,
temperature, top_p, seed)`; the reply is `choices[0].message.content`. The
client's own retries (connection errors, 408, 409, 429 and 5xx, with
exponential backoff) and timeout apply. The API key is read from the
environment variable the config names (never from the config itself, so it is
not written to results). Works with OpenAI, vLLM's, TGI's and llama.cpp's
servers, and others that speak the same protocol. Only synthetic text and
label names go into prompts.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Sequence

from synbench.core.base import ChatRequest, LMBackend
from synbench.core.errors import SynBenchError
from synbench.lm.settings import OpenAIBackendOptions

# The key sent when the named environment variable is unset: servers without authentication (vLLM, llama.cpp)
# ignore it, and a hosted API answers 401, which fails the job with that status.
NO_KEY = "EMPTY"


class OpenAIBackend(LMBackend):
    """Chat completions through `openai.OpenAI`: `max_workers` requests in flight, each retried `max_retries` times."""

    options = OpenAIBackendOptions

    def __init__(self, **options: Any) -> None:
        settings = OpenAIBackendOptions(**options)
        self.base_url, self.model, self.name = settings.base_url.rstrip("/"), settings.model, settings.model
        self.api_key_env, self.timeout_s = settings.api_key_env, settings.timeout_s
        self.max_workers, self.max_retries = settings.max_workers, settings.max_retries
        self._client: Any = None

    def client(self) -> Any:
        """The `openai.OpenAI` client, made on first use (the key is read from the environment then)."""
        if self._client is None:
            from openai import OpenAI

            key = os.environ.get(self.api_key_env) if self.api_key_env else None
            self._client = OpenAI(
                base_url=self.base_url, api_key=key or NO_KEY, timeout=self.timeout_s, max_retries=self.max_retries
            )
        return self._client

    def _one(self, request: ChatRequest, max_new_tokens: int, temperature: float, top_p: float, seed: int) -> str:
        from openai import APIError, APIStatusError

        messages = ([{"role": "system", "content": request.system}] if request.system else []) + [
            {"role": "user", "content": request.user}
        ]
        try:
            reply = self.client().chat.completions.create(
                model=self.model,
                messages=messages,
                max_tokens=request.max_new_tokens or max_new_tokens,
                temperature=temperature,
                top_p=top_p,
                seed=seed,
                n=1,
            )
            return str(reply.choices[0].message.content or "").strip()
        except (APIError, IndexError) as exc:
            status = f" (HTTP {exc.status_code})" if isinstance(exc, APIStatusError) else ""
            raise SynBenchError(
                f"LM API {self.base_url} (model {self.model}) failed after up to {self.max_retries + 1} "
                f"attempt(s): {type(exc).__name__}{status}; check generator.backend.base_url, the "
                f"server, and the key in ${self.api_key_env}"
            ) from None

    def complete(
        self, requests: Sequence[ChatRequest], *, max_new_tokens: int, temperature: float, top_p: float, seed: int
    ) -> list[str]:
        """Replies in request order; request i is sent with seed + i (servers that honour `seed` then reproduce).

        The first request that fails after its retries fails the call: the
        requests still queued are cancelled (those in flight finish first).
        """
        if not requests:
            return []
        pool = ThreadPoolExecutor(max_workers=min(self.max_workers, len(requests)))
        futures = [
            pool.submit(self._one, r, max_new_tokens, temperature, top_p, seed + i) for i, r in enumerate(requests)
        ]
        try:
            return [f.result() for f in futures]
        finally:  # after a failure the queued requests are dropped, not each retried against a dead server
            pool.shutdown(wait=True, cancel_futures=True)
