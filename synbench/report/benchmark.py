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

Public baselines are jobs too: every job that spent epsilon 0 and is not a
non-private control (`public`, `template`, any third party's generator that
spends nothing) released text independent of the private data by
construction, so it is a baseline row named after its generator, not a
generator row. Each generator row then gets its gain over public knowledge
(`PublicGain`): its headline F1 minus the best public baseline's (the highest
mean over its seeds), paired by seed, with the table's interval, flagged
"private learning" only when the interval's lower end is above 0.
`public_gains` gives the same figures per (dataset, generator, eps).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from synbench.report.load import COMPLETE, EPSILON_SPENT, metric_directions, task_jobs
from synbench.report.stats import MISSING, Estimate, estimate, format_job_eps, macro_f1_leads
from synbench.report.table import Cell, Table, all_controls, groups, markers, metric_cell

TASK = "benchmark"
SECTIONS = ("utility", "fidelity")
LEAD = ("utility.f1_micro", "utility.f1_macro", "fidelity.mauve")
# Baseline row label -> the utility key of its micro F1 (its macro F1 is `<key>_macro`).
BASELINES = (("random", "random_f1"), ("majority", "majority_f1"), ("real data", "real_f1"))
REFERENCE = "real vs real"
HEAD = ("generator", "ε", "seeds")
ROW_KEYS = ["generator", "epsilon"]  # what makes a generator row: the same keys in every table that pairs rows
GAIN = "gain over public"
PRIVATE_LEARNING, NOT_ABOVE_PUBLIC = "private learning", "not above public"


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
    return estimate(seed_values(jobs, source), confidence)


def seed_values(jobs: pd.DataFrame, column: str) -> pd.Series:
    """One value per seed (the mean of that seed's jobs), indexed by seed: what a baseline or a pairing counts."""
    return jobs.groupby("seed")[column].mean().dropna()


@dataclass(frozen=True)
class PublicGain:
    """A generator row's headline F1 minus the best public baseline's, paired by seed (only seeds both ran)."""

    baseline: str  # the best public baseline's generator: the highest mean of `column` over its seeds
    column: str  # the headline F1 compared (`lead`: macro F1 when the labels are imbalanced)
    estimate: Estimate  # mean of the paired differences and its interval (the table's convention)

    @property
    def flag(self) -> str:
        """The verdict: "private learning" when the interval's lower end is above 0; else (one seed, no interval,
        included) "not above public"."""
        lower = self.estimate.mean - self.estimate.half_width
        return PRIVATE_LEARNING if math.isfinite(lower) and lower > 0 else NOT_ABOVE_PUBLIC

    def __str__(self) -> str:
        return f"{self.estimate} ({self.flag})"


def is_public_baseline(jobs: pd.DataFrame) -> pd.Series:
    """Jobs whose release is independent of the private data by construction: they spent epsilon 0 and are not a
    non-private control. A failed job reports no spend, so it stays with the generator rows (and says it failed)."""
    if EPSILON_SPENT not in jobs:
        return pd.Series(False, index=jobs.index)
    return (jobs[EPSILON_SPENT] == 0) & ~jobs["non_private_control"].astype(bool)


