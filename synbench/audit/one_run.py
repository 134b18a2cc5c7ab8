"""The one-run audit of Steinke, Nasr & Jagielski (2023), "Privacy Auditing with One (1) Training Run".

Every target goes into the one private set independently with probability
1/2. After the single generator run the auditor guesses "member" for the k+
highest-scoring targets and "non-member" for the k- lowest, abstaining on the
rest; k+ and k- must not be tuned on the same scores (synbench.audit.guesses
chooses them on held-out targets or over a Bonferroni grid). Under (eps, 0)-DP each
guess is right with probability at most q = e^eps / (1 + e^eps), even given
all the other guesses, so the number of correct guesses V out of r is
stochastically dominated by Binomial(r, q) (their main theorem). delta > 0 adds
their 2 m delta alpha term (as in their code and ml_privacy_meter's
`p_value_DP_audit`). The eps lower bound is the largest eps whose
p-value is still below 1 - confidence. This replaces K generator runs by
one; the price is a weaker bound for the same number of targets.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit
from scipy.stats import binom

from synbench.audit.fdp import unique_games

BISECTION_STEPS = 60
DELTA_BLOCK = 128  # values of i summed at once in the delta term (`_delta_weight`)


def one_run_guesses(scores: np.ndarray, members: np.ndarray, k_pos: int, k_neg: int) -> tuple[int, int]:
    """(guesses made, guesses right) when the k_pos top scores are called members and the k_neg bottom ones not.

    Ties are broken by target order, which the design draws independently of
    membership, so tie-breaking cannot leak membership into the guesses.
    """
    scores = np.asarray(scores, dtype=float).ravel()
    members = np.asarray(members, dtype=bool).ravel()
    if k_pos < 0 or k_neg < 0 or k_pos + k_neg > scores.size:
        raise ValueError(
            f"k_pos={k_pos} and k_neg={k_neg} must be non-negative and sum to at most {scores.size} targets"
        )
    order = np.argsort(-scores, kind="stable")
    right = int(members[order[:k_pos]].sum()) + int((~members[order[scores.size - k_neg :]]).sum())
    return k_pos + k_neg, right


def _delta_weight(r: np.ndarray, v: np.ndarray, q: np.ndarray) -> np.ndarray:
    """max over 1 <= i <= v of (1 / i) sum_{j <= i} P[Binomial(r, q) = v - j], elementwise: the weight of
    Steinke et al.'s 2 m delta term.

    Summed in blocks of `DELTA_BLOCK` values of i, stopping once no later i
    can raise the maximum: every partial sum is at most
    C = P[Binomial(r, q) <= v - 1], so for i > C / max the ratio stays below
    the maximum found. The result is the full sum's, at the cost of the i near
    v that carry the mass (tens for a strong game, not v): a game of 10^4
    guesses, as the ceiling's larger designs (synbench.audit.ceiling), costs
    milliseconds instead of seconds.
    """
    weight, partial, total = np.zeros(v.shape), np.zeros(v.shape), None
    for start in range(1, int(v.max()) + 1, DELTA_BLOCK):
        if start > 1:  # a second block: worth it only while some game can still raise its maximum
            total = binom.cdf(v - 1, r, q) if total is None else total
            if np.all((start > v) | (total <= weight * start)):
                break
        i = np.arange(start, start + DELTA_BLOCK).reshape(-1, *([1] * v.ndim))  # (I, ...): every game at once
        inside = i <= v
        sums = partial + np.cumsum(np.where(inside, binom.pmf(v - i, r, q), 0.0), axis=0)
        weight = np.maximum(weight, np.where(inside, sums / i, 0.0).max(axis=0))
        partial = sums[-1]
    return weight


def one_run_p_values(
    m: np.ndarray, r: np.ndarray, v: np.ndarray, epsilon: np.ndarray, delta: float = 0.0
) -> np.ndarray:
    """`one_run_p_value` elementwise over broadcast arrays (no argument checks: the scalar version checks)."""
    m, r, v, epsilon = (np.asarray(a, dtype=float) for a in np.broadcast_arrays(m, r, v, epsilon))
    q = expit(epsilon)
    p = binom.sf(v - 1, r, q)
    if delta > 0 and v.size and v.max() > 0:
        p = p + 2 * m * delta * _delta_weight(r, v, q)
    return np.minimum(p, 1.0)


def one_run_p_value(m: int, r: int, v: int, epsilon: float, delta: float = 0.0) -> float:
    """P[at least v of r guesses right] if the mechanism were (epsilon, delta)-DP, with m targets in all."""
    if not 0 <= v <= r <= m:
        raise ValueError(f"need 0 <= correct ({v}) <= guesses ({r}) <= targets ({m})")
    return float(one_run_p_values(np.array(m), np.array(r), np.array(v), np.array(epsilon), delta))


def one_run_epsilon_lower_bounds(
    m: np.ndarray, r: np.ndarray, v: np.ndarray, delta: float = 0.0, alpha: float = 0.05
) -> np.ndarray:
    """The largest eps each game rejects at level alpha, 0 where none is rejected (vectorised bisection).

    The p-value grows with eps, so bisection finds the crossing; the returned
    end of the bracket always has p-value below alpha (conservative).
    """
    games, back = unique_games(m, r, v)
    m, r, v = games.T
    ok = one_run_p_values(m, r, v, np.zeros(m.shape), delta) < alpha
    lo, hi = np.zeros(m.shape), np.ones(m.shape)
    while True:
        grow = ok & (one_run_p_values(m, r, v, hi, delta) < alpha)
        if not grow.any():
            break
        lo, hi = np.where(grow, hi, lo), np.where(grow, 2 * hi, hi)
    for _ in range(BISECTION_STEPS):
        mid = (lo + hi) / 2
        below = one_run_p_values(m, r, v, mid, delta) < alpha
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return np.where(ok, lo, 0.0)[back]


def one_run_epsilon_lower_bound(m: int, r: int, v: int, delta: float = 0.0, *, confidence: float) -> float:
    """The largest eps that v right out of r guesses (m targets) rejects at `confidence`; 0 when none is rejected."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence={confidence} must lie strictly between 0 and 1")
    if not 0 <= v <= r <= m:
        raise ValueError(f"need 0 <= correct ({v}) <= guesses ({r}) <= targets ({m})")
    return float(one_run_epsilon_lower_bounds(np.array(m), np.array(r), np.array(v), delta, 1 - confidence))
