"""`GeneratorRun`: one generator run with resume, an atomic record, and the job's delta resolved once and reported."""

from __future__ import annotations

import json
import math
import stat
from dataclasses import replace
from pathlib import Path
from typing import Mapping

import numpy as np
import pytest

from conftest import compose_config
from synbench.core import registry, schema
from synbench.core.base import FitReport, Generator, Splits
from synbench.core.corpus import Corpus, Labels
from synbench.core.privacy import NoiseSource, PrivacySpec
from synbench.job.lifecycle import JobRun, Stopwatch
from synbench.job.results import new_results
from synbench.job.run import GeneratorRun, RunRecord
from synbench.job.spec import JobConfig, derive_seed
from synbench.testing.generator import job_budget


class RecordingGenerator(Generator):
    """Releases its private documents in order and records what every fit was given (size, budget, seed)."""

    public_details = frozenset()
    fits: list[tuple[int, PrivacySpec, int]] = []

    def __init__(self) -> None:
        self._corpus: Corpus | None = None

    def fit(self, corpus: Corpus, privacy: PrivacySpec, seed: int) -> FitReport:
        self._corpus = corpus
        RecordingGenerator.fits.append((len(corpus), privacy, seed))
        return FitReport(epsilon_spent=privacy.epsilon, delta=privacy.delta)

    def sample(self, n: int, label_counts: Mapping[Labels, int] | None = None) -> Corpus:
        corpus = self._corpus
        assert corpus is not None
        idx = [i % len(corpus) for i in range(n)]
        return Corpus.build(
            [corpus.texts[i] for i in idx],
            [corpus.labels[i] for i in idx],
            corpus.label_space,
            name="recorded-synthetic",
        )


@pytest.fixture
def recording(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, PrivacySpec, int]]:
    """`generator=...` builds the recording generator; returns the list of its fits."""
    create = registry.create
    monkeypatch.setattr(
        registry,
        "create",
        lambda kind, node, **extra: RecordingGenerator() if kind is Generator else create(kind, node, **extra),
    )
    monkeypatch.setattr(RecordingGenerator, "fits", [])
    return RecordingGenerator.fits


def corpus(n: int, name: str = "private") -> Corpus:
    words = "dose pain sleep nausea tablet week doctor better worse rash".split()
    texts = [f"{words[i % 10]} {words[(3 * i) % 10]} {words[(7 * i) % 10]} report {i}" for i in range(n)]
    return Corpus.build(texts, [("pos" if i % 2 else "neg",) for i in range(n)], ["neg", "pos"], name=name)


def a_run(folder: Path, **changes: object) -> GeneratorRun:
    run = GeneratorRun(
        {"_plugin_": "copy"},
        "recording",
        job_budget(20, 2.0, noise=NoiseSource(seed=5)),
        seed=7,
        n_synthetic=8,
        seed_path=(3, 1),
        noise_run=4,
        record=RunRecord(folder / "run_004.json", {"job_key": "job-a", "design": "d1"}),
    )
    return replace(run, **changes)


def test_a_finished_run_is_returned_from_its_record_not_run_again(tmp_path: Path, recording: list) -> None:
    run = a_run(tmp_path)
    first = run.execute(corpus(20), lambda synthetic, report: {"n_texts": len(synthetic.texts)})
    assert not first.resumed and first.record["n_texts"] == 8 and len(recording) == 1
    size, budget, seed = recording[0]
    assert size == 20 and seed == derive_seed(7, 3, 1) and seed != 7  # the run's own fit seed, derived from the job's
    assert budget.delta == run.privacy.delta and budget.noise == run.privacy.noise.for_run(4) != run.privacy.noise

    again = run.execute(corpus(20), lambda synthetic, report: pytest.fail("a finished run was scored again"))
    assert again.resumed and again.record == first.record and len(recording) == 1
    for identity in ({"job_key": "job-b", "design": "d1"}, {"job_key": "job-a", "design": "d2"}):
        other = replace(run, record=RunRecord(run.record.path, identity))  # type: ignore[union-attr]
        assert not other.execute(corpus(20)).resumed  # another job's or another design's record is not reused
    assert len(recording) == 3


