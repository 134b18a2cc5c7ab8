"""A job's `results.json`: the skeleton every task fills in, the writer that enforces the release allow-list, the
reader that tells a complete job from one to re-run, and `load`: a whole sweep as one pandas DataFrame.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from synbench.core.errors import SynBenchError
from synbench.core.files import write_json_atomic
from synbench.job import release
from synbench.job.spec import JobSpec

if TYPE_CHECKING:
    import pandas as pd

    from synbench.core.base import Generator

RESULTS_FILE = "results.json"
SECTIONS = ("utility", "fidelity", "audit", "timing")
UNREADABLE = "unreadable"  # the status of a job whose results.json cannot be parsed
NON_FINITE = ("inf", "-inf", "nan")  # how strict JSON (`synbench.core.files.to_json`) writes non-finite numbers
# The first columns of `load`: where the job is, how it ended, and what it ran; the rest follow in file order.
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
    """Write the job's `results.json` with the release allow-list enforced (`synbench.job.release`).

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
    """The job's results, or None if there are none or the file is unreadable."""
    path = job_dir / RESULTS_FILE
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def is_complete(job_dir: Path, spec: JobSpec) -> bool:
    """True when `results.json` is complete and was written for this same job."""
    results = read_results(job_dir)
    return bool(results) and results.get("status") == "complete" and results.get("job_key") == spec.key


def new_results(spec: JobSpec) -> dict[str, Any]:
    """The results skeleton every task fills in."""
    return {
        "task": spec.task,
        "dataset": spec.dataset,
        "generator": spec.generator,
        "generator_name": spec.generator_name,
        "epsilon": spec.epsilon,
        "delta": None,
        "epsilon_spent": None,
        "seed": spec.seed,
        "status": "running",
        "job_key": spec.key,
        "noise": None,
        "label_space_inferred": False,
        "non_private_control": False,
        "non_dp_outputs": [],
        **{section: {} for section in SECTIONS},
        "config": spec.config,
    }


def number(value: Any) -> float | None:
    """A number of results.json as a float (non-finite ones are written "inf", "-inf", "nan"); None if not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and value in NON_FINITE:
        return float(value)
    return None


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


def load(sweep: Path | str) -> "pd.DataFrame":
    """A sweep as data: one row per job under the sweep folder (`<output_root>/<sweep>`), sorted by job folder.

    Columns are the fields of results.json with nested sections flattened
    with "." (`utility.f1_macro`, `audit.eps_emp_lower`,
    `config.generator._plugin_`: the job description is the `config`
    section), plus `job` (the folder, relative to the sweep) and `reason`
    (why a job is not complete: its error, or why its file is unreadable). A
    job whose results.json cannot be parsed is still a row, with status
    `unreadable`. What is read is only results.json: the allow-listed
    release, never the synthetic text or the private data beside it.
    """
    import pandas as pd

    root = Path(sweep)
    if not root.is_dir():
        raise SynBenchError(f"{root} is not a folder; give the sweep folder (<output_root>/<sweep>)")
    rows = []
    for path in job_files(root):
        results, problem = read_job(path)
        row: dict[str, Any] = {"job": path.parent.relative_to(root).as_posix()}
        if results is None:
            rows.append(row | {"status": UNREADABLE, "reason": problem})
            continue
        error = results.get("error")
        reason = f"{error.get('type', 'error')}: {error.get('message', '')}" if isinstance(error, Mapping) else ""
        rows.append(row | {"reason": reason} | flatten({k: v for k, v in results.items() if k != "error"}))
    columns = list(dict.fromkeys([*LEADING_COLUMNS, *(key for row in rows for key in row)]))
    return pd.DataFrame(rows, columns=columns)
