"""The report's per-attack and pooled one-run audit figures, on results.json files written by hand.

Keys as synbench.audit.summary and synbench.audit.repeats write them:
`<attack>.<key>` and `attack_chosen` for a job that ran several attacks,
`pooled.<key>` (the pooled game of a one-run audit with repeats) beside
`repeats` and `eps_emp_lower_mean` / `_ci_low` / `_ci_high`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from synbench.report.audit import attack_table, pooled_table
from synbench.report.build import write_report
from synbench.report.load import load_results


def write_audit(root: Path, name: str, eps: float | str, audit: dict[str, Any], **extra: Any) -> None:
    job = root / "audit" / name
    job.mkdir(parents=True)
    results = {
        "task": "audit",
        "dataset": "toyset",
        "generator": "alpha",
        "epsilon": eps,
        "seed": 0,
        "status": "complete",
        "delta": 1e-5,
        "noise": "secure",
        "non_dp_outputs": [],
        "audit": {"mode": "k_subsets", "auc": 0.9, "eps_emp": 1.0, "canary_repeats": 1, **audit},
        **extra,
    }
    (job / "results.json").write_text(json.dumps(results))


def attacks(prefix: str, ngram: tuple[float, float], similarity: tuple[float, float]) -> dict[str, float]:
    """Each attack's (AUC, eps_emp_lower) under `prefix` (`` or `pooled.`), as summarise writes them."""
    return {
        f"{prefix}{name}.{key}": value
        for name, (auc, lower) in (("ngram", ngram), ("similarity", similarity))
        for key, value in (("auc", auc), ("eps_emp", lower + 0.2), ("eps_emp_lower", lower))
    }


def pooled(lower: float, runs: int = 3) -> dict[str, Any]:
    """A one-run audit of `runs` repeats: the first run's bound 0.4 (ceiling 3, which a perfect attack's p-value of
    0.001 makes consistent at eps <= 3), the runs' mean 0.5 [0.2, 0.8], pooled `lower` (ceiling 5.5); TPR at FPR 0.1
    with its mean and interval over the repeats, as repeat_summary writes every TPR."""
    return {
        "mode": "one_run",
        "eps_emp_lower": 0.4,
        "eps_ceiling": 3.0,
        "p_value_floor": 0.001,
        "pooled.eps_ceiling": 5.5,
        "pooled.p_value_floor": 1e-5,
        "tpr_at_fpr_0.1": 0.3,
        **{f"tpr_at_fpr_0.1_{end}": 0.3 for end in ("mean", "ci_low", "ci_high")},
        "repeats": runs,
        "eps_emp_lower_mean": 0.5,
        "eps_emp_lower_ci_low": 0.2,
        "eps_emp_lower_ci_high": 0.8,
        "pooled.n_trials": 500 * runs,
        "pooled.auc": 0.8,
        "pooled.eps_emp_lower": lower,
        **{f"eps_emp_lower_run_{r}": 0.4 for r in range(runs)},
    }


def texts(row: tuple) -> list[str]:
    return [cell.text for cell in row]


@pytest.fixture
def sweep(tmp_path: Path) -> Path:
    both = attacks("", (0.55, 0.0), (0.93, 1.4))
    write_audit(tmp_path, "eps=1,generator=alpha", 1.0, {**both, "eps_emp_lower": 1.3, "attack_chosen": "similarity"})
    for seed, chosen in enumerate(("ngram", "similarity")):  # two seeds that chose differently
        figures = {**attacks("", (0.6 + seed / 10, 0.2), (0.7, 0.1)), "eps_emp_lower": 0.3, "attack_chosen": chosen}
        write_audit(tmp_path, f"eps=4,generator=beta,seed={seed}", 4.0, figures, generator="beta", seed=seed)
    write_audit(  # one-run, two attacks, 3 repeats: the first run's bound proves nothing, the pooled one does
        tmp_path,
        "eps=1,generator=gamma",
        1.0,
        {
            **pooled(1.2),
            **attacks("", (0.6, 0.1), (0.7, 0.4)),
            **attacks("pooled.", (0.62, 0.3), (0.75, 1.25)),
            "attack_chosen": "similarity",
            "pooled.attack_chosen": "similarity",
        },
        generator="gamma",
    )
    write_audit(tmp_path, "eps=4,generator=delta", 4.0, pooled(0.9), generator="delta")  # one attack, pooled
    write_audit(tmp_path, "eps=4,generator=copy", 4.0, pooled(5.0), generator="copy", non_private_control=True)
    write_audit(tmp_path, "eps=1,generator=grouped", 1.0, pooled(3.0) | {"canary_repeats": 2}, generator="grouped")
    write_audit(tmp_path, "eps=inf,generator=delta", "inf", pooled(3.0), generator="delta")
    return tmp_path


