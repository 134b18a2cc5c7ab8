"""The audit's estimates and bounds on simulated games with a known answer (vectorised: a few seconds).

- the null (scores independent of membership): the cross-fitted eps_emp is
  centred on 0 and the combined lower bound is 0 in at least 95% of trials;
- a Gaussian mechanism with known mu per target, and randomised response
  with known eps, in the one-run game: the bounds exceed the truth in at most
  5% of 500 trials, and get reasonably close to it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import expit, ndtr, ndtri

from synbench.audit import AuditOptions, RocCurve, empirical_epsilon_lower_bound
from synbench.audit.crossfit import cross_fitted_epsilon, epsilon_counts_bound, holdout_lower_bound, target_folds
from synbench.audit.epsilon import bonferroni_epsilon_lower_bound, epsilon_lower_bounds_from_counts
from synbench.audit.fdp import (
    gdp_mu_lower_bounds_from_counts,
    gdp_rejected,
    one_run_gdp_mu_lower_bound,
    one_run_gdp_mu_lower_bounds,
)
from synbench.audit.guesses import grid_bounds, holdout_bounds
from synbench.audit.one_run import one_run_epsilon_lower_bounds
from synbench.audit.summary import bounds, summarise

FRACTIONS = AuditOptions().guess_fractions
LEVEL = 0.025  # each of the two one-run bounds runs at half of 5%, so their maximum holds at 95%


def one_run_games(rng: np.random.Generator, trials: int, m: int, score) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(trials, m) membership by fair coins, the mechanism's scores, and the target folds of each game."""
    members = rng.random((trials, m)) < 0.5
    kinds = np.zeros(m, dtype=np.int8)
    folds = np.stack([target_folds(kinds, seed, AuditOptions().select_share) for seed in range(trials)])
    return members, score(members), folds


def combined(scores, members, folds, bound) -> np.ndarray:
    """What the one-run audit reports: max(held-out, grid), each at half the level."""
    return np.maximum(
        holdout_bounds(scores, members, folds, FRACTIONS, bound, LEVEL),
        grid_bounds(scores, members, FRACTIONS, bound, LEVEL),
    )


def eps_game(delta: float):
    return lambda m, r, v, alpha: one_run_epsilon_lower_bounds(m, r, v, delta, alpha)


# --- the null ---------------------------------------------------------------------------------------


def pair_design(rng: np.random.Generator, pairs: int, targets: int) -> np.ndarray:
    """(2 pairs, targets) membership of a k-subset design: each pair's two runs split the targets by fair coins."""
    coin = rng.random((pairs, targets)) < 0.5
    members = np.empty((2 * pairs, targets), dtype=bool)
    members[0::2], members[1::2] = coin, ~coin
    return members


@pytest.mark.slow
def test_null_point_estimate_is_centred_and_bounds_prove_nothing() -> None:
    rng = np.random.default_rng(0)
    cfg = AuditOptions(mode="k_subsets")
    estimates, lower, maxima = [], [], []
    for trial in range(200):
        members = pair_design(rng, 1, 100)
        scores = rng.normal(size=(2, 100))
        out, _, _ = summarise(scores, members, cfg, 0.0, seed=trial)
        estimates.append(out["eps_emp"])
        lower.append(out["eps_emp_lower"])
        maxima.append(out["eps_emp_max"])
    assert abs(np.mean(estimates)) < 0.1, np.mean(estimates)
    assert np.mean(np.array(lower) == 0) >= 0.95
    assert np.mean(maxima) > 0.3  # the old maximum is biased upwards; the cross-fitted estimate is not


def test_null_one_run_bounds_prove_nothing() -> None:
    rng = np.random.default_rng(1)
    members, scores, folds = one_run_games(rng, 200, 200, lambda mem: rng.normal(size=mem.shape))
    assert np.mean(combined(scores, members, folds, eps_game(0.0)) == 0) >= 0.95
    assert np.mean(combined(scores, members, folds, one_run_gdp_mu_lower_bounds) == 0) >= 0.95


# --- known mu: Gaussian scores -------------------------------------------------------------------------


@pytest.mark.parametrize("mu", [1.0, 3.0])
def test_gaussian_one_run_bounds_stay_below_the_truth(mu: float) -> None:
    rng = np.random.default_rng(2)
    members, scores, folds = one_run_games(rng, 500, 200, lambda mem: rng.normal(size=mem.shape) + mu * mem)
    mu_lower = combined(scores, members, folds, one_run_gdp_mu_lower_bounds)
    assert np.mean(mu_lower > mu) <= 0.05
    assert np.median(mu_lower) > 0.2 * mu  # not vacuous
    delta = 1e-5
    eps_true = _gdp_eps(mu, delta)
    eps_lower = combined(scores, members, folds, eps_game(delta))
    assert np.mean(eps_lower > eps_true) <= 0.05


