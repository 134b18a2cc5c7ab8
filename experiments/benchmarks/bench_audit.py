"""The audit: the n-gram attack's cost, the bounds on simulated games, and audits of the demo data.

`ngram`: scores 1,000 targets against 100 synthetic corpora of 1,000 documents (about
100 words each) and 4 reference corpora, tokenization included, with the
vectorised `NgramAttack` (whitespace tokenizer) and with Python `Counter`s of
bigrams over the same tokens, in the same run; both must give the same scores.
Words come from a public word list (the all-MiniLM-L6-v2 WordPiece vocabulary,
whole words of 3+ letters, as the canaries), drawn Zipf-like so that n-grams repeat as in real text.
Targets: < 10 s on 2 cores and >= 5x faster than the Counter version.

`simulations` (synbench.audit on games with a known answer, 500 trials):
how close the one-run bounds get to the truth and how often they exceed it.

`demo`: audits of the drugreview demo data in-process (copy, the example DP
plugin over 20 seeds, a generator that lies about its eps, public), with
their wall times. BENCH_AUDIT_PARTS=ngram,simulations,demo picks parts
(default all); the demo part takes several minutes.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from synbench.audit.canaries import public_words
from synbench.audit.ngram import NgramAttack
from synbench.core.base import Generator
from synbench.core.corpus import Corpus

N_CORPORA, N_DOCS, N_WORDS, N_TARGETS, N_REFS = 100, 1000, 100, 1000, 4
CACHE = Path(
    os.environ.get("SYNBENCH_BENCH_CACHE", "/tmp/synbench-bench-cache")
)  # output root (embedding cache) of the demo audits


def word_list() -> np.ndarray:
    return np.array(public_words(), dtype=object)


def make_corpus(words: np.ndarray, rng: np.random.Generator, n_docs: int) -> Corpus:
    ranks = rng.zipf(1.2, size=(n_docs, N_WORDS * 6 // 5)) % len(words)
    lengths = rng.integers(N_WORDS * 4 // 5, N_WORDS * 6 // 5 + 1, size=n_docs)
    texts = [" ".join(words[row[:k]]) for row, k in zip(ranks, lengths)]
    return Corpus.build(texts, [["x"]] * n_docs, ["x"])


def bigram_counts(docs: list[list[str]]) -> tuple[Counter, Counter, int]:
    pairs: Counter = Counter()
    contexts: Counter = Counter()
    vocab: set[str] = set()
    for doc in docs:
        vocab.update(doc)
        padded = ["<s>", *doc, "</s>"]
        pairs.update(zip(padded, padded[1:]))
        contexts.update(padded[:-1])
    return pairs, contexts, len(vocab) + 1


def counter_log_prob(targets: list[list[str]], docs: list[list[str]]) -> np.ndarray:
    pairs, contexts, vocab = bigram_counts(docs)
    out = []
    for doc in targets:
        padded = ["<s>", *doc, "</s>"]
        out.append(
            sum(math.log((pairs.get(p, 0) + 1) / (contexts.get(p[0], 0) + vocab)) for p in zip(padded, padded[1:]))
        )
    return np.array(out)


def split(corpus: Corpus) -> list[list[str]]:
    """The same tokens as `tokenizer=whitespace`."""
    return [t.split() for t in corpus.texts]


def ngram() -> dict:
    rng = np.random.default_rng(0)
    words = word_list()
    targets = make_corpus(words, rng, N_TARGETS)
    references = [make_corpus(words, rng, N_DOCS) for _ in range(N_REFS)]
    synthetic = [make_corpus(words, rng, N_DOCS) for _ in range(N_CORPORA)]

    # Interleaved corpus by corpus, so that load from other jobs on the machine hits both alike.
    attack = NgramAttack(n=2, tokenizer="whitespace", normalise="none")  # sums, as the Counter version
    fast_s = slow_s = 0.0
    fast, slow = [], []
    for i, corpus in enumerate(synthetic):
        start = time.perf_counter()
        fast.append(
            attack.score(targets.texts, corpus, references)
        )  # the first call also prepares targets and references
        fast_s += time.perf_counter() - start
        start = time.perf_counter()
        if i == 0:
            target_docs = split(targets)
            ref_term = np.mean([counter_log_prob(target_docs, split(r)) for r in references], axis=0)
        slow.append(counter_log_prob(target_docs, split(corpus)) - ref_term)
        slow_s += time.perf_counter() - start
    fast, slow = np.stack(fast), np.stack(slow)

    if not np.allclose(fast, slow, rtol=1e-9, atol=1e-6):
        raise AssertionError(f"vectorised and Counter scores differ by up to {np.abs(fast - slow).max():.3g}")
    return {
        "targets": N_TARGETS,
        "synthetic_corpora": N_CORPORA,
        "docs_per_corpus": N_DOCS,
        "references": N_REFS,
        "tokens_total": int(sum(len(t.split()) for c in (targets, *references, *synthetic) for t in c.texts)),
        "cpus": os.cpu_count(),
        "vectorised_s": round(fast_s, 3),
        "counter_s": round(slow_s, 3),
        "speedup": round(slow_s / fast_s, 2),
        "meets_10s": fast_s < 10.0,
        "meets_5x": slow_s / fast_s >= 5.0,
        "max_abs_diff": float(np.abs(fast - slow).max()),
    }


def simulations() -> dict:
    """Median bound and share of trials above the truth, one-run games of 200 targets (as the tests, more cases)."""
    from scipy.special import expit

    from synbench.audit import AuditOptions
    from synbench.audit.crossfit import target_folds
    from synbench.audit.fdp import one_run_gdp_mu_lower_bounds
    from synbench.audit.guesses import grid_bounds, holdout_bounds
    from synbench.audit.one_run import one_run_epsilon_lower_bounds
    from synbench.audit.summary import summarise
    from synbench.core.privacy import gdp_epsilon

    cfg, rng, trials, m = AuditOptions(), np.random.default_rng(0), 500, 200

    def combined(scores, members, folds, bound):
        return np.maximum(
            holdout_bounds(scores, members, folds, cfg.guess_fractions, bound, 0.025),
            grid_bounds(scores, members, cfg.guess_fractions, bound, 0.025),
        )

    def eps_bound(m_, r, v, alpha):
        return one_run_epsilon_lower_bounds(m_, r, v, 1e-5, alpha)

    out: dict = {"trials": trials, "targets": m}
    for name, truth_mu, make in [
        ("gaussian_mu1", 1.0, lambda mem: rng.normal(size=mem.shape) + mem),
        ("gaussian_mu3", 3.0, lambda mem: rng.normal(size=mem.shape) + 3 * mem),
        ("rr_eps1", None, lambda mem: (mem ^ (rng.random(mem.shape) > expit(1.0))).astype(float)),
        ("rr_eps2", None, lambda mem: (mem ^ (rng.random(mem.shape) > expit(2.0))).astype(float)),
    ]:
        members = rng.random((trials, m)) < 0.5
        folds = np.stack([target_folds(np.zeros(m), i, cfg.select_share) for i in range(trials)])
        scores = make(members)
        mu = combined(scores, members, folds, one_run_gdp_mu_lower_bounds)
        eps = combined(scores, members, folds, eps_bound)
        truth_eps = gdp_epsilon(truth_mu, 1e-5) if truth_mu else float(name[-1])
        out[name] = {
            "true_eps": round(truth_eps, 3),
            "eps_lower_median": round(float(np.median(eps)), 3),
            "eps_lower_above_truth": float(np.mean(eps > truth_eps)),
            "mu_lower_median": round(float(np.median(mu)), 3),
        }
        if truth_mu:
            out[name] |= {"true_mu": truth_mu, "mu_lower_above_truth": float(np.mean(mu > truth_mu))}
    members = np.stack([np.arange(200) < 100, np.arange(200) >= 100])  # one pair of runs (the pair game needs one)
    null = [
        summarise(rng.normal(size=(2, 200)), members, AuditOptions(mode="k_subsets"), 0.0, seed=t)[0]
        for t in range(200)
    ]
    out["null_k_subsets_100_100"] = {
        "eps_emp_mean": round(float(np.mean([n["eps_emp"] for n in null])), 3),
        "eps_emp_max_mean": round(float(np.mean([n["eps_emp_max"] for n in null])), 3),
        "eps_emp_lower_zero_share": float(np.mean([n["eps_emp_lower"] == 0 for n in null])),
    }
    return out


DEMO_KEYS = (
    "auc",
    "tpr_at_fpr_0.01",
    "eps_emp",
    "eps_emp_max",
    "eps_emp_lower_holdout",
    "eps_emp_lower_bonferroni",
    "eps_emp_lower",
    "gdp_mu_lower",
    "gdp_eps_lower",
    "n_targets",
    "canaries.eps_emp_lower",
    "outliers.eps_emp_lower",
)


def demo_audit(
    overrides: list[str],
    leaky: bool = False,
    generator: Callable[[], Generator] | None = None,
    keys: Sequence[str] = DEMO_KEYS,
) -> dict:
    """One audit of the demo data in a temporary folder: its `keys` figures and wall time.

    `generator` (or `leaky`, the tests' LeakyGenerator) replaces the
    configured generator, whose config is still composed.
    """
    import tempfile

    from hydra import compose, initialize_config_module

    import synbench.cli.app  # noqa: F401  (the synbench_jobdir resolver)
    from synbench.core import registry
    from synbench.job.spec import JobConfig
    from synbench.tasks import audit as audit_task

    with initialize_config_module(config_module="synbench.conf", version_base="1.3"):
        cfg = compose(
            config_name="config", overrides=["task=audit", "tracking=none", f"output_root={CACHE}", *overrides]
        )
    create = registry.create
    if leaky:
        sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
        from leaky_generator import LeakyGenerator

        generator = LeakyGenerator
    if generator is not None:
        registry.create = lambda kind, node, **extra: generator() if kind is Generator else create(kind, node, **extra)
    start = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory() as folder:
            results = audit_task.run(JobConfig.from_config(cfg), Path(folder))
    finally:
        registry.create = create
    audit = results["audit"]
    return {
        "wall_s": round(time.perf_counter() - start, 1),
        "status": results["status"],
        **{k: round(audit[k], 3) if isinstance(audit.get(k), float) else audit.get(k) for k in keys if k in audit},
    }


def demo() -> dict:
    """The demo audits (docs/audit.md; figures in bench.md); the DP-Gen rows come from `+experiment=audit_memorise`."""
    one, outliers = ["audit.mode=one_run"], ["audit.targets=outliers"]
    k10 = ["audit.mode=k_subsets", "audit.n_subsets=10"]
    leak = ["eps=1", "generator=copy"]  # the config of some generator to compose; the lying one replaces it
    out = {
        "load_average_at_start": os.getloadavg()[0],
        "copy_one_run_outliers": demo_audit(["generator=copy", *one, *outliers]),
        "copy_one_run_both": demo_audit(["generator=copy", *one]),
        "copy_k10_outliers": demo_audit(["generator=copy", *k10, *outliers]),
        "copy_k10_both": demo_audit(["generator=copy", *k10]),
        "leaky_eps1_one_run_outliers": demo_audit([*leak, *one, *outliers], leaky=True),
        "leaky_eps1_one_run_both": demo_audit([*leak, *one], leaky=True),
        "leaky_eps1_k10_outliers": demo_audit([*leak, *k10, *outliers], leaky=True),
    }
    seeds = [demo_audit(["generator=example", "eps=1", *one, f"seed={s}"]) for s in range(20)]
    out["example_eps1_one_run_both_20_seeds"] = {
        "eps_emp_lower_max": max(r["eps_emp_lower"] for r in seeds),
        "eps_emp_lower_mean": round(float(np.mean([r["eps_emp_lower"] for r in seeds])), 3),
        "gdp_eps_lower_max": max(r["gdp_eps_lower"] for r in seeds),
        "auc_mean": round(float(np.mean([r["auc"] for r in seeds])), 3),
        "eps_emp_mean": round(float(np.mean([r["eps_emp"] for r in seeds])), 3),
        "over_1": sum(r["eps_emp_lower"] > 1 for r in seeds),
        "wall_s_mean": round(float(np.mean([r["wall_s"] for r in seeds])), 1),
    }
    out["example_eps1_k10_both"] = demo_audit(["generator=example", "eps=1", *k10])
    out["public_one_run_both"] = demo_audit(["generator=public", "eps=4", *one])
    out["load_average_at_end"] = os.getloadavg()[0]
    return out


def main() -> dict:
    parts = os.environ.get("BENCH_AUDIT_PARTS", "ngram,simulations,demo").split(",")
    return {part: globals()[part]() for part in parts}


if __name__ == "__main__":
    print(main())
