"""`GeneratorRun`: one run of a generator, described before it starts and executed with resume.

Every task that runs a generator does the same steps: build a fresh
generator from the registry, derive the fit seed, take this run's noise
stream, fit with the job's budget (delta resolved once by the job, never per
run), check what the fit reports it spent, sample, record the run atomically,
and on a re-run return the recorded run instead of redoing it. Those steps
live here once, as HELM's frozen RunSpec does for a run and
lightning-hydra-template's task wrapper for a job: the benchmark's single
run, the audit's K runs, the contamination ablation's steps and the model
audit's SYN models are each a `GeneratorRun`.

This module imports only core modules (registry, privacy, job, base), so the
domain loops in `synbench.audit`, `synbench.contamination` and
`synbench.model_audit` use it without reaching up into the task layer.
"""

from __future__ import annotations

import inspect
import json
from contextlib import AbstractContextManager, nullcontext
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from synbench.core import registry
from synbench.core.base import FitReport, Generator
from synbench.core.corpus import Corpus
from synbench.core.errors import SynBenchError
from synbench.core.files import save_arrays_atomic, to_json, write_corpus_jsonl, write_json_atomic
from synbench.core.privacy import EPS_TOLERANCE, PrivacySpec
from synbench.core.quality import output_health
from synbench.job import release
from synbench.job.spec import derive_seed


def check_budget(report: FitReport, privacy: PrivacySpec, generator: Generator, name: str) -> None:
    """Fail the job when a generator answered a private request with more than it was given.

    Only the core's built-in controls (`release.is_control`: `copy`, `public`)
    may answer a private request with epsilon_spent = inf; nothing a plugin
    class declares exempts it.
    """
    fix = "its accountant or calibration is wrong; report this to the plugin's authors"
    if not privacy.is_private:
        return
    if not report.is_private:
        if release.is_control(generator):
            return
        raise SynBenchError(
            f"generator '{name}' was asked for eps={privacy.epsilon} but reports epsilon_spent=inf "
            f"(no DP), and only the built-in controls (copy, public) may: {fix}"
        )
    if report.epsilon_spent > privacy.epsilon * (1 + EPS_TOLERANCE):
        raise SynBenchError(
            f"generator '{name}' spent epsilon={report.epsilon_spent:.4f}, more than eps={privacy.epsilon}: {fix}"
        )
    if report.delta > privacy.delta * (1 + EPS_TOLERANCE):
        raise SynBenchError(
            f"generator '{name}' reports delta={report.delta:.3g}, more than the job's delta="
            f"{privacy.delta:.3g}: generators must use the delta the core passes in PrivacySpec; {fix}"
        )