@pytest.mark.slow
def test_gaussian_roc_bounds_stay_below_the_truth() -> None:
    """The k-subset bounds with independent trials (one pair of runs, 100 targets): the conditional (pooled ROC)
    bounds hold when the trials are independent, and the pair game's bounds hold anyway."""
    rng = np.random.default_rng(3)
    mu = 2.0
    cfg = AuditOptions(mode="k_subsets")
    found = []
    for t in range(200):
        members = pair_design(rng, 1, 100)
        folds = target_folds(np.zeros(100), t, 0.25)
        found.append(bounds(rng.normal(size=(2, 100)) + mu * members, members, folds, cfg, 1e-5)[0])
    for suffix in ("", "_conditional"):
        assert np.mean([f[f"gdp_mu_lower{suffix}"] > mu for f in found]) <= 0.05
        assert np.mean([f[f"eps_emp_lower{suffix}"] > _gdp_eps(mu, 1e-5) for f in found]) <= 0.05
    assert np.median([f["gdp_mu_lower_conditional"] for f in found]) > 0.5 * mu
    assert np.median([f["gdp_mu_lower"] for f in found]) > 0.25 * mu


# --- known eps: randomised response --------------------------------------------------------------------


def rr_mu(eps: float) -> float:
    """The smallest mu with G_mu below the eps-DP randomised-response trade-off curve (numerically)."""
    alpha = np.linspace(1e-9, 1 - 1e-9, 200001)
    f = np.maximum.reduce([np.zeros_like(alpha), 1 - math.exp(eps) * alpha, math.exp(-eps) * (1 - alpha)])
    return float(np.max(ndtri(1 - alpha) - ndtri(f)))


@pytest.mark.parametrize("eps", [1.0, 2.0])
def test_randomised_response_one_run_bounds_stay_below_the_truth(eps: float) -> None:
    rng = np.random.default_rng(4)
    members, scores, folds = one_run_games(
        rng, 500, 200, lambda mem: (mem ^ (rng.random(mem.shape) > expit(eps))).astype(float)
    )
    eps_lower = combined(scores, members, folds, eps_game(0.0))
    assert np.mean(eps_lower > eps) <= 0.05
    assert np.median(eps_lower) > 0.4 * eps
    assert np.mean(combined(scores, members, folds, one_run_gdp_mu_lower_bounds) > rr_mu(eps)) <= 0.05


# --- the pieces ------------------------------------------------------------------------------------------


def test_gdp_recursion_is_monotone_and_perfect_guesses_grow_with_m() -> None:
    mus = np.linspace(0, 4, 41)
    rejected = gdp_rejected(mus, 200, 100, 95, 0.05)
    assert rejected[0] and not rejected[-1] and np.all(np.diff(rejected.astype(int)) <= 0)
    assert one_run_gdp_mu_lower_bound(100, 100, 100, 0.95) < one_run_gdp_mu_lower_bound(400, 400, 400, 0.95)
    assert one_run_gdp_mu_lower_bound(100, 50, 25, 0.95) == 0.0  # chance accuracy rejects nothing


def test_counts_functions_agree_with_the_roc_functions() -> None:
    rng = np.random.default_rng(5)
    members = np.arange(60) < 30
    roc = RocCurve.from_scores(rng.normal(size=60) + members, members)
    inner = slice(1, len(roc.tp) - 1)
    assert bonferroni_epsilon_lower_bound(
        roc.tp[inner], roc.fp[inner], 30, 30, 0.0, confidence=0.95
    ) == empirical_epsilon_lower_bound(roc, 0.0, confidence=0.95)
    # one threshold fixed in advance, 20 / 20 perfectly separated: log((a^(1/20)) / (1 - a^(1/20))) with a = 0.025
    a = 0.025
    assert epsilon_lower_bounds_from_counts(20, 0, 20, 20, 0.0, a)[0, 0] == pytest.approx(
        math.log(a**0.05 / (1 - a**0.05))
    )
    mu = gdp_mu_lower_bounds_from_counts(np.array([20]), np.array([0]), 20, 20, a)[0]
    assert mu == pytest.approx(ndtri(1 - (1 - a**0.05)) - ndtri(1 - a**0.05))


def test_held_out_and_bonferroni_bounds_prove_a_small_perfect_audit() -> None:
    """20 members and 20 non-members perfectly separated. The folds ignore membership, so the test fold's member
    share varies with the seed and the held-out bound no longer beats Bonferroni on every seed (it did when the
    folds were balanced by membership, which let the selection fold predict the test fold's coins)."""
    members = np.arange(40)[None] >= 20
    scores = np.arange(40.0)[None]
    roc = RocCurve.from_scores(scores, members)
    held, point = holdout_lower_bound(
        scores, members, target_folds(np.zeros(40), 0, 0.25), epsilon_counts_bound(0.0), 0.975
    )
    assert held > 0.5 and empirical_epsilon_lower_bound(roc, 0.0, confidence=0.975) > 0.5
    assert point is not None and point.fpr == 0.0 and point.tpr > 0.5  # the gap as fold 0 sees it
    assert (
        cross_fitted_epsilon(
            scores, members, target_folds(np.zeros(40), 0), 0.0, min_count=0, rule="lower_bound", confidence=0.95
        )
        > 1.0
    )


def _gdp_eps(mu: float, delta: float) -> float:
    from synbench.core.privacy import gdp_epsilon

    return gdp_epsilon(mu, delta)


