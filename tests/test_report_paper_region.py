"""The report reads audit violations in the paper's region FPR in [0.1, 0.2], beside the bound-based verdict."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from synbench.audit.config import AuditOptions
from synbench.audit.epsilon import empirical_epsilon
from synbench.report.audit import audit_table, paper_region_epsilon, paper_region_table, point_epsilon
from synbench.report.build import write_report
from synbench.report.load import load_results


def write_audit(root: Path, name: str, eps: float | str, audit: dict[str, Any], **extra: Any) -> None:
    job = root / "audit" / name
    job.mkdir(parents=True)
    results = {
        "task": "audit",
        "dataset": "psytar",
        "generator": "augpe",
        "epsilon": eps,
        "seed": 0,
        "status": "complete",
        "delta": 1e-5,
        "noise": "secure",
        "non_dp_outputs": [],
        "audit": {"mode": "k_subsets", **audit},
        **extra,
    }
    (job / "results.json").write_text(json.dumps(results))


def test_the_default_fpr_grid_reaches_the_paper_region() -> None:
    assert {0.1, 0.2} <= set(AuditOptions().fpr_grid)


def test_the_report_reads_epsilon_as_the_audit_defines_it() -> None:
    fpr, tpr = np.meshgrid([0.1, 0.15, 0.2, 0.5], [0.0, 0.05, 0.1, 0.38, 0.9, 1.0])
    for delta in (0.0, 1e-5, 0.2):
        expected = empirical_epsilon(fpr, tpr, delta)
        assert np.array_equal(point_epsilon(fpr, tpr, np.full_like(fpr, delta)), expected)


@pytest.fixture
def sweep(tmp_path: Path) -> Path:
    """AUG-PE on PsyTAR as the paper reports it at eps=0.5: TPR 0.38 at FPR 0.1, over the bound, yet no 95% bound."""
    region = {"auc": 0.6, "tpr_at_fpr_0.1": 0.38, "tpr_at_fpr_0.2": 0.45, "eps_emp": 0.9, "eps_emp_lower": 0.3}
    # the design could have shown a violation (a perfect attack's p-value 0.001): the bound's verdict is consistent
    perfect = {"eps_ceiling": 2.6, "p_value_floor": 0.001}
    write_audit(tmp_path, "eps=0.5", 0.5, {**region, **perfect, "paper_reading_false_alarm": 0.62})
    write_audit(tmp_path, "eps=4", 4.0, region)
    write_audit(tmp_path, "eps=inf", "inf", region)
    write_audit(tmp_path, "eps=1", 1.0, {"auc": 0.5, "tpr_at_fpr_0.1": 0.1, "eps_emp": 0.0, "eps_emp_lower": 0.0})
    return tmp_path


def test_the_region_epsilon_is_the_largest_of_its_points_at_the_job_delta(sweep: Path) -> None:
    jobs = load_results(sweep).set_index("job")
    eps = paper_region_epsilon(jobs)
    # FPR 0.1: log((0.38 - 1e-5) / 0.1); FPR 0.2 gives less (log(0.45 / 0.2) = 0.81)
    assert eps["audit/eps=0.5"] == pytest.approx(math.log((0.38 - 1e-5) / 0.1), abs=1e-9)
    assert eps["audit/eps=1"] == pytest.approx(max(math.log(0.9 / 0.9), 0.0))  # a results file without FPR 0.2


def test_the_paper_reading_marks_what_the_bound_does_not(sweep: Path) -> None:
    frame = load_results(sweep)
    main = {row[3].text: row[-1].text for row in audit_table(frame, 0.95).rows}
    table = paper_region_table(frame, 0.95)
    paper = {row[3].text: [c.text for c in row[5:]] for row in table.rows}
    assert table.columns[5:] == (
        "TPR@FPR 0.1",
        "TPR@FPR 0.2",
        "ε at FPR 0.1–0.2",
        "above nominal ε",
        "share above ε if exactly ε-DP",
    )
    assert main["0.5"] == "consistent" and paper["0.5"] == ["0.380", "0.450", "1.335", "yes", "0.620"]
    assert paper["4"][-2] == "no" and paper["∞"][-2].startswith("n/a")
    assert paper["1"] == ["0.100", "– (not measured)", "0", "no", "– (not measured)"]  # older results: read at 0.1
    markdown = write_report(sweep, 0.95)[0].read_text()
    assert "the paper's reading (FPR in [0.1, 0.2])" in markdown and "TPR 0.38 at FPR 0.1 gives 1.34" in markdown


def test_no_region_figures_no_table(tmp_path: Path) -> None:
    write_audit(tmp_path, "eps=1", 1.0, {"auc": 0.5, "tpr_at_fpr_0.01": 0.1, "eps_emp_lower": 0.0})
    assert paper_region_table(load_results(tmp_path), 0.95) is None
