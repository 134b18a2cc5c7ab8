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


@dataclass(frozen=True)
class _Rows:
    """A chunk's batch layout: every prompt in row order (each document's private prompts, then its public one), and
    for each document's rows where they sit, so the mechanism can group private rows by document."""

    prompts: list[str]
    owner: list[int]  # the document of each private row
    private: list[int]  # the private rows' indices in `prompts`
    public: list[int]  # each document's public row
    document: list[int]  # the document of every row


def _rows(requests: list[Request]) -> _Rows:
    """Lay `requests` out as rows, in the order `Request.rows` counts them."""
    rows = _Rows(prompts=[], owner=[], private=[], public=[], document=[])
    for d, request in enumerate(requests):
        for text in request.private:
            rows.private.append(len(rows.prompts))
            rows.owner.append(d)
            rows.prompts.append(text)
        rows.public.append(len(rows.prompts))
        rows.prompts.append(request.public)
        rows.document.extend([d] * request.rows)
    return rows


def _prefill(
    model: Any, tokenizer: Any, prompts: list[str], device: torch.device
) -> tuple[str, Any, torch.Tensor, torch.Tensor, torch.Tensor]:
    """One forward pass over each distinct prompt, its cache rows then copied to every row that has it (public-only
    documents of a label set share their prompt). Returns the name this transformers version gives the cache
    argument, the cache, the last logits, the attention mask and the position of each row."""
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
    return cache_arg, cache, logits, enc["attention_mask"][rows], positions[rows][:, -1:]


def _take(
    chosen: list[int],
    sizes: list[int],
    expansion: list[int],
    stop: set[int],
    done: list[bool],
    tokens: list[list[int]],
    stats: DecodeStats,
) -> None:
    """Give each running document its drawn token (a stop token ends it instead) and count the draw: documents that
    already stopped still fill their rows of the batch, but their draws are neither output nor counted."""
    for d, token in enumerate(chosen):
        if done[d]:
            continue
        stats.tokens += 1
        stats.topk_plus_total += int(sizes[d])
        stats.expansion_tokens += int(expansion[d])
        if token in stop:
            done[d] = True
        else:
            tokens[d].append(token)


def _decode_chunk(
    model: Any,
    tokenizer: Any,
    requests: list[Request],
    mech: Mechanism,
    generator: torch.Generator,
    stop: set[int],
    stats: DecodeStats,
) -> list[list[int]]:
    """One chunk's documents, decoded together: prefill once, then one forward pass per token for all rows, each
    document fed the token its own draw chose, until every document stops or T tokens are drawn."""
    device = next(model.parameters()).device
    rows = _rows(requests)
    doc_of_row = torch.tensor(rows.document, device=device)
    owner_t = torch.tensor(rows.owner, dtype=torch.long, device=device)
    priv_t = torch.tensor(rows.private, dtype=torch.long, device=device)
    pub_t = torch.tensor(rows.public, dtype=torch.long, device=device)
    cache_arg, cache, logits, mask, position = _prefill(model, tokenizer, rows.prompts, device)
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
        _take(chosen.tolist(), candidates.sum(-1).tolist(), expansion, stop, done, tokens, stats)
        stats.forward_rows += len(rows.prompts)
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