def test_ndtr_sanity() -> None:
    assert ndtr(0.0) == 0.5


# --- several attacks: the combined bound -----------------------------------------------------------------


def rr_scores(rng: np.random.Generator, members: np.ndarray, eps: float) -> np.ndarray:
    """Randomised response with known eps (exactly eps-DP per coin), ties broken by noise independent of membership."""
    return (members ^ (rng.random(members.shape) > expit(eps))) + 0.01 * rng.random(members.shape)


@pytest.mark.slow  # a coverage simulation over both audit modes
@pytest.mark.parametrize("mode", ["one_run", "k_subsets"])
def test_combined_bound_over_attacks_holds_under_the_null(mode: str) -> None:
    """Three attacks (two of them correlated) that know nothing: the combined bound is 0 in >= 95% of 200 audits."""
    rng = np.random.default_rng(6)
    cfg = AuditOptions(mode=mode)
    zero = 0
    for trial in range(200):
        members = rng.random((1, 200)) < 0.5 if mode == "one_run" else pair_design(rng, 1, 100)
        a = rng.normal(size=members.shape)
        attacks = [a, 0.7 * a + 0.7 * rng.normal(size=members.shape), rng.normal(size=members.shape)]
        found, _, chosen = bounds(
            attacks, members, target_folds(np.zeros(members.shape[1]), trial, cfg.select_share), cfg, 0.0
        )
        zero += found["eps_emp_lower"] == 0.0
        assert 0 <= chosen < 3
    assert zero / 200 >= 0.95, zero


@pytest.mark.slow  # 200 one-run audits of three attacks: ~1.5 min on 2 cores
def test_combined_bound_over_attacks_stays_below_a_known_eps_and_finds_the_leaking_attack() -> None:
    """One attack sees randomised response at eps = 1, two see nothing: the combined bound exceeds 1 in <= 5% of
    audits."""
    rng = np.random.default_rng(7)
    cfg = AuditOptions(mode="one_run")
    found, chose_rr = [], 0
    for trial in range(200):
        members = rng.random((1, 300)) < 0.5
        attacks = [rng.normal(size=(1, 300)), rr_scores(rng, members, 1.0), rng.normal(size=(1, 300))]
        out, _, chosen = bounds(
            attacks, members, target_folds(np.zeros(members.shape[1]), trial, cfg.select_share), cfg, 0.0
        )
        found.append(out["eps_emp_lower"])
        chose_rr += chosen == 1
    assert np.mean(np.array(found) > 1.0) <= 0.05
    assert np.median(found) > 0.3  # the leak is seen through the two blind attacks
    assert chose_rr / 200 >= 0.8  # the held-out choice picks the attack that sees it


def test_summary_reports_each_attack_and_the_combined_bound() -> None:
    rng = np.random.default_rng(8)
    members = rng.random((1, 300)) < 0.5
    scores = {"blind": rng.normal(size=(1, 300)), "sees": rr_scores(rng, members, 3.0)}
    out, _, _ = summarise(scores, members, AuditOptions(mode="one_run"), 0.0)
    assert out["attack_chosen"] == "sees" and out["blind.eps_emp_lower"] == 0.0
    assert out["sees.eps_emp_lower"] > 1.0 and out["eps_emp_lower"] > 1.0
    # the combined bound pays for the choice: never above what the leaking attack proves alone at the full level
    assert out["eps_emp_lower"] <= out["sees.eps_emp_lower"] + 1e-9
    assert out["auc"] == out["sees.auc"]


# --- the pooled one-run game -------------------------------------------------------------------------------


@pytest.mark.slow  # 400 one-run games of up to 450 trials: ~2 min each on 2 cores
@pytest.mark.parametrize("eps", [0.5, 1.0])
def test_pooled_game_of_three_runs_stays_below_a_known_eps_and_gains_power(eps: float) -> None:
    """R = 3 independent runs of an eps-DP mechanism (randomised response) pooled into one game of 3 x 150 trials."""
    from synbench.audit.repeats import pool_games

    rng = np.random.default_rng(9)
    cfg = AuditOptions(mode="one_run")
    pooled, single = [], []
    for trial in range(200):
        members = [rng.random((1, 150)) < 0.5 for _ in range(3)]
        runs = [{"rr": rr_scores(rng, m, eps)} for m in members]
        scores, pooled_members, kinds = pool_games(runs, members, [np.zeros(150, dtype=np.int8)] * 3)
        assert scores["rr"].shape == pooled_members.shape == (1, 450) and kinds.shape == (450,)
        folds = target_folds(np.zeros(450), trial, cfg.select_share)
        pooled.append(bounds([scores["rr"]], pooled_members, folds, cfg, 0.0)[0]["eps_emp_lower"])
        single.append(
            bounds([runs[0]["rr"]], members[0], target_folds(np.zeros(150), trial, cfg.select_share), cfg, 0.0)[0][
                "eps_emp_lower"
            ]
        )
    assert np.mean(np.array(pooled) > eps) <= 0.05
    assert np.median(pooled) > np.median(single)  # three runs prove more than one
