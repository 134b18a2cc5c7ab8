"""The fast downstream classifier of the model audit: a logistic head on public features, trained on the DP-SGD core.

Why public features: PRI-DP trains the classifier itself with DP-SGD, and
DP-SGD only protects what it trains. A TF-IDF vocabulary (or any feature
map fitted on the training texts) is a function of the private data that
no noise covers, so the features here are fitted on nothing private: the
job's public sentence encoder (`features: embeddings`, MiniLM offline by
default, cached by `synbench.text.embeddings`) or a `HashingVectorizer` over
word unigrams and bigrams (`features: hashing`, a fixed hash, no vocabulary).

Training goes through the shared core (`synbench.dp`: Poisson sampling,
Opacus, the PRV/RDP accountant) in every regime, with DP (`PRI-DP`: noise
calibrated to the job's eps, epsilon read back from the accountant) or as
the same pipeline without noise (eps = inf), so the four regimes differ only
in their training data and in DP, not in the classifier.
"""

from __future__ import annotations

import logging
from typing import Callable, Sequence

import numpy as np
import torch
from torch.utils.data import Dataset

from synbench.core.privacy import PrivacySpec
from synbench.dp import accounting
from synbench.dp.job import JobBudget
from synbench.dp.module import Batch, DPSGDModule, PerSampleLoss, fit_module
from synbench.dp.poisson import PoissonPlan
from synbench.model_audit.config import HeadOptions

QUIET_LOGGERS = ("pytorch_lightning", "lightning.pytorch", "lightning_fabric", "synbench.dp.module")


class FeatureDataset(Dataset):
    def __init__(self, x: torch.Tensor, y: torch.Tensor) -> None:
        self.x, self.y = x, y

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.x[i], self.y[i]


def collate(items: Sequence[tuple[torch.Tensor, torch.Tensor]]) -> Batch:
    xs, ys = zip(*items)
    return {"x": torch.stack(xs), "y": torch.stack(ys), "w": torch.ones(len(xs))}


class HeadLoss(PerSampleLoss):
    """Cross-entropy (single-label) or summed per-label binary cross-entropy (multi-label), one loss per document."""

    def __init__(self, multi_label: bool, dim: int, n_labels: int) -> None:
        self.multi_label, self.dim, self.n_labels = multi_label, dim, n_labels

    def __call__(self, model: torch.nn.Module, batch: Batch) -> torch.Tensor:
        logits = model(batch["x"])
        if self.multi_label:
            loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, batch["y"], reduction="none").sum(dim=1)
        else:
            loss = torch.nn.functional.cross_entropy(logits, batch["y"], reduction="none")
        return loss * batch["w"]

    def null_batch(self) -> Batch:
        y = torch.zeros((1, self.n_labels)) if self.multi_label else torch.zeros(1, dtype=torch.long)
        return {"x": torch.zeros((1, self.dim)), "y": y, "w": torch.zeros(1)}

    def count(self, batch: Batch) -> tuple[int, int]:
        return int(batch["w"].sum()), 0


class QuietHead(DPSGDModule):
    def on_train_epoch_end(self) -> None:
        """No line per epoch: a head trains in seconds, and an audit trains dozens of them."""


class LogisticHead:
    """A linear layer on public features: `fit_predict` trains it (with DP when `privacy` is finite) and predicts."""

    def __init__(self, settings: HeadOptions, embed: Callable[[Sequence[str]], np.ndarray]) -> None:
        self.settings, self.embed = settings, embed

    def features(self, texts: Sequence[str]) -> np.ndarray:
        if self.settings.features == "embeddings":
            return np.asarray(self.embed(texts), dtype=np.float32)
        from sklearn.feature_extraction.text import HashingVectorizer

        hashing = HashingVectorizer(n_features=self.settings.hashing_features, ngram_range=(1, 2), alternate_sign=False)
        return hashing.transform(texts).toarray().astype(np.float32)

    def fit_predict(
        self,
        train_texts: Sequence[str],
        train_y: np.ndarray,
        eval_texts: Sequence[str],
        multi_label: bool,
        privacy: PrivacySpec,
    ) -> tuple[np.ndarray, float]:
        """Per-label probabilities (sigmoid) or class probabilities (softmax) of `eval_texts`, and the epsilon spent."""
        s = self.settings
        s.begin_fit(privacy)
        x = torch.from_numpy(self.features(train_texts))
        y = torch.from_numpy(train_y.astype(np.float32)) if multi_label else torch.from_numpy(train_y.argmax(axis=1))
        model = torch.nn.Linear(x.shape[1], train_y.shape[1])
        torch.nn.init.zeros_(model.weight), torch.nn.init.zeros_(model.bias)  # a convex problem: a fixed start
        poisson = PoissonPlan(len(x), s.batch_size, s.epochs)
        budget = JobBudget(
            0.0,
            None,
            accounting.calibrate(
                privacy.epsilon, privacy.delta, poisson.sample_rate, poisson.steps, privacy.accountant, None
            ),
        )
        module = QuietHead(
            model,
            FeatureDataset(x, y),
            collate,
            s.train_config(privacy, budget.noise_multiplier(privacy)),
            HeadLoss(multi_label, x.shape[1], train_y.shape[1]),
        )
        device = s.device()
        levels = {name: logging.getLogger(name).level for name in QUIET_LOGGERS}
        try:
            for name in QUIET_LOGGERS:  # Lightning's start-up lines and the core's plan line, once per model
                logging.getLogger(name).setLevel(logging.WARNING)
            fit_module(module, **s.trainer_kwargs(device))
        finally:
            for name, level in levels.items():
                logging.getLogger(name).setLevel(level)
        spent = budget.spent(privacy, module.privacy_engine, "model_audit head")
        model.eval()
        with torch.no_grad():
            logits = model.to(device)(torch.from_numpy(self.features(eval_texts)).to(device)).double().cpu()
        probs = torch.sigmoid(logits) if multi_label else torch.softmax(logits, dim=1)
        return probs.numpy(), spent
