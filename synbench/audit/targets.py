"""Audit targets: the real documents whose membership the audit tests.

DP bounds the worst case, and the documents a generator is most likely to
leak are the rare ones, so the targets are extreme outliers of the corpus in
a sentence-embedding space (the paper's D_out): the union of the farthest
`far_fraction` from the centroid and the Local Outlier Factor outliers (our
choice of LOF settings: `audit.lof_neighbors` neighbours, the
`audit.lof_contamination` share flagged). LOF catches documents in sparse
pockets that are not far from the centre, so it must contribute even when
the centroid criterion alone fills the cap.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
from sklearn.neighbors import LocalOutlierFactor

from synbench.core.errors import ConfigError


def interleave(*rankings: np.ndarray) -> np.ndarray:
    """The rankings merged by taking turns: each adds its highest-ranked document not yet taken, until all run out.

    Turn-taking gives each criterion the same number of places at the top
    (while it has candidates left), whatever the scale of its scores: the
    centroid distance and the outlier factor are not comparable numbers. A
    document both criteria rank high is taken once, and the other criterion
    then adds its next one, so the first 2k places hold each one's top k.
    """
    taken: dict[int, None] = {}
    position = [0] * len(rankings)
    while any(p < len(r) for p, r in zip(position, rankings)):
        for i, ranking in enumerate(rankings):
            while position[i] < len(ranking) and int(ranking[position[i]]) in taken:
                position[i] += 1
            if position[i] < len(ranking):
                taken[int(ranking[position[i]])] = None
                position[i] += 1
    return np.array(list(taken), dtype=np.int64)


def select_targets(
    embeddings: np.ndarray,
    *,
    max_targets: int | None,
    far_fraction: float,
    lof_neighbors: int,
    lof_contamination: float | str,
) -> np.ndarray:
    """Sorted positions of the outliers among the rows of `embeddings`: the union of both criteria, at most
    `max_targets`.

    The candidates are the ceil(`far_fraction` * N) documents farthest from
    the centroid and the documents LOF flags. With `max_targets` None (the
    paper's audit) every one of them is a target. When the union is larger
    than `max_targets`, the two criteria are ranked jointly by `interleave`:
    they take turns, the centroid criterion first, each adding its most
    outlying document not yet taken; so the cap holds the top half of each
    criterion's ranking (all of one when the other runs out).
    Deterministic: no randomness, so the same corpus and encoder always give
    the same targets. The criteria's settings are `audit.*` keys, passed
    explicitly: their defaults are the schema's (`AuditOptions`), in one place.
    """
    n = len(embeddings)
    if max_targets is not None and max_targets < 2:
        raise ConfigError(
            f"audit.n_targets={max_targets} is too small: the audit needs at least 2 targets "
            "(null: every outlier of both criteria)"
        )
    if not 0 <= far_fraction < 1:
        raise ConfigError(f"audit.far_fraction={far_fraction} must lie in [0, 1)")
    if n <= lof_neighbors:
        raise ConfigError(
            f"the dataset has {n} documents; the outlier search needs more than audit.lof_neighbors={lof_neighbors}"
        )
    distance = np.linalg.norm(embeddings - embeddings.mean(axis=0), axis=1)
    far = np.argsort(-distance, kind="stable")[: math.ceil(far_fraction * n)]
    lof = LocalOutlierFactor(n_neighbors=lof_neighbors, contamination=lof_contamination)
    flagged = lof.fit_predict(embeddings) == -1
    by_factor = np.argsort(lof.negative_outlier_factor_, kind="stable")  # most outlying first
    ranked = interleave(far, by_factor[flagged[by_factor]])
    chosen = ranked if max_targets is None else ranked[:max_targets]
    if chosen.size < 2:
        raise ConfigError(
            f"only {chosen.size} outlier target(s) found among {n} documents; raise audit.far_fraction "
            "or audit.lof_contamination"
        )
    return np.sort(chosen)


def listed_targets(path: str, n_train: int) -> np.ndarray:
    """The targets named by position in a JSON file's `positions` list, e.g. S of a planted-contamination job.

    Auditing a known set (documents the public model saw in its pretraining)
    asks whether the release leaks them beyond what the shared public model
    already knows. The file must describe this job's training split: when it
    records `n_train`, that must equal the split's size. Positions only, never
    text, so an error can name the file and field freely.
    """
    where = f"audit.target_positions={path}"
    try:
        found = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{where}: no such file; give the path of a JSON file with a 'positions' list") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{where}: not a readable JSON file ({type(exc).__name__}); fix or regenerate it") from None
    positions = found.get("positions") if isinstance(found, dict) else None
    if not isinstance(positions, list) or not positions or not all(type(p) is int for p in positions):
        raise ConfigError(f"{where}: field 'positions' must be a non-empty list of integers (training positions)")
    recorded = found.get("n_train")
    if recorded is not None and recorded != n_train:
        raise ConfigError(
            f"{where}: field 'n_train' is {recorded} but this job's training split has {n_train} documents; "
            "use the dataset settings and seed of the job that wrote the file"
        )
    targets = np.unique(np.asarray(positions, dtype=np.int64))
    if len(targets) != len(positions) or targets[0] < 0 or targets[-1] >= n_train:
        raise ConfigError(
            f"{where}: field 'positions' must hold distinct positions in [0, {n_train}) of the training split"
        )
    return targets
