"""What an audit could have seen: the ceiling of its bound, and the verdict that rests on it.

A lower bound below the nominal eps is no pass when the design could not
have produced a larger one: with m trials, even a perfect attack (every
guess right) certifies at most the eps whose binomial tail q^r (q = e^eps /
(1 + e^eps), r <= m guesses) still reaches the test's level, so a copier
audited on 324 one-run targets at eps = 4 scores eps_emp_lower 3.87 and
passes. `ceiling` runs the audit's own eps machinery (the `Evidence` that
synbench.audit.summary hands over: same folds, mode, delta, guess grid,
held-out/Bonferroni split and level) on perfect scores built from the
design's membership matrix, so the ceiling can never disagree with the
bound it caps (`ceiling` says why it also takes the held-out part's best
shares). Beside it, `eps_perfect` is what the design's own perfect-score
attack certifies through that same test: the ceiling is the most any attack
could reach, `eps_perfect` what the audit's test gives an attack that reads
every member (lower where its guess grid, chosen on one fold, misfires on
the other). The verdict (`verdict`) rests on `eps_perfect`, so an attack
with perfect scores is never told "consistent", and says which of three
things the audit showed, against the claims its families of targets test
(every target, then each kind alone, each at its share of the level):

- `violation`: some family's eps_emp_lower above its claim;
- `consistent`: none is, but a perfect attack's would be: the audit could
  have shown a violation and did not. The line also says the smallest
  planted leak the design certifies (synbench.audit.power), never "private";
- `inconclusive`: even a perfect attack's bound is at or below the claim:
  no attack could have shown one. `n_needed` is the size a perfect attack
  would need (targets in one_run mode, runs in k_subsets mode), from
  simulated designs grown by doubling then bisection through the same test;
- `no claim`: eps = inf claims nothing.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np
from scipy.special import ndtri

from synbench.audit.crossfit import target_folds
from synbench.audit.evidence import GameResult

# (scores per attack, members (runs x targets), folds (targets,)) -> the audit's eps evidence of those trials at its
# level, delta and claim (bounds on eps, the pair game's halved): synbench.audit.summary.eps_evidence builds it
Evidence = Callable[[Sequence[np.ndarray], np.ndarray, np.ndarray], GameResult]
MAX_TRIALS = 2**18  # the largest simulated design (its trials: targets, or pairs x targets) n_needed tries
SEARCH_PRECISION = 128  # the bisection stops within 1/128 of the size it reports (exact below 128)
GROWTH_WITH_DELTA = 1.125  # the search with delta grows from the delta-free answer by an eighth at a time
COARSE_PRECISION = 16  # the delta-free search, which only says where the search with delta starts
TYPICAL_Z = float(ndtri((1 + math.sqrt(0.5)) / 2))  # |count - half| <= TYPICAL_Z sd in each of two folds: p = 1/2
UNITS = {"one_run": "targets", "k_subsets": "runs"}  # what n_needed counts, by audit mode


def perfect_scores(members: np.ndarray) -> np.ndarray:
    """Scores that rank every member trial above every non-member one (1 and 0): the strongest possible attack."""
    return np.atleast_2d(members).astype(float)


def ceiling(evidence: Evidence, members: np.ndarray, folds: np.ndarray, n_attacks: int = 1) -> dict[str, float]:
    """`eps_ceiling`, the most any attack's `eps_emp_lower` can be on this design, and `p_value_floor`, the p-value
    of the claim there (the smallest any attack reaches). Each of `n_attacks` attacks scores perfectly: the
    combined bound pays for the choice among them as it does for real scores.

    The Bonferroni part of a perfect attack is the most any attack's can be:
    at every grid point its guesses are right wherever they can be. Its
    held-out part need not be: it tests on fold 1 the guess shares that won
    on fold 0, and where fold 0's members split evenly and fold 1's do not,
    the shares that are all right on fold 0 make wrong guesses on fold 1 (a
    copier on the default design: 3.48, where the same scores with one
    mistake on fold 0 choose other shares and reach 3.87). An attack that is
    perfect on fold 1 reaches at most the best fold-1 bound over the shares;
    the audit's own held-out test finds it on a game whose two folds are
    both fold 1's trials (the shares with the largest bound on one copy,
    tested on the other). The ceiling is the larger of the two, so no
    attack's bound exceeds it.
    """
    members = np.atleast_2d(members)
    whole = evidence([perfect_scores(members)] * n_attacks, members, folds)
    tested = members[:, folds == 1]
    twice = np.concatenate([tested, tested], axis=1)
    copies = np.repeat(np.array([0, 1], dtype=np.int8), tested.shape[1])  # fold 0 chooses on one copy of fold 1
    steered = evidence([perfect_scores(twice)] * n_attacks, twice, copies)
    return {
        "eps_ceiling": float(max(steered.holdout[0], whole.bonferroni[0])),
        "p_value_floor": float(min(1.0, 2 * min(steered.p_holdout[0], whole.p_grid[0]))),
        "eps_perfect": float(whole.bound[0]),
        "p_value_perfect": float(whole.p_value[0]),
    }


def typical_coins(folds: np.ndarray) -> np.ndarray:
    """Membership of a typical draw of fair coins: in each fold, the members fall short of half by `TYPICAL_Z`
    standard deviations of their binomial count (both folds at most that uneven in half the draws).

    An exactly even split is the lucky exception: only then can the guess
    grid's largest shares (k+ = k- = 1/2) all be right, which raises the
    ceiling well above what a random draw of the same size allows (4.18
    against a median of 3.55 at 324 one-run targets and eps = 4); a split
    uneven by the coins' typical margin matches the median draw's ceiling.
    """
    order = np.argsort(folds, kind="stable")
    ranked = folds[order]
    first = np.searchsorted(ranked, ranked, side="left")
    size = np.searchsorted(ranked, ranked, side="right") - first  # of the trial's fold
    rank = np.arange(len(folds)) - first  # within its fold
    coins = np.empty(len(folds), dtype=bool)
    coins[order] = rank < np.floor(size / 2 - TYPICAL_Z * np.sqrt(size) / 2)
    return coins


def one_run_design(n_targets: int, select_share: float) -> tuple[np.ndarray, np.ndarray]:
    """(members (1 x n), folds) of a one-run design of `n_targets` targets with typical coins, its folds drawn as
    the audit draws them."""
    folds = target_folds(np.zeros(n_targets, dtype=np.int8), 0, select_share)
    return typical_coins(folds)[None], folds


def k_subsets_design(n_pairs: int, folds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(members (2P x T), folds) of a k-subset design of `n_pairs` pairs over the audit's targets (`folds`), the
    pair game's P x T coins a typical draw within each fold."""
    coins = typical_coins(np.tile(folds, n_pairs)).reshape(n_pairs, len(folds))
    members = np.empty((2 * n_pairs, len(folds)), dtype=bool)
    members[0::2], members[1::2] = coins, ~coins
    return members, folds


