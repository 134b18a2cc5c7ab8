"""The frozen trunk, computed once (`generator.cache_trunk`): DP-SGD steps that run only the adapted top layers.

With `lora.top_layers=k` nothing below the top k decoder layers changes in
training, so the input of the lowest adapted layer is a fixed function of
each document alone. `trunk_states` computes it once per document (no
gradient, no head); training then feeds it to the top k layers as
`inputs_embeds`, with the bottom layers taken out of the model for the
duration (`decoder_span`). The result is the same training (tested: the same
LoRA weights as without the cache), each DP-SGD step costs only the top
layers and the head, and per-example clipping still sees one document's
gradient per example, so the privacy analysis is unchanged. Memory: one
hidden vector per training token (documents x tokens x hidden size).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Sequence

import torch
from torch import nn
from torch.utils.data import Dataset

from synbench.generators.dpgen.data import Collator, DocumentDataset, Example

TRUNK_BATCH = 16  # documents per no-grad forward of the trunk


def decoder(model: nn.Module) -> Any:
    """The decoder stack (`.layers`, `.norm`, `.config`) of a causal LM, through a peft wrapper if there is one."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return base.get_decoder()


@contextmanager
def decoder_span(model: nn.Module, start: int, stop: int, final_norm: bool) -> Iterator[None]:
    """For the block, the model runs only decoder layers [start, stop) (without its final norm unless
    `final_norm`); its layers, norm and layer count come back afterwards, whatever happened."""
    stack = decoder(model)
    layers, norm, count = stack.layers, stack.norm, stack.config.num_hidden_layers
    stack.layers = nn.ModuleList(list(layers)[start:stop])
    stack.config.num_hidden_layers = stop - start
    if not final_norm:
        stack.norm = nn.Identity()
    try:
        yield
    finally:
        stack.layers, stack.norm = layers, norm
        stack.config.num_hidden_layers = count


@torch.no_grad()
def trunk_states(
    model: nn.Module, dataset: DocumentDataset, collator: Collator, split: int
) -> list[tuple[torch.Tensor, ...]]:
    """Per document, per row (chunk): the hidden states entering decoder layer `split`, [tokens, hidden] each.

    Rows are right-padded in batches; under causal attention padding never changes an earlier position.
    """
    stack = decoder(model)
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    states: list[tuple[torch.Tensor, ...]] = []
    with decoder_span(model, 0, split, final_norm=False):
        for first in range(0, len(dataset), TRUNK_BATCH):
            docs = [dataset[i] for i in range(first, min(first + TRUNK_BATCH, len(dataset)))]
            batch = collator(docs)
            hidden = stack(
                input_ids=batch["input_ids"].to(device),
                attention_mask=batch["attention_mask"].to(device),
                position_ids=batch["position_ids"].to(device),
                use_cache=False,
            ).last_hidden_state
            row = 0
            for doc in docs:
                states.append(tuple(hidden[row + j, : len(e.input_ids)].clone() for j, e in enumerate(doc)))
                row += len(doc)
    model.train(was_training)
    return states


class CachedDocuments(Dataset):
    """A `DocumentDataset` whose rows carry their trunk states: item i is ((example, states), ...) per row."""

    def __init__(self, dataset: DocumentDataset, states: Sequence[tuple[torch.Tensor, ...]]) -> None:
        self.dataset, self.states = dataset, states

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, i: int) -> tuple[tuple[Example, torch.Tensor], ...]:
        return tuple(zip(self.dataset[i], self.states[i]))


class CachedCollator:
    """`Collator`'s batch plus `inputs_embeds`: the rows' trunk states, right-padded with zeros like the ids."""

    def __init__(self, collator: Collator, width: int, dtype: torch.dtype) -> None:
        self.collator, self.width, self.dtype = collator, width, dtype

    def __call__(self, batch: Sequence[tuple[tuple[Example, torch.Tensor], ...]]) -> dict[str, torch.Tensor]:
        out = self.collator([tuple(example for example, _ in doc) for doc in batch])
        rows = [state for doc in batch for _, state in doc]
        embeds = torch.zeros((len(rows), out["input_ids"].shape[1], self.width), dtype=self.dtype)
        for r, state in enumerate(rows):
            embeds[r, : len(state)] = state
        out["inputs_embeds"] = embeds
        return out

    def null_batch(self) -> dict[str, torch.Tensor]:
        return {**self.collator.null_batch(), "inputs_embeds": torch.zeros((1, 1, self.width), dtype=self.dtype)}
