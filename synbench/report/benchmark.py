"""The paper's utility and fidelity table: per dataset, one row per generator x epsilon, plus baseline rows.

The headline columns are F1 (macro first when the labels are imbalanced,
`stats.macro_f1_leads`), MAUVE and every metric key whose direction the jobs'
results.json declare (`higher_is_better`, written from each metric's class
attribute when it ran); the best value per epsilon is bold. Every other `utility.*` and
`fidelity.*` key goes to a second table, so nothing a job measured is
dropped. Baseline rows come from the jobs' own baseline keys: random,
majority and real-data F1, and the real-vs-real reference (`<key>_ref`) of
each fidelity column. A baseline is the same for every generator and epsilon
of one seed, so it is averaged per seed first and the interval is over seeds.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from synbench.report.load import COMPLETE, metric_directions, task_jobs
from synbench.report.stats import Estimate, estimate, format_job_eps, macro_f1_leads
from synbench.report.table import Cell, Table, all_controls, groups, markers, metric_cell

TASK = "benchmark"
SECTIONS = ("utility", "fidelity")
LEAD = ("utility.f1_micro", "utility.f1_macro", "fidelity.mauve")
# Baseline row label -> the utility key of its micro F1 (its macro F1 is `<key>_macro`).
BASELINES = (("random", "random_f1"), ("majority", "majority_f1"), ("real data", "real_f1"))
REFERENCE = "real vs real"
HEAD = ("generator", "ε", "seeds")


@dataclass(frozen=True)
class DatasetTables:
    dataset: str
    main: Table
    other: Table | None


def header(column: str, directions: dict[str, bool]) -> str:
    arrow = "" if column not in directions else " ↑" if directions[column] else " ↓"
    return column.split(".", 1)[1] + arrow


def baseline_sources(columns: list[str]) -> list[tuple[str, dict[str, str]]]:
    """Baseline rows: label and, per shown column, the results column its value comes from."""
    rows = [
        (label, {"utility.f1_micro": f"utility.{key}", "utility.f1_macro": f"utility.{key}_macro"})
        for label, key in BASELINES
    ]
    return rows + [(REFERENCE, {c: f"{c}_ref" for c in columns if c.startswith("fidelity.")})]


def baseline_estimate(jobs: pd.DataFrame, source: str, confidence: float | None) -> Estimate | None:
    """A baseline over seeds: one value per seed (it does not depend on generator or epsilon), then the interval."""
    if source not in jobs:
        return None
    return estimate(jobs.groupby("seed")[source].mean(), confidence)


def lead(jobs: pd.DataFrame) -> tuple[str, ...]:
    """The first columns: macro F1 before micro F1 when the eval labels are imbalanced (`macro_f1_leads`)."""

    def mean(column: str) -> float | None:
        return float(jobs[column].mean()) if column in jobs and jobs[column].notna().any() else None

    if macro_f1_leads(mean("utility.majority_f1"), mean("utility.random_f1")):
        return ("utility.f1_macro", "utility.f1_micro", *LEAD[2:])
    return LEAD


def split_columns(jobs: pd.DataFrame, directions: dict[str, bool]) -> tuple[list[str], list[str]]:
    """(headline columns, other columns) among the metric keys these jobs hold; baseline keys go to baseline rows."""
    present = [c for c in jobs.columns if c.split(".", 1)[0] in SECTIONS and jobs[c].notna().any()]
    first = lead(jobs)
    main = [c for c in first if c in present] + sorted(c for c in present if c in directions and c not in first)
    used = {source for _, sources in baseline_sources(main) for source in sources.values()}
    return main, sorted(c for c in present if c not in main and c not in used)


def generator_rows(
    jobs: pd.DataFrame, columns: list[str], directions: dict[str, bool], confidence: float
) -> list[tuple[Cell, ...]]:
    """One row per generator x epsilon; per epsilon, the best value of each directed column is marked (unless all
    tie)."""
    rows: list[tuple[float, list[Cell], list[Estimate | None]]] = []
    for (generator, eps), group in groups(jobs, ["generator", "epsilon"]):
        found = [metric_cell(group, c, confidence) for c in columns]
        eps_cell = Cell(format_job_eps(eps, all_controls(group.all)))
        label = [Cell(f"{generator}{markers(group.all)}"), eps_cell, group.seeds_cell()]
        rows.append((eps, label + [cell for cell, _ in found], [value for _, value in found]))
    for j, column in enumerate(columns):
        if column not in directions:
            continue
        for eps in {row[0] for row in rows}:
            candidates = [(cells, values[j]) for e, cells, values in rows if e == eps]
            means = [(value.mean, cells) for cells, value in candidates if value is not None]
            best = (max if directions[column] else min)((m for m, _ in means), default=None)
            if any(mean != best for mean, _ in means):  # a tie of all marks nothing
                for mean, cells in means:
                    if mean == best:
                        cells[len(HEAD) + j] = Cell(cells[len(HEAD) + j].text, "best")
    return [tuple(cells) for _, cells, _ in rows]


def baseline_rows(jobs: pd.DataFrame, columns: list[str], confidence: float) -> list[tuple[Cell, ...]]:
    """The random, majority, real-data and real-vs-real rows, where the jobs report them."""
    done = jobs[jobs["status"] == COMPLETE]
    out = []
    for label, sources in baseline_sources(columns):
        found = {c: baseline_estimate(done, sources[c], confidence) for c in columns if c in sources}
        if any(found.values()):
            seeds = Cell(str(done["seed"].nunique()), "baseline")
            cells = [Cell(str(found[c]) if found.get(c) else "", "baseline") for c in columns]
            out.append((Cell(label, "baseline"), Cell("", "baseline"), seeds, *cells))
    return out


def benchmark_tables(frame: pd.DataFrame, confidence: float) -> list[DatasetTables]:
    """Per dataset: the headline table with baselines, and the table of every other metric key."""
    directions = metric_directions(frame)
    out = []
    for (dataset,), group in groups(task_jobs(frame, TASK), ["dataset"]):
        jobs = group.all
        main, other = split_columns(group.complete, directions)
        table = Table(
            HEAD + tuple(header(c, directions) for c in main),
            tuple(generator_rows(jobs, main, directions, confidence) + baseline_rows(jobs, main, confidence)),
            f"{dataset}: utility and fidelity",
        )
        rest = Table(
            HEAD + tuple(header(c, directions) for c in other),
            tuple(generator_rows(jobs, other, directions, confidence)),
            f"{dataset}: other metric keys",
        )
        out.append(DatasetTables(str(dataset), table, rest if other else None))
    return out
