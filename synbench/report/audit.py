"""The audit table: attack strength and empirical epsilon next to the nominal one, violations marked.

A violation is an audit whose *lower bound* `eps_emp_lower` exceeds the
nominal epsilon: the point estimate `eps_emp` alone is not evidence, the
bound holds at the audit's stated confidence. With several seeds a row is a
violation when any seed's bound exceeds the nominal epsilon, and says how
many did. A nominal epsilon of ∞ makes no claim, nor does a declared
non-private control (`copy`) at any epsilon, so nothing can violate those;
nor does an audit with `canary_repeats` > 1, whose canary trials test groups.
An audit with targets of both kinds gets one row per kind under its own
(`outliers`, `canaries`), and one with `audit.repeats` > 1 shows the mean and
95% interval of its bound over the repeats.

The paper reads violations in the low-FPR region FPR in [0.1, 0.2]: the
empirical epsilon of the ROC points there (TPR 0.38 at FPR 0.1 is 1.34). A
second table gives that reading from the audit's `tpr_at_fpr_<f>` for the
grid's f in the region, as an estimate beside the bound, not as evidence.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from synbench.report.load import COMPLETE, ROC_FILE, task_jobs
from synbench.report.stats import format_eps
from synbench.report.table import NOT_MEASURED, Cell, Group, Table, groups, markers, metric_cell, sort_jobs

TASK = "audit"
KEYS = ["dataset", "generator", "audit.mode", "epsilon"]
LOWER = "audit.eps_emp_lower"
TPR_PREFIX = "audit.tpr_at_fpr_"
KINDS = ("outliers", "canaries")
PER_KIND = (
    "audit.auc",
    "audit.eps_emp",
    "audit.gdp_mu_lower",
    LOWER,
)  # the keys the audit summary also reports per target kind
HEADERS = {
    "audit.auc": "AUC",
    "audit.eps_emp_lower_holdout": "held-out bound",
    "audit.eps_emp_lower_bonferroni": "Bonferroni bound",
    "audit.gdp_mu_lower": "GDP μ bound",
    LOWER: "eps_emp_lower",
}


def audit_jobs(frame: pd.DataFrame) -> pd.DataFrame:
    return task_jobs(frame, TASK).fillna({"audit.mode": "?"}) if "audit.mode" in frame else frame.iloc[:0]


def metric_columns(jobs: pd.DataFrame) -> list[str]:
    """AUC, TPR at each low FPR (numerically), then the point estimate and the lower bound of epsilon."""
    tpr = sorted((c for c in jobs.columns if c.startswith(TPR_PREFIX)), key=lambda c: float(c[len(TPR_PREFIX) :]))
    return ["audit.auc", *tpr, "audit.eps_emp", LOWER]


DETAIL_COLUMNS = [
    "audit.auc",
    "audit.eps_emp",
    "audit.eps_emp_lower_holdout",
    "audit.eps_emp_lower_bonferroni",
    "audit.gdp_mu_lower",
    LOWER,
]


def column_header(column: str) -> str:
    if column.startswith(TPR_PREFIX):
        return f"TPR@FPR {column[len(TPR_PREFIX) :]}"
    return HEADERS.get(column, column.split(".", 1)[1])


def repeats_cell(group: Group) -> Cell:
    """eps_emp_lower's mean and 95% interval over an audit's repeats (of the first seed that has them)."""
    done = group.complete
    if "audit.eps_emp_lower_mean" not in done or done["audit.eps_emp_lower_mean"].isna().all():
        return Cell("—")
    job = done[done["audit.eps_emp_lower_mean"].notna()].iloc[0]
    return Cell(
        f"{job['audit.eps_emp_lower_mean']:.2f} [{job['audit.eps_emp_lower_ci_low']:.2f}, "
        f"{job['audit.eps_emp_lower_ci_high']:.2f}] ({int(job['audit.repeats'])} audits)"
    )


def violations(group: Group, eps: float, column: str = LOWER) -> tuple[Cell, bool]:
    """The violation cell of a row, and whether any seed's `column` (the lower bound) exceeds the nominal epsilon."""
    if group.complete.empty:
        return group.unfinished_cell(), False
    if math.isinf(eps):
        return Cell("n/a (ε = ∞ claims nothing)"), False
    if group.complete["non_private_control"].astype(bool).any():
        return Cell("n/a (non-private control)"), False
    if (group.complete.get("audit.canary_repeats", pd.Series(dtype=float)).fillna(1) > 1).any():
        return Cell("n/a (canary copies test groups)"), False
    if column not in group.complete or group.complete[column].isna().all():
        return NOT_MEASURED, False
    n, hits = len(group.complete), int((group.complete[column] > eps).sum())
    if not hits:
        return Cell("no"), False
    return Cell("VIOLATION" + (f": {hits} of {n} seeds" if n > 1 else ""), "violation"), True


