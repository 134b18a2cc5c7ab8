"""The private step of Private Evolution and its accounting: nearest-neighbour votes, Gaussian noise, selection.

Adjacency is adding or removing one private document. Each private document
casts exactly one vote per iteration, for the candidate nearest to it (L2 on
encoder embeddings) among the candidates of its own label set (over the
whole population when its set is not a class of the population). The vote
histogram over all candidates of all classes therefore changes by exactly
one in one coordinate between neighbours: L1 and L2 sensitivity 1, one
Gaussian mechanism of std sigma per iteration. T of them, with the label-set
release's Gaussian steps, compose to mu-GDP with
mu = sqrt(T / sigma^2 + g / sigma_label^2) (Dong, Roth & Su 2019); RANDOM_API
and VARIATION_API read no private data and cost nothing, and so does every
step after the noise (threshold, selection), which is post-processing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from synbench.core.errors import ConfigError
from synbench.core.privacy import gaussian_sigma, gdp_epsilon, gdp_mu
from synbench.dp.label_sets import LabelSetBudget, LabelSetOptions

SELECTIONS = ("rank", "sample")
CHUNK = 2048  # private rows per distance block (bounds memory at CHUNK x candidates floats)


@dataclass(frozen=True)
class AugPEBudget:
    """The calibrated plan: vote noise std, vote rounds, the label-set release (None: public prior), delta read at."""

    sigma: float
    iterations: int
    labels: LabelSetBudget | None
    delta_at: float  # the job's delta less the label release's delta_select

    @property
    def mu(self) -> float:
        """The GDP parameter of everything that read private data (inf without noise)."""
        if self.sigma == 0:
            return math.inf
        square = self.iterations / self.sigma**2
        if self.labels is not None and self.labels.sigma > 0:
            square += self.labels.gaussians / self.labels.sigma**2
        return math.sqrt(square)

    @property
    def mechanisms(self) -> int:
        return self.iterations + (self.labels.gaussians if self.labels is not None else 0)

    def epsilon(self) -> float:
        return gdp_epsilon(self.mu, self.delta_at)


def calibrate(
    epsilon: float,
    delta: float,
    iterations: int,
    label_config: LabelSetOptions | None,
    multi_label: bool,
    label_mu_share: float | None,
) -> AugPEBudget:
    """Noise for T vote rounds (and the label release) to meet (epsilon, delta) together.

    `label_config=None` is the public label prior (nothing charged).
    `label_mu_share=None` gives the label release the votes' sigma (one
    sigma over T + g Gaussian steps); a share s in (0, 1) gives it s of mu^2
    (its own sigma) and the votes the rest. epsilon = inf: sigma = 0 everywhere.
    """
    if iterations < 1:
        raise ConfigError(f"generator.iterations={iterations} must be at least 1")
    if label_config is None:
        return AugPEBudget(gaussian_sigma(epsilon, delta, iterations), iterations, None, delta)
    select = label_config.delta_select(delta, multi_label, math.isfinite(epsilon))
    at = delta - select
    g = label_config.gaussians(multi_label)
    if not math.isfinite(epsilon):
        return AugPEBudget(0.0, iterations, label_config.budget(0.0, delta, multi_label), at)
    if label_mu_share is None:
        sigma = gaussian_sigma(epsilon, at, iterations + g)
        return AugPEBudget(sigma, iterations, label_config.budget(sigma, delta, multi_label), at)
    if not 0.0 < label_mu_share < 1.0:
        raise ConfigError(f"generator.label_mu_share={label_mu_share} must lie strictly between 0 and 1 (or be null)")
    mu = gdp_mu(epsilon, at)
    sigma = math.sqrt(iterations) / (math.sqrt(1 - label_mu_share) * mu)
    label_sigma = math.sqrt(g) / (math.sqrt(label_mu_share) * mu)
    return AugPEBudget(sigma, iterations, label_config.budget(label_sigma, delta, multi_label), at)


def nearest(queries: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Index of the L2-nearest row of `points` for each row of `queries` (ties: the lowest index)."""
    points = np.asarray(points, dtype=np.float64)
    sq = (points**2).sum(axis=1)
    out = np.empty(len(queries), dtype=np.int64)
    for i in range(0, len(queries), CHUNK):
        q = np.asarray(queries[i : i + CHUNK], dtype=np.float64)
        out[i : i + CHUNK] = np.argmin(sq[None, :] - 2.0 * q @ points.T, axis=1)  # |q|^2 is constant per row
    return out


