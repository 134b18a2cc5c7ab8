"""A generator that lies, for calibrating the audit: it claims eps = 1 but releases paraphrases of its private
documents.

Benchmark helper only (never shipped in `synbench/`, never imported by
tests). Each private document is released, independently with probability
`leak_share`, with a `swap_share` of its words (at random positions)
replaced by random words of the public vocabulary; the rest of the requested
corpus is documents of random public words, so the output size never
depends on the private data. `leak_share=0` never looks at the private
documents at all: the null, whose audit must prove nothing. The fit report
claims the job's eps, which is false for any `leak_share > 0`.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from synbench.audit.canaries import public_words
from synbench.core.base import FitReport, Generator
from synbench.core.corpus import Corpus, Labels
from synbench.core.privacy import PrivacySpec

FILLER_WORDS = 20


def paraphrase(text: str, swap_share: float, rng: np.random.Generator, words: tuple[str, ...]) -> str:
    """`text` with round(swap_share x its length) words, at random positions, replaced by random public words."""
    tokens = text.split()
    for i in rng.permutation(len(tokens))[: round(swap_share * len(tokens))]:
        tokens[i] = words[int(rng.integers(len(words)))]
    return " ".join(tokens)


class ParaphraseLeakGenerator(Generator):
    public_details = frozenset()

    def __init__(self, leak_share: float, swap_share: float) -> None:
        self.leak_share, self.swap_share = leak_share, swap_share
        self._corpus: Corpus | None = None
        self._rng = np.random.default_rng(0)

    def fit(self, corpus: Corpus, privacy: PrivacySpec, seed: int) -> FitReport:
        self._corpus, self._rng = corpus, np.random.default_rng(seed)
        return FitReport(
            epsilon_spent=privacy.epsilon, delta=privacy.delta, details={}
        )  # the lie (unless leak_share = 0)

    def sample(self, n: int, label_counts: Mapping[Labels, int] | None = None) -> Corpus:
        corpus, rng, words = self._corpus, self._rng, public_words()
        assert corpus is not None
        kept = (
            np.flatnonzero(rng.random(len(corpus)) < self.leak_share)[:n] if self.leak_share > 0 else np.zeros(0, int)
        )
        texts = [paraphrase(corpus.texts[i], self.swap_share, rng, words) for i in kept]
        labels = [corpus.labels[i] for i in kept]
        for _ in range(n - len(kept)):
            texts.append(" ".join(words[int(i)] for i in rng.integers(0, len(words), FILLER_WORDS)))
            labels.append((corpus.label_space[int(rng.integers(len(corpus.label_space)))],))
        order = rng.permutation(n)
        return Corpus.build(
            [texts[i] for i in order],
            [labels[i] for i in order],
            corpus.label_space,
            ids=[f"calibration-{i}" for i in range(n)],
            multi_label=corpus.multi_label,
            name="calibration",
        )
