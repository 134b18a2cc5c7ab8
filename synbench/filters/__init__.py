"""Post-hoc filters of synthetic text (`filter=none | pyes_pno`, registry plugins under `synbench.filters`):
post-processing of DP output, so no budget.

A filter sees only the synthetic corpus and public models, never private
data (results say `filter.private_data_used: false`). `apply_filter` keeps
the chosen documents and has the job score them again, so one job reports
the metrics before (`utility`, `fidelity`) and after (`utility_filtered`,
`fidelity_filtered`) the filter.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from synbench.core import registry
from synbench.core.corpus import Corpus
from synbench.filters.base import Filter, NoFilter, Selection

log = logging.getLogger(__name__)
SCORES_FILE = "filter_scores.npy"
SUFFIX = "_filtered"
__all__ = ["SCORES_FILE", "SUFFIX", "Filter", "NoFilter", "Selection", "apply_filter"]


def apply_filter(
    node: Mapping[str, Any],
    synthetic: Corpus,
    job_dir: Path,
    results: dict[str, Any],
    score: Callable[[Corpus], list[str]],
) -> list[str]:
    """Filter `synthetic` with the plugin `node` names, record what was kept in `results["filter"]`, and score the
    kept corpus.

    Returns what `score` returns (the non-DP keys it wrote); nothing happens when the filter keeps all (`filter=none`).
    """
    name = str(node.get(registry.PLUGIN_KEY))
    chosen = registry.create(Filter, node).select(synthetic)
    if chosen is None:
        return []
    scores = chosen.scores
    if scores is not None:
        np.save(job_dir / SCORES_FILE, scores)  # scores of synthetic text: public, kept beside the synthetic corpus
    kept = synthetic.subset(chosen.keep, name=f"{synthetic.name}-filtered")
    kept_scores = scores[chosen.keep] if scores is not None else np.array([])
    results["filter"] = {
        "name": name,
        **chosen.record,
        "n_before": len(synthetic),
        "n_kept": len(kept),
        "private_data_used": False,
        "mean_score": float(np.mean(scores)) if scores is not None and len(scores) else None,
        "mean_score_kept": float(np.mean(kept_scores)) if len(kept_scores) else None,
    }
    log.info(
        "filter %s: kept %d of %d synthetic documents (mean score %.3f -> %.3f)",
        name,
        len(kept),
        len(synthetic),
        results["filter"]["mean_score"] or 0.0,
        results["filter"]["mean_score_kept"] or 0.0,
    )
    return score(kept)
