"""Report tables for contamination jobs (exposure per detector, the removal ablation) and the post-hoc filter.

Read from the jobs' `results.json` only, through the record type (their
`contamination` and `filter` sections, whose tables and runs the report's
frame does not hold), never the
per-document scores beside them. The ablation's interval is over its
repetitions (Student t, the report's confidence level).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterator

import pandas as pd

from synbench.job.record import Ablation, Contamination, Filter, JobRecord
from synbench.job.results import RESULTS_FILE, read_record
from synbench.report.load import COMPLETE, SECTION
from synbench.report.render import Block, Heading, Text
from synbench.report.stats import MISSING, estimate, format_eps, format_number
from synbench.report.table import Cell, Table

TASK = "contamination"
DETECTORS = (("exact", "exact n-gram (infini-gram)"), ("mink", "Min-K%"), ("minkpp", "Min-K%++"))


def complete_results(root: Path, frame: pd.DataFrame, task: str) -> Iterator[tuple[str, JobRecord]]:
    """(job folder, record) of each complete job of the report section `task`."""
    for job in frame.loc[(frame[SECTION] == task) & (frame["status"] == COMPLETE), "job"]:
        record, _ = read_record(root / job / RESULTS_FILE)
        if record is not None:
            yield job, record


def value(v: Any) -> Cell:
    return (
        Cell(MISSING, "missing")
        if v is None
        else Cell(format_number(float(v)) if isinstance(v, (int, float)) else str(v))
    )


def exposure_table(jobs: list[tuple[JobRecord, Contamination]]) -> Table:
    rows = []
    for record, section in jobs:
        found = section.detectors()
        for key, label in DETECTORS:
            if key not in found:
                continue
            d = found[key]
            how = (
                f"index {d.index}, {d.index_tokens} tokens; n={d.n}"
                if key == "exact"
                else f"k={d.k}, calibrated on {d.calibration} at FPR {d.fpr}"
            )
            rows.append(
                (
                    Cell(str(record.dataset)),
                    value(section.model),
                    Cell(label),
                    value(d.exposed_share),
                    Cell(f"{d.n_flagged} / {section.n_documents}"),
                    value(d.auc),
                    Cell(how),
                )
            )
    return Table(
        ("dataset", "model", "detector", "exposed share", "flagged", "AUC", "how"),
        tuple(rows),
        "Share of private documents each detector flags (statistics of the private set, not DP). "
        "AUC only where known members and non-members were given.",
    )


def ablation_table(record: JobRecord, ab: Ablation, confidence: float) -> Table:
    runs_of = ab.runs or []
    rows = []
    for arm, step in dict.fromkeys((run["arm"], run["step"]) for run in runs_of):
        runs = [run for run in runs_of if run["arm"] == arm and run["step"] == step]
        f1 = estimate([float(run["f1_micro"]) for run in runs], confidence)
        label = {"none": "nothing removed", "flagged": "flagged removed", "random": "random removed (control)"}[arm]
        rows.append(
            (
                Cell(label),
                Cell(f"{100 * step:g}%"),
                Cell(str(runs[0]["n_removed"])),
                Cell(str(f1) if f1 else MISSING),
                Cell(str(len(runs))),
            )
        )
    eps = math.nan if record.epsilon is None else record.epsilon
    return Table(
        ("removal", "share of flagged", "documents removed", "F1 micro", "reps"),
        tuple(rows),
        f"{record.generator} at ε={format_eps(eps)} on {record.dataset}: "
        f"{ab.n_flagged} documents flagged by {ab.detector}",
    )


def filter_table(jobs: list[tuple[JobRecord, Filter]]) -> Table:
    rows = []
    for record, f in jobs:
        eps = math.nan if record.epsilon is None else record.epsilon
        kept = f"{f.name} (kept {f.n_kept} of {f.n_before})"
        for label, utility, fidelity in (
            ("unfiltered", record.utility, record.fidelity),
            (kept, record.utility_filtered, record.fidelity_filtered),
        ):
            rows.append(
                (
                    Cell(str(record.dataset)),
                    Cell(str(record.generator)),
                    Cell(format_eps(eps)),
                    Cell(label),
                    value(utility.f1_micro),
                    value(utility.f1_macro),
                    value(fidelity.mauve),
                )
            )
    return Table(
        ("dataset", "generator", "ε", "synthetic set", "F1 micro", "F1 macro", "MAUVE"),
        tuple(rows),
        "The same job's synthetic corpus before and after the post-hoc filter (public LM only, no privacy cost).",
    )


def contamination_blocks(root: Path, frame: pd.DataFrame, confidence: float) -> list[Block]:
    """The report's contamination and filter section (empty when the sweep has neither)."""
    jobs = [(job, r, r.contamination) for job, r in complete_results(root, frame, TASK) if r.contamination is not None]
    filtered = [(r, r.filter) for _, r in complete_results(root, frame, "benchmark") if r.filter is not None]
    if not jobs and not filtered:
        return []
    blocks: list[Block] = [Heading(2, "Pretraining contamination and filtering")]
    if jobs:
        blocks.append(exposure_table([(r, section) for _, r, section in jobs]))
        for job, r, section in jobs:
            if section.ablation is not None:
                blocks += [Heading(3, f"Removal ablation ({job})"), ablation_table(r, section.ablation, confidence)]
    if filtered:
        blocks += [Heading(3, "Post-hoc filter"), filter_table(filtered)]
    else:
        blocks.append(Text("No benchmark job in this sweep ran a filter."))
    return blocks
