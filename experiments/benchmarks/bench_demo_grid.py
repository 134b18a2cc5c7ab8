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
from /proc at the same samples, are beside it).

After the grid, its public-knowledge baselines (conf/experiment/demo_baselines.yaml: `public`, `template` and
`label_names`, the benchmark task at the same three seeds and size, eps=inf; then demo_baseline_seeds.yaml: the two
cheap ones at seven more seeds) run into the same sweep folder, as attempts of their own (`experiment` in each
attempt's record; the grid's wall time is the grid's alone).

Quality (issue 40): the report's generator comparison (`synbench.report.comparison`: per generator and eps, macro
and micro F1 and MAUVE as mean +/- standard error over the 3 seeds, seconds per job; the random, majority and
real-data rows, and a row per public baseline), and per generator row its gain over public knowledge (issue 50: the
headline F1 minus the best public baseline's, two independent means, mean +/- SE) with its verdict, half-width and
smallest detectable gain (issue 57, `synbench.report.gain`), and the positive control's gain; the paper's
Table 1 pattern beside it (which of its orderings hold here) and the issue's bars, written as figures and as a
Markdown table (`results/bench_demo_grid.section.md`, shown in bench.md).
Targets: the grid in <= 45 minutes wall on 2 cores, measured whole in one attempt; at eps=inf every generator
>= majority + 0.15 macro F1, at eps=4 >= majority + 0.05; DP-Gen eps=inf above eps=1 by more than 2 SE (of the
difference); DP-Diffusion eps=inf above eps=1.
"""

from __future__ import annotations

import json
import math
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
MARKDOWN_FILE = HERE / "results" / "bench_demo_grid.section.md"
JOBS_FILE = HERE / "results" / "bench_demo_grid.jobs.jsonl"
# the demo's own generators (conf/experiment/demo.yaml: each at the grid's sizes), the longest jobs first so that the
# 2 workers end together
GENERATORS = "dpgen_grid,augpe_grid,dpdiffusion_grid"
GRID = "demo"  # the experiments (conf/experiment/<name>.yaml), run one after the other: the grid, then its baselines
BASELINES = ("demo_baselines", "demo_baseline_seeds")
LOAD_EVERY_S = 30.0
TARGET_WALL_S = 2700
# the issue's bars on mean macro F1 over the benchmark seeds, above the majority baseline's
BAR_INF, BAR_EPS4 = 0.15, 0.05
# The paper's Table 1 (F1, %) for the pattern column: PsyTAR at eps inf / 4 / 1 (synbench-paper.md's headline
# numbers), HoC at eps=inf for DP-Diffusion (PsyTAR's row is not among them), and HoC's majority baseline.
PAPER = {
    "dpgen": {"inf": 70.1, "4": 44.0, "1": 37.6},
    "augpe": {"inf": 66.1, "4": 62.6, "1": 57.4},
    "dpdiffusion_hoc_inf": 38.9,
    "hoc_majority": 9.1,
}


def root() -> Path:
    return Path(os.environ.get("BENCH_DEMO_GRID_ROOT", REPO / "outputs" / "bench_demo_grid")).resolve()


def sweep_args(experiment: str, generators: str | None) -> list[str]:
    """The overrides of one experiment's multirun; `generators` replaces its list (None: the experiment's own)."""
    chosen = [f"generator={generators}"] if generators is not None else []
    return [f"+experiment={experiment}", *chosen, "tracking=none"]


def command(experiment: str, generators: str | None, output_root: Path) -> list[str]:
    return [sys.executable, "-m", "synbench", *sweep_args(experiment, generators), f"output_root={output_root}", "-m"]


def sweep_params(experiment: str) -> dict[str, str]:
    """The sweeper lists of an experiment's YAML (conf/experiment/<name>.yaml), as written: `key: a,b,c`."""
    from omegaconf import OmegaConf

    params = OmegaConf.load(REPO / "conf" / "experiment" / f"{experiment}.yaml").hydra.sweeper.params
    return {str(key): str(listed) for key, listed in params.items()}


def sweep_size(experiment: str, **lists: str) -> int:
    """Jobs of an experiment's sweep: the product of its lists' lengths (`lists` replaces some, as the command
    line does)."""
    return math.prod(len(lists.get(key, listed).split(",")) for key, listed in sweep_params(experiment).items())


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


