"""The report's summary: per dataset, generator and nominal epsilon, one line a reader can act on.

Each line says what its figures are compared with and what they could not
have seen:

- utility: the headline F1 over seeds, flagged where it is not above random
  or majority, and its gain over the best public-knowledge baseline (jobs
  that spent eps = 0: `public`, `template`) with the verdict on private
  learning (`synbench.report.benchmark.public_gains`);
- disclosure: private documents the releases reproduce (near-)verbatim
  against unseen real ones, summed over seeds, flagged if any seed's exact
  test flagged it (`synbench.audit.disclosure`);
- audit: the row's verdict as the audit table gives it (violation,
  consistent, inconclusive with the size a perfect attack would need), beside
  its bound and its ceiling (`synbench.audit.ceiling`).

Intervals follow the page's one convention (`interval_note`).
"""

from __future__ import annotations

import math

import pandas as pd

from synbench.report.audit import CEILING, LOWER, verdict
from synbench.report.audit import TASK as AUDIT
from synbench.report.benchmark import TASK as BENCHMARK
from synbench.report.benchmark import is_public_baseline, lead, public_baselines, public_gains
from synbench.report.load import COMPLETE, task_jobs
from synbench.report.stats import estimate, format_eps, format_number
from synbench.report.table import Group

DISCLOSURE = "disclosure."


def utility_words(jobs: pd.DataFrame, confidence: float) -> str | None:
    """The headline F1 of a row's benchmark jobs against random and majority (means over seeds)."""
    column = lead(jobs)[0]
    found = estimate(jobs[column], confidence) if column in jobs else None
    if found is None:
        return None
    key = column.split(".", 1)[1]
    suffix = "_macro" if key.endswith("_macro") else ""
    flags = [
        f"NOT above {name}"
        for name in ("random", "majority")
        for ref in [jobs.get(f"utility.{name}_f1{suffix}")]
        if ref is not None and ref.notna().any() and found.mean <= float(ref.mean())
    ]
    return f"{key.replace('_', ' ')} {found}" + (f" ({', '.join(flags)})" if flags else "")


def disclosure_words(jobs: pd.DataFrame) -> str | None:
    """Private and unseen documents that reappear, summed over the row's jobs, and whether any job flagged it."""
    needed = [f"{DISCLOSURE}{k}" for k in ("private_reappear", "n_private", "unseen_reappear", "n_unseen")]
    if not all(c in jobs for c in needed) or jobs[needed].isna().all(axis=None):
        return None
    found = jobs.dropna(subset=needed)
    k, n, j, m = (int(found[c].sum()) for c in needed)
    flagged = int(found.get(f"{DISCLOSURE}flagged", pd.Series(dtype=float)).fillna(0).astype(bool).sum())
    jobs_word = f"{len(found)} job{'s' if len(found) > 1 else ''}"
    verdict = f"FLAGGED in {flagged} of {jobs_word}" if flagged else f"not flagged ({jobs_word})"
    return f"disclosure {k} of {n} private documents reappear (near-)verbatim, {j} of {m} unseen ones do: {verdict}"


def audit_words(jobs: pd.DataFrame, eps: float) -> str | None:
    """The row's audit verdict as the audit table gives it (`report.audit.verdict`: every seed's test at the row's
    level, consistent or inconclusive by the perfect attack's), beside the largest bound and ceiling (the ceiling
    once: an inconclusive verdict already names it)."""
    if jobs.empty:
        return None
    cell, _ = verdict(Group(jobs, jobs.iloc[0:0]), eps)
    figures = [
        f"{label} {format_number(float(jobs[column].max()))}"
        for label, column in (("eps_emp_lower", LOWER), ("ceiling", CEILING))
        if column in jobs and jobs[column].notna().any() and label not in cell.text
    ]
    return f"audit {cell.text}" + (f" ({', '.join(figures)})" if figures else "")


def row_jobs(jobs: pd.DataFrame, generator: str, eps: float) -> pd.DataFrame:
    """The jobs of one generator at one nominal epsilon (NaN matches NaN)."""
    same_eps = jobs["epsilon"].isna() if math.isnan(eps) else jobs["epsilon"] == eps
    return jobs[(jobs["generator"] == generator) & same_eps]


def public_line(benchmark: pd.DataFrame, confidence: float) -> str | None:
    """The public-knowledge baselines of one dataset (jobs that spent eps 0) and their headline F1."""
    found = public_baselines(benchmark)
    if not found:
        return None
    column = lead(benchmark)[0]
    shown = [f"{name} {estimate(jobs[column], confidence)}" for name, jobs in found.items() if column in jobs]
    return f"public knowledge alone (no private document read): {column.split('.', 1)[1]} " + ", ".join(shown)


def summary_lines(frame: pd.DataFrame, confidence: float) -> list[str]:
    """Per dataset, its public baselines; then one line per generator x nominal epsilon with benchmark or audit
    jobs."""
    done = frame[frame["status"] == COMPLETE]
    benchmark, audits = task_jobs(done, BENCHMARK), task_jobs(done, AUDIT)
    gains = public_gains(frame, confidence)
    lines = []
    for dataset in sorted(set(benchmark["dataset"]) | set(audits["dataset"])):
        mine = benchmark[benchmark["dataset"] == dataset]
        public = public_line(mine, confidence)
        lines += [f"{dataset}: {public}."] if public else []
        rows = pd.concat([mine[~is_public_baseline(mine)], audits[audits["dataset"] == dataset]])
        for generator, eps in (
            rows[["generator", "epsilon"]]
            .drop_duplicates()
            .sort_values(["generator", "epsilon"])
            .itertuples(index=False)
        ):
            jobs, gain = row_jobs(mine, generator, eps), gains.get((dataset, generator, eps))
            words = [utility_words(jobs, confidence) if not jobs.empty else None]
            words.append(f"gain over public {gain}" if gain is not None else None)
            words += [
                disclosure_words(jobs),
                audit_words(row_jobs(audits[audits["dataset"] == dataset], generator, eps), eps),
            ]
            shown = [w for w in words if w]
            if shown:
                lines.append(f"{dataset}, {generator}, ε = {format_eps(eps)}: " + "; ".join(shown) + ".")
    return lines
