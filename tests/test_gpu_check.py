"""`make gpu-check` on a machine without CUDA: exit 0, the message, and a JSON saying so (the GPU paths need a GPU)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import REPO


def test_gpu_check_without_cuda_says_so_and_exits_0(tmp_path: Path) -> None:
    out = tmp_path / "gpu_check.json"
    proc = subprocess.run(
        [sys.executable, str(REPO / "experiments" / "gpu_check.py"), "--out", str(out)],
        capture_output=True,
        text=True,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": ""},  # hides any GPU: the CPU path, wherever the test runs
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "no CUDA device" in proc.stdout
    report = json.loads(out.read_text())
    assert report["cuda"] is False and report["status"] == "skipped" and report["reason"] == "no CUDA device"
    assert "checks" not in report  # nothing is claimed to have run
    assert (
        "gpu-check:" in (REPO / "Makefile").read_text()
        and "experiments/gpu_check.py" in (REPO / "Makefile").read_text()
    )
