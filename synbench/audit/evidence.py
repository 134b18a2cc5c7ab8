"""The audit's evidence: Steinke-Nasr-Jagielski games, tested validly and vectorised over games.

Every bound the audit reports as evidence (`eps_emp_lower`) is a one-run
game in the sense of Steinke, Nasr & Jagielski (2023): fair coins the
guesser cannot predict, a guess per coin from the released output, and the
binomial bound on the right guesses. Their theorem needs no independence
between the trials' scores, only that the whole output is DP in each coin
given all the others.

- `one_run` mode: one coin per target, the run's private set holds the
  targets whose coin came up.
- `k_subsets` mode, the **pair game**: pair p's coin for target t says which
  of its two runs (2p or 2p + 1, the same base) holds t. Flipping it removes
  t from one run and adds it to the other: two independent (eps, delta)-DP
  runs each change by one record, so the K runs together are (2 eps,
  2 delta)-DP in that coin given every other (basic composition), and the
  guess is the sign of score(run 2p) - score(run 2p + 1). The game's bound
  on 2 eps, halved, bounds eps without assuming that the targets of one run
  (which share its synthetic corpus) are independent trials. (mu-GDP: the
  pair is sqrt(2) mu-GDP in the coin, so the mu bound is divided by sqrt(2).)

`game_evidence` tests B games (rows) at once: a held-out test (the attack
and the guess counts chosen on fold 0 of the coins, one test on fold 1) and
a Bonferroni test over every (attack, guess counts), each at half the
level, and the p-value of a stated claim eps for the combined test. A
coverage simulation of thousands of games therefore runs the code the audit
runs, in seconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from synbench.audit.fdp import one_run_gdp_mu_lower_bounds
from synbench.audit.guesses import GameBound, grid_counts, guess_shares
from synbench.audit.one_run import one_run_epsilon_lower_bounds, one_run_p_values

PAIR_SCALE = 2.0  # the pair game is (2 eps, 2 delta)-DP in each coin


@dataclass(frozen=True)
class GameResult:
    """Per game (row): the two bounds at half the level each, the attack the held-out test chose, the p-value, and
    its two parts (the held-out test's, and the grid's smallest times its number of tests; each rejects at half the
    level), which the ceiling (synbench.audit.ceiling) combines across two games."""

    holdout: np.ndarray
    bonferroni: np.ndarray
    chosen: np.ndarray
    p_value: np.ndarray
    p_holdout: np.ndarray
    p_grid: np.ndarray

    @property
    def bound(self) -> np.ndarray:
        return np.maximum(self.holdout, self.bonferroni)


def pair_game(scores: np.ndarray, members: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(1, P x T) scores and coins of the pair game of a k-subset audit's (2P, T) scores and inclusion."""
    scores, members = np.atleast_2d(scores), np.atleast_2d(members).astype(bool)
    if len(members) % 2 or (members[0::2] == members[1::2]).any():
        raise ValueError(
            f"a k_subsets audit needs its {len(members)} runs in pairs (2p, 2p + 1) that each hold every target "
            "exactly once (synbench.audit.design.make_design draws them so)"
        )
    return (scores[0::2] - scores[1::2]).reshape(1, -1), members[0::2].reshape(1, -1)


def _tested(
    stacked: np.ndarray,
    members: np.ndarray,
    folds: np.ndarray,
    shares: np.ndarray,
    bound: GameBound,
    alpha: float,
    n_attacks: int,
) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """(held-out bound, chosen attack, its test counts, every grid point's counts) of A x B stacked game rows.

    Row a * B + b is attack a on game b. The held-out choice (attack and
    shares) maximises the bound on fold 0; its shares are applied to fold 1.
    """
    n_games = len(stacked) // n_attacks
    counts = grid_counts(stacked, members, shares, folds == 0)
    selection = bound(*counts, alpha)  # (A B, G)
    # ties (every bound 0 when the selection fold is too small to prove anything) go to the smallest p-value
    # against eps = 0 on the same fold: still a choice made on fold 0 only
    chance = one_run_p_values(*counts, np.zeros(selection.shape))
    tied = np.where(selection == selection.max(axis=1, keepdims=True), chance, np.inf)
    best, tie = selection.max(axis=1).reshape(n_attacks, n_games), tied.min(axis=1).reshape(n_attacks, n_games)
    chosen = np.where(best == best.max(axis=0), tie, np.inf).argmin(axis=0)  # (B,)
    rows = chosen * n_games + np.arange(n_games)
    picked = shares[tied[rows].argmin(axis=1)][:, None, :]  # (B, 1, 2)
    test = tuple(c[:, 0] for c in grid_counts(stacked[rows], members[rows], picked, folds[rows] == 1))
    holdout = np.maximum(bound(*test, alpha), 0.0)
    return holdout, chosen, test, grid_counts(stacked, members, shares)


def game_evidence(
    scores: Sequence[np.ndarray],
    members: np.ndarray,
    folds: np.ndarray,
    fractions: tuple[float, ...],
    alpha: float,
    delta: float = 0.0,
    claim: float = math.inf,
    gdp: bool = False,
) -> GameResult:
    """The eps (or, `gdp=True`, mu-GDP) evidence of B one-run games at level `alpha`, one value per game (row).

    `scores` holds one (B, m) array per attack, `members` the (B, m) coins
    and `folds` the coins' folds, (m,) or (B, m). The held-out and the
    Bonferroni test each run at alpha / 2 (Bonferroni over every attack and
    grid point). `p_value` is the combined test's p-value for the claim
    (`claim`, `delta`)-DP per coin: min(1, 2 min(p_held-out, A G min p_grid)),
    at most alpha exactly when the combined test rejects the claim; 1 for
    `claim` = inf (no claim) and for the GDP bound.
    """
    n_attacks = len(scores)
    members = np.atleast_2d(members).astype(bool)
    stacked = np.concatenate([np.atleast_2d(np.asarray(s, dtype=float)) for s in scores])
    wide = np.tile(members, (n_attacks, 1))
    wide_folds = np.tile(np.broadcast_to(np.atleast_2d(folds), members.shape), (n_attacks, 1))
    shares = guess_shares(fractions)

    def eps_bound(m, r, v, level):
        return one_run_epsilon_lower_bounds(m, r, v, delta, level)

    bound = one_run_gdp_mu_lower_bounds if gdp else eps_bound
    holdout, chosen, test, grid = _tested(stacked, wide, wide_folds, shares, bound, alpha / 2, n_attacks)
    tests = n_attacks * len(shares)
    per_point = bound(*grid, alpha / 2 / tests).reshape(n_attacks, len(members), -1)
    bonferroni = np.maximum(per_point.max(axis=(0, 2)), 0.0)
    p_held = p_grid = np.ones(len(members))
    if not gdp and math.isfinite(claim):
        p_held = one_run_p_values(*test, np.full(len(members), claim), delta)
        p_points = one_run_p_values(*grid, np.full(grid[0].shape, claim), delta).reshape(n_attacks, len(members), -1)
        p_grid = np.minimum(1.0, tests * p_points.min(axis=(0, 2)))
    return GameResult(holdout, bonferroni, chosen, np.minimum(1.0, 2 * np.minimum(p_held, p_grid)), p_held, p_grid)
