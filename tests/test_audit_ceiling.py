"""Known answers for the audit's ceiling and its three-way verdict (synbench.audit.ceiling), and the report's cell.

The ceiling of a one-run design under a perfect attack has a closed form:
every guess is right, so the binomial test of r guesses rejects eps exactly
while q^r <= level, q = e^eps / (1 + e^eps), and the largest such eps is
logit(level^(1/r)). The audit takes the larger of a held-out test (r = the
test fold's guesses, at alpha / 2) and a Bonferroni test (r = every target's
guesses, at alpha / 2 over the 24 points of the guess grid and every
attack); the pair game of a k-subset audit halves it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.special import expit, logit
from scipy.stats import binom

from conftest import write_audit_results
from synbench.audit.ceiling import (
    MAX_TRIALS,
    ceiling,
    k_subsets_design,
    one_run_design,
    typical_coins,
)
from synbench.audit.config import AuditOptions
from synbench.audit.crossfit import target_folds
from synbench.audit.design import make_design
from synbench.audit.one_run import one_run_p_values
from synbench.audit.summary import eps_evidence, summarise
from synbench.report.audit import audit_table
from synbench.report.load import load_results

# the closed forms need the grid's largest shares at 1/2 (the default grid stops at 0.4, so that perfect scores reach
# the ceiling: tests/test_audit_power.py)
HALF_GRID = (0.05, 0.1, 0.25, 0.5)
ONE_RUN = AuditOptions(mode="one_run", guess_fractions=HALF_GRID)
K_SUBSETS = AuditOptions(mode="k_subsets", guess_fractions=HALF_GRID)
GRID_POINTS = 24  # (k+, k-) in {0, 5, 10, 25, 50}% squared, less (0, 0)


def all_right(guesses: int, level: float) -> float:
    """The largest eps that `guesses` right out of `guesses` rejects at `level`: q^r = level."""
    return float(logit(level ** (1 / guesses)))


def even(folds: np.ndarray) -> np.ndarray:
    """Every other trial of each fold a member, the first one included: the split where the grid's largest shares
    (k+ = k- = 1/2) are all right."""
    coins = np.zeros(len(folds), dtype=bool)
    for fold in (0, 1):
        coins[np.flatnonzero(folds == fold)[0::2]] = True
    return coins


def expected_ceiling(folds: np.ndarray, n_attacks: int, alpha: float = 0.05) -> float:
    """The closed form: held-out (the test fold's 2 floor(m1 / 2) guesses at alpha / 2) against Bonferroni (all
    2 floor(m / 2) guesses at alpha / 2 / (24 x attacks))."""
    tested, everything = 2 * (int((folds == 1).sum()) // 2), 2 * (len(folds) // 2)
    return max(all_right(tested, alpha / 2), all_right(everything, alpha / 2 / (GRID_POINTS * n_attacks)))


@pytest.mark.parametrize("n_attacks", [1, 2])
@pytest.mark.parametrize("n_targets", [100, 324, 1000])
def test_one_run_ceiling_of_a_perfect_attack_is_the_closed_form(n_targets: int, n_attacks: int) -> None:
    folds = target_folds(np.zeros(n_targets, dtype=np.int8), 7, ONE_RUN.select_share)
    found = ceiling(eps_evidence(ONE_RUN, 0.0, 1.0), even(folds)[None], folds, n_attacks)
    assert found["eps_ceiling"] == pytest.approx(expected_ceiling(folds, n_attacks), abs=1e-9)
    # 324 targets, one attack: the test fold's 242 guesses give 4.176 (Bonferroni's 324: 3.843)
    if (n_targets, n_attacks) == (324, 1):
        assert found["eps_ceiling"] == pytest.approx(4.176, abs=1e-3)
    assert found["p_value_floor"] <= 0.05  # eps = 1 is below the ceiling: a perfect attack rejects it


def test_k_subsets_ceiling_is_half_the_pair_games() -> None:
    """4 pairs x 50 targets: the pair game's 200 coins, all right, bound 2 eps; the ceiling is half of it."""
    folds = target_folds(np.zeros(50, dtype=np.int8), 3, K_SUBSETS.select_share)
    coins = even(np.tile(folds, 4)).reshape(4, 50)
    members = np.repeat(coins, 2, axis=0)
    members[1::2] = ~coins
    found = ceiling(eps_evidence(K_SUBSETS, 0.0), members, folds)["eps_ceiling"]
    assert found == pytest.approx(expected_ceiling(np.tile(folds, 4), 1) / 2, abs=1e-9)


