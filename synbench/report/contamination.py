"""Report tables for contamination jobs (exposure per detector, the removal ablation) and the post-hoc filter.

Read from the jobs' `results.json` only, through the record type (their
`contamination` and `filter` sections, whose tables and runs the report's
frame does not hold), never the
per-document scores beside them. The ablation's interval is over its
repetitions (Student t, the report's confidence level).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pandas as pd

from synbench.job.results import RESULTS_FILE, read_record
from synbench.report.load import COMPLETE, SECTION
from synbench.report.render import Block, Heading, Text
from synbench.report.stats import MISSING, estimate, format_eps, format_number
from synbench.report.table import Cell, Table

TASK = "contamination"
DETECTORS = (("exact", "exact n-gram (infini-gram)"), ("mink", "Min-K%"), ("minkpp", "Min-K%++"))


def complete_results(root: Path, frame: pd.DataFrame, task: str) -> Iterator[dict[str, Any]]:
    for job in frame.loc[(frame[SECTION] == task) & (frame["status"] == COMPLETE), "job"]:
        record, _ = read_record(root / job / RESULTS_FILE)
        if record is not None:
            yield record.to_json() | {"_job": job}


def value(v: Any) -> Cell:
    return (
        Cell(MISSING, "missing")
        if v is None
        else Cell(format_number(float(v)) if isinstance(v, (int, float)) else str(v))
    )


def exposure_table(jobs: list[dict[str, Any]]) -> Table:
    rows = []
    for r in jobs:
        section = r.get("contamination", {})
        for key, label in DETECTORS:
            d = section.get(key)
            if d is None:
                continue
            how = (
                f"index {d.get('index')}, {d.get('index_tokens')} tokens; n={d.get('n')}"
                if key == "exact"
                else f"k={d.get('k')}, calibrated on {d.get('calibration')} at FPR {d.get('fpr')}"
            )
            rows.append(
                (
                    Cell(str(r.get("dataset"))),
                    Cell(str(section.get("model", "?"))),
                    Cell(label),
                    value(d.get("exposed_share")),
                    Cell(f"{d.get('n_flagged')} / {section.get('n_documents')}"),
                    value(d.get("auc")),
                    Cell(how),
                )
            )
    return Table(
        ("dataset", "model", "detector", "exposed share", "flagged", "AUC", "how"),
        tuple(rows),
        "Share of private documents each detector flags (statistics of the private set, not DP). "
        "AUC only where known members and non-members were given.",
    )


def ablation_table(r: dict[str, Any], confidence: float) -> Table:
    ab = r["contamination"]["ablation"]
    rows = []
    for arm, step in dict.fromkeys((run["arm"], run["step"]) for run in ab["runs"]):
        runs = [run for run in ab["runs"] if run["arm"] == arm and run["step"] == step]
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
    return Table(
        ("removal", "share of flagged", "documents removed", "F1 micro", "reps"),
        tuple(rows),
        f"{r.get('generator')} at ε={format_eps(float(r.get('epsilon', 'nan')))} on {r.get('dataset')}: "
        f"{ab['n_flagged']} documents flagged by {ab['detector']}",
    )


def filter_table(jobs: list[dict[str, Any]]) -> Table:
    rows = []
    for r in jobs:
        f = r["filter"]
        for label, suffix in (
            ("unfiltered", ""),
            (f"{f['name']} (kept {f['n_kept']} of {f['n_before']})", "_filtered"),
        ):
            utility, fidelity = r.get(f"utility{suffix}", {}), r.get(f"fidelity{suffix}", {})
            rows.append(
                (
                    Cell(str(r.get("dataset"))),
                    Cell(str(r.get("generator"))),
                    Cell(format_eps(float(r.get("epsilon", "nan")))),
                    Cell(label),
                    value(utility.get("f1_micro")),
                    value(utility.get("f1_macro")),
                    value(fidelity.get("mauve")),
                )
            )
    return Table(
        ("dataset", "generator", "ε", "synthetic set", "F1 micro", "F1 macro", "MAUVE"),
        tuple(rows),
        "The same job's synthetic corpus before and after the post-hoc filter (public LM only, no privacy cost).",
    )


def contamination_blocks(root: Path, frame: pd.DataFrame, confidence: float) -> list[Block]:
    """The report's contamination and filter section (empty when the sweep has neither)."""
    jobs = list(complete_results(root, frame, TASK))
    filtered = [r for r in complete_results(root, frame, "benchmark") if r.get("filter")]
    if not jobs and not filtered:
        return []
    blocks: list[Block] = [Heading(2, "Pretraining contamination and filtering")]
    if jobs:
        blocks.append(exposure_table(jobs))
        for r in jobs:
            if r["contamination"].get("ablation"):
                blocks += [Heading(3, f"Removal ablation ({r['_job']})"), ablation_table(r, confidence)]
    if filtered:
        blocks += [Heading(3, "Post-hoc filter"), filter_table(filtered)]
    else:
        blocks.append(Text("No benchmark job in this sweep ran a filter."))
    return blocks
