"""`labels`: does a (multi-label) synthetic corpus carry label sets like the real one?

A generator that conditions each document on one label writes a corpus in
which no document has two labels, however good its text; a classifier trained
on it never sees a label combination. This metric makes that visible.

- `label_cardinality_div`: the smoothed Jensen–Shannon divergence in bits
  (`common.counter_js`) between the distributions of labels per document
  (distinct labels; 0 = same, 1 = disjoint), real eval half B against the
  synthetic sample; `label_cardinality_div_ref` is half B against half A
  (`common.FidelityMetric`).
- `label_set_div`: the same divergence between the distributions of whole
  label sets (sorted, distinct labels), with its `_ref`.
- `label_multi_share_real` / `label_multi_share_syn`: the share of documents
  with more than one label (the whole eval split / the synthetic sample), and
  `label_cardinality_mean_real` / `_syn`.

It reads the labels of the eval split and of the synthetic corpus only, never
the private split; on a single-label task every value is trivial (all
cardinalities 1) and `label_set_div` compares label frequencies.
"""

from __future__ import annotations

from collections import Counter
from typing import Sequence

import numpy as np

from synbench.core.base import MetricContext
from synbench.core.corpus import Corpus, Labels
from synbench.metrics.common import FidelityMetric, counter_js, smoothing


class LabelsMetric(FidelityMetric):
    higher_is_better = {"label_cardinality_div": False, "label_set_div": False}

    def __init__(self, alpha: float = 0.5) -> None:
        self.alpha = smoothing(alpha)

    def corpus_features(self, corpus: Corpus, ctx: MetricContext) -> list[Labels]:
        return [tuple(sorted(set(labels))) for labels in corpus.labels]

    def compare(self, real: Sequence[Labels], synthetic: Sequence[Labels], ctx: MetricContext) -> dict[str, float]:
        return {
            "label_cardinality_div": counter_js(Counter(map(len, real)), Counter(map(len, synthetic)), self.alpha),
            "label_set_div": counter_js(Counter(real), Counter(synthetic), self.alpha),
        }

    def describe(self, real: Sequence[Labels], synthetic: Sequence[Labels]) -> dict[str, float]:
        def stats(sets: Sequence[Labels], side: str) -> dict[str, float]:
            sizes = np.array([len(s) for s in sets], dtype=float)
            return {
                f"label_multi_share_{side}": float((sizes > 1).mean()) if len(sizes) else 0.0,
                f"label_cardinality_mean_{side}": float(sizes.mean()) if len(sizes) else 0.0,
            }

        return {**stats(real, "real"), **stats(synthetic, "syn")}
