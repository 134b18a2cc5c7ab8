"""`task=model_audit`: membership attacks on a downstream classifier in four regimes (the paper's table 4).

The design is the audit's (`synbench.audit.design`, one-run mode): targets
drawn from a seeded pool of the training split, the audited model's private
set (D_prv plus each target with probability 1/2: members are the targets
in it, non-members real documents held out of it) and M reference sets
from D_aux, each target in exactly M/2 of them (`references: paired`), or in
none (`references: out`, offline attacks only). Population samples for
RMIA come from the real eval split, which no model trains on. Per regime the
audited and the reference models are trained the same way
(`synbench.model_audit.runs`), each attack scores the targets, and the
audit's ROC and epsilon code gives the figures. Scores and statistics per
document stay in the job folder; results hold only the aggregate figures.
"""

from __future__ import annotations

import logging
import math
from dataclasses import replace
from pathlib import Path

import numpy as np

from synbench.audit.config import AuditOptions
from synbench.audit.design import AuditDesign, make_design
from synbench.audit.targets import select_targets
from synbench.core import registry, schema
from synbench.core.base import Classifier, EncoderSpec, ModelAttack
from synbench.core.corpus import Corpus
from synbench.core.errors import ConfigError
from synbench.core.files import save_arrays_atomic
from synbench.job.lifecycle import JobRun
from synbench.job.record import ModelAudit
from synbench.job.run import GeneratorRun
from synbench.job.spec import JobConfig
from synbench.model_audit.config import DP_REGIMES, ModelAuditOptions
from synbench.model_audit.head import LogisticHead
from synbench.model_audit.runs import ModelRunner
from synbench.tasks.base import Task
from synbench.text.embeddings import EmbeddingCache

log = logging.getLogger(__name__)
DESIGN_FILE = "model_audit_design.npz"
SCORES_FILE = "model_audit_scores.npz"
# the streams of the job seed this task draws from (numpy's seed sequence [seed, stream]), one per choice
POOL_STREAM = 0x30DE1  # which training documents form the audit's pool
POPULATION_STREAM = 0x909  # which eval documents are the population samples the attacks compare against


class ModelAuditTask(Task):
    """`task=model_audit` (conf/task/model_audit.yaml): membership attacks on downstream classifiers, per regime."""

    results_sections = frozenset({"model_audit"})
    generation_fields = frozenset(
        {
            "n_models",
            "models_resumed",
            "n_pool",
            "n_private",
            "n_aux",
            "planned_private_size",
            "n_synthetic",
            "n_empty",
            "n_degenerate",
        }
    )
    report_section = "model_audit"
    tests_claim = True  # a model audit measures the generator against its nominal eps

    def body(self, job: JobRun) -> None:
        model_audit_job(job)


run = ModelAuditTask().run  # the task as a function, `run(config, job_dir)`, for scripts and tests


def make_attacks(config: JobConfig, audit: ModelAuditOptions) -> dict[str, ModelAttack]:
    """The configured `model_attacks` (each a model attack), checked against the reference design."""
    attacks = {name: registry.create(ModelAttack, n) for name, n in (config.model_attacks or {}).items()}
    if not attacks:
        raise ConfigError("model_attacks is empty; choose some, e.g. model_attacks=[logits,lira,rmia]")
    for name, attack in attacks.items():
        if audit.references == "out" and getattr(attack, "online", False):
            raise ConfigError(
                f"model_audit.references=out trains no reference model on a target, so online attacks "
                f"cannot run: set model_attacks.{name}.online=false"
            )
    return attacks


def build_design(
    audit: ModelAuditOptions, train: Corpus, cache: EmbeddingCache, seed: int
) -> tuple[Corpus, AuditDesign]:
    """The pool (a seeded subset of the training split) and the one-run design over it."""
    rng = np.random.default_rng([seed, POOL_STREAM])
    size = len(train) if audit.max_docs is None else min(audit.max_docs, len(train))
    pool = train.subset(np.sort(rng.permutation(len(train))[:size]), name=f"{train.name}-model-audit")
    if audit.n_targets >= len(pool) - 3:
        raise ConfigError(
            f"model_audit.n_targets={audit.n_targets} leaves too few of the {len(pool)} pooled documents "
            "for the private base and the references; lower it or raise model_audit.max_docs"
        )
    if audit.targets == "outliers":  # the audit's outlier rule with its default settings (conf/task/audit.yaml)
        rule = AuditOptions()
        targets = select_targets(
            cache.embed(pool.texts),
            max_targets=audit.n_targets,
            far_fraction=rule.far_fraction,
            lof_neighbors=rule.lof_neighbors,
            lof_contamination=rule.lof_contamination,
        )
        if len(targets) < audit.n_targets:
            log.warning(
                "model audit: only %d outlier targets found of model_audit.n_targets=%d", len(targets), audit.n_targets
            )
    else:
        targets = np.sort(rng.permutation(len(pool))[: audit.n_targets])
    # the one-run design over these targets alone (no canaries), with the model audit's references
    one_run = AuditOptions(
        mode="one_run", targets="outliers", n_references=audit.n_references, ref_fraction=audit.ref_fraction
    )
    design = make_design(len(pool), targets, one_run, seed=seed)
    if audit.references == "out":
        design = replace(design, ref_inclusion=np.zeros_like(design.ref_inclusion))
    return pool, design


