"""The Hydra app: `python -m synbench <overrides>` (add `-m` to sweep).

`main` first makes every file the process creates private (umask 077: files
0600, folders 0700) and refuses a command-line key that no config defines;
then Hydra composes the config and runs the job.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import re
import shutil
import signal
import sys
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterator, NoReturn, Sequence, TypeGuard

import hydra
import yaml
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra._internal.config_search_path_impl import ConfigSearchPathImpl
from hydra._internal.hydra import Hydra
from hydra._internal.utils import get_args_parser
from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override, ValueType
from hydra.core.plugins import Plugins
from hydra.errors import OverrideParseException
from hydra.plugins.config_source import ConfigSource
from hydra.types import RunMode
from omegaconf import BooleanNode, DictConfig, FloatNode, OmegaConf

from hydra_plugins.synbench_searchpath.plugin import SynBenchSearchPathPlugin, package_folder
from hydra_plugins.synbench_searchpath.plugin import config_folders as plugin_config_folders
from synbench.core import registry
from synbench.core.base import DatasetLoader, Generator
from synbench.core.credentials import check_no_credentials
from synbench.core.errors import ConfigError, did_you_mean
from synbench.core.privacy import check_epsilon
from synbench.core.schema import PLUGIN_KEY, SynBenchConfig, check_bool, node_at
from synbench.job import failures, lock
from synbench.job.lifecycle import error_record
from synbench.job.record import FAILED, JobRecord
from synbench.job.release import is_control
from synbench.job.results import read_results, write_results
from synbench.job.spec import JobConfig, check_task_n_synthetic, job_dirname
from synbench.tasks import get_task, writes_results
from synbench.tasks.options import check_plugin_options

log = logging.getLogger(__name__)

OmegaConf.register_new_resolver("synbench_jobdir", job_dirname, replace=True)
# Hydra finds plugins by listing the `hydra_plugins` namespace, which an editable
# install hides behind an import hook; registering the class as well always works.
Plugins.instance().register(SynBenchSearchPathPlugin)


# A job writes statistics of private data (results, checkpoints, caches, logs, W&B runs, Hydra's copy of the
# config) through many libraries that each pick their own file modes; a process-wide umask is the one setting
# that covers all of them, and files made by mkstemp (0600) stay as they are.
PRIVATE_UMASK = 0o077
HYDRA_FULL_ERROR = "HYDRA_FULL_ERROR"
INF_LITERAL = re.compile(r"(?<![\w.])[+-]?inf(?![\w.])", re.IGNORECASE)  # `inf` as Hydra's grammar reads it
HELP_FLAGS = frozenset({"--help", "-h"})
YAML_LOADER = getattr(yaml, "CBaseLoader", yaml.BaseLoader)  # YAML as written (no typing), by libyaml where built
HELP = """\
SynBench benchmarks differentially private (DP) synthetic text generators on sensitive text: a job fits a generator
on a private training split under a privacy budget eps, samples synthetic text, scores its utility (a classifier
trained on it, tested on real data) and fidelity, and can audit what the release leaks (membership attacks, an
empirical epsilon beside the nominal one). A job is one point of a sweep (dataset, generator, eps, seed, task) and
writes outputs/<sweep>/<task>/<overrides>/results.json; running the same command again skips or resumes it.

Examples (options such as -m first, then key=value overrides):
  python -m synbench generator=copy eps=inf metrics=[utility]   # one quick job: the copy control
  python -m synbench -m generator=dpgen eps=1,4,inf seed=0,1    # a sweep: six benchmark jobs
  python -m synbench task=report                                # report.md and report.html of the sweep

