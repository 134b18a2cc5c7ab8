"""Choose on one half of the targets, measure on the other: an unbiased eps estimate and a held-out bound.

The maximum of log(TPR / FPR) over thresholds is biased upwards: on random
scores its mean is about 0.5 at any sample size, because some noisy tail
threshold always looks good. Splitting the targets (all runs of a target on
the same side, since they share the target's text) into two seeded folds
drawn without looking at membership removes the selection: the threshold and the inequality are chosen on one
fold and evaluated on the other, then the folds swap.

- `cross_fitted_epsilon`: the mean of the two held-out point estimates,
  unclipped (negative under the null half the time, so its mean is near 0),
  with half a count added to each rate so one empty cell stays finite. The
  rule (attack, threshold, inequality) is chosen on the choosing fold by
  `CROSSFIT_RULES`: `lower_bound` (the default) takes the highest
  Clopper-Pearson lower bound there, which prefers rules whose counts are
  large enough to be trusted; `estimate` (the old rule) the highest smoothed
  point estimate, which a noisy tail threshold wins as often as a real one.
- `holdout_lower_bound`: the Clopper-Pearson bound at the one threshold
  chosen on a selection fold (a quarter of the targets by default: the
  bound gains more from test trials than the choice from selection ones) and
  tested once on the rest, so it needs no multiplicity correction at all;
  the same for the GDP mu bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from synbench.audit.config import CROSSFIT_RULES
from synbench.audit.epsilon import epsilon_lower_bounds_from_counts
from synbench.audit.roc import RocCurve

CountsBound = Callable[
    [np.ndarray, np.ndarray, int, int, float], np.ndarray
]  # (tp, fp, n_pos, n_neg, alpha) -> per threshold


def target_folds(kinds: np.ndarray, seed: int, share: float = 0.5) -> np.ndarray:
    """(T,) fold index per target: 0 for a seeded `share` of each target kind, 1 for the rest.

    The folds come from a seeded permutation that never sees membership:
    Steinke et al.'s guesses need coins the guesser cannot predict, and a
    split balanced by membership lets the selection fold's member share
    predict the test fold's (the guess count chosen there exploits it). Only
    the target kind (0 outlier, 1 canary: public, fixed by the design before
    any coin) stratifies, so both folds hold both kinds in proportion. The
    split never looks at scores either.
    """
    kinds = np.asarray(kinds)
    if kinds.ndim != 1 or kinds.dtype == bool:
        raise TypeError(f"target_folds takes the targets' kinds, shape (T,), never membership (got {kinds.shape})")
    order = np.random.default_rng([seed, 0xF01D]).permutation(kinds.size)
    ranked = order[np.argsort(kinds[order], kind="stable")]  # shuffled within each kind, the kinds in turn
    sorted_kinds = kinds[ranked]
    dealt = np.arange(kinds.size) - np.searchsorted(sorted_kinds, sorted_kinds, side="left")  # rank within its kind
    folds = np.empty(kinds.size, dtype=np.int8)
    folds[ranked] = np.where(np.floor((dealt + 1) * share) > np.floor(dealt * share), 0, 1)
    return folds


def fold_roc(scores: np.ndarray, members: np.ndarray, columns: np.ndarray) -> RocCurve | None:
    """The ROC of the targets in `columns` (all runs), or None when they hold only one class."""
    s, m = np.atleast_2d(scores)[:, columns], np.atleast_2d(members)[:, columns]
    return RocCurve.from_scores(s, m) if 0 < m.sum() < m.size else None


def counts_at(threshold: float, scores: np.ndarray, members: np.ndarray) -> tuple[int, int, int, int]:
    """(tp, fp, n_pos, n_neg) of the rule "member iff score >= threshold"."""
    flagged = scores >= threshold
    return int((flagged & members).sum()), int((flagged & ~members).sum()), int(members.sum()), int((~members).sum())


def smoothed_log_ratios(tp: np.ndarray, fp: np.ndarray, n_pos: int, n_neg: int, delta: float) -> np.ndarray:
    """(2, thresholds): log((TPR - delta) / FPR) and log((TNR - delta) / FNR), half a count added to every cell."""
    tpr, fpr = (tp + 0.5) / (n_pos + 1), (fp + 0.5) / (n_neg + 1)
    tnr, fnr = 1 - fpr, 1 - tpr
    return np.stack(
        [
            np.log(np.maximum(tpr - delta, 0.5 / (n_pos + 1))) - np.log(fpr),
            np.log(np.maximum(tnr - delta, 0.5 / (n_neg + 1))) - np.log(fnr),
        ]
    )


@dataclass(frozen=True)
class OperatingPoint:
    """A threshold chosen on one fold and evaluated on the other: what the ROC plot marks."""

    threshold: float
    fpr: float
    tpr: float
    bound: float


def _best_rule(
    roc: RocCurve, delta: float, min_count: int, rule: str, confidence: float
) -> tuple[tuple[float, float], int, int]:
    """((ranking value, smoothed estimate), inequality, threshold row) of the best rule on `roc`.

    `rule="estimate"` ranks by the smoothed estimate among thresholds with at
    least `min_count` errors behind the denominator (a noisy tail threshold
    would win otherwise). `rule="lower_bound"` ranks every threshold by its
    one-sided Clopper-Pearson lower bound at `confidence` (each rate at
    (1 - confidence) / 2, as `epsilon_lower_bounds_from_counts`): few counts
    lower a bound by themselves, so it needs no cap. Ties go to the higher
    estimate, then to the first.
    """
    estimate = smoothed_log_ratios(roc.tp, roc.fp, roc.n_pos, roc.n_neg, delta)
    if rule == "estimate":
        enough = np.stack([roc.fp >= min_count, roc.n_pos - roc.tp >= min_count])
        estimate = ranking = np.where(enough, estimate, -np.inf)
    elif rule == "lower_bound":
        alpha = (1 - confidence) / 2
        ranking = epsilon_lower_bounds_from_counts(roc.tp, roc.fp, roc.n_pos, roc.n_neg, delta, alpha)
    else:
        raise ValueError(f"crossfit rule {rule!r} is unknown; choose one of {', '.join(CROSSFIT_RULES)}")
    top = np.where(ranking == ranking.max(), estimate, -np.inf)
    side, row = np.unravel_index(np.argmax(top), top.shape)
    return (float(ranking[side, row]), float(estimate[side, row])), int(side), int(row)


def cross_fitted_epsilon(
    scores: np.ndarray | Sequence[np.ndarray],
    members: np.ndarray,
    folds: np.ndarray,
    delta: float = 0.0,
    *,
    min_count: int,
    rule: str,
    confidence: float,
) -> float:
    """Mean over the two folds of the held-out point estimate of the rule chosen on the other.

    `scores` is one (runs x targets) array or one per attack. The rule, the
    attack with its threshold and inequality, maximises on the choosing fold
    the lower bound at `confidence` (`rule="lower_bound"`, every threshold)
    or the smoothed estimate (`rule="estimate"`, the old rule, among
    thresholds with at least `min_count` errors behind the denominator, as
    `empirical_epsilon_curve`), and is measured once, by the smoothed
    estimate, on the other fold: the choice
    sees only the choosing fold, so choosing the attack inside the cross-fit
    keeps the estimate centred on 0 under the null however many attacks run.
    """
    arrays = [scores] if isinstance(scores, np.ndarray) else list(scores)
    members = np.atleast_2d(members).astype(bool)
    values = []
    for pick in (0, 1):
        evaluate = folds != pick
        m = members[:, evaluate]
        rocs = [fold_roc(a, members, folds == pick) for a in arrays]
        if any(roc is None for roc in rocs) or m.all() or not m.any():
            continue
        rules = [_best_rule(roc, delta, min_count, rule, confidence) for roc in rocs]
        attack = max(range(len(rules)), key=lambda a: rules[a][0])  # (ranking, estimate); the first of equals
        _, side, row = rules[attack]
        tp, fp, n_pos, n_neg = counts_at(rocs[attack].thresholds[row], np.atleast_2d(arrays[attack])[:, evaluate], m)
        values.append(float(smoothed_log_ratios(np.array(tp), np.array(fp), n_pos, n_neg, delta)[side]))
    return float(np.mean(values)) if values else 0.0


def holdout_lower_bound(
    scores: np.ndarray, members: np.ndarray, folds: np.ndarray, bound: CountsBound, confidence: float
) -> tuple[float, OperatingPoint | None]:
    """The bound at the threshold chosen on fold 0, tested on fold 1 at `confidence`, and that operating point."""
    value, point, _ = holdout_selection(scores, members, folds, bound, confidence)
    return value, point


def holdout_selection(
    scores: np.ndarray, members: np.ndarray, folds: np.ndarray, bound: CountsBound, confidence: float
) -> tuple[float, OperatingPoint | None, float]:
    """(test bound, operating point, the best bound on fold 0 that chose it); the last is -inf when nothing was chosen.

    `bound(tp, fp, n_pos, n_neg, alpha)` gives a per-threshold bound from two
    one-sided intervals at `alpha` each; the threshold is the one whose bound
    is largest on fold 0 at the same level. The fold-0 value depends on fold-0
    targets only, so choosing among attacks by it is a held-out choice too.
    """
    alpha = (1 - confidence) / 2  # the test's two intervals
    scores, members = np.atleast_2d(scores), np.atleast_2d(members).astype(bool)
    roc, s, m = fold_roc(scores, members, folds == 0), scores[:, folds == 1], members[:, folds == 1]
    if roc is None or len(roc.tp) < 3 or m.all() or not m.any():  # nothing to choose from, or nothing to test on
        return 0.0, None, -np.inf
    inner = slice(1, len(roc.tp) - 1)
    on_selection = bound(roc.tp[inner], roc.fp[inner], roc.n_pos, roc.n_neg, alpha)
    row = 1 + int(np.argmax(on_selection))
    tp, fp, n_pos, n_neg = counts_at(roc.thresholds[row], s, m)
    value = max(float(bound(np.array([tp]), np.array([fp]), n_pos, n_neg, alpha)[0]), 0.0)
    return value, OperatingPoint(float(roc.thresholds[row]), fp / n_neg, tp / n_pos, value), float(on_selection.max())


def epsilon_counts_bound(delta: float) -> CountsBound:
    """The eps bound per threshold (the larger of the two inequalities) at this delta."""
    return lambda tp, fp, n_pos, n_neg, alpha: epsilon_lower_bounds_from_counts(tp, fp, n_pos, n_neg, delta, alpha).max(
        axis=0
    )
