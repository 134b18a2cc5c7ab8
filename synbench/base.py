"""Abstract base classes of the four plugin kinds.

A plugin is a class registered under an entry-point group (see
`synbench.registry`). Its Hydra config node names it with `_plugin_: <name>`;
every other key of the node is passed to the constructor as a keyword.
"""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, Sequence

import numpy as np

from synbench.corpus import Corpus, Labels
from synbench.embeddings import EncoderSpec
from synbench.privacy import PrivacySpec


@dataclass(frozen=True)
class Splits:
    """A dataset as loaded: the private training split and a real held-out split."""

    train: Corpus
    eval: Corpus


class DatasetLoader(ABC):
    """Loads a dataset into `Splits`. Registered under `synbench.datasets`."""

    name: str

    @abstractmethod
    def load(self, seed: int) -> Splits:
        """Read, validate and split the data; `seed` drives any random split."""


@dataclass(frozen=True)
class FitReport:
    """What a generator's `fit` actually spent, as its accountant computed it."""

    epsilon_spent: float
    delta: float
    details: Mapping[str, Any] = field(default_factory=dict)
    # Per-step training curves (for example {"train_loss": [...]}); trackers log them, results do not.
    curves: Mapping[str, Sequence[float]] = field(default_factory=dict)

    @property
    def is_private(self) -> bool:
        return math.isfinite(self.epsilon_spent)


class Generator(ABC):
    """A (DP) synthetic text generator. Registered under `synbench.generators`.

    `fit` sees the private corpus once and returns the budget it spent; the
    label distribution of `sample` must come from a noisy histogram paid for
    inside that budget, from `label_counts` given by the caller, or from a
    public prior, never from raw private counts.
    """

    @abstractmethod
    def fit(self, corpus: Corpus, privacy: PrivacySpec, seed: int) -> FitReport:
        """Train on the private corpus within `privacy`."""

    @abstractmethod
    def sample(self, n: int, label_counts: Mapping[Labels, int] | None = None) -> Corpus:
        """Write `n` synthetic documents (exactly `label_counts` per label set, if given)."""


@dataclass
class MetricContext:
    """Shared state for metrics in one job: the seed, the job directory and per-corpus caches.

    `cache` is one dict shared by every metric of the job, so a corpus is embedded
    (with `encoder`, on-disk copies under `cache_dir`) or parsed once however many
    metrics use it.
    """

    seed: int
    job_dir: str
    cache: dict[str, Any] = field(default_factory=dict)
    train: Corpus | None = None
    encoder: EncoderSpec | None = None
    cache_dir: str | None = None


class Metric(ABC):
    """Scores a synthetic corpus against real data. Registered under `synbench.metrics`.

    `section` is the `results.json` section the returned keys go to
    (`utility` or `fidelity`).
    """

    section: ClassVar[str] = "fidelity"

    @abstractmethod
    def __call__(self, real: Corpus, synthetic: Corpus, ctx: MetricContext) -> dict[str, float]:
        """Flat metric values for one (real, synthetic) pair."""


class Attack(ABC):
    """A membership attack. Registered under `synbench.attacks`.

    Black-box attacks score `targets` from the released synthetic corpus
    (and public or auxiliary reference corpora) only; larger means member.
    """

    @abstractmethod
    def score(self, targets: Sequence[str], synthetic: Corpus, references: Sequence[Corpus]) -> np.ndarray:
        """One membership score per target text."""