def attempt(experiment: str, generators: str | None, output_root: Path) -> dict[str, Any]:
    """Run one experiment's sweep once (complete jobs are skipped): wall and CPU seconds, load samples, exit status."""
    output_root.mkdir(parents=True, exist_ok=True)
    load: list[float] = []
    cpu: list[float] = [0.0]
    stop = threading.Event()
    started, start = time.time(), time.perf_counter()
    with (output_root / "grid.log").open("a") as log:
        # its own session: `kill -- -<pid>` (the pid is in grid.log) stops the grid and its workers, and the
        # figures of the jobs that finished are still gathered
        proc = subprocess.Popen(
            command(experiment, generators, output_root),
            cwd=REPO,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
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
        "experiment": experiment,
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


def quality(sweep_dir: Path) -> dict[str, Any]:
    """The generator comparison of the grid's benchmark jobs (one dataset: the demo's) as figures, keyed by generator
    and eps; the baselines (public ones included) under their labels. A generator row's gain over public knowledge
    carries its verdict, half-width and smallest detectable gain at the report's default level (`task.confidence`;
    `synbench.report.gain`), and the positive control's gain is beside them."""
    from synbench.report.benchmark import gains_over_public
    from synbench.report.comparison import comparison_rows
    from synbench.report.gain import PRIVATE_LEARNING as PRIVATE
    from synbench.report.gain import TARGET_GAIN
    from synbench.report.load import load_results, task_jobs
    from synbench.report.stats import format_eps
    from synbench.tasks.options import ReportOptions

    frame = load_results(sweep_dir)
    found = comparison_rows(frame)
    if not found:
        return {}
    ((dataset, rows),) = found.items()
    confidence = ReportOptions().confidence
    gains = gains_over_public(task_jobs(frame, "benchmark"), confidence)
    table: dict[str, Any] = {"dataset": dataset}
    for row in rows:
        key = row.label if row.baseline else f"{row.label} eps={format_eps(row.epsilon).replace('∞', 'inf')}"
        table[key] = row.figures()
        gain = None if row.baseline or gains is None else gains.rows.get(row.key)
        if gain is not None:
            table[key] |= {
                "gain_over_public_flag": gain.verdict,
                "gain_half_width": round(gain.half_width, 4),
                "detectable_gain_80": round(gain.detectable, 4),
                "seeds_to_detect_0.05": gain.seeds_for(TARGET_GAIN),
            }
    if gains is not None:
        table["best_public"] = gains.baseline
        table["flag_confidence"] = confidence
        table["pooled_df"] = gains.pooled_df
        if gains.control is not None:
            table["positive_control"] = {
                "gain": round(gains.control.mean, 4),
                "half_width": round(gains.control.half_width, 4),
                "verdict": gains.control.verdict,
            }
        table["private_learning"] = [
            key for key, row in table.items() if isinstance(row, dict) and row.get("gain_over_public_flag") == PRIVATE
        ]
    return table


def row_key(table: dict[str, Any], generator: str, eps: str) -> str:
    """The table's key of a generator family at eps: the grid's variant (`dpgen_grid`, as the report names what
    ran) where it ran, else the family's own name (a grid run with `BENCH_DEMO_GRID_GENERATORS=dpgen,...`)."""
    variant = f"{generator}_grid eps={eps}"
    return variant if variant in table else f"{generator} eps={eps}"


def difference(table: dict[str, Any], a: str, b: str) -> dict[str, Any] | None:
    """Mean macro F1 of row a minus row b, and that difference in standard errors (of the difference)."""
    if a not in table or b not in table:
        return None
    ra, rb = table[a], table[b]
    gap = ra["f1_macro_mean"] - rb["f1_macro_mean"]
    se = math.hypot(ra.get("f1_macro_se") or 0.0, rb.get("f1_macro_se") or 0.0)
    return {"gap": round(gap, 4), "se": round(se, 4), "gap_in_se": round(gap / se, 2) if se else None}


def checks(table: dict[str, Any], grid_wall_s: float | None) -> dict[str, Any]:
    """The issue's bars and the paper's Table 1 orderings, each as met or not (None when its rows are missing)."""
    majority = table.get("majority", {}).get("f1_macro_mean")
    out: dict[str, Any] = {"grid_wall_s<=2700_one_attempt": grid_wall_s is not None and grid_wall_s <= TARGET_WALL_S}

    def mean(row: str) -> float | None:
        return table.get(row, {}).get("f1_macro_mean")

    for generator in ("dpgen", "augpe", "dpdiffusion"):
        for eps, bar in (("inf", BAR_INF), ("4", BAR_EPS4)):
            value = mean(row_key(table, generator, eps))
            ok = None if value is None or majority is None else value >= majority + bar
            out[f"{generator} eps={eps} >= majority+{bar}"] = ok
    dpgen = difference(table, row_key(table, "dpgen", "inf"), row_key(table, "dpgen", "1"))
    out["dpgen eps=inf > eps=1 by > 2 SE"] = (
        None if dpgen is None or dpgen["gap_in_se"] is None else dpgen["gap_in_se"] > 2
    )
    diffusion = difference(table, row_key(table, "dpdiffusion", "inf"), row_key(table, "dpdiffusion", "1"))
    out["dpdiffusion eps=inf > eps=1"] = None if diffusion is None else diffusion["gap"] > 0
    return out


def paper_pattern(table: dict[str, Any]) -> dict[str, Any]:
    """The paper's Table 1 orderings: what the paper shows, and whether this grid shows it (None: rows missing)."""

    def mean(generator: str, eps: str) -> float | None:
        return table.get(row_key(table, generator, eps), {}).get("f1_macro_mean")

    majority = table.get("majority", {}).get("f1_macro_mean")
    at_inf = [mean(g, "inf") for g in ("dpgen", "augpe", "dpdiffusion")]
    dpgen = [mean("dpgen", e) for e in ("inf", "4", "1")]
    augpe = [mean("augpe", e) for e in ("inf", "4", "1")]
    diffusion = [mean("dpdiffusion", e) for e in ("inf", "1")]

    def known(*values: float | None) -> bool:
        return all(v is not None for v in values)

    return {
        "every generator above majority at eps=inf": {
            "paper": f"HoC: DP-Gen 51.0, AUG-PE 16.8, DP-Diffusion {PAPER['dpdiffusion_hoc_inf']} vs majority "
            f"{PAPER['hoc_majority']}",
            "holds": all(v > majority for v in at_inf) if known(majority, *at_inf) else None,
        },
        "DP-Gen falls as eps shrinks (inf > 4 > 1)": {
            "paper": "PsyTAR: " + " > ".join(str(v) for v in PAPER["dpgen"].values()),
            "holds": dpgen[0] > dpgen[1] > dpgen[2] if known(*dpgen) else None,
        },
        "AUG-PE holds up (drops less than DP-Gen from inf to 1)": {
            "paper": f"PsyTAR: AUG-PE {PAPER['augpe']['inf']} -> {PAPER['augpe']['1']}, "
            f"DP-Gen {PAPER['dpgen']['inf']} -> {PAPER['dpgen']['1']}",
            "holds": augpe[0] - augpe[2] < dpgen[0] - dpgen[2]
            if known(augpe[0], augpe[2], dpgen[0], dpgen[2])
            else None,
        },
        "DP-Diffusion collapses at low eps (inf > 1)": {
            "paper": "collapses to empty or garbage text at eps <= 1",
            "holds": diffusion[0] > diffusion[1] if known(*diffusion) else None,
        },
    }


def markdown(figures: dict[str, Any]) -> str:
    """The quality table with the seconds per job, then the pattern and the bars, as bench.md shows them."""
    table = figures.get("quality") or {}
    lines = [
        "## bench_demo_grid: the generators compared on the demo grid",
        "",
        f"`{figures['command']}` on {figures['cpu_count']} CPUs: {figures['jobs_complete']} of "
        f"{figures['jobs_expected']} jobs complete, grid wall time "
        + (f"{figures['grid_wall_s']:.0f} s" if figures.get("grid_wall_s") else "not measured in one attempt")
        + f". Dataset {table.get('dataset', '?')}; mean ± standard error over seeds.",
        "",
        "| generator | ε | seeds | macro F1 | micro F1 | MAUVE | gain over public | s / job |",
        "|---|---|---|---|---|---|---|---|",
    ]

    def cell(row: dict[str, Any], key: str) -> str:
        if f"{key}_mean" not in row:
            return ""
        se = row.get(f"{key}_se")
        return f"{row[f'{key}_mean']:.3f}" + ("" if se is None else f" ± {se:.3f}")

    for key, row in table.items():
        if not isinstance(row, dict) or "seeds" not in row:  # the positive control's summary is not a table row
            continue
        generator, _, eps = key.partition(" eps=")
        seconds = f"{row['job_s_mean']:.0f}" if "job_s_mean" in row else ""
        gain = cell(row, "gain_over_public") + (
            f" ({row['gain_over_public_flag']}; half-width {row['gain_half_width']:.3f}, detects "
            f"{row['detectable_gain_80']:.3f})"
            if "gain_over_public_flag" in row
            else ""
        )
        lines.append(
            f"| {generator} | {eps} | {row['seeds']} | {cell(row, 'f1_macro')} | {cell(row, 'f1_micro')} | "
            f"{cell(row, 'mauve')} | {gain} | {seconds} |"
        )
    if "flag_confidence" in table:
        lines += [
            "",
            f"Gain over public: the headline F1 minus that of the best public baseline ({table['best_public']}), "
            f"two independent means, mean ± SE; its verdict from the {table['flag_confidence']:.0%} interval "
            f"(synbench.report.gain); half-width of that interval, and the smallest gain detected with 80% power. "
            f"Private learning shown by: {', '.join(table['private_learning']) or 'none'}.",
        ]
    control = table.get("positive_control")
    if control:
        lines += [
            "",
            f"Positive control (real training documents at the synthetic size and label plan): gain over public "
            f"{control['gain']:.3f} ± {control['half_width']:.3f}, {control['verdict']}.",
        ]
    lines += ["", "| the paper's Table 1 pattern | paper | here |", "|---|---|---|"]
    for name, found in (figures.get("paper_pattern") or {}).items():
        lines.append(f"| {name} | {found['paper']} | {verdict(found['holds'])} |")
    lines += ["", "| bar (issue 40) | met |", "|---|---|"]
    lines += [f"| {name} | {verdict(ok)} |" for name, ok in (figures.get("checks") or {}).items()]
    return "\n".join(lines) + "\n"


def verdict(ok: bool | None) -> str:
    return "not measured" if ok is None else "yes" if ok else "**no**"


def main() -> dict[str, Any]:
    generators = os.environ.get("BENCH_DEMO_GRID_GENERATORS", GENERATORS)
    output_root = root()
    runs = ((GRID, generators), *((b, None) for b in BASELINES))  # (experiment, its generator list: None: its own)
    n_grid, n_baselines = sweep_size(GRID, generator=generators), sum(sweep_size(b) for b in BASELINES)
    if os.environ.get("BENCH_DEMO_GRID_GATHER") != "1":  # =1: only gather what the attempts so far left
        ATTEMPTS_FILE.parent.mkdir(exist_ok=True)
        for experiment, chosen in runs:
            run = attempt(experiment, chosen, output_root)
            with ATTEMPTS_FILE.open("a") as f:
                f.write(json.dumps({**run, "output_root": str(output_root)}) + "\n")
    attempts = [json.loads(line) for line in ATTEMPTS_FILE.read_text().splitlines() if line.strip()]
    # records written before the baselines ran have no `experiment`: they are the grid's
    attempts = [
        a
        for a in attempts
        if a["output_root"] == str(output_root) and (a.get("experiment", GRID), a["generators"]) in runs
    ]
    last = [a for a in attempts if a.get("experiment", GRID) == GRID][-1]
    rows = jobs(output_root / "demo")
    for row in rows:
        row["slice"] = f"{row['task']}_seed{row['seed']}"
    JOBS_FILE.write_text("".join(json.dumps(row) + "\n" for row in rows))
    complete = [r for r in rows if r["status"] == "complete"]
    public = {g for b in BASELINES for g in sweep_params(b)["generator"].split(",")}
    grid_rows = [r for r in rows if r["generator"] not in public]
    # the grid's wall time: only when its last attempt ran every grid job (none was complete before it started)
    whole = sum(r["status"] == "complete" for r in grid_rows) == n_grid and all(
        r["finished_unix"] >= last["started_unix"] for r in grid_rows
    )
    figures: dict[str, Any] = {
        "command": "; ".join(f"python -m synbench {' '.join(sweep_args(e, g))} -m" for e, g in runs),
        "cpu_count": os.cpu_count(),
        "jobs_expected": n_grid + n_baselines,
        "jobs_complete": len(complete),
        "baseline_jobs_complete": sum(r["status"] == "complete" and r["generator"] in public for r in rows),
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
    }
    figures["quality"] = quality(output_root / "demo")
    table = figures["quality"]
    figures["dpgen_inf_minus_eps1"] = difference(table, row_key(table, "dpgen", "inf"), row_key(table, "dpgen", "1"))
    figures["paper_pattern"] = paper_pattern(figures["quality"])
    figures["checks"] = checks(figures["quality"], figures["grid_wall_s"])
    MARKDOWN_FILE.write_text(markdown(figures))
    return figures


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
