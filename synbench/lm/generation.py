"""Batched sampling from a causal LM: left-padded prompts, KV cache, seeded, empty outputs counted.

Long outputs (2-4k new tokens): `memory_batch_size` caps the batch at what
the KV cache of that many tokens leaves room for, and a progress meter counts
decoding steps (a batch of 4k tokens takes minutes on a CPU).

The one copy of the loop: DP-Gen (control-code prompts), AUG-PE and the
`public` control (chat turns rendered by `chat_prompt`, through
`backends.LocalBackend`) all sample through `generate`. Nothing is filtered: an empty output stays in the list and is
counted, because a generator that silently drops failures looks better than it is.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import torch

from synbench.core.errors import ConfigError
from synbench.core.progress import Meter
from synbench.lm.settings import check_num_threads


@dataclass(frozen=True)
class GenerationStats:
    """Counts of one `generate` call (statistics of generated text: public when the prompts are)."""

    n: int
    n_empty: int
    new_tokens: int
    generate_s: float

    def as_details(self) -> dict[str, Any]:
        return {
            "generated_tokens": self.new_tokens,
            "generate_s": round(self.generate_s, 3),
            "generate_tokens_per_s": round(self.new_tokens / max(self.generate_s, 1e-9), 2),
        }


@contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """PyTorch CPU threads for a block, restored afterwards (the setting is process-wide); None keeps it. Each key
    that sets `n` refuses a count below 1 where it is set; a plugin calling this directly gets the same line."""
    check_num_threads(n, "num_threads")
    before = torch.get_num_threads()
    if n is not None:
        torch.set_num_threads(int(n))
    try:
        yield
    finally:
        torch.set_num_threads(before)


def chat_prompt(tokenizer: Any, user: str, system: str | None) -> str:
    """`user` (and `system`, None: no system turn) as the model's chat turn with the generation prompt; plain text
    without a chat template."""
    if getattr(tokenizer, "chat_template", None):
        chat = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": user}]
        return tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
    return (f"{system}\n\n" if system else "") + f"{user}\n"


def generated_lengths(new: torch.Tensor, eos_id: int) -> torch.Tensor:
    """Tokens each row generated, counting its first EOS (padding after it is not generation)."""
    is_eos = new == eos_id
    return torch.where(is_eos.any(dim=1), is_eos.float().argmax(dim=1) + 1, torch.full_like(new[:, 0], new.shape[1]))


# Share of free memory (CUDA: free device memory; CPU: available RAM) the KV caches of one batch may take.
KV_MEMORY_SHARE = 0.4


def kv_bytes_per_sequence(model: Any, tokens: int) -> int:
    """Bytes one sequence of `tokens` takes in the KV cache (keys and values of every layer), plus its logits."""
    cfg = model.config
    heads = getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    width = next(model.parameters()).element_size()
    return 2 * cfg.num_hidden_layers * heads * head_dim * tokens * width + 3 * cfg.vocab_size * 4


def free_memory(device: torch.device) -> int:
    """Bytes free for a batch: on CUDA what the allocator can still get, on CPU the available RAM."""
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    import psutil

    return int(psutil.virtual_memory().available)


def memory_batch_size(model: Any, tokens: int, most: int) -> int:
    """The largest batch (at most `most`) whose KV caches of `tokens` each fit in `KV_MEMORY_SHARE` of free memory."""
    device = next(model.parameters()).device
    fits = int(free_memory(device) * KV_MEMORY_SHARE) // kv_bytes_per_sequence(model, tokens)
    return max(1, min(most, fits))


class StepProgress:
    """A logits processor that leaves the scores alone and ticks a progress meter once per decoding step."""

    def __init__(self, meter: Meter) -> None:
        self.meter = meter
        self.steps = 0

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        self.meter.update(1)
        self.steps += 1
        return scores


class Sampler:
    """The last logits processor of `generate`: it samples the next token itself and hands the model's greedy step
    scores that are -inf but at the drawn token.

    The distribution is transformers' sampling one, by its rules and in its
    order: temperature, then top-k, then top-p (a token stays while the tokens
    more likely than it hold less than top_p of the mass). Only the draw
    differs: transformers' `torch.multinomial` over the whole vocabulary (49k
    tokens for SmolLM2) is slow on a CPU; here the draw is an inverse-CDF
    lookup among the top_k candidates (the whole vocabulary when top_k is 0),
    from torch's seeded generator. experiments/benchmarks/bench_sampler.py
    times the two loops.
    """

    def __init__(self, temperature: float, top_k: int, top_p: float) -> None:
        if not temperature > 0 or top_k < 0 or not 0 < top_p <= 1:
            raise ConfigError(
                f"sampling needs temperature > 0 (got {temperature}), top_k >= 0 (got {top_k}; 0 = every token) and "
                f"top_p in (0, 1] (got {top_p})"
            )
        self.temperature, self.top_k, self.top_p = temperature, top_k, top_p

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        logits = scores.float() / self.temperature
        index: torch.Tensor | None = None
        if self.top_k:
            logits, index = logits.topk(min(self.top_k, logits.shape[-1]), dim=-1)  # most likely first
        elif self.top_p < 1:
            logits, index = logits.sort(dim=-1, descending=True)
        probs = logits.softmax(dim=-1)
        if self.top_p < 1:
            probs = probs.masked_fill(probs.cumsum(dim=-1) - probs >= self.top_p, 0.0)
        cdf = probs.cumsum(dim=-1)
        u = torch.rand(cdf.shape[0], 1, device=cdf.device) * cdf[:, -1:]
        drawn = torch.searchsorted(cdf, u, right=True).clamp_(max=cdf.shape[-1] - 1)
        token = index.gather(-1, drawn) if index is not None else drawn
        return torch.full_like(scores, -float("inf")).scatter_(-1, token, 0.0)


def flash_autocast(model: Any, device: torch.device) -> Any:
    """bf16 autocast for a model with fp32 weights (trained in mixed precision) whose attention is Flash-Attention 2."""
    flash = getattr(model.config, "_attn_implementation", None) == "flash_attention_2"
    fp32 = any(p.dtype == torch.float32 for p in model.parameters())
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=flash and fp32 and device.type == "cuda")


@torch.inference_mode()
def generate(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[str],
    *,
    batch_size: int,
    max_new_tokens: int,
    temperature: float,
    top_p: float,
    seed: int,
    top_k: int,
    desc: str = "generate",
    eos_token_ids: Sequence[int] | None = None,
) -> tuple[list[str], GenerationStats]:
    """One sampled continuation per prompt, in `batch_size` batches (left padding, KV cache), seeded by `seed`.

    Prompts are sent in the given order; callers that want little padding sort
    them by length first. `eos_token_ids` adds stop tokens (a chat model's end
    of turn) to the tokenizer's EOS; `top_k=0` samples among every token.
    """
    if batch_size < 1 or max_new_tokens < 1:
        raise ConfigError("batch size and max_new_tokens must be at least 1")
    sampler = Sampler(temperature, top_k, top_p)
    torch.manual_seed(seed)
    model.eval()
    device = next(model.parameters()).device
    eos = [tokenizer.eos_token_id, *(i for i in (eos_token_ids or []) if i != tokenizer.eos_token_id)]
    texts: list[str] = []
    new_tokens = 0
    start = time.perf_counter()
    from transformers import LogitsProcessorList

    batches = range(0, len(prompts), batch_size)
    # Progress in decoding steps (an upper bound: a batch stops early when every row has ended); shown for long runs.
    meter = Meter(desc, total=len(batches) * max_new_tokens, unit="step", enabled=len(batches) * max_new_tokens >= 1024)
    for i in batches:
        enc = tokenizer(
            list(prompts[i : i + batch_size]), return_tensors="pt", padding=True, add_special_tokens=False
        ).to(device)
        steps = StepProgress(meter)
        with flash_autocast(model, device):
            out = model.generate(  # greedy over the Sampler's scores: one token each, the one it drew
                **enc,
                do_sample=False,
                max_new_tokens=max_new_tokens,
                eos_token_id=eos if len(eos) > 1 else eos[0],
                pad_token_id=tokenizer.pad_token_id,
                use_cache=True,
                logits_processor=LogitsProcessorList([steps, sampler]),
            )
        meter.update(max_new_tokens - steps.steps)
        new = out[:, enc["input_ids"].shape[1] :]
        new_tokens += int(generated_lengths(new, tokenizer.eos_token_id).sum())
        texts.extend(t.strip() for t in tokenizer.batch_decode(new, skip_special_tokens=True))
    meter.close()
    return texts, GenerationStats(len(texts), sum(1 for t in texts if not t), new_tokens, time.perf_counter() - start)
