"""Issue 50's verdicts, measured as a user meets them: copiers that claim a budget, and honest generators at eps=1.

Each job is `python -m synbench <overrides>` in its own process, on the
default corpus, tracking off, outputs in a temporary folder:

- `copier` (tests/fixtures/command/leaky_generator.py: releases its private
  documents verbatim and claims the job's eps) and `paraphraser`
  (paraphrasing_copier.py: every other word swapped for a public word), run
  through `generator=command` at eps=4 and eps=8, in `task=benchmark`
  (metrics=[]) and in `task=audit audit.mode=one_run` at the audit's default
  design: the disclosure check's counts and exact test, and the audit's
  bound, ceiling, verdict and the size a perfect attack would need;
- `example` (the example plugin, a DP unigram model) at eps=1, seeds 0-2,
  `task=benchmark` metrics=[]: the disclosure check must not flag it;
- the demo grid's generators at eps=1, seeds 0-2, are read from the kept
  grid's results (`experiments/results/demo`, written by `make bench
  BENCH=demo_grid` and copied there), not re-run.

Each job's figures are appended to `results/bench_verdicts.rows.jsonl` as
soon as it finishes, so an interrupted run resumes and a later run (after the
grid was kept again) re-reads the grid without re-running the jobs; delete
the file, or a row, to measure again.

Targets (issue 50): no copier job passes (`task=audit` says inconclusive or
violation, and the disclosure check flags every copier job), and neither the
example plugin nor any grid generator at eps=1 is flagged.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
PROGRAMS = REPO / "tests" / "fixtures" / "command"
ROWS_FILE = HERE / "results" / "bench_verdicts.rows.jsonl"
MARKDOWN_FILE = HERE / "results" / "bench_verdicts.section.md"  # shown in bench.md
KEPT_GRID = REPO / "experiments" / "results" / "demo" / "benchmark"
DISCLOSURE = (
    "private_reappear",
    "n_private",
    "unseen_reappear",
    "n_unseen",
    "min_flaggable",
    "status",
    "p_value",
    "flagged",
)
AUDIT = (
    "verdict",
    "eps_emp_lower",
    "eps_ceiling",
    "eps_perfect",
    "detectable_leak",
    "n_needed",
    "n_needed_unit",
    "auc",
    "n_targets",
)


def program(name: str) -> list[str]:
    script = PROGRAMS / name
    return ["generator=command", f"generator.command=[{sys.executable},{script},'{{spec}}','{{out}}']"]


JOBS: dict[str, list[str]] = {
    **{
        f"{who}_{task}_eps{eps}": [*program(script), f"eps={eps}", *extra]
        for who, script in (("copier", "leaky_generator.py"), ("paraphraser", "paraphrasing_copier.py"))
        for task, extra in (("benchmark", ["metrics=[]"]), ("audit", ["task=audit", "audit.mode=one_run"]))
        for eps in (4, 8)
    },
    **{f"example_eps1_seed{seed}": ["generator=example", "eps=1", f"seed={seed}", "metrics=[]"] for seed in (0, 1, 2)},
}


def run_job(overrides: list[str]) -> tuple[dict[str, Any] | None, float, str]:
    """One job in a fresh process: its results.json (None if it failed), wall seconds and the end of stderr."""
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "synbench", "tracking=none", f"output_root={out}", *overrides],
            cwd=REPO,
            capture_output=True,
            text=True,
        )
        found = sorted(Path(out).rglob("results.json"))
        results = json.loads(found[0].read_text()) if found else None
        return results, time.perf_counter() - start, proc.stderr[-1500:]


def figures(results: dict[str, Any]) -> dict[str, Any]:
    """The disclosure section and the audit's verdict figures of one job."""
    out: dict[str, Any] = {f"disclosure.{k}": results.get("disclosure", {}).get(k) for k in DISCLOSURE}
    if results.get("task") == "audit":
        out.update({f"audit.{k}": results["audit"].get(k) for k in AUDIT})
    return out


