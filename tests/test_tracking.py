"""W&B tracking: offline by default, one run per job, and no private text in anything it writes."""

from __future__ import annotations

from pathlib import Path

from conftest import run_cli, write_jsonl

SENTINEL = "ZQXJ-PRIVATE-SENTINEL-7731"


def _files_under(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


def test_private_sentinel_never_reaches_tracker_files(tmp_path: Path) -> None:
    rows = [{"text": f"note {i} on dosage and sleep quality", "label": ["a" if i % 2 else "b"]} for i in range(24)]
    rows[3]["text"] = f"the patient {SENTINEL} reported chest pain"
    train = write_jsonl(tmp_path / "train.jsonl", rows[:18])
    test = write_jsonl(tmp_path / "test.jsonl", rows[18:])
    out = tmp_path / "out"
    # log_samples=true with the non-DP copy control: the tracker must refuse to log its (private) text.
    run_cli(
        [
            "dataset=files",
            f"dataset.train={train}",
            f"dataset.eval={test}",
            "generator=copy",
            "tracking=wandb",
            "dataset.label_space=[a,b]",
            "tracking.log_samples=true",
            "task.save_synthetic=false",
            f"output_root={out}",
            "eps=inf",
        ],
        cwd=tmp_path,
    )
    wandb_dirs = list(out.rglob("wandb"))
    assert wandb_dirs, "the tracker wrote no W&B run"
    offline_runs = [p for d in wandb_dirs for p in d.glob("offline-run-*")]
    assert offline_runs, "the W&B run is not offline"
    written = [p for d in wandb_dirs for p in _files_under(d)]
    assert any(p.suffix == ".wandb" for p in written)
    job_files = [p for p in _files_under(out)]
    for path in job_files:
        assert SENTINEL.encode() not in path.read_bytes(), f"private text leaked into {path}"
    # the job's log (app.log) names counts of the private set (documents fitted on, rows a dataset dropped): W&B's
    # console capture would upload it with the run, so the run records only what the tracker logs
    assert "private documents" in next(out.rglob("app.log")).read_text()
    for path in written:
        assert b"private documents" not in path.read_bytes(), f"the job's log was captured into {path}"


def test_tracking_none_writes_no_wandb_files(tmp_path: Path, tiny_dataset: list[str]) -> None:
    run_cli(
        [*tiny_dataset, "generator=copy", "tracking=none", "metrics=[]", f"output_root={tmp_path / 'out'}", "eps=inf"],
        cwd=tmp_path,
    )
    assert not list((tmp_path / "out").rglob("wandb"))
