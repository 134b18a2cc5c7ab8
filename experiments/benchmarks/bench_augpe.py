"""AUG-PE cost per iteration on CPU: the private vote (nearest neighbour, noise, selection) and the LM's variations.

The vote is numpy (no GPU path): exact L2 nearest neighbour in blocks of
private rows. Measured at the demo's size (600 private documents, 90
candidates) and at a paper-like size (5,000 private, 10,000 candidates, 384
dims = MiniLM). The LM figure is VARIATION_API throughput with the demo model
(SmolLM2-135M, 48 new tokens) at batch 32 against batch 1 on a few prompts.
Run: `make bench BENCH=augpe`.
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from synbench.generators.augpe import evolution


def vote_seconds(n_private: int, n_candidates: int, dim: int = 384, classes: int = 3) -> float:
    rng = np.random.default_rng(0)
    private = rng.normal(size=(n_private, dim)).astype(np.float32)
    candidates = rng.normal(size=(n_candidates, dim)).astype(np.float32)
    private_class, cand_class = rng.integers(0, classes, n_private), rng.integers(0, classes, n_candidates)
    start = time.perf_counter()
    counts = evolution.vote_histogram(private, private_class, candidates, cand_class)
    noisy = evolution.noisy_histogram(counts, 3.0, rng, 0.0)
    evolution.select(noisy, cand_class, [n_candidates // (7 * classes)] * classes, "rank", rng)
    return time.perf_counter() - start


def variation_throughput(batch_size: int, n: int) -> float:
    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    from synbench.base import ChatRequest
    from synbench.lm.backends import LocalBackend
    from synbench.lm.prompts import load_prompts

    with initialize_config_module(config_module="synbench.conf", version_base="1.3"):
        cfg = compose(config_name="config")
    backend = LocalBackend(OmegaConf.to_container(cfg.model, resolve=True), batch_size=batch_size, num_threads=1)
    backend.loaded()
    prompts = load_prompts("drugreview")
    parent = "I took this for my back pain and it helped a lot within a week, but I felt dizzy in the mornings."
    requests = [ChatRequest(*prompts.render("rephrase", ("positive",), text=parent, words=20)) for _ in range(n)]
    start = time.perf_counter()
    backend.complete(requests, max_new_tokens=48, temperature=1.0, top_p=0.95, seed=0)
    return n / (time.perf_counter() - start)


def main() -> dict[str, Any]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    figures: dict[str, Any] = {"cpu_count": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2)}
    figures["vote_s_demo_600x90"] = round(vote_seconds(600, 90), 4)
    figures["vote_s_5000x10000"] = round(vote_seconds(5000, 10000), 3)
    figures["variations_per_s_batch32"] = round(variation_throughput(32, 32), 3)
    figures["variations_per_s_batch1"] = round(variation_throughput(1, 4), 3)
    figures["batch_speedup"] = round(figures["variations_per_s_batch32"] / figures["variations_per_s_batch1"], 2)
    return figures


if __name__ == "__main__":
    print(main())
