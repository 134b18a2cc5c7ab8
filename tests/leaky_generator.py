"""Generators that lie: they claim the job's eps but release about half their private documents.

`LeakyGenerator` releases them lightly perturbed; `VerbatimCopier` releases them
verbatim with correct plumbing (secret noise, label_counts, declared details).

Test and benchmark helpers only (the audit and the conformance kit must catch
them; they are never shipped in `synbench/`).
In `LeakyGenerator` each private document is, independently with probability
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
from synbench.core.base import FitReport, Generator
from synbench.core.corpus import Corpus, Labels
from synbench.core.errors import SynBenchError
from synbench.core.privacy import PrivacySpec


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
        return Corpus.build(
            [texts[i] for i in order],
            [labels[i] for i in order],
            corpus.label_space,
            ids=[f"leak-{i}" for i in range(n)],
            multi_label=corpus.multi_label,
            name="leaky-synthetic",
        )


class VerbatimCopier(Generator):
    """Releases half of its private documents verbatim, with every piece of plumbing the kit used to check right.

    It claims the budget, draws which documents to release from the secret
    noise source (`privacy.noise`, so secret noise changes its output and a
    replication noise seed reproduces it), follows `label_counts` exactly,
    declares its details and puts no private text in its fit report. Only its
    `sample()` output gives it away: about half of it is private documents.
    """

    public_details = frozenset({"released_share"})

    def __init__(self) -> None:
        self._state: tuple[Corpus, list[int], np.random.Generator] | None = None

    def fit(self, corpus: Corpus, privacy: PrivacySpec, seed: int) -> FitReport:
        kept = np.flatnonzero(privacy.noise.numpy("verbatim_copier").random(len(corpus)) < 0.5).tolist()
        self._state = (corpus, kept, np.random.default_rng(seed))
        return FitReport(epsilon_spent=privacy.epsilon, delta=privacy.delta, details={"released_share": 0.5})

    def sample(self, n: int, label_counts: Mapping[Labels, int] | None = None) -> Corpus:
        if self._state is None:
            raise SynBenchError("sample() called before fit()")
        corpus, kept, rng = self._state
        words = np.asarray(public_words())
        if label_counts is None:  # the kept documents with their own labels, then public filler
            texts = [corpus.texts[i] for i in kept][:n]
            labels = [corpus.labels[i] for i in kept][:n]
            wanted = {(corpus.label_space[0],): n - len(texts)}
        else:
            texts, labels, wanted = [], [], dict(label_counts)
        for labelset, k in wanted.items():
            own = [corpus.texts[i] for i in kept if set(corpus.labels[i]) == set(labelset)][:k] if label_counts else []
            texts += own + [" ".join(rng.choice(words, size=12)) for _ in range(k - len(own))]
            labels += [labelset] * k
        return Corpus.build(texts, labels, corpus.label_space, multi_label=corpus.multi_label, name="verbatim-copier")
