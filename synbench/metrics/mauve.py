"""`mauve`: MAUVE (Pillutla et al. 2021) between real and synthetic text, on sentence-encoder features.

Features come from the job's encoder through the shared `EmbeddingCache`
(one encoder pass per corpus per job, reused by the audit) and go to
`mauve.compute_mauve` as `p_features`/`q_features`, so mauve-text never
downloads GPT-2. MAUVE quantises the pooled features with k-means, so one
value depends on the k-means seed: `fidelity.mauve` is the mean over
`kmeans_seeds` seeds and `fidelity.mauve_std` their (population) standard
deviation. The score compares eval half B with an equally large synthetic
sample, `mauve_ref` half B with half A (`common.FidelityMetric`), so
`num_buckets: auto` (mauve-text's rule, a tenth of the smaller side) gives
both the same number of k-means buckets.

Empty synthetic texts are kept as samples (embedded as the empty string), not
dropped as mauve-text does with raw text: a generator that collapses to empty
output must score low, and `mauve_n_empty` counts them. A side with no
documents at all scores 0.

MAUVE's k-means is faiss, which says two things that mean nothing to the
reader of a job: at import, on its `faiss.loader` logger at INFO, which CPU
builds it could not load; at each clustering, on C stderr, that a bucket
gets fewer points than faiss's minimum of 39 (the `auto` rule, a tenth of the
smaller side, leaves 20 a bucket where the sides are equal). The first is
kept below WARNING, the second dropped from what the MAUVE call writes to
stderr (every other line it writes is passed on).
"""

from __future__ import annotations

import logging
import os
import re
import sys
import tempfile
from contextlib import contextmanager
from typing import Iterator, Sequence

import numpy as np

from synbench.core.base import MetricContext
from synbench.core.corpus import Corpus
from synbench.core.errors import ConfigError
from synbench.metrics.common import TextFidelityMetric, embedding_cache

# faiss's warning for a k-means bucket below its minimum of training points, written with C's fprintf
FAISS_FEW_POINTS = re.compile(rb"^WARNING clustering \d+ points to \d+ centroids: please provide at least \d+ ")


@contextmanager
def stderr_without(noise: re.Pattern[bytes]) -> Iterator[None]:
    """Run the block with file descriptor 2 captured, then write back every line of it that `noise` does not match.

    C code writes past `sys.stderr`, logging and warning filters, so only the
    descriptor catches it; anything else the block writes to stderr, a real
    error included, still reaches it (after the block).
    """
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            kept = b"".join(line for line in captured if not noise.match(line))
            if kept:
                with os.fdopen(os.dup(2), "wb") as stderr:
                    stderr.write(kept)


class MauveMetric(TextFidelityMetric):
    higher_is_better = {"mauve": True}

    def __init__(
        self,
        num_buckets: int | str = "auto",
        scaling_factor: float = 5.0,
        kmeans_seeds: int = 5,
        kmeans_explained_var: float = 0.9,
        kmeans_num_redo: int = 5,
        kmeans_max_iter: int = 500,
    ) -> None:
        if num_buckets != "auto" and not (isinstance(num_buckets, int) and num_buckets >= 2):
            raise ConfigError(f"metrics.mauve.num_buckets={num_buckets!r}: use 'auto' or an integer of at least 2")
        if int(kmeans_seeds) < 1:
            raise ConfigError(f"metrics.mauve.kmeans_seeds={kmeans_seeds!r} must be at least 1")
        self.num_buckets = num_buckets
        self.scaling_factor = float(scaling_factor)
        self.kmeans_seeds = int(kmeans_seeds)
        self.kmeans_explained_var = float(kmeans_explained_var)
        self.kmeans_num_redo = int(kmeans_num_redo)
        self.kmeans_max_iter = int(kmeans_max_iter)

    def features(self, texts: Sequence[str], ctx: MetricContext) -> np.ndarray:
        return embedding_cache(ctx).embed(list(texts))

    def compare(self, real: np.ndarray, synthetic: np.ndarray, ctx: MetricContext) -> dict[str, float]:
        if len(real) == 0 or len(synthetic) == 0:
            return {"mauve": 0.0, "mauve_std": 0.0}
        logging.getLogger("faiss.loader").setLevel(logging.WARNING)  # before mauve imports faiss
        from mauve import compute_mauve

        buckets = self.num_buckets
        if buckets != "auto":
            buckets = min(int(buckets), len(real) + len(synthetic))  # k-means needs at least k points
        # Below 2**30: mauve adds small offsets to the seed and faiss takes a C int.
        seeds = np.random.default_rng(ctx.seed).integers(0, 2**30, size=self.kmeans_seeds)
        with stderr_without(FAISS_FEW_POINTS):
            scores = [
                compute_mauve(
                    p_features=real,
                    q_features=synthetic,
                    num_buckets=buckets,
                    mauve_scaling_factor=self.scaling_factor,
                    kmeans_explained_var=self.kmeans_explained_var,
                    kmeans_num_redo=self.kmeans_num_redo,
                    kmeans_max_iter=self.kmeans_max_iter,
                    seed=int(seed),
                    verbose=False,
                ).mauve
                for seed in seeds
            ]
        return {"mauve": float(np.mean(scores)), "mauve_std": float(np.std(scores))}

    def __call__(self, real: Corpus, synthetic: Corpus, ctx: MetricContext) -> dict[str, float]:
        return {
            **super().__call__(real, synthetic, ctx),
            "mauve_n_empty": sum(1 for t in synthetic.texts if not t.strip()),
        }