def audit_table(frame: pd.DataFrame, confidence: float) -> Table | None:
    """One row per dataset x generator x audit mode x nominal epsilon, over seeds."""
    jobs = audit_jobs(frame)
    if jobs.empty:
        return None
    columns = metric_columns(jobs)
    rows = []
    for (dataset, generator, mode, eps), group in groups(jobs, KEYS):
        verdict, violated = violations(group, eps)
        cells = [metric_cell(group, c, confidence)[0] for c in columns]
        if violated:
            cells[-1] = Cell(cells[-1].text, "violation")
        rows.append(
            (
                Cell(str(dataset)),
                Cell(f"{generator}{markers(group.all)}"),
                Cell(str(mode)),
                Cell(format_eps(eps)),
                group.seeds_cell(),
                *cells,
                verdict,
            )
        )
    head = ("dataset", "generator", "mode", "nominal ε", "seeds")
    return Table(head + tuple(column_header(c) for c in columns) + ("violation",), tuple(rows), "privacy audit")


PAPER_REGION = (0.1, 0.2)  # the paper's low-FPR region, where it reads violations
PAPER_EPS = "audit.eps_paper_region"


def region_columns(jobs: pd.DataFrame) -> list[str]:
    """The `tpr_at_fpr_<f>` columns with f in the paper's region, by f."""
    low, high = PAPER_REGION
    found = [c for c in jobs.columns if c.startswith(TPR_PREFIX) and low <= float(c[len(TPR_PREFIX) :]) <= high]
    return sorted(found, key=lambda c: float(c[len(TPR_PREFIX) :]))


