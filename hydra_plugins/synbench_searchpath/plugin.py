"""Adds the Hydra config groups that SynBench plugin packages ship.

A plugin package declares a package folder of config groups under the
`synbench.conf` entry-point group, for example
`example = synbench_example_generator.conf`; its `generator/example.yaml`
then answers `python -m synbench generator=example`. Only entry-point
metadata is read here (no plugin module is imported), so start-up stays fast.
"""

from __future__ import annotations

from importlib.metadata import entry_points

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin


class SynBenchSearchPathPlugin(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        for ep in sorted(entry_points(group="synbench.conf"), key=lambda e: e.name):
            search_path.append(provider=f"synbench-plugin-{ep.name}", path=f"pkg://{ep.value}")
