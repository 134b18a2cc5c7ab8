"""The one task wrapper: skip when complete, record failures without quoting data, always finish the tracker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import compose_config, run_cli
from synbench.core.errors import DataError
from synbench.job import lifecycle
from synbench.job.spec import JobConfig


class RecordingTracker:
    def __init__(self) -> None:
        self.finished: list[bool] = []

    def log_metrics(self, *args: object, **kwargs: object) -> None:
        pass

    def finish(self, failed: bool = False) -> None:
        self.finished.append(failed)


@pytest.fixture
def tracker(monkeypatch: pytest.MonkeyPatch) -> RecordingTracker:
    recording = RecordingTracker()
    monkeypatch.setattr(lifecycle, "make_tracker", lambda *a, **k: recording)
    return recording


def test_a_failing_body_is_recorded_without_its_message_and_the_tracker_finishes(
    tmp_path: Path, tracker: RecordingTracker
) -> None:
    cfg = compose_config(["tracking=none", "generator=copy", "eps=inf"])
    config = JobConfig.from_config(cfg)

    def body(job: lifecycle.JobRun) -> None:
        with job.timing("fit"):
            raise RuntimeError("the patient John Doe, 43, ...")  # a third party's message may quote data

    with pytest.raises(RuntimeError):
        lifecycle.run_job(config, tmp_path, body)
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["status"] == "failed" and results["error"]["type"] == "RuntimeError"
    assert "John" not in json.dumps(results) and "fit_s" in results["timing"]
    assert tracker.finished == [True]


def test_our_errors_keep_their_message_and_a_complete_job_is_skipped(tmp_path: Path, tracker: RecordingTracker) -> None:
    cfg = compose_config(["tracking=none", "generator=copy", "eps=inf"])
    config = JobConfig.from_config(cfg)
    with pytest.raises(DataError):
        lifecycle.run_job(config, tmp_path, lambda job: (_ for _ in ()).throw(DataError("train.jsonl line 3: no text")))
    assert json.loads((tmp_path / "results.json").read_text())["error"] == {
        "type": "DataError",
        "message": "train.jsonl line 3: no text",
    }
    calls = []
    assert lifecycle.run_job(config, tmp_path, calls.append)["status"] == "complete"
    assert lifecycle.run_job(config, tmp_path, calls.append)["status"] == "complete"
    assert len(calls) == 1 and tracker.finished == [True, False]  # the second run skipped: no tracker either


def test_cli_failure_writes_failed_results(tmp_path: Path, tiny_dataset: list[str]) -> None:
    """A job that fails once it runs (an eval file that is not JSON Lines, found only when read) writes its failed
    results.json; a missing file is refused before any job starts (tests/test_bad_inputs.py)."""
    broken = tmp_path / "broken.jsonl"
    broken.write_text("not json\n")
    proc = run_cli(
        [
            *(arg for arg in tiny_dataset if not arg.startswith("dataset.eval=")),  # a key given twice is refused
            f"dataset.eval={broken}",
            "generator=copy",
            "eps=inf",
            "tracking=none",
            "metrics=[]",
            f"output_root={tmp_path / 'out'}",
        ],
        cwd=tmp_path,
        check=False,
    )
    assert proc.returncode == 2 and "broken.jsonl" in proc.stderr
    [path] = list((tmp_path / "out").rglob("results.json"))
    results = json.loads(path.read_text())
    assert results["status"] == "failed" and "broken.jsonl" in results["error"]["message"]
