"""`task=benchmark`: fit a generator on the private split, sample, score the output."""

from __future__ import annotations

import logging

from synbench.audit.config import AuditOptions
from synbench.audit.disclosure import SECTION as DISCLOSURE
from synbench.audit.disclosure import disclosure_counts, disclosure_test, record_disclosure
from synbench.core import registry, schema
from synbench.core.base import EncoderSpec, Metric, MetricContext
from synbench.core.corpus import Corpus
from synbench.core.errors import PluginError
from synbench.core.progress import progress
from synbench.filters import SUFFIX as FILTERED
from synbench.filters import apply_filter
from synbench.job.lifecycle import JobRun
from synbench.job.run import GeneratorRun
from synbench.tasks.base import Task
from synbench.tasks.options import BenchmarkOptions

log = logging.getLogger(__name__)


class BenchmarkTask(Task):
    """`task=benchmark` (conf/task/benchmark.yaml): one generator run, scored by the metrics (and the filter)."""

    results_sections = frozenset({"filter", "utility_filtered", "fidelity_filtered", "higher_is_better", DISCLOSURE})
    generation_fields = frozenset(
        {"n_private", "n_eval", "n_synthetic", "n_empty", "n_degenerate", "empty_share", "degenerate_share"}
    )
    report_section = "benchmark"
    options = BenchmarkOptions

    def body(self, job: JobRun) -> None:
        benchmark(job)


run = BenchmarkTask().run  # the task as a function, `run(config, job_dir)`, for scripts and tests


def score_metrics(
    job: JobRun, real: Corpus, synthetic: Corpus, ctx: MetricContext, opt_in: bool, suffix: str = ""
) -> list[str]:
    """Every configured metric of `synthetic` into `results[<section><suffix>]`; returns the non-DP keys written
    (a metric's diagnostic keys always, its other non-DP keys on opt-in)."""
    written_by: dict[str, str] = {}
    non_dp: list[str] = []
    for name, metric_node in progress(job.config.metrics.items(), desc="metrics", unit="metric"):
        metric = registry.create(Metric, metric_node)
        with job.timing(f"metric_{name}{suffix}"):
            values = metric(real, synthetic, ctx)
        for key in values:
            other = written_by.setdefault(f"{metric.section}.{key}", name)
            if other != name:
                raise PluginError(
                    f"metrics '{other}' and '{name}' both report {metric.section}.{key}; rename the key in one of them"
                )
        private = metric.non_dp_keys() & set(values)
        job.results.section(metric.section + suffix).update(
            {k: v for k, v in values.items() if opt_in or k not in private}
        )
        # the metric's directions go with its figures, so the report reads them from results.json, not from its class
        job.results.section("higher_is_better").update(
            {f"{metric.section}{suffix}.{k}": bool(up) for k, up in metric.higher_is_better.items() if k in values}
        )
        diagnostics = [f"{metric.section}{suffix}.{k}" for k in sorted(metric.diagnostic_keys() & set(values))]
        # named apart as well, so the report does not mark a generator's row "not DP" for the operator's reference
        job.results.mark_diagnostic(diagnostics)
        non_dp += diagnostics + [f"{metric.section}{suffix}.{k}" for k in sorted(private) if opt_in]
    return non_dp


def benchmark(job: JobRun) -> None:
    config, spec, results, timing = job.config, job.spec, job.results, job.timing
    options = schema.typed(BenchmarkOptions, config.task, "task")
    opt_in = config.log_private_stats
    splits = job.load_splits()
    privacy = config.budget(len(splits.train))
    run = GeneratorRun(
        config.generator,
        spec.generator,
        privacy,
        spec.seed,
        options.n_synthetic or len(splits.train),
        synthetic_path=job.job_dir / "synthetic.jsonl" if options.save_synthetic else None,
        job_dir=job.job_dir,
    )
    log.info(
        "fitting generator '%s' on %d private documents (eps=%s)", spec.generator, len(splits.train), privacy.epsilon
    )
    done = run.execute(splits.train, timing=timing)  # the job's one run: results.json is its record
    generator, report, synthetic = done.generator, done.report, done.synthetic
    assert generator is not None and report is not None and synthetic is not None
    health = {k: done.record[k] for k in ("n_synthetic", "n_empty", "n_degenerate", "empty_share", "degenerate_share")}
    private_curves = job.record_release(
        splits,
        {"n_private": len(splits.train), "n_eval": len(splits.eval), **health},
        run=run,
        epsilon_spent=report.epsilon_spent,
        non_private_control=done.record["non_private_control"],
        fit=done,
        size_key="task.n_synthetic",
    )
    if options.disclosure.enabled:  # the operator's check of copies, at the audit's default level
        with timing(DISCLOSURE):
            counts = disclosure_counts(splits.train.texts, splits.eval.texts, synthetic.texts, options.disclosure)
        results.mark_non_dp(
            record_disclosure(results, disclosure_test(counts, 1 - AuditOptions.confidence, options.disclosure))
        )
    job.save()
    ctx = MetricContext(
        seed=spec.seed,
        job_dir=str(job.job_dir),
        train=splits.train,
        cache_dir=config.cache_dir,
        encoder=EncoderSpec(**config.encoder) if config.encoder else None,
    )
    non_dp = score_metrics(job, splits.eval, synthetic, ctx, opt_in)
    non_dp += apply_filter(
        config.filter or {},
        synthetic,
        job.job_dir,
        results,
        lambda kept: score_metrics(job, splits.eval, kept, ctx, opt_in, suffix=FILTERED),
    )
    results.mark_non_dp(non_dp)
    tracked = {f"{s}/{k}": v for s in ("utility", "fidelity", "audit", "timing") for k, v in results.section(s).items()}
    tracked.pop(f"timing/{DISCLOSURE}_s", None)  # the check's time depends on the private documents: results.json only
    job.tracker.log_metrics(tracked | {"epsilon_spent": report.epsilon_spent})
    for curve, values in private_curves.items():
        for step, value in enumerate(values):
            job.tracker.log_metrics({f"fit/{curve}": value}, step=step)
    job.tracker.log_samples(synthetic, report)
    if opt_in:
        log.warning(
            "tracking.log_private_stats=true: this job released statistics of private data without noise "
            "(listed in results.json under non_dp_outputs); its output is not DP"
        )
