"""The built-in plugins' schema nodes come from SynBench's entry points (setup.cfg), the one list of its plugins:
conf/__init__.py reads them as metadata, and a node imports a plugin's options, not the plugin, where the class names
its options with `options = X` (read from its source by `schema.declared_options`)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hydra.core.config_store import ConfigStore

import synbench.api  # noqa: F401  (defines every built-in kind's base class)
import synbench.conf as conf
import synbench.tasks.options as task_options_module
from synbench.core import registry, schema
from synbench.tasks.base import Task
from synbench.tasks.options import task_options

ROOT = Path(__file__).resolve().parents[1]


def built_in_kinds() -> dict[str, type]:
    """Each plugin kind SynBench defines, by its entry-point group."""
    return {kind.entry_point_group: kind for kind in registry.kinds() if kind.__module__.startswith("synbench.")}


def test_the_config_schema_has_a_node_for_each_built_in_entry_point_and_no_other() -> None:
    """Every plugin kind but the tasks (whose options are the task sections) has its config group, and each group's
    schema nodes are the built-ins its entry-point group declares."""
    kinds = built_in_kinds()
    assert set(conf.ENTRY_POINT_GROUPS.values()) == set(kinds) - {"synbench.tasks"}
    for group, entry_point_group in conf.ENTRY_POINT_GROUPS.items():
        declared = registry.available(kinds[entry_point_group])  # read by the registry, all packages
        built_ins = {name for name, info in declared.items() if info.package == "synbench"}
        nodes = {name.removesuffix(".yaml") for name in ConfigStore.instance().list(f"schema/{group}")}
        assert nodes - {"backend"} == built_ins, group  # schema/generator also holds the backend folder
    # a tracker's node holds the core's key, not the job's spec, folder and group it is built with
    tracker = ConfigStore.instance().load("schema/tracking/none.yaml").node
    assert set(tracker) == {"log_private_stats", schema.PLUGIN_KEY}


def test_each_built_in_options_line_is_read_as_its_class_holds_it() -> None:
    """What the schema reads from a plugin's source is the dataclass the class holds; a built-in that sets `options`
    in a form the reader does not read fails here (its node would import the plugin, torch and all)."""
    read = 0
    for kind in built_in_kinds().values():
        for name, info in registry.available(kind).items():
            if info.package != "synbench":
                continue
            where, cls = schema.declared_options(info.value), registry.load(kind, name)
            if where is None:
                assert "options" not in vars(cls), f"{info.value}: its options line is not read from its source"
            else:
                read += 1
                assert schema.load_object(where) is schema.options_of(cls), info.value
    assert read >= 9  # DP-Gen, DP-Diffusion, AUG-PE, the template, both LM backends, pyes_pno, transformer, W&B


def test_every_built_in_node_builds_without_the_plugin_classes_that_name_their_options() -> None:
    """Composing any built-in's node imports its options, not its plugin class, where the class names them from
    another module: DP-Gen's torch stays out of `--cfg job` and of a refusal while composing."""
    built_ins = [where for plugins in conf.built_in_plugins().values() for where in plugins.values()]
    elsewhere = {
        where.partition(":")[0]
        for where in built_ins
        if (schema.declared_options(where) or where).partition(":")[0] != where.partition(":")[0]
    }
    assert {"synbench.generators.dpgen.generator", "synbench.metrics.transformer"} <= elsewhere
    assert len(elsewhere) >= 7
    modules = modules_after(
        "for group, plugins in conf.built_in_plugins().items():\n"
        "    for name in plugins:\n"
        "        assert ConfigStore.instance().load(f'schema/{group}/{name}.yaml').node['_plugin_'] == name\n"
    )
    assert not modules & elsewhere, sorted(modules & elsewhere)
    assert not {module.split(".")[0] for module in modules} & {"torch", "transformers"}


