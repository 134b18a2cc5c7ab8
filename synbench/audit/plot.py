"""The attack's ROC against the trade-off region that (eps, delta)-DP allows.

An (eps, delta)-DP mechanism keeps every test below
TPR = min(e^eps FPR + delta, 1 - e^-eps (1 - delta - FPR)); a ROC above the
nominal eps's curve is evidence of a violation (the bound in results.json says
how strong). Log-log axes: the low-FPR corner, where privacy failures show
(Carlini et al. 2022), is invisible on linear axes. Points with FPR or TPR 0
are drawn at the axis floor, half a count below the smallest non-zero rate.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from synbench.audit.crossfit import OperatingPoint
from synbench.audit.roc import RocCurve


def dp_tpr_bound(fpr: np.ndarray, epsilon: float, delta: float) -> np.ndarray:
    """The largest TPR any (epsilon, delta)-DP mechanism allows at each FPR."""
    fpr = np.asarray(fpr, dtype=float)
    bound = np.minimum(math.exp(epsilon) * fpr + delta, 1 - math.exp(-epsilon) * (1 - delta - fpr))
    return np.clip(bound, 0.0, 1.0)


def plot_roc(
    roc: RocCurve,
    path: Path,
    *,
    nominal_eps: float,
    delta: float,
    eps_grid: tuple[float, ...],
    title: str = "",
    point: OperatingPoint | None = None,
) -> Path:
    """Write the ROC (log-log) with the DP trade-off curves to `path` (PNG) and return `path`.

    `point` is the held-out operating point: the threshold chosen on the
    selection targets, at its FPR and TPR on the test targets, the one
    `eps_emp_lower_holdout` is computed at.
    """
    floor = 0.5 / max(roc.n_neg, roc.n_pos)
    grid = np.logspace(math.log10(floor), 0, 400)
    fig = Figure(figsize=(5.5, 5))
    ax = fig.add_subplot()
    colours = iter(("#9ecae1", "#6baed6", "#3182bd", "#08519c", "#08306b", "#041a3d"))
    for eps in sorted(set(eps_grid)):
        ax.plot(
            grid, dp_tpr_bound(grid, eps, delta), color=next(colours, "#08306b"), lw=1, label=f"(ε={eps:g}, δ)-DP limit"
        )
    if math.isfinite(nominal_eps):
        limit = dp_tpr_bound(grid, nominal_eps, delta)
        ax.plot(grid, limit, color="crimson", lw=1.5, ls="--", label=f"nominal ε={nominal_eps:g}")
        ax.fill_between(grid, limit, 1.0, color="crimson", alpha=0.08, label="violates nominal ε")
    ax.plot(grid, grid, color="grey", lw=0.8, ls=":", label="chance")
    ax.step(
        np.maximum(roc.fpr, floor),
        np.maximum(roc.tpr, floor),
        where="post",
        color="black",
        lw=1.8,
        label=f"attack (AUC {roc.auc():.3f})",
    )
    if point is not None:
        ax.plot(
            max(point.fpr, floor),
            max(point.tpr, floor),
            marker="o",
            ms=7,
            color="darkorange",
            ls="none",
            label=f"held-out point (TPR {point.tpr:.2f} at FPR {point.fpr:.2g})",
        )
    ax.set(
        xscale="log",
        yscale="log",
        xlim=(floor, 1),
        ylim=(floor, 1.05),
        xlabel="false positive rate",
        ylabel="true positive rate",
        title=title or f"membership ROC, δ={delta:.2g}",
    )
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(True, which="major", alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    return path
