"""Known answers for what a verdict could have seen: perfect scores never "consistent", each target kind's own bound
decides, a consistent verdict names the smallest planted leak it would have certified, and the default audit runs
every shipped attack."""

from __future__ import annotations

from importlib.metadata import entry_points

import numpy as np
import pytest
from hydra import compose, initialize_config_module

from synbench.audit.config import AuditOptions
from synbench.audit.design import make_design
from synbench.audit.power import DRAWS, LEAK_SHARES, POWER, planted_scores
from synbench.audit.summary import family_level, summarise

ONE_RUN = AuditOptions(mode="one_run")


def default_design(seed: int):
    """The default one-run design's shape: 24 outlier targets (what the demo corpus's outlier criteria find) and the
    default 300 canaries."""
    return make_design(2000, np.arange(24), AuditOptions(mode="one_run"), seed=seed)


@pytest.mark.slow
def test_perfect_scores_are_never_consistent_on_any_coin_draw() -> None:
    """Perfect scores on 6 coin draws of the default design, at a claim the design can just certify (the median
    draw's perfect bound is about 3.7): the verdict is a violation or inconclusive, never "consistent" (which would
    say a perfect attack could have shown more than it did). The slow test below takes 100 more draws."""
    eps = 3.6
    for seed in range(6):
        design = default_design(seed)
        members = design.inclusion
        found = summarise(members.astype(float), members, ONE_RUN, 1e-6, design.kinds, seed, eps)[0]
        assert found["verdict"] != "consistent", found["verdict_line"]
        assert found["eps_emp_lower"] == pytest.approx(found["eps_perfect"], abs=1e-9)


@pytest.mark.slow
def test_perfect_scores_are_never_consistent_over_many_draws() -> None:
    for seed in range(6, 106):
        design = default_design(seed)
        members = design.inclusion
        found = summarise(members.astype(float), members, ONE_RUN, 1e-6, design.kinds, seed, 3.6)[0]
        assert found["verdict"] != "consistent", (seed, found["verdict_line"])


def test_one_kinds_own_bound_above_the_claim_is_a_violation() -> None:
    """2,000 outlier targets whose scores say nothing and 100 canaries an attack reads exactly (a prefix leak: only
    the crafted targets leak): every target together certifies no more than eps = 1, the canaries alone, at a third
    of the level, do; the verdict is a violation that names them."""
    design = make_design(8000, np.arange(2000), AuditOptions(mode="one_run", n_canaries=100), seed=3)
    members, kinds = design.inclusion, design.kinds
    scores = np.random.default_rng(3).random(members.shape) + 2.0 * (members & (kinds == 1))
    found = summarise(scores, members, ONE_RUN, 1e-6, kinds, 3, 1.0)[0]
    assert found["families"] == 3
    assert found["eps_emp_lower_holdout"] <= 1.0 and found["eps_emp_lower_bonferroni"] <= 1.0  # every target: no
    assert found["canaries.eps_emp_lower"] > 1.0 and found["eps_emp_lower"] == found["canaries.eps_emp_lower"]
    assert found["verdict"] == "violation" and found["eps_emp_lower_family"] == "canaries"
    assert "(the canaries alone, at 1/3 of the level)" in found["verdict_line"]
    assert found["p_value"] <= 0.05


def test_the_families_split_the_level() -> None:
    assert family_level(ONE_RUN, 1) is ONE_RUN
    assert family_level(ONE_RUN, 3).confidence == pytest.approx(1 - 0.05 / 3)


def quiet_audit(n_targets: int) -> tuple[dict, np.ndarray, np.ndarray]:
    """A one-run design of `n_targets` outlier targets whose scores say nothing, at eps = 1: (figures, members,
    kinds)."""
    design = make_design(2 * n_targets, np.arange(n_targets), AuditOptions(mode="one_run", targets="outliers"), seed=0)
    members, kinds = design.inclusion, design.kinds
    scores = np.random.default_rng(0).random(members.shape)
    return summarise(scores, members, ONE_RUN, 1e-6, kinds, 0, 1.0)[0], members, kinds


def test_a_consistent_verdict_names_the_leak_it_would_have_caught() -> None:
    """1,000 one-run targets, no signal, eps = 1: consistent, with the smallest planted leak its test certifies in
    at least 80% of draws, said in the verdict line, which never reads as "private"."""
    quiet = quiet_audit(1000)[0]
    share = quiet["detectable_leak"]
    assert quiet["verdict"] == "consistent" and share in LEAK_SHARES and quiet["detectable_leak_power"] >= POWER
    assert f"a leak of {share:.0%} of the targets would have been certified" in quiet["verdict_line"]
    assert "no evidence of privacy" in quiet["verdict_line"]


@pytest.mark.slow
def test_the_detectable_leak_is_caught_by_the_audit_itself() -> None:
    """Scores that read a leak of the detectable share of 2,000 targets exactly are found in violation in most
    draws through summarise itself, and the next smaller share of the grid less often."""
    quiet, members, kinds = quiet_audit(2000)
    share = quiet["detectable_leak"]
    smaller = LEAK_SHARES[LEAK_SHARES.index(share) - 1]

    def caught(leak: float, draws: int = 8) -> float:
        rng = np.random.default_rng(1)
        found = []
        for _ in range(draws):
            leaking = rng.random(members.shape) < leak
            scores = planted_scores(members, leaking, False, rng)
            found.append(summarise(scores, members, ONE_RUN, 1e-6, kinds, 0, 1.0)[0]["verdict"] == "violation")
        return float(np.mean(found))

    assert caught(share) >= 0.6 and caught(smaller) < caught(share)


def test_planted_scores_read_exactly_the_leaking_members() -> None:
    rng = np.random.default_rng(0)
    coins = rng.random((DRAWS, 500)) < 0.5
    leaking = rng.random((DRAWS, 500)) < 0.2
    one_run = planted_scores(coins, leaking, False, rng)
    assert (one_run[leaking & coins] > 1).all() and (one_run[~(leaking & coins)] < 1).all()
    pair = planted_scores(coins, leaking, True, rng)
    assert (pair[leaking & coins] > 1).all() and (pair[leaking & ~coins] < -1).all()
    assert (np.abs(pair[~leaking]) <= 0.5).all()


def test_the_default_audit_runs_every_shipped_attack() -> None:
    """task=audit's default attack is every black-box attack the package registers (a new one must join it); the
    paper's audit keeps the authors' n-gram attack alone."""
    shipped = {e.name for e in entry_points(group="synbench.attacks") if e.value.startswith("synbench.")}
    with initialize_config_module(config_module="synbench.conf", version_base="1.3"):
        cfg = compose(config_name="config", overrides=["task=audit"])
        paper = compose(config_name="config", overrides=["+experiment=paper_psytar_audit"])
    assert set(cfg.attack) == shipped and len(shipped) >= 4
    assert set(paper.attack) == {"ngram"}
