"""The Hydra app: `python -m synbench <overrides>` (add `-m` to sweep)."""
from __future__ import annotations

import logging
import re
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.core.plugins import Plugins
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import InterpolationToMissingValueError, MissingMandatoryValue

from hydra_plugins.synbench_searchpath.plugin import SynBenchSearchPathPlugin

from synbench.errors import ConfigError, SynBenchError
from synbench.job import RESULTS_FILE, JobSpec, job_dirname, read_results, write_json_atomic
from synbench.tasks import JOB_TASKS, get_task
from synbench.tasks.lifecycle import error_record

log = logging.getLogger(__name__)

OmegaConf.register_new_resolver("synbench_jobdir", job_dirname, replace=True)
# Hydra finds plugins by listing the `hydra_plugins` namespace, which an editable
# install hides behind an import hook; registering the class as well always works.
Plugins.instance().register(SynBenchSearchPathPlugin)


@hydra.main(version_base="1.3", config_path="pkg://synbench.conf", config_name="config")
def main(cfg: DictConfig) -> None:
    hydra_cfg = HydraConfig.get()
    job_dir = Path(hydra_cfg.runtime.output_dir)
    multirun = hydra_cfg.mode == RunMode.MULTIRUN
    try:
        spec = JobSpec.from_config(cfg)
        get_task(spec.task)(cfg, spec, job_dir)
    except Exception as raised:
        exc = missing_value_error(raised) or raised
        if OmegaConf.select(cfg, "task.name") in JOB_TASKS:
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
        write_json_atomic(job_dir / RESULTS_FILE, {"status": "failed", "error": error_record(exc)})


if __name__ == "__main__":
    main()
