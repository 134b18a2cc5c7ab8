"""An OpenAI-compatible chat-completions client on the standard library (urllib), with optional concurrency.

POST `{base_url}/chat/completions` with `{"model", "messages", "max_tokens",
"temperature", "top_p", "seed"}`; the reply text is
`choices[0].message.content`. The API key is read from the environment
variable the config names (never from the config itself, so it is not written
to results). Works with OpenAI, vLLM's and llama.cpp's servers, and others that
speak the same protocol. Only synthetic text and label names go into prompts.
"""
from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Sequence

from synbench.errors import ConfigError, SynBenchError
from synbench.lm.backends import ChatRequest


class APIBackend:
    """Chat completions over HTTP; `max_workers` requests in flight, each retried `max_retries` times with backoff."""

    KEYS = ("base_url", "model", "api_key_env", "timeout_s", "max_workers", "max_retries", "retry_wait_s")

    def __init__(self, base_url: str, model: str, api_key_env: str | None = "OPENAI_API_KEY", timeout_s: float = 60.0,
                 max_workers: int = 4, max_retries: int = 3, retry_wait_s: float = 1.0) -> None:
        if not base_url or not model:
            raise ConfigError("backend type 'openai' needs base_url and model")
        if max_workers < 1 or max_retries < 0:
            raise ConfigError("backend.max_workers must be at least 1 and backend.max_retries at least 0")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model, self.name = model, model
        self.api_key_env, self.timeout_s = api_key_env, float(timeout_s)
        self.max_workers, self.max_retries, self.retry_wait_s = int(max_workers), int(max_retries), float(retry_wait_s)

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.api_key_env:
            key = os.environ.get(self.api_key_env)
            if key:
                headers["Authorization"] = f"Bearer {key}"
        return headers

    def _one(self, request: ChatRequest, max_new_tokens: int, temperature: float, top_p: float, seed: int) -> str:
        messages = ([{"role": "system", "content": request.system}] if request.system else []) + \
            [{"role": "user", "content": request.user}]
        body = json.dumps({"model": self.model, "messages": messages, "max_tokens": request.max_new_tokens or max_new_tokens,
                           "temperature": temperature, "top_p": top_p, "seed": seed, "n": 1}).encode()
        error: Exception | None = None
        for attempt in range(self.max_retries + 1):
            if attempt:
                time.sleep(self.retry_wait_s * 2 ** (attempt - 1))
            try:
                req = urllib.request.Request(self.url, data=body, headers=self._headers(), method="POST")
                with urllib.request.urlopen(req, timeout=self.timeout_s) as response:
                    reply: Any = json.loads(response.read().decode())
                return str(reply["choices"][0]["message"].get("content") or "").strip()
            except urllib.error.HTTPError as exc:
                error = exc
                if exc.code < 500 and exc.code != 429:  # a client error will not go away by retrying
                    break
            except (urllib.error.URLError, TimeoutError, OSError, KeyError, IndexError, ValueError) as exc:
                error = exc
        raise SynBenchError(f"LM API {self.url} (model {self.model}) failed after {self.max_retries + 1} attempt(s): "
                            f"{type(error).__name__}: {getattr(error, 'code', '') or getattr(error, 'reason', '') or ''}")

    def complete(self, requests: Sequence[ChatRequest], *, max_new_tokens: int, temperature: float, top_p: float,
                 seed: int) -> list[str]:
        """Replies in request order; request i is sent with seed + i (servers that honour `seed` then reproduce)."""
        if not requests:
            return []
        with ThreadPoolExecutor(max_workers=min(self.max_workers, len(requests))) as pool:
            futures = [pool.submit(self._one, r, max_new_tokens, temperature, top_p, seed + i) for i, r in enumerate(requests)]
            return [f.result() for f in futures]
