"""A sweep on Hydra's own Ray launcher (`hydra/launcher=ray`, the `[ray]` extra) over a local Ray instance.

Three copy-control jobs on three small private sets run as Ray
tasks, two at a time. One set's file holds a record without a label at
first, so that job fails when it reads it (a missing file would be refused
for the whole sweep before any job starts): the other two still finish, the
sweep exits non-zero naming it, and the same command run again (the file now
fixed) redoes that job only.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_cli, write_jsonl


def write_set(path: Path, offset: int) -> Path:
    rows = [
        {"text": f"patient {offset + i} reports {('mild', 'severe')[i % 2]} pain after dose {i}", "label": [label]}
        for i, label in enumerate("ab" * 10)
    ]
    return write_jsonl(path, rows)


def results_by_train(out: Path) -> dict[str, dict]:
    """Each job's results.json (with its file's modification time), by the private set it was given."""
    found = {}
    for path in (out / "ray").rglob("results.json"):
        config = (path.parent / ".hydra" / "overrides.yaml").read_text()
        train = next(name for name in ("set0", "set1", "set2") if f"{name}.jsonl" in config)
        found[train] = {**json.loads(path.read_text()), "mtime_ns": path.stat().st_mtime_ns}
    return found


@pytest.mark.slow
def test_ray_sweep_keeps_going_past_a_failed_job_and_redoes_only_it(tmp_path: Path) -> None:
    pytest.importorskip("hydra_plugins.hydra_ray_launcher", reason="pip install '.[ray]' for the Ray launcher")
    data = tmp_path / "data"
    data.mkdir()
    write_set(data / "set0.jsonl", 0), write_set(data / "set2.jsonl", 200)
    write_jsonl(data / "set1.jsonl", [{"text": "a record whose label list is empty", "label": []}])
    write_set(data / "eval.jsonl", 1000)
    out = tmp_path / "out"
    args = [
        "-m",
        "hydra/launcher=ray",
        "+hydra.launcher.ray.init.num_cpus=2",
        "+hydra.launcher.ray.init.include_dashboard=false",
        "dataset=files",
        "dataset.name=tiny",
        f"dataset.train={data / 'set0.jsonl'},{data / 'set1.jsonl'},{data / 'set2.jsonl'}",
        f"dataset.eval={data / 'eval.jsonl'}",
        "generator=copy",
        "eps=inf",
        "metrics=[length]",
        "tracking=none",
        "sweep=ray",
        f"output_root={out}",
    ]
    first = run_cli(args, cwd=tmp_path, check=False, timeout=900)
    assert first.returncode != 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert "Ray Launcher is launching 3 jobs" in first.stdout + first.stderr
    before = results_by_train(out)
    assert {k: v["status"] for k, v in before.items()} == {"set0": "complete", "set1": "failed", "set2": "complete"}
    assert "1 of 3 job(s) did not complete" in first.stderr

    write_set(data / "set1.jsonl", 100)
    run_cli(args, cwd=tmp_path, timeout=900)
    after = results_by_train(out)
    assert {k: v["status"] for k, v in after.items()} == dict.fromkeys(("set0", "set1", "set2"), "complete")
    for kept in ("set0", "set2"):  # finished jobs were skipped, not redone
        assert after[kept]["mtime_ns"] == before[kept]["mtime_ns"] and after[kept]["job_key"] == before[kept]["job_key"]
    assert after["set1"]["mtime_ns"] > before["set1"]["mtime_ns"]