def test_each_attack_has_its_figures_beside_the_combined_bound(sweep: Path) -> None:
    table = attack_table(load_results(sweep), 0.95)
    assert table is not None and table.caption == "privacy audit: per attack"
    assert table.columns[4:] == (
        "audit",
        "seeds",
        "ngram AUC",
        "ngram eps_emp_lower",
        "similarity AUC",
        "similarity eps_emp_lower",
        "combined eps_emp_lower",
        "attack chosen",
    )
    rows = {" ".join(texts(row[:5])): row for row in table.rows}
    assert list(rows) == [  # only audits that ran several attacks; the pooled game of one that pooled
        "toyset alpha k_subsets 1 one audit",
        "toyset beta k_subsets 4 one audit",
        "toyset gamma one_run 1 first of 3 audits",
        "toyset gamma one_run 1 pooled, 3 runs",
    ]
    alpha = rows["toyset alpha k_subsets 1 one audit"]
    assert texts(alpha[5:]) == ["1", "0.550", "0", "0.930", "1.400", "1.300", "similarity"]
    # the combined bound is the evidence: marked; the single attacks' bounds are not, even above the nominal eps
    assert [cell.kind for cell in alpha[6:]] == ["", "", "", "", "violation", ""]
    beta = rows["toyset beta k_subsets 4 one audit"]
    # two seeds, AUC 0.6 and 0.7: mean 0.650, half-width t(0.975, 1) * 0.05 = 0.635
    assert texts(beta[5:7]) == ["2", "0.650 ± 0.635"]
    assert texts(beta[-2:]) == ["0.300 ± 0.000", "ngram (1 of 2), similarity (1 of 2)"]
    first, pool = rows["toyset gamma one_run 1 first of 3 audits"], rows["toyset gamma one_run 1 pooled, 3 runs"]
    assert texts(first[6:]) == ["0.600", "0.100", "0.700", "0.400", "0.400", "similarity"]
    assert texts(pool[6:]) == ["0.620", "0.300", "0.750", "1.250", "1.200", "similarity"]
    assert pool[-2].kind == "violation" and first[-2].kind == ""


def test_the_pooled_bound_stands_beside_the_runs_mean_and_a_violation_is_marked(sweep: Path) -> None:
    table = pooled_table(load_results(sweep), 0.95)
    assert table is not None and table.caption == "privacy audit: pooled one-run game"
    assert table.columns[4:] == (
        "seeds",
        "runs pooled",
        "pooled trials",
        "per-run eps_emp_lower: mean [interval]",
        "pooled eps_emp_lower",
        "pooled eps_ceiling",
        "verdict",
    )
    rows = {" ".join(texts(row[:4])): texts(row[4:]) for row in table.rows}
    runs = ["1", "3", "1500", "0.50 [0.20, 0.80] (3 audits)"]
    assert rows == {  # the k_subsets audits pooled nothing: no rows
        "toyset copy¶ one_run 4": [*runs, "5", "5.500", "n/a (non-private control)"],
        "toyset delta one_run 4": [*runs, "0.900", "5.500", "consistent"],  # a perfect attack would have rejected
        "toyset delta one_run ∞": [*runs, "3", "5.500", "n/a (ε = ∞ claims nothing)"],
        "toyset gamma one_run 1": [*runs, "1.200", "5.500", "VIOLATION"],
        "toyset grouped one_run 1": [*runs, "3", "5.500", "not tested (results without p-values: re-run the audit)"],
    }
    marked = [" ".join(texts(row[:4])) for row in table.rows if row[-3].kind == row[-1].kind == "violation"]
    assert marked == ["toyset gamma one_run 1"]


def test_the_report_shows_both_tables_with_their_notes(sweep: Path) -> None:
    markdown = write_report(sweep, 0.95)[0].read_text()
    assert "*privacy audit: per attack*" in markdown and "*privacy audit: pooled one-run game*" in markdown
    assert "| **⚠ 1.200** | 5.500 | **⚠ VIOLATION** |" in markdown  # gamma's pooled game
    assert "the largest of several, read after seeing them, is not" in markdown
    assert "the mean is no bound" in markdown
    # the main table's bound is the first run's (0.4): no violation there, while the pooled game's is one
    assert "| toyset | gamma | one_run | 1 | 1 | 0.900 | 0.300 | 1 | 0.400 | 3 | consistent |" in markdown
    # the repeats' TPR mean and interval ends are no FPR of their own (they made the report fail)
    assert "| seeds | AUC | TPR@FPR 0.1 | eps_emp |" in markdown and "_mean" not in markdown


def test_one_attack_and_one_audit_add_no_table(tmp_path: Path) -> None:
    write_audit(tmp_path, "eps=1", 1.0, {"eps_emp_lower": 1.3, "outliers.auc": 0.9, "outliers.eps_emp_lower": 1.3})
    frame = load_results(tmp_path)
    assert attack_table(frame, 0.95) is None and pooled_table(frame, 0.95) is None
    markdown = write_report(tmp_path, 0.95)[0].read_text()
    assert "per attack" not in markdown and "pooled one-run game" not in markdown
