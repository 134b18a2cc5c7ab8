"""Contamination detectors: infini-gram index build time per million tokens, exact-match and Min-K% throughput.

- Index: the embedded default corpus (CPython's pydoc topics) repeated to
  about one million SmolLM2 tokens, built from scratch in a temporary folder;
  tokenization and the suffix array are timed apart.
- Exact exposure: private drug reviews queried against that index (docs/s).
- Min-K% / Min-K%++: 64 drug reviews scored under SmolLM2-135M (both scores
  from one pass), batch 8 against batch 1 (docs/s), one torch thread.
Run: `make bench BENCH=contamination`.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

from synbench.contamination import exact, index, mink, texts
from synbench.contamination.config import ExactOptions, MinKOptions
from synbench.core import registry
from synbench.core.base import DatasetLoader
from synbench.lm.backends import load_shared
from synbench.lm.generation import torch_threads

TARGET_TOKENS = 1_000_000
N_MINK = 64


def main() -> dict[str, Any]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with initialize_config_module(config_module="synbench.conf", version_base="1.3"):
        cfg = compose(config_name="config")
    model, dataset = (OmegaConf.to_container(cfg[k], resolve=True) for k in ("model", "dataset"))
    loaded = load_shared(json.dumps(model, sort_keys=True), "cpu")
    tok = loaded.tokenizer
    reviews = list(registry.create(DatasetLoader, dataset).load(0).train.texts)  # type: ignore[arg-type]

    docs = texts.python_docs()
    per_copy = sum(len(ids) for ids in tok(docs, add_special_tokens=False)["input_ids"])
    copies = max(1, round(TARGET_TOKENS / per_copy))
    corpus = [f"{d} ({c})" for c in range(copies) for d in docs]  # copies differ by a suffix
    figures: dict[str, Any] = {"cpu_count": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2)}
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        index._tokenize(Path(folder), corpus, tok, index.token_dtype_for(len(tok)))
        tokenize_s = time.perf_counter() - start
        start = time.perf_counter()
        info = index.build_index(Path(folder), corpus, tok)
        sa_s = time.perf_counter() - start
        million = info.n_tokens / 1e6
        figures |= {
            "index_tokens": info.n_tokens,
            "index_tokenize_s_per_million": round(tokenize_s / million, 2),
            "index_suffix_array_s_per_million": round(sa_s / million, 2),
            "index_build_s_per_million": round((tokenize_s + sa_s) / million, 2),
        }
        engine = exact.open_engine(info, int(tok.eos_token_id))
        ids = tok(reviews, add_special_tokens=False)["input_ids"]
        start = time.perf_counter()
        exact.exact_scores(engine, ids, ExactOptions())
        figures["exact_docs_per_s"] = round(len(ids) / (time.perf_counter() - start), 1)

    sample, mc = reviews[:N_MINK], MinKOptions()  # the task's defaults
    with torch_threads(1):
        for batch in (1, 8):
            start = time.perf_counter()
            mink.score_texts(
                loaded.model,
                tok,
                sample,
                k=mc.k,
                count=mc.count,
                batch_size=batch,
                max_length=mc.max_length,
                desc="bench",
            )
            figures[f"mink_docs_per_s_batch{batch}"] = round(len(sample) / (time.perf_counter() - start), 2)
    figures["mink_batch8_speedup"] = round(figures["mink_docs_per_s_batch8"] / figures["mink_docs_per_s_batch1"], 2)
    return figures


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
