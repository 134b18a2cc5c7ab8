"""The downstream-model audit table, shaped like the paper's table 4: one row per regime, a column per attack.

Rows are dataset x generator x nominal epsilon x regime (SYN, SYN-DP, PRI,
PRI-DP, in that order); columns the AUC of each attack, the TPR at the
lowest FPR measured, and the lower bound `eps_emp_lower`, each over seeds,
beside the epsilon the regime's accountant spent (inf: no DP).
"""

from __future__ import annotations

import math

import pandas as pd

from synbench.report.load import task_jobs
from synbench.report.stats import format_eps
from synbench.report.table import Cell, Table, groups, markers, metric_cell

TASK = "model_audit"
KEYS = ["dataset", "generator", "epsilon"]
REGIME_NAMES = {"syn": "SYN", "syn_dp": "SYN-DP", "pri": "PRI", "pri_dp": "PRI-DP"}
PREFIX = "model_audit."
ATTACK_ORDER = ("logits", "lira", "rmia")  # the paper's column order


def measured(jobs: pd.DataFrame) -> tuple[list[str], list[str], str | None]:
    """The regimes and attacks that have figures, and the lowest-FPR TPR key they report."""
    parts = [c[len(PREFIX) :].split(".", 2) for c in jobs.columns if c.startswith(PREFIX)]
    regimes = [r for r in REGIME_NAMES if any(p[0] == r for p in parts)]
    found = {p[1] for p in parts if len(p) == 3}
    attacks = [a for a in ATTACK_ORDER if a in found] + sorted(found - set(ATTACK_ORDER))
    tprs = sorted({p[2] for p in parts if len(p) == 3 and p[2].startswith("tpr_at_fpr_")}, key=lambda k: float(k[11:]))
    return regimes, attacks, tprs[0] if tprs else None


def spent_cell(group_jobs: pd.DataFrame, column: str) -> Cell:
    values = group_jobs[column].dropna() if column in group_jobs else pd.Series(dtype=float)
    if values.empty:
        return Cell("–", "missing")
    worst = float(values.max())
    return Cell("∞ (no DP)" if math.isinf(worst) else f"{worst:.3g}")


def model_audit_table(frame: pd.DataFrame, confidence: float) -> Table | None:
    """The table of every model-audit job in the sweep, or None when there is none."""
    jobs = task_jobs(frame, TASK)
    if jobs.empty:
        return None
    regimes, attacks, tpr = measured(jobs)
    figures = [("auc", "AUC")] + ([(tpr, f"TPR@FPR {tpr[11:]}")] if tpr else []) + [("eps_emp_lower", "eps_emp_lower")]
    rows = []
    for (dataset, generator, eps), group in groups(jobs, KEYS):
        for regime in regimes or list(REGIME_NAMES):
            cells = [
                metric_cell(group, f"{PREFIX}{regime}.{a}.{key}", confidence)[0] for key, _ in figures for a in attacks
            ]
            spent = (
                spent_cell(group.complete, f"{PREFIX}{regime}.epsilon_spent")
                if not group.complete.empty
                else group.unfinished_cell()
            )
            rows.append(
                (
                    Cell(str(dataset)),
                    Cell(f"{generator}{markers(group.all)}"),
                    Cell(format_eps(eps)),
                    Cell(REGIME_NAMES[regime]),
                    group.seeds_cell(),
                    spent,
                    *cells,
                )
            )
    head = ("dataset", "generator", "nominal ε", "regime", "seeds", "ε spent")
    return Table(
        head + tuple(f"{label} {a}" for _, label in figures for a in attacks),
        tuple(rows),
        "membership attacks on the downstream classifier",
    )


def model_audit_note() -> str:
    return (
        "Members are the audit targets in the audited classifier's training data, non-members real documents held "
        "out of it. SYN / SYN-DP: the classifier is trained on the generator's output at ε = ∞ / the nominal ε; "
        "PRI: on the private data; PRI-DP: a logistic head on public features trained with DP-SGD at the nominal ε. "
        "eps_emp_lower is the one-sided Clopper-Pearson lower bound (Bonferroni over thresholds)."
    )
