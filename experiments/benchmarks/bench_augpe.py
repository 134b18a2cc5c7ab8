"""AUG-PE on CPU: the cost of the private vote and of the LM's variations, and whether evolution helps.

The vote is numpy (no GPU path): exact L2 nearest neighbour in blocks of
private rows. Measured at the demo's size (600 private documents, 90
candidates) and at a paper-like size (5,000 private, 10,000 candidates, 384
dims = MiniLM). The LM figure is VARIATION_API throughput with the demo model
(SmolLM2-135M, 48 new tokens) at batch 32 against batch 1 on a few prompts.

`evolution`: the demo grid's benchmark job (generator=augpe_grid, dataset
drugreview_condition6, 116 synthetic documents, metrics=[utility]) run in this
process with the generator's `on_iteration` hook set: after RANDOM_API
(iteration 0) and after each vote, the utility metric's classifier is trained
on that population and scored on the real eval split, so the per-iteration
macro F1 shows what the votes add. That is an operator's diagnostic of the
benchmark, outside any job's release (no results.json is written); the
populations it scores are DP outputs, as the release is. Per run: macro F1
by iteration, the released sample's macro F1, fit and sample seconds (wall
and CPU of this process, one torch thread) and the LM calls. Rows are
appended to `results/bench_augpe.rows.jsonl` as measured (resumable);
`python experiments/benchmarks/bench_augpe.py inf:0 4:1` measures those
(eps:seed) runs now, `BENCH_AUGPE_RUNS=inf:0,inf:1` picks the runs `make bench
BENCH=augpe` measures (default: eps inf, 4 and 1 at seeds 0-2).
Run: `make bench BENCH=augpe`.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from synbench.generators.augpe import evolution

HERE = Path(__file__).resolve().parent
ROWS_FILE = HERE / "results" / "bench_augpe.rows.jsonl"
N_SYNTHETIC = 116  # the demo grid's benchmark slice at the size its AUG-PE targets are stated for
DEFAULT_RUNS = [f"{eps}:{seed}" for eps in ("inf", "4", "1") for seed in (0, 1, 2)]


def vote_seconds(n_private: int, n_candidates: int, dim: int = 384, classes: int = 3) -> float:
    rng = np.random.default_rng(0)
    private = rng.normal(size=(n_private, dim)).astype(np.float32)
    candidates = rng.normal(size=(n_candidates, dim)).astype(np.float32)
    private_class, cand_class = rng.integers(0, classes, n_private), rng.integers(0, classes, n_candidates)
    start = time.perf_counter()
    counts = evolution.vote_histogram(private, private_class, candidates, cand_class)
    noisy = evolution.noisy_histogram(counts, 3.0, rng, 0.0)
    evolution.select(noisy, cand_class, [n_candidates // (7 * classes)] * classes, "rank", rng)
    return time.perf_counter() - start


def variation_throughput(batch_size: int, n: int) -> float:
    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    from synbench.core.base import ChatRequest
    from synbench.lm.backends import LocalBackend
    from synbench.lm.prompts import load_prompts

    with initialize_config_module(config_module="synbench.conf", version_base="1.3"):
        cfg = compose(config_name="config")
    backend = LocalBackend(OmegaConf.to_container(cfg.model, resolve=True), batch_size=batch_size, num_threads=1)
    backend.loaded()
    prompts = load_prompts("drugreview")
    parent = "I took this for my back pain and it helped a lot within a week, but I felt dizzy in the mornings."
    requests = [ChatRequest(*prompts.render("rephrase", ("positive",), text=parent, words=20)) for _ in range(n)]
    start = time.perf_counter()
    backend.complete(requests, max_new_tokens=48, temperature=1.0, top_p=0.95, seed=0)
    return n / (time.perf_counter() - start)


def evolution_run(eps: str, seed: int, n: int = N_SYNTHETIC, extra: Sequence[str] = ()) -> dict[str, Any]:
    """One benchmark job of the grid's AUG-PE (`extra`: overrides on top of it), in process, with the utility macro
    F1 of every iteration's population."""
    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    from synbench.core import registry
    from synbench.core.base import DatasetLoader, EncoderSpec, Generator, Metric, MetricContext
    from synbench.core.corpus import Corpus
    from synbench.job.spec import JobConfig

    overrides = ["generator=augpe_grid", f"eps={eps}", f"seed={seed}", "metrics=[utility]", "tracking=none", *extra]
    with initialize_config_module(config_module="synbench.conf", version_base="1.3"):
        cfg = compose(config_name="config", overrides=overrides)
    job = JobConfig.from_config(cfg)
    splits = registry.create(DatasetLoader, job.dataset).load(seed)
    generator = registry.create(Generator, job.generator)
    metric = registry.create(Metric, OmegaConf.to_container(cfg.metrics.utility, resolve=True))
    ctx = MetricContext(
        seed=seed,
        job_dir=str(HERE / "results"),
        train=splits.train,
        cache_dir=job.cache_dir,
        encoder=EncoderSpec(**job.encoder) if job.encoder else None,
    )
    by_iteration: list[float] = []
    scoring = [0.0]

    def score(t: int, population: Corpus) -> None:
        start = time.process_time()
        by_iteration.append(round(metric(splits.eval, population, ctx)["f1_macro"], 4))
        scoring[0] += time.process_time() - start

    generator.on_iteration = score
    generator.expect_samples(n)
    wall, cpu = time.perf_counter(), time.process_time()
    report = generator.fit(splits.train, job.budget(len(splits.train)), seed)
    fit_wall, fit_cpu = time.perf_counter() - wall, time.process_time() - cpu - scoring[0]
    wall, cpu = time.perf_counter(), time.process_time()
    synthetic = generator.sample(n)
    sample_wall, sample_cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {
        "eps": eps,
        "seed": seed,
        "f1_macro_by_iteration": by_iteration,
        "f1_macro": round(metric(splits.eval, synthetic, ctx)["f1_macro"], 4),
        "fit_s": round(fit_wall, 1),
        "fit_cpu_s": round(fit_cpu, 1),
        "sample_s": round(sample_wall, 1),
        "sample_cpu_s": round(sample_cpu, 1),
        "lm_calls": report.details["lm_calls"],
        "sample_lm_calls": generator.sampling_details()["sample_lm_calls"],
        "population": report.details["population"],
        "iterations": report.details["iterations"],
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }


