"""`task=audit`: measure privacy empirically with a membership attack on outlier targets and canaries.

Targets are outliers chosen in embedding space and/or canaries (crafted
documents, synbench.audit.canaries); the design says which targets go into
which private set (K paired subsets, or one set for the one-run audit), the
generator runs once per private set, and the attack scores every target
against each released synthetic corpus. `audit.repeats` runs the whole audit
again with a fresh design and fresh randomness. Each finished run is saved
atomically under `runs/` with the job key and the design's digest, so an
interrupted audit resumes where it stopped. Only scores and metrics leave this
module: no private text, target or canary is logged, tracked, or put in an
error message.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

import numpy as np

from synbench.audit.attacks import attacks_from_node
from synbench.audit.canaries import canary_sources
from synbench.audit.config import AuditOptions
from synbench.audit.disclosure import SECTION as DISCLOSURE
from synbench.audit.disclosure import disclosure_test, record_disclosure
from synbench.audit.paper_reading import PAPER_REGION, paper_reading_false_alarm
from synbench.audit.plot import plot_roc
from synbench.audit.repeats import block_bootstrap, pooled_summary, repeat_summary
from synbench.audit.runs import RUNS_DIR, build_design, private_set_runs, run_private_sets
from synbench.audit.summary import family_level, summarise
from synbench.audit.targets import listed_targets, select_targets
from synbench.core import schema
from synbench.core.base import EncoderSpec
from synbench.core.corpus import Corpus
from synbench.core.files import save_arrays_atomic
from synbench.job import release
from synbench.job.lifecycle import JobRun
from synbench.job.run import GeneratorRun
from synbench.job.spec import JobConfig, derive_seed
from synbench.tasks.base import Task
from synbench.text.embeddings import EmbeddingCache

log = logging.getLogger(__name__)
DESIGN_FILE = "audit_design.npz"
SCORES_FILE = "audit_scores.npz"
PLOT_FILE = "audit_roc.png"


def select_outliers(config: JobConfig, audit: AuditOptions, train: Corpus) -> np.ndarray:
    """Outlier targets from the configured encoder's embeddings of the training split (none for canaries only), or
    the positions `audit.target_positions` lists."""
    if not audit.outliers:
        return np.zeros(0, dtype=np.int64)
    if audit.target_positions is not None:
        return listed_targets(audit.target_positions, len(train))
    cache = EmbeddingCache(EncoderSpec(**(config.encoder or {})), Path(config.cache_dir))
    return select_targets(
        cache.embed(train.texts),
        max_targets=audit.n_targets,
        far_fraction=audit.far_fraction,
        lof_neighbors=audit.lof_neighbors,
        lof_contamination=audit.lof_contamination,
    )


class AuditTask(Task):
    """`task=audit` (conf/task/audit.yaml): the membership audit of released text; its figures go to `audit`."""

    generation_fields = frozenset(
        {
            "n_runs",
            "runs_resumed",
            "n_private",
            "n_aux",
            "n_synthetic",
            "n_empty",
            "n_degenerate",
            "degenerate_share",
            "planned_private_size",
        }
    )
    results_sections = frozenset({DISCLOSURE})
    report_section = "audit"
    tests_claim = True  # an audit measures the generator against its nominal eps

    def body(self, job: JobRun) -> None:
        audit_job(job)


run = AuditTask().run  # the task as a function, `run(config, job_dir)`, for scripts and tests


def audit_once(job: JobRun, audit: AuditOptions, train: Corpus, outliers: np.ndarray, repeat: int) -> dict[str, Any]:
    """One complete audit (design, runs, summary); the first repeat also saves its design, scores and ROC plot."""
    config, spec, job_dir = job.config, job.spec, job.job_dir
    seed = derive_seed(spec.seed, *([repeat] if repeat else []))  # the job's seed for the first repeat
    suffix = "" if repeat == 0 else f"_rep{repeat}"
    with job.timing("design"):
        design, pool = build_design(audit, train, outliers, seed)
        design.save(job_dir / DESIGN_FILE.replace(".npz", f"{suffix}.npz"))
    attacks = attacks_from_node(config.attack or {})
    size = design.planned_private_size()  # the job's delta comes from it, resolved once, never from a run's own set
    base = GeneratorRun(
        config.generator,
        spec.generator,
        config.budget(size),
        spec.seed,
        audit.n_synthetic or size,
        job_dir=job_dir,
    )
    runs = private_set_runs(design, base, job_dir / RUNS_DIR, spec.key, attacks, repeat, audit.save_synthetic)
    disclosure = audit.disclosure if audit.disclosure.enabled and repeat == 0 else None  # the first run's release
    resumed = sum(run.saved() is not None for run in runs)
    log.info(
        "audit (%s, repeat %d): %d outlier targets, %d canaries, %d private set(s), %d already done",
        audit.mode,
        repeat,
        int((design.kinds == 0).sum()),
        int((design.kinds == 1).sum()),
        len(design.inclusion),
        resumed,
    )
    with job.timing("runs"):
        sources = canary_sources(design.aux, int((design.kinds == 1).sum()), seed)  # the disclosure test's stratum
        records = run_private_sets(design, pool, runs, attacks, disclosure, sources)
    scores = {name: np.array([r["scores"][name] for r in records], dtype=float) for name in attacks}
    delta = audit.delta if audit.delta is not None else base.privacy.delta
    with job.timing("summary"):
        summary, roc, point = summarise(
            scores, design.inclusion, audit, delta, design.kinds, seed, spec.epsilon, audit.canary_repeats
        )
        if repeat == 0:
            save_arrays_atomic(
                job_dir / SCORES_FILE,
                **{f"scores_{n}": s for n, s in scores.items()},
                members=design.inclusion,
                kinds=design.kinds,
                thresholds=roc.thresholds,
                tp=roc.tp,
                fp=roc.fp,
                fpr=roc.fpr,
                tpr=roc.tpr,
            )
            if audit.mode == "k_subsets" and len(records) >= 4:
                chosen = scores[summary.get("attack_chosen", next(iter(scores)))]
                summary.update(
                    block_bootstrap(chosen, design.inclusion, 2, audit.bootstrap_samples, seed, audit.confidence)
                )
            plot_roc(
                roc,
                job_dir / PLOT_FILE,
                nominal_eps=spec.epsilon,
                delta=delta,
                eps_grid=audit.eps_grid,
                point=point,
                title=f"{spec.generator} on {spec.dataset}, {audit.mode}, nominal eps={spec.epsilon:g}",
            )
    return {
        "summary": summary,
        "runs": records,
        "resumed": resumed,
        "base": base,
        "design": design,
        "delta": delta,
        "scores": scores,
    }


def paper_reading_figures(audit: AuditOptions, summary: dict[str, Any], eps: float, delta: float) -> dict[str, float]:
    """How often the paper's reading (point estimates at the grid's FPRs in [0.1, 0.2]) would exceed the nominal eps
    for a mechanism exactly eps-DP with this audit's numbers of member and non-member trials (public figures);
    nothing at eps = inf (no claim) or without such FPRs."""
    low, high = PAPER_REGION
    fprs = tuple(f for f in audit.fpr_grid if low <= f <= high)
    members, trials = int(summary["n_member_trials"]), int(summary["n_trials"])
    if math.isinf(eps) or not fprs:
        return {}
    found = paper_reading_false_alarm(eps, members, trials - members, fprs, delta)
    return {"paper_reading_false_alarm": found.rate, "paper_reading_false_alarm_se": found.standard_error}


def audit_job(job: JobRun) -> None:
    config, spec = job.config, job.spec
    audit = schema.typed(AuditOptions, config.audit or {}, "audit")
    splits = job.load_splits()
    with job.timing("targets"):
        outliers = select_outliers(config, audit, splits.train)
    # a pooled one-run audit draws two verdicts (the first run's, the pool's): each is tested at half the level
    pooled = audit.repeats > 1 and audit.mode == "one_run"
    tested = family_level(audit, 2) if pooled else audit
    audits = [audit_once(job, tested, splits.train, outliers, r) for r in range(audit.repeats)]
    first, runs = audits[0], [run for a in audits for run in a["runs"]]
    summary = dict(first["summary"], targets=audit.targets, canary_repeats=audit.canary_repeats)
    if audit.repeats > 1:
        summary.update(repeat_summary([a["summary"] for a in audits], audit.confidence))
    if pooled:
        summary.update(
            pooled_summary(
                [a["scores"] for a in audits],
                [a["design"].inclusion for a in audits],
                [a["design"].kinds for a in audits],
                [a["summary"]["eps_emp_lower"] for a in audits],
                tested,
                first["delta"],
                spec.seed,
                spec.epsilon,
            )
        )
    summary.update(paper_reading_figures(audit, summary, spec.epsilon, first["delta"]))
    base, design = first["base"], first["design"]
    epsilon_spent = max(float(r["epsilon_spent"]) for r in runs)
    job.record_release(
        splits,
        {
            "n_runs": len(runs),
            "runs_resumed": sum(a["resumed"] for a in audits),
            "n_private": len(design.private),
            "n_aux": len(design.aux),
            "planned_private_size": design.planned_private_size(),
            "n_synthetic": base.n_synthetic,
            "n_empty": sum(r["n_empty"] for r in runs),
            "n_degenerate": sum(r.get("n_degenerate", 0) for r in runs),
            "degenerate_share": float(np.mean([r.get("degenerate_share", 0.0) for r in runs])),
        },
        run=base,
        epsilon_spent=epsilon_spent,
        # copy: releases private data at any eps
        non_private_control=release.is_control(base.generator_class) and math.isinf(epsilon_spent),
        size_key="audit.n_synthetic",
    )
    job.results.audit.update(summary)
    if audit.disclosure.enabled:  # counts of the first run's release against its private set: the operator's check
        found = disclosure_test(runs[0][DISCLOSURE], 1 - audit.confidence, audit.disclosure)
        job.results.mark_non_dp(record_disclosure(job.results, found))
    job.tracker.log_metrics({f"audit/{k}": v for k, v in summary.items()} | {"epsilon_spent": epsilon_spent})
    job.tracker.log_image("audit/roc", job.job_dir / PLOT_FILE)
    log.info(
        "audit: AUC %.3f, eps_emp %.3f (estimate), eps_emp_lower %.3f (%.0f%% bound; nominal eps %s), "
        "gdp_mu_lower %.3f; %s",
        summary["auc"],
        summary["eps_emp"],
        summary["eps_emp_lower"],
        100 * audit.confidence,
        spec.epsilon,
        summary["gdp_mu_lower"],
        summary["verdict_line"],
    )
