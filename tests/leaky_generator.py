"""A generator that lies: it claims eps = 1 but releases about half its private documents, lightly perturbed.

Test and benchmark helper only (the audit must catch it; it is never shipped
in `synbench/`). Each private document is, independently with probability
1/2, released with one word dropped and two adjacent words swapped; the rest
of the requested corpus is filled with documents of random words from the
public vocabulary, so the output size never depends on the private data.
The fit report claims `epsilon_spent = eps` of the job, which is false: a
document's presence changes the output with probability 1/2, which no
finite eps allows.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from synbench.audit.canaries import public_words
from synbench.base import FitReport, Generator
from synbench.corpus import Corpus, Labels
from synbench.privacy import PrivacySpec


def perturb(text: str, rng: np.random.Generator) -> str:
    """Drop one word and swap one adjacent pair (texts of fewer than 4 words are kept as they are)."""
    words = text.split()
    if len(words) < 4:
        return text
    del words[int(rng.integers(len(words)))]
    i = int(rng.integers(len(words) - 1))
    words[i], words[i + 1] = words[i + 1], words[i]
    return " ".join(words)


class LeakyGenerator(Generator):
    public_details = frozenset()

    def __init__(self, release_probability: float = 0.5) -> None:
        self.release_probability = release_probability
        self._corpus: Corpus | None = None
        self._rng = np.random.default_rng(0)

    def fit(self, corpus: Corpus, privacy: PrivacySpec, seed: int) -> FitReport:
        self._corpus, self._rng = corpus, np.random.default_rng(seed)
        return FitReport(epsilon_spent=privacy.epsilon, delta=privacy.delta, details={})  # the lie

    def sample(self, n: int, label_counts: Mapping[Labels, int] | None = None) -> Corpus:
        corpus, rng, words = self._corpus, self._rng, public_words()
        assert corpus is not None
        kept = np.flatnonzero(rng.random(len(corpus)) < self.release_probability)[:n]
        texts = [perturb(corpus.texts[i], rng) for i in kept]
        labels = [corpus.labels[i] for i in kept]
        for _ in range(n - len(kept)):
            texts.append(" ".join(words[int(i)] for i in rng.integers(0, len(words), 20)))
            labels.append((corpus.label_space[int(rng.integers(len(corpus.label_space)))],))
        order = rng.permutation(n)
        return Corpus.build([texts[i] for i in order], [labels[i] for i in order], corpus.label_space,
                            ids=[f"leak-{i}" for i in range(n)], multi_label=corpus.multi_label, name="leaky-synthetic")
