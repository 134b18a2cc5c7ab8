"""Tasks a job can run (`task=<name>`): registry plugins of the `synbench.tasks` group (`synbench.tasks.base.Task`).

A task's module is imported only when a job runs it, so `task=plugins` does
not import torch. Adding a task is its class, its `conf/task/<name>.yaml`
and one entry point; nothing here lists them.
"""

from __future__ import annotations

from synbench.core import registry
from synbench.core.errors import PluginError
from synbench.tasks.base import Task


def get_task(name: str) -> Task:
    """The task plugin `name` (an unknown name lists the installed ones)."""
    return registry.load(Task, name)()


def writes_results(name: object) -> bool:
    """Whether task `name` runs a job that owns a results.json (a failure before it started is then recorded there)."""
    try:
        return bool(registry.load(Task, str(name)).writes_results) if name else False
    except PluginError:
        return False
