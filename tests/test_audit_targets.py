"""Outlier targets: the union of the centroid criterion and LOF, ranked jointly when it exceeds the cap."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.neighbors import LocalOutlierFactor

from synbench.audit.config import AuditOptions
from synbench.audit.targets import interleave, select_targets
from synbench.core.errors import ConfigError

PSYTAR_N = 5102  # the paper's PsyTAR training split: 1% is 52 documents, more than the default cap of 50
# the outlier rule as task=audit runs it by default (the schema's audit.* keys)
SCHEMA_RULE = {key: getattr(AuditOptions(), key) for key in ("far_fraction", "lof_neighbors", "lof_contamination")}


def rankings(embeddings: np.ndarray, far_fraction: float, contamination: float) -> tuple[list[int], list[int]]:
    """The two criteria written out directly, most outlying first: the farthest share from the centroid, and what
    LOF (k=20) flags by outlier factor."""
    distance = np.linalg.norm(embeddings - embeddings.mean(axis=0), axis=1)
    far = np.argsort(-distance)[: math.ceil(far_fraction * len(embeddings))].tolist()
    lof = LocalOutlierFactor(n_neighbors=20, contamination=contamination)
    flagged = lof.fit_predict(embeddings) == -1
    return far, [i for i in np.argsort(lof.negative_outlier_factor_).tolist() if flagged[i]]


def criteria(embeddings: np.ndarray, far_fraction: float, contamination: float) -> tuple[set[int], set[int]]:
    far, lof = rankings(embeddings, far_fraction, contamination)
    return set(far), set(lof)


@pytest.fixture(scope="module")
def psytar_sized() -> np.ndarray:
    return np.random.default_rng(0).normal(size=(PSYTAR_N, 8))


def test_interleave_takes_turns_and_a_document_taken_passes_the_turn_on() -> None:
    assert interleave(np.array([1, 2, 3]), np.array([2, 9])).tolist() == [1, 2, 3, 9]
    assert interleave(np.array([1, 2, 3]), np.array([1, 7, 8])).tolist() == [1, 7, 2, 8, 3]
    assert interleave(np.array([4, 5]), np.array([], dtype=int)).tolist() == [4, 5]
    assert interleave().tolist() == []


def test_at_psytar_size_both_criteria_fill_the_cap(psytar_sized: np.ndarray) -> None:
    """The centroid's 1% (52) exceeds n_targets=50, yet LOF still contributes about half (it gave none before)."""
    far, lof = rankings(psytar_sized, 0.01, 0.1)
    chosen = set(
        select_targets(
            psytar_sized, max_targets=50, far_fraction=0.01, lof_neighbors=20, lof_contamination=0.1
        ).tolist()
    )
    assert len(far) == 52 and len(chosen) == 50 and chosen <= set(far) | set(lof)
    assert set(far[:25]) | set(lof[:25]) <= chosen and not chosen <= set(far)  # far-first took far[:50]


def test_without_a_cap_the_targets_are_the_whole_union(psytar_sized: np.ndarray) -> None:
    far, lof = criteria(psytar_sized, 0.01, 0.01)
    chosen = select_targets(psytar_sized, max_targets=None, far_fraction=0.01, lof_neighbors=20, lof_contamination=0.01)
    assert set(chosen.tolist()) == far | lof and len(far) == 52 and len(lof) == 52
    assert chosen.tolist() == sorted(chosen.tolist())


def test_a_pocket_outlier_at_the_centre_is_a_target_though_the_far_ones_fill_the_cap() -> None:
    """A lone document between two clusters sits at the centroid: only LOF sees it, and it ranks first there."""
    rng = np.random.default_rng(1)
    clusters = np.concatenate([rng.normal((-3, 0), 0.3, size=(300, 2)), rng.normal((3, 0), 0.3, size=(300, 2))])
    embeddings = np.concatenate([clusters, [[0.0, 0.0]]])
    far, _ = criteria(embeddings, 0.01, 0.05)
    assert len(far) == 7 and 600 not in far
    chosen = select_targets(
        embeddings, max_targets=4, far_fraction=0.01, lof_neighbors=20, lof_contamination=0.05
    ).tolist()
    assert 600 in chosen and len(set(chosen) & far) >= 2  # the old far-first order chose 4 far ones


def test_bad_caps_are_clear_errors(psytar_sized: np.ndarray) -> None:
    with pytest.raises(ConfigError, match=r"audit.n_targets=1 is too small"):
        select_targets(psytar_sized[:100], max_targets=1, **SCHEMA_RULE)
    with pytest.raises(ConfigError, match="audit.lof_neighbors=20"):
        select_targets(psytar_sized[:20], max_targets=None, **SCHEMA_RULE)
