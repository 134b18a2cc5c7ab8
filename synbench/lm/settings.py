"""The schema of the `model` config node and of the LM backends' options (`generator.backend.*`).

Importable without torch: Hydra's ConfigStore registers these dataclasses
when it first reads the configs, so a `model.max_length=abc` or a
`generator.backend.batch_size=many` is refused on merge, naming the key,
before any model is loaded. The checks a type cannot express are in each
`__post_init__`, one place per setting.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from typing import Optional, Sequence

from omegaconf import MISSING

from synbench.core.errors import ConfigError

# bfloat16_if_native: bfloat16 where the device runs bf16 matmuls natively (CUDA with bf16, a CPU with AVX512-BF16
# or AMX), else float32: elsewhere PyTorch emulates them, tens of times slower than float32 (synbench.lm.models)
IF_NATIVE = "bfloat16_if_native"
DTYPES = ("float32", "bfloat16", "float16", IF_NATIVE)
ATTENTION = ("auto", "flash_attention_2", "sdpa", "eager")


def check_num_threads(value: int | None, key: str) -> None:
    """Refuse a torch CPU thread count below 1, naming its key (null keeps PyTorch's default): torch raises on a
    negative count only once a model runs, and a 0 passed on as "unset" would hide the typo."""
    if value is not None and (isinstance(value, bool) or value < 1):
        raise ConfigError(f"{key}={value!r} must be at least 1 (torch CPU threads), or null for PyTorch's default")


@dataclass(frozen=True)
class ModelSpec:
    """The `model` config node (conf/model/*.yaml): a causal LM, from a packaged GGUF file, a hub id or a folder."""

    name: str = MISSING
    pretrained: str = MISSING  # hub id, or a folder written by save_pretrained; used when the package is absent
    package: Optional[str] = None  # an offline pip package that ships `gguf_file`
    gguf_file: Optional[str] = None  # the GGUF file's path inside `package`
    dtype: str = "float32"  # float32 | bfloat16 | float16
    attn_implementation: str = "auto"  # auto = flash_attention_2 on CUDA with flash-attn, else sdpa

    def __post_init__(self) -> None:
        if self.dtype not in DTYPES:
            raise ConfigError(f"model.dtype={self.dtype!r} is unknown; choose one of {', '.join(DTYPES)}")
        if self.attn_implementation not in ATTENTION:
            raise ConfigError(
                f"model.attn_implementation={self.attn_implementation!r} is unknown; "
                f"choose one of {', '.join(ATTENTION)}"
            )


# transformers' own top_k, which a sampled `generate` applies unless told otherwise: every sampling run used it before
# top_k was a key, so it stays the default of every key that sets it (0 = every token)
TRANSFORMERS_TOP_K = 50


@dataclass(frozen=True)
class LocalBackendOptions:
    """`generator/backend=local`: the `model` group's LM, batched (the model node is passed by the core)."""

    batch_size: int = 32  # prompts per generate batch
    num_threads: Optional[int] = None  # torch CPU threads while generating; null = PyTorch's default
    # the dtype the LM prompts in, in place of model.dtype (the model group is shared with generators that train):
    # bfloat16 runs bf16 matmuls, about 2x faster on CPUs with AVX512-BF16 or AMX and far slower on CPUs without
    # (bfloat16_if_native picks it only where native); null = model.dtype
    dtype: Optional[str] = None
    # sample among the top_k most likely tokens (before top_p); 0 = every token, as an OpenAI-compatible server
    # samples unless told otherwise
    top_k: int = TRANSFORMERS_TOP_K

    def __post_init__(self) -> None:
        if self.batch_size < 1:
            raise ConfigError(f"generator.backend.batch_size={self.batch_size} must be at least 1")
        if self.top_k < 0:
            raise ConfigError(f"generator.backend.top_k={self.top_k} must be at least 0 (0 = every token)")
        check_num_threads(self.num_threads, "generator.backend.num_threads")
        if self.dtype is not None and self.dtype not in DTYPES:
            raise ConfigError(
                f"generator.backend.dtype={self.dtype!r} is unknown; choose one of {', '.join(DTYPES)}, or null "
                "for model.dtype"
            )


@dataclass(frozen=True)
class OpenAIBackendOptions:
    """`generator/backend=openai`: an OpenAI-compatible chat-completions API (the key from the environment)."""

    model: str = MISSING  # the served model's name: required, so a missing one fails before any request
    base_url: str = "http://127.0.0.1:8000/v1"
    api_key_env: Optional[str] = "OPENAI_API_KEY"  # the NAME of the environment variable holding the key
    timeout_s: float = 60.0
    max_workers: int = 8  # requests in flight
    max_retries: int = 3  # the client's retries (connection errors, 408, 409, 429, 5xx; backoff)

    def __post_init__(self) -> None:
        if not self.base_url or not self.model:
            raise ConfigError("LM backend 'openai' needs generator.backend.base_url and generator.backend.model")
        if self.max_workers < 1 or self.max_retries < 0 or self.timeout_s <= 0:
            raise ConfigError(
                "generator.backend: max_workers must be at least 1, max_retries at least 0 and timeout_s positive"
            )


def check_prompt(prompt: str, key: str, placeholders: Sequence[str], required: str) -> None:
    """Refuse a prompt template (`key`) that `str.format` with `placeholders` cannot fill, or that lacks `required`,
    naming the placeholder: otherwise the first batch fails with a KeyError after the model has loaded. A prompt is
    config, never private."""
    allowed = ", ".join(f"{{{name}}}" for name in placeholders if name != required)
    also = f" and {allowed}" if allowed else ""
    fix = f"use {{{required}}} (required){also}, and write a literal brace as {{{{ or }}}}"
    try:
        names = [name for _, name, _, _ in string.Formatter().parse(prompt) if name is not None]
    except ValueError:
        raise ConfigError(f"{key} has an unmatched brace; {fix}") from None
    unknown = [name for name in names if name not in placeholders]
    if unknown:
        raise ConfigError(f"{key} has an unknown placeholder {{{unknown[0]}}}; {fix}")
    if required not in names:
        raise ConfigError(f"{key} has no {{{required}}}; {fix}")
