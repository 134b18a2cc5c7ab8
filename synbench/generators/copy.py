"""The `copy` control generator: releases its private training set unchanged.

Not private at all (epsilon_spent = inf). It is the benchmark's calibration
point: the utility upper bound of "synthetic" data, and the case in which a
membership attack must find (nearly) every member.
"""
from __future__ import annotations

import math
from typing import Mapping

import numpy as np

from synbench.base import FitReport, Generator
from synbench.corpus import Corpus, Labels
from synbench.errors import ConfigError
from synbench.privacy import PrivacySpec


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
        """The private documents themselves: all of them in order when n equals the set size, else a seeded draw."""
        if self._corpus is None:
            raise ConfigError("generator 'copy': sample() called before fit()")
        corpus = self._corpus
        if label_counts is not None:
            idx = np.concatenate([
                self._draw(np.flatnonzero([ls == labels for ls in corpus.labels]), k)
                for labels, k in label_counts.items()
            ]).astype(int)
        elif n == len(corpus):
            idx = np.arange(n)
        else:
            idx = self._draw(np.arange(len(corpus)), n)
        return corpus.subset(idx, name="copy-synthetic")

    def _draw(self, pool: np.ndarray, k: int) -> np.ndarray:
        if k and len(pool) == 0:
            raise ConfigError("generator 'copy' was asked for a label set that the private corpus does not contain")
        return self._rng.choice(pool, size=k, replace=k > len(pool))
