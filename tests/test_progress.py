"""Progress: a bar on a terminal, throttled count lines with elapsed time in a log file."""

from __future__ import annotations

import io
import logging

import pytest

from synbench.core.progress import Meter, progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_log_file_gets_count_lines_with_elapsed_time(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="synbench.core.progress"):
        assert list(progress(range(5), "sampling", unit="batch", every_s=0.0, stream=io.StringIO())) == [0, 1, 2, 3, 4]
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0] == "sampling: started (0/5 batch)"
    assert lines[1].startswith("sampling: 1/5 batch, ") and lines[-1].startswith("sampling: 5/5 batch, ")
    assert len(lines) == 6


def test_lines_are_throttled_but_the_last_count_is_always_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="synbench.core.progress"):
        list(progress(iter(range(1000)), "runs", every_s=3600.0, stream=io.StringIO()))
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2 and lines[-1].startswith("runs: 1000 it") and lines[-1].endswith("(done)")


def test_a_terminal_gets_a_bar_and_no_log_lines(caplog: pytest.LogCaptureFixture) -> None:
    terminal = _Terminal()
    with caplog.at_level(logging.INFO, logger="synbench.core.progress"):
        assert list(progress([1, 2, 3], "metrics", stream=terminal)) == [1, 2, 3]
    assert not caplog.records and "metrics" in terminal.getvalue() and "3/3" in terminal.getvalue()


def test_a_meter_advanced_in_chunks_logs_the_running_count(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="synbench.core.progress"):
        with Meter("decode", total=10, unit="step", every_s=0.0, stream=io.StringIO()) as meter:
            meter.update(4)
            meter.update(6)
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0] == "decode: started (0/10 step)"
    assert lines[1].startswith("decode: 4/10 step, ") and lines[2].startswith("decode: 10/10 step, ")
    assert len(lines) == 3 and meter.done == 10


def test_a_meter_closed_early_says_how_far_it_got(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="synbench.core.progress"):
        with Meter("decode", total=10, every_s=3600.0, stream=io.StringIO()) as meter:
            meter.update(3)
    assert caplog.records[-1].getMessage().startswith("decode: 3/10 it") and caplog.records[-1].getMessage().endswith(
        "(done)"
    )


def test_a_disabled_meter_is_silent_everywhere(caplog: pytest.LogCaptureFixture) -> None:
    terminal = _Terminal()
    with caplog.at_level(logging.INFO, logger="synbench.core.progress"):
        for stream in (terminal, io.StringIO()):
            with Meter("short", total=3, every_s=0.0, stream=stream, enabled=False) as meter:
                meter.update(3)
    assert not caplog.records and terminal.getvalue() == "" and meter.done == 3
