"""Adds the Hydra config groups that SynBench plugin packages ship beside their classes.

A plugin package declares one entry point per class (for example
`example = synbench_example_generator.generator:DPUnigramGenerator` in
`synbench.generators`) and ships its config groups in a `conf` folder of the
package that holds the class (`synbench_example_generator/conf/generator/
example.yaml`), which then answers `python -m synbench generator=example`.
Every `synbench.*` entry-point group is read, so a new plugin kind needs
nothing here. Only entry-point metadata and the file system are read (no
plugin module is imported), so start-up stays fast.
"""

from __future__ import annotations

import os
import sys
from functools import lru_cache
from importlib.metadata import entry_points
from importlib.util import find_spec
from pathlib import Path

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin

GROUP_PREFIX = "synbench."  # the entry-point groups of SynBench's plugin kinds (each base class names its own)
CONF_FOLDER = "conf"  # beside a plugin's class: the Hydra config groups of its package
CORE = "synbench"  # the built-ins' configs are the app's own config path, not a plugin's


def package_folder(module: str) -> Path | None:
    """The folder of the package holding `module` (the module itself when it is a package), importing nothing new;
    None for a top-level module file or a module that is not installed."""
    parent = module.rpartition(".")[0]
    if parent in sys.modules:  # its own spec (which honours a package_dir mapping) imports nothing new
        spec = find_spec(module)
        if spec is not None and spec.submodule_search_locations:
            return Path(next(iter(spec.submodule_search_locations)))
        return Path(spec.origin).parent if spec is not None and spec.origin else None
    top, *rest = module.split(".")
    spec = find_spec(top)
    if spec is None or not spec.submodule_search_locations:
        return None  # a top-level module file has no package to ship a conf folder in
    for root in spec.submodule_search_locations:
        folder = Path(root).joinpath(*rest)
        if folder.is_dir():
            return folder
        if folder.with_suffix(".py").is_file():
            return folder.parent
    return None


def config_folders() -> dict[Path, str]:
    """Each installed plugin package's config folder (the `conf` folder beside a class it registers), with the
    distribution that provides it, in a stable order."""
    return dict(installed_config_folders(installed_state()))


def installed_state() -> tuple[tuple[str, int], ...]:
    """Each sys.path folder with the time it last changed: a package installed or removed changes its folder's."""
    return tuple((entry, folder_mtime(entry)) for entry in sys.path)


def folder_mtime(entry: str) -> int:
    try:
        return os.stat(entry or ".").st_mtime_ns
    except OSError:
        return -1


@lru_cache(maxsize=4)
def installed_config_folders(state: tuple[tuple[str, int], ...]) -> tuple[tuple[Path, str], ...]:
    """`config_folders` for the packages installed as `state` (`installed_state`) says: read once while nothing is
    installed or removed (Hydra asks on each config loader it makes, and the app's checks ask again)."""
    del state  # the cache's key
    found: dict[Path, str] = {}
    installed = entry_points()
    for group in sorted(g for g in installed.groups if g.startswith(GROUP_PREFIX)):
        for ep in sorted(installed.select(group=group), key=lambda e: e.name):
            if ep.module.split(".")[0] == CORE:
                continue
            folder = package_folder(ep.module)
            if folder is not None and (folder / CONF_FOLDER).is_dir():
                found.setdefault(folder / CONF_FOLDER, ep.dist.name if ep.dist is not None else ep.module)
    return tuple(found.items())


class SynBenchSearchPathPlugin(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        for folder, dist in config_folders().items():
            search_path.append(provider=f"synbench-plugin-{dist}", path=f"file://{folder}")
