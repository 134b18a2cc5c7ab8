"""An offline W&B run of a sweep, read back from its transaction log: group, config, summary and history.

No network: `tracking.mode=offline` (the default) writes `run-<id>.wandb`
into the job folder, and `wandb_records` reads it with wandb's own record
schema. The jobs are a benchmark and a one-run audit of the honest
`generator=command` program at eps=2, in one sweep.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Iterator

import pytest
import wandb

from conftest import FIXTURES, compose_config
from synbench.job.spec import JobConfig
from wandb_records import OfflineRun

HONEST = FIXTURES / "command" / "honest_generator.py"
SWEEP = "wbsweep"


def offline_run(job_dir: Path) -> OfflineRun:
    [log] = job_dir.rglob("offline-run-*/run-*.wandb")
    return OfflineRun.read(log)


@pytest.fixture
def sweep(tmp_path: Path, tiny_dataset: list[str]) -> Iterator[Path]:
    from synbench.tasks import audit, benchmark

    common = [
        *tiny_dataset,
        "dataset.label_space=[neg,pos]",
        "generator=command",
        f"generator.command=[{sys.executable},{HONEST},'{{spec}}','{{out}}']",
        f"generator.log_dir={tmp_path / 'logs'}",
        "tracking=wandb",
        f"sweep={SWEEP}",
        "eps=2",
    ]
    root = tmp_path / SWEEP
    cfg = compose_config([*common, "metrics=[utility]"])
    benchmark.run(JobConfig.from_config(cfg), root / "benchmark" / "eps=2")
    cfg = compose_config([*common, "task=audit", "audit.mode=one_run", "audit.targets=canaries", "audit.n_canaries=40"])
    audit.run(JobConfig.from_config(cfg), root / "audit" / "eps=2")
    yield root
    # wandb's core service outlives its runs, and files it writes later (its debug logs) take the umask it started
    # with: stop it, so the next test's job starts its own under that job's umask
    wandb.teardown()


def test_offline_runs_hold_the_sweep_group_config_summary_and_history(sweep: Path) -> None:
    bench, audit = offline_run(sweep / "benchmark" / "eps=2"), offline_run(sweep / "audit" / "eps=2")
    results = json.loads((sweep / "benchmark" / "eps=2" / "results.json").read_text())
    audited = json.loads((sweep / "audit" / "eps=2" / "results.json").read_text())
    for run, task in ((bench, "benchmark"), (audit, "audit")):
        assert run.group == SWEEP and run.job_type == task and run.exit_code == 0
        flat = {k: run.config[k] for k in ("dataset", "generator", "eps", "seed", "task")}
        assert flat == {"dataset": "tiny", "generator": "command", "eps": 2.0, "seed": 0, "task": task}
        assert run.config["job"]["generator"]["_plugin_"] == "command" and run.config["job"]["eps"] == 2.0
        assert run.summary["epsilon_spent"] == 2.0
    assert bench.summary["utility/f1_micro"] == results["utility"]["f1_micro"]
    assert bench.summary["utility/f1_macro"] == results["utility"]["f1_macro"]
    assert audit.summary["audit/eps_emp_lower"] == audited["audit"]["eps_emp_lower"] < 2.0
    assert audit.summary["audit/auc"] == audited["audit"]["auc"]
    [row] = [r for r in bench.history if "utility/f1_micro" in r]
    assert row["utility/f1_micro"] == results["utility"]["f1_micro"] and row["epsilon_spent"] == 2.0
    assert row["eps"] == 2.0  # the x-axis of task=wandb_workspace's plots, in the row of the figures
    [row] = [r for r in audit.history if "audit/eps_emp_lower" in r]
    assert row["audit/eps_emp_lower"] == audited["audit"]["eps_emp_lower"] and row["eps"] == 2.0
    [image] = [r["audit/roc"] for r in audit.history if "audit/roc" in r]  # the ROC figure, a media record
    assert image["_type"] == "image-file" and image["format"] == "png"
