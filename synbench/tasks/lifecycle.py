"""One place that owns a job's lifecycle (lightning-hydra-template's `task_wrapper`).

Every task that writes results runs its body inside `run_job`: skip when the
job's `results.json` is already complete, start the tracker, time the steps,
write results atomically (also part-way, through `JobRun.save`), record a
failure as `"status": "failed"` with the error, and always finish the tracker.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from omegaconf import DictConfig

from synbench.errors import SynBenchError
from synbench.job import RESULTS_FILE, JobSpec, is_complete, new_results, read_results, write_json_atomic
from synbench.tasks.common import Stopwatch, node
from synbench.tracking import Tracker, make_tracker

log = logging.getLogger(__name__)


@dataclass
class JobRun:
    """What a task body works with: the job, its results being filled in, its stopwatch and tracker."""

    cfg: DictConfig
    spec: JobSpec
    job_dir: Path
    results: dict[str, Any]
    timing: Stopwatch
    tracker: Tracker

    def save(self) -> None:
        """Write results as they stand (atomically); a reader never sees half a file."""
        self.results["timing"] = dict(self.timing)
        write_json_atomic(self.job_dir / RESULTS_FILE, self.results)


def error_record(exc: BaseException) -> dict[str, str]:
    """The error as results keep it: our errors' messages never quote data; others' might, so only their type is kept."""
    if isinstance(exc, SynBenchError):
        return {"type": type(exc).__name__, "message": str(exc)}
    return {"type": type(exc).__name__, "message": "not recorded (it may quote data); see the job's log"}


# (section, key, label, reference keys as (label, section.key)) of the figures a person reads first.
HEADLINES = (
    ("utility", "f1_micro", "F1 micro", (("random", "utility.random_f1"), ("majority", "utility.majority_f1"),
                                         ("real", "utility.real_f1"))),
    ("fidelity", "mauve", "MAUVE", (("real vs real", "fidelity.mauve_ref"),)),
    ("fidelity", "label_cardinality_div", "label-cardinality JS", (("real vs real", "fidelity.label_cardinality_div_ref"),)),
    ("audit", "auc", "attack AUC", ()),
    ("audit", "eps_emp_lower", "eps_emp lower bound", (("nominal eps", "epsilon"),)),
)


def summary(results: dict[str, Any]) -> str:
    """A few lines for the terminal: the budget spent and the headline figures beside their reference rows."""
    def value(path: str) -> Any:
        section, _, key = path.partition(".")
        return results.get(section, {}).get(key) if key else results.get(section)

    def show(v: Any) -> str:
        return f"{v:.3g}" if isinstance(v, float) else str(v)

    lines = [f"{results.get('task')} {results.get('generator')} on {results.get('dataset')}: eps={show(results.get('epsilon'))}, "
             f"epsilon_spent={show(results.get('epsilon_spent'))}, delta={show(results.get('delta'))}"]
    for section, key, label, refs in HEADLINES:
        if key in results.get(section, {}):
            ref = ", ".join(f"{name} {show(value(path))}" for name, path in refs if value(path) is not None)
            lines.append(f"  {label}: {show(results[section][key])}" + (f" ({ref})" if ref else ""))
    return "\n".join(lines)


def run_job(cfg: DictConfig, spec: JobSpec, job_dir: Path, body: Callable[[JobRun], None]) -> dict[str, Any]:
    """Run `body` as the job in `job_dir`, unless its results are already complete; returns the results."""
    if is_complete(job_dir, spec):
        log.info("results already complete in %s; skipping (delete results.json to re-run)", job_dir)
        return read_results(job_dir) or {}
    job = JobRun(cfg, spec, job_dir, new_results(spec), Stopwatch(), make_tracker(node(cfg, "tracking"), spec, job_dir,
                                                                                   group=str(cfg.sweep)))
    failed = True
    try:
        body(job)
        job.results["status"] = "complete"
        job.save()
        failed = False
        print(summary(job.results))
        log.info("results: %s", job_dir / RESULTS_FILE)
        return job.results
    except BaseException as exc:
        job.results.update(status="failed", error=error_record(exc))
        job.save()
        raise
    finally:
        job.tracker.finish(failed=failed)
