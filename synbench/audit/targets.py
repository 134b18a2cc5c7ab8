"""Audit targets: the real documents whose membership the audit tests.

DP bounds the worst case, and the documents a generator is most likely to
leak are the rare ones, so the targets are extreme outliers of the corpus in
a sentence-embedding space (the paper's D_out): the farthest `far_fraction`
from the centroid, plus Local Outlier Factor outliers (our choice of LOF
settings: n_neighbors=20, `contamination` share flagged). LOF catches
documents in sparse pockets that are not far from the centre.
"""
from __future__ import annotations

import math

import numpy as np
from sklearn.neighbors import LocalOutlierFactor

from synbench.errors import ConfigError


def select_targets(
    embeddings: np.ndarray,
    *,
    max_targets: int,
    far_fraction: float = 0.01,
    lof_neighbors: int = 20,
    lof_contamination: float | str = "auto",
) -> np.ndarray:
    """Sorted positions of at most `max_targets` outliers among the rows of `embeddings`.

    Every far-from-centroid document is kept first (they are few), then LOF
    outliers in decreasing outlier factor, until `max_targets`. Deterministic:
    no randomness, so the same corpus and encoder always give the same targets.
    """
    n = len(embeddings)
    if max_targets < 2:
        raise ConfigError(f"audit.n_targets={max_targets} is too small: the audit needs at least 2 targets")
    if not 0 <= far_fraction < 1:
        raise ConfigError(f"audit.far_fraction={far_fraction} must lie in [0, 1)")
    if n <= lof_neighbors:
        raise ConfigError(f"the dataset has {n} documents; the outlier search needs more than audit.lof_neighbors={lof_neighbors}")
    distance = np.linalg.norm(embeddings - embeddings.mean(axis=0), axis=1)
    far = np.argsort(-distance, kind="stable")[: math.ceil(far_fraction * n)]
    lof = LocalOutlierFactor(n_neighbors=lof_neighbors, contamination=lof_contamination)
    flagged = lof.fit_predict(embeddings) == -1
    by_factor = np.argsort(lof.negative_outlier_factor_, kind="stable")  # most outlying first
    lof_outliers = by_factor[flagged[by_factor]]
    ranked = np.concatenate([far, lof_outliers[~np.isin(lof_outliers, far)]])
    chosen = ranked[:max_targets]
    if chosen.size < 2:
        raise ConfigError(
            f"only {chosen.size} outlier target(s) found among {n} documents; raise audit.far_fraction "
            "or audit.lof_contamination"
        )
    return np.sort(chosen)
