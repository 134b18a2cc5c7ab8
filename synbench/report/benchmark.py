"""The paper's utility and fidelity table: per dataset, one row per generator x epsilon x setup, plus baseline rows.

The headline columns are F1 (macro first when the labels are imbalanced,
`stats.macro_f1_leads`), MAUVE and every metric key whose direction the jobs'
results.json declare (`higher_is_better`, written from each metric's class
attribute when it ran); the best value per epsilon is bold. Every other `utility.*` and
`fidelity.*` key goes to a second table, so nothing a job measured is
dropped but a figure that means nothing for the table's jobs (`meaningless`:
the label-cardinality JS on single-label data, 0 by construction). Baseline
rows come from the jobs' own baseline keys: random,
majority and real-data F1, and the real-vs-real reference (`<key>_ref`) of
each fidelity column. A baseline is the same for every generator and epsilon
of one seed, so it is averaged per seed first and the interval is over seeds.
A row never pools two setups: jobs of one generator and nominal epsilon whose
descriptions differ beyond the seed (`load.SETUP`) are two rows, named apart.

Public baselines are jobs too: a job whose generator the job never gave the
private documents (results' `reads_private` false: `public`, `template`, a
`generator=command` program run with `generator.withhold_private`; see
`load.PUBLIC_KNOWLEDGE`) released public knowledge alone, so it is a baseline
row, one per generator, nominal epsilon and setup, not a generator row. What
a job reports it spent never makes it one (a program given the private set
may write `epsilon_spent: 0`), and a job the disclosure check flagged is never
one; `baseline_exclusions` says which jobs were left out and why. Each
generator row then gets its gain over public knowledge (`synbench.report.gain`):
its headline F1 minus the best public baseline's (the highest mean over its
seeds), as two independent means, the private generators' seed variance
pooled over the table's rows where Bartlett's test allows it, with the
smallest gain its design detects with 80% power and a verdict in three
states (private learning, no gain over public, inconclusive). The positive
control, "real data, synthetic size" (the utility metric's classifier trained
on real training documents at each job's synthetic size and label plan), gets
the same gain: if it shows no private learning, the task cannot. `public_gains`
gives the generator rows' figures per (dataset, generator, eps, setup). Each
row also shows its disclosure check, corrected over its seeds
(`table.disclosure_cell`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from synbench.report.gain import (
    INCONCLUSIVE,
    NO_CLAIM,
    NO_GAIN,
    POWER,
    PRIVATE_LEARNING,
    TARGET_GAIN,
    Gain,
    gain,
    pooled_variance,
)
from synbench.report.load import COMPLETE, EPSILON_SPENT, PUBLIC_KNOWLEDGE, SETUP, metric_directions, task_jobs
from synbench.report.stats import MISSING, Estimate, estimate, format_eps, format_job_eps, macro_f1_leads
from synbench.report.table import (
    DISCLOSURE_FLAGGED,
    Cell,
    Group,
    Table,
    all_controls,
    disclosure_cell,
    groups,
    has_disclosure,
    markers,
    metric_cell,
    row_name,
    seed_list,
)

TASK = "benchmark"
SECTIONS = ("utility", "fidelity")
LEAD = ("utility.f1_micro", "utility.f1_macro", "fidelity.mauve")
CARDINALITY = "fidelity.label_cardinality_div"  # the labels metric's JS divergence of the labels per document
# its shares of documents with two or more labels, per side: 0 on both for every job is a single-label table
MULTI_SHARES = ("fidelity.label_multi_share_real", "fidelity.label_multi_share_syn")
# Baseline row label -> the utility key of its micro F1 (its macro F1 is `<key>_macro`).
MATCHED = "real data, synthetic size"  # the positive control's row
BASELINES = (
    ("random", "random_f1"),
    ("majority", "majority_f1"),
    ("real data", "real_f1"),
    (MATCHED, "matched_real_f1"),
)
REFERENCE = "real vs real"
HEAD = ("generator", "ε", "seeds")
# what makes a generator row (and a public baseline's): the same keys in every table that pairs rows
ROW_KEYS = ["generator", "epsilon", SETUP]
GAIN = "gain over public"
DISCLOSURE_HEAD = "disclosure"


@dataclass(frozen=True)
class DatasetTables:
    dataset: str
    main: Table
    other: Table | None
    excluded: tuple[str, ...] = ()  # jobs left out of the public baselines, and why (`baseline_exclusions`)
    gains: PublicGains | None = None  # the gain column's figures, where a public baseline ran


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


EVAL_SD = "_eval_sd"  # suffix of a single fit's eval-set bootstrap SD (the utility metric's real-data row)


def baseline_estimate(jobs: pd.DataFrame, source: str, confidence: float | None) -> Estimate | None:
    """A baseline over seeds: one value per seed (it does not depend on generator or epsilon), then the interval.
    A single fit (the real-data row: one fit whatever the seed) has no seed spread to show, so where the jobs
    report its eval-set bootstrap SD its ± is that SD's normal interval (± one SD with no level)."""
    if source not in jobs:
        return None
    found = estimate(seed_values(jobs, source), confidence)
    spread = f"{source}{EVAL_SD}"
    if found is None or spread not in jobs or jobs[spread].isna().all():
        return found
    from scipy import stats

    z = 1.0 if confidence is None else float(stats.norm.ppf((1 + confidence) / 2))
    return Estimate(found.mean, z * float(jobs[spread].mean()), found.n)