def audit_options(config: JobConfig, epsilon: float) -> ModelAuditOptions:
    """The typed `model_audit` node, refused before any data loads when a DP regime is asked of a job with eps=inf
    (a DP regime trains under the job's budget, which eps=inf does not give)."""
    audit = schema.typed(ModelAuditOptions, config.model_audit or {}, "model_audit")
    if math.isinf(epsilon) and DP_REGIMES & set(audit.regimes):
        raise ConfigError(
            f"eps=inf, but model_audit.regimes includes {sorted(DP_REGIMES & set(audit.regimes))}; "
            "set a finite eps, or list only syn and pri"
        )
    return audit


def require_roc(members: np.ndarray) -> None:
    """Refuse a design whose targets (`members`: in the audited set or not) cannot give an ROC, before any model
    trains: every figure of the audit is read off that curve."""
    if min(members.sum(), (~members).sum()) < 2:
        raise ConfigError(
            f"the design put {members.sum()} of {len(members)} targets in the audited set; an ROC needs "
            "at least 2 members and 2 non-members: raise model_audit.n_targets or change the seed"
        )


def evaluated_documents(
    pool: Corpus, design: AuditDesign, eval_split: Corpus, n_population: int, seed: int
) -> tuple[Corpus, Corpus]:
    """The population samples (seeded eval documents, which no model trains on) and the corpus every model scores:
    the targets then the population, so one pass per model gives the attacks both."""
    order = np.random.default_rng([seed, POPULATION_STREAM]).permutation(len(eval_split))
    population = eval_split.subset(order[:n_population])
    targets = pool.subset(design.targets)
    evaluate = Corpus.build(
        targets.texts + population.texts,
        targets.labels + population.labels,
        pool.label_space,
        multi_label=pool.multi_label,
        name="model-audit-evaluated",
    )
    return population, evaluate


def make_runner(
    job: JobRun,
    audit: ModelAuditOptions,
    pool: Corpus,
    design: AuditDesign,
    evaluate: Corpus,
    cache: EmbeddingCache,
) -> ModelRunner:
    """The runner that trains every regime's audited and reference models the same way: one generator run (the
    job's generator at the budget of the planned private set), one head and, when asked, the utility classifier."""
    config, spec = job.config, job.spec
    utility = registry.create(Classifier, config.classifier or {}) if audit.classifier == "utility" else None
    return ModelRunner(
        spec=spec,
        job_dir=job.job_dir,
        audit=audit,
        pool=pool,
        design=design,
        evaluate=evaluate,
        base=GeneratorRun(
            generator=config.generator,
            name=spec.generator,
            privacy=config.budget(design.planned_private_size()),
            seed=spec.seed,
            n_synthetic=audit.n_synthetic or design.planned_private_size(),
            job_dir=job.job_dir,
        ),
        head=LogisticHead(audit.head, cache.embed),
        classifier=utility,
    )


def model_audit_job(job: JobRun) -> None:
    """The task's body: check the options, draw the design, train and attack per regime, then write the aggregate
    figures (per-target scores stay in the job folder)."""
    config, spec, timing = job.config, job.spec, job.timing
    audit = audit_options(config, spec.epsilon)
    attacks = make_attacks(config, audit)
    cache = EmbeddingCache(EncoderSpec(**(config.encoder or {})), Path(config.cache_dir))
    splits = job.load_splits()
    with timing("design"):
        pool, design = build_design(audit, splits.train, cache, spec.seed)
        design.save(job.job_dir / DESIGN_FILE)
    members = design.inclusion[0]
    require_roc(members)
    population, evaluate = evaluated_documents(pool, design, splits.eval, audit.n_population, spec.seed)
    runner = make_runner(job, audit, pool, design, evaluate, cache)
    resumed = runner.resumable()
    log.info(
        "model audit: %d targets, %d regime(s) x %d models, %d already done",
        len(design.targets),
        len(audit.regimes),
        len(runner.indices),
        resumed,
    )
    results, scores, records = runner.run_regimes(attacks, timing)
    save_arrays_atomic(job.job_dir / SCORES_FILE, members=members, **scores)  # per-target scores: job folder only
    results.update(
        n_targets=len(design.targets),
        n_members=int(members.sum()),
        n_references=audit.n_references,
        n_population=len(population),
        references=audit.references,
        confidence=audit.confidence,
    )
    dp_spent = [results[f"{r}.epsilon_spent"] for r in audit.regimes if r in DP_REGIMES]
    synthetic = [r for r in records if "n_synthetic" in r]
    job.results.model_audit = ModelAudit.of(results)
    job.record_release(
        splits,
        {
            "n_models": len(records),
            "models_resumed": resumed,
            "n_pool": len(pool),
            "n_private": len(design.private),
            "n_aux": len(design.aux),
            "planned_private_size": design.planned_private_size(),
            "n_synthetic": sum(r["n_synthetic"] for r in synthetic),
            "n_empty": sum(r["n_empty"] for r in synthetic),
            "n_degenerate": sum(r.get("n_degenerate", 0) for r in synthetic),
        },
        run=runner.base,
        epsilon_spent=max(dp_spent) if dp_spent else math.inf,
        non_private_control=any(r.get("non_private_control", False) for r in records),
    )
    job.tracker.log_metrics({f"model_audit/{k}": v for k, v in results.items() if isinstance(v, (int, float))})
