"""The report's summary: per dataset, generator and nominal epsilon, one line a reader can act on.

Each line says what its figures are compared with and what they could not
have seen:

- utility: the headline F1 over seeds, flagged where it is not above random
  or majority, and its gain over the best public-knowledge baseline (jobs
  never given the private documents: `public`, `template`, a withheld
  command program; `benchmark.is_public_baseline`) with the verdict on
  private learning and the smallest gain its design detects
  (`synbench.report.gain`); per dataset, the positive control's gain (real
  documents at the synthetic size: where it shows none, the task cannot),
  and the jobs left out of the public baselines and why;
- disclosure: private documents the releases reproduce (near-)verbatim
  against unseen real ones, summed over seeds, flagged when a seed's exact
  test is below alpha / seeds (`table.disclosure_row`; `synbench.audit.disclosure`);
- audit: the row's verdict as the audit table gives it (violation,
  consistent, inconclusive with the size a perfect attack would need), beside
  its bound and its ceiling (`synbench.audit.ceiling`).

A line is one generator at one nominal epsilon; a generator run in several
setups (configs) at one epsilon gets a line per setup, named apart.

Intervals follow the page's one convention (`interval_note`).
"""

from __future__ import annotations

import pandas as pd

from synbench.report.audit import CEILING, LOWER, verdict, verdict_tables
from synbench.report.audit import TASK as AUDIT
from synbench.report.benchmark import (
    MATCHED,
    ROW_KEYS,
    PublicGains,
    baseline_exclusions,
    gains_over_public,
    is_public_baseline,
    lead,
    public_baselines,
)
from synbench.report.benchmark import TASK as BENCHMARK
from synbench.report.gain import PRIVATE_LEARNING
from synbench.report.load import COMPLETE, task_jobs
from synbench.report.stats import estimate, format_eps, format_number
from synbench.report.table import NOT_DP, Group, disclosure_row, groups, row_name, same_eps


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


def disclosure_words(jobs: pd.DataFrame, confidence: float) -> str | None:
    """Private and unseen documents that reappear, summed over the row's jobs (not DP: marked), and the row's flag
    corrected over its seeds (`table.disclosure_row`)."""
    found = disclosure_row(jobs, confidence)
    if found is None:
        return None
    k, n, j, m = found.counts
    return (
        f"disclosure{NOT_DP} {k} of {n} private documents reappear (near-)verbatim, {j} of {m} unseen ones do: "
        f"{found.verdict()}"
    )


def audit_words(jobs: pd.DataFrame, eps: float) -> str | None:
    """The row's audit verdict as the audit table gives it (`report.audit.verdict`: every seed's test at the row's
    level, consistent or inconclusive by the perfect attack's), beside the largest bound and ceiling (the ceiling
    once: an inconclusive verdict already names it)."""
    if jobs.empty:
        return None
    group = Group(jobs, jobs.iloc[0:0])
    cell, _ = verdict(group, eps, verdict_tables(group))
    figures = [
        f"{label} {format_number(float(jobs[column].max()))}"
        for label, column in (("eps_emp_lower", LOWER), ("ceiling", CEILING))
        if column in jobs and jobs[column].notna().any() and label not in cell.text
    ]
    return f"audit {cell.text}" + (f" ({', '.join(figures)})" if figures else "")


def row_jobs(jobs: pd.DataFrame, generator: str, eps: float) -> pd.DataFrame:
    """The jobs of one generator at one nominal epsilon (NaN matches NaN)."""
    return jobs[(jobs["generator"] == generator) & same_eps(jobs["epsilon"], eps)]


def public_line(benchmark: pd.DataFrame, confidence: float) -> str | None:
    """The public-knowledge baselines of one dataset (jobs never given the private documents) and their headline
    F1."""
    found = public_baselines(benchmark)
    column = lead(benchmark)[0]
    shown = [
        f"{name} {value}"
        for name, group in found.items()
        for value in [estimate(group.complete.get(column, pd.Series(dtype=float)), confidence)]
        if value is not None
    ]
    if not shown:
        return None
    return f"public knowledge alone (no private document given): {column.split('.', 1)[1]} " + ", ".join(shown)


def control_line(found: PublicGains | None) -> str | None:
    """The positive control's gain over public knowledge, and what it means for every row when it shows none."""
    if found is None or found.control is None:
        return None
    words = f"positive control ({MATCHED}): gain over public {found.control}"
    if found.control.verdict != PRIVATE_LEARNING:
        words += (
            "; real documents themselves show no private learning here, so this task and design cannot show it "
            "for any generator"
        )
    return words


def summary_lines(frame: pd.DataFrame, confidence: float) -> list[str]:
    """Per dataset, its public baselines and the jobs left out of them; then one line per generator x nominal
    epsilon (x setup, where a generator ran several at one epsilon) with benchmark or audit jobs."""
    done = frame[frame["status"] == COMPLETE]
    benchmark, audits = task_jobs(done, BENCHMARK), task_jobs(done, AUDIT)
    frame_jobs = task_jobs(frame, BENCHMARK)
    lines = []
    for dataset in sorted(set(benchmark["dataset"]) | set(audits["dataset"])):
        mine, theirs = benchmark[benchmark["dataset"] == dataset], audits[audits["dataset"] == dataset]
        public = public_line(mine, confidence)
        lines += [f"{dataset}: {public}."] if public else []
        found = gains_over_public(frame_jobs[frame_jobs["dataset"] == dataset], confidence)
        gains = found.rows if found is not None else {}
        control = control_line(found)
        lines += [f"{dataset}: {control}."] if control else []
        lines += [f"{dataset}: {why}." for why in baseline_exclusions(mine)]
        generators = mine[~is_public_baseline(mine)]
        rows = pd.concat([generators, theirs])
        for generator, eps in (
            rows[["generator", "epsilon"]]
            .drop_duplicates()
            .sort_values(["generator", "epsilon"])
            .itertuples(index=False)
        ):
            setups = groups(row_jobs(generators, generator, eps), ROW_KEYS)
            audit = audit_words(row_jobs(theirs, generator, eps), eps)
            parts = [
                (
                    row_name(generators, ROW_KEYS, key),
                    [
                        utility_words(group.complete, confidence),
                        f"gain over public {gain}" if (gain := gains.get(key)) is not None else None,
                        disclosure_words(group.complete, confidence),
                    ],
                )
                for key, group in setups
            ]
            if len(parts) == 1:  # one setup: its audit joins its line
                parts[0][1].append(audit)
            else:
                parts.append((str(generator), [audit]))
            for name, words in parts:
                shown = [w for w in words if w]
                if shown:
                    lines.append(f"{dataset}, {name}, ε = {format_eps(eps)}: " + "; ".join(shown) + ".")
    return lines
