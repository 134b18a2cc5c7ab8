"""The one config schema: structured configs (dataclasses) in Hydra's ConfigStore, so OmegaConf types every value.

The top of the schema is `SynBenchConfig` (registered as `synbench_schema`,
the first entry of conf/config.yaml's defaults list). Each plugin declares its
options as a dataclass (`options_of`: the class's `options`, or the class
itself when it is a dataclass, as the dataset loaders are); a built-in's is
registered as `schema/<group>/<name>`, which its group YAML names first in
its defaults list (`- /schema/generator/dpgen@_here_`), so the YAML holds only
the values that differ and Hydra types each value, command line included, as
it merges. A bool then takes true/false (yes/no, on/off) and nothing else
(OmegaConf alone would also take y/n and any integer, 2 as true:
`check_bool` refuses those), a list is a list, an int an int. `typed`
applies the same merge to any plugin node when the plugin is built, so a
third-party plugin's options are typed through its class with no change to
the core (docs/config.md).

Checks a type cannot express (ranges, choices, keys that depend on each
other) live in each dataclass's `__post_init__`, one place per setting.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import importlib.util
import inspect
import sys
import typing
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Collection, List, Mapping, Optional, Sequence, TypeVar

from hydra.core.config_store import ConfigNode, ConfigStore
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import MISSING, BooleanNode, DictConfig, ListConfig, Node, OmegaConf, open_dict
from omegaconf.errors import OmegaConfBaseException

from synbench.core.errors import ConfigError, PluginError

PLUGIN_KEY = "_plugin_"
SCHEMA_GROUP = "schema"  # ConfigStore group of the plugins' schema nodes: schema/<config group>/<plugin name>
TOP_SCHEMA = "synbench_schema"
T = TypeVar("T")
BOOL_WORDS = frozenset({"true", "false", "yes", "no", "on", "off"})  # what a bool takes (docs/config.md)


@dataclass
class PrivacyOptions:
    """`privacy.*`: where privacy noise comes from and the guards a user may lift (conf/config.yaml explains each)."""

    # null = privacy noise from OS entropy (secret). An int reproduces the noise for research replication; results
    # then say "noise": "seeded" and the output is NOT DP against anyone with the seed
    noise_seed: Optional[int] = None
    secure_mode: bool = False  # DP-SGD noise robust to floating-point attacks (Opacus' secure_mode sampling); slower
    allow_large_delta: bool = False  # true: accept a delta >= 1/N (refused by default: a whole document could leak)

    def __post_init__(self) -> None:
        if self.noise_seed is not None and self.noise_seed < 0:
            raise ConfigError(
                f"privacy.noise_seed={self.noise_seed} must be a non-negative integer, or null for secret noise"
            )


@dataclass
class TrackingOptions:
    """Keys every `tracking` node has besides its plugin's: whether non-DP statistics of private data are released."""

    # true releases non-DP statistics of private data (train loss, batch sizes, token counts) and marks the job
    log_private_stats: bool = False


@dataclass
class SynBenchConfig:
    """The top-level config: the groups a job picks (each node typed by its plugin's schema) and the job's values."""

    dataset: Any = MISSING
    generator: Any = MISSING
    model: Any = None
    encoder: Any = None
    classifier: Any = None
    metrics: Any = field(default_factory=dict)
    attack: Any = None
    filter: Any = None
    task: Any = MISSING
    tracking: Any = None
    eps: float = 4.0  # privacy budget; inf = the same pipeline without DP
    # null = 1/N^2 for the private set size N, the same for every generator; or a number in (0, 1), or the rule
    # "1/(N ln N)" (AUG-PE's, for paper replication)
    delta: Any = None  # checked by privacy.check_delta_setting (a number, null or a rule: no one OmegaConf type)
    accountant: str = "prv"  # prv | rdp | gdp (generators that train with DP-SGD use prv or rdp)
    privacy: PrivacyOptions = field(default_factory=PrivacyOptions)
    seed: int = 0  # everything that is not a privacy mechanism: splits, audit design, weight init, decoding
    # unpackaged plugins: modules (dotted names on PYTHONPATH, or .py paths) whose classes decorated with
    # synbench.api.register join the registry, e.g. plugins=[./my_filters.py] filter._plugin_=short
    plugins: List[str] = field(default_factory=list)
    sweep: str = "default"  # names the output folder and the W&B group of a sweep
    output_root: str = "outputs"
    cache_dir: str = "${output_root}/cache"  # per-corpus embedding caches (local disk only)
    # a job locks its folder; the same job started again waits this long for it, then fails naming its pid
    lock_wait_s: float = 10.0
    # the paper experiments' folder of datasets: required (`???`) where a dataset's paths name it
    data_root: Optional[str] = MISSING
    # the options of the tasks that have a section of their own (typed by schema/<section>, which the task's YAML
    # names in its defaults list); null for the other tasks
    audit: Any = None
    model_audit: Any = None
    model_attacks: Any = None  # task=model_audit's attacks (the model_attacks group)
    contamination: Any = None
    plugin: Any = None  # task=new_plugin's scaffold settings


