"""A failure as the user reads it: one line that names what failed, where and the fix; never a foreign message.

SynBench's own errors (`SynBenchError`) are written never to quote data, so
their message is the line. Any other exception may quote a record in its
message (a plugin's `ValueError(f"bad document {text}")`, a tokenizer's
complaint about its input), so it is reported by the three facts that hold no
data: the plugin it came from, its type, and the file:line of the raise.
`SYNBENCH_DEBUG=1` prints the full traceback, message included, to stderr
only: never to a log (Hydra's `app.log` in a sweep) or a file a job writes.
An interrupt (Ctrl-C, or SIGTERM: `on_interrupt` sets who handles both) is
reported as INTERRUPTED.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import threading
import traceback
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, TracebackType
from typing import Callable, Iterator

import yaml
from hydra.errors import HydraException
from omegaconf import DictConfig
from omegaconf.errors import (
    ConfigAttributeError,
    ConfigKeyError,
    InterpolationToMissingValueError,
    MissingMandatoryValue,
    OmegaConfBaseException,
)

from synbench.core import registry
from synbench.core.errors import ConfigError, PluginError, SynBenchError, did_you_mean

DEBUG_ENV = "SYNBENCH_DEBUG"
INTERRUPTED = "interrupted; the same command resumes"
INTERRUPTS = (signal.SIGINT, signal.SIGTERM)  # Ctrl-C, and the polite stop of a scheduler or `kill`
HIDDEN = "its message is not shown, as it may quote a record"
# Hydra's error for a comma list (a sweep) in a single run
AMBIGUOUS = re.compile(r"^Ambiguous value for argument '(.+)'$")


@dataclass(frozen=True)
class Failure:
    """What is kept of an exception: its type, a one-line message safe to print, log and write, and its origin."""

    type: str
    message: str
    plugin: str | None = None  # the name of the plugin whose code raised, when one did
    plugin_kind: str | None = None  # its kind: generator, dataset, metric, ...
    where: str | None = None  # file:line of the raise

    def record(self) -> dict[str, str]:
        """The error as results.json keeps it."""
        extra = {"plugin": self.plugin, "plugin_kind": self.plugin_kind, "where": self.where}
        return {"type": self.type, "message": self.message, **{k: v for k, v in extra.items() if v is not None}}


def debug_enabled() -> bool:
    return os.environ.get(DEBUG_ENV, "").strip().lower() not in ("", "0", "false", "no", "off")


@contextmanager
def on_interrupt(handler: Callable[[int, FrameType | None], object]) -> Iterator[None]:
    """`handler` for SIGINT and SIGTERM while the block runs, the previous handlers after it. Only the main thread
    may set handlers (and Python runs them there); in another thread the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, handler) for sig in INTERRUPTS}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, signal.SIG_DFL if old is None else old)


def print_debug_traceback(exc: BaseException) -> None:
    """The full traceback on stderr when SYNBENCH_DEBUG=1 (the one place an exception's message may appear)."""
    if debug_enabled() and not isinstance(exc, (SynBenchError, KeyboardInterrupt)):
        traceback.print_exception(exc, file=sys.stderr)


HYDRA_CONFIG_SOURCES = "hydra._internal.core_plugins."  # where Hydra reads config files (file, pkg, structured)


def config_error(exc: BaseException) -> ConfigError | None:
    """An error about the config itself (a value left `???`, a key the job reads but the config lacks, a config
    file Hydra could not parse) as the ConfigError that says what to fix; None for any other exception."""
    if isinstance(exc, (MissingMandatoryValue, InterpolationToMissingValueError)):
        found = re.search(r"Missing mandatory value: ?([\w.]+)", str(exc))
        missing = found.group(1) if found else exc.full_key
        if isinstance(exc, MissingMandatoryValue) and exc.full_key:
            missing = exc.full_key  # OmegaConf's message names a nested value by its own key (command)
        needed = f" (needed by '{exc.full_key}')" if exc.full_key and exc.full_key != missing else ""
        return ConfigError(f"config value '{missing}'{needed} is not set: pass {missing}=<value> on the command line")
    if isinstance(exc, (ConfigAttributeError, ConfigKeyError)) and exc.full_key:
        return ConfigError(
            f"config key '{exc.full_key}' is missing, and the job reads it; set {exc.full_key}=<value> (and do not "
            "delete it with ~)"
        )
    mark = getattr(exc, "problem_mark", None)
    if isinstance(exc, yaml.MarkedYAMLError) and mark is not None and read_by_hydra(exc.__traceback__):
        # a config file as Hydra loads it (never a data file: a parser's words can quote what it read)
        return ConfigError(
            f"{mark.name} line {mark.line + 1}: not valid YAML ({exc.problem}); fix the file (a config file is a "
            "YAML mapping of keys to values)"
        )
    return None


def read_by_hydra(tb: TracebackType | None) -> bool:
    """Whether the exception was raised while Hydra read a config file (its config sources' frames)."""
    return any(module.startswith(HYDRA_CONFIG_SOURCES) for module, _, _ in _frames(tb))


