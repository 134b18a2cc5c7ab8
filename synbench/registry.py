"""One small registry for every plugin kind, over Python entry points.

Entry points are read as metadata only; a plugin's module is imported when
the plugin is first used, so start-up stays fast however many are installed.
Built-ins register through the same groups (in setup.cfg) as third parties.
Loading checks that a plugin subclasses its kind's base class; an unknown
name lists the available ones and suggests the closest.

Code that is not packaged registers with the `register` decorator in a module
the config's `plugins: [module, ...]` key names (`load_modules` imports them),
as lm-evaluation-harness's `@register_model` with `--include_path` does; such a
plugin is then selected by `_plugin_` exactly as an installed one.
"""

from __future__ import annotations

import difflib
import importlib.util
import inspect
import sys
from dataclasses import dataclass
from functools import lru_cache
from importlib import import_module
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal, Mapping, Sequence, TypeVar, overload

from synbench.errors import ConfigError, PluginError

if TYPE_CHECKING:
    from synbench.base import Attack, Classifier, DatasetLoader, Generator, Metric, ModelAttack, Tracker
    from synbench.filters.base import Filter
    from synbench.lm.backends import LMBackend

KINDS: dict[str, str] = {
    "datasets": "synbench.datasets",
    "generators": "synbench.generators",
    "metrics": "synbench.metrics",
    "attacks": "synbench.attacks",
    "model_attacks": "synbench.model_attacks",
    "classifiers": "synbench.classifiers",
    "trackers": "synbench.trackers",
    "filters": "synbench.filters",
    "lm_backends": "synbench.lm_backends",
    "tasks": "synbench.tasks",
    "conf": "synbench.conf",
}
# The base class each kind's plugins must subclass, as `module:Class` (`conf` entries are config packages, not
# classes). Imported only when a plugin of the kind is loaded, so the registry depends on no upper layer.
BASES: dict[str, str] = {
    "datasets": "synbench.base:DatasetLoader",
    "generators": "synbench.base:Generator",
    "metrics": "synbench.base:Metric",
    "attacks": "synbench.base:Attack",
    "model_attacks": "synbench.base:ModelAttack",
    "classifiers": "synbench.base:Classifier",
    "trackers": "synbench.base:Tracker",
    "filters": "synbench.filters.base:Filter",
    "lm_backends": "synbench.lm.backends:LMBackend",
    "tasks": "synbench.tasks.base:Task",
}
PLUGIN_KEY = "_plugin_"
LOCAL_PACKAGE = "(plugins: key)"  # the `package` of a plugin registered by a module the config names
# Plugins registered in this process by `register` (modules named by the `plugins:` config key): kind -> name -> class.
_LOCAL: dict[str, dict[str, tuple["PluginInfo", Any]]] = {}
T = TypeVar("T")


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


def _all(kind: str) -> dict[str, tuple[PluginInfo, EntryPoint | None]]:
    """Installed plugins of `kind` and those registered in this process, by name (a name in both is an error)."""
    found: dict[str, tuple[PluginInfo, EntryPoint | None]] = dict(_scan(kind))
    for name, (info, _) in _LOCAL.get(kind, {}).items():
        if name in found:
            raise PluginError(
                f"{kind[:-1]} plugin '{name}' is registered by module {info.value} (plugins: key) and "
                f"installed by package '{found[name][0].package}'; rename one of them"
            )
        found[name] = (info, None)
    return dict(sorted(found.items()))


def available(kind: str) -> dict[str, PluginInfo]:
    """Every plugin of `kind` by name; a name provided by two packages is an error naming both."""
    return {name: info for name, (info, _) in _all(kind).items()}


def base_class(kind: str) -> type:
    """The base class plugins of `kind` subclass (imported here, on first use)."""
    module, _, name = BASES[kind].partition(":")
    return getattr(import_module(module), name)


def load(kind: str, name: str) -> Any:
    """The object registered as `name` under `kind`: for every kind but `conf`, a subclass of the kind's base."""
    plugins = _all(kind)
    if name not in plugins:
        listed = ", ".join(plugins) or "(none installed)"
        close = difflib.get_close_matches(name, list(plugins), n=3, cutoff=0.6)
        hint = f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
        raise PluginError(f"unknown {kind[:-1]} plugin '{name}'{hint}; available: {listed}")
    info, ep = plugins[name]
    if ep is None:
        return _LOCAL[kind][name][1]  # checked by `register` when its module was imported
    try:
        obj = ep.load()
    except ImportError as exc:
        raise PluginError(
            f"{kind[:-1]} plugin '{name}' from package '{info.package}' could not be imported "
            f"({exc}); reinstall that package with its dependencies"
        ) from exc
    _check_class(kind, name, obj, info)
    return obj


