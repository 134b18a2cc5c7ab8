"""The whole demo grid, measured: `python -m synbench +experiment=demo -m` as a user runs it, wall time and slices.

One multirun in a child process (conf/experiment/demo.yaml: the joblib launcher
at 2 workers, eps in {1, 4, inf}, the benchmark task at seeds 0-2 and the
one-run audit at seed 0), over the built-in private generators
(`BENCH_DEMO_GRID_GENERATORS`, comma-separated, changes the list, e.g. adds
the InvisibleInk plugin; the order is the order jobs start). Tracking is off; outputs go to
`BENCH_DEMO_GRID_ROOT` (default `outputs/bench_demo_grid`), kept so that an
interrupted measurement resumes: the grid skips complete jobs, as it does for
a user. A resumed attempt's wall time is not the grid's, so each attempt is
recorded on its own (`attempts`) and `grid_wall_s` is given only when one
attempt ran every job. `BENCH_DEMO_GRID_GATHER=1` starts no attempt and
gathers the figures of the attempts so far (after one was stopped with
`kill -- -<pid>`, the grid's pid being in `<root>/grid.log`).

Figures: per job its seconds (the sum of its results.json `timing` steps) and
status; per slice (generator, and (task, seed) = the `demo_job` option) the
jobs complete and their summed and longest seconds; the 1-minute load average
sampled every 30 s during an attempt (the machine is shared, so wall time is
inflated by other processes; the CPU seconds of the grid's processes, read
from /proc at the same samples, are beside it). Target (issue 33): the grid in <= 30 minutes wall on 2 cores.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
ATTEMPTS_FILE = HERE / "results" / "bench_demo_grid.attempts.jsonl"
JOBS_FILE = HERE / "results" / "bench_demo_grid.jobs.jsonl"
# the demo's own generators (conf/experiment/demo.yaml: each at the grid's sizes), the longest jobs first so that the
# 2 workers end together
GENERATORS = "dpgen_grid,augpe_grid,dpdiffusion_grid"
LOAD_EVERY_S = 30.0
TARGET_WALL_S = 1800


def root() -> Path:
    return Path(os.environ.get("BENCH_DEMO_GRID_ROOT", REPO / "outputs" / "bench_demo_grid")).resolve()


def command(generators: str, output_root: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "synbench",
        "+experiment=demo",
        f"generator={generators}",
        "tracking=none",
        f"output_root={output_root}",
        "-m",
    ]


def session_cpu_s(session: int) -> float:
    """CPU seconds so far of the processes in a session (the grid and its workers), their reaped children included."""
    total, tick = 0, os.sysconf("SC_CLK_TCK")
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # the process ended meanwhile
            continue
        if int(fields[3]) == session:  # after ")": state ppid pgrp session ...; utime stime cutime cstime at 11-14
            total += sum(int(f) for f in fields[11:15])
    return total / tick


def sample(stop: threading.Event, session: int, load: list[float], cpu: list[float]) -> None:
    """Every LOAD_EVERY_S: the 1-minute load average, and the grid's CPU seconds (read live, so a grid stopped by a
    kill still has its CPU time up to the last sample)."""
    while True:
        load.append(round(os.getloadavg()[0], 2))
        cpu.append(session_cpu_s(session))
        if stop.wait(LOAD_EVERY_S):
            return


def attempt(generators: str, output_root: Path) -> dict[str, Any]:
    """Run the grid once (complete jobs are skipped): wall and CPU seconds, load samples, exit status."""
    output_root.mkdir(parents=True, exist_ok=True)
    load: list[float] = []
    cpu: list[float] = [0.0]
    stop = threading.Event()
    started, start = time.time(), time.perf_counter()
    with (output_root / "grid.log").open("a") as log:
        # its own session: `kill -- -<pid>` (the pid is in grid.log) stops the grid and its workers, and the
        # figures of the jobs that finished are still gathered
        proc = subprocess.Popen(
            command(generators, output_root), cwd=REPO, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        log.write(f"bench_demo_grid: grid pid {proc.pid}\n")
        log.flush()
        sampler = threading.Thread(target=sample, args=(stop, proc.pid, load, cpu), daemon=True)
        sampler.start()
        proc.wait()
    wall = time.perf_counter() - start
    stop.set()
    sampler.join()
    return {
        "started_unix": round(started, 1),
        "generators": generators,
        "returncode": proc.returncode,
        "wall_s": round(wall, 1),
        "cpu_s": round(max(cpu), 1),
        "load_average_1m": load_summary(load),
    }


def load_summary(samples: list[float]) -> dict[str, Any]:
    if not samples:
        return {}
    return {"min": min(samples), "mean": round(statistics.fmean(samples), 2), "max": max(samples), "n": len(samples)}


def jobs(sweep_dir: Path) -> list[dict[str, Any]]:
    """Every job of the grid that wrote results.json: what it was, its status, seconds and when it finished."""
    out = []
    for path in sorted(sweep_dir.rglob("results.json")):
        r = json.loads(path.read_text())
        timing = r.get("timing", {})
        out.append(
            {
                "job": str(path.parent.relative_to(sweep_dir)),
                "generator": r.get("generator"),
                "epsilon": r.get("epsilon"),
                "task": r.get("task"),
                "seed": r.get("seed"),
                "status": r.get("status"),
                "job_s": round(sum(timing.values()), 1),
                "timing": {k: round(v, 1) for k, v in timing.items()},
                "finished_unix": round(path.stat().st_mtime, 1),
            }
        )
    return out


def slices(rows: list[dict[str, Any]], key: str) -> dict[str, dict[str, Any]]:
    """Per value of `key` (a slice): jobs seen and complete, the complete jobs' summed and longest seconds."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[str(row[key])].append(row)
    out = {}
    for name, group in sorted(groups.items()):
        done = [r["job_s"] for r in group if r["status"] == "complete"]
        out[name] = {
            "jobs": len(group),
            "complete": len(done),
            "sum_job_s": round(sum(done), 1),
            "max_job_s": max(done, default=None),
        }
    return out


