"""YAML under conf/ says why, never a measured figure: a timing, a size in bytes, a speed-up or a "~N" estimate
goes stale as the code and the machines change, so figures live in generated files (bench.json, the report) that a
comment may link to instead."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONF_FOLDERS = [REPO / "conf", *sorted(REPO.glob("plugins/*/*/conf"))]

# a figure someone measured: "~130 s", "about 15 minutes", "took 2 h", "1.5 GiB", "35x slower", "420 ms"
MEASURED = re.compile(
    r"~\s*\d"
    r"|\b\d+(?:\.\d+)?\s*(?:ms|s|sec|secs|seconds?|min|mins|minutes?|h|hours?)\b"
    r"|\b\d+(?:\.\d+)?\s*(?:[KMGT]i?B)\b"
    r"|\b\d+(?:\.\d+)?\s*x\s+(?:faster|slower|speed)"
    r"|\b(?:took|takes|measured)\s+\d",
    re.IGNORECASE,
)


def comments(path: Path) -> list[tuple[int, str]]:
    """The comment part of each line of a YAML file (a `#` that starts a comment: at the start or after a space)."""
    found = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        match = re.search(r"(?:^|\s)#(.*)$", line)
        if match:
            found.append((number, match.group(1)))
    return found


def measured_figures(path: Path) -> list[tuple[int, str]]:
    """The comment lines of `path` that carry a measured figure: (line number, comment)."""
    return [(n, text.strip()) for n, text in comments(path) if MEASURED.search(text)]


def test_no_yaml_comment_under_conf_carries_a_measured_figure() -> None:
    files = [path for folder in CONF_FOLDERS for path in sorted(folder.rglob("*.yaml"))]
    assert len(files) > 50  # the scan reads the config tree, not an empty folder
    assert [f"{path.relative_to(REPO)}:{n}: {text}" for path in files for n, text in measured_figures(path)] == []


def test_the_scan_finds_planted_figures_and_passes_reasons(tmp_path: Path) -> None:
    planted = tmp_path / "planted.yaml"
    planted.write_text(
        "# one job takes ~130 s on 2 cores\n"
        "epochs: 3  # about 15 minutes\n"
        "dtype: float32  # bf16 is 35x slower here\n"
        "cache: 2 GiB  # the default\n"
        "# the paper's table 1 uses 3 seeds (figures: bench_demo_grid.json)\n"
        "text: '#1 seller'\n",
        encoding="utf-8",
    )
    # the timing, the estimate and the speed-up are found; a size that is a value, a reason that links to a
    # generated file, and a `#` inside a quoted value are not
    assert [n for n, _ in measured_figures(planted)] == [1, 2, 3]
