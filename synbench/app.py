"""The Hydra app: `python -m synbench <overrides>` (add `-m` to sweep)."""
from __future__ import annotations

import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.core.plugins import Plugins
from omegaconf import DictConfig, OmegaConf

from hydra_plugins.synbench_searchpath.plugin import SynBenchSearchPathPlugin

from synbench.errors import SynBenchError
from synbench.job import JobSpec, job_dirname
from synbench.tasks import get_task

OmegaConf.register_new_resolver("synbench_jobdir", job_dirname, replace=True)
# Hydra finds plugins by listing the `hydra_plugins` namespace, which an editable
# install hides behind an import hook; registering the class as well always works.
Plugins.instance().register(SynBenchSearchPathPlugin)


@hydra.main(version_base="1.3", config_path="pkg://synbench.conf", config_name="config")
def main(cfg: DictConfig) -> None:
    try:
        spec = JobSpec.from_config(cfg)
        job_dir = Path(HydraConfig.get().runtime.output_dir)
        get_task(spec.task)(cfg, spec, job_dir)
    except SynBenchError as exc:
        # Bad input: a clear message and a non-zero exit, not a traceback from deep inside.
        print(f"synbench: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
