"""DP label-set plans: which label sets a synthetic corpus carries and how often, released with DP.

Every generator conditions its output on label sets, and the mix of sets is
a statistic of the private data, so it is released with noise inside the
job's budget (or replaced by the public uniform prior). This module is the
one mechanism every generator uses; adjacency is adding or removing one
document, and each document has exactly one label set (its labels in
label-space order, `canonical`), so it adds 1 to exactly one set's count.

- **Single-label corpora**: the sets are the singletons of the public label
  space. One Gaussian mechanism (L2 sensitivity 1, std sigma) on the count of
  every label (`synbench.core.privacy.noisy_label_histogram`); the space is public,
  so nothing needs selecting and no delta is added.
- **Multi-label corpora**: the space of label sets is huge and which sets
  occur is private, so the frequent ones are found by Gaussian partition
  selection (the "Gaussian sparse histogram": Korolova et al. 2009, Gopi et
  al. 2020, Wilkins et al. 2024). Each set that occurs gets its count plus
  N(0, sigma^2) and is released, with that noisy count, when the noisy count
  exceeds tau = 1 + sigma * Phi^-1(1 - delta_select). Privacy: for
  neighbours whose extra document's set occurs in both, the output is a
  post-processed Gaussian mechanism of L2 sensitivity 1 over the same sets;
  when the set occurs only in the larger one (count 1), every other
  coordinate has the same distribution in both and that set is released with
  probability P(1 + N(0, sigma^2) > tau) = delta_select exactly, so the two
  outputs are delta_select apart in total variation. Composed with anything
  else, the release therefore costs one Gaussian step (sigma, sample rate 1)
  in the accountant history plus delta_select added to delta: a job reports
  its epsilon at delta - delta_select, and its total delta stays the job's.
  Sets are released in label-space order, never in data order.
- **The tail** (`tail: marginals`, default): documents whose set was not
  released (N - sum of released counts; N is public) get sets drawn from DP
  per-label marginals: each label independently with probability
  h_j / N_tail, where h is the noisy histogram of labels with each document's
  row scaled to unit L2 norm (sensitivity 1) minus the released sets' share of
  it. That histogram is a second Gaussian step of the same sigma, charged
  always, because whether the tail is needed depends on the data. It is
  biased low for multi-label documents (a document with k labels adds
  1/sqrt(k) to each) and independent sampling ignores label correlations:
  the head of frequent sets carries those. If nothing passes the threshold,
  the whole plan comes from the marginals. `tail: none` charges one step and
  spreads the plan over the released sets alone (the public uniform prior
  when none is released).
- **eps = inf**: sigma = 0, every set with its exact count, no threshold: the
  plan reproduces the exact label-set distribution.
- **`label_prior: uniform`** (`uniform`): the public prior, nothing spent:
  uniform over the label space, one label per document.

All noise comes from the job's secret `NoiseSource` (streams `label_sets` and
`label_histogram`), never from the seed; turning a release into a plan
(`plan`) is post-processing and may use the seed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from synbench.core.corpus import Corpus, Labels
from synbench.core.errors import ConfigError
from synbench.core.privacy import NoiseSource, allocate, gaussian_sigma, noisy_label_histogram

TAILS = ("marginals", "none")
History = list[tuple[float, float, int]]  # Opacus accountant entries: (noise std, sample rate, steps)
# Attempts at drawing a non-empty label set from the marginals before a document falls back to one label.
MAX_REDRAWS = 100


def canonical(labels: Sequence[str], position: Mapping[str, int]) -> Labels:
    """A label set as one key: its distinct labels in label-space order (`position` maps a label to its index)."""
    return tuple(sorted(set(labels), key=position.__getitem__))


def positions(label_space: Sequence[str]) -> dict[str, int]:
    return {label: i for i, label in enumerate(label_space)}


def label_sets(corpus: Corpus) -> list[Labels]:
    """The canonical label set of every document, in corpus order."""
    position = positions(corpus.label_space)
    return [canonical(labels, position) for labels in corpus.labels]


def set_counts(corpus: Corpus) -> dict[Labels, int]:
    """Documents per label set, in label-space order of the sets: the exact (private) statistic behind a release.

    Each document adds 1 to the count of exactly one set (its own), so adding
    or removing a document changes one count by 1: L1 and L2 sensitivity 1.
    """
    position = positions(corpus.label_space)
    counts: dict[Labels, int] = {}
    for labels in label_sets(corpus):
        counts[labels] = counts.get(labels, 0) + 1
    return dict(sorted(counts.items(), key=lambda item: [position[label] for label in item[0]]))


# The fit-report details every label plan writes (DP outputs: the plan's noise settings and what it released), so a
# generator lists them in its `public_details` as `*PUBLIC_DETAILS` rather than spelling them out again.
PUBLIC_DETAILS: tuple[str, ...] = (
    "label_noise_std",
    "label_mechanisms",
    "label_delta_select",
    "label_threshold",
    "label_tail",
    "label_prior",
    "label_sets_released",
    "label_multi_sets_released",
    "label_head_share",
)


@dataclass(frozen=True)
class LabelSetBudget:
    """The calibrated release: noise std, Gaussian steps charged, and delta spent on partition selection.

    `sigma = 0` is the exact release (eps = inf). `history` is the release's
    share of an Opacus-style accountant history; a job composes it with its
    own mechanisms and reads its epsilon at `delta - delta_select`.
    """

    sigma: float
    gaussians: int
    delta_select: float
    tail: str

    @property
    def threshold(self) -> float:
        """tau: a set whose exact count is 1 passes with probability exactly `delta_select`."""
        if self.sigma == 0 or self.delta_select == 0:
            return -math.inf
        # scipy here: the generators' settings, which every CLI start reads, import this module
        from scipy.special import ndtri

        return 1.0 - self.sigma * float(ndtri(self.delta_select))  # Phi^-1(1 - d) = -Phi^-1(d), exact for tiny d

    def history(self) -> History:
        """The Gaussian steps of the release at sample rate 1 (nothing at eps = inf)."""
        return [(self.sigma, 1.0, self.gaussians)] if self.sigma > 0 else []

    def details(self) -> dict[str, Any]:
        """Plan values for a fit report (public: fixed before the data is read)."""
        return {
            "label_noise_std": self.sigma,
            "label_mechanisms": self.gaussians,
            "label_delta_select": self.delta_select,
            "label_threshold": self.threshold if math.isfinite(self.threshold) else None,
            "label_tail": self.tail,
        }


@dataclass(frozen=True)
class LabelSetOptions:
    """The `label_sets` config node of a generator: how delta is split and how the tail is planned.

    `delta_share` of the job's delta goes to partition selection (multi-label
    data only); the rest is what the job's accountant reads epsilon at, so
    the two add up to the job's delta and never exceed it.
    """

    delta_share: float = 0.1
    tail: str = "marginals"

    def __post_init__(self) -> None:
        if not 0.0 < float(self.delta_share) < 1.0:
            raise ConfigError(f"generator.label_sets.delta_share={self.delta_share} must lie strictly between 0 and 1")
        if self.tail not in TAILS:
            raise ConfigError(f"generator.label_sets.tail={self.tail!r} must be one of {', '.join(TAILS)}")

    def gaussians(self, multi_label: bool) -> int:
        """Gaussian steps the release charges: the counts, plus the marginals of a multi-label tail."""
        return 2 if multi_label and self.tail == "marginals" else 1

    def delta_select(self, delta: float, multi_label: bool, private: bool) -> float:
        """The part of the job's delta that partition selection spends (none without selection or without DP)."""
        return self.delta_share * delta if multi_label and private else 0.0

    def budget(self, sigma: float, delta: float, multi_label: bool) -> LabelSetBudget:
        """The release at a given noise std (for generators that share one sigma over all their mechanisms)."""
        return LabelSetBudget(
            float(sigma),
            self.gaussians(multi_label),
            self.delta_select(delta, multi_label, sigma > 0),
            self.tail if multi_label else "none",
        )

    def calibrate(self, epsilon: float, delta: float, multi_label: bool) -> LabelSetBudget:
        """The release that is (epsilon, delta)-DP on its own, epsilon read at delta - delta_select (eps = inf:
        exact)."""
        select = self.delta_select(delta, multi_label, math.isfinite(epsilon))
        return self.budget(gaussian_sigma(epsilon, delta - select, self.gaussians(multi_label)), delta, multi_label)