def point_epsilon(fpr: np.ndarray, tpr: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """max(log((TPR - delta) / FPR), log((1 - delta - FPR) / (1 - TPR)), 0) per ROC point.

    The definition of synbench.audit.epsilon.empirical_epsilon (a test holds
    them equal), written here because the report imports no audit code: it
    reads results.json files only.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        upper = np.where(tpr - delta > 0, np.log(tpr - delta) - np.log(fpr), -np.inf)
        lower = np.where(1 - delta - fpr > 0, np.log(1 - delta - fpr) - np.log(1 - tpr), -np.inf)
    return np.maximum(np.maximum(upper, lower), 0.0)


def paper_region_epsilon(jobs: pd.DataFrame) -> pd.Series:
    """Per job, the largest empirical epsilon of its ROC points at the grid's FPRs f in [0.1, 0.2], at its delta.

    `tpr_at_fpr_<f>` is the best TPR among thresholds with FPR at most f, so
    taking f itself as the FPR gives an epsilon no larger than that point's
    own: the reading never overstates. NaN where the job has no such figure.
    """
    delta = jobs["delta"].fillna(0.0).to_numpy(float) if "delta" in jobs else np.zeros(len(jobs))
    tpr = np.array([jobs[c].to_numpy(float) for c in region_columns(jobs)]).reshape(-1, len(jobs))
    fpr = np.array([float(c[len(TPR_PREFIX) :]) for c in region_columns(jobs)])[:, None]
    eps = np.where(np.isnan(tpr), -np.inf, point_epsilon(fpr, np.nan_to_num(tpr), delta))
    return pd.Series(np.where(np.isnan(tpr).all(0), np.nan, eps.max(0, initial=-np.inf)), index=jobs.index)


def paper_region_table(frame: pd.DataFrame, confidence: float) -> Table | None:
    """The paper's reading: TPR at FPR 0.1 and 0.2, the epsilon those points imply, and whether it exceeds the
    nominal."""
    jobs = audit_jobs(frame)
    columns = region_columns(jobs)
    if jobs.empty or not columns:
        return None
    jobs = jobs.assign(**{PAPER_EPS: paper_region_epsilon(jobs)})
    rows = []
    for (dataset, generator, mode, eps), group in groups(jobs, KEYS):
        verdict, _ = violations(group, eps, PAPER_EPS)
        cells = [metric_cell(group, c, confidence)[0] for c in [*columns, PAPER_EPS]]
        rows.append(
            (
                Cell(str(dataset)),
                Cell(f"{generator}{markers(group.all)}"),
                Cell(str(mode)),
                Cell(format_eps(eps)),
                group.seeds_cell(),
                *cells,
                verdict,
            )
        )
    head = ("dataset", "generator", "mode", "nominal ε", "seeds", *map(column_header, columns), "ε at FPR 0.1–0.2")
    return Table(head + ("above nominal ε",), tuple(rows), "privacy audit: the paper's reading (FPR in [0.1, 0.2])")


def paper_region_note() -> str:
    """What the paper's reading is, and why it is not the evidence the main table's bound is."""
    return (
        "The paper reads violations in the low-FPR region FPR in [0.1, 0.2]: ε at FPR 0.1–0.2 is the largest "
        "empirical ε, max(log((TPR - δ) / FPR), log((1 - δ - FPR) / (1 - TPR))), of the ROC points at the grid's FPRs "
        "there (TPR 0.38 at FPR 0.1 gives 1.34). It is a point estimate without confidence, reported to compare with "
        "the paper; a violation claim rests on eps_emp_lower in the table above."
    )


def kind_group(group: Group, kind: str) -> Group | None:
    """The group with `audit.<kind>.<key>` figures moved to the plain columns, or None when no job has that kind."""
    if f"audit.{kind}.auc" not in group.complete or group.complete[f"audit.{kind}.auc"].isna().all():
        return None
    moved = {f"audit.{kind}.{c.split('.', 1)[1]}": c for c in PER_KIND}

    def rename(frame: pd.DataFrame) -> pd.DataFrame:
        return frame.drop(columns=[c for c in PER_KIND if c in frame]).rename(columns=moved)

    return Group(rename(group.complete), rename(group.incomplete))


def audit_detail_table(frame: pd.DataFrame, confidence: float) -> Table | None:
    """The bounds behind eps_emp_lower, the GDP bound, one row per target kind, and the repeats' interval."""
    jobs = audit_jobs(frame)
    if jobs.empty or "audit.eps_emp_lower_holdout" not in jobs:
        return None
    rows = []
    for (dataset, generator, mode, eps), group in groups(jobs, KEYS):
        head = (Cell(str(dataset)), Cell(f"{generator}{markers(group.all)}"), Cell(str(mode)), Cell(format_eps(eps)))
        rows.append(
            (
                *head,
                Cell("all"),
                group.seeds_cell(),
                *(metric_cell(group, c, confidence)[0] for c in DETAIL_COLUMNS),
                repeats_cell(group),
            )
        )
        for kind in KINDS:
            part = kind_group(group, kind)
            if part is not None:
                cells = [metric_cell(part, c, confidence)[0] if c in PER_KIND else Cell("—") for c in DETAIL_COLUMNS]
                rows.append((*head, Cell(kind), part.seeds_cell(), *cells, Cell("—")))
    titles = ("dataset", "generator", "mode", "nominal ε", "targets", "seeds")
    return Table(
        titles + tuple(column_header(c) for c in DETAIL_COLUMNS) + ("repeats: eps_emp_lower",),
        tuple(rows),
        "privacy audit: bounds, target kinds, repeats",
    )


def bound_note(frame: pd.DataFrame) -> str:
    """What eps_emp_lower is, at the confidence level(s) the audits used."""
    levels = sorted(audit_jobs(frame).get("audit.confidence", pd.Series(dtype=float)).dropna().unique())
    level = " / ".join(f"{c:.0%}" for c in levels) or "stated"
    return (
        f"eps_emp_lower is a one-sided {level} lower bound on epsilon, the larger of a held-out bound (choice on a "
        "quarter of the targets, one test on the rest) and a Bonferroni bound (every choice tested), each at half "
        "the failure probability: Clopper-Pearson on the pooled ROC in k_subsets mode, Steinke, Nasr & Jagielski's "
        "binomial bound on the guesses in one_run mode. A violation is eps_emp_lower > nominal ε. eps_emp is an "
        "estimate (cross-fitted: the threshold chosen on half the targets, measured on the other half), not "
        "evidence. The GDP μ bound (Mahloujifar, Melis & Chaudhuri in one_run mode) assumes nothing, but the ε it "
        "implies (gdp_eps_lower in results.json) is a bound only for mechanisms with a Gaussian privacy profile."
    )


def roc_images(frame: pd.DataFrame) -> list[tuple[str, str]]:
    """(path of a finished audit's ROC image relative to the sweep folder, caption), in table order."""
    jobs = audit_jobs(frame)
    done = sort_jobs(jobs[(jobs["status"] == COMPLETE) & jobs["has_roc"]], KEYS + ["seed"])
    return [
        (
            f"{job.job}/{ROC_FILE}",
            f"{job.generator} on {job.dataset}, {job['audit.mode']}, "
            f"nominal ε={format_eps(job.epsilon)}, seed {int(job.seed)}",
        )
        for _, job in done.iterrows()
    ]
