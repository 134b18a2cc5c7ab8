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
- Several attacks (`attack=[ngram,similarity]`): each attack's figures
  are reported under its name (`ngram.eps_emp_lower`, ...), each a valid
  bound for that attack alone. The headline `eps_emp_lower` combines them
  and still holds at `confidence`: its Bonferroni part spreads the level
  over every (attack, threshold or guess count) it tests, and its held-out
  part picks the attack together with the threshold or guess count on the
  selection fold and tests that one choice on the other targets. Nothing is
  chosen on the targets it is then tested on. The other headline figures
  (AUC, eps_emp, ...) are those of the attack the held-out part chose
  (`attack_chosen`).
- `eps_emp` is an estimate, not evidence: cross-fitted, unbiased under the
  null, unclipped. `eps_emp_max` is the old maximum over thresholds,
  optimistic (about 0.5 on random scores).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from synbench.audit.config import AuditConfig
from synbench.audit.crossfit import (
    OperatingPoint,
    cross_fitted_epsilon,
    epsilon_counts_bound,
    holdout_selection,
    target_folds,
)
from synbench.audit.epsilon import bonferroni_epsilon_lower_bound, empirical_epsilon_curve
from synbench.audit.fdp import (
    bonferroni_gdp_mu_lower_bound,
    gdp_mu_lower_bounds_from_counts,
    one_run_gdp_mu_lower_bounds,
)
from synbench.audit.guesses import GameBound, grid_bounds, grid_counts, guess_shares, holdout_selected
from synbench.audit.one_run import one_run_epsilon_lower_bounds
from synbench.audit.roc import RocCurve
from synbench.errors import SynBenchError
from synbench.privacy import gdp_epsilon

KIND_NAMES = ("outliers", "canaries")
TYPE_KEYS = ("n_targets", "auc", "eps_emp", "eps_emp_lower", "gdp_mu_lower")  # reported per target type too
ATTACK_KEYS = ("auc", "eps_emp", "eps_emp_lower", "eps_emp_lower_holdout", "eps_emp_lower_bonferroni", "gdp_mu_lower")
Scores = np.ndarray | Mapping[str, np.ndarray]  # (runs x targets), or one such array per attack


def _one_run_pair(
    scores: Sequence[np.ndarray],
    members: np.ndarray,
    folds: np.ndarray,
    cfg: AuditConfig,
    bound: GameBound,
    alpha: float,
) -> tuple[float, float, int]:
    """(held-out, Bonferroni) one-run bounds over attacks at level alpha each, and the attack the held-out part chose.

    Held-out: the attack and the guess counts with the best bound on fold 0,
    tested on fold 1. Bonferroni: every attack's grid at alpha / attacks.
    """
    stacked = np.concatenate([np.atleast_2d(s) for s in scores])  # one game per attack
    wide = np.broadcast_to(np.atleast_2d(members), stacked.shape)
    on_selection, tested = holdout_selected(stacked, wide, folds, cfg.guess_fractions, bound, alpha)
    chosen = int(np.argmax(on_selection))
    bonferroni = float(grid_bounds(stacked, wide, cfg.guess_fractions, bound, alpha / len(stacked)).max())
    return float(tested[chosen]), bonferroni, chosen


def _roc_pair(
    scores: Sequence[np.ndarray], members: np.ndarray, folds: np.ndarray, counts_bound, bonferroni, confidence: float
) -> tuple[float, float, int, OperatingPoint | None]:
    """(held-out, Bonferroni) ROC bounds over attacks at `confidence` each, the chosen attack and its operating point.

    Bonferroni spreads the level over the inner thresholds of every attack's
    ROC at once (they share the trials, so their counts concatenate).
    """
    chosen_by = [holdout_selection(s, members, folds, counts_bound, confidence) for s in scores]
    chosen = int(np.argmax([c[2] for c in chosen_by]))
    rocs = [RocCurve.from_scores(s, members) for s in scores]
    tp = np.concatenate([r.tp[1 : len(r.tp) - 1] for r in rocs])
    fp = np.concatenate([r.fp[1 : len(r.fp) - 1] for r in rocs])
    return (
        chosen_by[chosen][0],
        bonferroni(tp, fp, rocs[0].n_pos, rocs[0].n_neg, confidence),
        chosen,
        chosen_by[chosen][1],
    )


