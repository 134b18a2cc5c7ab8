"""The audit table: attack strength and empirical epsilon next to the nominal one, violations marked.

A violation is an audit whose *lower bound* `eps_emp_lower` exceeds the
nominal epsilon: the point estimate `eps_emp` alone is not evidence, the
bound holds at the audit's stated confidence. With several seeds a row is a
violation when any seed's bound exceeds the nominal epsilon, and says how
many did. A nominal epsilon of ∞ makes no claim, nor does a declared
non-private control (`copy`) at any epsilon, so nothing can violate those.
"""
from __future__ import annotations

import math

import pandas as pd

from synbench.report.load import COMPLETE, ROC_FILE, task_jobs
from synbench.report.stats import format_eps
from synbench.report.table import NOT_MEASURED, Cell, Group, Table, groups, markers, metric_cell, sort_jobs

TASK = "audit"
KEYS = ["dataset", "generator", "audit.mode", "epsilon"]
LOWER = "audit.eps_emp_lower"
TPR_PREFIX = "audit.tpr_at_fpr_"


def audit_jobs(frame: pd.DataFrame) -> pd.DataFrame:
    return task_jobs(frame, TASK).fillna({"audit.mode": "?"}) if "audit.mode" in frame else frame.iloc[:0]


def metric_columns(jobs: pd.DataFrame) -> list[str]:
    """AUC, TPR at each low FPR (numerically), then the point estimate and the lower bound of epsilon."""
    tpr = sorted((c for c in jobs.columns if c.startswith(TPR_PREFIX)), key=lambda c: float(c[len(TPR_PREFIX):]))
    return ["audit.auc", *tpr, "audit.eps_emp", LOWER]


def column_header(column: str) -> str:
    if column.startswith(TPR_PREFIX):
        return f"TPR@FPR {column[len(TPR_PREFIX):]}"
    return {"audit.auc": "AUC"}.get(column, column.split(".", 1)[1])


def violations(group: Group, eps: float) -> tuple[Cell, bool]:
    """The violation cell of a row, and whether any seed's lower bound exceeds the nominal epsilon."""
    if group.complete.empty:
        return group.unfinished_cell(), False
    if math.isinf(eps):
        return Cell("n/a (ε = ∞ claims nothing)"), False
    if group.complete["non_private_control"].astype(bool).any():
        return Cell("n/a (non-private control)"), False
    if LOWER not in group.complete or group.complete[LOWER].isna().all():
        return NOT_MEASURED, False
    n, hits = len(group.complete), int((group.complete[LOWER] > eps).sum())
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
        rows.append((Cell(str(dataset)), Cell(f"{generator}{markers(group.all)}"), Cell(str(mode)),
                     Cell(format_eps(eps)), group.seeds_cell(), *cells, verdict))
    head = ("dataset", "generator", "mode", "nominal ε", "seeds")
    return Table(head + tuple(column_header(c) for c in columns) + ("violation",), tuple(rows), "privacy audit")


def bound_note(frame: pd.DataFrame) -> str:
    """What eps_emp_lower is, at the confidence level(s) the audits used."""
    levels = sorted(audit_jobs(frame).get("audit.confidence", pd.Series(dtype=float)).dropna().unique())
    level = " / ".join(f"{c:.0%}" for c in levels) or "stated"
    return (f"eps_emp_lower is a one-sided {level} lower bound on epsilon (Clopper-Pearson with Bonferroni over "
            "thresholds in k_subsets mode; Steinke, Nasr & Jagielski in one_run mode); a violation is "
            "eps_emp_lower > nominal ε. eps_emp is the point estimate over the pooled ROC.")


def roc_images(frame: pd.DataFrame) -> list[tuple[str, str]]:
    """(path of a finished audit's ROC image relative to the sweep folder, caption), in table order."""
    jobs = audit_jobs(frame)
    done = sort_jobs(jobs[(jobs["status"] == COMPLETE) & jobs["has_roc"]], KEYS + ["seed"])
    return [(f"{job.job}/{ROC_FILE}", f"{job.generator} on {job.dataset}, {job['audit.mode']}, "
                                      f"nominal ε={format_eps(job.epsilon)}, seed {int(job.seed)}")
            for _, job in done.iterrows()]
