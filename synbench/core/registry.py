"""One generic registry for every plugin kind, over Python entry points.

A plugin kind is one base class: a direct subclass of `synbench.core.base.Plugin`
that names its entry-point group (`Generator.entry_point_group ==
"synbench.generators"`). `load(Generator, "dpgen")` reads that group, and
returns the class, checked to subclass the base; nothing here lists the
kinds, so adding one touches no table.

Entry points are read as metadata only; a plugin's module is imported when
the plugin is first used, so start-up stays fast however many are installed.
Built-ins register through the same groups (in setup.cfg) as third parties.
An unknown name lists the available ones and suggests the closest.

Code that is not packaged registers with the `register` decorator in a module
the config's `plugins: [module, ...]` key names (`load_modules` imports them),
as lm-evaluation-harness's `@register_model` with `--include_path` does; such a
plugin is then selected by `_plugin_` exactly as an installed one.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib.util
import inspect
import sys
from dataclasses import dataclass
from functools import lru_cache
from importlib import import_module
from importlib.metadata import EntryPoint, EntryPoints, PackageNotFoundError, distribution, entry_points
from pathlib import Path
from typing import Any, Callable, Collection, Mapping, Sequence, TypeVar

from synbench.core import schema
from synbench.core.base import Plugin
from synbench.core.errors import ConfigError, PluginError, did_you_mean

PLUGIN_KEY = schema.PLUGIN_KEY
LOCAL_PACKAGE = "(plugins: key)"  # the `package` of a plugin registered by a module the config names
# Plugins registered in this process by `register` (modules named by the `plugins:` config key):
# entry-point group -> name -> (info, class).
_LOCAL: dict[str, dict[str, tuple["PluginInfo", type[Plugin]]]] = {}
P = TypeVar("P", bound=Plugin)


@dataclass(frozen=True)
class PluginInfo:
    """A registered plugin: its entry-point group, name, the object path and the package that provides it."""

    group: str
    name: str
    value: str
    package: str
    version: str


def kind_name(base: type[Plugin]) -> str:
    """What messages call a plugin of `base`'s kind: its group's last part, singular (`synbench.lm_backends` ->
    `lm_backend`)."""
    return group_of(base).rpartition(".")[2].removesuffix("s")


def group_of(base: type[Plugin]) -> str:
    """The entry-point group of `base`'s kind; a class that names none is not a plugin kind."""
    group = getattr(base, "entry_point_group", None)
    if not (inspect.isclass(base) and issubclass(base, Plugin) and isinstance(group, str)):
        raise PluginError(
            f"{getattr(base, '__qualname__', base)!r} is not a plugin kind: a kind is a subclass of "
            "synbench.api.Plugin that sets `entry_point_group`"
        )
    return group


