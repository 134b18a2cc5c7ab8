"""A job is what it computes: skip and resume by its canonical key, one folder per job, an exclusive lock on it;
and the edges of running one (a plugin's exception, SYNBENCH_DEBUG, Ctrl-C) each end in one line."""

from __future__ import annotations

import fcntl
import io
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

import pytest

from conftest import OFFLINE_ENV, SENTINEL, compose_config, run_app, write_jsonl, written_bytes
from synbench.job import lock
from synbench.job.lock import ALREADY_RUNNING_EXIT

# A generator that raises with a document's text in its message, as a careless plugin would; SLEEP_S makes fit slow.
PLUGIN = """
import os
import time

from synbench.api import FitReport, Generator, register


@register(Generator, "edge")
class EdgeGenerator(Generator):
    def fit(self, corpus, privacy, seed):
        if os.environ.get("EDGE_STARTED"):
            open(os.environ["EDGE_STARTED"], "w").close()
        time.sleep(float(os.environ.get("EDGE_SLEEP_S", "0")))
        if os.environ.get("EDGE_RAISE"):
            raise ValueError(f"cannot handle {corpus.texts[0]!r}")
        self.corpus = corpus
        return FitReport(privacy.epsilon, privacy.delta)

    def sample(self, n, label_counts=None):
        return self.corpus.subset(list(range(min(n, len(self.corpus)))))
"""
RAISE_LINE = next(i for i, line in enumerate(PLUGIN.splitlines(), 1) if "raise ValueError" in line)


@pytest.fixture
def job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The overrides of a tiny copy-control job whose every record holds the sentinel (working folder tmp_path)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SYNBENCH_SECRET_FILE", str(tmp_path / "secret" / "resume.key"))
    for name in ("SYNBENCH_DEBUG", "EDGE_RAISE", "EDGE_SLEEP_S", "EDGE_STARTED"):
        monkeypatch.delenv(name, raising=False)
    rows = [{"text": f"patient {i} {SENTINEL} has headache", "label": ["pos" if i % 2 else "neg"]} for i in range(40)]
    train = write_jsonl(tmp_path / "train.jsonl", rows[:30])
    evaluation = write_jsonl(tmp_path / "eval.jsonl", rows[30:])
    (tmp_path / "edge_plugin.py").write_text(PLUGIN)
    return [
        "dataset=files",
        f"dataset.train={train}",
        f"dataset.eval={evaluation}",
        "dataset.name=tiny",
        "generator=copy",
        "tracking=none",
        "metrics=[]",
        f"output_root={tmp_path / 'out'}",
        "sweep=ident",
    ]


def results_files(root: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(root.rglob("results.json"))]


def test_the_job_key_is_the_canonical_description() -> None:
    from synbench.job.spec import JobConfig

    keys = {
        JobConfig.from_config(compose_config(["generator=copy", f"eps={eps}"])).spec.key for eps in ("1", "1.0", "1e0")
    }
    assert len(keys) == 1
    other = JobConfig.from_config(compose_config(["generator=copy", "eps=2"])).spec.key
    assert other not in keys
    where = JobConfig.from_config(compose_config(["generator=copy", "eps=1", "sweep=x", "lock_wait_s=0"])).spec.key
    assert where in keys  # where a job runs and how long it waits for its lock are not what it is


@pytest.fixture
def dp_job(job: list[str]) -> list[str]:
    """The tiny job with the example DP generator in place of the copy control: a single job that sets a finite eps
    for a control is refused, one of a DP generator runs."""
    return ["generator=example" if arg == "generator=copy" else arg for arg in job]


@pytest.mark.parametrize("again", ["eps=1.0", "eps=1e0"])
def test_the_same_job_under_another_name_is_skipped(
    dp_job: list[str], tmp_path: Path, capfd: pytest.CaptureFixture[str], again: str
) -> None:
    first = run_app([*dp_job, "eps=1"], capfd)
    assert first.code == 0, first.stderr
    [done] = list((tmp_path / "out").rglob("results.json"))
    stamp = done.stat().st_mtime_ns
    second = run_app([*dp_job, again], capfd)
    assert second.code == 0 and "is complete there" in second.stdout + second.stderr
    assert list((tmp_path / "out").rglob("results.json")) == [done] and done.stat().st_mtime_ns == stamp


