"""What a "consistent" verdict could have seen: the smallest planted leak the audit's own test certifies.

A bound at or below the claim is no evidence of privacy when the test could
not have seen a realistic leak. The ceiling (synbench.audit.ceiling) answers
for a perfect attack, one that reads every member from the release; a real
generator leaks some documents and not others. `detectable_leak` plants such
leaks in the design's own game and runs the audit's own test on them:

- each target leaks independently with probability `share` (a generator
  that memorises a document memorises it whenever it holds it, so in the
  pair game of `k_subsets` a leaking target leaks in every pair);
- a leaking target is read exactly: in a one-run game its member trials
  score above every other trial (its non-member trials, having nothing to
  leak, look like any other), in the pair game its member run scores above
  the other run of the pair;
- every other trial scores at random, as an attack with no signal does.

Each share of `LEAK_SHARES` is tried on `DRAWS` seeded draws of the leaking
targets and scores (the draws run as rows of one vectorised game), through
the same held-out and Bonferroni test, folds, guess grid, attacks' count,
level, delta and claim as the audit's bound; the smallest share certified
above the claim in at least `POWER` of the draws is the audit's smallest
detectable leak. The draws come from a public seed: this is a property of the
design, not privacy noise, and it reads no document.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from synbench.audit.evidence import GameResult

LEAK_SHARES = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)  # shares of the targets that leak, tried in turn
DRAWS = 40  # simulated draws per share: certifying in 32 of 40 estimates a power of 0.8 to within about 0.06
POWER = 0.8  # the share of draws a detectable leak is certified in (the usual power of a study design)

# (scores per attack, coins, folds) of B games as rows -> the audit's eps evidence of those games at its level, delta
# and claim: synbench.audit.summary.game_result builds it
GameEvidence = Callable[[list[np.ndarray], np.ndarray, np.ndarray], GameResult]


@dataclass(frozen=True)
class LeakPower:
    """The smallest share of leaking targets certified in at least `POWER` of the draws (None: not even all of
    them), and the share of draws certified at that share (at the largest share tried when none reaches it)."""

    share: float | None
    certified: float

    def words(self) -> str:
        """The power in words, for the verdict line."""
        if self.share is None:
            return (
                f"even a leak of every target would be certified in only {self.certified:.0%} of simulated draws "
                "(a weak design: this is no evidence of privacy)"
            )
        return (
            f"a leak of {self.share:.0%} of the targets would have been certified in {self.certified:.0%} of "
            "simulated draws (so this is no evidence of privacy below that)"
        )


def planted_scores(coins: np.ndarray, leaking: np.ndarray, pair_game: bool, rng: np.random.Generator) -> np.ndarray:
    """(B, n) scores of an attack that reads exactly the trials of leaking targets (module docstring) and nothing
    else: `coins` and `leaking` are (B, n); in the pair game a coin says which run of the pair held the target."""
    noise = rng.random(coins.shape)
    if pair_game:
        return np.where(leaking, np.where(coins, 1.0 + noise, -1.0 - noise), noise - 0.5)
    return np.where(leaking & coins, 1.0 + noise, noise)


def detectable_leak(
    evidence: GameEvidence,
    coins: np.ndarray,
    folds: np.ndarray,
    targets: np.ndarray,
    claim: float,
    n_attacks: int,
    pair_game: bool,
    seed: int,
) -> LeakPower:
    """The smallest planted leak (`LEAK_SHARES`) the audit's test (`evidence`) certifies above `claim` in at least
    `POWER` of `DRAWS` draws; `coins` (n,) and `folds` (n,) are the game's trials, `targets` (n,) the target each
    trial belongs to (several trials per target in the pair game). Nothing to find for no claim (eps = inf)."""
    if math.isinf(claim):
        return LeakPower(None, 0.0)
    rng = np.random.default_rng([seed, 0x1EA4])
    n_targets = int(targets.max(initial=-1)) + 1
    wide_coins = np.broadcast_to(coins, (DRAWS, len(coins)))
    wide_folds = np.broadcast_to(folds, wide_coins.shape)
    certified = 0.0
    for share in LEAK_SHARES:
        leaking = (rng.random((DRAWS, n_targets)) < share)[:, targets]
        scores = planted_scores(wide_coins, leaking, pair_game, rng)
        certified = float(np.mean(evidence([scores] * n_attacks, wide_coins, wide_folds).bound > claim))
        if certified >= POWER:
            return LeakPower(share, certified)
    return LeakPower(None, certified)