def public_baselines(jobs: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The complete public-baseline jobs of one dataset, by generator name (in table order)."""
    done = jobs[is_public_baseline(jobs) & (jobs["status"] == COMPLETE)]
    return {str(name): group.complete for (name,), group in groups(done, ["generator"])}


def best_public(jobs: pd.DataFrame, column: str) -> tuple[str, pd.Series] | None:
    """The public baseline with the highest mean of `column` over its seeds, and its per-seed values; None when no
    public baseline measured it."""
    found = {name: seed_values(group, column) for name, group in public_baselines(jobs).items() if column in group}
    found = {name: values for name, values in found.items() if len(values)}
    if not found:
        return None
    name = max(found, key=lambda n: float(found[n].mean()))
    return name, found[name]


def paired_differences(jobs: pd.DataFrame, column: str, reference: pd.Series) -> pd.Series:
    """`column` of these jobs minus `reference`, seed by seed, over the seeds both have."""
    mine = seed_values(jobs, column) if column in jobs else pd.Series(dtype=float)
    common = mine.index.intersection(reference.index)
    return mine[common] - reference[common]


def gains_over_public(
    jobs: pd.DataFrame, confidence: float | None
) -> tuple[str, dict[tuple, PublicGain | None]] | None:
    """One dataset's best public baseline, and per generator row (keyed by its `ROW_KEYS` values, in `groups`
    order) its `PublicGain`, None where it shares no complete seed with that baseline; None when no public baseline
    ran."""
    column = lead(jobs[jobs["status"] == COMPLETE])[0]
    best = best_public(jobs, column)
    if best is None:
        return None
    name, reference = best
    out: dict[tuple, PublicGain | None] = {}
    for key, group in groups(jobs[~is_public_baseline(jobs)], ROW_KEYS):
        found = estimate(paired_differences(group.complete, column, reference), confidence)
        out[key] = PublicGain(name, column, found) if found is not None else None
    return name, out


def public_gains(frame: pd.DataFrame, confidence: float) -> dict[tuple[str, str, float], PublicGain]:
    """Per (dataset, generator, nominal eps) of a sweep's benchmark jobs: the gain over the best public baseline
    with its Student t interval at `confidence`, and its flag; rows without a paired seed are left out."""
    out: dict[tuple[str, str, float], PublicGain] = {}
    for (dataset,), group in groups(task_jobs(frame, TASK), ["dataset"]):
        _, gains = gains_over_public(group.all, confidence) or ("", {})
        for (generator, eps), gain in gains.items():
            if gain is not None:
                out[(str(dataset), str(generator), float(eps))] = gain
    return out


def gain_cell(gain: PublicGain | None) -> Cell:
    """A generator row's gain over public knowledge, or why it has none (no seed its jobs share with the baseline's)."""
    return Cell(str(gain)) if gain is not None else Cell(f"{MISSING} (no seed paired with public)", "missing")


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
    for (generator, eps), group in groups(jobs, ROW_KEYS):
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
    """The random, majority, real-data and real-vs-real rows, where the jobs report them, then a row per public
    baseline (its own columns over its seeds)."""
    done = jobs[jobs["status"] == COMPLETE]
    found_rows = [
        (label, done, {c: baseline_estimate(done, sources[c], confidence) for c in columns if c in sources})
        for label, sources in baseline_sources(columns)
    ]
    found_rows += [
        (name, public, {c: baseline_estimate(public, c, confidence) for c in columns})
        for name, public in public_baselines(jobs).items()
    ]
    return [
        (
            Cell(label, "baseline"),
            Cell("", "baseline"),
            Cell(str(rows["seed"].nunique()), "baseline"),
            *(Cell(str(found[c]) if found.get(c) else "", "baseline") for c in columns),
        )
        for label, rows, found in found_rows
        if any(found.values())
    ]


def benchmark_tables(frame: pd.DataFrame, confidence: float) -> list[DatasetTables]:
    """Per dataset: the headline table with baselines, and the table of every other metric key."""
    directions = metric_directions(frame)
    out = []
    for (dataset,), group in groups(task_jobs(frame, TASK), ["dataset"]):
        jobs = group.all
        generators = jobs[~is_public_baseline(jobs)]
        main, other = split_columns(group.complete, directions)
        rows = generator_rows(generators, main, directions, confidence)
        baselines = baseline_rows(jobs, main, confidence)
        gains = gains_over_public(jobs, confidence)
        head = HEAD + tuple(header(c, directions) for c in main)
        if gains is not None:  # a column only where a public baseline ran
            best, by_row = gains
            head += (f"{GAIN} ({best})",)
            # by_row is in `groups` order over the same jobs, as generator_rows makes its rows
            rows = [(*row, gain_cell(gain)) for row, gain in zip(rows, by_row.values(), strict=True)]
            baselines = [(*row, Cell("", "baseline")) for row in baselines]
        table = Table(head, tuple(rows + baselines), f"{dataset}: utility and fidelity")
        rest = Table(
            HEAD + tuple(header(c, directions) for c in other),
            tuple(generator_rows(generators, other, directions, confidence)),
            f"{dataset}: other metric keys",
        )
        out.append(DatasetTables(str(dataset), table, rest if other else None))
    return out
