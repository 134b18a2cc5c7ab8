"""The `copy` control generator: releases its private training set unchanged.

Not private at all (epsilon_spent = inf). It is one of the core's built-in
controls (`synbench.job.release.CONTROLS`), so it runs at any nominal eps of a
sweep and its results say `"non_private_control": true` and `"noise": "n/a"`.
It is the benchmark's calibration point: the utility upper bound of
"synthetic" data, and the case in which a membership attack must find
(nearly) every member, at every nominal eps.
"""

from __future__ import annotations

import math
from typing import Mapping

import numpy as np

from synbench.core.base import FitReport, Generator
from synbench.core.corpus import Corpus, Labels
from synbench.core.errors import ConfigError
from synbench.core.privacy import PrivacySpec


class CopyGenerator(Generator):
    public_details = frozenset({"control"})

    def __init__(self) -> None:
        self._corpus: Corpus | None = None
        self._rng = np.random.default_rng(0)

    def fit(self, corpus: Corpus, privacy: PrivacySpec, seed: int) -> FitReport:
        self._corpus = corpus
        self._rng = np.random.default_rng(seed)
        return FitReport(epsilon_spent=math.inf, delta=0.0, details={"control": "copy"})

    def sample(self, n: int, label_counts: Mapping[Labels, int] | None = None) -> Corpus:
        """The private documents themselves: each one floor(n/N) or ceil(n/N) times (all of them, in order,
        when n = N)."""
        if self._corpus is None:
            raise ConfigError("generator 'copy': sample() called before fit()")
        corpus = self._corpus
        if label_counts is not None:
            idx = np.concatenate(
                [
                    self._draw(np.flatnonzero([ls == labels for ls in corpus.labels]), k)
                    for labels, k in label_counts.items()
                ]
            ).astype(int)
        elif n == len(corpus):
            idx = np.arange(n)
        else:
            idx = self._draw(np.arange(len(corpus)), n)
        return Corpus.build(
            [corpus.texts[i] for i in idx],
            [corpus.labels[i] for i in idx],
            corpus.label_space,
            ids=[f"copy-{i}" for i in range(len(idx))],
            multi_label=corpus.multi_label,
            name="copy-synthetic",
        )

    def _draw(self, pool: np.ndarray, k: int) -> np.ndarray:
        """k items of `pool`, each taken floor(k/|pool|) or ceil(k/|pool|) times, in random order."""
        if k and len(pool) == 0:
            raise ConfigError("generator 'copy' was asked for a label set that the private corpus does not contain")
        if k == 0:
            return np.zeros(0, dtype=int)
        whole, rest = divmod(k, len(pool))
        parts = [self._rng.permutation(pool) for _ in range(whole)] + [self._rng.choice(pool, size=rest, replace=False)]
        return self._rng.permutation(np.concatenate(parts))
