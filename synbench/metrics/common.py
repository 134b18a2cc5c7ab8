"""What the fidelity metrics share: the smoothed Jensen–Shannon divergence (and the
paper-scale KL divergence beside it), the real-vs-real reference design (`FidelityMetric`, and `TextFidelityMetric` for
metrics of the texts alone), and the per-job caches in
`MetricContext.cache`.

The caches are why a corpus is embedded and parsed once per job: embeddings
come from the job's one `EmbeddingCache` (on disk under `cache_dir`, the same
class and folder the audit uses); entity and length metrics read per-text
results from one memo per analysis, so the reference halves and synthetic
text that repeats real text are never processed twice.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from pathlib import Path
from typing import Any, Callable, Hashable, Mapping, Sequence, TypeVar

import numpy as np

from synbench.core.base import Metric, MetricContext
from synbench.core.corpus import Corpus
from synbench.core.errors import ConfigError
from synbench.text.embeddings import EmbeddingCache

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)
REF_SUFFIX = "_ref"


def smoothed(counts: np.ndarray, alpha: float) -> np.ndarray:
    """Add-alpha smoothing of a count vector over its support U: p(x) = (c(x) + alpha) / (N + alpha |U|)."""
    counts = np.asarray(counts, dtype=float)
    return (counts + alpha) / (counts.sum() + alpha * counts.size)


def js_divergence(p_counts: np.ndarray, q_counts: np.ndarray, alpha: float) -> float:
    """Jensen–Shannon divergence in bits (0 = same, 1 = disjoint) between two smoothed count vectors.

    Both vectors index the same support U (the union of what either side
    observed). Each becomes p(x) = (c(x) + alpha) / (N + alpha |U|): add-alpha
    smoothing, which pulls small samples towards uniform and so damps the
    upward bias of plug-in estimates on sparse supports (entity strings, where
    most values are seen once). JS = KL(p||m)/2 + KL(q||m)/2 with
    m = (p + q)/2 and log base 2. An empty support (nothing observed on either
    side) is a divergence of 0.
    """
    if np.asarray(p_counts).size == 0:
        return 0.0
    p, q = smoothed(p_counts, alpha), smoothed(q_counts, alpha)
    m = (p + q) / 2

    def kl(a: np.ndarray) -> float:
        nz = a > 0
        return float(np.sum(a[nz] * np.log2(a[nz] / m[nz])))

    return max(0.0, (kl(p) + kl(q)) / 2)


def kl_divergence(p_counts: np.ndarray, q_counts: np.ndarray, alpha: float) -> float:
    """KL(p || q) in nats between two add-alpha smoothed count vectors over the same support (0 when empty).

    The reading of the SynBench paper's Table 2 divergences (`*_div_paper`): the
    authors publish no code for them, and their real-vs-real values (entities
    "below 2.2", lengths "below 0.012") rule out a measure bounded by 1 such as
    JS in bits. KL of the real distribution p from the synthetic q is unbounded
    and, with the same smoothing as `js_divergence`, finite on one-sided support.
    Not symmetric: p is the real side.
    """
    if np.asarray(p_counts).size == 0:
        return 0.0
    p, q = smoothed(p_counts, alpha), smoothed(q_counts, alpha)
    return max(0.0, float(np.sum(p * np.log(p / q))))


def _aligned(p: Mapping[K, int], q: Mapping[K, int]) -> tuple[np.ndarray, np.ndarray]:
    """Two frequency tables as count vectors over the union of their keys."""
    support = sorted(set(p) | set(q), key=repr)
    return np.array([p.get(k, 0) for k in support]), np.array([q.get(k, 0) for k in support])


def counter_js(p: Mapping[K, int], q: Mapping[K, int], alpha: float) -> float:
    """`js_divergence` of two frequency tables over the union of their keys."""
    return js_divergence(*_aligned(p, q), alpha)


def counter_kl(p: Mapping[K, int], q: Mapping[K, int], alpha: float) -> float:
    """`kl_divergence` of two frequency tables over the union of their keys."""
    return kl_divergence(*_aligned(p, q), alpha)


def smoothing(alpha: float) -> float:
    """A validated add-alpha constant (it must be positive for the divergence to be defined on one-sided support)."""
    if not (isinstance(alpha, (int, float)) and math.isfinite(alpha) and alpha > 0):
        raise ConfigError(f"alpha={alpha!r}: the smoothing constant must be a positive number (0.5 is add-half)")
    return float(alpha)


def real_halves(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two disjoint halves A and B of the real (eval) corpus by a seeded shuffle, for the real-vs-real reference.

    The eval split is the held-out real data the comparison uses anyway, so the
    reference needs no further access to the private split. Every fidelity
    metric of a job uses the same halves.
    """
    perm = np.random.default_rng(seed).permutation(n)
    return perm[: n // 2], perm[n // 2 :]


def matched_sample(n: int, k: int, seed: int) -> np.ndarray:
    """A seeded sample of min(n, k) of n positions, in order: the synthetic documents scored against half B."""
    rng = np.random.default_rng([seed, 1])
    return np.sort(rng.choice(n, size=min(n, k), replace=False))


def take(features: Sequence[Any] | np.ndarray, idx: np.ndarray) -> Sequence[Any] | np.ndarray:
    """Rows `idx` of per-document features (an array or a list)."""
    if isinstance(features, np.ndarray):
        return features[idx]
    return [features[i] for i in idx]


def per_text(
    ctx: MetricContext, namespace: str, texts: Sequence[str], compute: Callable[[list[str]], Sequence[T]]
) -> list[T]:
    """`compute` of each text through a per-job memo: texts not seen before in `namespace` are computed in one batch."""
    memo: dict[str, T] = ctx.cache.setdefault(namespace, {})
    missing = [t for t in dict.fromkeys(texts) if t not in memo]
    if missing:
        memo.update(zip(missing, compute(missing)))
    return [memo[t] for t in texts]


def embedding_cache(ctx: MetricContext) -> EmbeddingCache:
    """The job's `EmbeddingCache` for its encoder (created on first use; on disk under `ctx.cache_dir` when set)."""
    if ctx.encoder is None:
        raise ConfigError("this metric needs a sentence encoder; select one with encoder=minilm (the offline default)")
    key = f"embeddings:{ctx.encoder.name}"
    if key not in ctx.cache:
        ctx.cache[key] = EmbeddingCache(ctx.encoder, Path(ctx.cache_dir) if ctx.cache_dir else None)
    return ctx.cache[key]


class FidelityMetric(Metric):
    """A comparison of real and synthetic documents through per-document features, with its real-vs-real reference.

    Both values compare against real eval half B with equally many documents
    on the other side: half A for the reference (`<key>_ref`), a seeded sample
    of |A| synthetic documents (all of them when there are fewer) for the
    score (`<key>`). Plug-in divergences and MAUVE's quantisation depend on
    sample size, so a full-size score next to a half-size reference would
    flatter every generator; with the same real side and sizes, a generator
    whose output is distributed like real text scores the reference in
    expectation. Subclasses say how to featurize a corpus (its texts: see
    `TextFidelityMetric`; or its labels) and compare two feature lists;
    `describe` adds plain descriptive values.
    """

    section = "fidelity"

    @abstractmethod
    def corpus_features(self, corpus: Corpus, ctx: MetricContext) -> Sequence[Any] | np.ndarray:
        """One feature (row, tuple, number) per document, in order."""

    @abstractmethod
    def compare(self, real: Any, synthetic: Any, ctx: MetricContext) -> dict[str, float]:
        """The metric values between two feature lists (`real` is the reference side)."""

    def describe(self, real: Any, synthetic: Any) -> dict[str, float]:
        """Plain descriptive values of the real corpus and the synthetic sample; none by default."""
        return {}

    def __call__(self, real: Corpus, synthetic: Corpus, ctx: MetricContext) -> dict[str, float]:
        half_a, half_b = real_halves(len(real), ctx.seed)
        sample = matched_sample(len(synthetic), len(half_a), ctx.seed)
        f_real = self.corpus_features(real, ctx)
        f_syn = self.corpus_features(synthetic.subset(sample), ctx)
        side = take(f_real, half_b)
        reference = self.compare(side, take(f_real, half_a), ctx)
        return {
            **self.compare(side, f_syn, ctx),
            **{key + REF_SUFFIX: value for key, value in reference.items()},
            **self.describe(f_real, f_syn),
        }


class TextFidelityMetric(FidelityMetric):
    """A fidelity metric of the texts alone (MAUVE, entities, lengths)."""

    @abstractmethod
    def features(self, texts: Sequence[str], ctx: MetricContext) -> Sequence[Any] | np.ndarray:
        """One feature (row, tuple, number) per text, in order."""

    def corpus_features(self, corpus: Corpus, ctx: MetricContext) -> Sequence[Any] | np.ndarray:
        return self.features(corpus.texts, ctx)
