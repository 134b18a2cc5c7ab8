"""The paper's reading calibrated under the null, and the sample size its worked example needs (known answers)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from synbench.audit.config import AuditOptions
from synbench.audit.paper_reading import (
    PAPER_REGION,
    boundary_scores,
    example_bound,
    paper_reading_false_alarm,
    reading_tprs,
    worked_example_sample_size,
)
from synbench.report.audit import PAPER_REGION as REPORT_REGION
from synbench.tasks.audit import paper_reading_figures


def test_the_report_and_the_audit_read_the_same_region() -> None:
    assert PAPER_REGION == REPORT_REGION == (0.1, 0.2)


def test_boundary_mechanism_has_the_eps_dp_boundary_as_its_roc() -> None:
    """Randomised response plus a uniform tie-breaker: TPR = e^eps FPR below FPR 1 / (1 + e^eps)."""
    rng, eps = np.random.default_rng(0), 1.0
    pos = boundary_scores(rng, np.ones((1, 200_000), dtype=bool), eps)
    neg = boundary_scores(rng, np.zeros((1, 200_000), dtype=bool), eps)
    tpr = reading_tprs(pos, neg, (0.1, 0.2))[:, 0]
    assert tpr == pytest.approx([math.exp(eps) * 0.1, math.exp(eps) * 0.2], abs=0.005)


def test_the_paper_reading_misfires_for_an_exactly_eps_dp_mechanism() -> None:
    """At 50 + 50 trials (the worked example's size) and at ours the reading exceeds eps for most eps-DP audits."""
    for n in (50, 175):
        found = paper_reading_false_alarm(0.5, n, n, games=2000, seed=1)
        assert found.rate > 0.4 and found.standard_error == pytest.approx(
            math.sqrt(found.rate * (1 - found.rate) / 2000)
        )
    with pytest.raises(ValueError, match="finite epsilon"):
        paper_reading_false_alarm(math.inf, 10, 10)


def test_worked_example_sample_size() -> None:
    """TPR 0.38 at FPR 0.1 with 50 + 50 trials: its 95% bound is 0 when the threshold is read off the ROC (Bonferroni
    over the curve's thresholds), 0.12 for a threshold fixed in advance; the example proves eps > 0.5 from n = 150
    per side with the threshold fixed in advance, n = 400 with it read off the curve."""
    assert example_bound(50, 0.38, 0.1, 0.95, chosen_after=True) == 0.0
    assert example_bound(50, 0.38, 0.1, 0.95, chosen_after=False) == pytest.approx(0.122, abs=0.001)
    assert worked_example_sample_size(0.5, confidence=0.95) == 150
    assert worked_example_sample_size(0.5, confidence=0.95, chosen_after=True) == 400
    assert example_bound(100, 0.38, 0.1, 0.95, False) <= 0.5 < example_bound(150, 0.38, 0.1, 0.95, False)


def test_the_audit_job_writes_the_false_alarm_rate_of_its_own_sizes() -> None:
    summary = {"n_member_trials": 90, "n_trials": 200}
    figures = paper_reading_figures(AuditOptions(), summary, 1.0, 0.0)
    assert figures["paper_reading_false_alarm"] == paper_reading_false_alarm(1.0, 90, 110, (0.1, 0.2)).rate
    assert paper_reading_figures(AuditOptions(), summary, math.inf, 0.0) == {}
    assert paper_reading_figures(AuditOptions(fpr_grid=(0.01,)), summary, 1.0, 0.0) == {}