def test_the_ceiling_grows_with_the_design() -> None:
    evidence = eps_evidence(ONE_RUN, 1e-6)
    one_run = [ceiling(evidence, *one_run_design(n, ONE_RUN.select_share))["eps_ceiling"] for n in (50, 200, 800, 3200)]
    assert np.all(np.diff(one_run) > 0.5), one_run
    folds = target_folds(np.zeros(40, dtype=np.int8), 0, K_SUBSETS.select_share)
    pairs = [ceiling(eps_evidence(K_SUBSETS, 1e-6), *k_subsets_design(p, folds))["eps_ceiling"] for p in (1, 4, 16)]
    assert np.all(np.diff(pairs) > 0.3), pairs


def test_a_typical_draw_is_uneven_by_the_coins_margin() -> None:
    """Known answer: 243 trials in one fold (sd 7.8), 81 in the other (sd 4.5); at 1.05 sd short of half each
    (both folds that close to half in half the draws), 113 and 35 members."""
    folds = np.repeat(np.array([1, 0], dtype=np.int8), [243, 81])
    coins = typical_coins(folds)
    assert int(coins[folds == 1].sum()) == 113 and int(coins[folds == 0].sum()) == 35


def test_the_ceiling_is_the_best_attacks_bound_not_the_perfect_attacks_own() -> None:
    """Known answer, the case a real copier met on the default design: fold 0 (81 targets) holds 40 members, fold 1
    (243) 119. Perfect scores are all right on fold 0 at the grid's largest shares (1/2, 1/2), choose them, and
    make 2 wrong guesses of 242 on fold 1; the same scores with one member and one non-member swapped on fold 0
    choose (1/4, 1/2) instead, whose 60 + 121 guesses on fold 1 are all right: logit(0.025^(1/181)) = 3.883, the
    ceiling. No attack's bound exceeds it: random scores' neither."""
    kinds = np.zeros(324, dtype=np.int8)
    folds = target_folds(kinds, 1, ONE_RUN.select_share)  # the bounds' folds of summarise(..., seed=0)
    members = np.zeros(324, dtype=bool)
    for fold, count in ((0, 40), (1, 119)):
        members[np.flatnonzero(folds == fold)[:count]] = True
    first = np.flatnonzero(folds == 0)
    swapped = members.astype(float)
    swapped[first[members[first]][0]], swapped[first[~members[first]][0]] = 0.5, 0.6
    noise = np.random.default_rng(0).random(324)
    found = {
        name: summarise(scores[None], members[None], ONE_RUN, 0.0, kinds, 0, 4.0)[0]
        for name, scores in (("perfect", members.astype(float)), ("swapped", swapped), ("noise", noise))
    }
    top = all_right(181, 0.025)
    assert top == pytest.approx(3.883, abs=1e-3)
    assert all(f["eps_ceiling"] == pytest.approx(top, abs=1e-9) for f in found.values())
    assert found["swapped"]["eps_emp_lower"] == pytest.approx(top, abs=1e-9)
    assert found["perfect"]["eps_emp_lower"] < top - 0.3 and found["noise"]["eps_emp_lower"] < top


def test_a_copiers_bound_stays_within_its_ceiling_per_kind() -> None:
    """The issue's copier: 24 outliers and 300 canaries, one run, perfect scores: no bound above its ceiling, the
    headline's between 3 and 4 at eps = 4 (inconclusive), and the 24 outliers alone far below."""
    design = make_design(2000, np.arange(24), AuditOptions(mode="one_run", n_canaries=300), seed=0)
    members, kinds = design.inclusion, design.kinds
    copier, _, _ = summarise(members.astype(float), members, ONE_RUN, 1e-6, kinds, 0, 4.0)
    for prefix in ("", "outliers.", "canaries."):
        assert copier[f"{prefix}eps_emp_lower"] <= copier[f"{prefix}eps_ceiling"] + 1e-12
    assert 3.0 < copier["eps_ceiling"] <= 4.0 and copier["verdict"] == "inconclusive"
    assert copier["outliers.eps_ceiling"] < 2.0 < copier["canaries.eps_ceiling"]


def one_run_audit(n_targets: int, eps: float, leak: float, seed: int = 0, copies: int = 1) -> dict[str, Any]:
    """summarise of a one-run design of `n_targets` outliers (or canaries in groups of `copies`) whose scores give
    membership away with weight `leak` (0: none; large: a copier)."""
    canaries = n_targets if copies > 1 else 0
    rule = AuditOptions(mode="one_run", targets="both" if canaries else "outliers", n_canaries=canaries)
    design = make_design(4000, np.arange(n_targets - canaries), rule, seed=seed)
    members = design.inclusion
    scores = leak * members + np.random.default_rng(seed).random(members.shape)
    return summarise(scores, members, ONE_RUN, 1e-6, design.kinds, seed, eps, copies)[0]


