"""Reproducible hub loads: the commit a hub load actually read reaches results.json (`source_revision`), and a
job read at a revision that is not a commit says so in its summary, with the commit that pins it.

The hub is out of reach here, so `datasets.load_dataset` is replaced by a function that answers as it does: data
cached under `<repo>/<config>/<version>/<commit sha>/`, where `datasets` keeps a hub load."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import compose_config
from synbench.data.hub import pinned
from synbench.job.record import JobRecord
from synbench.job.spec import JobConfig
from synbench.report.summary import revision_line
from synbench.tasks import get_task

SHA = "fedcba9876543210fedcba9876543210fedcba98"
TWEETS = [
    f"$TICK{i} {'falls' if i % 3 == 0 else 'rises' if i % 3 == 1 else 'holds'} after report {i}" for i in range(60)
]


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """`datasets.load_dataset` answering from a made-up hub cache of zstfns's repository at commit SHA."""
    import datasets

    cached = tmp_path / "hf-cache" / "zeroshot___twitter-financial-news-sentiment" / "default" / "0.0.0" / SHA
    splits = {"train": TWEETS[:45], "validation": TWEETS[45:]}
    datasets.DatasetDict(
        {
            split: datasets.Dataset.from_dict({"text": texts, "label": [int(t.split()[1] != "falls") for t in texts]})
            for split, texts in splits.items()
        }
    ).save_to_disk(str(cached))
    monkeypatch.setattr(datasets, "load_dataset", lambda *args, **options: datasets.load_from_disk(str(cached)))
    return cached


def run_benchmark(revision: str, out: Path) -> dict[str, Any]:
    """A copy-control benchmark of zstfns at `revision`, run in this process as the app runs it."""
    overrides = ["dataset=zstfns", f"dataset.revision={revision}", "generator=copy", "eps=inf", "metrics=[utility]"]
    cfg = compose_config([*overrides, "classifier=tfidf", "tracking=none", f"output_root={out}"])
    get_task("benchmark").run(JobConfig.from_config(cfg), out / "job")
    return json.loads((out / "job" / "results.json").read_text())


def test_results_record_the_commit_read_and_an_unpinned_read_is_named(
    hub: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = run_benchmark("main", tmp_path / "unpinned")
    assert results["status"] == "complete" and results["source_revision"] == SHA
    printed = capsys.readouterr().out
    line = f"dataset zstfns read at an unpinned revision (resolved {SHA}); pin dataset.revision={SHA} to reproduce"
    assert line in printed and printed.count("unpinned revision") == 1
    pinned_results = run_benchmark(SHA, tmp_path / "pinned")
    assert pinned_results["source_revision"] == SHA and "unpinned" not in capsys.readouterr().out


@pytest.mark.parametrize(
    "dataset, source_revision, said",
    [
        ({"revision": None, "path": "org/data"}, None, "(resolved unknown); pin dataset.revision=<a commit sha"),
        ({"revision": "v1.0", "path": "org/data"}, SHA, f"(resolved {SHA}); pin dataset.revision={SHA}"),
        ({"revision": SHA, "path": "org/data"}, SHA, None),  # pinned
        ({"revision": "main", "path": "/data/saved"}, None, None),  # a save_to_disk folder: no hub revision applies
        ({"revision": "main", "path": "org/data", "data_dir": "/data/asylex"}, None, None),  # a release folder
        ({"revision": "main", "path": "org/data", "train": "/prepared/train.jsonl"}, None, None),  # prepared files
        ({"data_dir": "/data/mimic"}, None, None),  # no hub source at all
    ],
)
def test_the_summary_names_an_unpinned_hub_read_only(
    dataset: dict[str, Any], source_revision: str | None, said: str | None
) -> None:
    results = {"dataset": "d", "config": {"dataset": dataset}, "source_revision": source_revision}
    line = revision_line(JobRecord.from_json(results))
    assert (line is None) if said is None else (said in line and line.startswith("dataset d read at an unpinned"))


def test_a_record_reads_source_revision_back_and_an_older_file_without_it() -> None:
    assert JobRecord.from_json(JobRecord(source_revision=SHA).to_json()).source_revision == SHA
    assert JobRecord.from_json({"status": "complete"}).source_revision is None
    assert pinned(SHA) and not pinned("main") and not pinned(None) and not pinned(SHA[:7])
