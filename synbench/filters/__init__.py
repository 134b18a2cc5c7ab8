"""Post-hoc filters of synthetic text (`filter=none | pyes_pno`): post-processing of DP output, so no budget.

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

from synbench.corpus import Corpus
from synbench.errors import ConfigError
from synbench.filters.pyes_pno import PYesPNoConfig, keep_top, pyes_pno_scores

log = logging.getLogger(__name__)
FILTERS = ("none", "pyes_pno")
SCORES_FILE = "filter_scores.npy"
SUFFIX = "_filtered"


def apply_filter(node: Mapping[str, Any], synthetic: Corpus, job_dir: Path, results: dict[str, Any],
                 score: Callable[[Corpus], list[str]]) -> list[str]:
    """Filter `synthetic` as `node` says, record what was kept in `results["filter"]`, and score the kept corpus.

    Returns what `score` returns (the non-DP keys it wrote); nothing happens for `filter=none`.
    """
    node = dict(node)
    name = node.pop("name", "none")
    if name not in FILTERS:
        raise ConfigError(f"filter={name!r} is unknown; choose one of {', '.join(FILTERS)}")
    if name == "none":
        return []
    cfg = PYesPNoConfig.from_node(node)
    scores = pyes_pno_scores(cfg, synthetic)
    np.save(job_dir / SCORES_FILE, scores)  # scores of synthetic text: public, kept beside the synthetic corpus
    keep = keep_top(scores, synthetic.labels, cfg.keep_share, cfg.per_label)
    kept = synthetic.subset(keep, name=f"{synthetic.name}-filtered")
    results["filter"] = {"name": name, "keep_share": cfg.keep_share, "per_label": cfg.per_label, "domain": cfg.domain,
                         "n_before": len(synthetic), "n_kept": len(kept), "private_data_used": False,
                         "mean_score": float(np.mean(scores)) if len(scores) else None,
                         "mean_score_kept": float(np.mean(scores[keep])) if len(keep) else None}
    log.info("filter %s: kept %d of %d synthetic documents (P(yes) - P(no) mean %.3f -> %.3f)", name, len(kept),
             len(synthetic), results["filter"]["mean_score"] or 0.0, results["filter"]["mean_score_kept"] or 0.0)
    return score(kept)
