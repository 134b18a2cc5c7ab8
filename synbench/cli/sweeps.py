"""Sweeps that survive faults: a Hydra callback that warns about tuning and ends with a table of the jobs.

A multirun goes on past a failing job (the app records the failure in the
job's `results.json`); at the end this callback prints one line per job of
this run of the sweep (the sweep folder may also hold jobs of earlier runs
under the same name, which it leaves out) and exits non-zero, naming each
failed job, when any failed. Re-running the same command re-runs only failed
and missing jobs (complete ones are skipped by their `job_key`, and listed).
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from typing import Any, Callable, NamedTuple

from hydra import compose
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from synbench.core import registry
from synbench.core.base import DatasetLoader
from synbench.job import failures
from synbench.job.lock import LOCK_FILE
from synbench.job.record import COMPLETE, JobRecord
from synbench.job.release import is_control_noise
from synbench.job.results import RESULTS_FILE, UNREADABLE, sweep_records
from synbench.job.spec import JobConfig
from synbench.tasks.options import check_plugin_options, check_task_options

log = logging.getLogger("synbench.sweep")
SEARCHPATH = "hydra.searchpath="
# how much earlier than the sweep's start a job's file may be stamped and still count as this run's (file times are
# coarser than the clock, and a launcher's nodes keep their own clocks)
MTIME_SLACK_S = 1.0

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
        check_plugin_options(job.generator, job.filter)


class SweepJob(NamedTuple):
    """One job of the closing table: its folder (relative to the sweep), its record (status `unreadable`, nothing
    else, where its file could not be read) and why it did not complete (empty when it did)."""

    job: str
    record: JobRecord
    reason: str


def run_jobs(sweep_dir: Path, since: float, markers: tuple[str, ...]) -> list[SweepJob]:
    """The sweep's jobs (`sweep_records`, the one walk of a sweep) that this run of it touched: each writes its
    claim into its folder's `.lock` (a skipped complete job too) or its `results.json` (one refused before it
    started), and Hydra its `markers` (the `.hydra` folder), at or after `since`; an earlier run's job beside them,
    under the same sweep name, is left out."""
    if not sweep_dir.is_dir():
        return []

    def touched(folder: Path) -> bool:
        paths = [folder / name for name in (LOCK_FILE, RESULTS_FILE, *markers)]
        return any(path.exists() and path.stat().st_mtime >= since for path in paths)

    return [
        SweepJob(job, JobRecord(status=UNREADABLE), problem)
        if record is None
        else SweepJob(job, record, record.reason())
        for job, record, problem in sweep_records(sweep_dir)
        if touched(sweep_dir / job)
    ]


def _cell(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float) else ("-" if value is None else str(value))


# the closing table: heading, width and the row's cell, per column; the last is a benchmark job's macro F1 (micro
# F1 mostly counts the majority class of imbalanced labels) or an audit job's eps lower bound
COLUMNS: tuple[tuple[str, int, Callable[[JobRecord], Any]], ...] = (
    ("task", -10, lambda record: record.task),
    ("dataset", -12, lambda record: record.dataset),
    ("generator", -12, lambda record: record.generator_name or record.generator),
    ("eps", 6, lambda record: "control" if is_control_noise(record.noise) else record.epsilon),
    ("seed", 4, lambda record: record.seed),
    ("status", -10, lambda record: record.status),
    ("eps_spent", 9, lambda record: record.epsilon_spent),
    (
        "F1 macro / eps_lb",
        17,
        lambda record: record.audit.eps_emp_lower if record.utility.f1_macro is None else record.utility.f1_macro,
    ),
)


def table_line(cells: list[Any]) -> str:
    """One line of the closing table: each cell left-aligned (negative width) or right-aligned in its column."""
    aligned = (f"{_cell(cell):{'<' if width < 0 else '>'}{abs(width)}}" for cell, (_, width, _) in zip(cells, COLUMNS))
    return " ".join(aligned)


class SweepCallback(Callback):
    def __init__(self) -> None:
        self._job_started = 0.0
        self._sweep_started = 0.0  # the wall-clock time the sweep's run began (0: list every job of the folder)

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
        self._sweep_started = time.time() - MTIME_SLACK_S
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
        markers = tuple(str(name) for name in [OmegaConf.select(config, "hydra.output_subdir")] if name)
        jobs = run_jobs(sweep_dir, self._sweep_started, markers)
        print(f"\nsweep {sweep_dir}: {len(jobs)} job(s)")
        print(table_line([heading for heading, _, _ in COLUMNS]))
        for found in jobs:
            print(table_line([cell(found.record) for _, _, cell in COLUMNS]))
        failed = [found for found in jobs if found.record.status != COMPLETE]
        for found in failed:
            print(f"FAILED {found.job}: {found.reason}")
        if failed:
            raise SystemExit(
                f"synbench: {len(failed)} of {len(jobs)} job(s) did not complete; run the same command "
                "again to re-run only those"
            )
