"""`task=prepare`: a dataset as its loader reads it (a publisher's release through its reader, label map and split
rule) written as canonical JSONL, with a manifest that says what it was read from and what it holds.

`<out_dir>/<dataset.name>/train.jsonl` and `test.jsonl` hold the private
training split and the eval split in the paper authors' format (`text`, a
`label` list), the layout the paper experiments read from `data_root`;
`manifest.json` beside them holds what two users compare to know they have
the same data: the split sizes and each label's document count per split,
the label space, the split seed, the hub commit a hub load resolved
(`source_revision`). Those counts are statistics of private data without
noise: the manifest is the operator's check, printed and kept beside the
private files it describes, never in a release; it holds no text, no id and
no plain digest of a document.

Prepare never loses work:

- The manifest records the source: the dataset's config as its reader reads
  it (`source`, local paths resolved). A folder that holds another source's
  files (another release folder, another split seed or policy, a hub branch
  that moved) is refused, and kept, unless `task.overwrite=true`; the same
  source and config is prepared again in place.
- The folder is written whole beside the old one and swapped in when
  complete, so a failed prepare leaves the previous folder as it was. A
  folder another job published meanwhile is kept when it holds the same
  source and refused otherwise, so two jobs of one sweep never share a folder
  with different data; `task.overwrite` is refused in a sweep, where a later
  job would replace an earlier one's folder.
- The manifest lists each file with a keyed digest of its bytes
  (`synbench.data.prepared`), which every read of the file checks.
- The job writes a `results.json` like every job: its status and, for a
  complete job, the prepared folder's path only (no count, no digest), or
  the error of a failed one, which a sweep's closing table and the report
  list.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping

from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode

from synbench.core import registry, schema
from synbench.core.base import DatasetLoader, Splits
from synbench.core.corpus import Corpus
from synbench.core.errors import ConfigError
from synbench.core.files import atomic_folder, to_json, write_corpus_jsonl, write_json_atomic
from synbench.data.prepared import MANIFEST_FILE, listed_files, read_manifest, secret_id
from synbench.job.lifecycle import JobRun, run_job
from synbench.job.record import JobRecord
from synbench.job.results import RESULTS_FILE
from synbench.job.spec import JobConfig
from synbench.tasks.base import Task
from synbench.tasks.options import PrepareOptions

SPLIT_FILES = {"train": "train.jsonl", "eval": "test.jsonl"}  # the names the paper experiments read
# Keys of every dataset's config that no reader reads (what generators and messages take from it: the sequence
# length and long-document rule, the control code, the domain word, the access and source named in errors):
# changing one rewrites no prepared file, so the source a folder is compared by leaves them out.
NOT_READ = frozenset({"domain", "max_length", "long_documents", "max_chunks", "control_code", "access", "source"})
PATH_KEYS = ("data_dir", "train", "eval")  # local paths: compared resolved, so ~/data and /home/me/data are one


def source_of(node: Mapping[str, Any]) -> dict[str, Any]:
    """What a prepared folder was read from: the dataset's config node as its reader reads it (every key but
    NOT_READ), local paths resolved, as JSON. Config values only, never data."""
    source = {
        key: str(Path(value).expanduser().resolve()) if key in PATH_KEYS and isinstance(value, str) else value
        for key, value in sorted(node.items())
        if key not in NOT_READ
    }
    return json.loads(json.dumps(to_json(source)))


def differences(found: Mapping[str, Any], source: Mapping[str, Any], revision: str | None) -> list[str]:
    """The config keys (`dataset.<key>`) in which the manifest `found` was prepared from another source than
    `source`, and the hub commit when both loads resolved one and they differ."""
    before = found.get("source")
    if not isinstance(before, dict):
        return ["the source (its manifest does not record one)"]
    keys = sorted(key for key in {*before, *source} if before.get(key) != source.get(key))
    differ = [f"dataset.{key}" for key in keys]
    resolved = found.get("source_revision")
    if revision is not None and resolved is not None and resolved != revision:
        differ.append("the hub commit resolved (source_revision)")
    return differ


def check_folder(folder: Path, source: Mapping[str, Any], revision: str | None, overwrite: bool) -> None:
    """Refuse to replace `folder` when it holds another source's prepared files (or files no manifest of ours
    describes), unless `overwrite`; a folder of the same source, or none, passes."""
    if not folder.exists():
        return
    if not folder.is_dir():
        raise ConfigError(f"{folder} is a file, not a prepared folder; set task.out_dir to another folder")
    if overwrite:
        return
    found = read_manifest(folder / MANIFEST_FILE)
    keep = "pass task.overwrite=true to replace it, or task.out_dir=<another folder> to keep both (one run each)"
    if found is None:
        if any(folder.iterdir()):
            raise ConfigError(f"{folder} holds files but no {MANIFEST_FILE} of task=prepare; {keep}")
        return
    differ = differences(found, source, revision)
    if differ:
        raise ConfigError(
            f"{folder} holds dataset '{found.get('dataset')}' prepared from another source (it differs in "
            f"{', '.join(differ)}); {keep}"
        )


def manifest(name: str, splits: Splits, split_seed: Any, source: Mapping[str, Any], folder: Path) -> dict[str, Any]:
    """What the prepared files in `folder` are: counts of the splits (documents, and documents per label with
    every label of the space, 0 included), the source they were read from, and each file's keyed digest."""

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
        "source": dict(source),
        "source_revision": splits.source_revision,
        "files": listed_files(folder, SPLIT_FILES),
        "secret_id": secret_id(),
    }