def main() -> dict[str, Any]:
    generators = os.environ.get("BENCH_DEMO_GRID_GENERATORS", GENERATORS)
    output_root = root()
    n_expected = len(generators.split(",")) * 3 * 4  # eps x demo_job (conf/experiment/demo.yaml)
    if os.environ.get("BENCH_DEMO_GRID_GATHER") != "1":  # =1: only gather what the attempts so far left
        run = attempt(generators, output_root)
        ATTEMPTS_FILE.parent.mkdir(exist_ok=True)
        with ATTEMPTS_FILE.open("a") as f:
            f.write(json.dumps({**run, "output_root": str(output_root)}) + "\n")
    attempts = [json.loads(line) for line in ATTEMPTS_FILE.read_text().splitlines() if line.strip()]
    attempts = [a for a in attempts if a["output_root"] == str(output_root) and a["generators"] == generators]
    last = attempts[-1]
    rows = jobs(output_root / "demo")
    for row in rows:
        row["slice"] = f"{row['task']}_seed{row['seed']}"
    JOBS_FILE.write_text("".join(json.dumps(row) + "\n" for row in rows))
    complete = [r for r in rows if r["status"] == "complete"]
    # the grid's wall time: only when the last attempt ran every job (none was complete before it started)
    whole = len(complete) == n_expected and all(r["finished_unix"] >= last["started_unix"] for r in rows)
    return {
        "command": "python -m synbench +experiment=demo " + f"generator={generators} tracking=none -m",
        "cpu_count": os.cpu_count(),
        "jobs_expected": n_expected,
        "jobs_complete": len(complete),
        "jobs_failed": sum(r["status"] == "failed" for r in rows),
        "jobs_unfinished": sum(r["status"] not in ("complete", "failed") for r in rows),
        "grid_wall_s": last["wall_s"] if whole else None,
        "grid_measured_in_one_attempt": whole,
        "sum_job_s": round(sum(r["job_s"] for r in complete), 1),
        "by_generator": slices(rows, "generator"),
        "by_slice": slices(rows, "slice"),
        # each complete job's seconds, as `generator eps slice`; every job's timing steps: bench_demo_grid.jobs.jsonl
        "job_s": {f"{r['generator']} eps={r['epsilon']} {r['slice']}": r["job_s"] for r in complete},
        "attempts": {str(i): {k: v for k, v in a.items() if k != "output_root"} for i, a in enumerate(attempts, 1)},
        "targets_met": {f"grid_wall_s<={TARGET_WALL_S}": bool(whole and last["wall_s"] <= TARGET_WALL_S)},
    }


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
