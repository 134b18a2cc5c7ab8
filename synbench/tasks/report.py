"""`task=report`: `report.md` and `report.html` of a sweep, from the `results.json` files under its folder."""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig

from synbench.errors import ConfigError
from synbench.job import JobSpec
from synbench.lifecycle import node
from synbench.report.build import write_report
from synbench.results import RESULTS_FILE
from synbench.tasks.base import Task


class ReportTask(Task):
    """`task=report` (conf/task/report.yaml): reads a sweep's results files, writes no results.json of its own."""

    writes_results = False

    def run(self, cfg: DictConfig, spec: JobSpec, job_dir: Path) -> None:
        options = node(cfg, "task")
        root = Path(str(options["root"]))
        if not any(root.rglob(RESULTS_FILE)):  # the folder itself may exist: Hydra makes this job's folder inside it
            raise ConfigError(
                f"task=report: no {RESULTS_FILE} under {root}; name the sweep with sweep=<name> (and "
                f"output_root=<folder> if its outputs are elsewhere), or set task.root=<folder>"
            )
        confidence = float(options["confidence"])
        if not 0 < confidence < 1:
            raise ConfigError(f"task.confidence={confidence} must be between 0 and 1 (0.95 for a 95% interval)")
        for path in write_report(root, confidence, title=f"SynBench report: sweep {cfg.sweep}"):
            print(f"report: {path}")
