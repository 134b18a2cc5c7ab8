"""One place that owns a job's lifecycle (lightning-hydra-template's `task_wrapper`), below the tasks.

Every task that writes results runs its body inside `run_job`: skip when the
job's `results.json` is already complete, start the tracker, time the steps,
write results atomically (also part-way, through `JobRun.save`), record a
failure as `"status": "failed"` with the error, and always finish the tracker.
A task reads its settings from the typed `JobConfig` (`job.config`) and fills
the job's typed record (`job.results`, a `synbench.job.record.JobRecord`); the
helpers every task needs live here: loading the dataset and the one release
step of every task that writes results (`JobRun.record_release`: the header,
the generator's public details and opted-in private statistics, the control
warnings, checked and written). One generator run is
`synbench.job.run.GeneratorRun`.
"""

from __future__ import annotations

import logging
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from synbench.core import registry
from synbench.core.base import DatasetLoader, Generator, Splits
from synbench.job import failures, release
from synbench.job.record import COMPLETE, FAILED, Generation, JobRecord, Timing
from synbench.job.release import TaskDeclarations
from synbench.job.results import RESULTS_FILE, complete_record, new_results, write_results
from synbench.job.run import GeneratorRun, RunOutput
from synbench.job.spec import JobConfig, JobSpec
from synbench.job.tracking import Tracker, make_tracker

log = logging.getLogger(__name__)


class Stopwatch(dict):
    """Seconds per named step, as `<step>_s` keys."""

    @contextmanager
    def __call__(self, step: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self[f"{step}_s"] = round(time.perf_counter() - start, 3)


@dataclass
class JobRun:
    """What a task body works with: the job, its record being filled in, its stopwatch and tracker."""

    config: JobConfig
    job_dir: Path
    results: JobRecord
    timing: Stopwatch
    tracker: Tracker
    task: TaskDeclarations | None = None  # the task class running the job: its declarations extend the release
    generator: type[Generator] | None = None  # the generator class, once the job's release names its runs

    @property
    def spec(self) -> JobSpec:
        """What the job computes, and its key."""
        return self.config.spec

    def save(self) -> None:
        """Write results as they stand (atomically); a reader never sees half a file."""
        self.results.timing = Timing.of(self.timing)
        # the release allow-list enforced (synbench.job.release) with the classes the job holds: no name looked up
        write_results(self.job_dir, self.results, self.generator, self.task)

    def load_splits(self) -> Splits:
        """The dataset's splits for the job's seed, timed as the `load` step."""
        with self.timing("load"):
            return registry.create(DatasetLoader, self.config.dataset).load(self.spec.seed)

    def record_release(
        self,
        splits: Splits,
        generation: Mapping[str, Any],
        run: GeneratorRun | None = None,
        epsilon_spent: float | None = None,
        non_private_control: bool = False,
        fit: RunOutput | None = None,
        size_key: str | None = None,
    ) -> dict[str, list[float]]:
        """The release header of results.json, the same for every task (checked whenever the record is written,
        `save`).

        `run` is the job's generator run (for a job of several runs, the one
        they derive from): its budget's delta (resolved once for the job) and
        noise mode are the ones reported, beside the largest `epsilon_spent`
        of the runs, and its generator class is the one the release check
        reads, and whether the job gave it the private documents
        (`reads_private`: False makes the job a public baseline). A task
        that runs no generator leaves them unset. A task that
        releases the run's output names the option that sizes it
        (`size_key`), and a control's job then warns about what it does not
        apply: its eps, and for copy a size above the private set
        (`generation`'s `planned_private_size` where the job plans one, else
        `n_private`). `fit` is a run done now whose output the job releases:
        the details its generator's class declares public join `generation`,
        and, opted in (`tracking.log_private_stats`), its private statistics,
        named in `non_dp_outputs`; its per-step private curves are returned,
        for the tracker only.
        """
        record = self.results
        record.label_space_inferred = splits.label_space_inferred
        record.source_revision = splits.source_revision
        record.non_private_control = non_private_control
        record.generation = Generation.of(generation)
        curves: dict[str, list[float]] = {}
        if run is not None:
            self.generator = run.generator_class
            record.delta = run.privacy.delta
            record.epsilon_spent = epsilon_spent
            record.noise = release.noise_mode(self.generator, run.privacy.noise.mode)
            record.reads_private = run.reads_private
        if run is not None and size_key is not None:
            n_private = record.generation.planned_private_size or record.generation.n_private or 0
            release.warn_about_control(
                run.generator_class,
                run.name,
                run.privacy.epsilon,
                non_private_control,
                n_private,
                run.n_synthetic,
                size_key,
            )
        if fit is not None and fit.generator is not None and fit.report is not None:
            generator, report = fit.generator, fit.report
            scalars, curves = release.split_private_stats(report.private_stats if self.config.log_private_stats else {})
            details = {**report.details, **generator.sampling_details()}
            record.generation.update(release.public_details(generator, self.spec.generator, details) | scalars)
            record.mark_non_dp(
                [f"generation.{k}" for k in scalars] + [f"{release.TRACKER_PREFIX}fit/{k}" for k in curves]
            )
        return curves


def error_record(exc: BaseException) -> dict[str, str]:
    """The error as results keep it (`synbench.job.failures`): our errors' messages never quote data; for any other
    exception, the plugin that raised it, its type and the file:line of the raise, never its message."""
    return failures.describe(exc).record()


def run_job(
    config: JobConfig,
    job_dir: Path,
    body: Callable[[JobRun], None],
    task: TaskDeclarations | None = None,
) -> JobRecord:
    """Run `body` as the job in `job_dir`, unless its results are already complete; returns its record.

    `task` is the class of the task running it (`synbench.tasks.base.Task.run` passes its own): the release
    check reads its declarations.
    """
    spec = config.spec
    done = complete_record(job_dir, spec)
    if done is not None:
        log.info("results already complete in %s; skipping (delete results.json to re-run)", job_dir)
        return done
    job = JobRun(
        config,
        job_dir,
        new_results(spec),
        Stopwatch(),
        make_tracker(config.tracking or {}, spec, job_dir, group=config.sweep),
        task,
    )
    failed = True
    try:
        body(job)
        job.results.status = COMPLETE
        job.save()
        failed = False
        log.info("results: %s", job_dir / RESULTS_FILE)
        return job.results
    except BaseException as exc:
        job.results.status, job.results.error = FAILED, error_record(exc)
        job.save()
        raise
    finally:
        job.tracker.finish(failed=failed)
