"""`task=benchmark`: fit a generator on the private split, sample, score the output."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from omegaconf import DictConfig
from tqdm.auto import tqdm

from synbench import registry, release
from synbench.base import MetricContext
from synbench.embeddings import EncoderSpec
from synbench.job import JobSpec, is_complete, new_results, read_results, write_corpus_jsonl, write_json_atomic
from synbench.tasks.common import Stopwatch, check_budget, load_splits, log_private_stats, node, privacy_spec
from synbench.tracking import make_tracker

log = logging.getLogger(__name__)


def run(cfg: DictConfig, spec: JobSpec, job_dir: Path) -> dict[str, Any]:
    if is_complete(job_dir, spec):
        log.info("results already complete in %s; skipping (delete results.json to re-run)", job_dir)
        return read_results(job_dir) or {}
    results = new_results(spec)
    timing = Stopwatch()
    opt_in = log_private_stats(cfg)
    tracker = make_tracker(node(cfg, "tracking"), spec, job_dir, group=str(cfg.sweep))
    try:
        with timing("load"):
            splits = load_splits(cfg, spec.seed)
        privacy = privacy_spec(cfg, len(splits.train))
        generator = registry.create("generators", node(cfg, "generator"))
        log.info("fitting generator '%s' on %d private documents (eps=%s)", spec.generator, len(splits.train), privacy.epsilon)
        with timing("fit"):
            report = generator.fit(splits.train, privacy, spec.seed)
        check_budget(report, privacy, spec.generator)
        n = int(cfg.task.n_synthetic or len(splits.train))
        with timing("sample"):
            synthetic = generator.sample(n)
        if cfg.task.save_synthetic:
            write_corpus_jsonl(job_dir / "synthetic.jsonl", synthetic)
        private_scalars, private_curves = release.split_private_stats(report.private_stats if opt_in else {})
        results.update(
            delta=privacy.delta,  # the job's delta, which the generator met (check_budget)
            epsilon_spent=report.epsilon_spent,
            noise=privacy.noise.mode,
            label_space_inferred=splits.label_space_inferred,
            generation={
                "n_private": len(splits.train),
                "n_eval": len(splits.eval),
                "n_synthetic": len(synthetic),
                "n_empty": sum(1 for t in synthetic.texts if not t.strip()),
                **release.public_details(generator, spec.generator, report.details),
                **private_scalars,
            },
        )
        non_dp = [f"generation.{k}" for k in private_scalars] + [f"{release.TRACKER_PREFIX}fit/{k}" for k in private_curves]
        results["non_dp_outputs"] = sorted(non_dp)
        write_json_atomic(job_dir / "results.json", results)
        ctx = MetricContext(seed=spec.seed, job_dir=str(job_dir), train=splits.train, cache_dir=cfg.get("cache_dir"),
                            encoder=EncoderSpec(**node(cfg, "encoder")) if cfg.get("encoder") else None)
        metrics = node(cfg, "metrics")
        for name, metric_node in tqdm(metrics.items(), desc="metrics", disable=not metrics):
            metric = registry.create("metrics", metric_node)
            with timing(f"metric_{name}"):
                values = metric(splits.eval, synthetic, ctx)
            private = metric.non_dp_keys() & set(values)
            results[metric.section].update({k: v for k, v in values.items() if opt_in or k not in private})
            non_dp += [f"{metric.section}.{k}" for k in private] if opt_in else []
        results["non_dp_outputs"] = sorted(non_dp)
        results["timing"] = dict(timing)
        results["status"] = "complete"
        write_json_atomic(job_dir / "results.json", results)
        tracker.log_metrics({f"{s}/{k}": v for s in ("utility", "fidelity", "audit", "timing") for k, v in results[s].items()}
                            | {"epsilon_spent": report.epsilon_spent})
        for curve, values in private_curves.items():
            for step, value in enumerate(values):
                tracker.log_metrics({f"fit/{curve}": value}, step=step)
        tracker.log_samples(synthetic, report)
        if opt_in:
            log.warning("tracking.log_private_stats=true: this job released statistics of private data without noise "
                        "(listed in results.json under non_dp_outputs); its output is not DP")
        log.info("results: %s", job_dir / "results.json")
        return results
    finally:
        tracker.finish()
