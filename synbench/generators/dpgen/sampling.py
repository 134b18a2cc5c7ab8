"""Label-conditioned sampling: batched generation with a KV cache from the label sets of a plan.

Which label sets to write is the shared DP plan (`synbench.dp.label_sets.plan`).

Generation is Hugging Face `generate` on left-padded batches of control-code
prompts (prompts are sorted by label set, so most batches need no padding at
all). Nothing is filtered: an empty output stays in the corpus and is counted,
because a generator that silently drops failures would look better than it is.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Sequence

import torch
from tqdm.auto import tqdm

from synbench.corpus import Labels
from synbench.errors import ConfigError
from synbench.generators.dpgen.data import control_code


@dataclass(frozen=True)
class SampleStats:
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


def generated_lengths(new: torch.Tensor, eos_id: int) -> torch.Tensor:
    """Tokens each row generated, counting its first EOS (padding after it is not generation)."""
    is_eos = new == eos_id
    first = torch.where(is_eos.any(dim=1), is_eos.float().argmax(dim=1) + 1, torch.full_like(new[:, 0], new.shape[1]))
    return first


@torch.inference_mode()
def generate(model: Any, tokenizer: Any, plan: Sequence[Labels], *, batch_size: int, max_new_tokens: int,
             temperature: float, top_p: float, seed: int) -> tuple[list[str], SampleStats]:
    """One text per entry of `plan`, written from its control code, in `batch_size` batches."""
    if batch_size < 1 or max_new_tokens < 1:
        raise ConfigError("generator.sample_batch_size and generator.max_new_tokens must be at least 1")
    torch.manual_seed(seed)
    model.eval()
    device = next(model.parameters()).device
    texts: list[str] = []
    new_tokens = 0
    start = time.perf_counter()
    for i in tqdm(range(0, len(plan), batch_size), desc="dpgen sample", unit="batch"):
        prompts = [control_code(labels) for labels in plan[i:i + batch_size]]
        enc = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(device)
        out = model.generate(**enc, do_sample=True, temperature=temperature, top_p=top_p, max_new_tokens=max_new_tokens,
                             eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, use_cache=True)
        new = out[:, enc["input_ids"].shape[1]:]
        new_tokens += int(generated_lengths(new, tokenizer.eos_token_id).sum())
        texts.extend(t.strip() for t in tokenizer.batch_decode(new, skip_special_tokens=True))
    stats = SampleStats(len(texts), sum(1 for t in texts if not t), new_tokens, time.perf_counter() - start)
    return texts, stats