@dataclass(frozen=True)
class RunRecord:
    """Where one finished run of a multi-run job is recorded, and what a saved record must match to be reused.

    The JSON record is written last, atomically, so its presence means the run
    is done; a record written for another job or design (`identity`: the job
    key, the design's digest, the flagged documents) is not reused. One
    record key (`array`) may hold a numpy array of statistics per document,
    kept beside the JSON as `<stem>.npy` rather than in it.
    """

    path: Path
    identity: Mapping[str, str]
    array: str | None = None

    @property
    def array_path(self) -> Path:
        return self.path.with_suffix(".npy")

    def load(self) -> dict[str, Any] | None:
        """The saved record of this run, or None when there is none, it is unreadable, or it is another job's."""
        try:
            record = json.loads(self.path.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return None
        if any(record.get(key) != value for key, value in self.identity.items()):
            return None
        if self.array is None:
            return record
        try:
            return {**record, self.array: np.load(self.array_path)}
        except (FileNotFoundError, ValueError):
            return None

    def write(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """Record a finished run (the array first, the JSON last); returns the record with its identity."""
        record = {**self.identity, **record}
        if self.array is not None:
            save_arrays_atomic(self.array_path, **{self.array: np.asarray(record[self.array])})
        write_json_atomic(self.path, {k: v for k, v in record.items() if k != self.array})
        return record


@dataclass(frozen=True)
class RunOutput:
    """What `GeneratorRun.execute` returns: the run's record, and for a run done now the generator, fit report and
    output."""

    record: dict[str, Any]
    generator: Generator | None = None  # None: the run was resumed from its record
    report: FitReport | None = None
    synthetic: Corpus | None = None

    @property
    def resumed(self) -> bool:
        return self.generator is None


Score = Callable[[Corpus, FitReport], Mapping[str, Any]]
Timing = Callable[[str], AbstractContextManager[Any]]


def untimed(step: str) -> AbstractContextManager[Any]:
    return nullcontext()


# GeneratorRun fields left out of its description: where it writes (record, synthetic file, job folder), and the
# privacy spec, which the description gives as epsilon, delta, accountant and noise mode (never the noise seed)
NOT_DESCRIBED = ("privacy", "record", "synthetic_path", "job_dir")


@dataclass(frozen=True)
class GeneratorRun:
    """One generator run, described before it starts: frozen, and serialisable (`describe`).

    `privacy` is the job's budget with delta already resolved (once, for the
    job: never from this run's private set, whose size may reveal how many
    targets it holds); this run fits under it with its own noise stream
    (`noise_run`, for a job of several runs) and the fit seed
    `derive_seed(seed, *seed_path)`. `record`, when set, makes the run
    resumable: `execute` returns the saved record instead of running again.
    """

    generator: Mapping[str, Any]  # the generator's config node: `_plugin_` and its keys
    name: str  # the generator's name in messages and results (the job's `generator`)
    privacy: PrivacySpec
    seed: int  # the job's public seed
    n_synthetic: int
    seed_path: tuple[int, ...] = ()
    noise_run: int | None = None  # run index of a multi-run job; None: the job's own noise stream
    record: RunRecord | None = None
    synthetic_path: Path | None = None  # where the synthetic corpus is written as JSONL, when asked for
    # the job's folder, given to a generator whose constructor takes `job_dir` (DP-Gen's checkpoint goes there): a
    # place it writes, so not part of what the run computes, nor of the job's key
    job_dir: Path | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)  # fields the record carries about this run (arm, step, ...)

    @property
    def fit_seed(self) -> int:
        return derive_seed(self.seed, *self.seed_path)

    @property
    def budget(self) -> PrivacySpec:
        """The privacy spec this run's fit receives: the job's epsilon and delta, this run's noise stream."""
        if self.noise_run is None:
            return self.privacy
        return replace(self.privacy, noise=self.privacy.noise.for_run(self.noise_run))

    def describe(self) -> dict[str, Any]:
        """What the run computes, JSON-safe: generator config, budget (the noise mode, never a noise seed), seeds, size.

        Where it writes (record, synthetic file) is left out, as a job's key
        leaves out where it logs. A recorded run carries it as `run`.
        """
        return to_json(
            {
                **{k: v for k, v in asdict(self).items() if k not in NOT_DESCRIBED},
                "epsilon": self.privacy.epsilon,
                "delta": self.privacy.delta,
                "accountant": self.privacy.accountant,
                "noise": self.privacy.noise.mode,
                "fit_seed": self.fit_seed,
            }
        )

    def saved(self) -> dict[str, Any] | None:
        """The record of this run when it has already finished for this job."""
        return self.record.load() if self.record is not None else None

    @cached_property
    def generator_class(self) -> type[Generator]:
        """The class the run's config node names, loaded once: the run builds it, and the job hands it to the release
        check (`JobRun.record_release`), so no writer looks the name up again."""
        return registry.load(Generator, str(self.generator.get(registry.PLUGIN_KEY, self.name)))

    @cached_property
    def reads_private(self) -> bool:
        """Whether this run's fit is given the private documents: the job decides it from the generator's class and
        config (`Generator.reads_private`: never for `public` and `template`, nor for a command program run with
        `generator.withhold_private`), before the generator exists, and records it; nothing the generator reports
        about itself changes it."""
        return self.generator_class.reads_private(self.generator)

    def build(self) -> Generator:
        """A new generator from the run's config node, given the job's folder when its constructor takes one."""
        takes_folder = self.job_dir is not None and "job_dir" in inspect.signature(self.generator_class).parameters
        return registry.create(Generator, self.generator, **({"job_dir": str(self.job_dir)} if takes_folder else {}))

    def execute(self, private: Corpus, score: Score | None = None, timing: Timing = untimed) -> RunOutput:
        """Run the generator on `private` (or return the saved run): fit, budget check, sample, score, record.

        `score(synthetic, report)` adds the caller's figures (attack scores,
        utility) to the record before it is written, so a recorded run is a
        finished run. `timing(step)` times the `fit` and `sample` steps.
        """
        saved = self.saved()
        if saved is not None:
            return RunOutput(saved)
        generator = self.build()  # fresh: no state shared between runs
        budget = self.budget
        generator.expect_samples(self.n_synthetic)
        given = private if self.reads_private else private.subset([], name=f"{private.name}-withheld")
        with timing("fit"):
            report = generator.fit(given, budget, self.fit_seed)
        check_budget(report, budget, generator, self.name)
        with timing("sample"):
            synthetic = generator.sample(self.n_synthetic)
        if self.synthetic_path is not None:
            write_corpus_jsonl(self.synthetic_path, synthetic)
        non_private = release.is_control(generator) and not report.is_private  # copy; not public, which spends 0
        record = {
            **self.extra,
            "run": self.describe(),
            "epsilon_spent": report.epsilon_spent,
            "delta": report.delta,
            "n_private": len(private),
            "n_synthetic": len(synthetic),
            **output_health(synthetic.texts),
            "non_private_control": non_private,
            **(score(synthetic, report) if score else {}),
        }
        if self.record is not None:
            record = self.record.write(record)
        return RunOutput(record, generator, report, synthetic)
