"""`task=report`: `report.md` and `report.html` of a sweep, from the `results.json` files under its folder."""

from __future__ import annotations

from pathlib import Path

from synbench.core import schema
from synbench.core.errors import ConfigError
from synbench.job.results import RESULTS_FILE
from synbench.job.spec import JobConfig
from synbench.report.build import write_report
from synbench.tasks.base import Task
from synbench.tasks.options import ReportOptions


class ReportTask(Task):
    """`task=report` (conf/task/report.yaml): reads a sweep's results files, writes no results.json of its own."""

    options = ReportOptions
    writes_results = False

    def run(self, config: JobConfig, job_dir: Path) -> None:
        options = schema.typed(ReportOptions, config.task, "task")
        root = Path(options.root)
        if not any(root.rglob(RESULTS_FILE)):  # the folder itself may exist: Hydra makes this job's folder inside it
            raise ConfigError(
                f"task=report: no {RESULTS_FILE} under {root}; name the sweep with sweep=<name> (and "
                f"output_root=<folder> if its outputs are elsewhere), or set task.root=<folder>"
            )
        for path in write_report(root, options.confidence, title=f"SynBench report: sweep {config.sweep}"):
            print(f"report: {path}")