def hydra_message(exc: HydraException) -> str:
    """Hydra's error (an override it cannot apply, a config it cannot compose) as one line: its first line, and the
    first line of the OmegaConf error under it (a value of the wrong type; a key the node does not have, with the
    nearest one it has). A comma list without `-m`, which Hydra calls ambiguous, says to add `-m`."""
    text = str(exc).strip().splitlines()
    first = text[0] if text else type(exc).__name__
    ambiguous = AMBIGUOUS.match(first)
    if ambiguous:
        override = ambiguous.group(1)
        return (
            f"{override} gives several values, which only a sweep runs (one job each): add -m first, python -m "
            f"synbench -m {override}; a single value that is a list is written in brackets, key=[a,b]"
        )
    if first.endswith(":") and len(text) > 1:  # "... raised while composing config:" then what was raised
        first = f"{first} {text[1].strip()}"
    lines = [first.rstrip(".")]
    cause = exc.__cause__
    if isinstance(cause, OmegaConfBaseException) and str(cause).strip():
        lines.append(str(cause).strip().splitlines()[0].rstrip(".") + nearest_key(cause))
    return "; ".join(lines) + "; fix the override (python -m synbench --help lists the config groups)"


def nearest_key(error: OmegaConfBaseException) -> str:
    """` (did you mean epochs?)` for a key a config node does not have (`generator.epoch`): the nearest of the
    node's keys; nothing for any other error."""
    node = getattr(error, "parent_node", None)
    if not isinstance(error, (ConfigAttributeError, ConfigKeyError)) or not isinstance(node, DictConfig):
        return ""
    return did_you_mean(str(error.key), (str(key) for key in node.keys()))


def describe(exc: BaseException) -> Failure:
    """The one-line report of `exc` (see the module docstring for what is shown)."""
    exc = config_error(exc) or exc
    kind = type(exc).__name__
    if isinstance(exc, HydraException):
        return Failure(kind, hydra_message(exc))
    if isinstance(exc, SynBenchError):
        return Failure(kind, " ".join(str(exc).split("\n")))
    if isinstance(exc, KeyboardInterrupt):
        return Failure(kind, INTERRUPTED)
    if isinstance(exc, OSError) and exc.strerror and exc.filename is not None:
        return Failure(
            kind,
            f"cannot write or read {exc.filename}: {exc.strerror}; check that output_root (and every path "
            "the config names) is a folder you can write, or a file that exists",
        )
    where = raise_site(exc.__traceback__)
    debug = f"re-run with {DEBUG_ENV}=1 to see the full traceback on stderr"
    found = plugin_of(exc.__traceback__)
    if found is None:
        return Failure(kind, f"{kind} raised at {where} (an internal error); {HIDDEN}: {debug}, and report it")
    plugin_kind, name = found
    message = f"{plugin_kind} plugin '{name}' raised {kind} at {where}; {HIDDEN}: {debug}"
    return Failure(kind, message, name, plugin_kind, where)


def _frames(tb: TracebackType | None) -> list[tuple[str, str, int]]:
    """(module, file, line) of each frame from the outermost to the raise."""
    frames = []
    while tb is not None:
        frame = tb.tb_frame
        frames.append((str(frame.f_globals.get("__name__", "")), frame.f_code.co_filename, tb.tb_lineno))
        tb = tb.tb_next
    return frames


def _shown(file: str) -> str:
    """A path as messages show it: relative to the working folder when below it."""
    path = Path(file)
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return file


def raise_site(tb: TracebackType | None) -> str:
    frames = _frames(tb)
    if not frames:
        return "an unknown place"
    _, file, line = frames[-1]
    return f"{_shown(file)}:{line}"


def _plugin_prefixes() -> list[tuple[str, str, str]]:
    """(module prefix, kind, name) of every registered plugin; a third party's whole top package is its own.

    The kinds are those loaded in this process (a plugin that raised was
    loaded). The built-in tasks are left out: they are the core's own
    workflow, so an error raised in core code they call is reported as
    internal.
    """
    found = []
    for base in registry.kinds():
        try:
            plugins = registry.available(base)
        except PluginError:
            continue
        for name, info in plugins.items():
            module = info.value.partition(":")[0]
            prefix = module if module.startswith("synbench.") else module.split(".")[0]
            if not prefix.startswith("synbench.tasks"):
                found.append((prefix, registry.kind_name(base).replace("_", " "), name))
    return sorted(found, key=lambda item: -len(item[0]))  # the most specific prefix first


def plugin_of(tb: TracebackType | None) -> tuple[str, str] | None:
    """(kind, name) of the plugin whose code is nearest the raise; None when no plugin's code is on the stack."""
    prefixes = _plugin_prefixes()
    for module, _, _ in reversed(_frames(tb)):
        for prefix, kind, name in prefixes:
            if module == prefix or module.startswith(prefix + "."):
                return kind, name
    return None
