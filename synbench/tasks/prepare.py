"""`task=prepare`: a dataset as its loader reads it (a publisher's release through its reader, label map and split
rule) written as canonical JSONL, with a manifest of counts that users of one release can compare.

`<out_dir>/<dataset.name>/train.jsonl` and `test.jsonl` hold the private
training split and the eval split in the paper authors' format (`text`, a
`label` list), the layout the paper experiments read from `data_root`;
`manifest.json` beside them holds what two users compare to know they have
the same data: the split sizes and each label's document count per split,
the label space, the split seed. Those counts are statistics of private data
without noise: the manifest is the operator's check, printed and kept beside
the private files it describes, never a release (no results.json, no
tracker); it holds no text, no id and no digest of a document.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from synbench.core import registry, schema
from synbench.core.base import DatasetLoader, Splits
from synbench.core.corpus import Corpus
from synbench.core.files import write_corpus_jsonl, write_json_atomic
from synbench.job.spec import JobConfig
from synbench.tasks.base import Task
from synbench.tasks.options import PrepareOptions

SPLIT_FILES = {"train": "train.jsonl", "eval": "test.jsonl"}  # the names the paper experiments read


def manifest(name: str, splits: Splits, split_seed: Any) -> dict[str, Any]:
    """Counts of the prepared splits: documents and documents per label (every label of the space, 0 included)."""

    def counts(corpus: Corpus) -> dict[str, Any]:
        per_label = dict.fromkeys(corpus.label_space, 0)
        for labels in corpus.labels:
            for label in labels:
                per_label[label] += 1
        return {"documents": len(corpus), "labels": per_label}

    return {
        "dataset": name,
        "split_seed": split_seed,
        "multi_label": splits.train.multi_label,
        "label_space": list(splits.train.label_space),
        "label_space_inferred": splits.label_space_inferred,
        "splits": {split: counts(getattr(splits, split)) for split in SPLIT_FILES},
    }


def prepare(dataset: DatasetLoader, seed: int, out_dir: Path) -> dict[str, Any]:
    """Load `dataset`, write its splits and manifest under `out_dir/<name>/`, and return the manifest."""
    splits = dataset.load(seed)
    folder = out_dir / dataset.name
    folder.mkdir(parents=True, exist_ok=True)
    for split, file in SPLIT_FILES.items():
        write_corpus_jsonl(folder / file, getattr(splits, split))
    counted = manifest(dataset.name, splits, getattr(dataset, "split_seed", None))
    write_json_atomic(folder / "manifest.json", counted)
    return counted


class PrepareTask(Task):
    """`task=prepare` (conf/task/prepare.yaml): writes the dataset's canonical files, no results.json."""

    writes_results = False

    def run(self, config: JobConfig, job_dir: Path) -> None:
        options = schema.typed(PrepareOptions, config.task, "task")
        dataset = registry.create(DatasetLoader, config.dataset)
        counted = prepare(dataset, config.spec.seed, Path(options.out_dir).expanduser())
        print(json.dumps(counted, indent=2))
        print(f"prepare: {Path(options.out_dir) / dataset.name} (pass data_root={options.out_dir} to read it back)")
