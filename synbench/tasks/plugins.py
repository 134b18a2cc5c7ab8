"""`task=plugins`: every registered plugin by group, with the package that provides it."""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig

from synbench import registry
from synbench.job import JobSpec
from synbench.tasks.base import Task


def plugin_table() -> str:
    lines = []
    for kind, group in registry.KINDS.items():
        lines.append(f"{group}:")
        plugins = registry.available(kind)
        if not plugins:
            lines.append("  (none installed)")
        for info in plugins.values():
            lines.append(f"  {info.name:<16} {info.package} {info.version:<10} {info.value}")
    return "\n".join(lines)


class PluginsTask(Task):
    """`task=plugins` (conf/task/plugins.yaml): prints the table; writes no results.json."""

    writes_results = False

    def run(self, cfg: DictConfig, spec: JobSpec, job_dir: Path) -> None:
        print(plugin_table())
