"""One default per key (issue 52): a function of synbench that takes a key its package's schema defines takes the
schema's default for it, or none.

The schema (the structured configs in Hydra's ConfigStore and each plugin's options dataclass) holds every default;
a domain function given the same key (`select_targets(lof_contamination=...)`) used to carry a default of its own
that had drifted ("auto" against the schema's 0.1), so a caller that left it out got another audit than the config
described. A schema dataclass's *section* is the package that defines it (`AuditConfig` in synbench.audit): every
public function, constructor and method of that package's modules is compared with it.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import sys
import types
from collections import defaultdict
from collections.abc import Iterator
from typing import Any, NamedTuple

import pytest
from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

import synbench
import synbench.conf  # noqa: F401  (registers the schema nodes)
from synbench.core import schema
from synbench.core.base import Plugin

# (where, parameter): why a parameter of that name there is not the schema's key of the same name; `where` is a
# package (every function in it) or a function's or class's name
ALLOWED = {
    ("synbench.audit", "delta"): "the statistics take a resolved delta (0.0: pure DP); audit.delta's null is a rule, "
    "the job's delta, that task=audit resolves before it calls them",
    ("make_design", "n_canaries"): "the canaries the design draws: AuditConfig.canaries, 0 with audit.targets=outliers",
    ("Admission", "addenda"): "a MIMIC admission's addendum notes, not dataset.addenda (the policy for them)",
    ("NoiseSource", "seed"): "privacy.noise_seed (null = secret OS entropy), not the job's seed",
}

Sections = dict[str, dict[str, list[Any]]]  # package -> key -> the schema's defaults for it there


def synbench_modules() -> list[types.ModuleType]:
    """Every module of the synbench package (the plugin scaffold's templates are text, not modules)."""
    names = [m.name for m in pkgutil.walk_packages(synbench.__path__, "synbench.") if ".templates" not in m.name]
    return [importlib.import_module(name) for name in names if not name.endswith("__main__")]


def package_of(module_name: str) -> str:
    """The package a module belongs to (a package's `__init__` belongs to the package itself)."""
    module = sys.modules[module_name]
    return module_name if hasattr(module, "__path__") else module_name.rpartition(".")[0]


def field_default(f: dataclasses.Field[Any]) -> Any:
    """A dataclass field's default (its factory's value), or MISSING where the field is required."""
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return f.default


def home(options: type) -> str | None:
    """The package that defines a dataclass; None for one made on the fly (a plugin's options derived from its
    constructor, a tracker's options joined with the core's keys), whose fields are its bases' or its plugin's."""
    module = sys.modules.get(options.__module__)
    return package_of(options.__module__) if getattr(module, options.__qualname__, None) is options else None


def add_section(options: type, package: str | None, sections: Sections, seen: set[type]) -> None:
    """The defaults of `options` as keys of `package`'s section, and those of its dataclass bases and nested
    dataclasses, each in its own package."""
    if options in seen:
        return
    seen.add(options)
    for base in options.__mro__[1:]:
        if dataclasses.is_dataclass(base):
            add_section(base, home(base), sections, seen)
    if package is None or package.partition(".")[0] != synbench.__name__:
        return  # made on the fly (its bases above carry its fields), or one of Hydra's own nodes
    for f in dataclasses.fields(options):
        default = field_default(f)
        if default is dataclasses.MISSING or default == "???":
            continue  # required: no default to disagree with
        if isinstance(default, str) and default.startswith("${"):
            continue  # an interpolation into another key, whose default is the one that counts
        sections[package].setdefault(f.name, []).append(default)
        if dataclasses.is_dataclass(default):
            add_section(type(default), home(type(default)), sections, seen)


def schema_sections(modules: list[types.ModuleType]) -> tuple[Sections, set[type]]:
    """Each package's schema defaults, and the schema's dataclasses and plugin classes (the sources, not checked).

    The schema is the ConfigStore's structured nodes and every plugin's options dataclass; a plugin typed by its
    constructor's keywords has its section in its own package, and its constructor is the source.
    """
    sections: Sections = defaultdict(dict)
    seen: set[type] = set()
    sources: set[type] = set()
    for obj in (o for m in modules for o in vars(m).values() if inspect.isclass(o) and o.__module__ == m.__name__):
        options = schema.options_of(obj) if issubclass(obj, Plugin) and not inspect.isabstract(obj) else None
        if options is not None:
            derived = home(options) is None  # from the constructor's keywords: the plugin's package holds them
            add_section(options, package_of(obj.__module__) if derived else home(options), sections, seen)
            if derived:
                sources.add(obj)
    for node in stored_nodes(ConfigStore.instance().repo):
        options = OmegaConf.get_type(node)
        if options is not None and dataclasses.is_dataclass(options):
            add_section(options, home(options), sections, seen)
    return sections, sources | seen


def stored_nodes(repo: dict[str, Any]) -> Iterator[Any]:
    """The config nodes of a ConfigStore repository (a tree of dicts of ConfigNodes), each looked up as Hydra does,
    so a lazily registered node is built (schema.LazyGroup)."""
    for entry in (repo[key] for key in repo):
        if isinstance(entry, dict):
            yield from stored_nodes(entry)
        else:
            yield entry.node


def callables(module: types.ModuleType, sources: set[type]) -> Iterator[tuple[str, Any]]:
    """A module's public functions, and the constructors and public methods of its classes (schema classes left
    out: they are where the defaults live)."""
    for name, obj in vars(module).items():
        if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
            continue
        if inspect.isfunction(obj):
            yield name, obj
        elif inspect.isclass(obj) and obj not in sources:
            yield name, obj
            for method, fn in vars(obj).items():
                if inspect.isfunction(fn) and not method.startswith("_"):
                    yield f"{name}.{method}", fn


class Drift(NamedTuple):
    """A function default that is none of its package's schema defaults for the same key."""

    package: str
    function: str  # a function's name, a class's (its constructor) or Class.method
    key: str
    default: Any
    schema: list[Any]

    def allowed(self) -> bool:
        return (self.package, self.key) in ALLOWED or (self.function, self.key) in ALLOWED


def drifts(modules: list[types.ModuleType], sections: Sections, sources: set[type]) -> list[Drift]:
    """Every default of a public function of `modules` that disagrees with its package's schema for the same key."""
    found = []
    for module in modules:
        package = package_of(module.__name__)
        keys = sections.get(package, {})
        for name, fn in callables(module, sources):
            try:
                params = inspect.signature(fn).parameters.values()
            except (TypeError, ValueError):
                continue  # a builtin without a signature
            for p in params:
                if p.default is not p.empty and p.name in keys and not any(same(p.default, d) for d in keys[p.name]):
                    found.append(Drift(package, name, p.name, p.default, keys[p.name]))
    return found


def same(value: Any, default: Any) -> bool:
    """A function's default equals the schema's (a tuple default equals the schema's list of the same values)."""
    if isinstance(value, (list, tuple)) and isinstance(default, (list, tuple)):
        return list(value) == list(default)
    if isinstance(value, bool) or isinstance(default, bool):
        return value is default  # True == 1: a bool is not a count
    return bool(value == default)


@pytest.fixture(scope="module")
def scanned() -> tuple[list[types.ModuleType], Sections, set[type]]:
    modules = synbench_modules()
    return (modules, *schema_sections(modules))


def test_every_function_default_is_the_schemas(scanned: tuple[list[types.ModuleType], Sections, set[type]]) -> None:
    """No function of synbench takes a key of its package's schema with a default of its own."""
    assert [
        f"{d.package}:{d.function}({d.key}={d.default!r}), schema {d.schema}"
        for d in drifts(*scanned)
        if not d.allowed()
    ] == []


def test_the_scan_finds_a_drifted_default(scanned: tuple[list[types.ModuleType], Sections, set[type]]) -> None:
    """A known answer: the drift this test was written for (`lof_contamination="auto"` in synbench.audit against
    the schema's 0.1) is found; an agreeing default, a required key and another package's key are not."""
    _, sections, sources = scanned
    planted = types.ModuleType("synbench.audit.planted")
    exec(
        "def select(embeddings, *, lof_contamination='auto', far_fraction=0.01, lof_neighbors: int): ...\n"
        "def elsewhere(lr=1.0): ...  # a generator key: not synbench.audit's\n",
        planted.__dict__,
    )
    sys.modules[planted.__name__] = planted
    try:
        assert drifts([planted], sections, sources) == [
            Drift("synbench.audit", "select", "lof_contamination", "auto", [0.1])
        ]
    finally:
        del sys.modules[planted.__name__]


def test_every_allowed_exception_is_still_needed(scanned: tuple[list[types.ModuleType], Sections, set[type]]) -> None:
    """The allow-list stays short and current: each entry excuses a default the scan finds."""
    found = drifts(*scanned)
    assert [
        entry for entry in ALLOWED if not any(entry in ((d.package, d.key), (d.function, d.key)) for d in found)
    ] == []
