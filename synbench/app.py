"""The Hydra app: `python -m synbench <overrides>` (add `-m` to sweep).

`main` first makes every file the process creates private (umask 077: files
0600, folders 0700) and refuses a command-line key that no config defines;
then Hydra composes the config and runs the job.
"""

from __future__ import annotations

import difflib
import logging
import os
import re
import sys
from functools import lru_cache
from pathlib import Path
from typing import Sequence

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.core.plugins import Plugins
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import InterpolationToMissingValueError, MissingMandatoryValue

from hydra_plugins.synbench_searchpath.plugin import SynBenchSearchPathPlugin, package_folder
from hydra_plugins.synbench_searchpath.plugin import config_folders as plugin_config_folders
from synbench import registry
from synbench.errors import ConfigError, SynBenchError
from synbench.job import JobSpec, check_no_credentials, job_dirname
from synbench.lifecycle import error_record
from synbench.results import read_results, write_results
from synbench.tasks import get_task, writes_results

log = logging.getLogger(__name__)

OmegaConf.register_new_resolver("synbench_jobdir", job_dirname, replace=True)
# Hydra finds plugins by listing the `hydra_plugins` namespace, which an editable
# install hides behind an import hook; registering the class as well always works.
Plugins.instance().register(SynBenchSearchPathPlugin)


# A job writes statistics of private data (results, checkpoints, caches, logs, W&B runs, Hydra's copy of the
# config) through many libraries that each pick their own file modes; a process-wide umask is the one setting
# that covers all of them, and files made by mkstemp (0600) stay as they are.
PRIVATE_UMASK = 0o077
GLOBAL_PACKAGE = re.compile(r"^#\s*@package\s+_global_", re.MULTILINE)
TOP_LEVEL_KEY = re.compile(r"^([A-Za-z_][\w-]*):", re.MULTILINE)


def main() -> None:
    """`python -m synbench` and the `synbench` command: private file modes, the command line's keys checked, the job."""
    os.umask(PRIVATE_UMASK)
    try:
        check_command_line(sys.argv[1:])
    except ConfigError as exc:
        print(f"synbench: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    hydra_app()


def config_folders() -> list[Path]:
    """The folders of config groups: SynBench's own and each plugin package's (the `conf` folder beside its classes).

    Found from the packages' locations without importing them (by the Hydra
    search-path plugin's own lookup), so start-up does not load any plugin's code.
    """
    own = package_folder("synbench.conf")
    return [*([own] if own is not None else []), *plugin_config_folders()]


@lru_cache(maxsize=1)
def known_top_level_keys() -> frozenset[str]:
    """Every key a config may set at the top: the primary config's, the group names, and keys of `_global_` configs."""
    keys = {"hydra"}
    for folder in config_folders():
        keys.update(child.name for child in folder.iterdir() if child.is_dir() and not child.name.startswith("_"))
        for path in folder.rglob("*.yaml"):
            text = path.read_text(encoding="utf-8")
            if path.parent == folder or GLOBAL_PACKAGE.search(text):
                keys.update(k for k in TOP_LEVEL_KEY.findall(text) if k != "defaults")
    return frozenset(keys)


def check_command_line(args: Sequence[str]) -> None:
    """Refuse, before Hydra saves anything, an override with an unknown top-level key or a URL with credentials.

    Hydra appends any `+key=value` silently (`+epsilon=0.5` would run at the
    default eps) and answers a plain unknown key with advice to add `+`; a
    one-line error naming the nearest known key serves the user better. A
    `user:password@` URL would be saved in .hydra/ and the job folder's name.
    """
    known = known_top_level_keys()
    for arg in args:
        if arg.startswith("-") or ("=" not in arg and not arg.startswith("~")):
            continue  # a flag (-m, --cfg job, ...) or a flag's value
        name, _, value = arg.partition("=")
        check_no_credentials({name.lstrip("+~"): value}, "the command line")
        match = re.match(r"[+~]*([^.=@/]+)", arg)
        key = match.group(1) if match else arg
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.5)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise ConfigError(
                f"'{arg.partition('=')[0]}' is not a config key{hint}; the top-level keys are "
                f"{', '.join(sorted(known - {'hydra'}))} (and hydra.*)"
            )


@hydra.main(version_base="1.3", config_path="pkg://synbench.conf", config_name="config")
def hydra_app(cfg: DictConfig) -> None:
    hydra_cfg = HydraConfig.get()
    job_dir = Path(hydra_cfg.runtime.output_dir)
    multirun = hydra_cfg.mode == RunMode.MULTIRUN
    try:
        registry.load_modules(OmegaConf.select(cfg, "plugins", default=None) or [])  # unpackaged plugins register
        spec = JobSpec.from_config(cfg)
        get_task(spec.task).run(cfg, spec, job_dir)
    except Exception as raised:
        exc = missing_value_error(raised) or raised
        if writes_results(OmegaConf.select(cfg, "task.name")):
            record_failure(job_dir, exc)
        if isinstance(exc, SynBenchError):  # bad input: a clear message, not a traceback from deep inside
            print(f"synbench: error: {exc}", file=sys.stderr)
        elif multirun:
            log.exception("job %s failed", job_dir)
        else:
            raise
        if not multirun:
            raise SystemExit(2) from None
        # In a multirun the sweep goes on; synbench.sweeps.SweepCallback reports the failure at the end.


def missing_value_error(exc: BaseException) -> ConfigError | None:
    """A config value left `???` (such as `data_root` of the paper experiments) as an error that says what to pass."""
    if not isinstance(exc, (MissingMandatoryValue, InterpolationToMissingValueError)):
        return None
    found = re.search(r"Missing mandatory value: ?([\w.]+)", str(exc))
    missing = found.group(1) if found else exc.full_key
    needed = f" (needed by '{exc.full_key}')" if exc.full_key and exc.full_key != missing else ""
    return ConfigError(f"config value '{missing}'{needed} is not set: pass {missing}=<value> on the command line")


def record_failure(job_dir: Path, exc: BaseException) -> None:
    """A job that failed before its task wrote results (a bad config) still leaves a failed results.json."""
    if read_results(job_dir) is None:
        write_results(job_dir, {"status": "failed", "error": error_record(exc)})


if __name__ == "__main__":
    main()