def seed_values(jobs: pd.DataFrame, column: str) -> pd.Series:
    """One value per seed (the mean of that seed's jobs), indexed by seed: what a baseline or a pairing counts."""
    return jobs.groupby("seed")[column].mean().dropna()


def disclosure_flagged(jobs: pd.DataFrame) -> pd.Series:
    """Which jobs their own disclosure check flagged (at its level)."""
    return jobs.get(DISCLOSURE_FLAGGED, pd.Series(0.0, index=jobs.index)).fillna(0).astype(bool)


def is_public_baseline(jobs: pd.DataFrame) -> pd.Series:
    """Jobs whose release is public knowledge alone: the job never gave their generator the private documents
    (`load.PUBLIC_KNOWLEDGE`, from results' `reads_private`), and their disclosure check did not flag them. What a
    job reports it spent plays no part."""
    return jobs[PUBLIC_KNOWLEDGE].astype(bool) & ~disclosure_flagged(jobs)


def baseline_exclusions(jobs: pd.DataFrame) -> list[str]:
    """Why jobs that could pass for public baselines are not, one line per generator and nominal epsilon: a job
    that read no private document but that its disclosure check flagged, and a job given the private documents that
    reports spending epsilon 0."""
    known = jobs[PUBLIC_KNOWLEDGE].astype(bool)
    spent_nothing = jobs[EPSILON_SPENT] == 0 if EPSILON_SPENT in jobs else pd.Series(False, index=jobs.index)
    reasons = (
        (known & disclosure_flagged(jobs), "flagged by the disclosure check, though given no private document"),
        (
            ~known & spent_nothing,
            "given the private documents (results' reads_private), whatever it reports spending (epsilon_spent 0)",
        ),
    )
    lines = []
    for which, why in reasons:
        for (generator, eps), group in groups(jobs[which], ["generator", "epsilon"]):
            seeds = seed_list(sorted(int(s) for s in group.all["seed"]))
            lines.append(f"{generator} at ε = {format_eps(eps)} ({seeds}) is no public baseline: {why}")
    return lines


def public_baselines(jobs: pd.DataFrame) -> dict[str, Group]:
    """The public-baseline jobs of one dataset, by row name (in table order): one per generator, nominal epsilon
    (named where the generator has baselines at several) and setup."""
    public = jobs[is_public_baseline(jobs)]
    epsilons = public.groupby("generator")["epsilon"].nunique(dropna=False)
    several = set(epsilons[epsilons > 1].index)
    out = {}
    for key, group in groups(public, ROW_KEYS):
        name = row_name(public, ROW_KEYS, key)
        out[f"{name} ε={format_eps(key[1])}" if key[0] in several else name] = group
    return out


def best_public(jobs: pd.DataFrame, column: str) -> tuple[str, pd.Series] | None:
    """The public baseline with the highest mean of `column` over its seeds, and its per-seed values; None when no
    public baseline measured it."""
    found = {
        name: seed_values(group.complete, column)
        for name, group in public_baselines(jobs).items()
        if column in group.complete
    }
    found = {name: values for name, values in found.items() if len(values)}
    if not found:
        return None
    name = max(found, key=lambda n: float(found[n].mean()))
    return name, found[name]


@dataclass(frozen=True)
class PublicGains:
    """One dataset's gains over its best public baseline: per generator row (keyed by its `ROW_KEYS` values, in
    `groups` order) its `Gain`, None where it has no complete seed; the positive control's (real training
    documents at each job's synthetic size and label plan); and whether the rows' seed variance was pooled."""

    baseline: str  # the best public baseline's row name: the highest mean of `column` over its seeds
    column: str  # the headline F1 compared (`lead`: macro F1 when the labels are imbalanced)
    rows: dict[tuple, Gain | None]
    control: Gain | None
    pooled_df: float | None  # the pooled seed variance's degrees of freedom; None: each row's own
    homogeneity_p: float  # Bartlett's p-value for equal seed variances over the rows (NaN: not tested)