def bracket(
    ceiling_at: Callable[[int], float],
    claim: float,
    failing: int,
    limit: int,
    growth: float = 2.0,
    precision: int = SEARCH_PRECISION,
) -> tuple[int, int] | None:
    """(lo, hi): sizes in [failing, limit] whose ceilings (`ceiling_at`) are at most and above `claim`, hi - lo
    within 1/`precision` of hi. Growing from `failing` by `growth` (doubling by default), then bisection: a ceiling
    grows with the design, so a handful of evaluations near the answer suffice.

    None when `limit` does not certify, or when the ceiling stops growing
    before a size does: delta's term grows with the number of trials (Steinke
    et al.'s 2 m delta), and once it outweighs them no larger design helps.
    """
    lo = hi = max(failing, 1)
    last = -math.inf
    while True:
        if hi >= limit:
            return None
        hi = min(max(int(hi * growth), hi + 1), limit)
        found = ceiling_at(hi)
        if found > claim:
            break
        if found <= last:
            return None
        lo, last = hi, found
    while hi - lo > max(1, hi // precision):
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ceiling_at(mid) > claim else (mid, hi)
    return lo, hi


def size_needed(
    evidence: Evidence,
    optimistic: Evidence,
    claim: float,
    mode: str,
    members: np.ndarray,
    folds: np.ndarray,
    select_share: float,
    n_attacks: int = 1,
) -> int | None:
    """How many targets (one_run) or runs (k_subsets) a perfect attack needs for its ceiling to exceed `claim`,
    from this design's size up (to within 1/`SEARCH_PRECISION`); None beyond `MAX_TRIALS` trials, or where delta
    caps the ceiling below the claim (`bracket`).

    One-run designs keep the coin rule (each target a member with
    probability 1/2, drawn typically: `typical_coins`) and the fold rule;
    k-subset designs keep the targets and add pairs. `optimistic` is
    `evidence` at delta = 0: its ceiling is never lower (delta only adds to
    a p-value), and on large designs it costs a fraction of the delta term's.
    So the doubling and a coarse bisection run on it first, which also finds
    a claim out of reach cheaply; no size below the size it leaves failing
    can certify with delta, and the search with delta grows from there by an
    eighth at a time (delta moves the answer by a few percent).
    """

    def ceiling_at(found: Evidence, size: int) -> float:
        return ceiling(found, *design(size), n_attacks)["eps_perfect"]

    def design(size: int) -> tuple[np.ndarray, np.ndarray]:
        return one_run_design(size, select_share) if mode == "one_run" else k_subsets_design(size, folds)

    n_runs, n_targets = np.atleast_2d(members).shape
    one_run = mode == "one_run"
    current, limit, per_size = (n_targets, MAX_TRIALS, 1) if one_run else (n_runs // 2, MAX_TRIALS // n_targets, 2)
    without_delta = bracket(lambda n: ceiling_at(optimistic, n), claim, current, limit, precision=COARSE_PRECISION)
    if without_delta is None:
        return None
    found = bracket(lambda n: ceiling_at(evidence, n), claim, without_delta[0], limit, GROWTH_WITH_DELTA)
    return None if found is None else per_size * found[1]


def verdict(bounds: Sequence[float], perfect: Sequence[float], claims: Sequence[float]) -> str:
    """violation | consistent | inconclusive | no claim (module docstring), over the audit's families of targets
    (every target, then each kind alone, each tested at its share of the level): a violation when any family's
    bound is above its claim, consistent when none is but a perfect attack would have put one above."""
    if all(math.isinf(c) for c in claims):
        return "no claim"
    if any(b > c for b, c in zip(bounds, claims)):
        return "violation"
    return "consistent" if any(p > c for p, c in zip(perfect, claims)) else "inconclusive"


def verdict_line(
    found: str, bound: float, eps_perfect: float, claim: str, needed: int | None, unit: str, power: str = ""
) -> str:
    """The verdict in one line, with what it rests on and what it could have seen; `claim` names the claim ("nominal
    eps 4"), `power` says which leak the design would have certified (synbench.audit.power.LeakPower.words)."""
    figures = f"eps_emp_lower {bound:.2f}"
    perfect = f"a perfect attack certifies {eps_perfect:.2f} on this design"
    if found == "no claim":
        return f"no claim: eps = inf claims nothing to test ({figures}; {perfect})"
    if found == "violation":
        return f"violation: {figures} > {claim} ({perfect})"
    if found == "consistent":
        return f"consistent: {figures} <= {claim} < {eps_perfect:.2f}, what a perfect attack certifies here; {power}"
    size = (
        f"a perfect attack would need about {needed:,} {unit} to certify it (a typical coin draw)"
        if needed is not None
        else f"no design of up to {MAX_TRIALS:,} trials lets a perfect attack certify it at this delta"
    )
    return f"inconclusive: {figures} <= {eps_perfect:.2f}, what a perfect attack certifies here, <= {claim}; {size}"
