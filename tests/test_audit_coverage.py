"""Coverage simulations of the audit's evidence: randomised response at a known eps, thousands of games.

Each defect of issue 30 has a known-answer test that failed before its fix,
and a simulation: an exactly eps-DP mechanism (randomised response, ties
broken by noise independent of membership), the audit's own vectorised code
(`synbench.audit.evidence.game_evidence`, which `summarise` calls) on
>= 2,000 games, and the bound above the truth in at most 5% of the games plus
two standard errors of the simulation.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import expit

from synbench.audit import AuditOptions
from synbench.audit import summary as summary_module
from synbench.audit.crossfit import cross_fitted_epsilon, target_folds
from synbench.audit.evidence import PAIR_SCALE, game_evidence, pair_game
from synbench.audit.summary import group_claim, summarise

CFG = AuditOptions(mode="one_run")
CROSSFIT = {"min_count": CFG.min_count, "rule": CFG.crossfit_rule, "confidence": CFG.confidence}  # as summarise
ALPHA = 1 - CFG.confidence
GAMES = 2000


def allowed(rate_budget: float, games: int) -> float:
    """The budget plus two standard errors of a simulated rate at the budget."""
    return rate_budget + 2 * math.sqrt(rate_budget * (1 - rate_budget) / games)


def rr_scores(rng: np.random.Generator, members: np.ndarray, eps: float, copies: int = 1) -> np.ndarray:
    """Randomised response at eps per copy (each copy's bit is flipped with probability 1 / (1 + e^eps)), summed
    over a target's `copies`, plus tie-breaking noise independent of membership."""
    bits = sum((members ^ (rng.random(members.shape) > expit(eps))).astype(float) for _ in range(copies))
    return bits + 0.01 * rng.random(members.shape)


def game_folds(games: int, kinds: np.ndarray, share: float = CFG.select_share) -> np.ndarray:
    """(games, T) held-out folds as the summary draws them: seed + 1 of game g's seed g."""
    return np.stack([target_folds(kinds, g + 1, share) for g in range(games)])


# --- defect 1: the held-out folds ignore membership ---------------------------------------------------------


def test_summary_folds_do_not_depend_on_membership(monkeypatch: pytest.MonkeyPatch) -> None:
    """Known answer: the folds summarise draws are the same whatever the coins (before, `target_folds` sorted the
    targets by membership, so the selection fold's member share predicted the test fold's)."""
    seen: list[np.ndarray] = []

    def recording(*args, **kwargs):
        folds = target_folds(*args, **kwargs)
        seen.append(folds)
        return folds

    monkeypatch.setattr(summary_module, "target_folds", recording)
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(1, 120))
    for coins in (rng.random((1, 120)) < 0.5, rng.random((1, 120)) < 0.5):
        summarise(scores, coins, CFG, 0.0, seed=3)
    half = len(seen) // 2
    assert half >= 2 and all(np.array_equal(a, b) for a, b in zip(seen[:half], seen[half:]))


def test_folds_stratify_by_target_kind_only() -> None:
    kinds = np.repeat(np.array([0, 1], dtype=np.int8), [40, 160])
    folds = target_folds(kinds, 7, 0.25)
    assert (folds[kinds == 0] == 0).sum() == 10 and (folds[kinds == 1] == 0).sum() == 40
    assert not np.array_equal(folds, target_folds(kinds, 8, 0.25))  # seeded
    with pytest.raises(TypeError, match="never membership"):
        target_folds(kinds[None] > 0, 7)


def test_one_run_coverage_with_membership_blind_folds() -> None:
    """2,000 one-run games of randomised response at eps = 1, 300 targets of two kinds: the held-out part (at
    alpha / 2) and the combined bound exceed the truth at most at their budgets plus two standard errors."""
    eps, rng = 1.0, np.random.default_rng(1)
    kinds = np.repeat(np.array([0, 1], dtype=np.int8), [50, 250])
    members = rng.random((GAMES, kinds.size)) < 0.5
    found = game_evidence([rr_scores(rng, members, eps)], members, game_folds(GAMES, kinds), CFG.guess_fractions, ALPHA)
    assert np.mean(found.holdout > eps) <= allowed(ALPHA / 2, GAMES)
    assert np.mean(found.bound > eps) <= allowed(ALPHA, GAMES)
    assert np.median(found.bound) > 0.3  # not vacuous


