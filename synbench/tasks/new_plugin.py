"""`task=new_plugin`: write a minimal installable plugin package from the templates in `synbench.templates`.

    python -m synbench task=new_plugin plugin.kind=generator plugin.name=mygen plugin.dest=./synbench-mygen

The package holds one class (the smallest honest implementation of its kind),
its Hydra config file in the `conf` folder beside it, the one entry point
(in its kind's group), a README, and a test that runs the conformance kit
(`synbench.testing`) on it. After `pip install -e <dest>` the core finds it by
name, with no change to SynBench. The scaffold never overwrites a file.
"""

from __future__ import annotations

import importlib.util
import keyword
import re
from dataclasses import dataclass
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from string import Template
from typing import Iterator

import yaml

from synbench.core import registry, schema
from synbench.core.base import Plugin
from synbench.core.errors import ConfigError
from synbench.job.spec import JobConfig
from synbench.tasks.base import Task
from synbench.tasks.options import PluginScaffold

TEMPLATE_SUFFIX = ".tmpl"
KIND_FILE = "kind.yaml"  # in each kind's template folder: the fields of `Kind`
NAME = re.compile(r"[a-z][a-z0-9_]*")


@dataclass(frozen=True)
class Kind:
    """What differs between plugin kinds in a scaffolded package."""

    base: str  # the name of the kind's base class (in synbench.api), whose entry-point group the class registers in
    conf_group: str  # the Hydra config group its YAML file goes to
    check: str  # the conformance kit's function for it
    select: str  # the command line that uses it, with {name}

    @property
    def base_class(self) -> type[Plugin]:
        [found] = [kind for kind in registry.kinds() if kind.__qualname__ == self.base]
        return found


def kinds() -> dict[str, Kind]:
    """The kinds the scaffold writes: one folder of templates each (`synbench/templates/<kind>/`), described by its
    `kind.yaml`, so a new kind is a new folder and no list here."""
    found = {}
    for folder in sorted(files("synbench.templates").iterdir(), key=lambda e: e.name):
        described = folder.joinpath(KIND_FILE)
        if folder.is_dir() and described.is_file():
            found[folder.name] = Kind(**yaml.safe_load(described.read_text(encoding="utf-8")))
    return found


def template_values(kind: str, name: str) -> dict[str, str]:
    """The placeholders of the templates for plugin `name` of `kind`."""
    spec = kinds()[kind]
    package = f"synbench_{name}"
    return {
        "kind": kind,
        "name": name,
        "package": package,
        "dist": package.replace("_", "-"),
        "module": kind,
        "class_name": "".join(part.capitalize() for part in name.split("_")) + kind.capitalize(),
        "base": spec.base,
        "group": spec.base_class.entry_point_group,
        "conf_group": spec.conf_group,
        "check": spec.check,
        "select": spec.select.format(name=name),
    }


def check_request(kind: str, name: object, dest: Path) -> None:
    """A clear error, before anything is written, for an unknown kind, a bad or taken name, or a used folder."""
    known = kinds()
    if kind not in known:
        raise ConfigError(f"plugin.kind={kind!r} is not supported; choose one of {', '.join(known)}")
    if not isinstance(name, str) or not NAME.fullmatch(name) or keyword.iskeyword(name):
        raise ConfigError(
            f"plugin.name={name!r} is invalid: use a lowercase Python identifier (letters, digits, "
            "underscores; a letter first), for example plugin.name=mygen"
        )
    taken = registry.available(known[kind].base_class).get(name)
    if taken is not None:
        raise ConfigError(
            f"a {kind} plugin named '{name}' is already registered by package '{taken.package}'; "
            "choose another plugin.name"
        )
    package = template_values(kind, name)["package"]
    if importlib.util.find_spec(package) is not None:
        raise ConfigError(f"a Python package '{package}' is already installed; choose another plugin.name")
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise ConfigError(
            f"plugin.dest={dest} already exists and is not an empty folder; the scaffold never "
            "overwrites files: choose a new folder with plugin.dest=..., or remove that one"
        )


def _templates(folder: Traversable, prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Traversable]]:
    """(relative path parts, file) of every template below `folder`."""
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.is_dir():
            yield from _templates(entry, (*prefix, entry.name))
        elif entry.name.endswith(TEMPLATE_SUFFIX):
            yield (*prefix, entry.name), entry


def scaffold(kind: str, name: object, dest: Path) -> list[Path]:
    """Write the plugin package for `name` of `kind` into `dest` (new or empty); returns the files written."""
    check_request(kind, name, dest)
    assert isinstance(name, str)
    values = template_values(kind, name)
    root = files("synbench.templates")
    written = []
    for folder in ("common", kind):
        for parts, template in _templates(root / folder):
            renamed = [values["package"] if p == "PACKAGE" else p.replace("NAME", name) for p in parts]
            target = dest.joinpath(*renamed[:-1], renamed[-1].removesuffix(TEMPLATE_SUFFIX))
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(Template(template.read_text(encoding="utf-8")).substitute(values), encoding="utf-8")
            written.append(target)
    return written


class NewPluginTask(Task):
    """`task=new_plugin` (conf/task/new_plugin.yaml): writes a package folder; no results.json."""

    writes_results = False

    def run(self, config: JobConfig, job_dir: Path) -> None:
        plugin = schema.typed(PluginScaffold, config.plugin or {}, "plugin")
        name = plugin.name
        dest = Path(plugin.dest if plugin.dest is not None else f"synbench-{name}").expanduser().resolve()
        written = scaffold(plugin.kind, name, dest)
        values = template_values(plugin.kind, str(name))
        print(f"wrote the {plugin.kind} plugin '{name}' (package {values['dist']}) to {dest}:")
        print("\n".join(f"  {path.relative_to(dest)}" for path in written))
        print(
            f"next:\n  pip install -e {dest}\n  python -m pytest {dest / 'tests'}\n"
            f"  python -m synbench {values['select']}"
        )
