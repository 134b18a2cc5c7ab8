"""Training examples for DP-Gen: the control-code prefix, tokenisation and collation.

A training sequence is `"\t".join(labels) + "\n\n" + text + eos` (the
authors' format); at sampling time the prefix alone is the prompt. One
sequence is one document: the privacy unit of DP-SGD.
"""
from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import torch
from torch.utils.data import Dataset

from synbench.corpus import Corpus
from synbench.dp.label_sets import label_sets
from synbench.errors import ConfigError

IGNORE = -100  # label id that cross-entropy skips
LOSS_ON = ("text", "all")


def control_code(labels: Sequence[str]) -> str:
    """The label prefix that conditions generation."""
    return "\t".join(labels) + "\n\n"


class Example(NamedTuple):
    """One document; a tuple because Opacus' DPDataLoader iterates over a dataset item."""

    input_ids: list[int]
    n_prefix: int  # tokens of the control code at the start


class DocumentDataset(Dataset):
    """Tokenised documents, each truncated to `max_seq_len` tokens with its EOS kept.

    The text is cut before the EOS is appended, so a truncated document still
    ends with EOS and the model learns to stop within `max_seq_len` tokens.
    """

    def __init__(self, corpus: Corpus, tokenizer: Any, max_seq_len: int) -> None:
        if tokenizer.eos_token_id is None:
            raise ConfigError("the model's tokenizer has no EOS token; DP-Gen needs one to end documents")
        self.examples: list[Example] = []
        for text, labels in zip(corpus.texts, label_sets(corpus)):  # label-space order, as the sampling plan writes them
            prefix = tokenizer(control_code(labels), add_special_tokens=False)["input_ids"]
            body = tokenizer(text, add_special_tokens=False)["input_ids"]
            room = max_seq_len - len(prefix) - 1
            if room < 1:
                raise ConfigError(
                    f"generator.max_seq_len={max_seq_len} leaves no room for text after the label prefix "
                    f"({len(prefix)} tokens); raise it"
                )
            self.examples.append(Example(prefix + body[:room] + [tokenizer.eos_token_id], len(prefix)))

    def __len__(self) -> int:
        return len(self.examples)

    def __getitem__(self, i: int) -> Example:
        return self.examples[i]


class Collator:
    """Right-pads a batch and builds the loss targets.

    `loss_on="text"` masks the control code out of the loss (it is given at
    sampling time, the model need not learn to write it); `"all"` trains on
    it too. Padding never counts. Targets are not shifted here; the loss
    shifts them. `position_ids` are expanded to [B, L], as per-sample
    gradient hooks need every input to carry the batch dimension.
    """

    def __init__(self, pad_id: int, loss_on: str = "text") -> None:
        if loss_on not in LOSS_ON:
            raise ConfigError(f"generator.loss_on={loss_on!r} must be one of {', '.join(LOSS_ON)}")
        self.pad_id = pad_id
        self.loss_on = loss_on

    def __call__(self, batch: Sequence[Example]) -> dict[str, torch.Tensor]:
        width = max(len(e.input_ids) for e in batch)
        ids = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        targets = torch.full((len(batch), width), IGNORE, dtype=torch.long)
        for row, e in enumerate(batch):
            n = len(e.input_ids)
            ids[row, :n] = torch.tensor(e.input_ids)
            mask[row, :n] = 1
            start = e.n_prefix if self.loss_on == "text" else 0
            targets[row, start:n] = ids[row, start:n]
        positions = torch.arange(width).unsqueeze(0).expand(len(batch), width).contiguous()
        return {"input_ids": ids, "attention_mask": mask, "position_ids": positions, "labels": targets}

    def null_batch(self) -> dict[str, torch.Tensor]:
        """One all-padding row with no loss: stands in for an empty Poisson batch.

        Its gradient is exactly zero, so the optimizer step still adds the
        calibrated noise (and the accountant still counts the step), as the
        mechanism requires; skipping the step would reveal that the batch was empty.
        """
        return {
            "input_ids": torch.full((1, 1), self.pad_id, dtype=torch.long),
            "attention_mask": torch.ones((1, 1), dtype=torch.long),
            "position_ids": torch.zeros((1, 1), dtype=torch.long),
            "labels": torch.full((1, 1), IGNORE, dtype=torch.long),
        }