# --- defect 4: k_subsets, the pair game -----------------------------------------------------------------------


def pair_designs(rng: np.random.Generator, games: int, pairs: int, targets: int) -> np.ndarray:
    """(games, 2 pairs, targets) k-subset memberships: each pair's two runs split the targets by fair coins."""
    coin = rng.random((games, pairs, targets)) < 0.5
    members = np.empty((games, 2 * pairs, targets), dtype=bool)
    members[:, 0::2], members[:, 1::2] = coin, ~coin
    return members


def test_pair_game_is_the_signed_difference_of_each_pair() -> None:
    members = np.array([[True, False], [False, True], [False, False], [False, True]])
    scores = np.array([[3.0, 1.0], [1.0, 2.0], [0.0, 5.0], [4.0, 1.0]])
    with pytest.raises(ValueError, match="in pairs"):
        pair_game(scores, members)
    members[2:] = [[True, False], [False, True]]
    diff, coins = pair_game(scores, members)
    assert diff.tolist() == [[2.0, -1.0, -4.0, 4.0]] and coins.tolist() == [[True, False, True, False]]


def test_k_subsets_bound_is_the_pair_game_and_the_pooled_one_is_conditional() -> None:
    """Known answer: k_subsets' eps_emp_lower is the pair game's bound halved (before, it was the Clopper-Pearson
    bound on the pooled ROC, valid only for independent trials; that figure is now `eps_emp_lower_conditional`)."""
    rng = np.random.default_rng(2)
    members = pair_designs(rng, 1, 10, 60)[0]
    scores = rr_scores(rng, members, 2.0)
    out, _, _ = summarise(scores, members, AuditOptions(mode="k_subsets"), 1e-6, seed=4, epsilon=1.0)
    diff, coins = pair_game(scores, members)
    folds = np.tile(target_folds(np.zeros(60), 5, 0.25), 10)
    game = game_evidence([diff], coins, folds, CFG.guess_fractions, ALPHA, PAIR_SCALE * 1e-6, PAIR_SCALE * 1.0)
    assert out["eps_emp_lower"] == pytest.approx(float(game.bound[0]) / PAIR_SCALE)
    assert out["p_value"] == pytest.approx(float(game.p_value[0]))
    assert out["eps_emp_lower"] > 0.5 and "eps_emp_lower_conditional" in out


def test_pair_game_coverage_with_correlated_trials() -> None:
    """2,000 k-subset audits (20 pairs of runs, 50 targets) of randomised response at eps = 1 whose scores share a
    run effect (a run's trials are correlated): the pair-game bound exceeds eps at most at 5% + 2 SE."""
    eps, rng, pairs, targets = 1.0, np.random.default_rng(3), 20, 50
    members = pair_designs(rng, GAMES, pairs, targets)
    scores = rr_scores(rng, members, eps) + rng.normal(size=(GAMES, 2 * pairs, 1))  # a run effect
    diff = (scores[:, 0::2] - scores[:, 1::2]).reshape(GAMES, -1)
    coins = members[:, 0::2].reshape(GAMES, -1)
    folds = np.tile(game_folds(GAMES, np.zeros(targets)), pairs)
    found = game_evidence([diff], coins, folds, CFG.guess_fractions, ALPHA, 0.0, PAIR_SCALE * eps)
    assert np.mean(found.bound / PAIR_SCALE > eps) <= allowed(ALPHA, GAMES)
    assert np.mean(found.p_value <= ALPHA) <= allowed(ALPHA, GAMES)
    assert np.median(found.bound / PAIR_SCALE) > 0.2


# --- defect 3: canary groups at their group claim ----------------------------------------------------------


def test_group_claim_is_group_privacy() -> None:
    assert group_claim(1.0, 1e-5, 1) == (1.0, 1e-5)
    eps, delta = group_claim(0.5, 1e-5, 3)
    assert eps == 1.5 and delta == pytest.approx(1e-5 * (1 + math.exp(0.5) + math.exp(1.0)))
    assert group_claim(math.inf, 1e-5, 2) == (math.inf, 1e-5)


