"""One small registry for every plugin kind, over Python entry points.

Entry points are read as metadata only; a plugin's module is imported when
the plugin is first used, so start-up stays fast however many are installed.
Built-ins register through the same groups (in setup.cfg) as third parties.
Loading checks that a plugin subclasses its kind's base class; an unknown
name lists the available ones and suggests the closest.
"""
from __future__ import annotations

import difflib
import inspect
from dataclasses import dataclass
from functools import lru_cache
from importlib import import_module
from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING, Any, Literal, Mapping, overload

from synbench.errors import PluginError

if TYPE_CHECKING:
    from synbench.base import Attack, Classifier, DatasetLoader, Generator, Metric, Tracker

KINDS: dict[str, str] = {
    "datasets": "synbench.datasets",
    "generators": "synbench.generators",
    "metrics": "synbench.metrics",
    "attacks": "synbench.attacks",
    "classifiers": "synbench.classifiers",
    "trackers": "synbench.trackers",
    "conf": "synbench.conf",
}
# The base class each kind's plugins must subclass (`conf` entries are config packages, not classes).
BASES: dict[str, str] = {
    "datasets": "DatasetLoader",
    "generators": "Generator",
    "metrics": "Metric",
    "attacks": "Attack",
    "classifiers": "Classifier",
    "trackers": "Tracker",
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
    """The object registered as `name` under `kind`: for every kind but `conf`, a subclass of the kind's base."""
    plugins = _scan(kind)
    if name not in plugins:
        listed = ", ".join(plugins) or "(none installed)"
        close = difflib.get_close_matches(name, list(plugins), n=3, cutoff=0.6)
        hint = f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
        raise PluginError(f"unknown {kind[:-1]} plugin '{name}'{hint}; available: {listed}")
    info, ep = plugins[name]
    try:
        obj = ep.load()
    except ImportError as exc:
        raise PluginError(
            f"{kind[:-1]} plugin '{name}' from package '{info.package}' could not be imported "
            f"({exc}); reinstall that package with its dependencies"
        ) from exc
    if kind in BASES:
        base = getattr(import_module("synbench.base"), BASES[kind])
        if not (inspect.isclass(obj) and issubclass(obj, base)):
            raise PluginError(f"{kind[:-1]} plugin '{name}' from package '{info.package}' is {info.value}, which is not "
                              f"a subclass of synbench.base.{base.__name__}; its authors must subclass it")
        check = getattr(obj, "check_plugin_class", None)
        if check is not None:
            check(name)
    return obj


@overload
def create(kind: Literal["datasets"], node: Mapping[str, Any], **extra: Any) -> "DatasetLoader": ...
@overload
def create(kind: Literal["generators"], node: Mapping[str, Any], **extra: Any) -> "Generator": ...
@overload
def create(kind: Literal["metrics"], node: Mapping[str, Any], **extra: Any) -> "Metric": ...
@overload
def create(kind: Literal["attacks"], node: Mapping[str, Any], **extra: Any) -> "Attack": ...
@overload
def create(kind: Literal["classifiers"], node: Mapping[str, Any], **extra: Any) -> "Classifier": ...
@overload
def create(kind: Literal["trackers"], node: Mapping[str, Any], **extra: Any) -> "Tracker": ...
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
