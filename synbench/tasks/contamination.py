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

import json
import logging
import math
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import torch

from synbench.contamination.ablation import run_ablation
from synbench.contamination.config import ContaminationOptions, PlantedOptions
from synbench.contamination.detect import exact_section, mink_sections
from synbench.contamination.planted import (
    PlantedCorpus,
    check_share,
    known_answer_figures,
    mix_figures,
    plant_corpus,
    public_paragraphs,
)
from synbench.core import registry, schema
from synbench.core.base import Metric, MetricContext, Splits
from synbench.core.corpus import Corpus
from synbench.core.errors import ConfigError
from synbench.core.files import save_arrays_atomic, write_json_atomic
from synbench.core.privacy import PrivacySpec
from synbench.generators.dpgen.data import DocumentDataset
from synbench.generators.dpgen.generator import DPGenGenerator
from synbench.generators.dpgen.settings import DPGenTrainingOptions
from synbench.job.lifecycle import JobRun
from synbench.job.record import Contamination
from synbench.job.run import GeneratorRun
from synbench.lm.backends import load_shared
from synbench.lm.folders import gguf_to_folder
from synbench.lm.models import is_complete_folder
from synbench.report.stats import estimate
from synbench.tasks.base import Task

log = logging.getLogger(__name__)
SCORES_FILE = "contamination_scores.npz"
NON_DP = [
    "contamination.exact",
    "contamination.mink",
    "contamination.minkpp",
    "contamination.ablation",
    "contamination.planted",
]
PLANTED_DIR = "planted"  # S, the pretraining corpus, DP-Gen's checkpoint and the planted model folder (`model/`)
TRAINING_FILE = "training.json"


class ContaminationTask(Task):
    """`task=contamination` (conf/task/contamination.yaml): the detectors' shares and the ablation."""

    results_sections = frozenset({"contamination"})
    generation_fields = frozenset({"n_private", "n_eval"})
    report_section = "contamination"

    def body(self, job: JobRun) -> None:
        contamination_job(job)


run = ContaminationTask().run  # the task as a function, `run(config, job_dir)`, for scripts and tests


def ablation_section(
    job: JobRun, splits: Splits, cc: ContaminationOptions, flagged: np.ndarray, model: Mapping[str, Any]
) -> tuple[dict[str, Any], GeneratorRun, bool]:
    """The ablation's runs (`synbench.contamination.ablation`) and the table of mean F1 with 95% intervals, the run
    they derive from, and whether any run was a non-private control: (section, base run, non-private), for the
    job's one release step.

    Every run gets the job's one budget: delta resolved once from the whole
    private split, never from a run's smaller set, so the delta results
    report is the one every run used. A generator that starts from the
    `model` group starts from `model` (the planted model, when planted).
    """
    config, spec = job.config, job.spec
    metrics = config.metrics
    if "utility" not in metrics:
        raise ConfigError("the contamination ablation measures utility: keep `utility` in metrics (metrics=[utility])")
    folder = job.job_dir / "ablation"
    generator = {**config.generator, "model": model} if "model" in config.generator else config.generator
    base = GeneratorRun(
        generator,
        spec.generator,
        config.budget(len(splits.train)),
        spec.seed,
        cc.ablation.n_synthetic or len(splits.train),
        job_dir=job.job_dir,
    )

    def utility(private: Corpus, synthetic: Corpus) -> dict[str, float]:
        ctx = MetricContext(seed=spec.seed, job_dir=str(folder), train=private, cache_dir=config.cache_dir)
        return registry.create(Metric, metrics["utility"])(splits.eval, synthetic, ctx)

    runs, resumed = run_ablation(cc.ablation, flagged, splits.train, base, folder, spec.key, utility)
    table = []
    for arm, step in dict.fromkeys((r["arm"], r["step"]) for r in runs):
        group = [r for r in runs if r["arm"] == arm and r["step"] == step]
        f1 = estimate([r["f1_micro"] for r in group], 0.95)
        table.append(
            {
                "arm": arm,
                "step": step,
                "n_removed": group[0]["n_removed"],
                "reps": len(group),
                "f1_micro_mean": f1.mean,
                "f1_micro_ci95": f1.half_width,
            }
        )
    epsilon_spent = max(float(r["epsilon_spent"]) for r in runs)
    section = {
        "detector": cc.ablation.detector,
        "n_flagged": int(flagged.sum()),
        "reps": cc.ablation.reps,
        "steps": list(cc.ablation.steps),
        "n_runs": len(runs),
        "runs_resumed": resumed,
        "epsilon_spent": epsilon_spent,
        "table": table,
        "runs": [{k: r[k] for k in ("arm", "step", "rep", "n_removed", "f1_micro", "f1_macro")} for r in runs],
    }
    return section, base, any(r.get("non_private_control", False) for r in runs)


