"""A sweep's `results.json` files as the report's DataFrame, one row per job.

The rows are the sweep's jobs (`synbench.job.results.sweep_records`, the
walk behind `synbench.results.load`: each file read through the record type,
`JobRecord`); a row takes the record's header by attribute and its metric
sections flattened into `<section>.<key>` columns, typed for the tables.

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

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from synbench.job.record import COMPLETE, JobRecord, number
from synbench.job.results import UNREADABLE, flatten, sweep_records

METRIC_SECTIONS = ("utility", "fidelity", "audit", "model_audit", "disclosure")
# Descriptive (non-numeric) result keys kept as columns.
TEXT_KEYS = (
    "audit.mode",
    "audit.attack_chosen",
    "audit.pooled.attack_chosen",
    "audit.verdict",
    "audit.n_needed_unit",
    "disclosure.status",  # the job's word where its test could not attribute a count (`table.disclosure_row`)
)
FLAG_KEYS = ("disclosure.flagged",)  # true/false result keys kept as 1.0/0.0 columns
# The level an audit job was configured at (its description's `audit.confidence`): a pooled one-run job records its
# runs' level halved, and the report's verdict splits the configured one itself (`report.audit.row_level`)
CONFIGURED_CONFIDENCE = "config.audit.confidence"
ROC_FILE = "audit_roc.png"  # written by task=audit next to its results.json
SECTION = "report_section"  # the column (and results.json field) of a job's report section
DIRECTION = (
    "higher_is_better"  # results.json: `<section>.<key>` -> whether higher is better; columns `DIRECTION.<column>`
)


JOB_SECONDS = "job_s"
EPSILON_SPENT = "epsilon_spent"
# Whether the job withheld the private documents from its generator (results' `reads_private` false): a public
# baseline's precondition (synbench.report.benchmark.is_public_baseline). Never read off `epsilon_spent`, which a
# program reports about itself.
PUBLIC_KNOWLEDGE = "public_knowledge"
# The built-in generators that read no private document, for files written before `reads_private` existed
WITHOUT_PRIVATE_BEFORE_THE_FIELD = ("public", "template")
# A digest of the job's description but its seed: jobs of one table row share it, so a row never pools two configs
SETUP = "setup"


def without_private(record: JobRecord) -> bool:
    """Whether the job's generator was never given the private documents: its `reads_private` is false; a file
    written before that field, only for the built-in `public` and `template` (their plugin in `generator`)."""
    if record.reads_private is not None:
        return not record.reads_private
    return record.generator in WITHOUT_PRIVATE_BEFORE_THE_FIELD


def setup_key(described: dict[str, Any]) -> str:
    """A short digest of the job's description (its `config.*` columns) without its seed: the seeds of one setup
    share it; a job that recorded no description gets "?"."""
    described = {k: v for k, v in described.items() if k != "config.seed"}
    if not described:
        return "?"
    text = json.dumps(described, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def job_row(root: Path, job: str, record: JobRecord | None, problem: str) -> dict[str, Any]:
    """One job's row from its record (`sweep_records`; None where its file could not be read, for `problem`): its
    description, status, release markers and `<section>.<key>` metric columns."""
    folder = root / job
    row: dict[str, Any] = {"job": job, "has_roc": (folder / ROC_FILE).is_file()}
    if record is None:
        return row | {"task": folder.parent.name, SECTION: None, "status": UNREADABLE, "reason": problem}
    described = flatten(record.config, "config.")
    seconds = record.timing.total()
    row |= {
        # a job that failed before its task ran has no task: it is listed under its folder's name
        "task": folder.parent.name if record.task is None else record.task,
        SECTION: folder.parent.name if record.task is None else record.report_section,
        "dataset": "?" if record.dataset is None else record.dataset,
        "generator": record.generator_name or record.generator or "?",
        "epsilon": math.nan if record.epsilon is None else record.epsilon,
        EPSILON_SPENT: record.epsilon_spent,
        "seed": -1 if record.seed is None else record.seed,
        "status": record.status,
        "job_key": record.job_key,
        "noise": record.noise,
        "delta": record.delta,  # of the job's guarantee: the audit's paper-region reading needs it
        # the generator's release only: the operator's reference figures (diagnostic_outputs) describe the real data
        "non_dp": ", ".join(k for k in record.non_dp_outputs if k not in record.diagnostic_outputs),
        "label_space_inferred": record.label_space_inferred,
        "non_private_control": record.non_private_control,
        PUBLIC_KNOWLEDGE: without_private(record),
        SETUP: setup_key(described),
        # the job's own seconds (its timing steps summed): the comparison's cost column
        JOB_SECONDS: math.nan if seconds is None else seconds,
        "reason": record.reason(),
    }
    sections = {name: record[name] for name in METRIC_SECTIONS if name in record}
    for column, value in flatten(sections).items():
        if "." not in column:
            continue
        figure = number(value)
        if figure is not None:
            row[column] = figure
        elif column in FLAG_KEYS and isinstance(value, bool):
            row[column] = float(value)
        elif column in TEXT_KEYS:
            row[column] = str(value)
    for column in TEXT_KEYS:  # a failed job has no summary; its config holds the settings (the audit's mode)
        configured = described.get(f"config.{column}")
        if column not in row and configured is not None:
            row[column] = str(configured)
    configured = number(described.get(CONFIGURED_CONFIDENCE))
    if configured is not None:
        row[CONFIGURED_CONFIDENCE] = configured
    row |= {f"{DIRECTION}.{key}": up for key, up in record.higher_is_better.of_metric().items()}
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
    rows = one_row_per_job([job_row(root, *found) for found in sweep_records(root)])
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
        PUBLIC_KNOWLEDGE,
        SETUP,
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
            PUBLIC_KNOWLEDGE: False,
            SETUP: "?",
        }
    )
    # whole numbers again where an unreadable job's missing seed made the column float: cells say "seed 1", not 1.0
    return filled.astype({"seed": int})
