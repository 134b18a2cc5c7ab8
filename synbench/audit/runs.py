"""The audit's runs: the generator once per private set of the design, every attack scoring every target.

Private set k of repeat r is one `GeneratorRun` under the job's budget
(delta resolved once, from the design's planned private size), with its own
fit seed and noise stream. Its record (`runs/run_<k>.json`, or
`runs/rep<r>_run_<k>.json`) holds the attacks' scores and the output's
health (and, for the first run, the disclosure check's counts), never text; it
is written last and reused on a re-run only for the same job, design and
attacks, so an interrupted audit resumes where it stopped.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from synbench.audit.canaries import make_canaries, with_canaries
from synbench.audit.config import AuditOptions, DisclosureOptions
from synbench.audit.design import AuditDesign, make_design
from synbench.audit.disclosure import SECTION, audit_groups, disclosure_counts
from synbench.core.base import Attack, FitReport
from synbench.core.corpus import Corpus
from synbench.core.progress import progress
from synbench.job.run import GeneratorRun, RunRecord, Score

RUNS_DIR = "runs"


def build_design(audit: AuditOptions, train: Corpus, outliers: np.ndarray, seed: int) -> tuple[AuditDesign, Corpus]:
    """The seeded design and the audit pool it indexes: the training split, then the canaries' copies."""
    design = make_design(len(train), outliers, audit, seed=seed)
    if not audit.canaries:
        return design, train
    canaries = make_canaries(train.subset(design.aux), audit, seed)
    return design, with_canaries(train, canaries)


def private_set_runs(
    design: AuditDesign,
    base: GeneratorRun,
    folder: Path,
    job_key: str,
    attacks: Mapping[str, Attack],
    repeat: int,
    save_synthetic: bool,
) -> list[GeneratorRun]:
    """The run of each private set k of repeat `repeat`: `base` (generator, budget, synthetic size) with its record,
    fit seed (job seed, k, repeat) and noise stream (run `repeat * K + k`)."""
    prefix = "run" if repeat == 0 else f"rep{repeat}_run"
    identity = {"job_key": job_key, "design": design.digest(), "attacks": sorted(attacks)}
    n = len(design.inclusion)
    return [
        replace(
            base,
            seed_path=(k, repeat) if repeat else (k,),
            noise_run=repeat * n + k,
            record=RunRecord(folder / f"{prefix}_{k:03d}.json", identity),
            synthetic_path=folder / f"{prefix}_{k:03d}.synthetic.jsonl" if save_synthetic else None,
        )
        for k in range(n)
    ]


def run_private_sets(
    design: AuditDesign,
    pool: Corpus,
    runs: list[GeneratorRun],
    attacks: Mapping[str, Attack],
    disclosure: DisclosureOptions | None,
    sources: np.ndarray,
) -> list[dict[str, Any]]:
    """Each run's record (saved ones reused): every attack's scores of the design's targets against its output.

    With `disclosure`, the first run's record also holds the disclosure check's counts for its release against its
    private set (synbench.audit.disclosure): the one release task=audit reports, one exact test where testing every
    run would need a correction for K tests. `sources` are the canaries' source documents (`canary_sources`), a
    stratum of that test.
    """
    targets = pool.subset(design.targets).texts
    references = [
        pool.subset(design.reference_set(m), name=f"{pool.name}-ref-{m}") for m in range(len(design.ref_base))
    ]

    def score(k: int) -> Score:
        def figures(synthetic: Corpus, _: FitReport) -> dict[str, Any]:
            found: dict[str, Any] = {
                "scores": {name: a.score(targets, synthetic, references).tolist() for name, a in attacks.items()}
            }
            if disclosure is not None and k == 0:
                private, unseen, strata = audit_groups(design, len(pool), k, sources)
                found[SECTION] = disclosure_counts(
                    pool.subset(private).texts, pool.subset(unseen).texts, synthetic.texts, disclosure, strata
                )
            return found

        return figures

    return [
        run.execute(pool.subset(design.private_set(k), name=f"{pool.name}-audit-{k}"), score(k)).record
        for k, run in progress(list(enumerate(runs)), desc="audit runs", unit="run")
    ]