def gains_over_public(jobs: pd.DataFrame, confidence: float | None) -> PublicGains | None:
    """One dataset's `PublicGains`; None when no public baseline ran. The private generators' rows pool their seed
    variance where the rows allow it (`gain.pooled_variance`); a control row (copy) and the positive control keep
    their own."""
    done = jobs[jobs["status"] == COMPLETE]
    column = lead(done)[0]
    best = best_public(jobs, column)
    if best is None:
        return None
    name, reference = best
    rows = groups(jobs[~is_public_baseline(jobs)], ROW_KEYS)
    empty = pd.Series(dtype=float)
    values = {key: seed_values(group.complete, column) if column in group.complete else empty for key, group in rows}
    private = [key for key, group in rows if not all_controls(group.all)]
    pooled, p_value = pooled_variance([values[key].to_numpy() for key in private])
    out: dict[tuple, Gain | None] = {
        key: gain(values[key], reference, confidence, pooled if key in private else None) for key, _ in rows
    }
    matched = dict(baseline_sources([column]))[MATCHED][column]
    generated = done[~is_public_baseline(done)]
    control = gain(seed_values(generated, matched), reference, confidence) if matched in generated else None
    return PublicGains(name, column, out, control, pooled.df if pooled else None, p_value)


def public_gains(frame: pd.DataFrame, confidence: float) -> dict[tuple[str, str, float, str], Gain]:
    """Per (dataset, generator, nominal eps, setup) of a sweep's benchmark jobs: the gain over the best public
    baseline (`gains_over_public`); rows without a complete seed are left out."""
    out: dict[tuple[str, str, float, str], Gain] = {}
    for (dataset,), group in groups(task_jobs(frame, TASK), ["dataset"]):
        found = gains_over_public(group.all, confidence)
        for (generator, eps, setup), row in (found.rows if found else {}).items():
            if row is not None:
                out[(str(dataset), str(generator), float(eps), str(setup))] = row
    return out


def gain_cell(found: Gain | None) -> Cell:
    """A generator row's gain over public knowledge, or why it has none (no complete seed)."""
    return Cell(str(found)) if found is not None else Cell(f"{MISSING} (no complete seed)", "missing")


def gain_note(found: PublicGains) -> str:
    """How the gain column's intervals were made, for the note under the table."""
    pooled = (
        f"the private generators' rows pool their seed variance ({found.pooled_df:.0f} degrees of freedom; "
        f"Bartlett's test of equal variances p = {found.homogeneity_p:.2f})"
        if found.pooled_df is not None
        else "each row uses its own seeds' variance ("
        + (
            f"Bartlett's test rejects equal variances over the rows, p = {found.homogeneity_p:.3f}"
            if math.isfinite(found.homogeneity_p)
            else "fewer than two rows have a seed spread to pool"
        )
        + ")"
    )
    return (
        f"{GAIN} ({found.baseline}): the row's mean {found.column.split('.', 1)[1]} minus the best public "
        f"baseline's (a job never given the private documents, the highest mean), as two independent means (no "
        f"randomness is shared between the jobs, so seeds are not paired); {pooled}. Each cell states the smallest "
        f"gain its design detects with {POWER:.0%} power (the one-sided test behind the interval's lower end), and "
        f"its verdict: {PRIVATE_LEARNING} (the interval is above 0), {NO_GAIN} (not above 0, though a gain of "
        f"{TARGET_GAIN:g} would have been detected), or {INCONCLUSIVE} (with the seeds that would detect "
        f"{TARGET_GAIN:g}); {NO_CLAIM} where there is no variance to go on. The positive control, "
        f"{MATCHED}, trains on real training documents at each job's synthetic size and label plan: if it shows no "
        f"private learning, this task and design cannot show any. The real-data row is one fit, so its ± is the "
        f"eval-set bootstrap's (resampling the eval documents), not a spread over seeds."
    )


def lead(jobs: pd.DataFrame) -> tuple[str, ...]:
    """The first columns: macro F1 before micro F1 when the eval labels are imbalanced (`macro_f1_leads`)."""

    def mean(column: str) -> float | None:
        return float(jobs[column].mean()) if column in jobs and jobs[column].notna().any() else None

    if macro_f1_leads(mean("utility.majority_f1"), mean("utility.random_f1")):
        return ("utility.f1_macro", "utility.f1_micro", *LEAD[2:])
    return LEAD


def split_columns(jobs: pd.DataFrame, directions: dict[str, bool]) -> tuple[list[str], list[str]]:
    """(headline columns, other columns) among the metric keys these jobs hold, less those that mean nothing for
    them (`meaningless`); baseline keys go to baseline rows."""
    dropped = meaningless(jobs)
    present = [c for c in jobs.columns if c.split(".", 1)[0] in SECTIONS and jobs[c].notna().any() and c not in dropped]
    first = lead(jobs)
    main = [c for c in first if c in present] + sorted(c for c in present if c in directions and c not in first)
    used = {source for _, sources in baseline_sources(main) for source in sources.values()}
    return main, sorted(c for c in present if c not in main and c not in used)


