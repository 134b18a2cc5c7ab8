"""Batched InvisibleInk decoding: every context of many documents in one forward pass per token, with a KV cache.

A request is one synthetic document: its b <= B private prompts (one private
reference each) and its public prompt. Requests are packed into chunks of at
most `max_rows` prompts; a chunk is left-padded and prefilled once (each
distinct prompt once: public-only documents of a label set share theirs), then
advanced one token per step for all its rows together (position ids follow
the attention mask, so padding does not shift them). After each step every
document draws its token with the mechanism of `mechanism.py`, and all its
rows are fed that token. A document stops at a stop token or after
`max_new_tokens` (the T of the accounting, which covers the longest case).
"""

from __future__ import annotations

import inspect
import time
from dataclasses import dataclass
from typing import Any, Sequence

import torch

from synbench.api import Meter
from synbench_invisibleink.mechanism import outside_top_k, sample_tokens, token_distribution


@dataclass(frozen=True)
class Request:
    """One synthetic document to write: rendered private prompts (about B, possibly none) and the public prompt."""

    private: tuple[str, ...]
    public: str

    @property
    def rows(self) -> int:
        return len(self.private) + 1


@dataclass(frozen=True)
class Mechanism:
    """The decoding parameters the accounting fixed: clip C, batch size B, temperature, k and T."""

    clip: float
    batch_size: int
    temperature: float
    top_k: int
    max_new_tokens: int


@dataclass
class DecodeStats:
    """Counts of one `decode` call: statistics of its (DP) output and public logits, and wall-clock time."""

    tokens: int = 0
    forward_rows: int = 0
    topk_plus_total: int = 0
    expansion_tokens: int = 0
    seconds: float = 0.0


def chunks(requests: Sequence[Request], max_rows: int) -> list[list[int]]:
    """Consecutive request indices packed so that each chunk has at most `max_rows` prompts (at least one request)."""
    out: list[list[int]] = []
    rows = 0
    for i, request in enumerate(requests):
        if not out or rows + request.rows > max_rows:
            out.append([])
            rows = 0
        out[-1].append(i)
        rows += request.rows
    return out


@torch.inference_mode()
def decode(
    model: Any,
    tokenizer: Any,
    requests: Sequence[Request],
    mechanism: Mechanism,
    generator: torch.Generator,
    stop_ids: Sequence[int],
    max_rows: int = 64,
) -> tuple[list[list[int]], DecodeStats]:
    """The generated token ids of every request (stop token excluded), and the call's counts."""
    model.eval()
    stats = DecodeStats()
    start = time.perf_counter()
    out: list[list[int]] = [[] for _ in requests]
    # Documents with private batches first, then public-only ones: a chunk of the latter holds one prompt per label
    # set, which the prefill computes once (no padding to a private prompt's length, no repeated work).
    order = sorted(range(len(requests)), key=lambda i: requests[i].rows == 1)
    packed = [[order[j] for j in chunk] for chunk in chunks([requests[i] for i in order], max_rows)]
    with Meter("invisibleink decode", total=len(requests), unit="doc", enabled=len(packed) > 1) as meter:
        for chunk in packed:
            for i, ids in zip(
                chunk,
                _decode_chunk(
                    model, tokenizer, [requests[i] for i in chunk], mechanism, generator, set(stop_ids), stats
                ),
            ):
                out[i] = ids
            meter.update(len(chunk))
    stats.seconds = time.perf_counter() - start
    return out, stats


def _decode_chunk(
    model: Any,
    tokenizer: Any,
    requests: list[Request],
    mech: Mechanism,
    generator: torch.Generator,
    stop: set[int],
    stats: DecodeStats,
) -> list[list[int]]:
    device = next(model.parameters()).device
    prompts: list[str] = []
    owner: list[int] = []  # the document of each private row
    private_rows: list[int] = []
    public_rows: list[int] = []
    for d, request in enumerate(requests):
        for text in request.private:
            private_rows.append(len(prompts))
            owner.append(d)
            prompts.append(text)
        public_rows.append(len(prompts))
        prompts.append(request.public)
    doc_of_row = torch.tensor([d for d, r in enumerate(requests) for _ in range(r.rows)], device=device)
    owner_t = torch.tensor(owner, dtype=torch.long, device=device)
    priv_t = torch.tensor(private_rows, dtype=torch.long, device=device)
    pub_t = torch.tensor(public_rows, dtype=torch.long, device=device)
    # Prefill each distinct prompt once, then copy its cache row to every row that has it.
    slot = {p: i for i, p in enumerate(dict.fromkeys(prompts))}
    rows = torch.tensor([slot[p] for p in prompts], dtype=torch.long, device=device)
    enc = tokenizer(list(slot), return_tensors="pt", padding=True, add_special_tokens=False).to(device)
    positions = (enc["attention_mask"].cumsum(-1) - 1).clamp(min=0)
    # transformers renamed `past_key_values` to `cache` (5.x); take whichever this version's forward has.
    cache_arg = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    result = model(
        input_ids=enc["input_ids"],
        attention_mask=enc["attention_mask"],
        position_ids=positions,
        use_cache=True,
        logits_to_keep=1,
    )
    cache, logits = getattr(result, cache_arg), result.logits[rows, -1, :]
    cache.reorder_cache(rows)
    mask, positions = enc["attention_mask"][rows], positions[rows]
    position = positions[:, -1:]
    done = [False] * len(requests)
    tokens: list[list[int]] = [[] for _ in requests]
    for _ in range(mech.max_new_tokens):
        public = logits[pub_t].float()
        probs, candidates = token_distribution(
            logits[priv_t],
            public,
            owner_t,
            clip=mech.clip,
            batch_size=mech.batch_size,
            temperature=mech.temperature,
            top_k=mech.top_k,
        )
        chosen = sample_tokens(probs, generator)
        expansion = outside_top_k(public, chosen, mech.top_k).tolist()
        sizes = candidates.sum(-1).tolist()
        for d, token in enumerate(chosen.tolist()):
            if done[d]:
                continue
            stats.tokens += 1
            stats.topk_plus_total += int(sizes[d])
            stats.expansion_tokens += int(expansion[d])
            if token in stop:
                done[d] = True
            else:
                tokens[d].append(token)
        stats.forward_rows += len(prompts)
        if all(done):
            break
        mask = torch.cat([mask, mask.new_ones((mask.shape[0], 1))], dim=1)
        position = position + 1
        result = model(
            input_ids=chosen[doc_of_row][:, None],
            attention_mask=mask,
            position_ids=position,
            use_cache=True,
            **{cache_arg: cache},
        )
        cache, logits = getattr(result, cache_arg), result.logits[:, -1, :]
    return tokens
