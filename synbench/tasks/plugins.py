"""`task=plugins`: every registered plugin by group, with the package that provides it.

The groups are those of the plugin kinds whose base classes are defined
(`registry.kinds()`, one base class each; the built-in ones are imported
here), then each plugin package's config folder, found beside its classes.
"""

from __future__ import annotations

from pathlib import Path

import synbench.filters.base  # noqa: F401  (the one built-in kind whose base is not in synbench.core.base or tasks.base)
from hydra_plugins.synbench_searchpath.plugin import config_folders
from synbench.core import registry
from synbench.job.spec import JobConfig
from synbench.tasks.base import Task


def plugin_table() -> str:
    lines = []
    for kind in registry.kinds():
        lines.append(f"{kind.entry_point_group}:")
        plugins = registry.available(kind)
        if not plugins:
            lines.append("  (none installed)")
        for info in plugins.values():
            lines.append(f"  {info.name:<16} {info.package} {info.version:<10} {info.value}")
    lines.append("config folders (beside the classes, on Hydra's search path):")
    for folder, dist in config_folders().items():
        lines.append(f"  {dist:<16} {folder}")
    return "\n".join(lines)


class PluginsTask(Task):
    """`task=plugins` (conf/task/plugins.yaml): prints the table; writes no results.json."""

    writes_results = False

    def run(self, config: JobConfig, job_dir: Path) -> None:
        print(plugin_table())
