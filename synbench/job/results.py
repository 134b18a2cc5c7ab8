"""A job's `results.json`: the record every task fills in (`new_results`, a `synbench.job.record.JobRecord`), the
writer that enforces the release allow-list, the one reader of a file (`read_record`, through the record type), and
the one frame of a sweep (`sweep_rows`; `load` as a pandas DataFrame), which `task=export`, the report and the
sweep's closing table all read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from synbench.core.errors import SynBenchError
from synbench.core.files import write_json_atomic
from synbench.job import release
from synbench.job.record import COMPLETE, NON_FINITE, JobRecord
from synbench.job.spec import JobSpec

if TYPE_CHECKING:
    import pandas as pd

    from synbench.core.base import Generator

RESULTS_FILE = "results.json"
UNREADABLE = "unreadable"  # the status of a job whose results.json cannot be parsed
# The first columns of `load`: where the job is, how it ended, and what it ran; the rest follow in record order.
LEADING_COLUMNS = (
    "job",
    "status",
    "reason",
    "task",
    "dataset",
    "generator",
    "epsilon",
    "epsilon_spent",
    "delta",
    "seed",
)


def write_results(
    job_dir: Path,
    results: Mapping[str, Any],
    generator: type[Generator] | None = None,
    task: release.TaskDeclarations | None = None,
) -> None:
    """Write the job's `results.json` (a `JobRecord`, or its JSON form) with the release allow-list enforced
    (`synbench.job.release`).

    `generator` and `task` are the classes the job ran, whose declarations
    (`public_details`, `results_sections`, `generation_fields`) extend the
    list; without them only the header is allowed. A field outside the list
    fails the job: the file then holds the failed record without the
    offending fields, and the `ReleaseError` naming them is raised, so
    nothing undeclared is ever written, in tests or in use.
    """
    bad = release.violations(results, generator, task)
    if bad:
        error = release.release_error(bad)
        failed = {
            **release.without(results, bad),
            "status": "failed",
            "error": {"type": type(error).__name__, "message": str(error)},
        }
        write_json_atomic(job_dir / RESULTS_FILE, failed)
        raise error
    write_json_atomic(job_dir / RESULTS_FILE, results)


def read_results(job_dir: Path) -> dict[str, Any] | None:
    """The job's results as written (its JSON form), or None if there are none or the file is unreadable."""
    results, _ = read_job(job_dir / RESULTS_FILE)
    return results


def complete_record(job_dir: Path, spec: JobSpec) -> JobRecord | None:
    """The job's record when its `results.json` is complete and was written for this same job; else None."""
    record, _ = read_record(job_dir / RESULTS_FILE)
    return record if record is not None and record.status == COMPLETE and record.job_key == spec.key else None


def new_results(spec: JobSpec) -> JobRecord:
    """The record every task fills in: the job's description, running, its sections empty."""
    return JobRecord(
        task=spec.task,
        dataset=spec.dataset,
        generator=spec.generator,
        generator_name=spec.generator_name,
        epsilon=spec.epsilon,
        seed=spec.seed,
        job_key=spec.key,
        config=dict(spec.config),
    )


def job_files(sweep: Path) -> list[Path]:
    """Every job's `results.json` below the sweep folder, in folder order."""
    return [path for path in sorted(sweep.rglob(RESULTS_FILE)) if path.is_file()]


def read_job(path: Path) -> tuple[dict[str, Any] | None, str]:
    """The parsed results file, or None and why it could not be read (the file's content is never quoted)."""
    try:
        results = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return None, f"results.json unreadable ({type(exc).__name__})"
    return (results, "") if isinstance(results, dict) else (None, "results.json is not a JSON object")


def read_record(path: Path) -> tuple[JobRecord | None, str]:
    """A results file read through the record type (`JobRecord.from_json`, tolerant of older files), or None and
    why it could not be read."""
    results, problem = read_job(path)
    return (None, problem) if results is None else (JobRecord.from_json(results), "")


def flatten(value: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested results as flat columns: `{"utility": {"f1_macro": x}}` is `utility.f1_macro`; keys already dotted
    (`audit`'s `canaries.auc`) stay as they are under their section. "inf"/"nan" strings are floats again, and a
    list is its JSON text, so every cell is a scalar that CSV and Parquet both hold."""
    flat: dict[str, Any] = {}
    for key, item in value.items():
        column = f"{prefix}{key}"
        if isinstance(item, Mapping):
            flat |= flatten(item, f"{column}.")
        elif isinstance(item, (list, tuple)):
            flat[column] = json.dumps(item)
        elif isinstance(item, str) and item in NON_FINITE:
            flat[column] = float(item)
        else:
            flat[column] = item
    return flat


def sweep_records(sweep: Path | str) -> list[tuple[str, JobRecord | None, str]]:
    """Every job of a sweep (`<output_root>/<sweep>`), sorted by job folder: (its folder relative to the sweep, its
    record or None, why the record could not be read). The one walk of a sweep that `sweep_rows`, the report and the
    sweep's closing table share."""
    root = Path(sweep)
    if not root.is_dir():
        raise SynBenchError(f"{root} is not a folder; give the sweep folder (<output_root>/<sweep>)")
    return [(path.parent.relative_to(root).as_posix(), *read_record(path)) for path in job_files(root)]


def sweep_rows(sweep: Path | str) -> list[dict[str, Any]]:
    """A sweep as data: one flat row per job under the sweep folder (`<output_root>/<sweep>`), sorted by job folder.

    Each row is the job's record (`read_record`) in its JSON form with
    nested sections flattened with "." (`utility.f1_macro`,
    `audit.eps_emp_lower`, `config.generator._plugin_`: the job description
    is the `config` section), plus `job` (the folder, relative to the sweep)
    and `reason` (why a job is not complete: its error, or why its file is
    unreadable). A job whose results.json cannot be parsed is still a row,
    with status `unreadable`. What is read is only results.json: the
    allow-listed release, never the synthetic text or the private data
    beside it. `load`, the report's frame and the sweep's closing table are
    these rows.
    """
    rows = []
    for job, record, problem in sweep_records(sweep):
        row: dict[str, Any] = {"job": job}
        if record is None:
            rows.append(row | {"status": UNREADABLE, "reason": problem})
            continue
        results = record.to_json()
        results.pop("error", None)  # in words as `reason`
        rows.append(row | {"reason": record.reason()} | flatten(results))
    return rows


def load(sweep: Path | str) -> "pd.DataFrame":
    """A sweep as one pandas DataFrame: its rows (`sweep_rows`), the columns `LEADING_COLUMNS` first, then the rest
    in the order of the record's fields and sections."""
    import pandas as pd

    rows = sweep_rows(sweep)
    columns = list(dict.fromkeys([*LEADING_COLUMNS, *(key for row in rows for key in row)]))
    return pd.DataFrame(rows, columns=columns)
