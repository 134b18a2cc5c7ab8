"""Sampling from the denoiser: start from all-[MASK] and unmask over K steps (MDLM's ancestral sampler).

At step i = K..1 (time t = i/K to s = (i-1)/K under the linear schedule)
every position still masked is revealed with probability (t - s)/t = 1/i,
with a token drawn from the denoiser's distribution at temperature T (the
output head, most of the cost, runs only at the positions revealed); a
revealed token stays (the absorbing state is left once). At the last step
every remaining position is revealed. The label-set code at position 0 is
given. [MASK], [PAD], [CLS], [UNK] and the [unused*] slots get probability 0,
so they are never written; the text is what comes before the first [SEP].

Where the text ends (`sample_length`): `full` (the default) gives [SEP]
probability 0 as well, so every text fills the sequence (max_seq_len - 1
tokens, a public constant, as the training sequences are cut there);
`model` lets the denoiser write [SEP]. Why `full`: a position's [SEP] is
drawn independently of the positions revealed in the same step, and a
denoiser trained for a few DP-SGD steps puts roughly [SEP]'s share of the
training targets (the end-of-text run) at every position, so under `model`
the first [SEP] falls a handful of tokens in (median 5-12 words against
reviews longer than the sequence) and the text carries too few words to say
its label (docs/generators/dpdiffusion.md has the measurements).

Nothing is filtered: an empty text (the first token is [SEP]) or a
degenerate one stays in the corpus and is counted, because the paper reports
that this family collapses at small eps and the benchmark must show it.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

import torch

from synbench.core.corpus import Labels
from synbench.generators.dpdiffusion.data import forbidden_ids, label_codes, layout


def output_stats(texts: Sequence[str], steps: int, tokens: int, seconds: float) -> dict[str, Any]:
    """Statistics of the synthetic text (a DP output): sampling steps and speed (empty/degenerate: the tasks count
    them)."""
    return {
        "sample_steps": steps,
        "generated_tokens": tokens,
        "generate_s": round(seconds, 3),
        "generate_tokens_per_s": round(tokens / max(seconds, 1e-9), 2),
    }


@torch.inference_mode()
def unmask(
    model: torch.nn.Module,
    tokenizer: Any,
    codes: torch.Tensor,
    *,
    seq_len: int,
    steps: int,
    temperature: float,
    generator: torch.Generator,
    end_mark: bool = False,
) -> torch.Tensor:
    """Token ids [B, seq_len] for label codes [B, n_labels], from all-[MASK] in `steps` steps; [SEP] is written
    only with `end_mark` (sample_length=model)."""
    device = next(model.parameters()).device
    b = codes.shape[0]
    x = torch.full((b, seq_len), tokenizer.mask_token_id, dtype=torch.long)
    x[:, 0] = tokenizer.cls_token_id
    pos, _ = layout(b, seq_len, 1, device)
    banned = torch.tensor(forbidden_ids(tokenizer, end_mark=end_mark))
    for i in range(steps, 0, -1):
        reveal = (x == tokenizer.mask_token_id) & (torch.rand(b, seq_len, generator=generator) < 1.0 / i)
        if not reveal.any():
            continue
        logits = model(x.to(device), pos, codes.to(device), reveal.to(device)).float().cpu() / temperature
        logits[:, banned] = -torch.inf
        x[reveal] = torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=generator).squeeze(1)
    return x


def decode(tokenizer: Any, ids: torch.Tensor) -> tuple[list[str], int]:
    """The texts before each row's first [SEP], and the tokens written (text plus its end mark)."""
    texts, tokens = [], 0
    for row in ids[:, 1:].tolist():
        end = row.index(tokenizer.sep_token_id) if tokenizer.sep_token_id in row else len(row)
        tokens += min(end + 1, len(row))
        texts.append(tokenizer.decode(row[:end], skip_special_tokens=True, clean_up_tokenization_spaces=True).strip())
    return texts, tokens


def generate(
    model: torch.nn.Module,
    tokenizer: Any,
    plan: Sequence[Labels],
    label_space: Sequence[str],
    *,
    seq_len: int,
    steps: int,
    temperature: float,
    batch_size: int,
    seed: int,
    end_mark: bool = False,
) -> tuple[list[str], dict[str, Any]]:
    """One text per label set of `plan`, in batches; returns the texts and `output_stats`."""
    model.eval()
    generator = torch.Generator().manual_seed(seed)  # decoding: not a privacy mechanism
    codes = label_codes(plan, label_space)
    texts: list[str] = []
    tokens = 0
    start = time.perf_counter()
    for i in range(0, len(plan), batch_size):
        ids = unmask(
            model,
            tokenizer,
            codes[i : i + batch_size],
            seq_len=seq_len,
            steps=steps,
            temperature=temperature,
            generator=generator,
            end_mark=end_mark,
        )
        batch_texts, batch_tokens = decode(tokenizer, ids)
        texts.extend(batch_texts)
        tokens += batch_tokens
    return texts, output_stats(texts, steps, tokens, time.perf_counter() - start)
