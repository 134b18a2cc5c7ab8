"""The paper's reading of an audit, calibrated under the null: how often it "violates" an exactly eps-DP mechanism.

The paper reads violations from point estimates in the low-FPR region FPR
in [0.1, 0.2]: the empirical epsilon max(log((TPR - delta) / FPR),
log((1 - delta - FPR) / (1 - TPR))) of the ROC points there, with no
interval. `paper_reading_false_alarm` asks how often that reading exceeds
eps for a mechanism that is exactly eps-DP, at given numbers of member and
non-member trials: randomised response at eps with a uniform tie-breaker
(score = the response bit + U(0, 1)), whose ROC lies on the boundary of the
eps-DP region at every FPR, so a point estimate there lands above eps about
half the time. The reading is computed as the report computes it from
`tpr_at_fpr_<f>` (the best TPR among thresholds with FPR at most f, taken
at FPR f).

`worked_example_sample_size` is the other side: how many trials the paper's
worked example (TPR 0.38 at FPR 0.1, eps_emp 1.34) needs before its lower
bound proves a violation of a nominal eps (0.5, the paper's case).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from synbench.audit.epsilon import empirical_epsilon, epsilon_lower_bounds_from_counts

PAPER_REGION = (0.1, 0.2)  # the paper's low-FPR region (synbench.report.audit keeps the same; a test holds them equal)
CHUNK = 200  # games simulated at once (memory: CHUNK x trials floats)


@dataclass(frozen=True)
class FalseAlarm:
    """How often the paper's reading exceeded eps over `games` simulated eps-DP audits, and its standard error."""

    rate: float
    standard_error: float
    games: int


def boundary_scores(rng: np.random.Generator, members: np.ndarray, epsilon: float) -> np.ndarray:
    """Scores of an exactly eps-DP mechanism whose ROC is the eps-DP boundary: randomised response (the bit is the
    membership with probability e^eps / (1 + e^eps)) plus a U(0, 1) tie-breaker."""
    keep = rng.random(members.shape) < expit(epsilon)
    return (members == keep).astype(float) + rng.random(members.shape)


def reading_tprs(member_scores: np.ndarray, nonmember_scores: np.ndarray, fprs: tuple[float, ...]) -> np.ndarray:
    """(len(fprs), games): per game (row), the best TPR among thresholds with FPR at most f (continuous scores)."""
    ordered = -np.sort(-nonmember_scores, axis=1)  # descending
    n_neg = nonmember_scores.shape[1]
    out = []
    for f in fprs:
        allowed = int(math.floor(f * n_neg + 1e-9))  # false positives a threshold may have
        cut = ordered[:, allowed] if allowed < n_neg else np.full(len(ordered), -np.inf)
        out.append((member_scores > cut[:, None]).mean(axis=1))
    return np.array(out)


def paper_reading_false_alarm(
    epsilon: float,
    n_members: int,
    n_nonmembers: int,
    fprs: tuple[float, ...] = PAPER_REGION,
    delta: float = 0.0,
    games: int = 2000,
    seed: int = 0,
) -> FalseAlarm:
    """How often the paper's reading (the largest empirical eps at the FPRs `fprs`) exceeds `epsilon` when the
    mechanism is exactly epsilon-DP, with `n_members` member and `n_nonmembers` non-member trials per audit."""
    if not (math.isfinite(epsilon) and epsilon >= 0 and n_members > 0 and n_nonmembers > 0 and fprs):
        raise ValueError(
            f"need a finite epsilon >= 0 ({epsilon}), trials of both kinds ({n_members}, {n_nonmembers}) and FPRs"
        )
    rng = np.random.default_rng([seed, 0x9A9E2])
    above = 0
    for start in range(0, games, CHUNK):
        size = min(CHUNK, games - start)
        pos = boundary_scores(rng, np.ones((size, n_members), dtype=bool), epsilon)
        neg = boundary_scores(rng, np.zeros((size, n_nonmembers), dtype=bool), epsilon)
        tpr = reading_tprs(pos, neg, fprs)
        reading = np.max(empirical_epsilon(np.array(fprs)[:, None], tpr, delta), axis=0)
        above += int((reading > epsilon + 1e-12).sum())
    rate = above / games
    return FalseAlarm(rate, math.sqrt(rate * (1 - rate) / games), games)


def example_bound(n: int, tpr: float, fpr: float, confidence: float, chosen_after: bool) -> float:
    """The eps lower bound of n member and n non-member trials at (`fpr`, `tpr`) (counts rounded): Clopper-Pearson on
    both rates at half the level each, for one threshold fixed in advance or (`chosen_after`) with Bonferroni over
    the 2n - 1 inner thresholds of a ROC of 2n distinct scores (the threshold read after seeing the curve)."""
    alpha = (1 - confidence) / 2 / ((2 * n - 1) if chosen_after else 1)
    tp, fp = np.array([round(tpr * n)]), np.array([round(fpr * n)])
    return max(float(epsilon_lower_bounds_from_counts(tp, fp, n, n, 0.0, alpha).max()), 0.0)


def worked_example_sample_size(
    epsilon: float = 0.5,
    tpr: float = 0.38,
    fpr: float = 0.1,
    *,
    confidence: float,
    chosen_after: bool = False,
    step: int = 50,
    limit: int = 1_000_000,
) -> int:
    """The smallest n, a multiple of `step` (50: the example's rates are then whole counts), at which n member and n
    non-member trials at the example's rates prove eps > `epsilon` at `confidence` (`example_bound`)."""
    for n in range(step, limit + 1, step):
        if example_bound(n, tpr, fpr, confidence, chosen_after) > epsilon:
            return n
    raise ValueError(f"no n up to {limit} proves eps > {epsilon} at TPR {tpr}, FPR {fpr}")