def test_a_sweep_point_is_the_same_job_as_the_single_run_and_the_report_counts_distinct_seeds(
    dp_job: list[str], tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    from synbench.report.build import write_report

    assert run_app([*dp_job, "eps=1"], capfd).code == 0
    sweep = run_app(["-m", *dp_job, "eps=1.0", "seed=0,1"], capfd)
    assert sweep.code == 0, sweep.stderr
    results = results_files(tmp_path / "out")
    assert sorted(r["seed"] for r in results) == [0, 1]  # seed 0 was the single run's job: not run again
    assert len({r["job_key"] for r in results}) == 2
    # a folder of the same job under another name, as versions that matched jobs by folder name left behind
    [seed0] = [p.parent for p in (tmp_path / "out").rglob("results.json") if json.loads(p.read_text())["seed"] == 0]
    shutil.copytree(seed0, seed0.with_name("eps=1.0,seed=0"))
    markdown, _ = write_report(tmp_path / "out" / "ident", 0.95)
    # the utility table's row and the generator comparison's: eps 1, two seeds ({0, 1}) in each
    rows = [line for line in markdown.read_text().splitlines() if line.startswith("| example")]
    cells = [[cell.strip() for cell in row.split("|")][2:4] for row in rows]
    assert len(rows) == 2 and all(pair == ["1", "2"] for pair in cells), rows


def test_a_job_waits_for_its_lock_then_runs(
    dp_job: list[str], tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run_app([*dp_job, "eps=1"], capfd).code == 0
    [done] = list((tmp_path / "out").rglob("results.json"))
    done.unlink()
    held = (done.parent / ".lock").open("r+")
    fcntl.flock(held.fileno(), fcntl.LOCK_EX)
    try_lock, ending = lock._try_lock, threading.Timer(1.0, held.close)

    def other_job_ends_once_refused(handle: IO[str]) -> bool:
        # the other job ends a second after this one first finds the folder locked, however long start-up took
        got = try_lock(handle)
        if not got and not ending.is_alive() and not held.closed:
            ending.start()
        return got

    monkeypatch.setattr(lock, "_try_lock", other_job_ends_once_refused)
    outcome = run_app([*dp_job, "eps=1", "lock_wait_s=30"], capfd)
    assert outcome.code == 0 and "waiting up to 30 s" in outcome.stdout + outcome.stderr
    assert json.loads(done.read_text())["status"] == "complete"


@pytest.mark.parametrize("multirun", [False, True], ids=["run", "sweep"])
def test_a_plugin_exception_is_one_line_and_its_traceback_only_on_stderr_when_asked(
    job: list[str],
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    multirun: bool,
) -> None:
    """Plugin name, exception type, file:line of the raise; the message (a record) nowhere but SYNBENCH_DEBUG's
    stderr, never in app.log (which Hydra's job logging writes in a sweep too)."""
    monkeypatch.setenv("EDGE_RAISE", "1")
    args = [*(["-m"] if multirun else []), *job, "plugins=[edge_plugin.py]", "generator._plugin_=edge"]
    plain = run_app(args, capfd)
    assert plain.code != 0 and "Traceback" not in plain.stdout + plain.stderr
    assert SENTINEL not in plain.stdout + plain.stderr and SENTINEL.encode() not in written_bytes(tmp_path / "out")
    # the path as this process first imported the plugin (relative to the working folder of that test)
    where = rf"(\S*/)?edge_plugin\.py:{RAISE_LINE}"
    assert re.search(rf"generator plugin 'edge' raised ValueError at {where};", plain.stderr), plain.stderr
    assert "SYNBENCH_DEBUG=1" in plain.stderr
    [results] = results_files(tmp_path / "out")
    assert results["status"] == "failed"
    assert results["error"]["plugin"] == "edge" and results["error"]["type"] == "ValueError"
    assert re.fullmatch(where, results["error"]["where"]) and "SYNBENCH_DEBUG=1" in results["error"]["message"]

    monkeypatch.setenv("SYNBENCH_DEBUG", "1")
    debug = run_app(args, capfd)
    assert debug.code != 0 and "Traceback" in debug.stderr and SENTINEL in debug.stderr  # the full traceback
    assert SENTINEL not in debug.stdout  # not on stdout, where Hydra's console log goes
    logs = list((tmp_path / "out").rglob("*.log"))
    assert logs and all(SENTINEL.encode() not in p.read_bytes() for p in logs)
    assert SENTINEL.encode() not in written_bytes(tmp_path / "out")


class ClosesItsStream(logging.StreamHandler):  # type: ignore[type-arg]
    """A handler that closes the stream it writes to, as absl's does (its stream: the sys.stderr of absl's import)."""

    def close(self) -> None:
        self.stream.close()
        super().close()


def test_an_in_process_run_closes_no_handler_made_before_it(
    dp_job: list[str], capfd: pytest.CaptureFixture[str]
) -> None:
    """Hydra's dictConfig closes every live handler; absl's, made when tests/test_dpgen.py imports dp_accounting,
    holds pytest's capture stream, and closing that crashed the rest of the pytest run."""
    earlier = ClosesItsStream(io.StringIO())
    assert run_app([*dp_job, "eps=1"], capfd).code == 0
    assert not earlier.stream.closed


def _sigint_when_started(proc: subprocess.Popen[str], marker: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not marker.exists():
        assert proc.poll() is None and time.monotonic() < deadline, "the job never started"
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)


def _popen(args: list[str], cwd: Path, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "synbench", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **OFFLINE_ENV, **env},
    )


@pytest.mark.slow
def test_ctrl_c_is_one_line_and_the_same_command_resumes(job: list[str], tmp_path: Path) -> None:
    args = [*job, "plugins=[edge_plugin.py]", "generator._plugin_=edge", "eps=1"]
    proc = _popen(args, tmp_path, EDGE_SLEEP_S="30", EDGE_STARTED=str(tmp_path / "fitting"))
    _sigint_when_started(proc, tmp_path / "fitting")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, out + err
    assert err.strip().splitlines()[-1] == "synbench: interrupted; the same command resumes"
    assert "Traceback" not in out + err and len(err.strip().splitlines()) == 1, err
    [results] = results_files(tmp_path / "out")
    assert results["status"] == "failed" and results["error"]["type"] == "KeyboardInterrupt"
    again = _popen(args, tmp_path)
    out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    [results] = results_files(tmp_path / "out")
    assert results["status"] == "complete"


@pytest.mark.slow
def test_two_identical_jobs_started_together_run_once(job: list[str], tmp_path: Path) -> None:
    """The second process stops at once (lock_wait_s=0) naming the first one's pid; the first finishes alone."""
    edge = [*job, "plugins=[edge_plugin.py]", "generator._plugin_=edge", "lock_wait_s=0"]
    first = _popen([*edge, "eps=1"], tmp_path, EDGE_SLEEP_S="8", EDGE_STARTED=str(tmp_path / "fitting"))
    deadline = time.monotonic() + 120
    while not (tmp_path / "fitting").exists():
        assert first.poll() is None and time.monotonic() < deadline, "the first job never started"
        time.sleep(0.2)
    second = _popen([*edge, "eps=1.0"], tmp_path)  # the same job under another name
    out, err = second.communicate(timeout=300)
    assert second.returncode == ALREADY_RUNNING_EXIT and f"is locked by pid {first.pid}" in err, err
    assert err.strip().splitlines()[-1].startswith("synbench: already running:") and "Traceback" not in err, err
    out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    [results] = results_files(tmp_path / "out")
    assert results["status"] == "complete"
