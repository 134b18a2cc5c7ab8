"""The Hydra app: `python -m synbench <overrides>` (add `-m` to sweep)."""
from __future__ import annotations

import logging
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.core.plugins import Plugins
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from hydra_plugins.synbench_searchpath.plugin import SynBenchSearchPathPlugin

from synbench.errors import SynBenchError
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
    except Exception as exc:
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


def record_failure(job_dir: Path, exc: BaseException) -> None:
    """A job that failed before its task wrote results (a bad config) still leaves a failed results.json."""
    if read_results(job_dir) is None:
        write_json_atomic(job_dir / RESULTS_FILE, {"status": "failed", "error": error_record(exc)})


if __name__ == "__main__":
    main()