Options: -m (a sweep: every combination of the comma lists), --cfg job (print the composed config of a job,
every key and value, without running it), --hydra-help (Hydra's own options).

Config groups (group=option; docs/config.md explains each, and every key with its type and default):
{groups}"""


def main(argv: Sequence[str] | None = None) -> None:
    """`python -m synbench` and the `synbench` command: private file modes, the command line checked, the job.

    Every failure ends here as one line on stderr (exit 2; Ctrl-C or SIGTERM exits 130; a job that another
    process is running exits `lock.ALREADY_RUNNING_EXIT`): Hydra's own errors re-raised to this point instead
    of printed with their traceback, a job's error as `synbench.job.failures` words it.
    """
    os.umask(PRIVATE_UMASK)
    args = list(sys.argv[1:] if argv is None else argv)
    if HELP_FLAGS & set(args):
        print_help()
        return
    try:
        # SIGTERM too stops the job as Ctrl-C does (Python's default SIGTERM ends the process at once, leaving a
        # generator=command program running and its copy of the private set on disk), and Ctrl-C works even where
        # it was inherited ignored (a shell's background job)
        with failures.on_interrupt(signal.default_int_handler):
            check_options(args)
            check_command_line(args)
            with hydra_raises(args), composed_once():
                hydra_app()
    except KeyboardInterrupt:
        print(f"synbench: {failures.INTERRUPTED}", file=sys.stderr)
        raise SystemExit(130) from None
    except Exception as exc:
        print(f"synbench: error: {failures.describe(exc).message}", file=sys.stderr)
        failures.print_debug_traceback(exc)
        raise SystemExit(2) from None


def print_help() -> None:
    """What SynBench is, three example commands and the config groups users pick (not the schema's, nor Hydra's):
    Hydra's own help would print every internal group and the whole composed config."""
    groups = {group: options for group, options in config_groups().items() if group.split("/")[0] != "hydra"}
    print(HELP.format(groups="\n".join(f"  {group}: {', '.join(sorted(groups[group]))}" for group in sorted(groups))))


@contextmanager
def hydra_raises(args: Sequence[str]) -> Iterator[None]:
    """Hydra reading `args` as its command line, and raising its errors (HYDRA_FULL_ERROR) rather than printing them."""
    saved_argv, saved_env = sys.argv, os.environ.get(HYDRA_FULL_ERROR)
    sys.argv, os.environ[HYDRA_FULL_ERROR] = [sys.argv[0] if sys.argv else "synbench", *args], "1"
    try:
        yield
    finally:
        sys.argv = saved_argv
        if saved_env is None:
            os.environ.pop(HYDRA_FULL_ERROR, None)
        else:
            os.environ[HYDRA_FULL_ERROR] = saved_env


@contextmanager
def composed_once() -> Iterator[None]:
    """Hydra composing the job's config once, not twice.

    hydra-core 1.3 composes the whole config a first time only to read
    `hydra.mode` and then composes it again for the job (Hydra issue #3440):
    half of every start-up and of every refusal Hydra answers while composing.
    Here the mode is read as the fix proposed there reads it, without composing
    (`mode_without_composing`); `-m` picks a sweep, as SynBench's docs and
    experiments always do.
    """
    composing = Hydra.get_mode
    Hydra.get_mode = mode_without_composing  # type: ignore[method-assign]
    try:
        yield
    finally:
        Hydra.get_mode = composing  # type: ignore[method-assign]


def mode_without_composing(hydra: Hydra, config_name: str | None, overrides: list[str]) -> RunMode | None:
    """The run mode a command sets: a `hydra.mode=` override, else the primary config file's `hydra.mode`, else None
    (the `-m` flag decides, as in Hydra). A config group's option cannot pick the mode. Whatever cannot be read here
    (a value Hydra refuses, a primary config that does not parse) is None and left to the composition to refuse in
    its own words, as Hydra's lookup leaves it."""
    try:
        for override in OverridesParser.create().parse_overrides(overrides):
            if override.key_or_group == "hydra.mode" and not override.is_delete():
                return RunMode[str(override.value())]
        loader = hydra.config_loader
        primary = (
            loader.repository.load_config(config_name) if config_name and isinstance(loader, ConfigLoaderImpl) else None
        )
        mode = OmegaConf.select(primary.config, "hydra.mode", default=None) if primary is not None else None
        return RunMode[str(mode)] if mode is not None else None
    except Exception:  # noqa: BLE001  (as Hydra's get_mode: the composition reports it)
        return None


def config_folders() -> list[Path]:
    """The folders of config groups: SynBench's own and each plugin package's (the `conf` folder beside its classes).

    Found from the packages' locations without importing them (by the Hydra
    search-path plugin's own lookup), so start-up does not load any plugin's code.
    """
    own = package_folder("synbench.conf")
    return [*([own] if own is not None else []), *plugin_config_folders()]


def searchpath_folders(parsed: Sequence[Override]) -> tuple[Path, ...]:
    """The config folders a `hydra.searchpath=[...]` override adds (`file://` and plain paths, `pkg://` packages):
    their groups' options and top-level keys are the user's own, to be checked like ours."""
    folders: list[Path] = []
    for override in parsed:
        if override.key_or_group != "hydra.searchpath" or override.is_delete():
            continue
        folders += [folder for folder in map(source_folder, override_values(override)) if folder is not None]
    return tuple(folder for folder in folders if folder.is_dir())


def command_line_config_dir(args: Sequence[str]) -> tuple[Path, ...]:
    """The folder of `--config-dir` (`-cd`), which Hydra puts first in the search path: the user's own groups."""
    folder = get_args_parser().parse_known_args(list(args))[0].config_dir
    return (Path(folder),) if folder and Path(folder).is_dir() else ()


def source_folder(entry: str) -> Path | None:
    """The folder of a search-path entry: `pkg://` a package's, `file://` or a plain path itself; None for a
    structured (ConfigStore) source or a package that is not installed."""
    if entry.startswith("pkg://"):
        return package_folder(entry.removeprefix("pkg://"))
    if "://" in entry and not entry.startswith("file://"):
        return None
    return Path(entry.removeprefix("file://"))


@lru_cache(maxsize=4)
def known_top_level_keys(extra: tuple[Path, ...] = ()) -> frozenset[str]:
    """Every key a config may set at the top: the schema's, the group names, and the keys config files put there."""
    keys = {"hydra", *(f.name for f in dataclasses.fields(SynBenchConfig))}
    for folder in [*config_folders(), *extra]:
        keys.update(child.name for child in folder.iterdir() if child.is_dir() and not child.name.startswith("_"))
        for path in folder.rglob("*.yaml"):
            keys.update(file_top_level_keys(path, path.parent.relative_to(folder).as_posix()))
    return frozenset(keys)


def file_top_level_keys(path: Path, group: str) -> set[str]:
    """The top-level keys the config file `path` of config group `group` ("." for a primary config) sets, where
    Hydra puts its content: its `# @package` header as Hydra reads it, else its group's package (a primary
    config's is the top). A `_global_` file's are its own keys (its defaults list aside), as YAML parses them;
    another package's, the package's first part."""
    text = path.read_text(encoding="utf-8")
    package = ConfigSource._get_header_dict(text)["package"] or ("_global_" if group == "." else group)
    inside = package.removeprefix("_global_").lstrip(".").replace("/", ".")
    if inside:
        return {inside.split(".")[0]}
    try:
        root = yaml.compose(text, Loader=YAML_LOADER)
    except yaml.YAMLError:
        return set()  # no keys: Hydra refuses the file, naming it, where a job composes it
    if not isinstance(root, yaml.MappingNode):
        return set()
    return {key.value for key, _ in root.value if key.value != "defaults"}


def check_options(args: Sequence[str]) -> None:
    """The options (`-m`, `--cfg job`) as Hydra's own parser reads them, its complaint as one line: argparse would
    print a 7-line usage naming `__main__.py`. The usual slip is an option after an override (`eps=1 -m seed=1,2`)."""
    if "--version" in args:  # argparse prints the version and exits, as Hydra will
        return

    def refuse(message: str) -> NoReturn:
        first = next((i for i, arg in enumerate(args) if not arg.startswith("-") and "=" in arg), len(args))
        late = [arg for arg in args[first:] if arg.startswith("-")]
        if late and late[0] not in message:  # a known option, misplaced (not one argparse does not know)
            raise ConfigError(
                f"the option {late[0]} comes after the override {args[first]}; put options first, e.g. "
                "python -m synbench -m eps=1,4 seed=0,1 (or --cfg job eps=1)"
            )
        raise ConfigError(f"{message}; python -m synbench --hydra-help lists the options, and overrides are key=value")

    parser = get_args_parser()
    parser.error = refuse  # type: ignore[method-assign]
    parser.parse_args(args)


def check_command_line(args: Sequence[str]) -> None:
    """Refuse, before Hydra saves anything, an override Hydra would take but the job would get wrong.

    An unknown top-level key: Hydra appends any `+key=value` silently
    (`+epsilon=0.5` would run at the default eps) and answers a plain unknown
    key with advice to add `+`; a one-line error naming the nearest known key
    serves the user better. A key given twice (`eps=1 eps=2` runs eps=2 in a
    folder named after both). `~key` on a value every job reads. An option a
    config group does not have (`generator=cpy`: "did you mean copy?"). A
    `sweep` that leaves output_root. A `user:password@` URL, which would be
    saved in .hydra/ and the job folder's name.
    """
    overrides = [arg for arg in args if not arg.startswith("-") and ("=" in arg or arg.startswith("~"))]
    for arg in overrides:
        name, _, value = arg.partition("=")
        check_no_credentials({name.lstrip("+~"): value}, "the command line")
    try:
        parsed = OverridesParser.create().parse_overrides(overrides)
    except OverrideParseException as exc:
        first = str(exc).strip().splitlines()[0]
        raise ConfigError(f"cannot parse the command line: {first}; write overrides as key=value") from None
    extra = (*searchpath_folders(parsed), *command_line_config_dir(args))
    known = known_top_level_keys(extra)
    seen: dict[str, str] = {}
    for override, arg in zip(parsed, overrides, strict=True):
        key = override.key_or_group
        top = re.split(r"[.@/]", key, maxsplit=1)[0]
        if top not in known:
            raise ConfigError(
                f"'{arg.partition('=')[0]}' is not a config key{did_you_mean(top, known)}; the top-level keys are "
                f"{', '.join(sorted(known - {'hydra'}))} (and hydra.*)"
            )
        if key in seen:
            raise ConfigError(
                f"{key} is given twice ({seen[key]} and {arg}); give it once (a sweep lists its values: -m {key}=a,b)"
            )
        seen[key] = arg
        check_no_overflow(override, arg)
        check_values(override)
        if top == "hydra":
            continue
        groups = config_groups(extra)
        if override.is_delete() and key not in groups and "." not in key:
            raise ConfigError(f"'{arg}' deletes {key}, which every job reads; set {key}=<value> instead")
        if key in groups and not override.is_delete():
            check_group_options(key, override, groups[key])
        if key == "sweep":
            for value in override_values(override):
                check_sweep_name(value)


def override_values(override: Override) -> list[str]:
    """The values an override gives: one, or each of a sweep's."""
    if override.is_sweep_override():
        return [str(v) for v in override.sweep_string_iterator()]
    value = override.value()
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    return ["null" if value is None else str(value)]


def parsed_values(override: Override) -> list[object]:
    """The plain values an override gives, as Hydra parsed them: each of a list, a dict or a sweep's choices."""
    if override.value_type in (ValueType.CHOICE_SWEEP, ValueType.SIMPLE_CHOICE_SWEEP, ValueType.RANGE_SWEEP):
        pending = list(override.sweep_iterator())
    else:
        pending = [override.value()]
    values: list[object] = []
    while pending:
        value = pending.pop()
        if isinstance(value, (list, tuple)):
            pending.extend(value)
        elif isinstance(value, dict):
            pending.extend(value.values())
        else:
            values.append(value)
    return values


def overflows(text: str) -> bool:
    """A quoted number that a float field would read as inf though it does not say inf (`'1e400'`)."""
    try:
        number = float(text)
    except ValueError:
        return False
    return math.isinf(number) and text.strip().lower().lstrip("+-") not in ("inf", "infinity")


def check_no_overflow(override: Override, arg: str) -> None:
    """A number too large for a float (`eps=1e400`) is inf to Hydra, which for eps means no DP at all: only `inf`
    itself may say inf."""
    values = parsed_values(override)
    infinite = sum(isinstance(v, float) and math.isinf(v) for v in values)
    if infinite > len(INF_LITERAL.findall(arg.partition("=")[2])) or any(
        isinstance(v, str) and overflows(v) for v in values
    ):
        raise ConfigError(
            f"{override.key_or_group}: a number in '{arg}' is too large for a float and would silently become inf; "
            "give a finite number (eps at most 100), or write inf itself (eps=inf: no DP)"
        )


def number(value: object) -> TypeGuard[int | float]:
    """A value Hydra parsed as a number (a bool is not one); other values are left to the schema's typing."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# keys whose numbers are refused from the command line alone, before Hydra composes anything or a dataset, plugin or
# scikit-learn is imported, by the check the job runs on them, given the value as the schema types it (a refusal
# answers in about the time Python takes to start)
VALUE_CHECKS: dict[str, Callable[[object], object]] = {
    "eps": lambda value: check_epsilon(float(value)) if number(value) else None,
    "task.n_synthetic": lambda value: (
        check_task_n_synthetic(value) if isinstance(value, int) and number(value) else None
    ),
}


def check_values(override: Override) -> None:
    """Each value `override` gives (one, or each of a sweep's) for a key of `VALUE_CHECKS`, checked by its check."""
    check = VALUE_CHECKS.get(override.key_or_group)
    if check is None or override.is_delete():
        return
    for value in parsed_values(override):
        check(value)


def check_group_options(group: str, override: Override, options: frozenset[str]) -> None:
    """Every option an override picks in a config group exists; else one line with the nearest and the options."""
    for value in override_values(override):
        if value in options or value == "null" or override.value_type in (ValueType.GLOB_CHOICE_SWEEP,):
            continue
        raise ConfigError(
            f"{group}={value} is not an option of the config group '{group}'{did_you_mean(value, options)}; its "
            "options are "
            f"{', '.join(sorted(options))}"
        )


def check_sweep_name(value: str) -> None:
    """`sweep` names a folder below output_root: a relative path that does not climb out of it."""
    path = Path(value)
    if path.is_absolute() or ".." in path.parts or not value.strip():
        raise ConfigError(
            f"sweep={value} would write outside output_root; name the sweep with a relative path without '..' "
            "(set output_root to choose where sweeps go)"
        )


@lru_cache(maxsize=4)
def config_groups(extra: tuple[Path, ...] = ()) -> dict[str, frozenset[str]]:
    """Every config group (`generator`, `generator/backend`, ...) and its options, in every config folder (and the
    `extra` ones of a `hydra.searchpath` override)."""
    groups: dict[str, set[str]] = {}
    for folder in [*config_folders(), *extra]:
        for path in folder.rglob("*.yaml"):
            if path.parent != folder:
                groups.setdefault(path.parent.relative_to(folder).as_posix(), set()).add(path.stem)
    return {group: frozenset(options) for group, options in groups.items()}


def check_config_files(cfg: DictConfig, hydra_cfg: DictConfig) -> None:
    """The bool and float values of every YAML file the job composed, as written: the command line's checks
    (`check_no_overflow`, `check_bool`) for the values a user's own config files give (`--config-dir`,
    `hydra.searchpath`, a plugin's conf), where Hydra has already read `eps: 1e400` as inf (no DP at all) and
    `secure_mode: 2` as true by the time the job sees them.

    The files are looked up on the search path the job was composed with (`hydra.runtime.config_sources`), not
    on the global config loader's: Hydra adds a `hydra.searchpath` override's folders to a copy of the loader's
    repository for each composition only, so on the global one a group option from such a folder is not found.
    """
    search_path = ConfigSearchPathImpl()
    for source in hydra_cfg.runtime.config_sources:
        search_path.append(provider=source.provider, path=f"{source.schema}://{source.path}")
    loader = ConfigLoaderImpl(config_search_path=search_path)
    defaults = loader.compute_defaults_list(hydra_cfg.job.config_name, list(hydra_cfg.overrides.task), RunMode.RUN)
    for entry in defaults.defaults:
        if entry.config_path is None or entry.config_path.split("/")[0] == "hydra":
            continue
        # the source Hydra took the file from: the first on the search path that has it (looked up, not loaded)
        source = next((s for s in loader.repository.get_sources() if s.is_config(entry.config_path)), None)
        file = config_file(source.full_path(), entry.config_path) if source is not None else None
        if file is None:
            continue  # a structured (schema) config: its values are the dataclasses' own
        root = yaml.compose(file.read_text(encoding="utf-8"), Loader=YAML_LOADER)
        for key, value in yaml_scalars(root, entry.package or ""):
            where = f"{file} line {value.start_mark.line + 1}"
            node = node_at(cfg, key)
            if isinstance(node, FloatNode) and overflows(value.value):
                raise ConfigError(
                    f"{where}: {key}: {value.value} is too large for a float and would silently become inf; give "
                    "a finite number (eps at most 100), or write inf itself (eps: inf means no DP)"
                )
            if isinstance(node, BooleanNode) and value.value not in ("null", "~", ""):
                try:
                    check_bool(value.value, key)
                except ConfigError as bad:
                    raise ConfigError(f"{where}: {bad}") from None


def config_file(source: str, config_path: str) -> Path | None:
    """The YAML file of `config_path` in the search-path entry `source`; None for a structured (schema) config."""
    folder = source_folder(source)
    file = folder / f"{config_path}.yaml" if folder is not None else None
    return file if file is not None and file.is_file() else None


def yaml_scalars(node: yaml.Node | None, prefix: str, top: bool = True) -> Iterator[tuple[str, yaml.ScalarNode]]:
    """(dotted key, its scalar node) of every mapping leaf under `node`: the file's `defaults` list, lists and
    interpolations left out."""
    if not isinstance(node, yaml.MappingNode):
        return
    for key_node, value in node.value:
        if top and key_node.value == "defaults":
            continue
        key = f"{prefix}.{key_node.value}" if prefix else key_node.value
        if isinstance(value, yaml.MappingNode):
            yield from yaml_scalars(value, key, top=False)
        elif isinstance(value, yaml.ScalarNode) and "${" not in value.value:
            yield key, value


@hydra.main(version_base="1.3", config_path="pkg://synbench.conf", config_name="config")
def hydra_app(cfg: DictConfig) -> None:
    hydra_cfg = HydraConfig.get()
    job_dir = Path(hydra_cfg.runtime.output_dir)
    multirun = hydra_cfg.mode == RunMode.MULTIRUN
    started = False  # whether the task began: a failure before it is the checks refusing the job
    try:
        registry.load_modules(OmegaConf.select(cfg, "plugins", default=None) or [])  # unpackaged plugins register
        # the checks that need no data, cheapest first: the job's values (`eps=-1`), the dataset's files there (a
        # look, none read yet), the values of the YAML files as written (which composes the defaults list again),
        # then what only the generator's and the filter's classes know
        config = JobConfig.from_config(cfg, hydra_cfg.overrides.task, hydra_cfg.runtime.choices)
        task = get_task(config.spec.task)
        single = not multirun and task.writes_results  # a sweep checks each of its points before its first job
        if single:
            registry.create(DatasetLoader, config.dataset).check_source()
        check_config_files(cfg, hydra_cfg)
        if single:
            check_plugin_options(config.generator, config.filter)
            if not task.tests_claim:
                check_control_eps(config, hydra_cfg.overrides.task)
        if not task.writes_results:
            task.run(config, job_dir)
            return
        check_inside_output_root(job_dir, Path(config.output_root))
        with lock.claim(job_dir, config.spec.key, config.lock_wait_s) as job_dir:
            started = True
            task.run(config, job_dir)
    except lock.JobLocked as locked:
        # not a failure of the job: another process runs it, and nothing of this one is written into its folder
        print(f"synbench: already running: {locked}", file=sys.stderr)
        if not multirun:
            raise SystemExit(lock.ALREADY_RUNNING_EXIT) from None
        log.warning("job %s is already running in another process: %s", job_dir, locked)
    except Exception as raised:
        exc = failures.config_error(raised) or raised
        refused_run = not started and not multirun
        removed = refused_run and remove_fresh_folder(job_dir, OmegaConf.select(cfg, "output_root", default=None))
        # `removed` first: a refused single job is answered without importing its task's module (and what that
        # module imports), which only the failed results.json of a job that keeps its folder needs to know
        if not removed and writes_results(OmegaConf.select(cfg, "task.name")):
            record_failure(job_dir, exc)
        failures.print_debug_traceback(exc)  # stderr only, and only when asked for: never app.log
        line = failures.describe(exc).message
        print(f"synbench: error: {line}", file=sys.stderr)
        if not multirun:
            raise SystemExit(2) from None
        # In a multirun the sweep goes on; synbench.cli.sweeps.SweepCallback reports the failure at the end.
        log.error("job %s failed: %s", job_dir, line)


def check_control_eps(config: JobConfig, overrides: Sequence[str]) -> None:
    """Refuse a single job that sets a finite eps on the command line for a control (copy releases the private set
    as it is, public never reads it): it would run as a non-private job labelled with a budget it never applied. In a
    sweep (`-m`) the control runs at each eps as that eps's reference row, and its tables say 'control'; a task that
    tests the claim (`Task.tests_claim`, an audit) takes it as a planted violation."""
    if math.isinf(config.spec.epsilon) or not any(re.match(r"[+~]*eps=", arg) for arg in overrides):
        return
    node = config.generator
    if is_control(registry.load(Generator, str(node[PLUGIN_KEY]))):
        raise ConfigError(
            f"generator={config.spec.generator_name} is a control and does not apply eps={config.spec.epsilon:g} "
            "(copy releases the private set, public never reads it); set eps=inf, or sweep it with -m "
            "beside private generators, where it is each eps's reference row"
        )


def check_inside_output_root(job_dir: Path, output_root: Path) -> None:
    """Every file a job writes stays below output_root: its folder (from sweep, task.name, hydra.run.dir) too."""
    root = output_root.expanduser().resolve()
    if not job_dir.resolve().is_relative_to(root) or job_dir.resolve() == root:
        raise ConfigError(
            f"the job folder {job_dir} is not inside output_root={output_root}; keep sweep a relative name and "
            "hydra.run.dir / hydra.sweep.dir below ${output_root}, or set output_root to where jobs should go"
        )


def remove_fresh_folder(job_dir: Path, output_root: str | None) -> bool:
    """Remove the folder of a single job the checks refused before it started, when it holds only what Hydra wrote
    there before the app ran (its copy of the config, the job's log), and the folders above it that are left empty,
    up to output_root (kept): the one-line error is the whole answer, and no folder of a job that never ran (a
    report of a sweep that does not exist) is left to be taken for a result. True when removed; a folder holding
    anything else (an earlier run's results or lock) is kept. In a sweep the refused job keeps its failed
    results.json instead, which the sweep's table names and a re-run retries."""
    hydra_cfg = HydraConfig.get()
    log_file = OmegaConf.select(hydra_cfg, "job_logging.handlers.file.filename", default=None)
    hydra_written = {hydra_cfg.output_subdir, Path(str(log_file)).name if log_file else None} - {None}
    if not job_dir.is_dir() or not {path.name for path in job_dir.iterdir()} <= hydra_written:
        return False
    shutil.rmtree(job_dir)
    root = Path(output_root).expanduser().resolve() if output_root else None
    parent = job_dir.resolve().parent
    while root is not None and parent != root and parent.is_relative_to(root) and not any(parent.iterdir()):
        parent.rmdir()
        parent = parent.parent
    return True


def record_failure(job_dir: Path, exc: BaseException) -> None:
    """A job that failed before its task wrote results (a bad config) still leaves a failed results.json."""
    if read_results(job_dir) is None:
        write_results(job_dir, JobRecord(status=FAILED, error=error_record(exc)))


if __name__ == "__main__":
    main()
