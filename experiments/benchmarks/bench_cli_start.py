"""How fast the CLI answers before any job runs: `--help`, refused overrides and values, and `import synbench.conf`.

Each is a fresh `python` process (what a user waits for), timed wall-clock
over several repeats; the median is the figure, the maximum shows the spread.
Five refusals are timed: one the command-line check answers before Hydra
composes (`generator=cpy`, an option the group does not have), one Hydra
answers while composing the default config (`generator.epoch=3`, a key the
generator's schema does not have), and three values the job's checks refuse
after Hydra composed the job, before any data is read and before scikit-learn,
pandas, scipy or torch is imported: `eps=-1` and `task.n_synthetic=-1` (the
job's own values) and `dataset.data_dir=/missing` (a release dataset's folder
that does not exist; on PsyTAR, since the default dataset has no data_dir).
A refused job leaves no folder. Beside them, the floor of any Hydra app on
the same machine: a one-key app refusing a key it does not have (Python,
Hydra and OmegaConf imported, Hydra's own config composed), what a composing
refusal is to be read against. The cases take turns within each repeat, so a
machine that slows down mid-run slows all of them alike; its load average at
the start is recorded beside them (on a busy machine every figure is larger).
Python caches compiled modules as a user's install does (`__pycache__`), even
where the environment turns that off (PYTHONDONTWRITEBYTECODE), which would
time compiling SynBench's sources at every start instead.
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REPEATS = 11
# a Hydra app with one key, refusing another: what every Hydra command pays before it can answer
HYDRA_FLOOR = """
import sys
from dataclasses import dataclass
import hydra
from hydra.core.config_store import ConfigStore

@dataclass
class Options:
    key: int = 1

ConfigStore.instance().store(name="floor", node=Options)
sys.argv = ["floor", "other=1"]
hydra.main(version_base="1.3", config_path=None, config_name="floor")(lambda cfg: None)()
"""
COMMANDS = {
    "help": ["-m", "synbench", "--help"],
    "refused_group_option": ["-m", "synbench", "generator=cpy"],
    "refused_key_while_composing": ["-m", "synbench", "generator.epoch=3"],
    "refused_eps": ["-m", "synbench", "eps=-1"],
    "refused_n_synthetic": ["-m", "synbench", "task.n_synthetic=-1"],
    "refused_data_dir": ["-m", "synbench", "dataset=psytar", "dataset.data_dir=/missing"],
    "import_synbench_conf": ["-c", "import synbench.conf"],
    "hydra_floor": ["-c", HYDRA_FLOOR],
}


def wall_time(args: list[str]) -> tuple[float, int]:
    """Wall-clock seconds of `python <args>` in a fresh process, and its exit code (a refusal exits 2, Hydra's own
    1: a figure of a command that ran instead would time something else)."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": ""}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, check=False, env=env)
    return time.perf_counter() - start, done.returncode


def cpu_model() -> str:
    """The CPU's model name (Linux's /proc/cpuinfo), else the architecture: start-up times differ ~3x across CPUs."""
    try:
        lines = Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines()
    except OSError:
        return platform.machine()
    return next((line.partition(":")[2].strip() for line in lines if line.startswith("model name")), platform.machine())


def main() -> dict:
    load = os.getloadavg()[0]
    figures: dict = {
        "repeats": REPEATS,
        "load_average_1min_at_start": round(load, 2),
        "cpus": os.cpu_count(),
        "cpu": cpu_model(),
    }
    for args in COMMANDS.values():
        wall_time(args)  # fills the bytecode cache
    runs: dict[str, list[tuple[float, int]]] = {name: [] for name in COMMANDS}
    for _ in range(REPEATS):
        for name, args in COMMANDS.items():
            runs[name].append(wall_time(args))
    for name, timed in runs.items():
        times, codes = [t for t, _ in timed], [c for _, c in timed]
        figures[name] = {
            "median_s": round(statistics.median(times), 3),
            "max_s": round(max(times), 3),
            "exit_codes": sorted(set(codes)),
        }
    return figures


if __name__ == "__main__":
    print(main())
