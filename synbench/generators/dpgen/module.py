"""DP-Gen's client of the shared DP-SGD core (`synbench.dp.module`): next-token loss of a causal LM."""

from __future__ import annotations

import torch

from synbench.dp.module import Batch, DPSGDModule, PerSampleLoss, TrainConfig
from synbench.generators.dpgen.data import IGNORE, Collator, DocumentDataset
from synbench.generators.dpgen.trunk import CachedCollator, CachedDocuments


def per_sample_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Next-token cross-entropy, averaged over each sequence's target tokens: shape [B]."""
    shift_logits, shift_targets = logits[:, :-1].float(), targets[:, 1:]
    tokens = torch.nn.functional.cross_entropy(
        shift_logits.transpose(1, 2), shift_targets, ignore_index=IGNORE, reduction="none"
    )
    return tokens.sum(dim=1) / (shift_targets != IGNORE).sum(dim=1).clamp(min=1)


class CausalLMLoss(PerSampleLoss):
    """The per-sequence mean next-token loss of a Hugging Face causal LM; padding and the masked prefix never count."""

    def __init__(self, collator: Collator | CachedCollator) -> None:
        self.collator = collator

    def __call__(self, model: torch.nn.Module, batch: Batch) -> torch.Tensor:
        # the cached trunk's states (generator.cache_trunk) enter the top layers in place of the token ids
        tokens = (
            {"inputs_embeds": batch["inputs_embeds"]} if "inputs_embeds" in batch else {"input_ids": batch["input_ids"]}
        )
        logits = model(
            **tokens,
            attention_mask=batch["attention_mask"],
            position_ids=batch["position_ids"],
            use_cache=False,
        ).logits
        return per_sample_loss(logits, batch["labels"])

    def null_batch(self) -> Batch:
        return self.collator.null_batch()

    def count(self, batch: Batch) -> tuple[int, int]:
        """(documents with loss, tokens): a document's chunks count once."""
        with_loss = (batch["labels"] != IGNORE).any(dim=1)
        docs = batch["unit"][with_loss].unique().numel() if "unit" in batch else int(with_loss.sum())
        return docs, int(batch["attention_mask"].sum())


class DPGenModule(DPSGDModule):
    """The shared core on a causal LM (LoRA through peft, or full fine-tuning)."""

    def __init__(
        self,
        model: torch.nn.Module,
        dataset: DocumentDataset | CachedDocuments,
        collator: Collator | CachedCollator,
        cfg: TrainConfig,
    ) -> None:
        super().__init__(model, dataset, collator, cfg, CausalLMLoss(collator))
