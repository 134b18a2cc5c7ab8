"""The detectors' sections of results: exact n-gram exposure and Min-K% / Min-K%++, with their per-document arrays.

Each returns (figures for `results["contamination"]`, per-document arrays for
`contamination_scores.npz`); the arrays stay in the job folder, never in
logs, trackers or results. The figures are statistics of the private set
without noise (the operator's own diagnostic): the task lists them in
`non_dp_outputs`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np

from synbench.contamination import exact, index, mink, texts
from synbench.contamination.config import ExactOptions, MinKOptions
from synbench.core.corpus import Corpus
from synbench.core.files import save_arrays_atomic
from synbench.core.keyed import keyed_hash
from synbench.lm.generation import torch_threads


def exact_section(
    ec: ExactOptions, tokenizer: Any, train: Corpus, cache_dir: Path
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Exposure in the configured index (built and cached under `cache_dir` on first use) and per-document arrays."""
    if ec.index_dir is not None:
        info = index.open_index(Path(ec.index_dir), ec.token_dtype)
    else:
        docs = texts.python_docs() if ec.corpus == texts.PYTHON_DOCS else texts.read_documents(ec.files)
        key = index.corpus_key(docs, str(getattr(tokenizer, "name_or_path", "")) + str(len(tokenizer)))
        info = index.build_index(cache_dir / "infini_gram" / key, docs, tokenizer)
    engine = exact.open_engine(info, int(tokenizer.eos_token_id))
    ids = tokenizer(list(train.texts), add_special_tokens=False)["input_ids"]
    scores = exact.exact_scores(engine, ids, ec)
    section = {
        "exposed_share": float(scores.flagged.mean()),
        "n_flagged": int(scores.flagged.sum()),
        "mean_ngram_share": float(scores.ngram_share.mean()),
        "max_longest_match": int(scores.longest.max(initial=0)),
        "n": ec.n,
        "flag_share": ec.flag_share,
        "flag_longest": ec.flag_longest,
        "index": "python_docs (embedded)"
        if ec.index_dir is None and ec.corpus == texts.PYTHON_DOCS
        else ("files" if ec.index_dir is None else "external"),
        "index_docs": info.n_docs,
        "index_tokens": info.n_tokens,
    }
    return section, {
        "exact_longest": scores.longest,
        "exact_ngram_share": scores.ngram_share,
        "exact_flagged": scores.flagged,
    }


def mink_sections(
    mc: MinKOptions, model_node: Mapping[str, Any], loaded: Any, train: Corpus, eval_split: Corpus, cache_dir: Path
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Min-K% and Min-K%++ of the private documents, thresholds from the calibration set, AUC where both sides are
    known.

    Scores are cached under `cache_dir` (local disk, like the embedding caches), keyed by the model, k, max_length
    and the texts (an HMAC under the per-user secret: the file name is no digest of them), so the ablation job after
    a detection job does not score the same documents again.
    """

    def score(docs: list[str], what: str) -> mink.MinKScores:
        key = keyed_hash({"model": model_node, "k": mc.k, "count": mc.count, "max_length": mc.max_length}, docs)
        path = cache_dir / "contamination" / f"mink-{key}.npz"
        if path.is_file():
            with np.load(path) as saved:
                return mink.MinKScores(saved["mink"], saved["minkpp"])
        with torch_threads(mc.num_threads):
            scores = mink.score_texts(
                loaded.model,
                loaded.tokenizer,
                docs,
                k=mc.k,
                count=mc.count,
                batch_size=mc.batch_size,
                max_length=mc.max_length,
                desc=f"Min-K% {what}",
            )
        save_arrays_atomic(path, mink=scores.mink, minkpp=scores.minkpp)
        return scores

    private = score(list(train.texts), "private")
    calib_docs = list(eval_split.texts) if mc.calibration == "eval" else texts.read_documents(mc.non_members)
    calib = score(calib_docs, "calibration")
    members = score(texts.read_documents(mc.members), "members") if mc.members else None
    sections, arrays = {}, {}
    for name in ("mink", "minkpp"):
        cut = mink.threshold(getattr(calib, name), mc.fpr)
        flagged = getattr(private, name) > cut
        sections[name] = {
            "exposed_share": float(flagged.mean()),
            "n_flagged": int(flagged.sum()),
            "threshold": cut,
            "k": mc.k,
            "fpr": mc.fpr,
            "calibration": mc.calibration,
            "n_calibration": len(calib_docs),
            "auc": mink.auc(getattr(members, name), getattr(calib, name))
            if members and mc.calibration == "files"
            else None,
        }
        arrays |= {name: getattr(private, name), f"{name}_flagged": flagged}
    return sections, arrays
