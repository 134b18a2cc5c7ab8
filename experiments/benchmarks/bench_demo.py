"""The demo's headroom: `make demo` (DP-Gen at eps 4 on dataset=drugreview_condition6) against its baselines.

Each row is one real job, `python -m synbench <overrides>` in its own process
(tracking off, outputs in a temporary folder), as a user runs it:
- `demo`: the defaults (= `make demo`, every default metric), and `eps1` /
  `epsinf`: the same at eps 1 and inf, for the ordering inf >= 4 >= 1;
- `copy`: the copy control (trains the classifier on the real private set);
- `rating_*`: the old default task (dataset=drugreview, the rating) for contrast;
- `tune_*`: the DP-Gen settings compared when choosing the defaults
  (metrics=[utility] only; `generator.*` / `dataset.*` overrides).
Per row: macro and micro F1 against the majority and real-data baselines,
epsilon_spent, DP-SGD steps and noise multiplier, wall seconds and CPU
seconds of the job. On a shared machine wall time is inflated by other
processes; CPU seconds (one torch thread) are close to the wall time on idle
cores. A row is appended to `results/bench_demo.rows.jsonl` as soon as it is
measured, so an interrupted run resumes (delete the file, or a row, to measure
again); `BENCH_DEMO_ROWS=demo,copy` measures only those rows.
Targets: real data (the copy control) beats majority by >= 0.3 macro F1; DP-Gen
at eps 4 by >= 0.1; the demo job takes <= 600 s.
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
ROWS_FILE = HERE / "results" / "bench_demo.rows.jsonl"
UTILITY = ["metrics=[utility]"]

# name -> overrides of the job (in measuring order: the targets' rows first).
ROWS: dict[str, list[str]] = {
    "demo": [],
    "copy": ["generator=copy", "eps=inf", *UTILITY],
    "eps1": ["eps=1"],
    "epsinf": ["eps=inf"],
    "rating_dpgen_eps4": ["dataset=drugreview", *UTILITY],
    "rating_copy": ["dataset=drugreview", "generator=copy", "eps=inf", *UTILITY],
    "tune_authors_prefix_1epoch": ["dataset.control_code=null", "generator.epochs=1", "generator.batch_size=64", *UTILITY],
    "tune_condition_prefix_1epoch": ["generator.epochs=1", "generator.batch_size=64", *UTILITY],
}
FIGURES = ("f1_macro", "majority_f1_macro", "real_f1_macro", "random_f1_macro", "f1_micro", "majority_f1", "real_f1")
DETAILS = ("steps", "noise_multiplier", "sample_rate", "expected_batch_size", "epochs")


def run_row(name: str, overrides: list[str]) -> dict[str, Any]:
    """One job in a fresh process: its figures, wall and CPU seconds, and the load around it."""
    with tempfile.TemporaryDirectory() as out:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        load, start = os.getloadavg()[0], time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "synbench", "tracking=none", f"output_root={out}", f"sweep={name}",
                               *overrides], cwd=REPO, capture_output=True, text=True)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        row: dict[str, Any] = {"name": name, "overrides": overrides, "returncode": proc.returncode,
                               "wall_s": round(wall, 1),
                               "cpu_s": round(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, 1),
                               "load_average_at_start": round(load, 2), "load_average_at_end": round(os.getloadavg()[0], 2)}
        found = sorted(Path(out).rglob("results.json"))
        if proc.returncode != 0 or not found:
            return {**row, "error": proc.stderr[-2000:]}
        results = json.loads(found[0].read_text())
    utility, generation = results.get("utility", {}), results.get("generation", {})
    row.update({k: round(utility[k], 4) for k in FIGURES if k in utility})
    row.update({k: generation[k] for k in DETAILS if k in generation})
    row.update(dataset=results["dataset"], generator=results["generator"], epsilon=results["epsilon"],
               epsilon_spent=results["epsilon_spent"], timing={k: round(v, 1) for k, v in results["timing"].items()})
    if "mauve" in results.get("fidelity", {}):
        row["mauve"] = round(results["fidelity"]["mauve"], 4)
    return row


def measured() -> dict[str, dict[str, Any]]:
    """Rows measured so far, by name (the latest wins); rows that failed are measured again."""
    if not ROWS_FILE.exists():
        return {}
    rows = [json.loads(line) for line in ROWS_FILE.read_text().splitlines() if line.strip()]
    return {r["name"]: r for r in rows if "error" not in r}


def above_majority(row: dict[str, Any] | None) -> float | None:
    return round(row["f1_macro"] - row["majority_f1_macro"], 4) if row and "f1_macro" in row else None


def main() -> dict[str, Any]:
    wanted = [n for n in os.environ.get("BENCH_DEMO_ROWS", "").split(",") if n] or list(ROWS)
    done = measured()
    ROWS_FILE.parent.mkdir(exist_ok=True)
    for name in wanted:
        if name not in done:
            row = run_row(name, ROWS[name])
            print(json.dumps(row), flush=True)
            with ROWS_FILE.open("a") as f:
                f.write(json.dumps(row) + "\n")
            done[name] = row
    demo, copy = done.get("demo"), done.get("copy")
    figures: dict[str, Any] = {"rows": {n: done[n] for n in ROWS if n in done}}
    figures["demo_macro_f1_above_majority"] = above_majority(demo)
    figures["real_macro_f1_above_majority"] = above_majority(copy)
    figures["dpgen_macro_f1_by_eps"] = {r["epsilon"]: r["f1_macro"] for n in ("eps1", "demo", "epsinf")
                                        if (r := done.get(n)) and "f1_macro" in r}
    figures["targets_met"] = {
        "real_minus_majority_macro>=0.3": (figures["real_macro_f1_above_majority"] or 0) >= 0.3,
        "dpgen_eps4_minus_majority_macro>=0.1": (figures["demo_macro_f1_above_majority"] or 0) >= 0.1,
        "demo_wall_s<=600": bool(demo) and demo["wall_s"] <= 600,
    }
    return figures