def log_private_stats(tracking: Mapping[str, Any] | None) -> bool:
    """`tracking.log_private_stats` as a bool, whichever tracker the node is for (a third party's is typed here)."""
    value = (tracking or {}).get("log_private_stats", False)
    return typed(TrackingOptions, {"log_private_stats": value}, "tracking").log_private_stats


def options_of(cls: type, given: Collection[str] = ()) -> type | None:
    """The dataclass a plugin class declares its options with: `cls.options`, `cls` itself if it is a dataclass,
    or one derived from its constructor's typed keywords (less `given`, the keywords the core passes itself).

    The derived one types a plugin that declares nothing (a third party's
    `def __init__(self, steps: int = 10, greedy: bool = False)`), so every
    plugin's values are converted or refused the same way. A constructor that
    takes `**kwargs` declares no schema: its plugin gets its node as written.
    """
    options = getattr(cls, "options", None)
    if options is None and dataclasses.is_dataclass(cls):
        options = cls
    if isinstance(options, type) and dataclasses.is_dataclass(options):
        return options
    return signature_options(cls, frozenset(given))


@lru_cache(maxsize=None)
def signature_options(cls: type, given: frozenset[str]) -> type | None:
    """A dataclass of the keywords of `cls(...)`: each typed by its annotation (one OmegaConf cannot type: Any), a
    keyword without a default required."""
    params = inspect.signature(cls).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    try:
        hints = typing.get_type_hints(cls.__init__)
    except (NameError, TypeError):
        hints = {}
    fields = [
        (p.name, typeable(hints.get(p.name, Any)), field(default=MISSING if p.default is p.empty else p.default))
        for p in params
        if p.name not in given and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]
    return dataclasses.make_dataclass(f"{cls.__name__}Options", fields)


def typeable(hint: Any) -> Any:
    """`hint` if OmegaConf can type a field with it (bool, int, float, str, list, dict, Optional, dataclasses), else
    Any (a Mapping or Sequence annotation, a class of the plugin's own)."""
    try:
        # probed with no value: a None default would refuse every non-Optional hint and type nothing
        OmegaConf.structured(dataclasses.make_dataclass("Probe", [("value", hint, field(default=MISSING))]))
    except (OmegaConfBaseException, TypeError, ValueError):
        return Any
    return hint


def schema_node(options: type, plugin: str | None = None) -> DictConfig:
    """The typed node of an options dataclass (writable even when the dataclass is frozen), with `_plugin_` set."""
    node = OmegaConf.structured(options)
    writable(node)
    if plugin is not None:
        with open_dict(node):
            node[PLUGIN_KEY] = plugin
    return node


def writable(node: Any) -> None:
    """Clear the read-only flag a frozen dataclass puts on its node and on each nested one, so values merge in."""
    if isinstance(node, (DictConfig, ListConfig)):
        OmegaConf.set_readonly(node, False)
        for key in range(len(node)) if isinstance(node, ListConfig) else node.keys():
            writable(node._get_node(key))


def typed(options: type[T], node: Mapping[str, Any], where: str) -> T:
    """`node` merged onto the schema of `options` and built: each value converted to its field's type, and the
    dataclass's own checks run, or refused in one line. `_plugin_` is not an option and is left out."""
    plain = OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node
    # plain values: a nested node Hydra typed by another schema (the utility metric's `classifier: ${classifier}`)
    # stays a mapping, not an instance of that schema's dataclass
    values = {
        k: OmegaConf.to_container(v, resolve=True) if OmegaConf.is_config(v) else v
        for k, v in plain.items()
        if k != PLUGIN_KEY
    }
    for name in bool_fields(options):
        if values.get(name) is not None:
            check_bool(values[name], f"{where}.{name}")
    defaults = schema_node(options)
    check_lists(OmegaConf.to_container(defaults), values, where)
    try:
        built = OmegaConf.to_object(OmegaConf.merge(defaults, values))
    except OmegaConfBaseException as exc:
        raise config_error(exc, where) from None
    assert isinstance(built, options)
    return built


