"""The report's table model and what every table shares: groups over seeds, metric cells, markers, unfinished jobs.

A table is cells with a kind (best, violation, missing, baseline), so the
Markdown and HTML renderers show the same content and differ only in
styling. A cell with no value says why: its jobs failed or are still
running, or the metric was not measured.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal, Sequence

import pandas as pd

from synbench.job.release import CONTROL_NOISE
from synbench.report.load import COMPLETE
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


def metric_cell(group: Group, column: str, confidence: float) -> tuple[Cell, Estimate | None]:
    """A metric's cell over the group's seeds, and its estimate (None when there is no value, and the cell says why)."""
    if group.complete.empty:
        return group.unfinished_cell(), None
    found = estimate(group.complete[column], confidence) if column in group.complete else None
    if found is None:
        return NOT_MEASURED, None
    return Cell(str(found)), found


# Marks on a row whose release is not (fully) DP: symbol, which jobs, footnote.
MARKERS: tuple[tuple[str, Callable[[pd.DataFrame], pd.Series], str], ...] = (
    (
        "†",
        lambda jobs: jobs["non_dp"].fillna("") != "",
        "not DP: the job released statistics of private data without noise "
        "(its non_dp_outputs name them, the real-data reference aside)",
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
    """Footnotes for the markers that appear anywhere in the report."""
    return [f"{symbol} {note}" for symbol, applies, note in MARKERS if applies(frame).any()]


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