def kinds() -> list[type[Plugin]]:
    """Every plugin kind defined in this process (the classes that set their own `entry_point_group`), by group."""
    found: dict[str, type[Plugin]] = {}
    todo = list(Plugin.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if "entry_point_group" in vars(cls):
            found.setdefault(cls.entry_point_group, cls)
    return [found[group] for group in sorted(found)]


def _info(group: str, ep: EntryPoint) -> PluginInfo:
    dist = ep.dist
    return PluginInfo(
        group=group,
        name=ep.name,
        value=ep.value,
        package=dist.metadata["Name"] if dist is not None else "?",
        version=dist.version if dist is not None else "?",
    )


@lru_cache(maxsize=None)
def _scan(group: str, kind: str) -> dict[str, tuple[PluginInfo, EntryPoint]]:
    found: dict[str, tuple[PluginInfo, EntryPoint]] = {}
    for ep in entry_points(group=group):
        info = _info(group, ep)
        if ep.name in found and found[ep.name][0].package != info.package:
            other = found[ep.name][0]
            raise PluginError(
                f"{kind} plugin '{ep.name}' is provided twice: by package '{other.package}' ({other.value}) "
                f"and by package '{info.package}' ({info.value}); uninstall one of them"
            )
        found[ep.name] = (info, ep)
    return dict(sorted(found.items()))


def _all(base: type[Plugin]) -> dict[str, tuple[PluginInfo, EntryPoint | None]]:
    """Installed plugins of `base`'s kind and those registered in this process, by name (a name in both is an
    error)."""
    group, kind = group_of(base), kind_name(base)
    found: dict[str, tuple[PluginInfo, EntryPoint | None]] = dict(_scan(group, kind))
    for name, (info, _) in _LOCAL.get(group, {}).items():
        if name in found:
            raise PluginError(
                f"{kind} plugin '{name}' is registered by module {info.value} (plugins: key) and "
                f"installed by package '{found[name][0].package}'; rename one of them"
            )
        found[name] = (info, None)
    return dict(sorted(found.items()))


def available(base: type[Plugin]) -> dict[str, PluginInfo]:
    """Every plugin of `base`'s kind by name; a name provided by two packages is an error naming both."""
    return {name: info for name, (info, _) in _all(base).items()}


def load(base: type[P], name: str) -> type[P]:
    """The class registered as `name` in `base`'s entry-point group, checked to subclass `base`."""
    plugins = _all(base)
    kind = kind_name(base)
    if name not in plugins:
        listed = ", ".join(plugins) or "(none installed)"
        close = difflib.get_close_matches(name, list(plugins), n=3, cutoff=0.6)
        hint = f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
        raise PluginError(f"unknown {kind} plugin '{name}'{hint}; available: {listed}")
    info, ep = plugins[name]
    if ep is None:
        obj: Any = _LOCAL[info.group][name][1]
    else:
        try:
            obj = ep.load()
        except ImportError as exc:
            raise PluginError(
                f"{kind} plugin '{name}' from package '{info.package}' could not be imported "
                f"({exc}); reinstall that package with its dependencies"
            ) from exc
    _check_class(base, name, obj, info)
    return obj


def _check_class(base: type[Plugin], name: str, obj: Any, info: PluginInfo) -> None:
    """Refuse a plugin that does not subclass its kind's base, or whose class declaration is malformed."""
    if not (inspect.isclass(obj) and issubclass(obj, base)):
        raise PluginError(
            f"{kind_name(base)} plugin '{name}' from package '{info.package}' is {info.value}, which is not "
            f"a subclass of {base.__module__}.{base.__qualname__}; its authors must subclass it"
        )
    obj.check_plugin_class(name)


def register(base: type[Plugin], name: str) -> Callable[[type[P]], type[P]]:
    """Class decorator: register the class as plugin `name` of `base`'s kind in this process.

    For code that is not packaged: a module named by the config's `plugins:`
    key decorates its classes, e.g. `@register(Filter, "short")`, and a
    config then selects it with `_plugin_: short`. A packaged plugin declares
    an entry point instead (no import at start-up).
    """
    group = group_of(base)

    def decorate(cls: type[P]) -> type[P]:
        info = PluginInfo(
            group=group,
            name=name,
            value=f"{getattr(cls, '__module__', '?')}:{getattr(cls, '__qualname__', '?')}",
            package=LOCAL_PACKAGE,
            version="",
        )
        _check_class(base, name, cls, info)
        taken = _LOCAL.setdefault(group, {}).get(name)
        if taken is not None and taken[1] is not cls:
            raise PluginError(
                f"{kind_name(base)} plugin '{name}' is registered twice: by {taken[0].value} and by {info.value}"
            )
        _LOCAL[group][name] = (info, cls)
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


def create(base: type[P], node: Mapping[str, Any], **extra: Any) -> P:
    """Build the plugin of `base`'s kind that a config node names with `_plugin_`, passing its other keys (and
    `extra`) as keywords."""
    cls, params, built = typed_node(base, node, extra)
    if built is not None:
        if built.__class__ is cls and not extra:
            return built  # type: ignore[no-any-return]
        params = schema.as_keywords(built)
    return cls(**params, **extra)  # type: ignore[no-any-return]


def check_node(base: type, node: Mapping[str, Any], extra: Collection[str] = ()) -> None:
    """Refuse a config node as `create` would (no plugin named, unknown keys, a value of the wrong type, its
    options' own checks), without building the plugin: a sweep checks each point's generator before its first job.
    `extra`: the keywords the caller would add."""
    typed_node(base, node, extra)


def typed_node(base: type, node: Mapping[str, Any], extra: Collection[str]) -> tuple[type, dict[str, Any], Any]:
    """The plugin class a node names, its keywords, and its options dataclass built from them (None for a plugin
    typed by its constructor, which gets the keywords as they are)."""
    params = dict(node)
    name = params.pop(PLUGIN_KEY, None)
    kind = kind_name(base)
    if not name:
        raise PluginError(
            f"the {kind} config has no '{PLUGIN_KEY}' key naming its plugin; available: {', '.join(available(base))}"
        )
    cls = load(base, str(name))
    options = schema.options_of(cls, given=extra)
    signature = inspect.signature(cls).parameters
    if options is not None:
        accepted = [f.name for f in dataclasses.fields(options)]
    elif any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.values()):
        accepted = None  # takes any keyword: its plugin checks them
    else:
        accepted = [key for key in signature if key not in extra]
    unknown = sorted(set(params) - set(accepted)) if accepted is not None else []
    if unknown:
        raise PluginError(
            f"{kind} plugin '{name}' does not take {', '.join(map(repr, unknown))}"
            f"{did_you_mean(unknown[0], accepted or [])}; "
            f"it takes: {', '.join(accepted or []) or '(nothing)'}"
        )
    # typed on the plugin's options dataclass (values converted or refused, checks run)
    return cls, params, schema.typed(options, params, kind) if options is not None else None


def built_ins(entry_point_group: str) -> dict[str, str]:
    """SynBench's own plugins of `entry_point_group`, by name: where each class is (`module:name`), as its installed
    distribution declares them (setup.cfg, the one list), read as metadata, which imports none of them."""
    return {ep.name: ep.value for ep in declared_entry_points().select(group=entry_point_group)}


@lru_cache(maxsize=1)
def declared_entry_points() -> EntryPoints:
    """The entry points of SynBench's installed distribution, read once (every plugin kind's built-ins are here)."""
    try:
        return distribution("synbench").entry_points
    except PackageNotFoundError:
        raise PluginError("synbench is not installed, so its plugins are unknown; run `make install`") from None
