"""SynBench's config groups (package data), and the schema nodes of the built-in plugins they extend.

Hydra imports this package before it reads a config from it (`pkg://synbench.conf`), so the schema nodes are in
the ConfigStore when a group YAML's defaults list names them (`- /schema/dataset/files@_here_`). The built-ins are
the entry points of SynBench's installed distribution (setup.cfg), read as metadata; each is registered by where its
class is (`module:name`), and its options are imported when Hydra first loads it (`schema.LazyGroup`, read from the
class's `options = ...` line without importing the class where it has one): a start-up imports only the options of
the groups it composes, and `--help` or a refused override none of the plugins. A plugin package does the same in its
own config package (docs/config.md).
"""

from synbench.core import schema
from synbench.core.registry import built_ins
from synbench.tasks.base import Task
from synbench.tasks.options import TaskNode

# each config group of plugins and the entry-point group (setup.cfg) its plugins register under: the plugins
# themselves are read from the installed distribution's metadata, which imports none of them
ENTRY_POINT_GROUPS = {
    "dataset": "synbench.datasets",
    "generator": "synbench.generators",
    "generator/backend": "synbench.lm_backends",
    "classifier": "synbench.classifiers",
    "filter": "synbench.filters",
    "attack": "synbench.attacks",
    "metrics": "synbench.metrics",
    "model_attacks": "synbench.model_attacks",
    "tracking": "synbench.trackers",
}
# a tracker is built with the job's spec, folder and sweep group (synbench.job.tracking.tracker), and its node also
# holds the core's `log_private_stats`
GIVEN = {"tracking": ("spec", "job_dir", "group")}
CORE = {"tracking": (schema.TrackingOptions,)}


def built_in_plugins() -> dict[str, dict[str, str]]:
    """Each config group's built-in plugins, by name: where each plugin class is (`module:name`), as SynBench's
    installed distribution declares them (the registry's own source)."""
    return {group: built_ins(entry_point_group) for group, entry_point_group in ENTRY_POINT_GROUPS.items()}


# nodes that name no plugin: the plain groups and the tasks' sections
CONFIGS = {
    "model": "synbench.lm.settings:ModelSpec",
    "encoder": "synbench.core.base:EncoderSpec",
    "prompts": "synbench.lm.prompts:Prompts",
    "audit": "synbench.audit.config:AuditOptions",
    "contamination": "synbench.contamination.config:ContaminationOptions",
    "model_audit": "synbench.model_audit.config:ModelAuditOptions",
    "plugin": "synbench.tasks.options:PluginScaffold",
}

for group, plugins in built_in_plugins().items():
    for name, where in plugins.items():
        schema.store_plugin(group, name, where, *CORE.get(group, ()), given=GIVEN.get(group, ()))
for path, options in CONFIGS.items():
    schema.store_config(path, options)
# each built-in task's `task` node (schema/task/<name>), typed by the options its class names (`TaskNode`)
for task, where in built_ins(Task.entry_point_group).items():
    schema.store(TaskNode(f"{schema.SCHEMA_GROUP}/task", task, where))