def plant_model(
    job: JobRun, pc: PlantedOptions, train: Corpus, model: Mapping[str, Any], cache_dir: Path
) -> tuple[PlantedCorpus, dict[str, Any], dict[str, Any]]:
    """S and its pretraining corpus (`synbench.contamination.planted`), and `model` trained on that corpus without DP
    (DP-Gen at eps=inf with `pc.train`'s settings), saved as `planted/model/`: (corpus, its model node, training).

    Resumes at every step: S and the corpus are read back, DP-Gen reuses its
    checkpoint (`planted/dpgen/`), and a complete model folder is not trained
    again. The public model's GGUF is first converted to a plain folder
    (cached under `cache_dir/models/`), whose weights can be saved once trained.
    """
    folder = job.job_dir / PLANTED_DIR
    corpus = plant_corpus(pc, train, job.spec.seed, folder)
    base = gguf_to_folder(model, cache_dir / "models" / str(model.get("name")))
    mix = mix_tokens(pc, train, corpus, base)
    check_share(mix, pc)
    model_dir = folder / "model"
    # `planted` is no ModelSpec field: it keys the Min-K% score cache by what the folder was trained on
    planted_node = {
        **model,
        "name": f"{model.get('name')}_planted",
        "pretrained": str(model_dir),
        "package": None,
        "gguf_file": None,
        "planted": {
            "share": pc.share,
            "seed": job.spec.seed,
            "train": dict(pc.train),
            "public": corpus.n_public,
            "arm": pc.arm,
        },
    }
    if not is_complete_folder(model_dir) or not (folder / TRAINING_FILE).is_file():
        base_node = {**model, "pretrained": str(base), "package": None, "gguf_file": None}
        generator = DPGenGenerator(base_node, workdir=str(folder), **{"label_prior": "uniform", **pc.train})
        pretraining = Corpus.build(
            corpus.documents, [("text",)] * len(corpus.documents), ("text",), name="planted-pretraining"
        )
        privacy = PrivacySpec.for_private_set(
            len(pretraining),
            math.inf,
            job.config.delta,
            job.config.accountant,
            allow_large_delta=job.config.privacy.allow_large_delta,
        )
        fit = generator.fit(pretraining, privacy, job.spec.seed)
        generator.save_model(model_dir)
        keys = ("fine_tuning", "epochs", "steps", "n_train_docs", "max_seq_len", "train_s", "trainable_params")
        losses = fit.private_stats.get("train_loss") or []
        training = {k: fit.details.get(k) for k in keys} | {
            "final_train_loss": float(np.mean(losses[-5:])) if losses else None,
            "resumed": bool(fit.details.get("resumed")),
        }
        write_json_atomic(folder / TRAINING_FILE, training)
    return corpus, planted_node, json.loads((folder / TRAINING_FILE).read_text()) | {"mix": mix}


def mix_tokens(pc: PlantedOptions, train: Corpus, corpus: PlantedCorpus, base: Path) -> dict[str, Any]:
    """The training tokens of S and of the public part, each document as DP-Gen trains on it (`pc.train`'s
    max_seq_len, control code and long-document policy, eos included), under the public model's tokenizer."""
    from transformers import AutoTokenizer

    settings = DPGenTrainingOptions(**{"label_prior": "uniform", **pc.train})
    tokenizer = AutoTokenizer.from_pretrained(str(base))

    def counts(texts: list[str]) -> list[int]:
        docs = Corpus.build(texts, [("text",)] * len(texts), ("text",), name="planted-mix")
        dataset = DocumentDataset(docs, tokenizer, settings)
        return [sum(len(e.input_ids) for e in item) for item in dataset.examples]

    private = [train.texts[i] for i in np.flatnonzero(corpus.members)] if pc.arm == "contaminated" else []
    return mix_figures(counts(private), counts(public_paragraphs(pc)))


