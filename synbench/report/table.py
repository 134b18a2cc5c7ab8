"""The report's table model and what every table shares: groups over seeds, metric cells, markers, unfinished jobs.

A table is cells with a kind (best, violation, missing, baseline), so the
Markdown and HTML renderers show the same content and differ only in
styling. A cell with no value says why: its jobs failed or are still
running, or the metric was not measured.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Literal, Sequence

import numpy as np
import pandas as pd

from synbench.job.release import CONTROL_NOISE
from synbench.report.load import COMPLETE, SETUP
from synbench.report.stats import MISSING, Estimate, estimate, format_eps

CellKind = Literal["", "best", "violation", "missing", "baseline"]


@dataclass(frozen=True)
class Cell:
    text: str
    kind: CellKind = ""


NOT_MEASURED = Cell(f"{MISSING} (not measured)", "missing")


@dataclass(frozen=True)
class Table:
    columns: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    caption: str = ""


@dataclass(frozen=True)
class Group:
    """The jobs of one table row (every seed of one configuration), split by whether they finished."""

    complete: pd.DataFrame
    incomplete: pd.DataFrame

    @property
    def all(self) -> pd.DataFrame:
        return pd.concat([self.complete, self.incomplete])

    def seeds_cell(self) -> Cell:
        """How many distinct seeds the row's numbers come from, and how many did not finish."""
        counts = self.incomplete["status"].value_counts()
        extra = "".join(f" (+{n} {status})" for status, n in sorted(counts.items()))
        return Cell(f"{self.complete['seed'].nunique()}{extra}", "missing" if self.complete.empty else "")

    def unfinished_cell(self) -> Cell:
        """A value of a row none of whose seeds finished: says how they ended (failed, running)."""
        return Cell(f"{MISSING} ({', '.join(sorted(set(self.incomplete['status'])))})", "missing")


