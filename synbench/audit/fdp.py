"""Gaussian-DP lower bounds: from a one-run guessing game and from ROC counts.

One run (Mahloujifar, Melis & Chaudhuri 2024, "Auditing f-Differential
Privacy in One Run", arXiv 2410.22235, Algorithm 3 with abstentions, k = 2
for membership): m targets, each in the private set by a fair coin; the
auditor guesses c' of them and gets c right. If the mechanism is f-DP, the
recursion below (their `audit_rh_with_cap`, as in Meta's PrivacyGuard
`FDPAnalysisNode` and jax_privacy's `_epsilon_one_run_fdp`) decides whether
c correct guesses have probability below tau; if they do, f is rejected at
level tau. With f the trade-off of mu-GDP, f_bar^-1(x) = Phi(Phi^-1(x) - mu),
and the largest rejected mu is `gdp_mu_lower`. Unlike the eps-DP binomial
bound of Steinke et al. it uses the whole shape of the trade-off curve, which
is tighter for mechanisms that really are near-Gaussian (DP-SGD).

ROC counts (Nasr et al. 2023, as jax_privacy's `epsilon_from_gdp`): a mu-GDP
test has FNR >= Phi(Phi^-1(1 - FPR) - mu), so
mu >= Phi^-1(1 - FPR_ub) - Phi^-1(FNR_ub) with Clopper-Pearson upper bounds.

Both are bounds on mu, not on an (eps, delta) pair: rejecting mu-GDP does not
reject (eps(mu, delta), delta)-DP, so the eps reported beside mu
(`gdp_eps_lower`) is a lower bound only for mechanisms whose privacy profile is
Gaussian. The assumption-free eps bound is `eps_emp_lower`.
Everything is vectorised over a batch of games so simulations are cheap.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr, ndtri

from synbench.audit.epsilon import clopper_pearson_upper

BISECTION_STEPS = 40  # from a bracket of width <= 256: error below 1e-9


def gdp_rejected(mu: np.ndarray, m: np.ndarray, guesses: np.ndarray, correct: np.ndarray, alpha: float) -> np.ndarray:
    """Whether mu-GDP is rejected at level alpha by `correct` of `guesses` guesses on m targets (elementwise).

    The recursion runs i = c - 1 .. 0 from r = alpha c / m, h = alpha (c' - c) / m:
    h <- max(h, f_bar^-1(r)), r <- min(r + i / (c' - i) * (h_new - h_old), 1);
    mu-GDP is rejected when r + h > c' / m at the end.
    """
    mu, m, guesses, correct = (np.asarray(a, dtype=float) for a in np.broadcast_arrays(mu, m, guesses, correct))
    r = alpha * correct / np.maximum(m, 1)
    h = alpha * (guesses - correct) / np.maximum(m, 1)
    top = int(correct.max(initial=0))
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(top - 1, -1, -1):
            active = i < correct
            h_new = np.where(active, np.maximum(h, ndtr(ndtri(np.clip(r, 0.0, 1.0)) - mu)), h)
            if active.all() and np.array_equal(h_new, h):
                break  # an unchanged h leaves r unchanged, and so on to the end: the result is fixed
            r = np.where(active, np.minimum(r + i / np.maximum(guesses - i, 1) * (h_new - h), 1.0), r)
            h = h_new
    return r + h > guesses / np.maximum(m, 1)


def unique_games(*arrays: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (m, guesses, correct) rows of broadcast arrays, and the index that maps them back (same shape).

    A batch of simulated or grid games repeats the same counts many times;
    each bound is computed once per distinct game.
    """
    stacked = np.stack([np.asarray(a, dtype=float).ravel() for a in np.broadcast_arrays(*arrays)], axis=1)
    games, back = np.unique(stacked, axis=0, return_inverse=True)
    return games, back.reshape(np.broadcast_shapes(*(np.shape(a) for a in arrays)))


def one_run_gdp_mu_lower_bounds(m: np.ndarray, guesses: np.ndarray, correct: np.ndarray, alpha: float) -> np.ndarray:
    """The largest mu that each game rejects at level alpha (0 where mu = 0 is not rejected), by bisection.

    Rejection is monotone in mu (a larger mu makes f_bar^-1 smaller), so the
    returned lower end of the bracket is always rejected (conservative).
    """
    games, back = unique_games(m, guesses, correct)
    m, guesses, correct = games.T
    ok = gdp_rejected(np.zeros(m.shape), m, guesses, correct, alpha)
    lo, hi = np.zeros(m.shape), np.ones(m.shape)
    for _ in range(8):  # grow hi to an unrejected mu (mu = 256 covers any audit of realistic size)
        grow = ok & gdp_rejected(hi, m, guesses, correct, alpha)
        if not grow.any():
            break
        lo, hi = np.where(grow, hi, lo), np.where(grow, 2 * hi, hi)
    for _ in range(BISECTION_STEPS):
        mid = (lo + hi) / 2
        rej = gdp_rejected(mid, m, guesses, correct, alpha)
        lo, hi = np.where(rej, mid, lo), np.where(rej, hi, mid)
    return np.where(ok, lo, 0.0)[back]


def one_run_gdp_mu_lower_bound(m: int, guesses: int, correct: int, confidence: float) -> float:
    """`gdp_mu_lower` of one one-run game: the largest mu that `correct` of `guesses` guesses reject at `confidence`."""
    if not 0 <= correct <= guesses <= m:
        raise ValueError(f"need 0 <= correct ({correct}) <= guesses ({guesses}) <= targets ({m})")
    return float(
        one_run_gdp_mu_lower_bounds(np.array([m]), np.array([guesses]), np.array([correct]), 1 - confidence)[0]
    )


def gdp_mu_lower_bounds_from_counts(tp: np.ndarray, fp: np.ndarray, n_pos: int, n_neg: int, alpha: float) -> np.ndarray:
    """Per threshold, Phi^-1(1 - FPR_ub) - Phi^-1(FNR_ub) with Clopper-Pearson bounds failing with alpha each; >= 0.

    The bound grows as either rate's upper bound falls, so plugging in upper
    bounds keeps it a lower bound on mu whenever both intervals hold.
    """
    tp, fp = np.atleast_1d(np.asarray(tp)), np.atleast_1d(np.asarray(fp))
    fpr_ub = clopper_pearson_upper(fp, n_neg, alpha)
    fnr_ub = clopper_pearson_upper(n_pos - tp, n_pos, alpha)
    with np.errstate(divide="ignore"):
        mu = ndtri(1 - fpr_ub) - ndtri(fnr_ub)
    return np.maximum(np.nan_to_num(mu, nan=0.0, neginf=0.0), 0.0)


def bonferroni_gdp_mu_lower_bound(tp: np.ndarray, fp: np.ndarray, n_pos: int, n_neg: int, confidence: float) -> float:
    """The largest ROC mu bound over the given thresholds, Bonferroni over their 2 T intervals."""
    tp = np.atleast_1d(np.asarray(tp))
    if tp.size == 0:
        return 0.0
    return float(gdp_mu_lower_bounds_from_counts(tp, fp, n_pos, n_neg, (1 - confidence) / (2 * tp.size)).max())
