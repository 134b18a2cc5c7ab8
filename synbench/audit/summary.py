"""From attack scores and the design's membership truth to the audit's `results.json` figures."""
from __future__ import annotations

from typing import Any

import numpy as np

from synbench.audit.config import AuditConfig
from synbench.audit.epsilon import empirical_epsilon_curve, empirical_epsilon_lower_bound
from synbench.audit.one_run import one_run_epsilon_lower_bound, one_run_guesses
from synbench.audit.roc import RocCurve
from synbench.errors import SynBenchError


def summarise(scores: np.ndarray, members: np.ndarray, cfg: AuditConfig, delta: float) -> tuple[dict[str, Any], RocCurve]:
    """The audit figures for (runs x targets) `scores` and `members`, and the ROC they come from.

    Both modes report the same keys. `eps_emp` is the point estimate over the
    pooled ROC (thresholds with at least `min_count` errors). `eps_emp_lower`
    is the Clopper-Pearson bound over that ROC in `k_subsets` mode (pooling
    run x target trials, as the paper does), and the Steinke-Nasr-Jagielski
    bound from the fixed k+ / k- guesses in `one_run` mode.
    """
    n_runs, n_targets = members.shape
    if members.all() or not members.any():
        raise SynBenchError(f"the audit design put all {members.size} target trials on one side of membership; "
                            "raise audit.n_targets or change the seed")
    roc = RocCurve.from_scores(scores, members)
    out: dict[str, Any] = {"mode": cfg.mode, "n_targets": n_targets, "n_runs": n_runs, "n_trials": int(members.size),
                           "n_member_trials": int(members.sum()), "delta": delta, "confidence": cfg.confidence}
    out.update(roc.summary(cfg.fpr_grid, cfg.recall_grid))
    out["eps_emp"] = empirical_epsilon_curve(roc, delta, cfg.min_count)
    if cfg.mode == "one_run":
        k_pos, k_neg = cfg.guesses(n_targets)
        guesses, correct = one_run_guesses(scores[0], members[0], k_pos, k_neg)
        out.update(guesses=guesses, correct=correct,
                   eps_emp_lower=one_run_epsilon_lower_bound(n_targets, guesses, correct, delta, cfg.confidence))
    else:
        out["eps_emp_lower"] = empirical_epsilon_lower_bound(roc, delta, cfg.confidence)
    return out, roc