def bounds(
    scores: np.ndarray | Sequence[np.ndarray], members: np.ndarray, folds: np.ndarray, cfg: AuditConfig, delta: float
) -> tuple[dict[str, float], OperatingPoint | None, int]:
    """The held-out and Bonferroni eps bounds, their maximum, and the GDP mu bound, each pair at half the level.

    `scores` is one (runs x targets) array or a sequence of them, one per
    attack; the bounds then combine the attacks and still hold at
    `cfg.confidence`. `folds` is the held-out split: fold 0 chooses, fold 1
    tests. Also returns the operating point and the index of the attack the
    held-out eps bound chose.
    """
    scores = [scores] if isinstance(scores, np.ndarray) else list(scores)
    half = 1 - (1 - cfg.confidence) / 2
    if cfg.mode == "one_run":
        level = 1 - half

        def eps_game(m, r, v, alpha):
            return one_run_epsilon_lower_bounds(m, r, v, delta, alpha)

        holdout, bonferroni, chosen = _one_run_pair(scores, members, folds, cfg, eps_game, level)
        mu = max(_one_run_pair(scores, members, folds, cfg, one_run_gdp_mu_lower_bounds, level)[:2])
        point = holdout_selection(scores[chosen], members, folds, epsilon_counts_bound(delta), half)[1]
    else:
        holdout, bonferroni, chosen, point = _roc_pair(
            scores,
            members,
            folds,
            epsilon_counts_bound(delta),
            lambda tp, fp, n_pos, n_neg, c: bonferroni_epsilon_lower_bound(tp, fp, n_pos, n_neg, delta, c),
            half,
        )
        mu = max(
            _roc_pair(scores, members, folds, gdp_mu_lower_bounds_from_counts, bonferroni_gdp_mu_lower_bound, half)[:2]
        )
    out = {
        "eps_emp_lower_holdout": holdout,
        "eps_emp_lower_bonferroni": bonferroni,
        "eps_emp_lower": max(holdout, bonferroni),
        "gdp_mu_lower": mu,
        "gdp_eps_lower": gdp_epsilon(mu, delta) if mu > 0 and delta > 0 else (float("inf") if mu > 0 else 0.0),
    }
    return out, point, chosen


def one_run_best_guess(scores: np.ndarray, members: np.ndarray, cfg: AuditConfig) -> dict[str, int]:
    """The grid point with the most right guesses beyond chance: what the one-run audit's guesses were, for the
    record."""
    shares = guess_shares(cfg.guess_fractions)
    _, guesses, correct = grid_counts(scores, members, shares)
    best = int(np.argmax(2 * correct[0] - guesses[0]))
    return {"guesses": int(guesses[0, best]), "correct": int(correct[0, best])}


def _core(
    scores: Sequence[np.ndarray], members: np.ndarray, cfg: AuditConfig, delta: float, seed: int
) -> tuple[dict[str, Any], RocCurve, OperatingPoint | None, int]:
    """The figures of one set of targets: bounds over all attacks, the rest from the attack the bounds chose."""
    found, point, chosen = bounds(scores, members, target_folds(members, seed + 1, cfg.select_share), cfg, delta)
    own = scores[chosen]
    roc = RocCurve.from_scores(own, members)
    out: dict[str, Any] = {"n_targets": members.shape[1]}
    out.update(roc.summary(cfg.fpr_grid, cfg.recall_grid))
    out["eps_emp"] = cross_fitted_epsilon(own, members, target_folds(members, seed), delta, cfg.min_count)
    out["eps_emp_max"] = empirical_epsilon_curve(roc, delta, cfg.min_count)
    out.update(found)
    if cfg.mode == "one_run":
        out.update(one_run_best_guess(own, members, cfg))
    return out, roc, point, chosen


def summarise(
    scores: Scores, members: np.ndarray, cfg: AuditConfig, delta: float, kinds: np.ndarray | None = None, seed: int = 0
) -> tuple[dict[str, Any], RocCurve, OperatingPoint | None]:
    """The audit figures for (runs x targets) `scores` and `members`, the ROC and the held-out operating point.

    `scores` may map attack names to their scores; with more than one attack
    each one's figures are added as `<attack>.<key>` and the headline bounds
    combine them (module docstring). With targets of both kinds (0 outlier,
    1 canary) the core figures are repeated per kind as `outliers.<key>` and
    `canaries.<key>`. `seed` draws the target folds.
    """
    named = dict(scores) if isinstance(scores, Mapping) else {"": scores}
    arrays = [np.atleast_2d(np.asarray(s, dtype=float)) for s in named.values()]
    n_runs, n_targets = members.shape
    if members.all() or not members.any():
        raise SynBenchError(
            f"the audit design put all {members.size} target trials on one side of membership; "
            "raise audit.n_targets or audit.n_canaries, or change the seed"
        )
    out: dict[str, Any] = {
        "mode": cfg.mode,
        "n_runs": n_runs,
        "n_trials": int(members.size),
        "n_member_trials": int(members.sum()),
        "delta": delta,
        "confidence": cfg.confidence,
    }
    core, roc, point, chosen = _core(arrays, members, cfg, delta, seed)
    out.update(core)
    if len(arrays) > 1:
        out["attack_chosen"] = list(named)[chosen]
        for name, own in zip(named, arrays):
            alone = _core([own], members, cfg, delta, seed)[0]
            out.update({f"{name}.{k}": alone[k] for k in ATTACK_KEYS})
    kinds = np.zeros(n_targets, dtype=np.int8) if kinds is None else np.asarray(kinds)
    for code, name in enumerate(KIND_NAMES):
        cols = kinds == code
        out[f"n_{name}"] = int(cols.sum())
        if 0 < cols.sum() < n_targets and 0 < members[:, cols].sum() < members[:, cols].size:
            part = _core([a[:, cols] for a in arrays], members[:, cols], cfg, delta, seed)[0]
            out.update({f"{name}.{k}": part[k] for k in TYPE_KEYS})
    return out, roc, point
