"""Progress a person can follow: a bar in a terminal, a line per step in a log file or a cluster job.

tqdm's carriage-return bar is unreadable in a log file, and a long stage that
prints nothing (a DP-Gen fit inside an audit, sampling a corpus) looks hung.
`Meter` counts a stage's progress: on a terminal it is a tqdm bar; otherwise it
logs the stage's start, then a line with the count and elapsed time at most
every `every_s` seconds (and always the last one). `progress` wraps an iterable
in a `Meter`; stages that advance in uneven chunks (decoding steps, packed
batches) call `Meter.update` themselves. `quiet_loading` keeps the bars and
INFO lines of loading a model, which say nothing about a job, off the output.

Only public counts may be passed here (synthetic documents, metrics, audit
runs of a public design, planned steps), never a count of private records.
"""

from __future__ import annotations

import logging
import sys
import time
from contextlib import contextmanager
from types import TracebackType
from typing import Iterable, Iterator, TextIO, TypeVar

T = TypeVar("T")
log = logging.getLogger("synbench.core.progress")


class Meter:
    """The progress of one stage, advanced with `update(n)`; a context manager that reports the end on exit."""

    def __init__(
        self,
        desc: str,
        total: int | None = None,
        unit: str = "it",
        every_s: float = 30.0,
        stream: TextIO | None = None,
        enabled: bool = True,
    ) -> None:
        stream = stream or sys.stderr
        self.desc, self.total, self.unit, self.every_s = desc, total, unit, every_s
        self.done = self._logged = 0
        self._bar = None
        self._enabled = enabled
        self._start = self._last = time.perf_counter()
        if not enabled:
            return
        if getattr(stream, "isatty", lambda: False)():
            # imported here, for a terminal's bar only: tqdm.auto imports asyncio, a tenth of the CLI's start-up
            from tqdm.auto import tqdm

            self._bar = tqdm(desc=desc, total=total, unit=unit, file=stream)
        else:
            log.info("%s: started (0%s %s)", desc, self._of, unit)

    @property
    def _of(self) -> str:
        return f"/{self.total}" if self.total is not None else ""

    def update(self, n: int = 1) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.update(n)
            return
        now = time.perf_counter()
        if self._enabled and (now - self._last >= self.every_s or self.done == self.total):
            log.info("%s: %d%s %s, %.0f s", self.desc, self.done, self._of, self.unit, now - self._start)
            self._last, self._logged = now, self.done

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        elif self._enabled and (self._logged != self.done or self.done == 0):
            log.info(
                "%s: %d%s %s, %.0f s (done)",
                self.desc,
                self.done,
                self._of,
                self.unit,
                time.perf_counter() - self._start,
            )
        self._enabled = False

    def __enter__(self) -> "Meter":
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def progress(
    items: Iterable[T],
    desc: str,
    total: int | None = None,
    unit: str = "it",
    every_s: float = 30.0,
    stream: TextIO | None = None,
) -> Iterator[T]:
    """Yield `items`, showing progress of the stage `desc` (a bar on a TTY, throttled log lines otherwise)."""
    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    with Meter(desc, total, unit, every_s, stream) as meter:
        for item in items:
            yield item
            meter.update()


@contextmanager
def quiet_loading(*loggers: str) -> Iterator[None]:
    """Run the block with transformers' progress bars off and `loggers` held at WARNING, then restore both.

    `from_pretrained` draws a bar over the tensors it reads ("Loading
    weights"), gone in a second for the models a job loads, and a library may
    log at INFO which folder it read (sentence-transformers does): neither
    tells a reader of the job's output anything. Warnings still show (a load
    report of missing or unexpected weights says the model is not the one
    asked for).
    """
    from transformers.utils import logging as hf_logging

    shown = hf_logging.is_progress_bar_enabled()
    levels = {name: logging.getLogger(name).level for name in loggers}
    hf_logging.disable_progress_bar()
    for name, level in levels.items():
        logging.getLogger(name).setLevel(max(level, logging.WARNING))
    try:
        yield
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)
        if shown:
            hf_logging.enable_progress_bar()