def kept_grid_eps1() -> dict[str, dict[str, Any]]:
    """The kept demo grid's benchmark jobs at eps=1: their disclosure figures, by generator and seed."""
    rows = {}
    for path in sorted(KEPT_GRID.glob("*/results.json")):
        results = json.loads(path.read_text())
        if results.get("epsilon") == 1.0 and results.get("status") == "complete":
            name = results.get("generator_name") or results["generator"]
            rows[f"{name}_eps1_seed{results['seed']}"] = figures(results)
    return rows


def measured_rows() -> dict[str, Any]:
    """The jobs measured so far (`ROWS_FILE`), by name."""
    if not ROWS_FILE.is_file():
        return {}
    return {row["name"]: row["figures"] for row in map(json.loads, ROWS_FILE.read_text().splitlines())}


def main() -> dict[str, Any]:
    jobs = measured_rows()
    for name, overrides in JOBS.items():
        if name in jobs:
            continue
        results, wall, stderr = run_job(overrides)
        row = {"overrides": overrides, "wall_s": round(wall, 1)}
        row.update(figures(results) if results and results.get("status") == "complete" else {"error": stderr})
        jobs[name] = row
        if "error" not in row:
            with ROWS_FILE.open("a") as out:
                out.write(json.dumps({"name": name, "figures": row}) + "\n")
    grid = kept_grid_eps1()
    copiers = {k: v for k, v in jobs.items() if k.startswith(("copier", "paraphraser"))}
    honest = {**{k: v for k, v in jobs.items() if k.startswith("example")}, **grid}
    found = {
        "jobs": jobs,
        "grid_eps1": grid,
        "every_copier_flagged_by_disclosure": all(v.get("disclosure.flagged") is True for v in copiers.values()),
        "no_copier_audit_passes": all(
            v.get("audit.verdict") in ("inconclusive", "violation") for k, v in copiers.items() if "_audit_" in k
        ),
        "no_honest_job_flagged": all(v.get("disclosure.flagged") is False for v in honest.values()),
        "honest_jobs_checked": len(honest),
    }
    MARKDOWN_FILE.write_text(markdown(found))
    return found


def needed(row: dict[str, Any]) -> str:
    """The size a perfect attack would need, with its unit; empty where the audit did not say."""
    return f"{row['audit.n_needed']} {row.get('audit.n_needed_unit', '')}" if row.get("audit.n_needed") else ""


def cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    return "" if value is None else str(value)


def markdown(figures: dict[str, Any]) -> str:
    """The section bench.md shows: every job's disclosure counts and test, and the audits' verdicts."""
    head = (
        "| job | private reappear | unseen reappear | p | flagged | audit verdict | eps_emp_lower | ceiling | needed |"
    )
    lines = [
        "## bench_verdicts: copiers and honest generators through the disclosure check and the audit's verdict",
        "",
        "Copiers run through `generator=command` and claim the job's eps; the honest rows are the example plugin and "
        "the kept demo grid's generators at eps=1. Disclosure: private documents (of those the generator saw) its "
        "release reproduces (near-)verbatim, against unseen real ones, one-sided Fisher exact test.",
        "",
        head,
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, row in {**figures["jobs"], **figures["grid_eps1"]}.items():
        lines.append(
            f"| {name} | {cell(row.get('disclosure.private_reappear'))} of {cell(row.get('disclosure.n_private'))} "
            f"| {cell(row.get('disclosure.unseen_reappear'))} of {cell(row.get('disclosure.n_unseen'))} "
            f"| {cell(row.get('disclosure.p_value'))} | {cell(row.get('disclosure.flagged'))} "
            f"| {cell(row.get('audit.verdict'))} | {cell(row.get('audit.eps_emp_lower'))} "
            f"| {cell(row.get('audit.eps_ceiling'))} "
            f"| {needed(row)} |"
        )
    targets = (
        ("every copier job flagged by the disclosure check", "every_copier_flagged_by_disclosure"),
        ("no copier audit passes (inconclusive or violation)", "no_copier_audit_passes"),
        (f"no honest job flagged ({figures['honest_jobs_checked']} jobs)", "no_honest_job_flagged"),
    )
    lines += ["", "| target (issue 50) | met |", "|---|---|"]
    lines += [f"| {label} | {'yes' if figures[key] else '**no**'} |" for label, key in targets]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
