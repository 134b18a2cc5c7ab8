"""A sweep's `results.json` files as the report's DataFrame, one row per job.

The files are found and read as `synbench.results.load` finds and reads them
(`job_files`, `read_job`), which gives every field; this frame keeps what the
tables need, typed for them.

The report reads these files and nothing else a job wrote (the audit's ROC
image aside, which `build` embeds): they are the allow-listed release, while
a job folder may also hold synthetic text, designs and caches that a report
must never quote. A file that cannot be parsed still becomes a row, marked
`unreadable`, so a broken job is listed rather than silently missing (its
task guessed from the folder name, which `task=...` jobs are written under).

A row's `generator` is what ran as its user named it: the results'
`generator_name` (the config option, `dpgen_grid`, or a command program's
`generator.name`), so every table, plot and group keeps two variants of one
plugin, or two programs run through `generator=command`, apart; results
written before that field are named by their plugin.

Which table a job belongs to is the `report_section` its task declared and
wrote into results.json, and the direction of each metric key (higher or
lower is better) is the `higher_is_better` map its job wrote: the report
never imports a task or metric class, so it reads any sweep, with or without
the plugins that ran it installed.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from synbench.job.results import UNREADABLE, job_files, number, read_job

METRIC_SECTIONS = ("utility", "fidelity", "audit", "model_audit", "disclosure")
# Descriptive (non-numeric) result keys kept as columns.
TEXT_KEYS = ("audit.mode", "audit.attack_chosen", "audit.pooled.attack_chosen", "audit.verdict", "audit.n_needed_unit")
FLAG_KEYS = ("disclosure.flagged",)  # true/false result keys kept as 1.0/0.0 columns
ROC_FILE = "audit_roc.png"  # written by task=audit next to its results.json
COMPLETE = "complete"
SECTION = "report_section"  # the column (and results.json field) of a job's report section
DIRECTION = (
    "higher_is_better"  # results.json: `<section>.<key>` -> whether higher is better; columns `DIRECTION.<column>`
)


JOB_SECONDS = "job_s"
EPSILON_SPENT = "epsilon_spent"  # 0 marks a public-knowledge baseline (synbench.report.benchmark)


def job_seconds(timing: Any) -> float:
    """The sum of a results.json `timing` map (seconds per step of the job); NaN when it has none."""
    steps = [number(v) for v in timing.values()] if isinstance(timing, dict) else []
    found = [v for v in steps if v is not None]
    return float(sum(found)) if found else math.nan


def failure_reason(results: Mapping[str, Any]) -> str:
    """Why a job has no final results, in words for the "Jobs not complete" table."""
    status = results.get("status")
    if status == "failed":
        error = results.get("error") or {}
        return f"{error.get('type', 'error')}: {error.get('message', 'no message recorded')}"
    if status == "running":
        return "still running, or stopped before it finished (no final results)"
    return f"unexpected status {status!r}"


def job_row(root: Path, path: Path) -> dict[str, Any]:
    """One job's row: its description, status, release markers and flat `<section>.<key>` metric columns."""
    job = path.parent
    row: dict[str, Any] = {"job": job.relative_to(root).as_posix(), "has_roc": (job / ROC_FILE).is_file()}
    results, problem = read_job(path)
    if results is None:
        return row | {"task": job.parent.name, SECTION: None, "status": UNREADABLE, "reason": problem}
    eps = number(results.get("epsilon"))
    seed = results.get("seed")
    row |= {
        "task": str(results.get("task", job.parent.name)),
        # results written before tasks declared their section were tabulated by task name, which was the section name
        SECTION: results.get(SECTION, results.get("task", job.parent.name)),
        "dataset": str(results.get("dataset", "?")),
        "generator": str(results.get("generator_name") or results.get("generator", "?")),
        "epsilon": math.nan if eps is None else eps,
        EPSILON_SPENT: number(results.get("epsilon_spent")),
        "seed": seed if isinstance(seed, int) and not isinstance(seed, bool) else -1,
        "status": str(results.get("status", "?")),
        "job_key": results.get("job_key"),
        "noise": results.get("noise"),
        "delta": number(results.get("delta")),  # of the job's guarantee: the audit's paper-region reading needs it
        # the generator's release only: the operator's reference figures (diagnostic_outputs) describe the real data
        "non_dp": ", ".join(
            str(k) for k in results.get("non_dp_outputs") or [] if k not in (results.get("diagnostic_outputs") or [])
        ),
        "label_space_inferred": bool(results.get("label_space_inferred")),
        "non_private_control": bool(results.get("non_private_control")),
        # the job's own seconds (its timing steps summed): the comparison's cost column
        JOB_SECONDS: job_seconds(results.get("timing")),
    }
    row["reason"] = "" if row["status"] == COMPLETE else failure_reason(results)
    for section in METRIC_SECTIONS:
        values = results.get(section)
        for key, value in values.items() if isinstance(values, dict) else ():
            column = f"{section}.{key}"
            figure = number(value)
            if figure is not None:
                row[column] = figure
            elif column in FLAG_KEYS and isinstance(value, bool):
                row[column] = float(value)
            elif column in TEXT_KEYS:
                row[column] = str(value)
    for column in TEXT_KEYS:  # a failed job has no summary; its config holds the settings (the audit's mode)
        section, _, key = column.partition(".")
        configured = ((results.get("config") or {}).get(section) or {}).get(key)
        if column not in row and configured is not None:
            row[column] = str(configured)
    directions = results.get(DIRECTION)
    for column, up in directions.items() if isinstance(directions, dict) else ():
        if isinstance(up, bool):
            row[f"{DIRECTION}.{column}"] = up
    return row


