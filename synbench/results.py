"""A job's `results.json`: the skeleton every task fills in, the writer that enforces the release allow-list, the
reader that tells a complete job from one to re-run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from synbench import release
from synbench.files import write_json_atomic
from synbench.job import JobSpec

if TYPE_CHECKING:
    from synbench.base import Generator

RESULTS_FILE = "results.json"
SECTIONS = ("utility", "fidelity", "audit", "timing")


def write_results(
    job_dir: Path,
    results: Mapping[str, Any],
    generator: type[Generator] | None = None,
    task: release.TaskDeclarations | None = None,
) -> None:
    """Write the job's `results.json` with the release allow-list enforced (`synbench.release`).

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
