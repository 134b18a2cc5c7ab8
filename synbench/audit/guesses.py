"""How many one-run guesses to make, chosen validly: a grid with Bonferroni, or on held-out targets.

Steinke et al. fix k+ (guessed members, the top scores) and k- (guessed
non-members, the bottom scores) before seeing any score; fixed 25% / 25% is
far from best when only some targets leak (a generator that copies half its
documents: the best rule guesses the top quarter and abstains on the rest).
Two valid ways to choose, both reported, the larger kept with the level split
between them (`one_run_bounds`):

- grid: every (k+, k-) from `fractions` x `fractions` (both as shares of the
  targets, not both 0, sum at most 1), each tested at level / |grid|;
- held-out: on a selection fold of the targets pick the grid point whose
  bound is largest, apply its shares to the other targets: one test at level.

The game bound is either the eps-DP binomial bound (Steinke et al.,
`one_run_epsilon_lower_bounds`) or the mu-GDP bound (Mahloujifar et al.,
`one_run_gdp_mu_lower_bounds`); both are valid when the guesses on one fold
depend on the other fold's memberships, since DP holds for each target given
all the others.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

GameBound = Callable[[np.ndarray, np.ndarray, np.ndarray, float], np.ndarray]  # (m, guesses, correct, alpha) -> bounds


def guess_shares(fractions: tuple[float, ...]) -> np.ndarray:
    """(G, 2) (k+, k-) shares of the targets: every pair from {0} and `fractions`, not both 0, sum at most 1."""
    values = sorted({0.0, *map(float, fractions)})
    return np.array([(p, n) for p in values for n in values if 0 < p + n <= 1]).reshape(-1, 2)


def grid_counts(
    scores: np.ndarray, members: np.ndarray, shares: np.ndarray, inside: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per game (row) and grid point: (targets m, guesses, correct) among the targets `inside` (default all).

    `shares` is (G, 2) for every game or (B, G, 2) per game. Of the m targets
    inside, the floor(k+ share * m) top scores are called members and the
    floor(k- share * m) bottom ones non-members. Ties are broken by target
    order, which the design draws independently of membership, so
    tie-breaking cannot leak membership into the guesses.
    """
    scores, members = np.atleast_2d(np.asarray(scores, dtype=float)), np.atleast_2d(members).astype(bool)
    inside = np.ones(scores.shape, dtype=bool) if inside is None else np.atleast_2d(inside)
    m = inside.sum(axis=1)
    k = np.floor(np.broadcast_to(shares, (len(scores), *shares.shape[-2:])) * m[:, None, None]).astype(np.int64)
    rows, start = np.arange(len(scores))[:, None], np.zeros((len(scores), 1), dtype=np.int64)
    top = np.argsort(np.where(inside, -scores, np.inf), axis=1, kind="stable")  # outside targets sort last
    low = np.argsort(np.where(inside, scores, np.inf), axis=1, kind="stable")
    hits_top = np.concatenate([start, np.cumsum((members & inside)[rows, top], axis=1)], axis=1)
    hits_low = np.concatenate([start, np.cumsum((~members & inside)[rows, low], axis=1)], axis=1)
    correct = np.take_along_axis(hits_top, k[:, :, 0], axis=1) + np.take_along_axis(hits_low, k[:, :, 1], axis=1)
    return np.broadcast_to(m[:, None], correct.shape), k.sum(axis=2), correct


def grid_bounds(
    scores: np.ndarray, members: np.ndarray, fractions: tuple[float, ...], bound: GameBound, alpha: float
) -> np.ndarray:
    """Per game (row), the best grid point's bound with Bonferroni over the grid (each point at alpha / G)."""
    shares = guess_shares(fractions)
    m, guesses, correct = grid_counts(scores, members, shares)
    return np.maximum(bound(m, guesses, correct, alpha / len(shares)).max(axis=1), 0.0)


def holdout_selected(
    scores: np.ndarray,
    members: np.ndarray,
    folds: np.ndarray,
    fractions: tuple[float, ...],
    bound: GameBound,
    alpha: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Per game (row): (the best bound on fold 0, the bound on fold 1 at the shares that gave it), both at level alpha.

    The fold-0 value depends on fold-0 targets only, so a choice among
    games (attacks) by it is still a choice made on held-out targets.
    """
    shares = guess_shares(fractions)
    scores = np.atleast_2d(scores)
    folds = np.broadcast_to(np.atleast_2d(folds), scores.shape)
    m, guesses, correct = grid_counts(scores, members, shares, folds == 0)
    on_selection = bound(m, guesses, correct, alpha)
    chosen = shares[np.argmax(on_selection, axis=1)][:, None, :]  # (B, 1, 2)
    m, guesses, correct = grid_counts(scores, members, chosen, folds == 1)
    return on_selection.max(axis=1), np.maximum(bound(m, guesses, correct, alpha)[:, 0], 0.0)


def holdout_bounds(
    scores: np.ndarray,
    members: np.ndarray,
    folds: np.ndarray,
    fractions: tuple[float, ...],
    bound: GameBound,
    alpha: float,
) -> np.ndarray:
    """Per game (row), the bound on fold 1 at the shares whose bound is largest on fold 0, at level alpha."""
    return holdout_selected(scores, members, folds, fractions, bound, alpha)[1]