def check_lists(default: Any, given: Any, key: str) -> None:
    """A value where the schema's default holds a list is a list: inside a field typed by a plain dict (DP-Gen's
    `lora`) OmegaConf types nothing, and `generator.lora.target_modules=q_proj` would reach the plugin a string."""
    if isinstance(default, list) and given is not None and not isinstance(given, list):
        raise ConfigError(f"{key}={given!r} is not a list; write it as one, e.g. {key}=[{given}]")
    if isinstance(default, dict) and isinstance(given, dict):
        for name, value in given.items():
            if name in default:
                check_lists(default[name], value, f"{key}.{name}")


def check_bool(value: Any, key: str) -> None:
    """A bool as written: true/false, yes/no or on/off (any case), nothing else; OmegaConf would read y/n and any
    integer too (`privacy.secure_mode=2` as true)."""
    if not isinstance(value, bool) and not (isinstance(value, str) and value.lower() in BOOL_WORDS):
        raise ConfigError(f"{key}={value!r} is not a bool; write true or false (or yes/no, on/off)")


def bool_fields(options: type) -> list[str]:
    """The fields of an options dataclass typed bool (or Optional[bool])."""
    try:
        hints = typing.get_type_hints(options)
    except (NameError, TypeError):
        return []
    return [f.name for f in dataclasses.fields(options) if hints.get(f.name) in (bool, Optional[bool])]


def check_bool_overrides(cfg: DictConfig, overrides: Sequence[str]) -> None:
    """Each command-line value of a bool key of `cfg` as the user wrote it (`check_bool`): by the time the config
    is composed, OmegaConf has already read `2` and `y` as true."""
    for override in OverridesParser.create().parse_overrides(list(overrides)):
        if override.is_delete() or override.is_sweep_override():
            continue
        if isinstance(node_at(cfg, override.key_or_group), BooleanNode):
            check_bool(override.value(), override.key_or_group)


def node_at(cfg: DictConfig, key: str) -> Node | None:
    """The node at a dotted key of `cfg` (None where there is none), without resolving its value."""
    node: Any = cfg
    for part in key.split("."):
        if not isinstance(node, DictConfig):
            return None
        node = node._get_node(part, validate_access=False, validate_key=False)
    return node if isinstance(node, Node) else None


def as_keywords(options: Any) -> dict[str, Any]:
    """A built options dataclass as constructor keywords (one level: nested options stay dataclasses)."""
    return {f.name: getattr(options, f.name) for f in dataclasses.fields(options)}


def config_error(exc: BaseException, where: str = "") -> ConfigError:
    """OmegaConf's several-line type error (or Hydra's composition error around it) as one line naming the key,
    what it got and what it takes."""
    cause: BaseException | None = exc
    while cause is not None and not isinstance(cause, OmegaConfBaseException):
        cause = cause.__cause__ or cause.__context__
    found = cause or exc
    key = ".".join(k for k in (where, str(getattr(found, "full_key", "") or "")) if k)
    message = (str(getattr(found, "msg", None) or found).strip().splitlines() or ["invalid value"])[0]
    fix = "remove or rename it" if "not in" in message else "fix the value on the command line or in its YAML file"
    return ConfigError(f"{key or 'config'}: {message}; {fix} (docs/config.md lists each key and its type)")


def store_plugin(group: str, name: str, options: type | str, *core: type, given: Collection[str] = ()) -> None:
    """Register a plugin's options as `schema/<group>/<name>`: its group YAML then starts its defaults list with
    `- /schema/<group>/<name>@_here_` and holds only the values that differ.

    `options` is the options dataclass, or the plugin class whose options
    `options_of` reads; given as `"module:name"` (an entry point's value), it
    is imported only when Hydra first loads the node (`LazyGroup`), so
    registering every built-in imports none of them, and a plugin class that
    declares `options = <dataclass>` is not imported even then (`declared_options`).
    `core` adds dataclasses of keys the core reads from the same node (a
    tracking node's `log_private_stats`), which the plugin is not given;
    `given` names the keywords the core passes the plugin itself, which are
    no keys of its node (`options_of`).
    """
    store(PendingNode(f"{SCHEMA_GROUP}/{group}", name, options, name, core, tuple(given)))


def store_config(path: str, options: type | str) -> None:
    """Register a node that names no plugin as `schema/<path>`: a task's section (`audit`, named `@audit` by the
    task's YAML), a task's options (`task/benchmark`) or a plain group's node (`model`, `encoder`); `options` as in
    `store_plugin`."""
    group, _, name = f"{SCHEMA_GROUP}/{path}".rpartition("/")
    store(PendingNode(group, name, options))


