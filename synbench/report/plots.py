"""The report's figures as PNG bytes: metrics against epsilon per generator, and empirical against nominal epsilon.

matplotlib's object API (`Figure`, no pyplot): no display and no global
figure state, so the report runs headless and leaks nothing between
figures. Epsilon is categorical on the metric plots (the sweep's values,
with ∞ last), since ∞ has no place on a numeric axis; error bars are the
report's interval over seeds, dashed lines the baselines.
"""

from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from synbench.report.audit import CEILING, LOWER, audit_jobs
from synbench.report.benchmark import baseline_estimate, baseline_sources
from synbench.report.load import COMPLETE
from synbench.report.stats import Estimate, estimate, format_eps
from synbench.report.table import markers

PANELS = ("utility.f1_micro", "utility.f1_macro", "fidelity.mauve")  # all in [0, 1]: one fixed scale
# (colour, line style) of the baseline lines, in `baseline_sources` order: random, majority, real data, real vs real.
# the audit plot's legend entry for the ceilings (hollow triangles, one per point in its series' colour)
CEILING_LABEL = "eps_ceiling: the most a perfect attack could certify\n(on or below y = x: no violation could be seen)"
BASELINE_STYLES = (("#8c8c8c", ":"), ("#5a5a5a", "-."), ("#222222", "--"), ("#2ca02c", "--"))


def to_png(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    return buffer.getvalue()


def series(jobs: pd.DataFrame, column: str, confidence: float) -> list[tuple[float, Estimate]]:
    """(epsilon, estimate over seeds) per epsilon of these jobs, where the column has a value."""
    found = ((float(eps), estimate(g[column], confidence)) for eps, g in jobs.groupby("epsilon"))
    return [(eps, value) for eps, value in found if value is not None]


def errorbar(ax: Axes, points: list[tuple[float, Estimate]], label: str, colour: str | None = None) -> None:
    """One series: finite means with their interval (none where one seed)."""
    points = [(x, e) for x, e in points if math.isfinite(e.mean)]
    if points:
        xs, found = zip(*points)
        ax.errorbar(
            xs,
            [e.mean for e in found],
            yerr=np.nan_to_num([e.half_width for e in found]),
            marker="o",
            capsize=3,
            lw=1.5,
            label=label,
            color=colour,
        )


def metric_vs_eps(jobs: pd.DataFrame, confidence: float) -> bytes | None:
    """F1 (micro, macro) and MAUVE against epsilon, one line per generator, for one dataset's benchmark jobs.

    Each generator keeps its colour in every panel and is shifted a little
    sideways, so overlapping intervals stay readable.
    """
    done = jobs[jobs["status"] == COMPLETE]
    panels = [c for c in PANELS if c in done and done[c].notna().any()]
    if not panels:
        return None
    eps_values = sorted(done["epsilon"].dropna().unique())
    position = {eps: i for i, eps in enumerate(eps_values)}
    generators = sorted(done["generator"].unique())
    fig = Figure(figsize=(4.4 * len(panels), 4.2), layout="constrained")
    for ax, column in zip(fig.subplots(1, len(panels), squeeze=False)[0], panels):
        for i, generator in enumerate(generators):
            shift = (i - (len(generators) - 1) / 2) * 0.06
            points = series(done[done["generator"] == generator], column, confidence)
            errorbar(ax, [(position[eps] + shift, value) for eps, value in points], str(generator), f"C{i}")
        for (label, sources), (colour, style) in zip(baseline_sources([column]), BASELINE_STYLES):
            found = baseline_estimate(done, sources[column], confidence) if column in sources else None
            if found is not None:
                ax.axhline(found.mean, color=colour, ls=style, lw=1.2, label=label)
        ax.set_xticks(range(len(eps_values)), [format_eps(e) for e in eps_values])
        ax.set(
            xlabel="nominal ε",
            ylabel=column.split(".", 1)[1],
            title=f"{column.split('.', 1)[1]} vs ε",
            ylim=(-0.02, 1.02),
            xlim=(-0.4, len(eps_values) - 0.6),
        )
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3, frameon=False)
    return to_png(fig)


def lower_bound_vs_nominal(frame: pd.DataFrame, confidence: float) -> bytes | None:
    """eps_emp_lower against nominal epsilon (finite ones) with the line y = x; above it is a violation. Each point's
    ceiling (eps_ceiling, the most a perfect attack could certify from that design) is a hollow triangle of its
    colour: one at or below y = x marks an audit that could not have seen a violation."""
    jobs = audit_jobs(frame)
    done = jobs[(jobs["status"] == COMPLETE) & np.isfinite(jobs["epsilon"])] if LOWER in jobs else jobs.iloc[:0]
    if done.empty:
        return None
    fig = Figure(figsize=(5.5, 6.0))
    ax = fig.add_subplot()
    top = 0.0
    for i, ((dataset, generator, mode), rows) in enumerate(done.groupby(["dataset", "generator", "audit.mode"])):
        points = series(rows, LOWER, confidence)
        found = series(rows, CEILING, confidence) if CEILING in rows else []  # none in results before it
        ceilings = [(x, e.mean) for x, e in found if math.isfinite(e.mean)]
        top = max([top] + [max(x, e.mean + np.nan_to_num(e.half_width)) for x, e in points if math.isfinite(e.mean)])
        top = max([top] + [y for _, y in ceilings])
        errorbar(ax, points, f"{generator}{markers(rows)} ({dataset}, {mode})", f"C{i}")
        if ceilings:
            ax.plot(*zip(*ceilings), ls="none", marker="^", mfc="none", ms=8, color=f"C{i}")
    top = 1.1 * top or 1.0
    ax.plot([0, top], [0, top], color="black", ls="--", lw=1, label="y = x (nominal ε)")
    ax.fill_between([0, top], [0, top], top, color="crimson", alpha=0.12, label="violation: bound > nominal ε")
    if CEILING in done and done[CEILING].notna().any():
        ax.plot([], [], ls="none", marker="^", mfc="none", ms=8, color="grey", label=CEILING_LABEL)
    ax.set(
        xlim=(0, top),
        ylim=(0, top),
        xlabel="nominal ε",
        ylabel="eps_emp_lower",
        title="empirical lower bound vs nominal ε",
    )
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), frameon=False)  # below: none hides a point
    fig.tight_layout()
    return to_png(fig)
