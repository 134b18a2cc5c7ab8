"""`length`: how far the synthetic document-length distribution is from the real one.

Definition (`fidelity.length_div`): each document's length is its number of
tokens, spaCy tokenizer tokens without whitespace-only tokens (or whitespace-
separated words with `tokenizer: whitespace`); an empty text has length 0.
Bins are cut at the real side's quantiles at 0, 1/B, ..., 1 (B = `n_bins`,
duplicate edges merged, so ties on integer lengths give fewer bins): intervals
[e_i, e_i+1) between them, plus (-inf, e_0) and [e_B, +inf) at the ends. Each
inner bin holds about the same share of real documents, and a synthetic length
outside the real range falls in an end bin that holds no (below) or almost no
(above: only the longest real documents) real mass, so it counts as different
rather than merging into the outermost quantile. The divergence is the
add-alpha smoothed Jensen–Shannon divergence in bits (`common.js_divergence`)
between the two bin-count vectors: 0 for identical length distributions, at most 1. The real
side is eval half B for both `length_div` (against the synthetic sample) and
`length_div_ref` (against half A), so both use the same bins
(`common.FidelityMetric`).

`fidelity.length_div_paper` compares the same bin counts on the SynBench
paper's scale (Table 2: real-vs-real "below 0.012"): KL(real || synthetic)
in nats of the smoothed bin distributions (`common.kl_divergence`; the
authors' definition is unpublished, the docstring there gives the reasoning).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from synbench.core.base import MetricContext
from synbench.core.errors import ConfigError
from synbench.metrics.common import TextFidelityMetric, js_divergence, kl_divergence, per_text, smoothing
from synbench.text.nlp import tokenize

TOKENIZERS = ("spacy", "whitespace")


def quantile_bin_counts(real: np.ndarray, synthetic: np.ndarray, n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Counts of both samples in bins cut at the quantiles 0, 1/n_bins, ..., 1 of `real` (with open end bins)."""
    edges = np.unique(np.quantile(real, np.linspace(0, 1, n_bins + 1))) if len(real) else np.array([])
    size = len(edges) + 1

    def counts(x: np.ndarray) -> np.ndarray:
        return np.bincount(np.searchsorted(edges, x, side="right"), minlength=size)

    return counts(real), counts(synthetic)


class LengthMetric(TextFidelityMetric):
    higher_is_better = {"length_div": False, "length_div_paper": False}

    def __init__(
        self, tokenizer: str = "spacy", spacy_model: str = "en_core_web_sm", n_bins: int = 20, alpha: float = 0.5
    ) -> None:
        if tokenizer not in TOKENIZERS:
            raise ConfigError(
                f"metrics.length.tokenizer={tokenizer!r} is unknown; choose one of {', '.join(TOKENIZERS)}"
            )
        if int(n_bins) < 1:
            raise ConfigError(f"metrics.length.n_bins={n_bins!r} must be at least 1")
        self.tokenizer = tokenizer
        self.spacy_model = spacy_model
        self.n_bins = int(n_bins)
        self.alpha = smoothing(alpha)

    def _lengths(self, texts: list[str]) -> list[int]:
        if self.tokenizer == "whitespace":
            return [len(t.split()) for t in texts]
        return [sum(1 for tok in doc if tok.strip()) for doc in tokenize(texts, self.spacy_model)]

    def features(self, texts: Sequence[str], ctx: MetricContext) -> np.ndarray:
        namespace = f"length:{self.tokenizer}:{self.spacy_model}"
        return np.asarray(per_text(ctx, namespace, texts, self._lengths), dtype=float)

    def compare(self, real: np.ndarray, synthetic: np.ndarray, ctx: MetricContext) -> dict[str, float]:
        counts = quantile_bin_counts(real, synthetic, self.n_bins)
        return {
            "length_div": js_divergence(*counts, self.alpha),
            "length_div_paper": kl_divergence(*counts, self.alpha),
        }

    def describe(self, real: np.ndarray, synthetic: np.ndarray) -> dict[str, float]:
        return {
            "length_mean_real": float(real.mean()) if len(real) else 0.0,
            "length_mean_syn": float(synthetic.mean()) if len(synthetic) else 0.0,
        }
