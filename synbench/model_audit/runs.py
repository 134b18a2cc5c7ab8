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

import json
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from synbench import registry
from synbench.audit.design import AuditDesign
from synbench.base import Classifier
from synbench.corpus import Corpus
from synbench.job import JobSpec, write_corpus_jsonl, write_json_atomic
from synbench.metrics.utility import indicator
from synbench.model_audit.attacks import logit_confidence
from synbench.model_audit.config import REGIMES, ModelAuditConfig
from synbench.model_audit.head import LogisticHead
from synbench.privacy import PrivacySpec
from synbench.quality import output_health
from synbench.tasks.common import check_budget

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
    audit: ModelAuditConfig
    pool: Corpus
    design: AuditDesign
    evaluate: Corpus  # the targets then the population samples, in that order
    privacy: PrivacySpec  # the job's budget (eps, delta from the planned private set size, secret noise)
    generator_node: dict[str, Any]
    generator_name: str
    head: LogisticHead
    classifier: Classifier | None  # the `classifier` group's (utility) classifier, or None for the head

    @property
    def folder(self) -> Path:
        return self.job_dir / RUNS_DIR

    def saved(self, regime: str, name: str) -> dict[str, Any] | None:
        try:
            record = json.loads((self.folder / f"{regime}_{name}.json").read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return None
        if record.get("job_key") != self.spec.key or record.get("design") != self.design.digest():
            return None
        return {**record, "signals": np.load(self.folder / f"{regime}_{name}.npy")}

    def __call__(self, regime: str, index: int) -> dict[str, Any]:
        """Model `index` of `regime`: -1 is the audited model, m >= 0 reference model m."""
        name = model_name(index)
        record = self.saved(regime, name)
        if record is not None:
            return record
        rows = self.design.private_set(0) if index < 0 else self.design.reference_set(index)
        data = self.pool.subset(rows, name=f"{self.pool.name}-{regime}-{name}")
        run = REGIMES.index(regime) * 1000 + index + 1
        seed = int(np.random.SeedSequence([self.spec.seed, run]).generate_state(1)[0])
        private = replace(self.privacy, noise=self.privacy.noise.for_run(run))
        public_run = replace(private, epsilon=math.inf)
        record = {"job_key": self.spec.key, "design": self.design.digest(), "n_train": len(data)}
        if regime in ("syn", "syn_dp"):
            asked = private if regime == "syn_dp" else public_run
            generator = registry.create("generators", self.generator_node)  # fresh: nothing shared between runs
            report = generator.fit(data, asked, seed)
            check_budget(report, asked, generator, self.generator_name)
            # a size fixed in advance: one that followed the set's size would reveal how many targets it holds
            synthetic = generator.sample(self.audit.n_synthetic or self.design.planned_private_size())
            if self.audit.save_synthetic:
                write_corpus_jsonl(self.folder / f"{regime}_{name}.synthetic.jsonl", synthetic)
            record.update(epsilon_spent=report.epsilon_spent, n_synthetic=len(synthetic), **output_health(synthetic.texts),
                          non_private_control=not type(generator).private)
            data = synthetic
        probs, spent = self.train(data, private if regime == "pri_dp" else public_run, seed)
        if regime in ("pri", "pri_dp"):
            record["epsilon_spent"] = spent
        truth, _ = indicator(self.evaluate.labels, self.pool.label_space)
        signals = logit_confidence(probs, truth, self.pool.multi_label)
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = self.folder / f"{regime}_{name}.tmp.npy"
        np.save(tmp, signals)
        tmp.replace(self.folder / f"{regime}_{name}.npy")
        write_json_atomic(self.folder / f"{regime}_{name}.json", record)  # written last: its presence means done
        return {**record, "signals": signals}

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
