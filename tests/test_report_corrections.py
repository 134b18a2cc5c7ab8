"""No uncorrected second verdict in the report: a row's disclosure flag over its seeds, and an audit row's claim tested
in two tables.

A row's disclosure check is flagged when a seed's p-value is below alpha / S for its S seeds (Bonferroni): under the
null (a release that reproduces nothing, so each seed's exact-test p-value is uniform or conservative) the row is
flagged with probability at most alpha, where "any seed's job flagged it" is flagged 1 - 0.95^5 = 23% of the time at
5 seeds. A one-run audit whose pooled game the pooled table tests too is tested at alpha / 2 in each table.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import fisher_exact

from conftest import write_audit_results, write_job_results
from synbench.report.audit import audit_table, pooled_table
from synbench.report.load import load_results
from synbench.report.table import disclosure_row, flagged_seeds

CONFIDENCE = 0.95
ALPHA = 1 - CONFIDENCE
SEEDS = 5


def upper(rate: float, n: int) -> float:
    """alpha plus three binomial standard errors of a rate over n draws: what a null rate at most alpha stays under."""
    return ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / n)


def test_uniform_null_p_values_flag_a_five_seed_row_at_most_alpha() -> None:
    p = np.random.default_rng(0).uniform(size=(20_000, SEEDS))
    rate = float(np.mean([flagged_seeds(row, CONFIDENCE).any() for row in p]))
    assert rate <= upper(ALPHA, len(p))  # 1 - 0.99^5 = 0.049
    assert (p < ALPHA).any(axis=1).mean() > 0.2  # any seed's own flag: 1 - 0.95^5 = 0.226


def test_fisher_on_random_splits_flags_a_five_seed_row_at_most_alpha() -> None:
    """Each seed: 120 documents, a random 60 private, each reappearing with probability 0.1 whatever its side (a
    release that depends on no private document); the exact test's p-values are conservative."""
    rng = np.random.default_rng(1)
    runs = 2_000
    flagged = 0
    for _ in range(runs):
        p = []
        for _ in range(SEEDS):
            private = rng.permutation(120) < 60
            reappear = rng.uniform(size=120) < 0.1
            k, j = int((reappear & private).sum()), int((reappear & ~private).sum())
            p.append(fisher_exact([[k, 60 - k], [j, 60 - j]], alternative="greater").pvalue)
        flagged += bool(flagged_seeds(np.array(p), CONFIDENCE).any())
    assert flagged / runs <= upper(ALPHA, runs)


def checks(p_values: list[float], status: list[str] | None = None) -> pd.DataFrame:
    """A row's finished jobs with disclosure counts, each seed's p-value and the job's own flag at alpha."""
    words = status or ["flagged" if p < ALPHA else "not flagged" for p in p_values]
    return pd.DataFrame(
        {
            "seed": range(len(p_values)),
            "disclosure.private_reappear": 1,
            "disclosure.n_private": 50,
            "disclosure.unseen_reappear": 0,
            "disclosure.n_unseen": 50,
            "disclosure.p_value": p_values,
            "disclosure.flagged": [float(p < ALPHA) for p in p_values],
            "disclosure.status": words,
        }
    )


def test_a_row_is_flagged_below_alpha_over_its_seeds_and_names_a_seed_flagged_alone() -> None:
    alone = disclosure_row(checks([0.02, 0.5, 0.5, 0.5, 0.5]), CONFIDENCE)
    assert alone is not None and not alone.flagged
    assert str(alone) == "5/250 private, 0/250 unseen†: not flagged (5 seeds, each at α/5; seed 0 below α alone)"
    found = disclosure_row(checks([0.02, 0.005, 0.5, 0.5, 0.5]), CONFIDENCE)
    assert found is not None and found.verdict() == "FLAGGED (seed 1: p below α/5)"
    one = disclosure_row(checks([0.02]), CONFIDENCE)  # one seed: its own test, at alpha
    assert one is not None and one.verdict() == "FLAGGED (seed 0: p below α)"


def test_a_count_the_test_could_not_attribute_is_said_in_words_never_not_flagged() -> None:
    some = disclosure_row(checks([0.5, 0.5], ["not flagged", "below attribution"]), CONFIDENCE)
    assert some is not None and some.verdict() == "not flagged (seed 0, each at α/2); seed 1: below attribution"
    none = disclosure_row(checks([1.0, 1.0], ["could not check", "could not check"]), CONFIDENCE)
    assert none is not None and none.verdict() == "seed 0: could not check; seed 1: could not check"


def one_run(p_value: float, pooled: dict[str, Any] | None) -> dict[str, Any]:
    """A one-run audit at eps=1 whose first run's test of the claim gave `p_value`, with its pooled game's figures."""
    audit = {
        "mode": "one_run",
        "confidence": CONFIDENCE,
        "claim_epsilon": 1.0,
        "eps_emp_lower": 1.4,
        "eps_ceiling": 3.0,
        "p_value": p_value,
        "p_value_floor": 1e-9,
    }
    return audit | ({"repeats": 2, "pooled": pooled} if pooled else {})


def test_a_claim_two_tables_test_is_tested_at_half_alpha_in_each(tmp_path: Path) -> None:
    """p = 0.03 rejects the claim at alpha alone; tested by the audit table and the pooled table, each at alpha / 2,
    it does not, and p = 0.02 does in the table that holds it, saying at what level."""
    pooled = {"eps_emp_lower": 0.9, "p_value": 0.4, "p_value_floor": 1e-9, "n_trials": 400}
    for name, p, games in (("alone", 0.03, None), ("both", 0.03, pooled), ("both-low", 0.02, pooled)):
        write_audit_results(tmp_path / name, "job", "gamma", 1.0, 0, 1e-5, one_run(p, games))
    alone, both, low = (audit_table(load_results(tmp_path / n), CONFIDENCE) for n in ("alone", "both", "both-low"))
    assert alone is not None and both is not None and low is not None
    assert alone.rows[0][-1].text == "VIOLATION"
    assert both.rows[0][-1].text == "consistent (2 tests (seeds x claims x tables), each at α/2)"
    assert low.rows[0][-1].text == "VIOLATION (2 tests (seeds x claims x tables), each at α/2)"
    table = pooled_table(load_results(tmp_path / "both-low"), CONFIDENCE)
    assert table is not None and table.rows[0][-1].text == "consistent (2 tests (seeds x claims x tables), each at α/2)"


def test_a_pooled_job_that_halved_its_own_level_is_not_halved_again(tmp_path: Path) -> None:
    """A pooled one-run job records its runs' level halved (0.975) beside the level it was configured at (0.95):
    the report splits the configured one over the two tables, once, so p = 0.02 rejects at α/2."""
    pooled = {"eps_emp_lower": 0.9, "p_value": 0.4, "p_value_floor": 1e-9, "n_trials": 400}
    audit = one_run(0.02, pooled) | {"confidence": 0.975}
    results = {"task": "audit", "dataset": "toyset", "generator": "gamma", "epsilon": 1.0, "seed": 0}
    results |= {"status": "complete", "audit": audit, "config": {"audit": {"confidence": CONFIDENCE}}}
    write_job_results(tmp_path, "job", results)
    table = audit_table(load_results(tmp_path), CONFIDENCE)
    assert table is not None and table.rows[0][-1].text == "VIOLATION (2 tests (seeds x claims x tables), each at α/2)"
