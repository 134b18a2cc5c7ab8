"""`task=plugins`: every registered plugin by group, with the package that provides it.

The groups are those of the plugin kinds whose base classes are defined
(`registry.kinds()`, one base class each; the built-in ones are imported
here), then the packages of config groups on Hydra's search path.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path

from omegaconf import DictConfig

# the modules that define the built-in kinds' base classes besides synbench.base and synbench.tasks.base
import synbench.filters.base  # noqa: F401
import synbench.lm.backends  # noqa: F401
from synbench import registry
from synbench.job import JobSpec
from synbench.tasks.base import Task

CONF_GROUP = "synbench.conf"


def plugin_table() -> str:
    lines = []
    for kind in registry.kinds():
        lines.append(f"{kind.entry_point_group}:")
        plugins = registry.available(kind)
        if not plugins:
            lines.append("  (none installed)")
        for info in plugins.values():
            lines.append(f"  {info.name:<16} {info.package} {info.version:<10} {info.value}")
    lines.append(f"{CONF_GROUP}:")  # config packages for Hydra's search path (hydra_plugins.synbench), not classes
    for ep in sorted(entry_points(group=CONF_GROUP), key=lambda e: e.name):
        lines.append(f"  {ep.name:<16} {ep.dist.metadata['Name'] if ep.dist else '?'} {ep.value}")
    return "\n".join(lines)


class PluginsTask(Task):
    """`task=plugins` (conf/task/plugins.yaml): prints the table; writes no results.json."""

    writes_results = False

    def run(self, cfg: DictConfig, spec: JobSpec, job_dir: Path) -> None:
        print(plugin_table())
