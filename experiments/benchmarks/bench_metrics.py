"""Metric wall time per 1k documents on the embedded default (drugreview, 600 train / 379 eval).

The synthetic corpus is the private training split (the `copy` control), so
the figures are for 979 real-looking documents per job: 379 real eval plus
600 synthetic. Each metric runs twice in one job context: `cold` includes the
encoder and NER passes it triggers, `warm` is the metric with every corpus
already embedded and parsed (what a second metric on the same corpus pays).
The encoder's own throughput is measured apart. Run: `make bench BENCH=metrics`.
"""

from __future__ import annotations

import os
import time
from typing import Any

from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

from synbench.core import registry
from synbench.core.base import DatasetLoader, EncoderSpec, Metric, MetricContext
from synbench.text.embeddings import EmbeddingCache, load_encoder
from synbench.text.nlp import load_spacy

METRICS = ["utility", "mauve", "entities", "length"]


def per_1k(seconds: float, n_docs: int) -> float:
    return round(seconds * 1000 / n_docs, 3)


def main() -> dict[str, Any]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with initialize_config_module(config_module="synbench.conf", version_base="1.3"):
        cfg = compose(config_name="config", overrides=[f"metrics=[{','.join(METRICS)}]"])
    container: dict[str, Any] = OmegaConf.to_container(cfg, resolve=True)  # type: ignore[assignment]
    splits = registry.create(DatasetLoader, container["dataset"]).load(0)
    real, synthetic = splits.eval, splits.train
    n_docs = len(real) + len(synthetic)
    encoder = EncoderSpec(**container["encoder"])
    load_encoder(encoder), load_spacy("en_core_web_sm")  # model loading is start-up, not per-document cost

    start = time.perf_counter()
    EmbeddingCache(encoder).embed(list(real.texts) + list(synthetic.texts))
    embed_s = time.perf_counter() - start

    ctx = MetricContext(seed=0, job_dir=".", train=splits.train, encoder=encoder, cache_dir=None)
    figures: dict[str, Any] = {
        "n_real": len(real),
        "n_synthetic": len(synthetic),
        "cpu_count": os.cpu_count(),
        "load_avg_1m": round(os.getloadavg()[0], 2),
        "encoder": encoder.name,
        "embed_s_per_1k": per_1k(embed_s, n_docs),
    }
    for rnd in ("cold", "warm"):
        for name in METRICS:
            metric = registry.create(Metric, container["metrics"][name])
            start = time.perf_counter()
            values = metric(real, synthetic, ctx)
            seconds = time.perf_counter() - start
            figures[f"{name}_{rnd}_s"] = round(seconds, 3)
            figures[f"{name}_{rnd}_s_per_1k"] = per_1k(seconds, n_docs)
            if rnd == "warm":
                figures.update({f"{name}.{k}": round(float(v), 4) for k, v in values.items()})
    figures["all_cold_s"] = round(sum(figures[f"{m}_cold_s"] for m in METRICS), 3)
    return figures


if __name__ == "__main__":
    print(main())