@pytest.mark.slow
def test_canary_groups_get_their_own_claim_and_outliers_keep_theirs() -> None:
    """Known answer: with canaries of 2 copies, a generator exactly eps-DP per copy (randomised response at eps = 2,
    the canary score the sum of its copies' bits) proves more than eps on the canaries, which is no violation of
    their group claim 2 eps; the outliers are tested against (eps, delta). Before, no claim was tested at all."""
    rng = np.random.default_rng(4)
    kinds = np.repeat(np.array([0, 1], dtype=np.int8), [100, 900])
    members = rng.random((1, kinds.size)) < 0.5
    scores = np.where(kinds == 1, rr_scores(rng, members, 2.0, copies=2), rr_scores(rng, members, 2.0))
    out, _, _ = summarise(scores, members, CFG, 1e-6, kinds, seed=5, epsilon=2.0, canary_copies=2)
    assert out["canaries.claim_epsilon"] == 4.0 and out["outliers.claim_epsilon"] == 2.0
    assert out["canaries.claim_delta"] == pytest.approx(1e-6 * (1 + math.exp(2.0)))
    assert out["canaries.eps_emp_lower"] > 2.0  # above the per-copy eps: a group leaks more
    assert out["canaries.p_value"] > ALPHA and out["outliers.p_value"] > ALPHA  # neither claim is rejected
    assert out["claim_epsilon"] == 4.0  # the mixed headline game tests the weaker claim every trial meets


@pytest.mark.parametrize("copies", [2, 3])
def test_canary_group_coverage_at_the_group_claim(copies: int) -> None:
    """2,000 one-run games of 500 canaries of `copies` copies each, randomised response at eps = 0.5 per copy: the
    canaries' bound exceeds the group's k eps at most at 5% + 2 SE, and the group claim is rejected as rarely."""
    eps, rng = 0.5, np.random.default_rng(5 + copies)
    members = rng.random((GAMES, 500)) < 0.5
    claim, delta = group_claim(eps, 0.0, copies)
    scores = rr_scores(rng, members, eps, copies)
    found = game_evidence([scores], members, game_folds(GAMES, np.ones(500)), CFG.guess_fractions, ALPHA, delta, claim)
    assert np.mean(found.bound > claim) <= allowed(ALPHA, GAMES)
    assert np.mean(found.p_value <= ALPHA) <= allowed(ALPHA, GAMES)
    assert np.mean(found.bound > eps) > 0.2  # the group leaks more than one copy: the per-copy claim would misfire


# --- defect 5: the attack choice inside the cross-fit -------------------------------------------------------


def test_headline_estimate_chooses_the_attack_inside_the_cross_fit() -> None:
    """Known answer: the headline eps_emp is the cross-fit over all attacks (before, the estimate of the attack the
    held-out bound chose on other folds, which overlap the estimate's: biased upwards under the null)."""
    rng = np.random.default_rng(6)
    members = rng.random((1, 300)) < 0.5
    a = rng.normal(size=(1, 300))
    attacks = {"a": a, "b": 0.7 * a + 0.7 * rng.normal(size=(1, 300)), "c": rr_scores(rng, members, 0.3)}
    out, _, _ = summarise(attacks, members, CFG, 0.0, seed=9)
    folds = target_folds(np.zeros(300), 9)
    assert out["eps_emp"] == cross_fitted_epsilon(list(attacks.values()), members, folds, 0.0, **CROSSFIT)


@pytest.mark.slow
def test_cross_fitted_estimate_over_attacks_is_centred_under_the_null() -> None:
    """Three attacks (two correlated) that know nothing, 4,000 one-run games of 300 targets: the mean estimate is
    within three standard errors of 0 (the choice made outside the cross-fit gave 0.026 +/- 0.008 over 2,000)."""
    rng, games = np.random.default_rng(7), 4000
    values = []
    for g in range(games):
        members = rng.random((1, 300)) < 0.5
        a = rng.normal(size=(1, 300))
        attacks = [a, 0.7 * a + 0.7 * rng.normal(size=(1, 300)), rng.normal(size=(1, 300))]
        values.append(cross_fitted_epsilon(attacks, members, target_folds(np.zeros(300), g), 0.0, **CROSSFIT))
    mean, se = np.mean(values), np.std(values) / math.sqrt(games)
    assert abs(mean) < 3 * se, (mean, se)
