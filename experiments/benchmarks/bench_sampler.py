"""The draw of a sampled `generate`: `synbench.lm.generation.Sampler` against transformers' own sampling.

The demo grid's DP-Gen sampling on this machine: SmolLM2-135M in bf16 (the
grid's `sample_dtype`), 116 control-code prompts of one batch, 48 new tokens,
temperature 0.9, top_k 50 (transformers' default, the grid's), one torch
thread, every row the whole 48 tokens. `sampler_s`: transformers' greedy
loop over the Sampler's scores, as `synbench.lm.generation.generate` runs it;
`transformers_s`: its sampled loop (its warpers, then `torch.multinomial` over
the vocabulary), the loop SynBench used before. Each is timed REPEATS times, alternating; the
least disturbed (smallest) time of each is kept. Both draw from the same
distribution (tests/test_sampler.py), so the outputs differ only by the
random stream. Run: `make bench BENCH=sampler`.
"""

from __future__ import annotations

import os
import time
from typing import Any

import torch
from omegaconf import OmegaConf
from transformers import LogitsProcessorList

from synbench.generators.dpgen.data import control_code
from synbench.lm.generation import Sampler
from synbench.lm.models import load_causal_lm
from synbench.lm.settings import TRANSFORMERS_TOP_K

N, NEW_TOKENS, TEMPERATURE, TOP_K, REPEATS = 116, 48, 0.9, TRANSFORMERS_TOP_K, 3


def generate_seconds(model: Any, tokenizer: Any, prompts: list[str], ours: bool) -> float:
    """One batch through `model.generate`, every row the whole length: transformers' sampled loop (its warpers,
    then `torch.multinomial`), or the greedy loop over the Sampler's scores as `synbench.lm.generation.generate`
    runs it."""
    enc = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
    draw: dict[str, Any] = (
        {"do_sample": False, "logits_processor": LogitsProcessorList([Sampler(TEMPERATURE, TOP_K, 1.0)])}
        if ours
        else {"do_sample": True, "temperature": TEMPERATURE, "top_k": TOP_K, "top_p": 1.0}
    )
    torch.manual_seed(0)
    start = time.perf_counter()
    with torch.inference_mode():
        model.generate(
            **enc,
            **draw,
            max_new_tokens=NEW_TOKENS,
            min_new_tokens=NEW_TOKENS,
            pad_token_id=tokenizer.pad_token_id,
            use_cache=True,
        )
    return time.perf_counter() - start


def main() -> dict[str, Any]:
    torch.set_num_threads(1)
    conf = os.path.join(os.path.dirname(__file__), "..", "..", "conf")
    node = OmegaConf.to_container(OmegaConf.load(os.path.join(conf, "model", "smollm2_135m.yaml")))
    loaded = load_causal_lm({**node, "dtype": "bfloat16"})  # type: ignore[dict-item]
    model, tokenizer = loaded.model, loaded.tokenizer
    prompts = [control_code(("depression",))] * (N // 2) + [control_code(("pain",))] * (N - N // 2)
    ours, theirs = [], []
    load = os.getloadavg()[0]
    for _ in range(REPEATS):
        theirs.append(generate_seconds(model, tokenizer, prompts, ours=False))
        ours.append(generate_seconds(model, tokenizer, prompts, ours=True))
    return {
        "setting": {
            "model": node["name"],
            "dtype": "bfloat16",
            "prompts": N,
            "new_tokens": NEW_TOKENS,
            "temperature": TEMPERATURE,
            "top_k": TOP_K,
            "torch_threads": 1,
            "repeats": REPEATS,
        },
        "load_average_at_start": load,
        "transformers_s": round(min(theirs), 2),
        "sampler_s": round(min(ours), 2),
        "sampler_speedup": round(min(theirs) / min(ours), 2),
        "load_average_at_end": os.getloadavg()[0],
    }


if __name__ == "__main__":
    print(main())
