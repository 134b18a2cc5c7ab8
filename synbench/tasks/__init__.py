"""Tasks a job can run (`task=<name>`); each is `run(cfg, spec, job_dir)`."""
from __future__ import annotations

from importlib import import_module
from typing import Callable

from synbench.errors import ConfigError

# name -> module; imported lazily so `task=plugins` does not import torch.
TASKS: dict[str, str] = {
    "audit": "synbench.tasks.audit",
    "benchmark": "synbench.tasks.benchmark",
    "model_audit": "synbench.tasks.model_audit",
    "contamination": "synbench.tasks.contamination",
    "new_plugin": "synbench.tasks.new_plugin",
    "plugins": "synbench.tasks.plugins",
    "report": "synbench.tasks.report",
}

# Tasks that run a job through `lifecycle.run_job` and so own a results.json (the others only print or write files).
JOB_TASKS = frozenset({"audit", "benchmark", "model_audit", "contamination"})


def get_task(name: str) -> Callable[..., object]:
    if name not in TASKS:
        raise ConfigError(f"task={name!r} is unknown; available: {', '.join(TASKS)}")
    return import_module(TASKS[name]).run
