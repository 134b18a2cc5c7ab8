"""`task=contamination`: how much of the private set the public model may have seen, and what removing it does.

Detectors (synbench/contamination/): exact n-gram exposure in an infini-gram
index (built from public text, or a real pretraining index a user has) and
Min-K% / Min-K%++ under the public model. Per-document scores go to
`contamination_scores.npz` in the job folder, never to logs or trackers;
results carry the share flagged per detector. With `contamination.ablation.
enabled=true`, flagged documents are removed in steps and the generator and
the utility metric re-run per repetition; each run is saved under
`ablation/` and reused on re-run (the audit's pattern), so a killed ablation
resumes. The shares are statistics of the private set without noise (the
operator's own diagnostic, like the audit): results list them in `non_dp_outputs`.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig

from synbench import registry
from synbench.base import MetricContext, Splits
from synbench.contamination import ablation as plan_
from synbench.contamination import exact, index, mink, texts
from synbench.contamination.config import ContaminationConfig
from synbench.corpus import Corpus
from synbench.errors import ConfigError
from synbench.job import JobSpec, write_json_atomic
from synbench.lm.backends import load_shared
from synbench.lm.generation import torch_threads
from synbench.progress import progress
from synbench.report.stats import estimate
from synbench.tasks.common import check_budget, load_splits, node, privacy_spec
from synbench.tasks.lifecycle import JobRun, run_job

log = logging.getLogger(__name__)
SCORES_FILE = "contamination_scores.npz"
NON_DP = ["contamination.exact", "contamination.mink", "contamination.minkpp", "contamination.ablation"]


def run(cfg: DictConfig, spec: JobSpec, job_dir: Path) -> dict[str, Any]:
    return run_job(cfg, spec, job_dir, contamination_job)


def exact_section(cfg: DictConfig, cc: ContaminationConfig, tokenizer: Any, train: Corpus) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Exposure in the configured index (built and cached on first use) and per-document arrays."""
    ec = cc.exact
    if ec.index_dir is not None:
        info = index.open_index(Path(ec.index_dir), ec.token_dtype)
    else:
        docs = texts.python_docs() if ec.corpus == texts.PYTHON_DOCS else texts.read_documents(ec.files)
        key = index.corpus_key(docs, str(getattr(tokenizer, "name_or_path", "")) + str(len(tokenizer)))
        info = index.build_index(Path(str(cfg.cache_dir)) / "infini_gram" / key, docs, tokenizer)
    engine = exact.open_engine(info, int(tokenizer.eos_token_id))
    ids = tokenizer(list(train.texts), add_special_tokens=False)["input_ids"]
    scores = exact.exact_scores(engine, ids, ec)
    section = {"exposed_share": float(scores.flagged.mean()), "n_flagged": int(scores.flagged.sum()),
               "mean_ngram_share": float(scores.ngram_share.mean()), "max_longest_match": int(scores.longest.max(initial=0)),
               "n": ec.n, "flag_share": ec.flag_share, "flag_longest": ec.flag_longest,
               "index": "python_docs (embedded)" if ec.index_dir is None and ec.corpus == texts.PYTHON_DOCS
               else ("files" if ec.index_dir is None else "external"),
               "index_docs": info.n_docs, "index_tokens": info.n_tokens}
    return section, {"exact_longest": scores.longest, "exact_ngram_share": scores.ngram_share, "exact_flagged": scores.flagged}