def meaningless(jobs: pd.DataFrame) -> set[str]:
    """The columns whose figure says nothing about these jobs: the label-cardinality JS (and its real-vs-real
    reference) where every job's results say no document on either side carries two labels, as the job summary
    decides it (`summary.single_label`): every cardinality is then 1 and the divergence 0 by construction. A job
    whose results hold no such shares keeps the column (and a column no job holds is not shown anyway)."""
    if not all(c in jobs for c in MULTI_SHARES) or not jobs[list(MULTI_SHARES)].eq(0).all(axis=None):
        return set()
    return {CARDINALITY, f"{CARDINALITY}_ref"}


def generator_rows(
    jobs: pd.DataFrame, columns: list[str], directions: dict[str, bool], confidence: float
) -> list[tuple[Cell, ...]]:
    """One row per generator x epsilon x setup; per epsilon, the best value of each directed column is marked
    (unless all tie)."""
    rows: list[tuple[float, list[Cell], list[Estimate | None]]] = []
    for key, group in groups(jobs, ROW_KEYS):
        eps = key[1]
        found = [metric_cell(group, c, confidence) for c in columns]
        eps_cell = Cell(format_job_eps(eps, all_controls(group.all)))
        label = [Cell(f"{row_name(jobs, ROW_KEYS, key)}{markers(group.all)}"), eps_cell, group.seeds_cell()]
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


def baseline_rows(
    jobs: pd.DataFrame, columns: list[str], confidence: float
) -> list[tuple[tuple[Cell, ...], Group | None]]:
    """The random, majority, real-data and real-vs-real rows, where the jobs report them (per seed, then over
    seeds), then a row per public baseline (its own columns over its seeds), each with its public baseline's jobs
    (None for the others)."""
    done = jobs[jobs["status"] == COMPLETE]
    found_rows: list[tuple[str, Cell, dict[str, Estimate | None], Group | None]] = [
        (label, Cell(str(done["seed"].nunique())), {c: baseline_estimate(done, s[c], confidence) for c in s}, None)
        for label, s in baseline_sources(columns)
    ]
    found_rows += [
        (name, public.seeds_cell(), {c: baseline_estimate(public.complete, c, confidence) for c in columns}, public)
        for name, public in public_baselines(jobs).items()
    ]
    return [
        (
            (
                Cell(label, "baseline"),
                Cell("", "baseline"),
                Cell(seeds.text, "baseline"),
                *(Cell(str(found[c]) if found.get(c) else "", "baseline") for c in columns),
            ),
            public,
        )
        for label, seeds, found, public in found_rows
        if any(found.values()) or public is not None
    ]


def benchmark_tables(frame: pd.DataFrame, confidence: float) -> list[DatasetTables]:
    """Per dataset: the headline table with baselines (and each row's disclosure check where any job ran it), the
    jobs left out of the public baselines and why, and the table of every other metric key."""
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
        extra: list[tuple[list[Cell], list[Cell]]] = []  # per added column: its generator cells, its baseline cells
        if gains is not None:  # a column only where a public baseline ran
            head += (f"{GAIN} ({gains.baseline})",)
            # gains.rows is in `groups` order over the same jobs, as generator_rows makes its rows
            theirs = [
                gain_cell(gains.control) if row[0].text == MATCHED else Cell("", "baseline") for row, _ in baselines
            ]
            extra.append(([gain_cell(found) for found in gains.rows.values()], theirs))
        if has_disclosure(jobs).any():
            head += (DISCLOSURE_HEAD,)
            mine = [disclosure_cell(g, confidence) for _, g in groups(generators, ROW_KEYS)]
            theirs = [Cell("", "baseline") if g is None else disclosure_cell(g, confidence) for _, g in baselines]
            extra.append((mine, theirs))
        for ours, public in extra:
            rows = [(*row, cell) for row, cell in zip(rows, ours, strict=True)]
            baselines = [((*row, cell), g) for (row, g), cell in zip(baselines, public, strict=True)]
        table = Table(head, tuple(rows + [row for row, _ in baselines]), f"{dataset}: utility and fidelity")
        rest = Table(
            HEAD + tuple(header(c, directions) for c in other),
            tuple(generator_rows(generators, other, directions, confidence)),
            f"{dataset}: other metric keys",
        )
        out.append(DatasetTables(str(dataset), table, rest if other else None, tuple(baseline_exclusions(jobs)), gains))
    return out
