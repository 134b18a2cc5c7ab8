"""The generator comparison: per dataset, each generator x ε over seeds, and its cost.

The seconds a job took sit beside the quality, so a faster generator and a
better one can be told apart. In the report the comparison keeps the page's
one convention (the t interval at the report's confidence, `interval_note`);
the demo grid's benchmark asks it for mean ± standard error (`confidence=None`),
the scale its bars are written on ("more than 2 SE apart"). Baselines (random,
majority, real data) are per seed, then over seeds, as in the utility table; so
are the public baselines (jobs never given the private documents: `public`, `template`,
`benchmark.is_public_baseline`), with their seconds per job. Where one ran,
each generator row also gives its gain over public knowledge: its headline F1
minus the best public baseline's, paired by seed, as mean ± standard error
(`benchmark.gains_over_public`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from synbench.report.benchmark import (
    BASELINES,
    GAIN,
    ROW_KEYS,
    TASK,
    baseline_estimate,
    gains_over_public,
    is_public_baseline,
    public_baselines,
)
from synbench.report.load import COMPLETE, JOB_SECONDS, task_jobs
from synbench.report.stats import Estimate, estimate, format_job_eps
from synbench.report.table import Cell, Table, all_controls, groups, row_name

# results column -> its header
QUALITY = (("utility.f1_macro", "macro F1"), ("utility.f1_micro", "micro F1"), ("fidelity.mauve", "MAUVE"))


@dataclass(frozen=True)
class ComparisonRow:
    """One generator x ε (or a baseline, with ε NaN): its quality estimates over seeds and mean seconds per job."""

    label: str
    epsilon: float
    seeds: int
    quality: dict[str, Estimate | None]
    job_s: float
    baseline: bool = False
    control: bool = False  # a built-in control's row: its ε was not applied (`table.all_controls`)
    gain: Estimate | None = None  # headline F1 minus the best public baseline's (`benchmark.gains_over_public`)
    key: tuple = ()  # a generator row's `ROW_KEYS` values (generator, eps, setup): its key in `public_gains`

    def figures(self) -> dict[str, Any]:
        """The row as JSON-able figures: `<key>_mean`, `<key>_se` per quality column, seeds and seconds per job."""
        out: dict[str, Any] = {"seeds": self.seeds}
        for column, found in self.quality.items():
            key = column.split(".", 1)[1]
            if found is not None:
                out[f"{key}_mean"] = round(found.mean, 4)
                out[f"{key}_se"] = None if math.isnan(found.half_width) else round(found.half_width, 4)
        if self.gain is not None:
            out["gain_over_public_mean"] = round(self.gain.mean, 4)
            out["gain_over_public_se"] = None if math.isnan(self.gain.half_width) else round(self.gain.half_width, 4)
        if not math.isnan(self.job_s):
            out["job_s_mean"] = round(self.job_s, 1)
        return out


def mean_job_s(jobs: pd.DataFrame) -> float:
    """The mean seconds of these jobs (NaN when none recorded its timing)."""
    return float(jobs[JOB_SECONDS].mean()) if JOB_SECONDS in jobs else math.nan


def comparison_rows(frame: pd.DataFrame, confidence: float | None = None) -> dict[str, list[ComparisonRow]]:
    """Per dataset of the sweep's benchmark jobs: a row per generator x ε (with its gain over public knowledge where
    a public baseline ran), then the baseline rows, the public ones last; each estimate is mean ± the t interval at
    `confidence`, or ± the standard error with None (`stats.estimate`)."""
    out: dict[str, list[ComparisonRow]] = {}
    for (dataset,), group in groups(task_jobs(frame, TASK), ["dataset"]):
        jobs = group.complete
        if jobs.empty:
            continue
        found_gains = gains_over_public(jobs, confidence)
        gains = found_gains.rows if found_gains else {}
        rows = [
            ComparisonRow(
                row_name(jobs, ROW_KEYS, key),
                float(key[1]),
                int(g.complete["seed"].nunique()),
                {c: estimate(g.complete[c], confidence) if c in g.complete else None for c, _ in QUALITY},
                mean_job_s(g.complete),
                control=all_controls(g.complete),
                gain=found.estimate() if (found := gains.get(key)) is not None else None,
                key=key,
            )
            for key, g in groups(jobs[~is_public_baseline(jobs)], ROW_KEYS)
        ]
        done = jobs[jobs["status"] == COMPLETE]
        for label, key in BASELINES:
            sources = {"utility.f1_macro": f"utility.{key}_macro", "utility.f1_micro": f"utility.{key}"}
            found = {c: baseline_estimate(done, sources[c], confidence) if c in sources else None for c, _ in QUALITY}
            if any(found.values()):
                rows.append(ComparisonRow(label, math.nan, int(done["seed"].nunique()), found, math.nan, True))
        for name, public in public_baselines(jobs).items():
            runs = public.complete
            found = {c: baseline_estimate(runs, c, confidence) for c, _ in QUALITY}
            rows.append(ComparisonRow(name, math.nan, int(runs["seed"].nunique()), found, mean_job_s(runs), True))
        out[str(dataset)] = rows
    return out


def comparison_table(dataset: str, rows: list[ComparisonRow], confidence: float | None = None) -> Table:
    """The rows as a table: quality as mean ± its uncertainty (`spread`), the gain over public knowledge where a
    public baseline ran, then seconds per job."""
    kind = lambda row: "baseline" if row.baseline else ""  # noqa: E731
    with_gain = any(row.gain is not None for row in rows)
    body = tuple(
        (
            Cell(row.label, kind(row)),
            Cell("" if row.baseline else format_job_eps(row.epsilon, row.control), kind(row)),
            Cell(str(row.seeds), kind(row)),
            *(Cell(str(row.quality[c]) if row.quality[c] is not None else "", kind(row)) for c, _ in QUALITY),
            *((Cell(str(row.gain) if row.gain is not None else "", kind(row)),) if with_gain else ()),
            Cell("" if math.isnan(row.job_s) else f"{row.job_s:.0f}", kind(row)),
        )
        for row in rows
    )
    gain_head = (f"{GAIN} ↑",) if with_gain else ()
    head = ("generator", "ε", "seeds", *(f"{name} ↑" for _, name in QUALITY), *gain_head, "s / job")
    return Table(head, body, f"{dataset}: generators compared (mean ± {spread(confidence)} over seeds)")


def spread(confidence: float | None) -> str:
    """What ± means in the comparison: the t interval's half-width at `confidence`, or the standard error."""
    return "standard error" if confidence is None else f"the {confidence:.0%} t interval"


def comparison_note(confidence: float | None = None) -> str:
    scale = (
        "Mean ± standard error (SD / √n over seeds): two rows whose means are more than 2 SE apart differ. "
        if confidence is None
        else "Mean ± the interval stated at the top of this page. "
    )
    return (
        scale
        + f"{GAIN}: the headline F1 (macro when the labels are imbalanced) minus that of the best public baseline "
        "(a job never given the private documents, the one with the highest mean), as two independent means "
        "(the utility table's note says how its variance is pooled). "
        "s / job: the mean of each job's timing steps (fit, sample, metrics), in seconds."
    )