def vote_histogram(
    private: np.ndarray, private_class: Sequence[int], candidates: np.ndarray, candidate_class: Sequence[int]
) -> np.ndarray:
    """The exact vote count of every candidate: one vote per private document (the mechanism's private input).

    `private_class[i]` is document i's class, or -1 when its label set is not
    a class of the population (it then votes over all candidates). Only
    `noisy_histogram` may release this, and only with noise.
    """
    private_class = np.asarray(private_class)
    candidate_class = np.asarray(candidate_class)
    counts = np.zeros(len(candidates), dtype=np.float64)
    for c in np.unique(private_class):
        rows = np.flatnonzero(private_class == c)
        cols = np.arange(len(candidates)) if c < 0 else np.flatnonzero(candidate_class == c)
        if not len(rows) or not len(cols):
            continue
        np.add.at(counts, cols[nearest(private[rows], candidates[cols])], 1.0)
    return counts


def noisy_histogram(counts: np.ndarray, sigma: float, rng: np.random.Generator, threshold: float) -> np.ndarray:
    """counts + N(0, sigma^2) per candidate, then the threshold H: max(noisy - H, 0)."""
    noisy = counts + rng.normal(0.0, sigma, size=counts.shape) if sigma > 0 else counts.astype(np.float64)
    return np.maximum(noisy - threshold, 0.0)


def select(
    noisy: np.ndarray, candidate_class: Sequence[int], keep: Sequence[int], mode: str, rng: np.random.Generator
) -> np.ndarray:
    """Survivors per class c: the `keep[c]` highest noisy counts (`rank`) or `keep[c]` draws by noisy count (`sample`).

    `sample` draws with replacement (uniformly when a class's counts are all 0);
    `rank` breaks ties by candidate order. Post-processing of the noisy histogram.
    """
    if mode not in SELECTIONS:
        raise ConfigError(f"generator.selection={mode!r} is unknown; choose one of {', '.join(SELECTIONS)}")
    candidate_class = np.asarray(candidate_class)
    chosen: list[np.ndarray] = []
    for c, k in enumerate(keep):
        cols = np.flatnonzero(candidate_class == c)
        if not k or not len(cols):
            continue
        w = noisy[cols]
        if mode == "rank":
            order = cols[np.argsort(-w, kind="stable")]
            chosen.append(np.resize(order, k))  # fewer candidates than k: cycle through them
        else:
            p = w / w.sum() if w.sum() > 0 else None
            chosen.append(rng.choice(cols, size=k, replace=True, p=p))
    return np.concatenate(chosen) if chosen else np.zeros(0, dtype=np.int64)


def blank_words(text: str, share: float, rng: np.random.Generator, blank: str = "_") -> str:
    """`text` with round(share x words) randomly chosen words replaced by `blank` (at least one when share > 0)."""
    words = text.split()
    if not words or share <= 0:
        return text
    k = min(len(words), max(1, round(share * len(words))))
    for i in rng.choice(len(words), size=k, replace=False):
        words[int(i)] = blank
    return " ".join(words)


def target_words(parent_words: int, jitter: float, rng: np.random.Generator, minimum: int = 5) -> int:
    """A target length around the parent's word count: uniform in [(1 - jitter) w, (1 + jitter) w], at least
    `minimum`."""
    w = max(parent_words, minimum)
    return max(minimum, int(round(rng.uniform(1 - jitter, 1 + jitter) * w)))


def describe(budget: AugPEBudget) -> dict[str, Any]:
    """Public plan values of the budget (fixed before the data is read)."""
    return {
        "sigma": budget.sigma,
        "mu": budget.mu if math.isfinite(budget.mu) else None,
        "vote_mechanisms": budget.iterations,
        "mechanisms": budget.mechanisms,
        "votes_per_document": 1,
        "delta_accounted": budget.delta_at,
    }
