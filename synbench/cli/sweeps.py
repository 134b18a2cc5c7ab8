"""Sweeps that survive faults: a Hydra callback that warns about tuning and ends with a table of the jobs.

A multirun goes on past a failing job (the app records the failure in the
job's `results.json`); at the end this callback prints one line per job of
the sweep folder and exits non-zero, naming each failed job, when any
failed. Re-running the same command re-runs only failed and missing jobs
(complete ones are skipped by their `job_key`).
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from typing import Any

from hydra import compose
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from synbench.core import registry
from synbench.core.base import DatasetLoader, Generator
from synbench.job import failures
from synbench.job.release import control_results
from synbench.job.results import UNREADABLE, job_files, read_job
from synbench.job.spec import JobConfig
from synbench.tasks.options import check_task_options

log = logging.getLogger("synbench.sweep")
SEARCHPATH = "hydra.searchpath="

# Keys a benchmark sweeps by design (and `dataset.*`, other data; `paper_generator` / `paper_dataset` choose a
# generator / a dataset with the paper's settings; `demo_job` a (task, seed) slice of the demo grid): a sweep over
# anything else, such as `generator.lr`, picks among settings on the same private data.
COMPARED = frozenset(
    {"eps", "seed", "task", "generator", "sweep", "output_root", "paper_generator", "paper_dataset", "demo_job"}
)


def swept_keys(config: DictConfig) -> list[str]:
    """The keys a multirun varies: comma lists or sweep functions on the command line, and the sweeper's params."""
    keys = {str(k).lstrip("+~") for k in (OmegaConf.select(config, "hydra.sweeper.params") or {})}
    for override in OmegaConf.select(config, "hydra.overrides.task") or []:
        key, _, value = str(override).partition("=")
        if "," in value or value.startswith(("range(", "choice(", "interval(", "glob(")):
            keys.add(key.lstrip("+~"))
    return sorted(keys)


def tuned_keys(config: DictConfig) -> list[str]:
    """The swept keys that select among settings on the same private data (not eps, seed, generator or data)."""
    return [k for k in swept_keys(config) if k not in COMPARED and not k.startswith("dataset")]


def sweep_points(config: DictConfig) -> list[list[str]]:
    """Override lists that together try every value of every swept key once: the first point sets each key to its
    first value, each further point changes one key to one other value.

    Every job of the grid is a product of these values, so a value that
    cannot compose or fails the job checks is found here, in one composition
    per value rather than one per job of the grid.
    """
    overrides = {}
    params = OmegaConf.select(config, "hydra.sweeper.params") or {}
    lines = [f"{k}={v}" for k, v in params.items()] + [
        str(o) for o in OmegaConf.select(config, "hydra.overrides.task") or []
    ]
    for override in OverridesParser.create().parse_overrides(lines):  # the command line's win over the params
        if not override.key_or_group.startswith("hydra"):
            overrides[override.get_key_element()] = override
    values = {
        key: [str(v) for v in o.sweep_string_iterator()] if o.is_sweep_override() else [o.get_value_element_as_str()]
        for key, o in overrides.items()
    }
    first = {key: vals[0] for key, vals in values.items()}
    points = [first]
    for key, vals in values.items():
        points.extend({**first, key: value} for value in vals[1:])
    return [[f"{key}={value}" for key, value in point.items()] for point in points]


def check_sweep_points(config: DictConfig) -> None:
    """Every value of a sweep, composed and checked as a job is (`JobConfig.from_config`), its task's options and
    its dataset's config built (and its data found: `check_source`) and its generator's options typed, before its
    first job runs.

    A sweep `eps=1,abc` (or `dataset.eval_fraction=0.2,1.5`, or a third-party generator's option of the wrong
    type, which only its plugin types: `generator=example generator.max_tokens_per_doc=abc`) then fails at once,
    not after its first job.
    """
    name = str(OmegaConf.select(config, "hydra.job.config_name") or "config")
    # config folders the command line added: compose does not keep the run's search path, so it is given again
    searchpath = [
        o for o in map(str, OmegaConf.select(config, "hydra.overrides.hydra") or []) if o.startswith(SEARCHPATH)
    ]
    for point in sweep_points(config):
        cfg = compose(config_name=name, overrides=[*point, *searchpath])
        registry.load_modules(OmegaConf.select(cfg, "plugins", default=None) or [])  # as the job will, first
        job = JobConfig.from_config(cfg, point)
        check_task_options(job.task)
        registry.create(DatasetLoader, job.dataset).check_source()  # its config's checks, its files there; none read
        if job.generator:  # typed as the run will build it (the job folder is the core's keyword), not built
            registry.check_node(Generator, job.generator, extra=("job_dir",))


