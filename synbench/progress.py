"""Progress a person can follow: a bar in a terminal, a line per step in a log file or a cluster job.

tqdm's carriage-return bar is unreadable in a log file, and a long stage that
prints nothing (a DP-Gen fit inside an audit, sampling a corpus) looks hung.
`progress` wraps an iterable: on a terminal it is tqdm; otherwise it logs the
stage's start, then a line with the count and elapsed time at most every
`every_s` seconds (and always the last one).

Only public counts may be passed here (synthetic documents, metrics, audit
runs of a public design, planned steps), never a count of private records.
"""
from __future__ import annotations

import logging
import sys
import time
from typing import Iterable, Iterator, TypeVar

from tqdm.auto import tqdm

T = TypeVar("T")
log = logging.getLogger("synbench.progress")


def progress(items: Iterable[T], desc: str, total: int | None = None, unit: str = "it", every_s: float = 30.0,
             stream=None) -> Iterator[T]:
    """Yield `items`, showing progress of the stage `desc` (a bar on a TTY, throttled log lines otherwise)."""
    stream = stream or sys.stderr
    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    if getattr(stream, "isatty", lambda: False)():
        yield from tqdm(items, desc=desc, total=total, unit=unit, file=stream)
        return
    of = f"/{total}" if total is not None else ""
    start = last = time.perf_counter()
    log.info("%s: started (%s%s %s)", desc, 0, of, unit)
    done = logged = 0
    for item in items:
        yield item
        done += 1
        now = time.perf_counter()
        if now - last >= every_s or done == total:
            log.info("%s: %d%s %s, %.0f s", desc, done, of, unit, now - start)
            last, logged = now, done
    if logged != done or done == 0:
        log.info("%s: %d%s %s, %.0f s (done)", desc, done, of, unit, time.perf_counter() - start)
