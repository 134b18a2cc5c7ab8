"""Planted contamination: a known set S of private documents in a "pretraining" corpus, and what the detectors find.

The detectors have no known answer on a real model (nobody ships what
SmolLM2 was trained on). Here the answer is made: a seeded share S of the
private training split, mixed with public paragraphs (the embedded
python_docs corpus), is the pretraining corpus of a copy of the public model
trained on it without DP (`synbench.tasks.contamination` does the training
with DP-Gen at eps=inf). The exact index is built over that corpus and
Min-K% / Min-K%++ score under that model, so exact recall on S, the AUC of S
against the unseen private documents and the flag rates at the calibrated
threshold measure the detectors against the truth.

The paper's setting is a mix: the private domain is a small share of a large
public pretraining corpus. `mix_figures` counts the training tokens of S
and of the public part as the continued training reads them, and
`check_share` stops a job whose S is more than `max_private_share` of them,
before anything trains. `arm: clean` trains the control model on the public
part alone (S is still drawn, so the detectors under that model give a null).

S and the corpus are written in the job folder (`planted/members.json`,
`planted/pretraining.jsonl`): private text, the operator's own diagnostic
like `contamination_scores.npz`, never a release. Re-running the job reads
them back, so S stays the same set.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from synbench.contamination import mink, texts
from synbench.contamination.config import PlantedOptions
from synbench.core.corpus import Corpus
from synbench.core.errors import ConfigError
from synbench.core.files import write_json_atomic, write_text_atomic

MEMBERS_FILE = "members.json"
CORPUS_FILE = "pretraining.jsonl"
S_STREAM = 30  # the second word of S's seeded stream (default_rng((seed, S_STREAM))), apart from the splits' streams


@dataclass(frozen=True)
class PlantedCorpus:
    members: np.ndarray  # bool per private training document: True = in S (seen in "pretraining")
    documents: list[str]  # the pretraining corpus: S's texts and the public paragraphs, shuffled
    corpus_file: Path
    n_public: int


def public_paragraphs(pc: PlantedOptions) -> list[str]:
    """The public half of the corpus: the first `public_docs` python_docs paragraphs of >= `public_min_chars`."""
    return [p for p in texts.python_docs() if len(p) >= pc.public_min_chars][: pc.public_docs]


def plant_corpus(pc: PlantedOptions, train: Corpus, seed: int, folder: Path) -> PlantedCorpus:
    """S (a seeded `share` of `train`, at least one document) and the shuffled corpus, written to `folder` or read
    back from it."""
    members_path, corpus_path = folder / MEMBERS_FILE, folder / CORPUS_FILE
    public = public_paragraphs(pc)
    if members_path.is_file() and corpus_path.is_file():
        positions = np.asarray(json.loads(members_path.read_text())["positions"], dtype=int)
        documents = texts.read_documents([str(corpus_path)])
    else:
        rng = np.random.default_rng((seed, S_STREAM))
        n_members = max(1, round(pc.share * len(train)))
        positions = np.sort(rng.choice(len(train), size=n_members, replace=False))
        pool = ([train.texts[i] for i in positions] if pc.arm == "contaminated" else []) + public
        documents = [pool[i] for i in rng.permutation(len(pool))]
        folder.mkdir(parents=True, exist_ok=True)
        write_text_atomic(corpus_path, "".join(json.dumps({"text": d}) + "\n" for d in documents))
        write_json_atomic(members_path, {"share": pc.share, "n_train": len(train), "positions": positions.tolist()})
    members = np.zeros(len(train), dtype=bool)
    members[positions] = True
    return PlantedCorpus(members, documents, corpus_path, len(public))


def mix_figures(private_tokens: Sequence[int], public_tokens: Sequence[int]) -> dict[str, Any]:
    """The training tokens of the mix's two parts (one count per document, as trained) and S's share of them."""
    private, public = int(sum(private_tokens)), int(sum(public_tokens))
    return {
        "private_docs": len(private_tokens),
        "public_docs": len(public_tokens),
        "private_tokens": private,
        "public_tokens": public,
        "private_token_share": private / max(private + public, 1),
    }


def check_share(mix: Mapping[str, Any], pc: PlantedOptions) -> None:
    """Stop before training when S is more than `max_private_share` of the mix's training tokens."""
    if mix["private_token_share"] > pc.max_private_share:
        need = math.ceil(mix["private_tokens"] * (1 / pc.max_private_share - 1))
        raise ConfigError(
            f"contamination.planted.max_private_share={pc.max_private_share}: S is "
            f"{mix['private_token_share']:.3f} of the continued-training tokens ({mix['public_tokens']} public); "
            f"raise contamination.planted.public_docs (the public part needs about {need} tokens) or lower "
            "contamination.planted.share"
        )


def known_answer_figures(members: np.ndarray, arrays: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """Each detector against the truth: exact recall on S (and its flag rate on the unseen documents); Min-K% and
    Min-K%++ AUC of S against the unseen private documents and their flag rates at the calibrated threshold."""
    unseen = ~members
    figures: dict[str, Any] = {}
    if "exact_flagged" in arrays:
        flagged = arrays["exact_flagged"]
        figures["exact"] = {
            "recall_members": float(flagged[members].mean()),
            "flag_rate_unseen": float(flagged[unseen].mean()) if unseen.any() else None,
        }
    for name in ("mink", "minkpp"):
        if name in arrays:
            scores, flagged = arrays[name], arrays[f"{name}_flagged"]
            figures[name] = {
                "auc_members_vs_unseen": mink.auc(scores[members], scores[unseen]),
                "flag_rate_members": float(flagged[members].mean()),
                "flag_rate_unseen": float(flagged[unseen].mean()) if unseen.any() else None,
            }
    return figures