def job_rows(sweep_dir: Path) -> list[dict[str, Any]]:
    """One row per `results.json` under the sweep folder: where, what, status and the headline figure."""
    rows = []
    for path in job_files(sweep_dir):
        r, _ = read_job(path)
        if r is None:
            rows.append({"job": str(path.parent.relative_to(sweep_dir)), "status": UNREADABLE})
            continue
        headline = r.get("utility", {}).get("f1_micro", r.get("audit", {}).get("eps_emp_lower"))
        rows.append(
            {
                "job": str(path.parent.relative_to(sweep_dir)),
                "task": r.get("task"),
                "generator": r.get("generator"),
                "eps": "control" if control_results(r) else r.get("epsilon"),
                "seed": r.get("seed"),
                "status": r.get("status"),
                "eps_spent": r.get("epsilon_spent"),
                "headline": headline,
                "error": r.get("error"),
            }
        )
    return rows


def _cell(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float) else ("-" if value is None else str(value))


class SweepCallback(Callback):
    def __init__(self) -> None:
        self._job_started = 0.0

    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        """In a sweep, a line per job (also in a log file): which job of the sweep starts, with its overrides."""
        self._job_started = time.perf_counter()
        if str(OmegaConf.select(config, "hydra.mode")) == "RunMode.MULTIRUN":
            log.info(
                "sweep job #%s started: %s", config.hydra.job.num, config.hydra.job.override_dirname or "(defaults)"
            )

    def on_job_end(self, config: DictConfig, job_return: Any = None, **kwargs: Any) -> None:
        if str(OmegaConf.select(config, "hydra.mode")) == "RunMode.MULTIRUN":
            log.info("sweep job #%s ended after %.0f s", config.hydra.job.num, time.perf_counter() - self._job_started)

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        try:
            check_sweep_points(config)
        except Exception as exc:  # Hydra turns a callback's exception into a warning, and would run the sweep
            print(f"synbench: error: {failures.describe(exc).message}", file=sys.stderr)
            failures.print_debug_traceback(exc)
            raise SystemExit(2) from None
        tuned = tuned_keys(config)
        if tuned:
            # Printed, not logged: Hydra sets up logging per job, after this point.
            print(
                f"synbench: warning: this sweep varies {', '.join(tuned)} over the same private data: picking its "
                "best run is itself a use of the private data that no job's epsilon covers (tune on public or "
                "held-out data, or account for the selection)",
                file=sys.stderr,
            )

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(str(config.hydra.sweep.dir))
        rows = job_rows(sweep_dir)
        print(f"\nsweep {sweep_dir}: {len(rows)} job(s)")
        print(
            f"{'task':<10} {'generator':<12} {'eps':>6} {'seed':>4} {'status':<10} {'eps_spent':>9} {'F1 / eps_lb':>11}"
        )
        for row in rows:
            print(
                f"{_cell(row.get('task')):<10} {_cell(row.get('generator')):<12} {_cell(row.get('eps')):>6} "
                f"{_cell(row.get('seed')):>4} {_cell(row.get('status')):<10} {_cell(row.get('eps_spent')):>9} "
                f"{_cell(row.get('headline')):>11}"
            )
        failed = [row for row in rows if row.get("status") != "complete"]
        for row in failed:
            error = row.get("error") or {}
            print(f"FAILED {row['job']}: {error.get('type', row.get('status'))}: {error.get('message', '')}")
        if failed:
            raise SystemExit(
                f"synbench: {len(failed)} of {len(rows)} job(s) did not complete; run the same command "
                "again to re-run only those"
            )
