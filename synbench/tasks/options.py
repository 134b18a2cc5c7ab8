"""The schema of each built-in task's `task.*` options (and new_plugin's `plugin.*`), importable cheaply.

A task class names its dataclass (`options = BenchmarkOptions`), and the
built-in tasks are SynBench's `synbench.tasks` entry points (setup.cfg), so
no list here repeats them: `task_options` reads both without importing the
task's module. Hydra's ConfigStore registers them (schema/task/<name>), and each
conf/task/<name>.yaml names its node first in its defaults list, so the YAML
holds only what differs and every value is typed on merge: a
`task.save_synthetic=no` is False, a `task.n_synthetic=abc` a one-line error.
The checks a type cannot express are in the dataclass's `__post_init__`
(`task.n_synthetic`: `synbench.job.spec.check_top_level`, by the one check of
every `n_synthetic` key, `synbench.core.errors.check_n_synthetic`), one place
per setting, so a value is refused before the task looks for a sweep's files,
and a sweep refuses it for every point before its first job
(`check_task_options`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, make_dataclass
from functools import lru_cache
from typing import Any, Mapping, Optional, cast

from hydra.core.config_store import ConfigNode

from synbench.audit.config import DisclosureOptions
from synbench.core import registry, schema
from synbench.core.base import Generator
from synbench.core.errors import ConfigError
from synbench.job.tracking import WandbOptions
from synbench.tasks.base import Task

SWEEP_FOLDER = "${output_root}/${sweep}"  # the folder of the sweep a reading task reads
EXPORT_FORMATS = ("csv", "parquet")
WANDB_MODES = ("online", "offline")


@dataclass
class BenchmarkOptions:
    """`task=benchmark`: fit the generator on the private split, sample, score with the metrics."""

    name: str = "benchmark"
    n_synthetic: Optional[int] = None  # null = as many documents as the private training split
    save_synthetic: bool = True  # write synthetic.jsonl into the job directory
    # the disclosure check of the release against the private and eval splits (synbench.audit.disclosure)
    disclosure: DisclosureOptions = field(default_factory=DisclosureOptions)


@dataclass
class ExportOptions:
    """`task=export`: a whole sweep as one table (a row per job) in the sweep folder."""

    name: str = "export"
    root: str = SWEEP_FOLDER  # the sweep folder to read (every results.json below it); the table goes here
    format: str = "csv"  # EXPORT_FORMATS: csv | parquet

    def __post_init__(self) -> None:
        if self.format not in EXPORT_FORMATS:
            raise ConfigError(f"task.format={self.format!r} must be one of {', '.join(EXPORT_FORMATS)}")


@dataclass
class PrepareOptions:
    """`task=prepare`: a dataset's splits as JSONL (`<out_dir>/<dataset.name>/{train,test}.jsonl`), the layout the
    paper experiments read from `data_root`, and a manifest of counts, source and digests."""

    name: str = "prepare"
    out_dir: str = "${output_root}/prepared"  # the folder of prepared datasets: pass it as data_root to read them
    # true: replace a prepared folder of another source (another release folder, split seed or policy); false
    # refuses it and keeps its files. A single run only: a sweep refuses it (synbench.tasks.prepare)
    overwrite: bool = False


@dataclass
class ReportOptions:
    """`task=report`: tables and plots of a whole sweep, written into the sweep folder."""

    name: str = "report"
    root: str = SWEEP_FOLDER  # the sweep folder to read; report.md and report.html go here
    confidence: float = 0.95  # level of the Student t interval over seeds shown as mean ± half-width

    def __post_init__(self) -> None:
        if not 0 < self.confidence < 1:
            raise ConfigError(f"task.confidence={self.confidence} must be between 0 and 1 (0.95 for a 95% interval)")


@dataclass
class WandbWorkspaceOptions:
    """`task=wandb_workspace`: a saved W&B view of a sweep (its spec file is written in either mode)."""

    name: str = "wandb_workspace"
    # the tracking node's, or (tracking=none) the W&B tracker's defaults
    mode: str = f"${{oc.select:tracking.mode,{WandbOptions.mode}}}"  # online: save to W&B; offline: the spec only
    entity: Optional[str] = "${oc.select:tracking.entity,null}"  # null: your default W&B entity (online)
    project: str = f"${{oc.select:tracking.project,{WandbOptions.project}}}"
    spec_file: str = SWEEP_FOLDER + "/wandb_workspace.json"  # the view's spec (JSON)

    def __post_init__(self) -> None:
        if self.mode not in WANDB_MODES:
            raise ConfigError(
                f"task.mode={self.mode!r} must be online (save the view to W&B) or offline (its spec only)"
            )


@dataclass
class PluginScaffold:
    """`plugin.*` of `task=new_plugin`: the minimal installable plugin package it writes."""

    kind: str = "generator"  # generator | metric | attack | dataset
    name: Optional[str] = None  # a lowercase Python identifier, unique among installed plugins of its kind
    dest: Optional[str] = None  # the folder to write (new or empty); null = ./synbench-<name>


def task_options(task: str) -> type | None:
    """The `task` node's dataclass of built-in task `task` (`options_at`); None for a task SynBench does not ship."""
    where = registry.built_ins(Task.entry_point_group).get(task)
    return None if where is None else options_at(where, task)


@lru_cache(maxsize=None)
def options_at(where: str, task: str) -> type:
    """The `task` node's dataclass of the task class at `where` (`module:name`): the options the class names
    (`options = ...`, read from its source, so the task's torch and the like stay out), else one of its `name` alone
    (a task whose options are a section of their own, `audit.*`, or that has none)."""
    declared = schema.declared_options(where)
    if declared is None:
        return make_dataclass(f"{task.title().replace('_', '')}Task", [("name", str, field(default=task))])
    return cast(type, schema.load_object(declared))


@dataclass(frozen=True)
class TaskNode(schema.PendingNode):
    """A built-in task's `schema/task/<name>` node as registered, `options` where its class is: the node's dataclass
    is found (`options_at`) when Hydra first loads it, so registering every task reads no task's source."""

    def build(self) -> ConfigNode:
        return schema.PendingNode(self.group, self.name, options_at(str(self.options), self.name)).build()


def check_task_options(task: Mapping[str, Any]) -> None:
    """The options of a built-in task typed and checked as the task will type them, for a sweep to refuse a bad value
    (`task.format=xlsx`) before its first job."""
    options = task_options(str(task.get("name")))
    if options is not None:
        schema.typed(options, task, "task")


def check_plugin_options(generator: Mapping[str, Any] | None, filter: Mapping[str, Any] | None) -> None:
    """The generator's and the filter's nodes refused as the job would build them (the plugin, unknown keys, values
    of the wrong type, its options' own checks), without building them, before any data is read: a sweep checks
    each of its points, a single job itself. The job folder is the keyword the core adds to a generator."""
    if generator:
        registry.check_node(Generator, generator, extra=("job_dir",))
    if filter:
        from synbench.filters.base import Filter  # a plugin kind's module: loaded only when a filter is set

        registry.check_node(Filter, filter)
