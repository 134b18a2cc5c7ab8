"""Training examples for DP-Gen: the control-code prefix, tokenisation, long documents and collation.

A training sequence is `"\t".join(labels) + "\n\n" + text + eos` (the
authors' format; `control_code` words the prefix from a template); at
sampling time the prefix alone is the prompt. One
document is the privacy unit of DP-SGD, whatever its length.

Documents longer than `max_seq_len` (`dataset.long_documents`):
- `truncate` (the paper's, and the default): the head of the text, EOS kept;
- `head_tail`: the first half and the last half of the room, EOS kept;
- `chunk`: consecutive chunks, each behind the label prefix, up to
  `max_chunks` (the rest is cut; the last kept chunk ends with EOS). A
  dataset item is the whole document, so Poisson sampling includes all its
  chunks or none, and the collator numbers rows by document (`unit`) so the
  DP core clips the sum of a document's chunk gradients, not each chunk.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import torch
from torch.utils.data import Dataset

from synbench.core.corpus import Corpus
from synbench.core.errors import ConfigError
from synbench.dp.label_sets import label_sets
from synbench.generators.dpgen.settings import DPGenTrainingOptions

IGNORE = -100  # label id that cross-entropy skips
LOSS_ON = ("text", "all")


AUTHORS_CONTROL_CODE = "{labels}\n\n"


def control_code(labels: Sequence[str], template: str | None = None) -> str:
    """The label prefix that conditions generation: `template` with `{labels}` the tab-joined labels.

    None is the authors' prefix, the labels alone. A template that words
    what the labels are ("Condition: {labels}\n\n", from the dataset config)
    lets a model that took few DP-SGD steps use what it knows of the label
    names from pretraining; the template is public, so this costs no budget.
    """
    return (template or AUTHORS_CONTROL_CODE).replace("{labels}", "\t".join(labels))


class Example(NamedTuple):
    """One training sequence: a whole document, or one chunk of a long one."""

    input_ids: list[int]
    n_prefix: int  # tokens of the control code at the start


class DocumentDataset(Dataset):
    """Tokenised documents, each one item of one or more `Example`s (see the module docstring for long ones).

    The settings that shape them (`max_seq_len`, `long_documents`, `max_chunks`, `control_code`) come from DP-Gen's
    options, already checked there, so their defaults are the schema's and nowhere else.
    """

    def __init__(self, corpus: Corpus, tokenizer: Any, settings: DPGenTrainingOptions) -> None:
        if tokenizer.eos_token_id is None:
            raise ConfigError("the model's tokenizer has no EOS token; DP-Gen needs one to end documents")
        self.examples: list[tuple[Example, ...]] = []
        for text, labels in zip(
            corpus.texts, label_sets(corpus)
        ):  # label-space order, as the sampling plan writes them
            prefix = tokenizer(control_code(labels, settings.control_code), add_special_tokens=False)["input_ids"]
            body = tokenizer(text, add_special_tokens=False)["input_ids"]
            room = settings.max_seq_len - len(prefix) - 1
            if room < 1:
                raise ConfigError(
                    f"generator.max_seq_len={settings.max_seq_len} leaves no room for text after the label prefix "
                    f"({len(prefix)} tokens); raise it"
                )
            pieces = fit_text(body, room, settings.long_documents, settings.max_chunks)
            self.examples.append(
                tuple(
                    Example(prefix + piece + [tokenizer.eos_token_id] * (k == len(pieces) - 1), len(prefix))
                    for k, piece in enumerate(pieces)
                )
            )

    def __len__(self) -> int:
        return len(self.examples)

    def __getitem__(self, i: int) -> tuple[Example, ...]:
        return self.examples[i]


def fit_text(body: list[int], room: int, policy: str, max_chunks: int) -> list[list[int]]:
    """The token pieces of one document's text under `policy` (one piece unless chunked), each at most `room` long."""
    if len(body) <= room:
        return [body]
    if policy == "head_tail":
        head = (room + 1) // 2
        return [body[:head] + (body[-(room - head) :] if room > head else [])]
    if policy == "chunk":
        return [body[i : i + room] for i in range(0, len(body), room)][:max_chunks]
    return [body[:room]]


class Collator:
    """Right-pads a batch of documents (their chunks as rows) and builds the loss targets.

    `loss_on="text"` masks the control code out of the loss (it is given at
    sampling time, the model need not learn to write it); `"all"` trains on
    it too. Padding never counts. Targets are not shifted here; the loss
    shifts them. `position_ids` are expanded to [B, L], as per-sample
    gradient hooks need every input to carry the batch dimension.
    """

    def __init__(self, pad_id: int, loss_on: str, chunked: bool = False) -> None:
        if loss_on not in LOSS_ON:
            raise ConfigError(f"generator.loss_on={loss_on!r} must be one of {', '.join(LOSS_ON)}")
        self.pad_id = pad_id
        self.loss_on = loss_on
        self.chunked = chunked

    def __call__(self, batch: Sequence[tuple[Example, ...]]) -> dict[str, torch.Tensor]:
        rows = [e for doc in batch for e in doc]
        width = max(len(e.input_ids) for e in rows)
        ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        targets = torch.full((len(rows), width), IGNORE, dtype=torch.long)
        for row, e in enumerate(rows):
            n = len(e.input_ids)
            ids[row, :n] = torch.tensor(e.input_ids)
            mask[row, :n] = 1
            start = e.n_prefix if self.loss_on == "text" else 0
            targets[row, start:n] = ids[row, start:n]
        positions = torch.arange(width).unsqueeze(0).expand(len(rows), width).contiguous()
        out = {"input_ids": ids, "attention_mask": mask, "position_ids": positions, "labels": targets}
        if self.chunked:  # row -> its document in this batch: the DP core clips per document
            out["unit"] = torch.tensor([d for d, doc in enumerate(batch) for _ in doc], dtype=torch.long)
        return out

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
