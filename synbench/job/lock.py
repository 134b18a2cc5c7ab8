"""Where a job runs: the folder of the same job (by `job_key`) in its sweep, held under an exclusive lock.

Hydra names a job's folder after its command-line overrides, so one job can
get several names: `eps=1` and `eps=1.0`, or the point eps=1 of a `-m` sweep
over seeds (whose folder also names `seed=0`). A job is what it computes,
its canonical description (`JobSpec.key`), so a job runs, resumes and is
skipped in the one folder of its sweep whose `.lock` (or results.json) holds
its key; the folder Hydra made for the new name keeps only Hydra's own files.

The job holds an exclusive `fcntl.flock` on `<folder>/.lock` while it runs,
so two identical jobs never write one folder at once: the second waits up to
`lock_wait_s` seconds for the first (then finds its results complete and
skips), or stops with one line saying the job is already running and naming
the process that holds the lock (exit ALREADY_RUNNING_EXIT, not a failure of
the job: nothing of the second process is written into the folder). A
brief lock on the sweep folder makes finding and claiming a folder one step,
so two new names of one job started together still meet in one folder.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator

from synbench.core.errors import ConfigError
from synbench.core.files import FILE_MODE, FOLDER_MODE
from synbench.job.results import read_results

log = logging.getLogger(__name__)

LOCK_FILE = ".lock"
SWEEP_LOCK_FILE = ".synbench.lock"
POLL_S = 0.2
ALREADY_RUNNING_EXIT = 75  # sysexits' EX_TEMPFAIL: the same job runs elsewhere; try again later


class JobLocked(ConfigError):
    """The job's folder is held by another process running the same job."""


def _open_lock(path: Path) -> IO[str]:
    path.parent.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
    return os.fdopen(fd, "r+", encoding="utf-8")


def _try_lock(handle: IO[str]) -> bool:
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _holder(path: Path) -> str:
    """Who holds a lock file, as it says itself (the pid written by the process that took it)."""
    try:
        pid = json.loads(path.read_text(encoding="utf-8")).get("pid")
    except (OSError, ValueError, AttributeError):
        pid = None
    return f"pid {pid}" if pid is not None else "another process"


def _key_of(folder: Path) -> str | None:
    """The job key a folder was claimed for (its lock file), or that its results were written for."""
    try:
        key = json.loads((folder / LOCK_FILE).read_text(encoding="utf-8")).get("job_key")
    except (OSError, ValueError, AttributeError):
        key = None
    if key is None:
        results = read_results(folder)
        key = results.get("job_key") if results else None
    return key if isinstance(key, str) else None


def same_job_folder(siblings: Path, key: str, default: Path) -> Path:
    """The folder under `siblings` (one per job) that holds the job `key`: the complete one first, then `default`
    itself, then any; `default` when none does."""
    matches = [
        folder
        for folder in sorted(siblings.iterdir() if siblings.is_dir() else [])
        if folder.is_dir() and _key_of(folder) == key
    ]
    for folder in matches:
        results = read_results(folder)
        if results and results.get("status") == "complete":
            return folder
    return default if default in matches or not matches else matches[0]


@contextmanager
def held(path: Path, wait_s: float, what: str) -> Iterator[IO[str]]:
    """An exclusive flock on `path`, waited for up to `wait_s` seconds; else a one-line error naming its holder."""
    handle = _open_lock(path)
    try:
        deadline = time.monotonic() + wait_s  # at least 0 (spec.check_top_level)
        waited = False
        while not _try_lock(handle):
            if time.monotonic() >= deadline:
                raise JobLocked(
                    f"{what} is locked by {_holder(path)}, which is running the same job now; wait for it to "
                    f"finish (then the same command skips or resumes it), stop that process, or raise lock_wait_s "
                    f"(waited {wait_s:g} s)"
                )
            if not waited:
                log.info("%s is locked by %s; waiting up to %g s", what, _holder(path), wait_s)
                waited = True
            time.sleep(POLL_S)
        yield handle
    finally:
        handle.close()  # closing the file releases the lock


@contextmanager
def claim(job_dir: Path, key: str, wait_s: float) -> Iterator[Path]:
    """The folder the job `key` runs in (see the module docstring), locked for as long as the block runs.

    `job_dir` is the folder Hydra made; the same job may already have a folder
    beside it (its parent holds the sweep's jobs of one task).
    """
    siblings = job_dir.parent
    with held(siblings / SWEEP_LOCK_FILE, wait_s, f"the sweep folder {siblings}"):
        folder = same_job_folder(siblings, key, job_dir)
        handle = _open_lock(folder / LOCK_FILE)
        locked = _try_lock(handle)
        if locked:
            _write_claim(handle, key)
        else:
            handle.close()
    if locked:
        try:
            yield _announce(folder, job_dir)
        finally:
            handle.close()
        return
    with held(folder / LOCK_FILE, wait_s, f"the job folder {folder}") as waited:
        _write_claim(waited, key)
        yield _announce(folder, job_dir)


def _write_claim(handle: IO[str], key: str) -> None:
    handle.seek(0)
    handle.truncate()
    handle.write(json.dumps({"pid": os.getpid(), "job_key": key}) + "\n")
    handle.flush()


def _announce(folder: Path, job_dir: Path) -> Path:
    if folder != job_dir:
        results = read_results(folder) or {}
        log.info(
            "the same job (same job_key) has the folder %s; it %s there",
            folder,
            "is complete" if results.get("status") == "complete" else "resumes",
        )
    return folder
