"""Each default in one place: a function of synbench that takes a key its package's schema defines takes it
without a default (a required argument, or the config object itself).

The schema (the structured configs in Hydra's ConfigStore and each plugin's options dataclass) holds every default;
a domain function given the same key (`select_targets(lof_contamination=...)`) used to carry a default of its own
that had drifted ("auto" against the schema's 0.1), so a caller that left it out got another audit than the config
described. A copy that agrees today drifts the day one of them changes, so any default is a finding, agreeing or
not. A schema dataclass's *section* is the package that defines it (`AuditOptions` in synbench.audit): every public
function, constructor and method of that package's modules is compared with it. A function another package imports
(`write_report`, called by synbench.tasks) is also compared with that package's section, where a copy of one of its
defaults (equal, not None) is found: a name shared across packages means another key where the values differ.
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
    ("Admission", "addenda"): "a MIMIC admission's addendum notes, not dataset.addenda (the policy for them)",
    ("NoiseSource", "seed"): "privacy.noise_seed (null = secret OS entropy), not the job's seed",
    ("NoiseSource", "secure_mode"): "the unconfigured source (fresh OS entropy, Opacus' ordinary mode) that tests and "
    "plugin kits draw from; a job builds it from privacy.noise_seed and privacy.secure_mode (JobConfig.budget)",
    ("schema_node", "plugin"): "the plugin a node names (its `_plugin_`), not task=new_plugin's scaffold settings",
    ("PendingNode", "plugin"): "the plugin a node names (its `_plugin_`), not task=new_plugin's scaffold settings",
    ("SourceSplits", "eval"): "the eval split a reader read (None: held out of train), not dataset.eval's choice",
    ("SourceSplits", "label_space"): "the label space a release declares (None: from the data), not the key",
    ("Corpus", "multi_label"): "the corpus type's own flag, which each reader sets from what it read; the core's "
    "types do not read the dataset schema",
    ("MetricContext", "encoder"): "the job's encoder as a typed spec, None where no metric needs one; the encoder "
    "group's choice is made in conf/config.yaml, not by this default",
    ("Audit", "mode"): "results.json's audit section: the audit.mode a job wrote (None: not written, as in a file "
    "from before the field), not tracking.mode, the key of synbench.job's WandbOptions",
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
            if derived or issubclass(obj, options):
                sources.add(obj)  # its constructor's keywords are its options' fields: the source itself
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
                fn = fn.__func__ if isinstance(fn, (classmethod, staticmethod)) else fn
                if inspect.isfunction(fn) and not method.startswith("_"):
                    yield f"{name}.{method}", fn


class Repeat(NamedTuple):
    """A function's default for a key of a schema section: a second place for a default the schema holds."""

    package: str  # the section's
    function: str  # a function's name, a class's (its constructor) or Class.method
    key: str
    default: Any
    schema: list[Any]

    def allowed(self) -> bool:
        return any(entry in ALLOWED for entry in self.entries())

    def entries(self) -> tuple[tuple[str, str], ...]:
        """The ALLOWED entries that would excuse it."""
        return (self.package, self.key), (self.function, self.key), (self.function.partition(".")[0], self.key)


def importers(modules: list[types.ModuleType]) -> dict[tuple[str, str], set[str]]:
    """(module, name) of each synbench function or class -> the other packages whose modules import it by name."""
    found: dict[tuple[str, str], set[str]] = defaultdict(set)
    for module in modules:
        for obj in vars(module).values():
            home_module = getattr(obj, "__module__", None) or ""
            if (inspect.isfunction(obj) or inspect.isclass(obj)) and home_module.startswith("synbench."):
                if home_module != module.__name__:
                    found[(home_module, obj.__qualname__)].add(package_of(module.__name__))
    return found