def contamination_job(job: JobRun) -> None:
    config, timing = job.config, job.timing
    cc = schema.typed(ContaminationOptions, config.contamination or {}, "contamination")
    cache_dir = Path(config.cache_dir)
    splits = job.load_splits()
    model: Mapping[str, Any] = config.model or {}
    planted: PlantedCorpus | None = None
    if cc.planted.enabled:  # the model and the index's corpus become the planted ones
        with timing("plant"):
            planted, model, training = plant_model(job, cc.planted, splits.train, model, cache_dir)
        cc = replace(cc, exact=replace(cc.exact, index_dir=None, corpus="files", files=(str(planted.corpus_file),)))
    with timing("load_model"):
        loaded = load_shared(json.dumps(model, sort_keys=True), "cuda" if torch.cuda.is_available() else "cpu")
    section: dict[str, Any] = {"n_documents": len(splits.train), "model": str(model.get("name"))}
    arrays: dict[str, np.ndarray] = {}
    if cc.exact.enabled:
        with timing("exact"):
            section["exact"], found = exact_section(cc.exact, loaded.tokenizer, splits.train, cache_dir)
        arrays |= found
    if cc.mink.enabled:
        with timing("mink"):
            found_sections, found = mink_sections(cc.mink, model, loaded, splits.train, splits.eval, cache_dir)
        section |= found_sections
        arrays |= found
    if planted is not None:
        section["planted"] = {
            "share": cc.planted.share,
            "n_members": int(planted.members.sum()),
            "n_unseen": int((~planted.members).sum()),
            "n_public_docs": planted.n_public,
            "arm": cc.planted.arm,
            "mix": training.pop("mix"),
            "model_folder": f"{PLANTED_DIR}/model",
            "training": training,
            **known_answer_figures(planted.members, arrays),
        }
    if cc.save_scores:  # per-document scores stay in the job folder: never logged, tracked or put in results
        save_arrays_atomic(job.job_dir / SCORES_FILE, **arrays)
    job.results.mark_non_dp([k for k in NON_DP if k.split(".")[1] in section])
    job.results.contamination = Contamination.of(section)
    job.save()  # the detectors' shares, while the ablation runs
    base: GeneratorRun | None = None  # the ablation's run, whose budget the release reports; None without one
    non_private = False
    for name in ("exact", "mink", "minkpp"):
        if name in section:
            log.info(
                "contamination (%s): %.1f%% of %d private documents flagged",
                name,
                100 * section[name]["exposed_share"],
                len(splits.train),
            )
    if cc.ablation.enabled:
        with timing("ablation"):
            base, non_private = ablation_into(job, splits, cc, arrays, model, section)
    # the job's one release step, once every figure is known: with the ablation, its runs' budget and controls
    job.record_release(
        splits,
        {"n_private": len(splits.train), "n_eval": len(splits.eval)},
        run=base,
        epsilon_spent=section["ablation"]["epsilon_spent"] if base is not None else None,
        non_private_control=non_private,
    )
    job.tracker.log_metrics(
        {
            f"contamination/{name}_exposed_share": section[name]["exposed_share"]
            for name in ("exact", "mink", "minkpp")
            if name in section
        }
    )


def ablation_into(
    job: JobRun,
    splits: Splits,
    cc: ContaminationOptions,
    arrays: dict[str, np.ndarray],
    model: Mapping[str, Any],
    section: dict[str, Any],
) -> tuple[GeneratorRun, bool]:
    """The ablation over the documents `cc.ablation.detector` flagged, written into `section` and the record; its
    base run (whose budget the release reports) and whether that run was a non-private control."""
    flag_key = "exact_flagged" if cc.ablation.detector == "exact" else f"{cc.ablation.detector}_flagged"
    if flag_key not in arrays:
        raise ConfigError(
            f"contamination.ablation.detector={cc.ablation.detector} is not enabled; enable it or pick another"
        )
    section["ablation"], base, non_private = ablation_section(job, splits, cc, arrays[flag_key], model)
    job.results.contamination = Contamination.of(section)
    job.results.mark_non_dp([k for k in NON_DP if k.split(".")[1] in section])
    for row in section["ablation"]["table"]:
        log.info(
            "ablation %-7s %4.0f%% removed (%d docs): F1 micro %.4f ± %.4f over %d reps",
            row["arm"],
            100 * row["step"],
            row["n_removed"],
            row["f1_micro_mean"],
            row["f1_micro_ci95"],
            row["reps"],
        )
    return base, non_private
