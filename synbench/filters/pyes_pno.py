"""The P(yes) - P(no) quality filter: ask the public LM whether each synthetic document is a realistic one.

For each synthetic document the domain prompt (with the document, its
label set and the dataset's domain word, `domain` in conf/dataset/*.yaml, so
financial news is not judged as medical text) is rendered as a chat turn of the `model` group's LM, and the
score is P(yes) - P(no) over the first answer token, where P(yes) sums the
next-token probabilities of the single-token spellings of "yes" ("Yes",
"yes", " Yes", " yes"; configurable) and P(no) likewise. One batched forward pass per
batch of prompts (`synbench.lm.scoring`). The top `keep_share` is kept,
within each label set by default so the released label distribution is unchanged.
"""

from __future__ import annotations

import json
import math
from typing import Any, Sequence

import numpy as np
import torch

from synbench.core.corpus import Corpus
from synbench.core.errors import ConfigError
from synbench.filters.base import Filter, Selection
from synbench.filters.settings import PYesPNoOptions
from synbench.lm.backends import load_shared
from synbench.lm.generation import chat_prompt, torch_threads
from synbench.lm.scoring import next_token_logprobs


def single_token_ids(tokenizer: Any, words: Sequence[str]) -> list[int]:
    """Ids of the spellings that are one token in this tokenizer (an answer's first token)."""
    ids = {tuple(tokenizer(w, add_special_tokens=False)["input_ids"]) for w in words}
    return sorted(i[0] for i in ids if len(i) == 1)


def pyes_pno_scores(cfg: PYesPNoOptions, synthetic: Corpus) -> np.ndarray:
    """P(yes) - P(no) per synthetic document, in [-1, 1]."""
    loaded = load_shared(json.dumps(dict(cfg.model), sort_keys=True), "cuda" if torch.cuda.is_available() else "cpu")
    tok = loaded.tokenizer
    yes, no = single_token_ids(tok, cfg.yes_answers), single_token_ids(tok, cfg.no_answers)
    if not yes or not no:
        raise ConfigError(f"model {cfg.model.get('name')!r}: no single-token spelling of yes/no; the filter needs one")
    prompts = [
        chat_prompt(tok, cfg.prompt.format(text=text, domain=cfg.domain, label=", ".join(labels)), None)
        for text, labels in zip(synthetic.texts, synthetic.labels)
    ]
    with torch_threads(cfg.num_threads):
        logp = next_token_logprobs(
            loaded.model,
            tok,
            prompts,
            yes + no,
            batch_size=cfg.batch_size,
            max_length=cfg.max_length,
            desc="filter P(yes)-P(no)",
        )
    probs = np.exp(logp)
    return probs[:, : len(yes)].sum(1) - probs[:, len(yes) :].sum(1)


def keep_top(scores: np.ndarray, labels: Sequence[Sequence[str]], share: float, per_label: bool) -> np.ndarray:
    """Positions of the top `share` by score (ceil per group), overall or within each label set; in corpus order."""
    groups: dict[Any, list[int]] = {}
    for i, ls in enumerate(labels):
        groups.setdefault(tuple(sorted(ls)) if per_label else None, []).append(i)
    keep: list[int] = []
    for members in groups.values():
        ranked = sorted(members, key=lambda i: (-scores[i], i))
        keep += ranked[: math.ceil(share * len(members))]
    return np.array(sorted(keep), dtype=int)


class PYesPNoFilter(Filter):
    """`filter=pyes_pno` (conf/filter/pyes_pno.yaml): keep the top `keep_share` by P(yes) - P(no)."""

    options = PYesPNoOptions

    def __init__(self, **options: Any) -> None:
        self.cfg = PYesPNoOptions(**options)

    def select(self, synthetic: Corpus) -> Selection:
        scores = pyes_pno_scores(self.cfg, synthetic)
        keep = keep_top(scores, synthetic.labels, self.cfg.keep_share, self.cfg.per_label)
        return Selection(
            keep,
            scores,
            {"keep_share": self.cfg.keep_share, "per_label": self.cfg.per_label, "domain": self.cfg.domain},
        )