def test_an_options_line_is_read_from_the_source_without_importing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "options_probe"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "settings.py").write_text(
        "from dataclasses import dataclass\n\n\n@dataclass\nclass ProbeOptions:\n    steps: int = 3\n"
    )
    (package / "plugin.py").write_text(
        "import a_library_that_is_not_installed\n"
        "from .settings import ProbeOptions as Settings\n\n\n"
        "class Probe:\n    options = Settings\n\n\n"
        "class Beside:\n    steps: int = 1\n\n\n"
        "class Annotated:\n    options: type = Beside\n\n\n"
        "class Made:\n    options = make_options()\n\n\n"
        "class Plain:\n    def __init__(self, steps: int = 1) -> None:\n        self.steps = steps\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    for module in ("options_probe", "options_probe.settings", "options_probe.plugin"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    assert schema.declared_options("options_probe.plugin:Probe") == "options_probe.settings:ProbeOptions"
    assert schema.declared_options("options_probe.plugin:Annotated") == "options_probe.plugin:Beside"
    assert schema.declared_options("options_probe.plugin:Made") is None  # not a plain name: the class is imported
    assert schema.declared_options("options_probe.plugin:Plain") is None
    assert schema.declared_options("options_probe.plugin:Absent") is None
    # a node registered by the class builds from its options alone: the plugin's own module would fail to import
    monkeypatch.setattr(ConfigStore.instance(), "repo", {})
    schema.store_plugin("generator", "options_probe", "options_probe.plugin:Probe")
    node = ConfigStore.instance().load("schema/generator/options_probe.yaml").node
    assert node.steps == 3 and node[schema.PLUGIN_KEY] == "options_probe"
    assert "options_probe.plugin" not in sys.modules


def test_the_task_nodes_are_the_task_entry_points_each_typed_by_the_options_its_class_names(tmp_path: Path) -> None:
    """schema/task holds a node for each built-in task entry point and no other; a task class that names its options
    (`options = X`) has X as its node, read from its source, and every options dataclass of synbench.tasks.options is
    named by one task; a task that names none has a node of its `name` alone. Loading every task node imports no
    task module (the contamination task's torch)."""
    tasks = {name: info for name, info in registry.available(Task).items() if info.package == "synbench"}
    assert tasks.keys() == conf.built_ins(Task.entry_point_group).keys()
    store = ConfigStore.instance()
    assert {name.removesuffix(".yaml") for name in store.list("schema/task")} == set(tasks)
    named: list[type] = []
    for name, info in tasks.items():
        cls, options = registry.load(Task, name), task_options(name)
        assert options is not None and schema.declared_options(info.value) == (
            f"{options.__module__}:{options.__name__}" if "options" in vars(cls) else None
        ), name
        if "options" in vars(cls):
            assert options is cls.options, name
            named.append(options)
        else:
            assert [f.name for f in dataclasses.fields(options)] == ["name"], name
        node = store.load(f"schema/task/{name}.yaml").node
        assert node.name == name and set(node) == {f.name for f in dataclasses.fields(options)}, name
    module = task_options_module.__name__
    declared = [
        value
        for key, value in vars(task_options_module).items()
        if key.endswith("Options") and dataclasses.is_dataclass(value) and value.__module__ == module
    ]
    assert sorted(named, key=str) == sorted(declared, key=str) and len(named) >= 5
    modules = modules_after(
        "for name in conf.built_ins('synbench.tasks'):\n"
        "    assert ConfigStore.instance().load(f'schema/task/{name}.yaml').node['name'] == name\n"
    )
    assert not modules & {info.value.partition(":")[0] for info in tasks.values()}
    assert not {module.split(".")[0] for module in modules} & {"torch", "transformers"}


def modules_after(loading: str) -> set[str]:
    """The modules a fresh interpreter holds after importing the config package and running `loading` (code that
    loads schema nodes from the ConfigStore, `conf` and `ConfigStore` in scope)."""
    code = (
        "import json, sys\nfrom hydra.core.config_store import ConfigStore\nimport synbench.conf as conf\n"
        f"{loading}print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return set(json.loads(done.stdout.splitlines()[-1]))