def mink_sections(cfg: DictConfig, cc: ContaminationConfig, loaded: Any, train: Corpus,
                  eval_split: Corpus) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Min-K% and Min-K%++ of the private documents, thresholds from the calibration set, AUC where both sides are known.

    Scores are cached under `cache_dir` (local disk, like the embedding caches), keyed by the model, k, max_length
    and the texts' digest, so the ablation job after a detection job does not score the same documents again.
    """
    mc = cc.mink

    def score(docs: list[str], what: str) -> mink.MinKScores:
        key = hashlib.sha256(json.dumps([node(cfg, "model"), mc.k, mc.max_length, docs]).encode()).hexdigest()[:24]
        path = Path(str(cfg.cache_dir)) / "contamination" / f"mink-{key}.npz"
        if path.is_file():
            with np.load(path) as saved:
                return mink.MinKScores(saved["mink"], saved["minkpp"])
        with torch_threads(mc.num_threads):
            scores = mink.score_texts(loaded.model, loaded.tokenizer, docs, k=mc.k, batch_size=mc.batch_size,
                                      max_length=mc.max_length, desc=f"Min-K% {what}")
        save_npz_atomic(path, mink=scores.mink, minkpp=scores.minkpp)
        return scores

    private = score(list(train.texts), "private")
    calib_docs = list(eval_split.texts) if mc.calibration == "eval" else texts.read_documents(mc.non_members)
    calib = score(calib_docs, "calibration")
    members = score(texts.read_documents(mc.members), "members") if mc.members else None
    sections, arrays = {}, {}
    for name in ("mink", "minkpp"):
        cut = mink.threshold(getattr(calib, name), mc.fpr)
        flagged = getattr(private, name) > cut
        sections[name] = {"exposed_share": float(flagged.mean()), "n_flagged": int(flagged.sum()), "threshold": cut,
                          "k": mc.k, "fpr": mc.fpr, "calibration": mc.calibration, "n_calibration": len(calib_docs),
                          "auc": mink.auc(getattr(members, name), getattr(calib, name)) if members and mc.calibration == "files" else None}
        arrays |= {name: getattr(private, name), f"{name}_flagged": flagged}
    return sections, arrays


def run_ablation(job: JobRun, splits: Splits, cc: ContaminationConfig, flagged: np.ndarray) -> dict[str, Any]:
    """Every ablation run (saved ones reused), then the per-run F1 and the table of mean F1 with 95% intervals."""
    cfg, spec = job.cfg, job.spec
    metrics = node(cfg, "metrics")
    if "utility" not in metrics:
        raise ConfigError("the contamination ablation measures utility: keep `utility` in metrics (metrics=[utility])")
    folder = job.job_dir / "ablation"
    flags = hashlib_digest(flagged)
    n_synthetic = cc.ablation.n_synthetic or len(splits.train)
    runs, resumed = [], 0
    for key in progress(plan_.plan(cc.ablation), desc="ablation runs", unit="run"):
        path = folder / f"{key.name}.json"
        record = json.loads(path.read_text()) if path.is_file() else {}
        if record.get("job_key") == spec.key and record.get("flags") == flags:
            runs.append(record)
            resumed += 1
            continue
        drop = set(plan_.removed(key, flagged, len(splits.train), spec.seed).tolist())
        private = splits.train.subset([i for i in range(len(splits.train)) if i not in drop])
        base = privacy_spec(cfg, len(private))
        privacy = replace(base, noise=base.noise.for_run(key.index))
        generator = registry.create("generators", node(cfg, "generator"))
        report = generator.fit(private, privacy, int(np.random.SeedSequence([spec.seed, key.rep]).generate_state(1)[0]))
        check_budget(report, privacy, generator, spec.generator)
        ctx = MetricContext(seed=spec.seed, job_dir=str(folder), train=private, cache_dir=cfg.get("cache_dir"))
        values = registry.create("metrics", metrics["utility"])(splits.eval, generator.sample(n_synthetic), ctx)
        record = {"job_key": spec.key, "flags": flags, "arm": key.arm, "step": key.step, "rep": key.rep,
                  "n_removed": len(drop), "n_private": len(private), "epsilon_spent": report.epsilon_spent,
                  "f1_micro": values["f1_micro"], "f1_macro": values.get("f1_macro")}
        write_json_atomic(path, record)  # written last: its presence means the run is done
        runs.append(record)
    table = []
    for arm, step in dict.fromkeys((r["arm"], r["step"]) for r in runs):
        group = [r for r in runs if r["arm"] == arm and r["step"] == step]
        f1 = estimate([r["f1_micro"] for r in group], 0.95)
        table.append({"arm": arm, "step": step, "n_removed": group[0]["n_removed"], "reps": len(group),
                      "f1_micro_mean": f1.mean, "f1_micro_ci95": f1.half_width})
    return {"detector": cc.ablation.detector, "n_flagged": int(flagged.sum()), "reps": cc.ablation.reps,
            "steps": list(cc.ablation.steps), "n_runs": len(runs), "runs_resumed": resumed,
            "epsilon_spent": max(float(r["epsilon_spent"]) for r in runs), "table": table,
            "runs": [{k: r[k] for k in ("arm", "step", "rep", "n_removed", "f1_micro", "f1_macro")} for r in runs]}


def contamination_job(job: JobRun) -> None:
    cfg, spec, timing = job.cfg, job.spec, job.timing
    cc = ContaminationConfig.from_node(node(cfg, "contamination"))
    with timing("load"):
        splits = load_splits(cfg, spec.seed)
        loaded = load_shared(json.dumps(node(cfg, "model"), sort_keys=True), "cuda" if torch.cuda.is_available() else "cpu")
    section: dict[str, Any] = {"n_documents": len(splits.train), "model": str(node(cfg, "model").get("name"))}
    arrays: dict[str, np.ndarray] = {}
    if cc.exact.enabled:
        with timing("exact"):
            section["exact"], found = exact_section(cfg, cc, loaded.tokenizer, splits.train)
        arrays |= found
    if cc.mink.enabled:
        with timing("mink"):
            found_sections, found = mink_sections(cfg, cc, loaded, splits.train, splits.eval)
        section |= found_sections
        arrays |= found
    if cc.save_scores:  # per-document scores stay in the job folder: never logged, tracked or put in results
        save_npz_atomic(job.job_dir / SCORES_FILE, **arrays)
    job.results.update(label_space_inferred=splits.label_space_inferred, non_dp_outputs=[k for k in NON_DP if k.split(".")[1] in section],
                       generation={"n_private": len(splits.train), "n_eval": len(splits.eval)})
    job.results["contamination"] = section
    job.save()
    for name in ("exact", "mink", "minkpp"):
        if name in section:
            log.info("contamination (%s): %.1f%% of %d private documents flagged", name,
                     100 * section[name]["exposed_share"], len(splits.train))
    if cc.ablation.enabled:
        flag_key = "exact_flagged" if cc.ablation.detector == "exact" else f"{cc.ablation.detector}_flagged"
        if flag_key not in arrays:
            raise ConfigError(f"contamination.ablation.detector={cc.ablation.detector} is not enabled; enable it or pick another")
        with timing("ablation"):
            section["ablation"] = run_ablation(job, splits, cc, arrays[flag_key])
        job.results.update(epsilon_spent=section["ablation"]["epsilon_spent"], delta=privacy_spec(cfg, len(splits.train)).delta)
        job.results["non_dp_outputs"] = [k for k in NON_DP if k.split(".")[1] in section]
        for row in section["ablation"]["table"]:
            log.info("ablation %-7s %4.0f%% removed (%d docs): F1 %.4f ± %.4f over %d reps", row["arm"], 100 * row["step"],
                     row["n_removed"], row["f1_micro_mean"], row["f1_micro_ci95"], row["reps"])
    job.tracker.log_metrics({f"contamination/{name}_exposed_share": section[name]["exposed_share"]
                             for name in ("exact", "mink", "minkpp") if name in section})


def save_npz_atomic(path: Path, **arrays: np.ndarray) -> None:
    """np.savez to a temporary name, then rename: a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp.npz")
    np.savez(tmp, **arrays)
    os.replace(tmp, path)


def hashlib_digest(flags: np.ndarray) -> str:
    """A digest of which documents are flagged (positions only): saved runs are reused only for the same flags."""
    return hashlib.sha256(np.flatnonzero(flags).astype(np.int64).tobytes()).hexdigest()[:16]