@pytest.mark.slow
def test_verdict_violation_consistent_and_no_claim() -> None:
    leaky = one_run_audit(324, 1.0, 10.0)
    assert leaky["verdict"] == "violation" and leaky["eps_emp_lower"] > 1.0
    assert leaky["verdict_line"].startswith(f"violation: eps_emp_lower {leaky['eps_emp_lower']:.2f} > nominal eps 1")
    quiet = one_run_audit(2000, 1.0, 0.0)  # a design that could show eps = 1, and scores that show nothing
    assert quiet["verdict"] == "consistent" and quiet["eps_emp_lower"] <= 1.0 < quiet["eps_ceiling"]
    assert quiet["n_needed"] is None and quiet["verdict_line"].startswith("consistent: ")
    assert quiet["p_value_floor"] <= 0.05  # the report's test of the same thing: a perfect attack would reject
    unclaimed = one_run_audit(324, math.inf, 10.0)
    assert unclaimed["verdict"] == "no claim" and unclaimed["n_needed"] is None


@pytest.fixture(scope="module")
def copier() -> dict[str, Any]:
    """A copier on 200 one-run targets at eps = 8 (seed 0): no attack could catch it."""
    return one_run_audit(200, 8.0, 10.0)


def test_an_inconclusive_verdict_names_a_design_that_would_certify(copier: dict[str, Any]) -> None:
    """The copier is inconclusive, and the design of n_needed targets does certify eps = 8 (a smaller one by the
    search's precision does not)."""
    found = copier
    needed = found["n_needed"]
    assert found["verdict"] == "inconclusive" and found["eps_emp_lower"] <= found["eps_ceiling"] <= 8.0
    assert found["n_needed_unit"] == "targets" and 10_000 < needed < 40_000
    assert found["p_value_floor"] > 0.05  # not even a perfect attack would reject eps = 8
    evidence = eps_evidence(ONE_RUN, 1e-6, 8.0)
    assert ceiling(evidence, *one_run_design(needed, ONE_RUN.select_share))["eps_ceiling"] > 8.0
    assert ceiling(evidence, *one_run_design(needed - needed // 64, ONE_RUN.select_share))["eps_ceiling"] <= 8.0
    assert found["verdict_line"] == (
        f"inconclusive: eps_emp_lower {found['eps_emp_lower']:.2f} <= {found['eps_perfect']:.2f}, what a perfect "
        f"attack certifies here, <= nominal eps 8; a perfect attack would need about {needed:,} targets to certify it "
        "(a typical coin draw)"
    )
    beyond = one_run_audit(200, 14.0, 10.0)  # about 10^6 targets: past the search
    assert beyond["verdict"] == "inconclusive" and beyond["n_needed"] is None
    assert f"no design of up to {MAX_TRIALS:,} trials" in beyond["verdict_line"]


def test_k_subsets_inconclusive_counts_runs() -> None:
    design = make_design(3000, np.arange(40), AuditOptions(targets="outliers", n_subsets=4), seed=1)
    members = design.inclusion
    found, _, _ = summarise(members.astype(float), members, K_SUBSETS, 1e-6, design.kinds, 1, 2.0)
    assert found["verdict"] == "inconclusive" and found["n_needed_unit"] == "runs" and found["n_needed"] % 2 == 0
    folds = target_folds(design.kinds, 2, K_SUBSETS.select_share)  # the bounds' folds (seed + 1)
    top = ceiling(eps_evidence(K_SUBSETS, 1e-6, 2.0), *k_subsets_design(found["n_needed"] // 2, folds))
    assert top["eps_ceiling"] > 2.0


def test_canary_groups_are_judged_against_the_group_claim() -> None:
    """Canaries of 2 copies at eps = 2 test the claim 4: a copier's ceiling of about 3.5 on 300 canaries is above
    the nominal eps but not the claim, so the verdict is inconclusive, not consistent."""
    found = one_run_audit(300, 2.0, 10.0, copies=2)
    assert found["claim_epsilon"] == 4.0 and 2.0 < found["eps_ceiling"] <= 4.0
    assert found["verdict"] == "inconclusive"
    assert "<= group claim eps 4 (canaries of 2 copies, nominal eps 2);" in found["verdict_line"]


def write_job(root: Path, name: str, eps: float, seed: int, audit: dict[str, Any]) -> None:
    write_audit_results(root, name, name.split(",")[0], eps, seed, 1e-6, audit)


@pytest.mark.slow
def test_the_report_never_says_no_for_an_audit_that_could_not_have_seen(tmp_path: Path, copier: dict[str, Any]) -> None:
    """What summarise writes, read by the report: a copier on 200 targets at eps = 8 (one and two seeds) is
    inconclusive with its ceiling and n_needed; a quiet audit on 2000 targets at eps = 1 is consistent."""
    copier = [copier, one_run_audit(200, 8.0, 10.0, 1)]
    write_job(tmp_path, "copier,seed=0", 8.0, 0, copier[0])
    for seed, found in enumerate(copier):
        write_job(tmp_path, f"copiers,seed={seed}", 8.0, seed, found)
    write_job(tmp_path, "quiet,seed=0", 1.0, 0, one_run_audit(2000, 1.0, 0.0))
    # the same design claiming eps = 14, which no design size can certify (written as summarise would)
    write_job(tmp_path, "unreachable,seed=0", 14.0, 0, copier[0] | {"claim_epsilon": 14.0, "n_needed": None})
    table = audit_table(load_results(tmp_path), 0.95)
    cells = {row[1].text: (row[-2].text, row[-1].text) for row in table.rows}
    assert table.columns[-3:] == ("eps_emp_lower", "eps_ceiling", "verdict")
    top = max(found["eps_perfect"] for found in copier)
    assert cells["copier"][1] == (
        f"inconclusive (a perfect attack certifies {copier[0]['eps_perfect']:.2f} ≤ ε 8; "
        f"needs {copier[0]['n_needed']:,} targets)"
    )
    needed = max(found["n_needed"] for found in copier)
    assert cells["copiers"][1] == f"inconclusive (a perfect attack certifies {top:.2f} ≤ ε 8; needs {needed:,} targets)"
    quiet = cells["quiet"][1]  # what the design could have seen, from the job's planted-leak simulation
    assert quiet.startswith("consistent; a leak of ") and quiet.endswith(
        " would have been certified, a smaller one need not"
    )
    assert cells["unreachable"][1] == (
        f"inconclusive (a perfect attack certifies {copier[0]['eps_perfect']:.2f} ≤ ε 14; "
        "no design size searched would do)"
    )
    assert not any(verdict.split()[0] in ("no", "no:") for _, verdict in cells.values())


def test_the_report_reads_what_n_needed_counts_from_the_results_file(tmp_path: Path, copier: dict[str, Any]) -> None:
    """The unit of n_needed is the one the audit wrote beside it (a k-subsets audit counts runs): the report keeps
    no table of its own; a file from before the audit searched a size holds neither, and the report says so."""
    write_job(tmp_path, "runs,seed=0", 8.0, 0, copier | {"n_needed_unit": "runs"})
    write_job(tmp_path, "old,seed=0", 8.0, 0, {k: v for k, v in copier.items() if not k.startswith("n_needed")})
    cells = {row[1].text: row[-1].text for row in audit_table(load_results(tmp_path), 0.95).rows}
    assert copier["n_needed_unit"] == "targets" and cells["runs"].endswith(f"needs {copier['n_needed']:,} runs)")
    assert cells["old"].endswith("; no design size recorded (re-run the audit))")


def test_the_delta_term_stops_early_and_equals_the_full_sum() -> None:
    """one_run_p_values sums Steinke et al.'s delta term only while a later term can raise its maximum: the same
    p-values as the full sum over i = 1..v, on random games and on the ceiling's long perfect ones."""
    rng = np.random.default_rng(1)
    m = np.concatenate([rng.integers(1, 3000, 300), [20_000, 20_000]])
    r = np.concatenate([(m[:300] * rng.random(300)).astype(int), [20_000, 15_000]])
    v = np.concatenate([(r[:300] * rng.random(300) ** 0.2).astype(int), [20_000, 15_000]])
    eps = np.concatenate([rng.random(300) * 10, [8.0, 8.0]])
    q, delta = expit(eps), 1e-6
    i = np.arange(1, v.max() + 1)[:, None]
    terms = np.where(i <= v, binom.pmf(v - i, r, q), 0.0)
    full = binom.sf(v - 1, r, q) + 2 * m * delta * np.where(i <= v, np.cumsum(terms, axis=0) / i, 0.0).max(axis=0)
    np.testing.assert_allclose(one_run_p_values(m, r, v, eps, delta), np.minimum(full, 1.0), rtol=1e-12, atol=0)