def measured_rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in ROWS_FILE.read_text().splitlines() if line] if ROWS_FILE.exists() else []


def measure(runs: list[str]) -> None:
    """Measure each `eps:seed` run not yet in the rows file, appending its row as soon as it is done."""
    done = {f"{r['eps']}:{r['seed']}" for r in measured_rows()}
    ROWS_FILE.parent.mkdir(exist_ok=True)
    for run in runs:
        if run in done:
            continue
        eps, _, seed = run.partition(":")
        row = evolution_run(eps, int(seed))
        with ROWS_FILE.open("a") as out:
            out.write(json.dumps(row) + "\n")
        print(json.dumps(row))


def vote_gain(gains: list[float]) -> dict[str, Any]:
    """What the votes add, paired per seed (the last population's macro F1 less the RANDOM_API population's, which
    a seed shares across eps): mean, standard error and how many seeds gained."""
    se = float(np.std(gains, ddof=1) / np.sqrt(len(gains))) if len(gains) > 1 else None
    return {
        "vote_gain_mean": round(float(np.mean(gains)), 4),
        "vote_gain_se": round(se, 4) if se is not None else None,
        "vote_gained_seeds": sum(g > 0 for g in gains),
    }


def evolution_figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per eps: the mean macro F1 by iteration and of the release over the seeds measured, and the mean seconds."""
    out: dict[str, Any] = {"n_synthetic": N_SYNTHETIC, "runs": rows}
    for eps in sorted({r["eps"] for r in rows}):
        group = [r for r in rows if r["eps"] == eps]
        out[f"eps_{eps}"] = {
            "seeds": [r["seed"] for r in group],
            "f1_macro_mean": round(float(np.mean([r["f1_macro"] for r in group])), 4),
            "f1_macro_by_iteration_mean": np.mean([r["f1_macro_by_iteration"] for r in group], axis=0)
            .round(4)
            .tolist(),
            "fit_sample_cpu_s_mean": round(float(np.mean([r["fit_cpu_s"] + r["sample_cpu_s"] for r in group])), 1),
            **vote_gain([r["f1_macro_by_iteration"][-1] - r["f1_macro_by_iteration"][0] for r in group]),
        }
    return out


def main() -> dict[str, Any]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    figures: dict[str, Any] = {"cpu_count": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2)}
    figures["vote_s_demo_600x90"] = round(vote_seconds(600, 90), 4)
    figures["vote_s_5000x10000"] = round(vote_seconds(5000, 10000), 3)
    figures["variations_per_s_batch32"] = round(variation_throughput(32, 32), 3)
    figures["variations_per_s_batch1"] = round(variation_throughput(1, 4), 3)
    figures["batch_speedup"] = round(figures["variations_per_s_batch32"] / figures["variations_per_s_batch1"], 2)
    measure(os.environ.get("BENCH_AUGPE_RUNS", ",".join(DEFAULT_RUNS)).split(","))
    figures["evolution"] = evolution_figures(measured_rows())
    return figures


def write_evolution() -> None:
    """The evolution figures into results/bench_augpe.json beside the cost figures already there."""
    path = HERE / "results" / "bench_augpe.json"
    figures = json.loads(path.read_text()) if path.exists() else {}
    figures["evolution"] = evolution_figures(measured_rows())
    path.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    if sys.argv[1:]:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        measure(sys.argv[1:])
        write_evolution()
    else:
        print(main())
