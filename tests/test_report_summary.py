"""The report's plain-language summary (synbench.report.verdicts) and the job's (synbench.report.summary).

A results frame with known numbers, built as in test_public_baselines: public and template baselines, generator
`alpha` at eps=1 over three seeds with its disclosure counts, a one-run audit of it that is inconclusive, and a
`copier` whose disclosure check flagged one seed and whose audit found a violation.
"""

from __future__ import annotations

import math

import pandas as pd

from synbench.job.record import JobRecord
from synbench.report.gain import gain
from synbench.report.summary import summary
from synbench.report.verdicts import summary_lines
from test_public_baselines import ALPHA_EPS1, DATASET, PUBLIC, TEMPLATE, job


def audit_job(generator: str, lower: float, ceiling: float, p: float, floor: float, needed: float | None) -> dict:
    """A one-run audit job at eps=1: its bound, ceiling, p-value of the claim and the perfect attack's."""
    return {
        **job(generator, 1.0, 0, None, 1.0),
        "task": "audit",
        "report_section": "audit",
        "status": "complete",
        "audit.mode": "one_run",
        "audit.confidence": 0.95,
        "audit.claim_epsilon": 1.0,
        "audit.eps_emp_lower": lower,
        "audit.eps_ceiling": ceiling,
        "audit.p_value": p,
        "audit.p_value_floor": floor,
        "audit.n_needed": needed if needed is not None else math.nan,
        "audit.n_needed_unit": "targets",  # written beside n_needed: what it counts
    }


def disclosure(private: int, unseen: int, flagged: bool) -> dict:
    return {
        "disclosure.private_reappear": private,
        "disclosure.n_private": 232,
        "disclosure.unseen_reappear": unseen,
        "disclosure.n_unseen": 148,
        "disclosure.flagged": float(flagged),
        "disclosure.p_value": 1e-30 if flagged else 0.5,
    }


def frame() -> pd.DataFrame:
    rows = [job("public", math.inf, s, f1, 0.0, noise="n/a") for s, f1 in enumerate(PUBLIC)]
    rows += [job("template", math.inf, s, f1, 0.0) for s, f1 in enumerate(TEMPLATE)]
    rows += [job("alpha", 1.0, s, f1, 0.98, **disclosure(s, 1, False)) for s, f1 in enumerate(ALPHA_EPS1)]
    # the copier's macro F1 sits below the majority baseline's 0.2 (job() sets it)
    rows += [job("copier", 1.0, s, 0.15, 1.0, **disclosure(232 if s else 3, 0, s > 0)) for s in range(3)]
    # alpha's design could not have rejected eps=1 (perfect attack's p 0.2): inconclusive; the copier's p 1e-6 rejects
    rows += [audit_job("alpha", 0.0, 0.73, 0.9, 0.2, 412.0), audit_job("copier", 2.1, 3.9, 1e-6, 1e-9, None)]
    return pd.DataFrame(rows)


def test_each_line_says_what_its_figures_are_compared_with() -> None:
    lines = summary_lines(frame(), 0.95)
    assert (
        lines[0] == f"{DATASET}: public knowledge alone (no private document given): f1_macro public 0.420 ± 0.086, "
        "template 0.450 ± 0.099."
    )
    alpha, copier = (next(line for line in lines if f", {name}, " in line) for name in ("alpha", "copier"))
    # alpha: 0.67 mean, above random (0.25) and majority (0.2); 0.22 above template, interval above 0; its own seed
    # variance (the copier's seeds have no spread to pool with)
    found = gain(ALPHA_EPS1, TEMPLATE, 0.95)
    assert alpha.startswith(f"{DATASET}, alpha, ε = 1: f1 macro 0.670 ± 0.149; gain over public {found}")
    assert f"(private learning; detects {found.detectable:.3f} with 80% power)" in alpha and "NOT above" not in alpha
    assert (
        "disclosure† 3 of 696 private documents reappear (near-)verbatim, 3 of 444 unseen ones do: not flagged "
        "(3 seeds, each at α/3)" in alpha
    )
    assert "audit inconclusive (ceiling 0.73 ≤ ε 1; needs 412 targets) (eps_emp_lower 0)." in alpha  # the ceiling once
    # the copier: below random and majority, flagged in two of its three seeds, a violation
    assert "f1 macro 0.150 ± 0.000 (NOT above random, NOT above majority)" in copier
    assert "FLAGGED (seeds 1, 2: p below α/3)" in copier  # seed 1 and 2 (p 1e-30) below 0.05 / 3
    assert "audit VIOLATION (eps_emp_lower 2.100, ceiling 3.900)" in copier
    assert not any(", public, " in line or ", template, " in line for line in lines)  # baselines are not rows
    assert not any(" no " in f" {line} " for line in lines)
    # the copier: 0.30 below template, its interval's upper end below 0.05: no gain, with what it detects
    assert "gain over public -0.300 ± 0.099 (no gain over public; detects " in copier
    assert not any("positive control" in line for line in lines)  # no job measured it


