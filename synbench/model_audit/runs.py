"""One trained model of the audit: its regime's training data, the classifier, and its statistics on the targets.

A model is the audited one (`target`, trained on the design's private set)
or reference model m (`ref<m>`, trained on reference set m), in one regime:

- `syn` / `syn_dp`: the generator runs on the set (eps = inf / the job's
  eps), and the classifier trains on its synthetic output, as a user of the
  release would. So a SYN regime costs one generator run per model.
- `pri` / `pri_dp`: the classifier trains on the set itself; in `pri_dp`
  it is the logistic head trained with DP-SGD at the job's eps.

Every model is then asked for its probabilities on the targets and the
population samples, turned into logit-scaled confidences. A finished model
is saved under `model_audit_runs/` in the job folder (statistics per
document, never text; they stay on local disk), keyed by the job and the
design's digest, so an interrupted audit resumes model by model.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from synbench.audit.design import AuditDesign
from synbench.core.base import Classifier, ModelAttack
from synbench.core.corpus import Corpus
from synbench.core.privacy import PrivacySpec
from synbench.core.progress import Meter
from synbench.job.run import GeneratorRun, RunRecord, Timing
from synbench.job.spec import JobSpec, derive_seed
from synbench.metrics.utility import indicator
from synbench.model_audit.attacks import logit_confidence
from synbench.model_audit.config import REGIMES, ModelAuditOptions
from synbench.model_audit.head import LogisticHead
from synbench.model_audit.summary import model_signals, summarise_regime

log = logging.getLogger(__name__)
RUNS_DIR = "model_audit_runs"


def model_name(index: int) -> str:
    """-1 is the audited model (`target`), m >= 0 reference model m (`ref<m>`)."""
    return "target" if index < 0 else f"ref{index}"


def training_matrix(corpus: Corpus, label_space: list[str], multi_label: bool) -> tuple[list[str], np.ndarray]:
    """The texts and 0/1 label matrix a classifier trains on: documents with a usable label set only.

    A single-label document needs exactly one label of the space; a
    multi-label one at least one (labels outside the space are dropped).
    """
    y, _ = indicator(corpus.labels, label_space)
    keep = y.sum(axis=1) >= 1 if multi_label else y.sum(axis=1) == 1
    return [t for t, k in zip(corpus.texts, keep) if k], y[keep]


@dataclass
class ModelRunner:
    """Trains model `name` of `regime` on positions `rows` of the pool, or returns the saved one."""

    spec: JobSpec
    job_dir: Path
    audit: ModelAuditOptions
    pool: Corpus
    design: AuditDesign
    evaluate: Corpus  # the targets then the population samples, in that order
    # the generator run the SYN models derive from: the job's budget (eps, delta from the planned private set size,
    # secret noise), the generator's node and class, and the synthetic size, fixed in advance: one that followed
    # each set's size would reveal how many targets it holds
    base: GeneratorRun
    head: LogisticHead
    classifier: Classifier | None  # the `classifier` group's (utility) classifier, or None for the head

    @property
    def privacy(self) -> PrivacySpec:
        """The job's budget, the one every model of the audit is trained under (or at eps=inf without DP)."""
        return self.base.privacy

    @property
    def folder(self) -> Path:
        return self.job_dir / RUNS_DIR

    @property
    def indices(self) -> range:
        """The models of a regime: -1 the audited one, then the reference models."""
        return range(-1, self.audit.n_references)

    def resumable(self) -> int:
        """How many models are already recorded for this job and design."""
        return sum(self.saved(regime, model_name(i)) is not None for regime in self.audit.regimes for i in self.indices)

    def run_regimes(
        self, attacks: Mapping[str, ModelAttack], timing: Timing
    ) -> tuple[dict[str, Any], dict[str, np.ndarray], list[dict[str, Any]]]:
        """Every model of every regime (saved ones reused), then per regime each attack's figures and per-target scores.

        Returns (figures with each regime's epsilon_spent, scores by `<regime>.<attack>`, the models' records).
        """
        members = self.design.inclusion[0]
        figures_all: dict[str, Any] = {}
        scores: dict[str, np.ndarray] = {}
        records: list[dict[str, Any]] = []
        with Meter("model audit", total=len(self.audit.regimes) * len(self.indices), unit="model") as meter:
            for regime in self.audit.regimes:
                with timing(regime):
                    runs = []
                    for i in self.indices:
                        runs.append(self(regime, i))
                        meter.update()
                    signals = model_signals(
                        runs[0]["signals"],
                        [r["signals"] for r in runs[1:]],
                        self.design.ref_inclusion,
                        len(self.design.targets),
                    )
                    figures, regime_scores = summarise_regime(
                        regime, signals, members, attacks, self.audit, self.privacy.delta
                    )
                figures_all.update(figures, **{f"{regime}.epsilon_spent": runs[0]["epsilon_spent"]})
                scores.update({f"{regime}.{name}": s for name, s in regime_scores.items()})
                records += runs
                log.info(
                    "model audit %s: %s",
                    regime,
                    ", ".join(f"{a} AUC {figures[f'{regime}.{a}.auc']:.3f}" for a in attacks),
                )
        return figures_all, scores, records

    def record(self, regime: str, name: str) -> RunRecord:
        """Where model `name` of `regime` is recorded: its figures as JSON, its statistics per document beside them."""
        return RunRecord(
            self.folder / f"{regime}_{name}.json",
            {"job_key": self.spec.key, "design": self.design.digest()},
            array="signals",
        )

    def saved(self, regime: str, name: str) -> dict[str, Any] | None:
        return self.record(regime, name).load()

    def __call__(self, regime: str, index: int) -> dict[str, Any]:
        """Model `index` of `regime` (-1 the audited model, m >= 0 reference model m), or its saved record."""
        name = model_name(index)
        record = self.record(regime, name)
        saved = record.load()
        if saved is not None:
            return saved
        rows = self.design.private_set(0) if index < 0 else self.design.reference_set(index)
        data = self.pool.subset(rows, name=f"{self.pool.name}-{regime}-{name}")
        run = list(REGIMES).index(regime) * 1000 + index + 1
        cell = REGIMES[regime]
        seed = derive_seed(self.spec.seed, run)
        private = replace(self.privacy, noise=self.privacy.noise.for_run(run))
        public_run = replace(private, epsilon=math.inf)
        if cell.private:
            signals, spent = self.signals(data, private if cell.dp else public_run, seed)
            return record.write({"n_train": len(data), "epsilon_spent": spent, "signals": signals})
        synthetic = self.folder / f"{regime}_{name}.synthetic.jsonl" if self.audit.save_synthetic else None
        generator_run = replace(  # the base's synthetic size, fixed in advance for every model
            self.base,
            privacy=self.privacy if cell.dp else replace(self.privacy, epsilon=math.inf),
            seed_path=(run,),
            noise_run=run,
            record=record,
            synthetic_path=synthetic,
            extra={"n_train": len(data)},
        )
        return generator_run.execute(
            data, lambda output, _: {"signals": self.signals(output, public_run, seed)[0]}
        ).record

    def signals(self, data: Corpus, privacy: PrivacySpec, seed: int) -> tuple[np.ndarray, float]:
        """Logit-scaled confidences on the evaluated documents of the classifier trained on `data`, and its epsilon
        spent."""
        probs, spent = self.train(data, privacy, seed)
        truth, _ = indicator(self.evaluate.labels, self.pool.label_space)
        return logit_confidence(probs, truth, self.pool.multi_label), spent

    def train(self, data: Corpus, privacy: PrivacySpec, seed: int) -> tuple[np.ndarray, float]:
        """Probabilities of the evaluated documents from the classifier trained on `data`, and the epsilon spent.

        With no usable training document, or a label that never varies, the
        prediction is the training label frequencies (uniform when empty), as
        the utility metric does: there is nothing to learn from. Under DP no
        such check runs (it would read the private labels without noise): the
        head trains on whatever it is given.
        """
        texts, y = training_matrix(data, self.pool.label_space, self.pool.multi_label)
        if privacy.is_private:
            return self.head.fit_predict(texts, y, self.evaluate.texts, self.pool.multi_label, privacy)
        varies = len(y) > 0 and bool((y.min(axis=0) != y.max(axis=0)).any())
        if not varies or not any(t.strip() for t in texts):
            prior = y.mean(axis=0) if len(y) else np.full(y.shape[1], 1.0 / y.shape[1])
            return np.tile(prior, (len(self.evaluate), 1)), math.inf
        if self.classifier is not None:
            return self.classifier.fit_predict(texts, y, self.evaluate.texts, self.pool.multi_label, seed), math.inf
        return self.head.fit_predict(texts, y, self.evaluate.texts, self.pool.multi_label, privacy)
