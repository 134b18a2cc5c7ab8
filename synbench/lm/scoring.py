"""Batched scoring with a causal LM: per-token log-probabilities of texts, next-token log-probabilities of prompts.

Both are plain forward passes (no sampling), right-padded so positions start
at 0 in every row, and batched over texts sorted by length (little padding);
results come back in input order. Used by the Min-K% / Min-K%++ detectors
(`synbench.contamination.mink`) and the P(yes) - P(no) filter (`synbench.filters`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import torch

from synbench.core.errors import ConfigError
from synbench.core.progress import progress


@dataclass(frozen=True)
class TokenScores:
    """One text's scored tokens: log p(x_t | x_<t), and the mean and std of log p(z | x_<t) over the vocabulary z."""

    logp: np.ndarray
    mu: np.ndarray
    sigma: np.ndarray


def _encode(tokenizer: Any, texts: Sequence[str], max_length: int, start_id: int | None) -> list[list[int]]:
    """Token ids without special tokens, cut to `max_length`, each after `start_id` (the context of the first token)."""
    prefix = [] if start_id is None else [int(start_id)]
    return [prefix + tokenizer(t, add_special_tokens=False)["input_ids"][:max_length] for t in texts]


def _batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Index batches of texts sorted by length (longest first, so a memory problem shows in the first batch)."""
    if batch_size < 1:
        raise ConfigError("scoring batch_size must be at least 1")
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    chunks = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    return chunks


def _forward(model: Any, rows: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits of right-padded rows and the attention mask."""
    device = next(model.parameters()).device
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.tensor(r, dtype=torch.long)
        mask[i, : len(r)] = 1
    return model(input_ids=ids.to(device), attention_mask=mask.to(device)).logits.float(), mask


@torch.inference_mode()
def token_scores(
    model: Any, tokenizer: Any, texts: Sequence[str], *, batch_size: int, max_length: int, desc: str = "score"
) -> list[TokenScores]:
    """Per-token scores of each text under `model` (the first token is conditioned on BOS, or EOS when there is
    none)."""
    model.eval()
    start = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    rows = _encode(tokenizer, texts, max_length, start)
    out: list[TokenScores | None] = [None] * len(texts)
    for idx in progress(_batches([len(r) for r in rows], batch_size), desc=desc, unit="batch"):
        logits, _ = _forward(model, [rows[i] for i in idx], int(tokenizer.pad_token_id or 0))
        logprobs = torch.log_softmax(logits[:, :-1], dim=-1)
        probs = logprobs.exp()
        mu = (probs * logprobs).sum(-1)
        sigma = ((probs * logprobs.square()).sum(-1) - mu.square()).clamp_min(0).sqrt()
        for b, i in enumerate(idx):
            n = len(rows[i]) - 1
            target = torch.tensor(rows[i][1:], dtype=torch.long, device=logprobs.device)
            logp = logprobs[b, torch.arange(n, device=logprobs.device), target]
            out[i] = TokenScores(logp.cpu().numpy(), mu[b, :n].cpu().numpy(), sigma[b, :n].cpu().numpy())
    return out  # type: ignore[return-value]


@torch.inference_mode()
def next_token_logprobs(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[str],
    token_ids: Sequence[int],
    *,
    batch_size: int,
    max_length: int,
    desc: str = "score",
) -> np.ndarray:
    """log p(token | prompt) for each prompt (rows) and each of `token_ids` (columns); prompts cut from the left."""
    model.eval()
    rows = [ids[-max_length:] for ids in _encode(tokenizer, prompts, 10**9, None)]
    out = np.zeros((len(prompts), len(token_ids)), dtype=np.float64)
    columns = torch.tensor(list(token_ids), dtype=torch.long)
    for idx in progress(_batches([len(r) for r in rows], batch_size), desc=desc, unit="batch"):
        logits, mask = _forward(model, [rows[i] for i in idx], int(tokenizer.pad_token_id or 0))
        last = logits[torch.arange(len(idx)), mask.sum(1) - 1]
        out[idx] = torch.log_softmax(last, dim=-1)[:, columns.to(last.device)].cpu().numpy()
    return out