@dataclass(frozen=True)
class PendingNode:
    """A schema node as registered: built from its options when Hydra first loads it (`LazyGroup`)."""

    group: str
    name: str
    options: type | str  # the dataclass or plugin class, or where it is: "module:name"
    plugin: str | None = None  # the node's `_plugin_`; None for a node that names no plugin
    core: tuple[type, ...] = ()
    given: tuple[str, ...] = ()  # keywords the core passes the plugin itself: no keys of its node

    def build(self) -> ConfigNode:
        """The node Hydra reads: the options dataclass (imported now when given by name) as a typed node."""
        found = self.options
        if isinstance(found, str):
            found = load_object(options_home(found) if self.plugin is not None else found)
        options = options_of(found, self.given)
        if options is None:
            raise PluginError(f"{found.__qualname__} takes **kwargs: give it an options dataclass (docs/config.md)")
        if self.core:
            options = dataclasses.make_dataclass(options.__name__, [], bases=(options, *self.core))
        node = schema_node(options, self.plugin)
        return ConfigNode(name=f"{self.name}.yaml", node=node, group=self.group, package=None, provider=None)


def load_object(where: str) -> Any:
    """The object at `"module:name"`, its module imported now."""
    module, _, attribute = where.partition(":")
    return getattr(importlib.import_module(module), attribute)


def options_home(where: str) -> str:
    """Where to import the options of the class at `"module:name"` from: the class itself when its module is loaded
    already (nothing to spare), else where its source says they are (`declared_options`), else the class."""
    if where.partition(":")[0] in sys.modules:
        return where
    return declared_options(where) or where


def declared_options(where: str) -> str | None:
    """Where the class at `"module:name"` says its options dataclass is (`options = <name>` in its body, the name
    imported by `from <module> import <name>` or a class beside it), read from its source without importing it.

    A plugin's module imports what the plugin runs on (DP-Gen's torch); its
    options dataclass sits in a module of its own that imports nothing heavy,
    so a job that only composes the plugin's node imports only that. None when
    the source shows no such line (no source file, the class defined
    elsewhere, options given another way): the class is then imported and
    `options_of` asked. The built-ins' entry points name the module that
    defines each class, so each is read here (tests/test_registry.py).
    """
    module, _, name = where.partition(":")
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return None
    source = Path(spec.origin).read_text(encoding="utf-8")
    if not any(line.lstrip().startswith(("options =", "options:")) for line in source.splitlines()):
        return None  # no such line anywhere: parsing the module would find none (and costs more than the look)
    tree = ast.parse(source, spec.origin)
    package = module if spec.submodule_search_locations is not None else module.rpartition(".")[0]
    homes: dict[str, str] = {}  # each name the module binds at its top level by an import or a class: where it is
    options: str | None = None
    for statement in tree.body:
        if isinstance(statement, ast.ImportFrom):
            source = importlib.util.resolve_name("." * statement.level + (statement.module or ""), package)
            homes.update({alias.asname or alias.name: f"{source}:{alias.name}" for alias in statement.names})
        elif isinstance(statement, ast.ClassDef):
            homes[statement.name] = f"{module}:{statement.name}"
            options = options_name(statement) if statement.name == name else options
    return homes.get(options) if options else None


def options_name(cls: ast.ClassDef) -> str | None:
    """The plain name a class body binds `options` to (`options = X` or `options: type[X] = X`), if any."""
    for statement in cls.body:
        if isinstance(statement, ast.Assign):
            targets = statement.targets
        elif isinstance(statement, ast.AnnAssign):
            targets = [statement.target]
        else:
            continue
        if any(isinstance(target, ast.Name) and target.id == "options" for target in targets):
            return statement.value.id if isinstance(statement.value, ast.Name) else None
    return None


class LazyGroup(dict):
    """A ConfigStore group whose schema nodes are built on first load: Hydra looks a node up by `group[name]`, so
    a start-up that composes only the default groups, or refuses an override first, imports only their options.

    ConfigStore reads its `repo` only through `in` and `[]`, and pickles it whole for a launcher's worker (a
    pending node pickles as its fields)."""

    def __getitem__(self, key: str) -> Any:
        value = super().__getitem__(key)
        if isinstance(value, PendingNode):
            value = value.build()
            super().__setitem__(key, value)
        return value


def store(pending: PendingNode) -> None:
    """Put `pending` into the ConfigStore at its group, each folder of the path a `LazyGroup`."""
    folder: dict[str, Any] = ConfigStore.instance().repo
    for part in pending.group.split("/"):
        child = dict.get(folder, part)
        if not isinstance(child, LazyGroup):
            child = LazyGroup(child or {})
            dict.__setitem__(folder, part, child)
        folder = child
    dict.__setitem__(folder, f"{pending.name}.yaml", pending)


ConfigStore.instance().store(name=TOP_SCHEMA, node=SynBenchConfig)