def task_jobs(frame: pd.DataFrame, section: str) -> pd.DataFrame:
    """The readable jobs of one report section (their task's `report_section`): the rows its tables are made of."""
    return frame[(frame[SECTION] == section) & (frame["status"] != UNREADABLE)]


def metric_directions(frame: pd.DataFrame) -> dict[str, bool]:
    """`<section>.<key>` -> whether higher is better, as the jobs' results.json declare it (their metrics' classes)."""
    prefix = f"{DIRECTION}."
    return {
        column[len(prefix) :]: bool(values.iloc[0])
        for column in frame.columns
        if column.startswith(prefix)
        for values in [frame[column].dropna()]
        if len(values)
    }


def one_row_per_job(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per job key: folders of one job under two names (written before jobs were matched by key) count
    once, the complete one kept."""
    kept: dict[Any, dict[str, Any]] = {}
    for i, row in enumerate(rows):
        key = row.get("job_key") or ("folder", i)
        if key not in kept or (kept[key]["status"] != COMPLETE and row.get("status") == COMPLETE):
            kept[key] = row
    return sorted(kept.values(), key=lambda row: row["job"])


def load_results(root: Path) -> pd.DataFrame:
    """Every `results.json` below `root`, sorted by job folder; empty (with the base columns) when there are none."""
    rows = one_row_per_job([job_row(root, path) for path in job_files(root)])
    base = [
        "job",
        "task",
        SECTION,
        "dataset",
        "generator",
        "epsilon",
        "seed",
        "status",
        "reason",
        "noise",
        "non_dp",
        "label_space_inferred",
        "non_private_control",
        "has_roc",
    ]
    frame = pd.DataFrame(rows, columns=list(dict.fromkeys(base + [k for r in rows for k in r])))
    filled = frame.fillna(
        {
            "dataset": "?",
            "generator": "?",
            "epsilon": math.nan,
            "seed": -1,
            "non_dp": "",
            "label_space_inferred": False,
            "non_private_control": False,
        }
    )
    # whole numbers again where an unreadable job's missing seed made the column float: cells say "seed 1", not 1.0
    return filled.astype({"seed": int})
