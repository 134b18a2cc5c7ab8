"""A sweep's `results.json` files as one pandas DataFrame, one row per job.

The report reads these files and nothing else a job wrote (the audit's ROC
image aside, which `build` embeds): they are the allow-listed release, while
a job folder may also hold synthetic text, designs and caches that a report
must never quote. A file that cannot be parsed still becomes a row, marked
`unreadable`, so a broken job is listed rather than silently missing (its
task guessed from the folder name, which `task=...` jobs are written under).
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from synbench.job import RESULTS_FILE

METRIC_SECTIONS = ("utility", "fidelity", "audit", "model_audit")
# Descriptive (non-numeric) result keys kept as columns.
TEXT_KEYS = ("audit.mode",)
ROC_FILE = "audit_roc.png"  # written by task=audit next to its results.json
COMPLETE = "complete"
UNREADABLE = "unreadable"  # listed with the unfinished jobs; it names no dataset or generator to put in a table


def to_float(value: Any) -> float | None:
    """A number of results.json as a float: strict JSON writes non-finite ones as "inf", "-inf", "nan"."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and value in ("inf", "-inf", "nan"):
        return float(value)
    return None


def failure_reason(results: Mapping[str, Any]) -> str:
    """Why a job has no final results, in words for the "Jobs not complete" table."""
    status = results.get("status")
    if status == "failed":
        error = results.get("error") or {}
        return f"{error.get('type', 'error')}: {error.get('message', 'no message recorded')}"
    if status == "running":
        return "still running, or stopped before it finished (no final results)"
    return f"unexpected status {status!r}"


def read_object(path: Path) -> tuple[dict[str, Any] | None, str]:
    """The parsed results file, or None and why it could not be read."""
    try:
        results = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return None, f"results.json unreadable ({type(exc).__name__})"
    return (results, "") if isinstance(results, dict) else (None, "results.json is not a JSON object")


def job_row(root: Path, path: Path) -> dict[str, Any]:
    """One job's row: its description, status, release markers and flat `<section>.<key>` metric columns."""
    job = path.parent
    row: dict[str, Any] = {"job": job.relative_to(root).as_posix(), "has_roc": (job / ROC_FILE).is_file()}
    results, problem = read_object(path)
    if results is None:
        return row | {"task": job.parent.name, "status": UNREADABLE, "reason": problem}
    eps = to_float(results.get("epsilon"))
    seed = results.get("seed")
    row |= {
        "task": str(results.get("task", job.parent.name)),
        "dataset": str(results.get("dataset", "?")),
        "generator": str(results.get("generator", "?")),
        "epsilon": math.nan if eps is None else eps,
        "seed": seed if isinstance(seed, int) and not isinstance(seed, bool) else -1,
        "status": str(results.get("status", "?")),
        "noise": results.get("noise"),
        "delta": to_float(results.get("delta")),  # of the job's guarantee: the audit's paper-region reading needs it
        "non_dp": ", ".join(map(str, results.get("non_dp_outputs") or [])),
        "label_space_inferred": bool(results.get("label_space_inferred")),
        "non_private_control": bool(results.get("non_private_control")),
    }
    row["reason"] = "" if row["status"] == COMPLETE else failure_reason(results)
    for section in METRIC_SECTIONS:
        values = results.get(section)
        for key, value in (values.items() if isinstance(values, dict) else ()):
            column = f"{section}.{key}"
            number = to_float(value)
            if number is not None:
                row[column] = number
            elif column in TEXT_KEYS:
                row[column] = str(value)
    if row["task"] == "audit" and "audit.mode" not in row:  # a failed audit has no summary; its config has the mode
        row["audit.mode"] = str(((results.get("config") or {}).get("audit") or {}).get("mode", "?"))
    return row


def task_jobs(frame: pd.DataFrame, task: str) -> pd.DataFrame:
    """The readable jobs of one task: the rows its tables are made of."""
    return frame[(frame["task"] == task) & (frame["status"] != UNREADABLE)]


def load_results(root: Path) -> pd.DataFrame:
    """Every `results.json` below `root`, sorted by job folder; empty (with the base columns) when there are none."""
    rows = [job_row(root, path) for path in sorted(root.rglob(RESULTS_FILE)) if path.is_file()]
    base = ["job", "task", "dataset", "generator", "epsilon", "seed", "status", "reason", "noise", "non_dp",
            "label_space_inferred", "non_private_control", "has_roc"]
    frame = pd.DataFrame(rows, columns=list(dict.fromkeys(base + [k for r in rows for k in r])))
    return frame.fillna({"dataset": "?", "generator": "?", "epsilon": math.nan, "seed": -1, "non_dp": "",
                         "label_space_inferred": False, "non_private_control": False})