def test_the_positive_control_says_whether_the_task_can_show_private_learning() -> None:
    """Real documents at the synthetic size (`utility.matched_real_f1_macro`, per job): its gain over the best public
    baseline, and where it shows none, that no generator's row can."""
    strong, weak = frame(), frame()
    private = ~strong["generator"].isin(["public", "template"]) & (strong["task"] == "benchmark")
    strong.loc[private, "utility.matched_real_f1_macro"] = 0.75 + strong.loc[private, "seed"] / 100
    weak.loc[private, "utility.matched_real_f1_macro"] = 0.45 + weak.loc[private, "seed"] / 100
    line = next(line for line in summary_lines(strong, 0.95) if "positive control" in line)
    found = gain([0.75, 0.76, 0.77], TEMPLATE, 0.95)
    assert line == f"{DATASET}: positive control (real data, synthetic size): gain over public {found}."
    assert found.verdict == "private learning"
    line = next(line for line in summary_lines(weak, 0.95) if "positive control" in line)
    assert line.endswith(
        "; real documents themselves show no private learning here, so this task and design cannot show it for any "
        "generator."
    )


def test_the_job_summary_leads_with_plain_words() -> None:
    results = {
        "task": "audit",
        "generator": "command",
        "generator_name": "copier",
        "dataset": "d",
        "epsilon": 8.0,
        "epsilon_spent": 8.0,
        "delta": 1e-5,
        "utility": {},
        "fidelity": {},
        "disclosure": {
            "private_reappear": 82,
            "n_private": 82,
            "unseen_reappear": 0,
            "n_unseen": 116,
            "p_value": 1e-40,
            "flagged": True,
        },
        "audit": {
            "verdict_line": "inconclusive: eps_emp_lower 3.87 <= ceiling 3.9 <= nominal eps 8",
            "eps_emp_lower": 3.87,
        },
    }
    lines = summary(JobRecord.from_json(results)).splitlines()
    assert lines[0].startswith("audit copier on d: eps=8")
    assert lines[1].strip().startswith("Disclosure: 82 of 82 private documents reappear (near-)verbatim; 0 of 116")
    assert lines[1].endswith("FLAGGED: the release reproduces private documents")
    assert lines[2].strip() == "Audit: inconclusive: eps_emp_lower 3.87 <= ceiling 3.9 <= nominal eps 8"
    benchmark = summary(JobRecord.from_json({**results, "task": "benchmark", "audit": {}}))
    assert "Audit: not run by task=benchmark; add `task=audit audit.mode=one_run`" in benchmark


def test_the_job_summary_shows_each_f1_once_and_label_cardinality_only_where_labels_are_sets() -> None:
    """The headline F1 (macro here: the majority class holds half the documents) stands in the utility line with
    every reference row, so the figures below list only the other F1; the label-cardinality divergence is 0 by
    construction when no document on either side has two labels, so it shows only where some does."""
    utility = {
        "f1_macro": 0.35,
        "random_f1_macro": 0.155,
        "majority_f1_macro": 0.113,
        "real_f1_macro": 0.61,
        "matched_real_f1_macro": 0.52,
        "f1_micro": 0.365,
        "random_f1": 0.197,
        "majority_f1": 0.514,
        "real_f1": 0.736,
    }
    fidelity = {
        "label_cardinality_div": 0.0,
        "label_cardinality_div_ref": 0.0,
        "label_multi_share_real": 0.0,
        "label_multi_share_syn": 0.0,
    }
    results = {"task": "benchmark", "generator": "g", "dataset": "d", "epsilon": 4.0, "seed": 0, "utility": utility}
    single = summary(JobRecord.from_json({**results, "fidelity": fidelity}))
    assert single.count("F1 macro") == 1 and single.count("F1 micro") == 2  # its flag in the line, its figures
    assert (
        "Utility: F1 macro 0.35: above random (0.155), above majority (0.113), real data 0.61, real data at this "
        "size 0.52, F1 micro 0.365 NOT above majority (0.514)" in single
    )
    assert "  F1 micro: 0.365 (random 0.197, majority 0.514, real 0.736)" in single.splitlines()
    assert "label-cardinality JS" not in single
    fidelity |= {"label_multi_share_real": 0.4, "label_cardinality_div": 0.2}
    multi = summary(JobRecord.from_json({**results, "fidelity": fidelity}))
    assert "  label-cardinality JS: 0.2 (real vs real 0)" in multi.splitlines()