def repeats(modules: list[types.ModuleType], sections: Sections, sources: set[type]) -> list[Repeat]:
    """Every default of a public function of `modules` for a key of its package's schema section, and every copy
    (an equal default, not None) of a key of the section of a package that imports the function."""
    found = []
    readers = importers(modules)
    for module in modules:
        package = package_of(module.__name__)
        keys = sections.get(package, {})
        for name, fn in callables(module, sources):
            try:
                params = [p for p in inspect.signature(fn).parameters.values() if p.default is not p.empty]
            except (TypeError, ValueError):
                continue  # a builtin without a signature
            for p in params:
                if p.name in keys:
                    found.append(Repeat(package, name, p.name, p.default, keys[p.name]))
                    continue
                for reader in sorted(readers.get((module.__name__, name.partition(".")[0]), set()) - {package}):
                    theirs = sections.get(reader, {}).get(p.name, [])
                    if p.default is not None and any(same(p.default, d) for d in theirs):
                        found.append(Repeat(reader, name, p.name, p.default, theirs))
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


def test_no_function_repeats_a_schema_default(scanned: tuple[list[types.ModuleType], Sections, set[type]]) -> None:
    """No function of synbench takes a key of its package's schema with a default of its own."""
    assert [
        f"{r.package}:{r.function}({r.key}={r.default!r}), schema {r.schema}: make it required or take the config"
        for r in repeats(*scanned)
        if not r.allowed()
    ] == []


def plant(source: str, name: str = "synbench.audit.planted") -> types.ModuleType:
    """A module `name` made of `source` (the caller registers it while the scan reads it)."""
    planted = types.ModuleType(name)
    exec(source, planted.__dict__)
    return planted


def test_the_scan_finds_a_drifted_and_a_repeated_default(
    scanned: tuple[list[types.ModuleType], Sections, set[type]],
) -> None:
    """Known answers: the drift the scan was written for (`lof_contamination="auto"` in synbench.audit against the
    schema's 0.1) and a copy that agrees (`confidence=0.95`, AuditOptions's) are found; a required key and another
    package's key are not."""
    _, sections, sources = scanned
    planted = plant(
        "def select(embeddings, *, lof_contamination='auto', far_fraction, lof_neighbors: int): ...\n"
        "def bound(counts, confidence=0.95): ...\n"
        "def elsewhere(lr=1.0): ...  # a generator key: not synbench.audit's\n"
    )
    sys.modules[planted.__name__] = planted
    try:
        assert repeats([planted], sections, sources) == [
            Repeat("synbench.audit", "select", "lof_contamination", "auto", [0.1]),
            Repeat("synbench.audit", "bound", "confidence", 0.95, [0.95]),
        ]
    finally:
        del sys.modules[planted.__name__]


def test_the_scan_finds_a_copy_of_an_importing_packages_default(
    scanned: tuple[list[types.ModuleType], Sections, set[type]],
) -> None:
    """Known answer: a synbench.report function that synbench.tasks imports, with ReportOptions' confidence (0.95)
    as its default, is a copy of synbench.tasks' default; another value under that name is not."""
    _, sections, sources = scanned
    planted = plant(
        "def table(rows, confidence=0.95, title='x'): ...\ndef other(rows, confidence=0.5): ...\n",
        "synbench.report.planted",
    )
    reader = types.ModuleType("synbench.tasks.planted_reader")
    reader.__dict__.update(table=planted.table, other=planted.other)
    for module in (planted, reader):
        sys.modules[module.__name__] = module
    try:
        assert repeats([planted, reader], sections, sources) == [
            Repeat("synbench.tasks", "table", "confidence", 0.95, sections["synbench.tasks"]["confidence"])
        ]
    finally:
        for module in (planted, reader):
            del sys.modules[module.__name__]


def test_every_allowed_exception_is_still_needed(scanned: tuple[list[types.ModuleType], Sections, set[type]]) -> None:
    """The allow-list stays current: each entry excuses a default the scan finds."""
    found = {entry for r in repeats(*scanned) for entry in r.entries()}
    assert [entry for entry in ALLOWED if entry not in found] == []
