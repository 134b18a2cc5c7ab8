"""One small registry for every plugin kind, over Python entry points.

Entry points are read as metadata only; a plugin's module is imported when
the plugin is first used, so start-up stays fast however many are installed.
Built-ins register through the same groups (in setup.cfg) as third parties.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from functools import lru_cache
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Mapping

from synbench.errors import PluginError

KINDS: dict[str, str] = {
    "datasets": "synbench.datasets",
    "generators": "synbench.generators",
    "metrics": "synbench.metrics",
    "attacks": "synbench.attacks",
    "conf": "synbench.conf",
}
PLUGIN_KEY = "_plugin_"


@dataclass(frozen=True)
class PluginInfo:
    """A registered plugin: its name, the object path and the package that provides it."""

    kind: str
    name: str
    value: str
    package: str
    version: str


def _info(kind: str, ep: EntryPoint) -> PluginInfo:
    dist = ep.dist
    return PluginInfo(
        kind=kind,
        name=ep.name,
        value=ep.value,
        package=dist.metadata["Name"] if dist is not None else "?",
        version=dist.version if dist is not None else "?",
    )


@lru_cache(maxsize=None)
def _scan(kind: str) -> dict[str, tuple[PluginInfo, EntryPoint]]:
    if kind not in KINDS:
        raise PluginError(f"unknown plugin kind {kind!r}; kinds are: {', '.join(KINDS)}")
    found: dict[str, tuple[PluginInfo, EntryPoint]] = {}
    for ep in entry_points(group=KINDS[kind]):
        info = _info(kind, ep)
        if ep.name in found and found[ep.name][0].package != info.package:
            other = found[ep.name][0]
            raise PluginError(
                f"{kind} plugin '{ep.name}' is provided twice: by package '{other.package}' ({other.value}) "
                f"and by package '{info.package}' ({info.value}); uninstall one of them"
            )
        found[ep.name] = (info, ep)
    return dict(sorted(found.items()))


def available(kind: str) -> dict[str, PluginInfo]:
    """Every plugin of `kind` by name; a name provided by two packages is an error naming both."""
    return {name: info for name, (info, _) in _scan(kind).items()}


def load(kind: str, name: str) -> Any:
    """The object (usually a class) registered as `name` under `kind`."""
    plugins = _scan(kind)
    if name not in plugins:
        listed = ", ".join(plugins) or "(none installed)"
        raise PluginError(f"unknown {kind[:-1]} plugin '{name}'; available: {listed}")
    info, ep = plugins[name]
    try:
        return ep.load()
    except ImportError as exc:
        raise PluginError(
            f"{kind[:-1]} plugin '{name}' from package '{info.package}' could not be imported "
            f"({exc}); reinstall that package with its dependencies"
        ) from exc


def create(kind: str, node: Mapping[str, Any], **extra: Any) -> Any:
    """Build the plugin a config node names with `_plugin_`, passing its other keys as keywords."""
    params = dict(node)
    name = params.pop(PLUGIN_KEY, None)
    if not name:
        raise PluginError(f"the {kind[:-1]} config has no '{PLUGIN_KEY}' key naming its plugin; available: {', '.join(available(kind))}")
    cls = load(kind, str(name))
    params.update(extra)
    accepted = inspect.signature(cls).parameters
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted.values()):
        unknown = sorted(set(params) - set(accepted))
        if unknown:
            raise PluginError(
                f"{kind[:-1]} plugin '{name}' does not take {', '.join(map(repr, unknown))}; "
                f"it takes: {', '.join(accepted) or '(nothing)'}"
            )
    return cls(**params)
