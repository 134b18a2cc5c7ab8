"""A real generator caught leaking: `+experiment=audit_memorise` (DP-Gen at eps=inf, trained until it memorises).

Each row is one job, `python -m synbench +experiment=audit_memorise <overrides>`,
in its own process (tracking off), as a user runs it. Jobs write under
`outputs/bench_audit_memorise/` (the sweep `audit_memorise`), so an interrupted
benchmark resumes: a finished job is skipped by the job itself (its
results.json is complete), and `job_s`, the sum of the job's own step timings
in its results.json, is the time it took when it ran (`wall_s` is this
benchmark's wait, small for a resumed job). A job interrupted after its
generator run resumes that run (`runs_resumed` > 0) and its `job_s` no longer
counts it: delete the job's folder to time it again. Rows:
- `eps_inf`: the experiment as configured (eps=inf, 10 epochs); the audit must
  fire: one-run `eps_emp_lower` >= 1 (aim: 2) within 30 minutes on 2 cores;
- `eps_inf_epochs_<e>`: the same at fewer epochs (`MEMORISE_EPOCHS`, default
  "2,4"): how the bound grows as the model memorises;
- `eps1_seed_<s>`: the control, the same at eps=1, five seeds (five independent
  one-run audits: design, canaries, generator): each bound must stay <= 1.
  Five jobs rather than one with `audit.repeats=5`, so that two processes can
  share them out on two cores (a job's repeats run one after another).
`python experiments/benchmarks/bench_audit_memorise.py eps1_seed_0 eps1_seed_1`
measures the named rows only (start two such processes to use both cores;
their wall times then overlap). After the rows, `task=report` reads the sweep and its
report (the eps=inf job and the control; the epoch rows are in a sweep folder of
their own) is copied to experiments/results/audit_memorise/.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
ROOT = REPO / "outputs" / "bench_audit_memorise"
KEPT = REPO / "experiments" / "results" / "audit_memorise"
JOB = [sys.executable, "-m", "synbench", "tracking=none", f"output_root={ROOT}"]
EPOCHS = tuple(int(e) for e in os.environ.get("MEMORISE_EPOCHS", "2,4").split(","))
DEFAULT_EPOCHS = 10  # conf/experiment/audit_memorise.yaml
CONTROL_SEEDS = 5
ROWS: dict[str, list[str]] = {
    "eps_inf": [],
    **{f"eps_inf_epochs_{e}": [f"generator.epochs={e}"] for e in EPOCHS},
    **{f"eps1_seed_{s}": ["eps=1", f"seed={s}"] for s in range(CONTROL_SEEDS)},
}
PARTS = ("", "ngram.", "similarity.")  # the combined bound, then each attack's own
AUDIT_KEYS = (
    *(f"{part}{key}" for part in PARTS for key in ("eps_emp_lower", "eps_emp", "auc", "tpr_at_fpr_0.1")),
    "attack_chosen",
    "gdp_eps_lower",
    "n_targets",
)
GENERATION_KEYS = ("n_private", "n_synthetic", "n_runs", "runs_resumed", "n_empty", "degenerate_share")


def run_row(name: str) -> dict[str, Any]:
    """One job in a fresh process: its audit figures, its own timings, and this benchmark's wait and CPU."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load, start = os.getloadavg()[0], time.perf_counter()
    proc = subprocess.run(
        [*JOB, "+experiment=audit_memorise", f"hydra.run.dir={job_dir(name)}", *ROWS[name]],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    row: dict[str, Any] = {
        "name": name,
        "command": "python -m synbench +experiment=audit_memorise " + " ".join(ROWS[name]),
        "wall_s": round(time.perf_counter() - start, 1),
        "cpu_s": round(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, 1),
        "load_average_at_start": round(load, 2),
        "load_average_at_end": round(os.getloadavg()[0], 2),
    }
    if proc.returncode != 0:
        return {**row, "returncode": proc.returncode, "error": proc.stderr[-2000:]}
    results = json.loads((job_dir(name) / "results.json").read_text())
    audit, generation = results["audit"], results["generation"]
    return {
        **row,
        "epochs": epochs_of(name),
        "epsilon": results["epsilon"],
        "epsilon_spent": results["epsilon_spent"],
        "job_s": round(sum(results["timing"].values()), 1),
        "timing": {k: round(v, 1) for k, v in results["timing"].items()},
        **{k: generation[k] for k in GENERATION_KEYS if k in generation},
        **{k: round(v, 3) if isinstance(v, float) else v for k in AUDIT_KEYS if (v := audit.get(k)) is not None},
    }


def job_dir(name: str) -> Path:
    """Row `name`'s job folder, named after the row. The epoch rows go in a sweep folder of their own: the report
    groups audits by dataset, generator, mode and eps, and would average the epochs as if they were seeds."""
    sweep = "audit_memorise_epochs" if name.startswith("eps_inf_epochs_") else "audit_memorise"
    return ROOT / sweep / "audit" / name


def epochs_of(name: str) -> int:
    return next((int(o.split("=")[1]) for o in ROWS[name] if o.startswith("generator.epochs=")), DEFAULT_EPOCHS)


def report() -> None:
    """The sweep's report (per-attack and pooled tables included), kept in the repository for the docs."""
    subprocess.run([*JOB, "task=report", "sweep=audit_memorise"], cwd=REPO, check=True, capture_output=True)
    sweep = ROOT / "audit_memorise"
    kept = [sweep / "report.md", sweep / "report.html", *sweep.glob("report_figures/*")]
    for path in [*kept, *sweep.glob("audit/*/audit_roc.png")]:  # report.md links each job's ROC plot
        (KEPT / path.relative_to(sweep)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, KEPT / path.relative_to(sweep))


def summary(rows: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The figures the issue asks for, read from the rows."""
    inf = rows.get("eps_inf", {})
    runs = [r["eps_emp_lower"] for n, r in rows.items() if n.startswith("eps1_seed_") and "eps_emp_lower" in r]
    curve = sorted(
        (
            {k: r.get(k) for k in ("epochs", "eps_emp_lower", "ngram.eps_emp_lower", "similarity.eps_emp_lower")}
            | {"auc": r.get("auc"), "job_s": r.get("job_s")}
            for n, r in rows.items()
            if n.startswith("eps_inf") and "eps_emp_lower" in r
        ),
        key=lambda point: point["epochs"],
    )
    return {
        "bound_vs_epochs": curve,
        "eps1_control_bounds": runs,
        "done_when": {
            "eps_inf_bound_at_least_1": inf.get("eps_emp_lower", 0) >= 1,
            # a job that resumed a finished generator run did not time it: no figure rather than a small one
            "eps_inf_within_30_min": inf.get("job_s", float("inf")) <= 1800 if not inf.get("runs_resumed") else None,
            "eps1_control_at_most_1_in_5": len(runs) == CONTROL_SEEDS and max(runs) <= 1,
        },
    }


def main(names: list[str] | None = None) -> dict[str, Any]:
    rows = {}
    for name in names or ROWS:
        rows[name] = run_row(name)
        print(json.dumps(rows[name]), file=sys.stderr, flush=True)  # progress of a long benchmark, row by row
    if names:  # a partial run: leave the whole benchmark's figures to the full run (which resumes every job)
        return rows
    report()
    return {"rows": rows, **summary(rows), "machine_cpus": os.cpu_count()}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:] or None), indent=2))