def prepare(
    dataset: DatasetLoader, node: Mapping[str, Any], seed: int, out_dir: Path, overwrite: bool
) -> dict[str, Any]:
    """Load `dataset` (built from its config `node`), write its splits and manifest as `out_dir/<name>/`, and
    return the manifest; a folder of another source is refused (`check_folder`) before the dataset is read."""
    folder = out_dir / dataset.name
    source = source_of(node)
    check_folder(folder, source, None, overwrite)
    before = read_manifest(folder / MANIFEST_FILE)
    splits = dataset.load(seed)
    check_folder(folder, source, splits.source_revision, overwrite)

    def published_meanwhile(found: Path) -> bool:
        """Keep a folder another job published while this one read its source when it holds the same source
        (refuse one of another); replace the one checked above."""
        if read_manifest(found / MANIFEST_FILE) == before:
            return False
        check_folder(found, source, splits.source_revision, overwrite=False)
        return True

    with atomic_folder(folder, keep=published_meanwhile) as partial:
        for split, file in SPLIT_FILES.items():
            write_corpus_jsonl(partial / file, getattr(splits, split))
        counted = manifest(dataset.name, splits, getattr(dataset, "split_seed", None), source, partial)
        write_json_atomic(partial / MANIFEST_FILE, counted)
    return counted


def in_a_sweep() -> bool:
    """Whether this job is one of a multirun's (`-m`)."""
    return HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN


class PrepareTask(Task):
    """`task=prepare` (conf/task/prepare.yaml): writes the dataset's canonical files; its results.json holds the
    job's status and the prepared folder, never a count."""

    options = PrepareOptions
    results_sections = frozenset({"prepare"})

    def run(self, config: JobConfig, job_dir: Path) -> JobRecord:
        """The job through the task wrapper, with no tracker (it has nothing to track) and run anew every time: a
        complete record says the folder was written, not that it still holds what was written, and running the
        same command again is the fix for an edited prepared file."""
        (job_dir / RESULTS_FILE).unlink(missing_ok=True)
        return run_job(replace(config, tracking=None), job_dir, self.body, type(self))

    def body(self, job: JobRun) -> None:
        record = job.results
        record.generator = record.generator_name = record.epsilon = None  # no generator runs, no budget is spent
        options = schema.typed(PrepareOptions, job.config.task, "task")
        if options.overwrite and in_a_sweep():
            raise ConfigError(
                "task.overwrite=true replaces a prepared folder, which a later job of a sweep could do to an "
                "earlier one's: replace one folder at a time, as a single run (without -m)"
            )
        dataset = registry.create(DatasetLoader, job.config.dataset)
        out_dir = Path(options.out_dir).expanduser().resolve()
        with job.timing("prepare"):
            counted = prepare(dataset, job.config.dataset, job.spec.seed, out_dir, options.overwrite)
        record.source_revision = counted["source_revision"]  # the hub commit read (public: no function of records)
        record["prepare"] = {"folder": str(out_dir / dataset.name)}
        print(json.dumps(counted, indent=2))
        print(f"prepare: {out_dir / dataset.name} (pass data_root={options.out_dir} to read it back)")
