"""From attack scores and the design's membership truth to the audit's `results.json` figures.

Which number supports which claim:

- `eps_emp_lower` is the evidence: a one-sided lower bound on epsilon at
  `confidence`; above the nominal eps it shows a violation. It is the larger
  of two bounds, each computed at half the failure probability so the larger
  still holds at `confidence`:
  `eps_emp_lower_holdout` (choice on `select_share` of the targets, one
  test on the rest) and `eps_emp_lower_bonferroni` (every choice tested, Bonferroni).
  In `k_subsets` mode both are Clopper-Pearson bounds on the pooled
  run x target ROC (pooling treats a run's trials as independent; the block
  bootstrap in synbench.audit.repeats checks how far that holds); in
  `one_run` mode both are the Steinke-Nasr-Jagielski binomial bound, the
  number of guesses chosen on held-out targets or over a Bonferroni grid.
- `gdp_mu_lower` bounds Gaussian-DP's mu the same two ways (Mahloujifar et
  al. in one-run mode, Clopper-Pearson on the ROC otherwise) and
  `gdp_eps_lower` is the eps it implies at the audit's delta, which is a bound
  only for mechanisms whose privacy profile is Gaussian (DP-SGD, roughly).
- `eps_emp` is an estimate, not evidence: cross-fitted, unbiased under the
  null, unclipped. `eps_emp_max` is the old maximum over thresholds,
  optimistic (about 0.5 on random scores).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from synbench.audit.config import AuditConfig
from synbench.audit.crossfit import (
    OperatingPoint,
    cross_fitted_epsilon,
    epsilon_counts_bound,
    holdout_lower_bound,
    target_folds,
)
from synbench.audit.epsilon import bonferroni_epsilon_lower_bound, empirical_epsilon_curve
from synbench.audit.fdp import bonferroni_gdp_mu_lower_bound, gdp_mu_lower_bounds_from_counts, one_run_gdp_mu_lower_bounds
from synbench.audit.guesses import grid_bounds, grid_counts, guess_shares, holdout_bounds
from synbench.audit.one_run import one_run_epsilon_lower_bounds
from synbench.audit.roc import RocCurve
from synbench.errors import SynBenchError
from synbench.privacy import gdp_epsilon

KIND_NAMES = ("outliers", "canaries")
TYPE_KEYS = ("n_targets", "auc", "eps_emp", "eps_emp_lower", "gdp_mu_lower")  # reported per target type too


def bounds(scores: np.ndarray, members: np.ndarray, folds: np.ndarray, cfg: AuditConfig,
           delta: float) -> tuple[dict[str, float], OperatingPoint | None]:
    """The held-out and Bonferroni eps bounds, their maximum, and the GDP mu bound, each pair at half the level.

    `folds` is the held-out split: fold 0 chooses, fold 1 tests.
    """
    half = 1 - (1 - cfg.confidence) / 2
    if cfg.mode == "one_run":
        level = 1 - half

        def eps_game(m, r, v, alpha):
            return one_run_epsilon_lower_bounds(m, r, v, delta, alpha)

        holdout = float(holdout_bounds(scores, members, folds, cfg.guess_fractions, eps_game, level)[0])
        bonferroni = float(grid_bounds(scores, members, cfg.guess_fractions, eps_game, level)[0])
        mu = max(float(holdout_bounds(scores, members, folds, cfg.guess_fractions, one_run_gdp_mu_lower_bounds, level)[0]),
                 float(grid_bounds(scores, members, cfg.guess_fractions, one_run_gdp_mu_lower_bounds, level)[0]))
        _, point = holdout_lower_bound(scores, members, folds, epsilon_counts_bound(delta), half)
    else:
        roc = RocCurve.from_scores(scores, members)
        inner = slice(1, len(roc.tp) - 1)
        holdout, point = holdout_lower_bound(scores, members, folds, epsilon_counts_bound(delta), half)
        bonferroni = bonferroni_epsilon_lower_bound(roc.tp[inner], roc.fp[inner], roc.n_pos, roc.n_neg, delta, half)
        mu = max(holdout_lower_bound(scores, members, folds, gdp_mu_lower_bounds_from_counts, half)[0],
                 bonferroni_gdp_mu_lower_bound(roc.tp[inner], roc.fp[inner], roc.n_pos, roc.n_neg, half))
    out = {"eps_emp_lower_holdout": holdout, "eps_emp_lower_bonferroni": bonferroni,
           "eps_emp_lower": max(holdout, bonferroni), "gdp_mu_lower": mu,
           "gdp_eps_lower": gdp_epsilon(mu, delta) if mu > 0 and delta > 0 else (float("inf") if mu > 0 else 0.0)}
    return out, point


def one_run_best_guess(scores: np.ndarray, members: np.ndarray, cfg: AuditConfig) -> dict[str, int]:
    """The grid point with the most right guesses beyond chance: what the one-run audit's guesses were, for the record."""
    shares = guess_shares(cfg.guess_fractions)
    _, guesses, correct = grid_counts(scores, members, shares)
    best = int(np.argmax(2 * correct[0] - guesses[0]))
    return {"guesses": int(guesses[0, best]), "correct": int(correct[0, best])}


def _core(scores: np.ndarray, members: np.ndarray, cfg: AuditConfig, delta: float,
          seed: int) -> tuple[dict[str, Any], RocCurve, OperatingPoint | None]:
    roc = RocCurve.from_scores(scores, members)
    out: dict[str, Any] = {"n_targets": members.shape[1]}
    out.update(roc.summary(cfg.fpr_grid, cfg.recall_grid))
    out["eps_emp"] = cross_fitted_epsilon(scores, members, target_folds(members, seed), delta, cfg.min_count)
    out["eps_emp_max"] = empirical_epsilon_curve(roc, delta, cfg.min_count)
    found, point = bounds(scores, members, target_folds(members, seed + 1, cfg.select_share), cfg, delta)
    out.update(found)
    if cfg.mode == "one_run":
        out.update(one_run_best_guess(scores, members, cfg))
    return out, roc, point


def summarise(scores: np.ndarray, members: np.ndarray, cfg: AuditConfig, delta: float, kinds: np.ndarray | None = None,
              seed: int = 0) -> tuple[dict[str, Any], RocCurve, OperatingPoint | None]:
    """The audit figures for (runs x targets) `scores` and `members`, the ROC and the held-out operating point.

    With targets of both kinds (0 outlier, 1 canary) the core figures are
    repeated per kind as `outliers.<key>` and `canaries.<key>`. `seed` draws
    the target folds.
    """
    n_runs, n_targets = members.shape
    if members.all() or not members.any():
        raise SynBenchError(f"the audit design put all {members.size} target trials on one side of membership; "
                            "raise audit.n_targets or audit.n_canaries, or change the seed")
    out: dict[str, Any] = {"mode": cfg.mode, "n_runs": n_runs, "n_trials": int(members.size),
                           "n_member_trials": int(members.sum()), "delta": delta, "confidence": cfg.confidence}
    core, roc, point = _core(scores, members, cfg, delta, seed)
    out.update(core)
    kinds = np.zeros(n_targets, dtype=np.int8) if kinds is None else np.asarray(kinds)
    for code, name in enumerate(KIND_NAMES):
        cols = kinds == code
        out[f"n_{name}"] = int(cols.sum())
        if 0 < cols.sum() < n_targets and 0 < members[:, cols].sum() < members[:, cols].size:
            part, _, _ = _core(scores[:, cols], members[:, cols], cfg, delta, seed)
            out.update({f"{name}.{k}": part[k] for k in TYPE_KEYS})
    return out, roc, point
