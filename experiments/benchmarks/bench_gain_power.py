"""The bar of utility with power, measured on the kept demo grid: how wide is each generator row's gain over public,
and what would it take to detect a gain of 0.05?

Reads the kept grid's results (`experiments/results/demo`: the benchmark jobs of its generator rows at 3 seeds, the
public baselines `public`, `template` and `label_names`, the cheap two at 10 seeds) through the report's own code
(`synbench.report.benchmark.gains_over_public`, `synbench.report.gain`), at the report's default level. Per row:
the gain, its half-width with the private rows' seed variance pooled (where Bartlett's test allows; the report's
rule) and with the row's own seeds alone, the smallest gain detected with 80% power, and the generator seeds that
would detect 0.05 with the baselines as they ran; then the half-width and the seeds against a baseline whose mean
were exact. And the positive control (real training documents at the synthetic size and label plan): its gain and
verdict, whether the task can show private learning at all. Seconds: none worth timing (it reads files).

Target: gain-over-public half-widths of 0.05 or less at 3 seeds.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
KEPT = HERE.parents[1] / "experiments" / "results" / "demo"
TARGET_HALF_WIDTH = 0.05


def main() -> dict[str, Any]:
    from synbench.report.benchmark import gains_over_public
    from synbench.report.gain import TARGET_GAIN, gain
    from synbench.report.load import load_results, task_jobs
    from synbench.report.stats import format_eps
    from synbench.tasks.options import ReportOptions

    confidence = ReportOptions().confidence
    jobs = task_jobs(load_results(KEPT), "benchmark")
    found = gains_over_public(jobs, confidence)
    if found is None:
        return {"error": f"no public baseline among the kept grid's jobs under {KEPT}"}
    public = jobs[(jobs["generator"] == found.baseline) & (jobs["status"] == "complete")]
    public_values = public.groupby("seed")[found.column].mean()
    rows: dict[str, Any] = {}
    for (generator, eps, _), pooled in found.rows.items():
        if pooled is None:
            continue
        mine = jobs[(jobs["generator"] == generator) & (jobs["epsilon"] == eps) & (jobs["status"] == "complete")]
        own = gain(mine.groupby("seed")[found.column].mean(), public_values, confidence)
        key = f"{generator} eps={format_eps(eps).replace('∞', 'inf')}"
        rows[key] = {
            "gain": round(pooled.mean, 4),
            "half_width_pooled": round(pooled.half_width, 4),
            "half_width_own_seeds": None if own is None or math.isnan(own.half_width) else round(own.half_width, 4),
            "detectable_gain_80": round(pooled.detectable, 4),
            "seeds_to_detect_0.05": pooled.seeds_for(TARGET_GAIN),
            "verdict": pooled.verdict,
        }
        if pooled.pooled:  # the same row against a baseline whose mean were exact (many seeds, or deterministic)
            exact = replace(pooled, se=math.sqrt(pooled.row_variance / pooled.n), public_term=0.0, df=found.pooled_df)
            rows[key] |= {
                "half_width_exact_baseline": round(exact.half_width, 4),
                "seeds_to_detect_0.05_exact_baseline": exact.seeds_for(TARGET_GAIN),
            }
    widths = [row["half_width_pooled"] for row in rows.values()]
    return {
        "kept_grid": str(KEPT.relative_to(HERE.parents[1])),
        "confidence": confidence,
        "best_public": found.baseline,
        "column": found.column,
        "pooled_df": found.pooled_df,
        "bartlett_p": None if math.isnan(found.homogeneity_p) else round(found.homogeneity_p, 4),
        "max_half_width_pooled": max(widths, default=None),
        "rows_within_0.05": sum(w <= TARGET_HALF_WIDTH for w in widths),
        "positive_control": None
        if found.control is None
        else {
            "gain": round(found.control.mean, 4),
            "half_width": round(found.control.half_width, 4),
            "verdict": found.control.verdict,
        },
        "rows": rows,
    }