def test_the_record_is_written_whole_and_private_to_the_user_or_not_at_all(tmp_path: Path, recording: list) -> None:
    folder = tmp_path / "runs"
    run = a_run(folder, record=RunRecord(folder / "run_004.json", {"job_key": "job-a"}, array="signals"))

    def broken(synthetic: Corpus, report: FitReport) -> dict:
        raise RuntimeError("killed while scoring")

    with pytest.raises(RuntimeError):
        run.execute(corpus(20), broken)
    assert not folder.exists() or not any(folder.iterdir())  # nothing half-written: the run counts as not done
    done = run.execute(corpus(20), lambda synthetic, report: {"signals": np.arange(3.0)})
    assert sorted(p.name for p in folder.iterdir()) == ["run_004.json", "run_004.npy"]  # no temporary file left
    for path in folder.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    saved = json.loads((folder / "run_004.json").read_text())
    assert "signals" not in saved and saved["job_key"] == "job-a" and saved["n_private"] == 20
    assert saved["run"] == run.describe() and saved["run"]["delta"] == run.privacy.delta  # the budget it was given
    resumed = run.execute(corpus(20))
    assert resumed.resumed and np.array_equal(resumed.record["signals"], done.record["signals"])
    assert len(recording) == 2


def test_a_run_describes_itself_as_json_with_its_budget_and_noise_mode(tmp_path: Path) -> None:
    run = a_run(tmp_path)
    described = json.loads(json.dumps(run.describe()))
    assert described["delta"] == pytest.approx(1 / 20**2) and described["epsilon"] == 2.0
    assert described["noise"] == "seeded" and described["fit_seed"] == derive_seed(7, 3, 1)
    assert described["generator"] == {"_plugin_": "copy"} and "record" not in described  # what it computes, not where
    assert "privacy" not in described and "noise_seed" not in json.dumps(described)  # the noise source stays out


def test_the_ablation_runs_every_step_at_the_jobs_one_delta_and_reports_that_delta(
    tmp_path: Path, recording: list
) -> None:
    """The removal ablation's runs train on smaller sets, but all get delta = 1/N^2 of the whole private split."""
    from synbench.contamination.config import ContaminationOptions
    from synbench.tasks.contamination import ablation_section

    cfg = compose_config(
        [
            "task=contamination",
            "generator=copy",
            "eps=2",
            "metrics=[utility]",
            "tracking=none",
            f"output_root={tmp_path}",
            "contamination.ablation.enabled=true",
            "contamination.ablation.reps=1",
            "contamination.ablation.steps=[1.0]",
        ]
    )
    config = JobConfig.from_config(cfg)
    job = JobRun(config, tmp_path, new_results(config.spec), Stopwatch(), tracker=None)  # type: ignore[arg-type]
    flagged = np.zeros(30, dtype=bool)
    flagged[:10] = True
    splits = Splits(corpus(30), corpus(12, "eval"))
    section, base, non_private = ablation_section(
        job,
        splits,
        schema.typed(ContaminationOptions, config.contamination or {}, "contamination"),
        flagged,
        config.model or {},
    )
    assert sorted(size for size, _, _ in recording) == [20, 20, 30]  # none, flagged and random arms
    assert {budget.delta for _, budget, _ in recording} == {1 / 30**2}
    assert section["n_runs"] == 3 and section["epsilon_spent"] == 2.0 and not non_private
    # the job's one release step reports the base run's delta beside the runs' largest spend
    job.record_release(splits, {"n_private": 30, "n_eval": 12}, run=base, epsilon_spent=section["epsilon_spent"])
    assert job.results["delta"] == 1 / 30**2 and job.results["epsilon_spent"] == 2.0
    assert math.isclose(
        job.results["delta"], json.loads((tmp_path / "ablation" / "flagged_1_r00.json").read_text())["delta"]
    )
