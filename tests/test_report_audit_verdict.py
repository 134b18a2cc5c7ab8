"""The report's verdict: seeds are one game (Bonferroni over seeds), canary groups get their own claim, and a row
that rejects nothing is consistent or inconclusive by what a perfect attack could have shown at the same level."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.special import expit

from conftest import write_audit_results
from synbench.audit import AuditOptions
from synbench.audit.crossfit import target_folds
from synbench.audit.evidence import game_evidence
from synbench.report.audit import audit_detail_table, audit_table, rejected
from synbench.report.load import load_results


def write_audit(root: Path, name: str, eps: float, seed: int, audit: dict[str, Any]) -> None:
    summary = {"mode": "one_run", "auc": 0.7, "eps_emp": 0.5, "confidence": 0.95, **audit}
    write_audit_results(root, name, "gen", eps, seed, 1e-5, summary)


def test_three_seeds_are_tested_at_alpha_over_three_not_any_seed_exceeds(tmp_path: Path) -> None:
    """Known answer: seed 0's bound exceeds eps = 1 at its own 95% (p = 0.03), which "any seed exceeds" called a
    violation; over three seeds each is tested at 0.05 / 3, and p = 0.03 is no violation. A perfect attack's
    p-value of 0.001 would have been one: consistent. One of 0.03 in every seed (each seed's ceiling 1.2 above
    eps at its own 95%) would not have been at 0.05 / 3: inconclusive, never "no"."""
    perfect = {"eps_ceiling": 4.0, "p_value_floor": 0.001}
    for seed, (lower, p) in enumerate([(1.2, 0.03), (0.4, 0.4), (0.0, 1.0)]):
        write_audit(tmp_path, f"mild,seed={seed}", 1.0, seed, {"eps_emp_lower": lower, "p_value": p, **perfect})
    for seed, (lower, p) in enumerate([(1.6, 0.01), (0.4, 0.4), (0.0, 1.0)]):
        write_audit(tmp_path, f"strong,seed={seed}", 1.0, seed, {"eps_emp_lower": lower, "p_value": p, **perfect})
    for seed in range(3):
        small = {"eps_emp_lower": 0.4, "p_value": 0.4, "eps_ceiling": 1.2, "p_value_floor": 0.03}
        write_audit(tmp_path, f"small,seed={seed}", 1.0, seed, small)
    frame = load_results(tmp_path)
    for name in ("strong", "small"):
        frame.loc[frame["job"].str.startswith(f"audit/{name}"), "generator"] = name
    rows = {row[1].text: row[-1] for row in audit_table(frame, 0.95).rows}
    assert rows["gen"].text == "consistent (3 tests (seeds x claims), each at α/3)" and rows["gen"].kind == ""
    assert rows["strong"].text == "VIOLATION: seed 0 (3 tests (seeds x claims), each at α/3)"
    assert rows["strong"].kind == "violation"
    assert rows["small"].text == "inconclusive (ceiling 1.20 > ε 1 per seed, not at the row's α/3)"


def test_canary_groups_are_tested_against_their_group_claim(tmp_path: Path) -> None:
    """Known answer: canaries of 2 copies with a bound of 1.5 at eps = 1 violate nothing (their claim is 2 eps);
    a canary p-value of 0.001 against that claim is a violation, and so is the outliers' at (eps, delta). Before,
    such a row said "n/a"."""
    groups = {
        "canary_repeats": 2,
        "eps_emp_lower": 1.5,
        "eps_emp_lower_holdout": 1.5,
        "p_value": 0.2,
        "claim_epsilon": 2.0,
    }
    kinds = {
        "outliers.eps_emp_lower": 0.2,
        "outliers.claim_epsilon": 1.0,
        "canaries.claim_epsilon": 2.0,
        "outliers.p_value_floor": 0.4,  # 24 outliers cannot reject eps = 1 at alpha / 2; 300 canaries can their claim
        "canaries.p_value_floor": 0.001,
    }
    write_audit(tmp_path, "a", 1.0, 0, {**groups, **kinds, "outliers.p_value": 0.5, "canaries.p_value": 0.3})
    write_audit(tmp_path, "b", 2.0, 0, {**groups, **kinds, "outliers.p_value": 0.5, "canaries.p_value": 0.001})
    write_audit(tmp_path, "c", 4.0, 0, {**groups, **kinds, "outliers.p_value": 0.02, "canaries.p_value": 0.9})
    table = audit_table(load_results(tmp_path), 0.95)
    found = {row[3].text: row[-1].text for row in table.rows}
    assert found["1"] == "consistent (2 tests (seeds x claims), each at α/2)"
    assert found["2"] == "VIOLATION: canary groups, seed 0 (2 tests (seeds x claims), each at α/2)"
    assert found["4"] == "VIOLATION: outliers, seed 0 (2 tests (seeds x claims), each at α/2)"
    detail = audit_detail_table(load_results(tmp_path), 0.95)
    claim = detail.columns.index("claim ε")
    assert [row[claim].text for row in detail.rows if row[4].text == "canaries"] == ["2", "2", "2"]


# --- coverage of the seed verdict -----------------------------------------------------------------------------


@pytest.mark.parametrize("seeds", [3, 5])
def test_seed_verdict_coverage(seeds: int) -> None:
    """2,000 rows of `seeds` one-run audits each of randomised response at exactly eps = 1 (300 targets): the
    verdict (`rejected` on the seeds' p-values) calls a violation in at most 5% + 2 SE of rows, where "any seed's
    bound exceeds eps" calls one far more often."""
    rows, eps, cfg = 2000, 1.0, AuditOptions(mode="one_run")
    rng = np.random.default_rng(seeds)
    members = rng.random((rows * seeds, 300)) < 0.5
    scores = (members ^ (rng.random(members.shape) > expit(eps))) + 0.01 * rng.random(members.shape)
    folds = np.stack([target_folds(np.zeros(300), g + 1, cfg.select_share) for g in range(rows * seeds)])
    found = game_evidence([scores], members, folds, cfg.guess_fractions, 0.05, 0.0, eps)
    p, bound = found.p_value.reshape(rows, seeds), found.bound.reshape(rows, seeds)
    verdict = np.array([rejected(row, 0.95).any() for row in p])
    se = math.sqrt(0.05 * 0.95 / rows)
    assert verdict.mean() <= 0.05 + 2 * se
    assert (bound > eps).any(axis=1).mean() > verdict.mean()