def sort_jobs(frame: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """Jobs in table order: text keys alphabetically, epsilon numerically with ∞ (then unknown) last."""
    return frame.sort_values(list(keys), na_position="last", kind="stable")


def groups(frame: pd.DataFrame, keys: Sequence[str]) -> list[tuple[tuple, Group]]:
    """(key values, group) per distinct combination of `keys`, in table order."""
    out = []
    for key, rows in sort_jobs(frame, keys).groupby(list(keys), sort=False, dropna=False):
        done = rows["status"] == COMPLETE
        out.append((key, Group(rows[done], rows[~done])))
    return out


def same_eps(epsilons: pd.Series, eps: float) -> pd.Series:
    """Which of `epsilons` are the nominal `eps` (NaN, a file without one, matches NaN)."""
    return epsilons.isna() if math.isnan(eps) else epsilons == eps


def row_name(frame: pd.DataFrame, keys: Sequence[str], key: tuple) -> str:
    """A row's generator name (`key` holds its values of `keys`, `generator` and `SETUP` among them), with its
    setup's digest where `frame` holds another setup under the row's other keys: two configs of one generator at one
    ε are two rows, told apart by it."""
    values = dict(zip(keys, key))
    same = frame
    for column, value in values.items():
        if column != SETUP:
            same = same[same[column].isna() if pd.isna(value) else same[column] == value]
    return str(values["generator"]) + (f" [setup {values[SETUP]}]" if same[SETUP].nunique() > 1 else "")


def metric_cell(group: Group, column: str, confidence: float) -> tuple[Cell, Estimate | None]:
    """A metric's cell over the group's seeds, and its estimate (None when there is no value, and the cell says why)."""
    if group.complete.empty:
        return group.unfinished_cell(), None
    found = estimate(group.complete[column], confidence) if column in group.complete else None
    if found is None:
        return NOT_MEASURED, None
    return Cell(str(found)), found


NOT_DP = "†"
DISCLOSURE = "disclosure."
DISCLOSURE_COUNTS = tuple(f"{DISCLOSURE}{k}" for k in ("private_reappear", "n_private", "unseen_reappear", "n_unseen"))
DISCLOSURE_P = f"{DISCLOSURE}p_value"
DISCLOSURE_FLAGGED = f"{DISCLOSURE}flagged"  # the job's own test, at its level, uncorrected
DISCLOSURE_STATUS = f"{DISCLOSURE}status"  # the job's words where a count could not be attributed (if it wrote them)


def has_disclosure(jobs: pd.DataFrame) -> pd.Series:
    """Which jobs ran the disclosure check (their counts are in the frame)."""
    if not all(c in jobs for c in DISCLOSURE_COUNTS):
        return pd.Series(False, index=jobs.index)
    return jobs[list(DISCLOSURE_COUNTS)].notna().all(axis=1)


# Marks on a row whose release is not (fully) DP: symbol, which jobs, footnote.
MARKERS: tuple[tuple[str, Callable[[pd.DataFrame], pd.Series], str], ...] = (
    (
        NOT_DP,
        lambda jobs: jobs["non_dp"].fillna("") != "",
        "not DP: statistics of private data without noise; on a generator, its job released such statistics "
        "(its non_dp_outputs name them, the real-data reference aside); on the disclosure check's counts, the "
        "operator's count of private documents the release reproduces",
    ),
    (
        "¶",
        lambda jobs: jobs["non_private_control"].astype(bool),
        "non-private control (such as copy): releases private data at any ε, so its audit has no DP claim to violate",
    ),
    (
        "‡",
        lambda jobs: jobs["noise"] == "seeded",
        "seeded noise: privacy noise reproducible from privacy.noise_seed, "
        "so not DP against anyone who knows that seed",
    ),
    (
        "§",
        lambda jobs: jobs["label_space_inferred"].astype(bool),
        "label space read off the private data (label_space_inferred): a non-noisy function of it",
    ),
)


def all_controls(jobs: pd.DataFrame) -> bool:
    """Whether these jobs are all a built-in control's (their `noise` is "n/a"): their ε column reads "control"."""
    return bool((jobs["noise"] == CONTROL_NOISE).all())


def markers(jobs: pd.DataFrame) -> str:
    """The marker symbols that apply to any of these jobs."""
    return "".join(symbol for symbol, applies, _ in MARKERS if applies(jobs).any())


def marker_notes(frame: pd.DataFrame) -> list[str]:
    """Footnotes for the markers that appear anywhere in the report (the disclosure check's counts carry `NOT_DP`)."""
    shown = {symbol for symbol, applies, _ in MARKERS if applies(frame).any()}
    shown |= {NOT_DP} if has_disclosure(frame).any() else set()
    return [f"{symbol} {note}" for symbol, _, note in MARKERS if symbol in shown]


@dataclass(frozen=True)
class DisclosureRow:
    """A row's disclosure check over its S checked seeds, corrected for them (Bonferroni): the row is flagged when
    a seed's one-sided exact-test p-value is below alpha / S, so a row whose generator reproduces nothing is flagged
    with probability at most alpha however many seeds ran (each job's own flag is at alpha alone)."""

    counts: tuple[int, int, int, int]  # private reappearing, private checked, unseen reappearing, unseen checked
    seeds: tuple[int, ...]  # the checked seeds, in the row's order
    flagged: tuple[int, ...]  # the seeds whose p-value is below alpha / S
    alone: tuple[int, ...]  # the other seeds their own job flagged at alpha
    # (seed, the job's word) where the job said its test could not attribute its count ("below attribution", "could
    # not check": `DISCLOSURE_STATUS`), which is never "not flagged"
    unattributed: tuple[tuple[int, str], ...]

    @property
    def level(self) -> str:
        n = len(self.seeds)
        return "α" if n == 1 else f"α/{n}"

    def verdict(self) -> str:
        """The row's word: FLAGGED with the seeds; else not flagged at the row's level in the seeds whose test could
        attribute a count, and the job's own words for the others."""
        if self.flagged:
            return f"FLAGGED ({seed_list(self.flagged)}: p below {self.level})"
        words = [f"seed {seed}: {status}" for seed, status in self.unattributed]
        checked = [seed for seed in self.seeds if seed not in dict(self.unattributed)]
        if not checked:
            return "; ".join(words)
        level = f"at {self.level}" if len(self.seeds) == 1 else f"each at {self.level}"
        seeds = f"{len(checked)} seeds" if len(checked) == len(self.seeds) else seed_list(checked)
        notes = [f"{seeds}, {level}"] if len(self.seeds) > 1 else []
        notes += [f"{seed_list(self.alone)} below α alone"] if self.alone else []
        return "not flagged" + (f" ({'; '.join(notes)})" if notes else "") + "".join(f"; {w}" for w in words)

    def __str__(self) -> str:
        k, n, j, m = self.counts
        return f"{k}/{n} private, {j}/{m} unseen{NOT_DP}: {self.verdict()}"


def seed_list(seeds: Sequence[int]) -> str:
    return f"seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))}"


def flagged_seeds(p_values: np.ndarray, confidence: float) -> np.ndarray:
    """Which of a row's S seeds flag it: p < alpha / S, alpha = 1 - `confidence` (Bonferroni; the job's own test is
    p < alpha). NaN (no p-value) flags nothing."""
    p = np.nan_to_num(np.asarray(p_values, dtype=float), nan=1.0)
    return p < (1 - confidence) / max(p.size, 1)


def disclosure_row(jobs: pd.DataFrame, confidence: float) -> DisclosureRow | None:
    """The disclosure check of a row's finished `jobs` at alpha = 1 - `confidence` over their seeds; None when none
    of them ran it."""
    found = jobs[has_disclosure(jobs)]
    if found.empty:
        return None
    below = flagged_seeds(found.get(DISCLOSURE_P, pd.Series(np.nan, index=found.index)).to_numpy(float), confidence)
    own = found.get(DISCLOSURE_FLAGGED, pd.Series(0.0, index=found.index)).fillna(0).astype(bool).to_numpy()
    status = found.get(DISCLOSURE_STATUS, pd.Series(None, index=found.index, dtype=object))
    seeds = [int(s) for s in found["seed"]]
    return DisclosureRow(
        tuple(int(found[c].sum()) for c in DISCLOSURE_COUNTS),
        tuple(seeds),
        tuple(s for s, hit in zip(seeds, below) if hit),
        tuple(s for s, hit, mine in zip(seeds, below, own) if mine and not hit),
        tuple(
            (s, word)
            for s, hit, word in zip(seeds, below, status)
            if not hit and isinstance(word, str) and word not in ("flagged", "not flagged")
        ),
    )


def disclosure_cell(group: Group, confidence: float) -> Cell:
    """A row's disclosure check (`disclosure_row`) as a cell, marked where it flagged; why there is none otherwise."""
    if group.complete.empty:
        return group.unfinished_cell()
    found = disclosure_row(group.complete, confidence)
    if found is None:
        return NOT_MEASURED
    return Cell(str(found), "violation" if found.flagged else "")


def disclosure_note(confidence: float) -> str:
    """What a disclosure cell says and how its seeds are combined."""
    return (
        f"disclosure: private documents the releases reproduce (near-)verbatim against unseen real ones, summed over "
        f"the row's seeds ({NOT_DP}: counts of private data, the operator's check, not DP). A row is FLAGGED when a "
        f"seed's one-sided exact-test p-value is below α/S for its S seeds, α = {1 - confidence:.2g} "
        "(Bonferroni over seeds: a row of a generator that reproduces nothing is flagged with probability at most α "
        "however many seeds ran); a seed its own job flagged at α alone is named, and is no flag of the row."
    )


def incomplete_table(frame: pd.DataFrame) -> Table | None:
    """Every job without final results and its reason (the error type and message a failed job recorded)."""
    jobs = frame[frame["status"] != COMPLETE]
    if jobs.empty:
        return None
    rows = tuple(
        (
            Cell(job.job),
            Cell(str(job.task)),
            Cell(str(job.dataset)),
            Cell(str(job.generator)),
            Cell(format_eps(job.epsilon)),
            Cell(str(int(job.seed)) if job.seed >= 0 else "?"),
            Cell(str(job.status), "missing"),
            Cell(str(job.reason)),
        )
        for job in sort_jobs(jobs, ["job"]).itertuples()
    )
    return Table(
        ("job folder", "task", "dataset", "generator", "ε", "seed", "status", "reason"),
        rows,
        "jobs without final results",
    )