def _check_class(kind: str, name: str, obj: Any, info: PluginInfo) -> None:
    """Refuse a plugin that does not subclass its kind's base, or whose class declaration is malformed."""
    if kind not in BASES:
        return
    base = base_class(kind)
    if not (inspect.isclass(obj) and issubclass(obj, base)):
        raise PluginError(
            f"{kind[:-1]} plugin '{name}' from package '{info.package}' is {info.value}, which is not "
            f"a subclass of {base.__module__}.{base.__name__}; its authors must subclass it"
        )
    check = getattr(obj, "check_plugin_class", None)
    if check is not None:
        check(name)


def register(kind: str, name: str) -> Callable[[T], T]:
    """Class decorator: register the class as plugin `name` of `kind` in this process.

    For code that is not packaged: a module named by the config's `plugins:`
    key decorates its classes, e.g. `@register("filters", "short")`, and a
    config then selects it with `_plugin_: short`. A packaged plugin declares
    an entry point instead (no import at start-up).
    """
    if kind not in BASES:
        raise PluginError(f"plugins of kind {kind!r} cannot be registered; kinds are: {', '.join(BASES)}")

    def decorate(cls: T) -> T:
        info = PluginInfo(
            kind=kind,
            name=name,
            value=f"{getattr(cls, '__module__', '?')}:{getattr(cls, '__qualname__', '?')}",
            package=LOCAL_PACKAGE,
            version="",
        )
        _check_class(kind, name, cls, info)
        taken = _LOCAL.setdefault(kind, {}).get(name)
        if taken is not None and taken[1] is not cls:
            raise PluginError(
                f"{kind[:-1]} plugin '{name}' is registered twice: by {taken[0].value} and by {info.value}"
            )
        _LOCAL[kind][name] = (info, cls)
        return cls

    return decorate


def load_modules(modules: Sequence[str], where: str = "plugins") -> None:
    """Import each module the config's `plugins:` key names, so the plugins it `register`s become selectable.

    An entry is a dotted module name on `sys.path` (e.g. `my_plugins.filters`)
    or the path of a `.py` file; a module already imported is not run again.
    """
    for i, entry in enumerate(modules):
        entry = str(entry)
        try:
            if entry.endswith(".py"):
                path = Path(entry).expanduser().resolve()
                if not path.is_file():
                    raise ConfigError(f"{where}[{i}]: the file {path} does not exist; give a .py path or a module name")
                name = f"_synbench_plugins_{path.stem}"
                if name not in sys.modules:
                    spec = importlib.util.spec_from_file_location(name, path)
                    assert spec is not None and spec.loader is not None
                    module = importlib.util.module_from_spec(spec)
                    sys.modules[name] = module
                    try:
                        spec.loader.exec_module(module)
                    except BaseException:
                        del sys.modules[name]  # a failed import leaves no half-run module behind
                        raise
            else:
                import_module(entry)
        except ImportError as exc:
            raise ConfigError(
                f"{where}[{i}]: module {entry!r} could not be imported ({exc}); put its folder on "
                "PYTHONPATH or give the path of its .py file"
            ) from exc


@overload
def create(kind: Literal["datasets"], node: Mapping[str, Any], **extra: Any) -> "DatasetLoader": ...
@overload
def create(kind: Literal["generators"], node: Mapping[str, Any], **extra: Any) -> "Generator": ...
@overload
def create(kind: Literal["metrics"], node: Mapping[str, Any], **extra: Any) -> "Metric": ...
@overload
def create(kind: Literal["attacks"], node: Mapping[str, Any], **extra: Any) -> "Attack": ...
@overload
def create(kind: Literal["model_attacks"], node: Mapping[str, Any], **extra: Any) -> "ModelAttack": ...
@overload
def create(kind: Literal["filters"], node: Mapping[str, Any], **extra: Any) -> "Filter": ...
@overload
def create(kind: Literal["lm_backends"], node: Mapping[str, Any], **extra: Any) -> "LMBackend": ...
@overload
def create(kind: Literal["classifiers"], node: Mapping[str, Any], **extra: Any) -> "Classifier": ...
@overload
def create(kind: Literal["trackers"], node: Mapping[str, Any], **extra: Any) -> "Tracker": ...
def create(kind: str, node: Mapping[str, Any], **extra: Any) -> Any:
    """Build the plugin a config node names with `_plugin_`, passing its other keys as keywords."""
    params = dict(node)
    name = params.pop(PLUGIN_KEY, None)
    if not name:
        raise PluginError(
            f"the {kind[:-1]} config has no '{PLUGIN_KEY}' key naming its plugin; "
            f"available: {', '.join(available(kind))}"
        )
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