@dataclass(frozen=True)
class LabelSetRelease:
    """What was released (DP, exact at eps = inf, or public): label sets with weights, and the tail's marginals.

    `weights` are the released sets' noisy counts (not rounded, clipped at 0).
    `marginals` is the per-label noisy unit-norm histogram (None: no tail);
    `n` the public private-set size both refer to. Saved in checkpoints as is:
    it holds no statistic without noise.
    """

    sets: tuple[Labels, ...]
    weights: tuple[float, ...]
    n: int
    marginals: tuple[float, ...] | None = None
    prior: str = "dp"

    def head_share(self) -> float:
        """The share of documents the released sets cover; the rest is the tail (0 without marginals)."""
        if self.marginals is None:
            return 1.0
        return min(1.0, sum(self.weights) / self.n) if self.n else 0.0

    def details(self) -> dict[str, Any]:
        """Statistics of the release (DP outputs) for a fit report."""
        return {
            "label_prior": self.prior,
            "label_sets_released": len(self.sets),
            "label_multi_sets_released": sum(len(s) > 1 for s in self.sets),
            "label_head_share": self.head_share(),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "sets": [list(s) for s in self.sets],
            "weights": list(self.weights),
            "n": self.n,
            "marginals": None if self.marginals is None else list(self.marginals),
            "prior": self.prior,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "LabelSetRelease":
        marginals = data.get("marginals")
        return cls(
            tuple(tuple(s) for s in data["sets"]),
            tuple(float(w) for w in data["weights"]),
            int(data["n"]),
            None if marginals is None else tuple(float(m) for m in marginals),
            str(data.get("prior", "dp")),
        )


PRIORS = ("auto", "dp", "uniform")  # a generator's `label_prior` choices


def prior_is_dp(label_prior: str, multi_label: bool) -> bool:
    """Whether `label_prior` releases DP label sets: `dp` always, `auto` on multi-label data only.

    `uniform` (the public prior) gives every document one label, which misstates every label set of a multi-label
    task, so it is refused there; `auto` picks it on single-label data, where it costs nothing.
    """
    if label_prior == "uniform" and multi_label:
        raise ConfigError(
            "generator.label_prior=uniform gives every synthetic document one label, but the dataset is "
            "multi-label; use generator.label_prior=dp (or auto) to release DP label sets"
        )
    return label_prior == "dp" or (label_prior == "auto" and multi_label)


def uniform(label_space: Sequence[str]) -> LabelSetRelease:
    """The public prior (`label_prior: uniform`): every label alone, equally often; no budget spent."""
    return LabelSetRelease(
        tuple((label,) for label in label_space), tuple(1.0 for _ in label_space), 0, prior="uniform"
    )


def release(corpus: Corpus, budget: LabelSetBudget, noise: NoiseSource) -> LabelSetRelease:
    """Run the mechanism of the module docstring on the private corpus."""
    if not corpus.multi_label:
        weights = noisy_label_histogram(corpus, budget.sigma, noise)
        return LabelSetRelease(tuple((label,) for label in corpus.label_space), tuple(weights.tolist()), len(corpus))
    if budget.sigma > 0 and not 0.0 < budget.delta_select < 1.0:
        raise ValueError(
            "partition selection of label sets needs delta_select in (0, 1): "
            "without it, which sets occur would be released exactly"
        )
    counts = set_counts(corpus)
    sets = list(counts)
    exact = np.array([counts[s] for s in sets], dtype=float)
    if budget.sigma == 0:
        return LabelSetRelease(tuple(sets), tuple(exact.tolist()), len(corpus))
    noisy = exact + noise.numpy("label_sets").normal(0.0, budget.sigma, size=exact.shape)
    keep = np.flatnonzero(noisy > budget.threshold)
    marginals = (
        tuple(noisy_label_histogram(corpus, budget.sigma, noise).tolist()) if budget.tail == "marginals" else None
    )
    return LabelSetRelease(tuple(sets[i] for i in keep), tuple(noisy[keep].tolist()), len(corpus), marginals)


def plan(
    n: int,
    released: LabelSetRelease,
    label_space: Sequence[str],
    multi_label: bool,
    rng: np.random.Generator,
    label_counts: Mapping[Labels, int] | None = None,
) -> list[Labels]:
    """The label set of each of `n` documents to write, grouped by set (post-processing of `released`).

    `label_counts` (given by the caller) are followed exactly. Otherwise the
    released sets share round(n * head share) documents in proportion to
    their weights (largest remainder, `synbench.core.privacy.allocate`), and the
    rest are drawn from the tail's marginals with `rng`.
    """
    if label_counts is not None:
        return _followed(n, label_counts, label_space, multi_label)
    head = round(n * released.head_share()) if released.sets else 0
    out: list[Labels] = []
    if head:
        counts = allocate(head, np.asarray(released.weights, dtype=float))
        out = [labels for labels, k in zip(released.sets, counts) for _ in range(int(k))]
    if n - head == 0:
        return out
    if released.marginals is None:  # no set released and no tail: the public uniform prior
        return out + plan(n - head, uniform(label_space), label_space, multi_label, rng)
    return out + _from_marginals(n - head, _tail_rates(released, label_space), label_space, rng)


def _tail_rates(released: LabelSetRelease, label_space: Sequence[str]) -> np.ndarray:
    """Per-label inclusion probabilities of the tail: the marginals less the released sets' share, over N_tail."""
    position = positions(label_space)
    rest = np.asarray(released.marginals, dtype=float).copy()
    for labels, weight in zip(released.sets, released.weights):
        rest[[position[label] for label in labels]] -= weight / math.sqrt(len(labels))
    n_tail = max(released.n - sum(released.weights), 1.0)
    return np.clip(rest / n_tail, 0.0, 1.0)


def _from_marginals(n: int, rates: np.ndarray, label_space: Sequence[str], rng: np.random.Generator) -> list[Labels]:
    """n sets, each label included independently with its rate, empty draws redrawn; grouped by set."""
    if not rates.any():
        rates = np.full(len(label_space), 1.0 / len(label_space))
    draws = rng.random((n, len(label_space))) < rates
    for _ in range(MAX_REDRAWS):
        empty = np.flatnonzero(~draws.any(axis=1))
        if not len(empty):
            break
        draws[empty] = rng.random((len(empty), len(label_space))) < rates
    for i in np.flatnonzero(~draws.any(axis=1)):  # rates so small that no draw succeeded: one label by its rate
        draws[i, rng.choice(len(label_space), p=rates / rates.sum())] = True
    rows = sorted(np.flatnonzero(row).tolist() for row in draws)  # label-space order within and across sets
    return [tuple(label_space[j] for j in row) for row in rows]


def _followed(
    n: int, label_counts: Mapping[Labels, int], label_space: Sequence[str], multi_label: bool
) -> list[Labels]:
    """`label_counts` as a plan, after checking that it is one (the message names labels, never documents)."""
    if any(int(k) < 0 for k in label_counts.values()) or sum(int(k) for k in label_counts.values()) != n:
        raise ConfigError(
            f"label_counts must be non-negative and add up to n={n} "
            f"(they add up to {sum(int(k) for k in label_counts.values())})"
        )
    allowed = set(label_space)
    for labels in label_counts:
        unknown = sorted(set(labels) - allowed)
        if not labels or unknown or (len(set(labels)) > 1 and not multi_label):
            raise ConfigError(
                f"label_counts key {tuple(labels)!r} is not a label set of this "
                f"{'multi' if multi_label else 'single'}-label task"
                + (f" (labels outside the label space: {unknown})" if unknown else "")
            )
    return [tuple(labels) for labels, k in label_counts.items() for _ in range(int(k))]
