"""The task plugin kind: what a job does (`task=<name>`), registered under `synbench.tasks`.

A task is selected by its config file `conf/task/<name>.yaml`, whose `name`
key is the registry name (and the folder its jobs are written under); the
file's other keys are the task's options, read from `job.config.task`. A task
declares, on its class, what the rest of SynBench needs to know about it, so
nothing dispatches on its name:

- `results_sections`: the `results.json` sections it writes beyond the core
  header (the release allow-list admits them for its jobs);
- `generation_fields`: the core `generation` keys it writes (a generator adds
  the keys it declares in `public_details`);
- `report_section`: which of the report's tables its jobs belong to, written
  into each `results.json` (the report reads results files only, never this
  class); None lists the jobs without tabulating them;
- `tests_claim`: whether it measures a generator against its nominal eps (an
  audit): there a control under a finite eps (copy claiming eps=1) is a planted
  violation, a calibration; a task that does not refuses a single such job.

A job task implements `body(job)`, which `run` wraps in the task wrapper
(resume, tracking, timing, status, results). A task that writes no
`results.json` (a listing, a scaffold, the report) sets `writes_results =
False` and overrides `run`. Either way the task receives one typed
`JobConfig` (built by the app, `synbench.job.spec`), never Hydra's raw config.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from hydra.core.hydra_config import HydraConfig

from synbench.core.base import Plugin
from synbench.core.errors import PluginError
from synbench.job.lifecycle import JobRun, run_job
from synbench.job.record import JobRecord
from synbench.job.spec import JobConfig
from synbench.report.summary import JobCommand, summary


class Task(Plugin):
    """A job kind. Subclass, set the declarations, implement `body` (or, for a task without results, `run`)."""

    entry_point_group = "synbench.tasks"

    results_sections: ClassVar[frozenset[str]] = frozenset()
    generation_fields: ClassVar[frozenset[str]] = frozenset()
    report_section: ClassVar[str | None] = None
    writes_results: ClassVar[bool] = True
    tests_claim: ClassVar[bool] = False

    @classmethod
    def check_plugin_class(cls, name: str) -> None:
        for attr in ("results_sections", "generation_fields"):
            value = getattr(cls, attr)
            if not isinstance(value, frozenset) or not all(isinstance(k, str) for k in value):
                raise PluginError(f"task plugin '{name}': `{attr}` must be a frozenset of names")
        if cls.report_section is not None and not isinstance(cls.report_section, str):
            raise PluginError(f"task plugin '{name}': `report_section` must be a string or None")
        if cls.writes_results and cls.body is Task.body:
            raise PluginError(
                f"task plugin '{name}' writes results but does not implement body(job); implement it, "
                "or set writes_results = False and override run(config, job_dir)"
            )

    def run(self, config: JobConfig, job_dir: Path) -> JobRecord | None:
        """The job in `job_dir` through the task wrapper; its results.json names the report section it belongs to."""

        def body(job: JobRun) -> None:
            job.results.report_section = self.report_section
            self.body(job)

        results = run_job(config, job_dir, body, type(self))
        print(summary(results, job_command(config)))
        return results

    def body(self, job: JobRun) -> None:
        """The task's work on `job` (splits, generator runs, scoring), filling its record `job.results` and calling
        its release step `job.record_release` once the header's figures are known."""
        raise NotImplementedError


def job_command(config: JobConfig) -> JobCommand | None:
    """How Hydra's command line started this job (its overrides, its sweep), for the commands its summary prints;
    None for a job run from Python."""
    if not HydraConfig.initialized():
        return None
    return JobCommand(tuple(HydraConfig.get().overrides.task), config.sweep)
