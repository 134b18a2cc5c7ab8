"""Empirical epsilon: the privacy loss an attack's ROC proves, as a point estimate and as a bound.

An (eps, delta)-DP mechanism forces every membership test to satisfy
TPR <= e^eps FPR + delta and 1 - FPR <= e^eps (1 - TPR) + delta
(Kairouz, Oh & Viswanath 2015). Solving for eps at one ROC point gives
`empirical_epsilon`; the attack may pick its threshold, so the curve
version takes the maximum over thresholds.

A point estimate from a few hundred targets is noise around the truth, so a
claim that a generator violates its nominal eps needs a bound that holds
with stated confidence. `empirical_epsilon_lower_bound` replaces each rate by
its one-sided Clopper-Pearson bound (upper on FPR, lower on TPR; Jagielski
et al. 2020, Nasr et al. 2021) and divides the failure probability over every
threshold the maximum looks at and both inequalities (Bonferroni, as
jax_privacy's `CanaryScoreAuditor.epsilon_lower_bound`), so the maximum
itself, not just one pre-chosen threshold, holds at the stated confidence.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import beta

from synbench.audit.roc import RocCurve


def _log_ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """log(num / den), with -inf where num <= 0 (the inequality says nothing) and +inf where only den is 0."""
    num, den = np.broadcast_arrays(np.asarray(num, dtype=float), np.asarray(den, dtype=float))
    out = np.full(num.shape, -np.inf)
    pos = num > 0
    out[pos & (den <= 0)] = np.inf
    ok = pos & (den > 0)
    out[ok] = np.log(num[ok]) - np.log(den[ok])
    return out


def empirical_epsilon(fpr: float | np.ndarray, tpr: float | np.ndarray, delta: float = 0.0) -> float | np.ndarray:
    """max(log((TPR - delta) / FPR), log((1 - delta - FPR) / (1 - TPR))), at least 0, per ROC point.

    A zero denominator with a positive numerator is an infinite epsilon (no
    eps-DP mechanism has that point); a non-positive numerator proves nothing.
    `empirical_epsilon(0.1, 0.38, 0)` is log 3.8 = 1.335, the paper's example.
    """
    fpr, tpr = np.asarray(fpr, dtype=float), np.asarray(tpr, dtype=float)
    eps = np.maximum(np.maximum(_log_ratio(tpr - delta, fpr), _log_ratio(1 - delta - fpr, 1 - tpr)), 0.0)
    return float(eps) if eps.ndim == 0 else eps


def empirical_epsilon_curve(roc: RocCurve, delta: float, min_count: int) -> float:
    """The largest `empirical_epsilon` over the curve's thresholds.

    `min_count` skips a threshold's inequality when its denominator rests on
    fewer than that many errors (false positives for the TPR/FPR side, false
    negatives for the other), as jax_privacy's `epsilon_raw_counts` does: with
    `min_count=0` one lucky top-ranked target makes the estimate infinite.
    """
    fn = roc.n_pos - roc.tp
    upper = np.where(roc.fp >= min_count, _log_ratio(roc.tpr - delta, roc.fpr), -np.inf)
    lower = np.where(fn >= min_count, _log_ratio(1 - delta - roc.fpr, fn / roc.n_pos), -np.inf)
    return float(max(upper.max(), lower.max(), 0.0))


def clopper_pearson_upper(k: np.ndarray, n: int, alpha: float) -> np.ndarray:
    """One-sided upper bound on a binomial rate after k successes in n trials, failing with probability alpha."""
    k = np.asarray(k)
    # beta.ppf is undefined for k == n (its second shape parameter is 0); the bound there is 1.
    return np.where(k >= n, 1.0, beta.ppf(1 - alpha, k + 1, np.maximum(n - k, 1)))


def epsilon_lower_bounds_from_counts(
    tp: np.ndarray, fp: np.ndarray, n_pos: int, n_neg: int, delta: float = 0.0, alpha: float = 0.05
) -> np.ndarray:
    """Per threshold and inequality, an epsilon lower bound from confusion counts: shape (2, thresholds).

    Row 0 bounds log((TPR_lb - delta) / FPR_ub), row 1 log((TNR_lb - delta) / FNR_ub),
    from one-sided Clopper-Pearson intervals on FPR and FNR, each failing with
    probability `alpha`; both rows share them, so all of one threshold's
    entries hold together with probability at least 1 - 2 alpha. The caller
    divides alpha over the thresholds it searches: `bonferroni_epsilon_lower_bound`
    over all of them, the held-out bound over none (synbench.audit.crossfit).
    """
    tp, fp = np.atleast_1d(np.asarray(tp)), np.atleast_1d(np.asarray(fp))
    fpr_ub = clopper_pearson_upper(fp, n_neg, alpha)
    fnr_ub = clopper_pearson_upper(n_pos - tp, n_pos, alpha)
    return np.stack([_log_ratio(1 - fnr_ub - delta, fpr_ub), _log_ratio(1 - fpr_ub - delta, fnr_ub)])


def bonferroni_epsilon_lower_bound(
    tp: np.ndarray, fp: np.ndarray, n_pos: int, n_neg: int, delta: float = 0.0, *, confidence: float
) -> float:
    """The largest bound over the given thresholds and both inequalities, with Bonferroni over all of them.

    Each of the 2 T one-sided intervals (FPR and FNR at T thresholds) fails
    with probability (1 - confidence) / (2 T), so the maximum holds at
    `confidence` however the threshold was picked.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence={confidence} must lie strictly between 0 and 1")
    tp = np.atleast_1d(np.asarray(tp))
    if tp.size == 0:
        return 0.0
    alpha = (1 - confidence) / (2 * tp.size)
    return float(max(epsilon_lower_bounds_from_counts(tp, fp, n_pos, n_neg, delta, alpha).max(), 0.0))


def empirical_epsilon_lower_bound(roc: RocCurve, delta: float = 0.0, *, confidence: float) -> float:
    """An epsilon that the mechanism exceeds with probability at least `confidence` (0 when nothing is proven).

    Uses the thresholds strictly between "flag nothing" and "flag
    everything" (those two bound nothing) and spends (1 - confidence) / (2 T)
    on each of the 2 T intervals, T the number of those thresholds
    (`bonferroni_epsilon_lower_bound`). With n_pos members and n_neg
    non-members the largest possible value, at a perfect separation, is
    log((a^(1/n_pos) - delta) / (1 - a^(1/n_neg))) with a = (1 - confidence) / (2 T):
    the sample size caps what an audit can prove.
    """
    inner = slice(1, len(roc.tp) - 1)
    return bonferroni_epsilon_lower_bound(
        roc.tp[inner], roc.fp[inner], roc.n_pos, roc.n_neg, delta, confidence=confidence
    )
