"""How fast the CLI answers before any job runs: `--help`, a refused override, and `import synbench.conf`.

Each is a fresh `python` process (what a user waits for), timed wall-clock
over several repeats; the median is the figure, the maximum shows the spread.
Two refusals are timed: one the command-line check answers before Hydra
composes (`generator=cpy`, an option the group does not have) and one Hydra
answers while composing the default config (`generator.epoch=3`, a key the
generator's schema does not have). The machine's load average at the start
is recorded beside them: on a busy machine every figure is larger.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REPEATS = 7
COMMANDS = {
    "help": ["-m", "synbench", "--help"],
    "refused_group_option": ["-m", "synbench", "generator=cpy"],
    "refused_key_while_composing": ["-m", "synbench", "generator.epoch=3"],
    "import_synbench_conf": ["-c", "import synbench.conf"],
}


def wall_times(args: list[str]) -> list[float]:
    """Wall-clock seconds of `python <args>` in fresh processes, one per repeat."""
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, check=False)
        times.append(time.perf_counter() - start)
    return times


def main() -> dict:
    load = os.getloadavg()[0]
    figures: dict = {"repeats": REPEATS, "load_average_1min_at_start": round(load, 2), "cpus": os.cpu_count()}
    for name, args in COMMANDS.items():
        times = wall_times(args)
        figures[name] = {"median_s": round(statistics.median(times), 3), "max_s": round(max(times), 3)}
    return figures


if __name__ == "__main__":
    print(main())
