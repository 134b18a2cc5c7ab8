"""Planted contamination, end to end (`+experiment=contamination_planted`): the detectors against a known answer, and
what contamination does to DP-Gen.

Each row is one job, `python -m synbench <overrides>`, in its own process
(tracking off), as a user runs it, under `outputs/bench_contamination_planted/`.
A finished job (complete results.json) is read, not run again, so the bench
resumes row by row; a job killed midway resumes inside itself (S and the
corpus, DP-Gen's checkpoint, the planted model folder, the ablation's runs).
Rows:
- `planted_seed_<s>`: the experiment at seed s (S drawn from that seed's
  split, SmolLM2 trained on S + public text without DP, index and Min-K% on
  it): exact recall on S, Min-K% / Min-K%++ AUC of S against the unseen
  private documents, flag rates at the threshold calibrated on the eval split.
  Seed 0 gives the headline figures; seeds 1 and 2 give the planted models
  the DP-Gen rows of those seeds start from.
- `dpgen_<clean|planted>_eps<e>_seed<s>`: DP-Gen (task=benchmark, utility) at
  eps 1 and 4 on the same private split, from SmolLM2 or from seed s's
  planted model: the utility gain contamination brings, with a 95% interval
  over the seeds' paired differences.
- `ablation_seed_0`: the experiment with the removal ablation on the
  Min-K%++ flags (25/50/75%, random-removal control, R=3) at eps=4, from the
  planted model.
- `audit_planted_eps<e>_seed_<s>`: the one-run audit of DP-Gen from the planted model;
  a sound audit shares the public model in both worlds, so its bound stays
  <= eps, beside the paper's reading. Its targets are S itself
  (`audit.target_positions` = the planted job's `planted/members.json`).

`CONTAMINATION_PLANTED_ROWS` (comma-separated row names or prefixes; default
all) picks the rows to run; the others are read when finished and listed as
`to_run` with their command otherwise. The rendered table
`results/contamination_planted.md` (from the figures, never typed) is what
docs/contamination.md includes.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
ROOT = REPO / "outputs" / "bench_contamination_planted"
TABLE = HERE / "results" / "contamination_planted.md"
JOB = [sys.executable, "-m", "synbench", "tracking=none", f"output_root={ROOT}"]
SEEDS = (0, 1, 2)
EPSILONS = (1, 4)
# the experiment's private split (conf/experiment/contamination_planted.yaml; a test checks they agree)
DATASET = ["dataset.max_train=100", "dataset.max_eval=100"]
DPGEN = ["task=benchmark", "generator=dpgen", "metrics=[utility]", *DATASET]
EXPERIMENT = ["+experiment=contamination_planted"]
DONE_RECALL, DONE_AUC = 0.95, 0.8  # issue 30's "done when": exact recall on S, Min-K%++ AUC


def planted_model(seed: int) -> list[str]:
    """The `model` overrides that start a job from seed `seed`'s planted model folder."""
    folder = job_dir(f"planted_seed_{seed}") / "planted" / "model"
    return [f"model.pretrained={folder}", "model.package=null", "model.gguf_file=null", "model.name=smollm2_planted"]


def rows() -> dict[str, list[str]]:
    out = {f"planted_seed_{s}": [*EXPERIMENT, f"seed={s}"] for s in SEEDS}
    for e in EPSILONS:
        for s in SEEDS:
            out[f"dpgen_clean_eps{e}_seed_{s}"] = [*DPGEN, f"eps={e}", f"seed={s}"]
            out[f"dpgen_planted_eps{e}_seed_{s}"] = [*DPGEN, f"eps={e}", f"seed={s}", *planted_model(s)]
    out["ablation_seed_0"] = [*EXPERIMENT, "seed=0", "contamination.ablation.enabled=true"]
    for e in EPSILONS:
        for s in SEEDS:
            out[f"audit_planted_eps{e}_seed_{s}"] = [
                "task=audit",
                "audit.mode=one_run",
                "audit.targets=outliers",
                f"audit.target_positions={job_dir(f'planted_seed_{s}') / 'planted' / 'members.json'}",
                "generator=dpgen",
                *DATASET,
                f"eps={e}",
                f"seed={s}",
                *planted_model(s),
            ]
    return out


def command(overrides: list[str]) -> str:
    """The row's command as a user types it from the repository root (paths relative to it)."""
    return "python -m synbench " + " ".join(overrides).replace(f"{REPO}/", "")


def job_dir(name: str) -> Path:
    return ROOT / "contamination_planted" / name


def finished(name: str) -> dict[str, Any] | None:
    path = job_dir(name) / "results.json"
    try:
        results = json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    return results if results.get("status") == "complete" else None


def selected(name: str, wanted: list[str] | None) -> bool:
    return wanted is None or any(name == w or name.startswith(w) for w in wanted)


def run_row(name: str, overrides: list[str]) -> dict[str, Any]:
    """One job in a fresh process (skipped when its results are complete): its results, or its error."""
    row: dict[str, Any] = {"name": name, "command": command(overrides)}
    if (results := finished(name)) is None:
        start, load = time.perf_counter(), os.getloadavg()[0]
        proc = subprocess.run(
            [*JOB, *overrides, f"hydra.run.dir={job_dir(name)}"], cwd=REPO, capture_output=True, text=True
        )
        row |= {"wall_s": round(time.perf_counter() - start, 1), "load_average_at_start": round(load, 2)}
        if proc.returncode != 0 or (results := finished(name)) is None:
            return row | {"status": "failed", "returncode": proc.returncode, "error": proc.stderr[-2000:]}
    return row | {"status": "complete", "job_s": round(sum(results["timing"].values()), 1), "results": results}


def mean_ci(values: list[float]) -> dict[str, Any]:
    """Mean and 95% Student-t half-width (None with fewer than two values)."""
    from synbench.report.stats import estimate

    found = estimate(values, 0.95)
    half = found.half_width if math.isfinite(found.half_width) else None
    return {"mean": found.mean, "ci95": half, "n": len(values)}


def detection(results: dict[str, Any]) -> dict[str, Any]:
    section = results["contamination"]
    planted = section["planted"]
    return {
        "n_members": planted["n_members"],
        "n_unseen": planted["n_unseen"],
        "n_public_docs": planted["n_public_docs"],
        "training": planted["training"],
        "exact_recall_members": planted["exact"]["recall_members"],
        "exact_flag_rate_unseen": planted["exact"]["flag_rate_unseen"],
        **{
            f"{name}_{key}": planted[name][key]
            for name in ("mink", "minkpp")
            for key in ("auc_members_vs_unseen", "flag_rate_members", "flag_rate_unseen")
        },
        "calibration": section["minkpp"]["calibration"],
        "fpr": section["minkpp"]["fpr"],
        "index_docs": section["exact"]["index_docs"],
        "index_tokens": section["exact"]["index_tokens"],
    }


def utility_gain(done: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per eps: F1 micro from the clean and the planted model over seeds, and their paired difference."""
    out: dict[str, Any] = {}
    for e in EPSILONS:
        pairs = [
            (done[c]["utility"]["f1_micro"], done[p]["utility"]["f1_micro"])
            for s in SEEDS
            if (c := f"dpgen_clean_eps{e}_seed_{s}") in done and (p := f"dpgen_planted_eps{e}_seed_{s}") in done
        ]
        out[f"eps_{e}"] = (
            {
                "clean_f1_micro": mean_ci([c for c, _ in pairs]),
                "planted_f1_micro": mean_ci([p for _, p in pairs]),
                "gain_f1_micro": mean_ci([p - c for c, p in pairs]),
            }
            if pairs
            else None
        )
    return out


def audits(done: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Per audit row: the sound bound and the AUC, beside the paper's reading (the point epsilon at FPR in [0.1,
    0.2], `synbench.report.audit.paper_region_epsilon`) and how often that reading alarms on an exactly eps-DP
    mechanism with the same numbers of trials."""
    import pandas as pd

    from synbench.report.audit import paper_region_epsilon

    keys = ("n_targets", "eps_emp_lower", "auc", "paper_reading_false_alarm")
    out = []
    for name, results in done.items():
        if name.startswith("audit_planted_"):
            reading = paper_region_epsilon(pd.json_normalize(results, sep=".")).iloc[0]
            out.append(
                {"row": name, "eps": results["epsilon"]}
                | {k: results["audit"].get(k) for k in keys}
                | {"paper_reading_eps": None if math.isnan(reading) else round(float(reading), 3)}
            )
    return out


def summary(done: dict[str, dict[str, Any]]) -> dict[str, Any]:
    head = detection(done["planted_seed_0"]) if "planted_seed_0" in done else None
    gain = utility_gain(done)
    audit = audits(done)
    ablation = done.get("ablation_seed_0", {}).get("contamination", {}).get("ablation")
    return {
        "detection": head,
        "detection_by_seed": {n: detection(r) for n, r in done.items() if n.startswith("planted_seed_")},
        "utility_gain": gain,
        "ablation": {k: ablation[k] for k in ("detector", "n_flagged", "reps", "table")} if ablation else None,
        "audit": {"targets_from_S": True, "rows": audit},
        "done_when": {
            "exact_recall_on_S_at_least_0.95": head["exact_recall_members"] >= DONE_RECALL if head else None,
            "minkpp_auc_at_least_0.8": head["minkpp_auc_members_vs_unseen"] >= DONE_AUC if head else None,
            "utility_gain_with_intervals": all(
                g is not None and g["gain_f1_micro"]["n"] >= len(SEEDS) for g in gain.values()
            ),
            # None until the audit rows ran (targets: S, by audit.target_positions)
            "audit_at_most_eps": all(a["eps_emp_lower"] <= a["eps"] for a in audit) if audit else None,
        },
    }


def render(figures: dict[str, Any]) -> str:
    """The Markdown table docs/contamination.md includes, from the figures only."""
    head = figures["detection"]
    if head is None:
        return "Not measured yet: run `make bench BENCH=contamination_planted`.\n"
    lines = [
        f"Seed 0: S = {head['n_members']} private documents in the pretraining corpus (with "
        f"{head['n_public_docs']} public paragraphs, {head['index_tokens']} tokens indexed), "
        f"{head['n_unseen']} unseen; model trained {head['training']['epochs']} epochs "
        f"({head['training']['fine_tuning']}, final train loss {head['training']['final_train_loss']:.3f}). "
        f"Threshold calibrated on the `{head['calibration']}` split at FPR {head['fpr']}.",
        "",
        "| detector | AUC, S vs unseen | flagged in S | flagged among unseen |",
        "|---|---|---|---|",
        f"| exact (infini-gram) | - | {head['exact_recall_members']:.3f} | {head['exact_flag_rate_unseen']:.3f} |",
    ]
    for name, label in (("mink", "Min-K%"), ("minkpp", "Min-K%++")):
        lines.append(
            f"| {label} | {head[f'{name}_auc_members_vs_unseen']:.3f} | {head[f'{name}_flag_rate_members']:.3f} "
            f"| {head[f'{name}_flag_rate_unseen']:.3f} |"
        )
    for eps, gain in figures["utility_gain"].items():
        if gain is not None:
            parts = {k: gain[f"{k}_f1_micro"] for k in ("clean", "planted", "gain")}
            shown = ", ".join(
                f"{k} {v['mean']:.3f}" + (f" ± {v['ci95']:.3f}" if v["ci95"] is not None else "")
                for k, v in parts.items()
            )
            lines += ["", f"DP-Gen at {eps.replace('_', '=')}, F1 micro over {parts['gain']['n']} seed(s): {shown}."]
    if figures["ablation"] is not None:
        lines += ["", ablation_lines(figures["ablation"])]
    if figures["audit"]["rows"]:
        lines += [
            "",
            "One-run audit of DP-Gen from the planted model, targets = S (`audit.target_positions`): the public model "
            "saw every target in both worlds, so a sound bound stays <= eps.",
            "",
            "| row | eps | targets | AUC | eps_emp_lower (95%) | paper's reading (point eps, FPR 0.1-0.2) "
            "| its false-alarm rate at eps-DP |",
            "|---|---|---|---|---|---|---|",
        ]
        for a in figures["audit"]["rows"]:
            alarm = a["paper_reading_false_alarm"]
            lines.append(
                f"| `{a['row']}` | {a['eps']:g} | {a['n_targets']} | {a['auc']:.3f} | {a['eps_emp_lower']:.3f} "
                f"| {_num(a['paper_reading_eps'])} | {_num(alarm)} |"
            )
    done = figures["done_when"]
    lines += ["", "Done when: " + ", ".join(f"`{k}`: {v}" for k, v in done.items()) + "."]
    to_run = [row["name"] for row in figures["rows"].values() if row["status"] != "complete"]
    if to_run:
        lines += ["", f"Rows still to run ({len(to_run)}): " + ", ".join(f"`{n}`" for n in to_run) + "."]
    return "\n".join(lines) + "\n"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def ablation_lines(ablation: dict[str, Any]) -> str:
    """The removal ablation as its figures give it: detector, flagged documents, repetitions and table."""
    return (
        f"Removal ablation at eps=4 from the planted model ({ablation['detector']} flags, "
        f"{ablation['n_flagged']} flagged, R={ablation['reps']}): `{json.dumps(ablation['table'])}`."
    )


def main() -> dict[str, Any]:
    env = os.environ.get("CONTAMINATION_PLANTED_ROWS")
    wanted = [w for w in env.split(",") if w] if env else None
    out_rows: dict[str, dict[str, Any]] = {}
    done: dict[str, dict[str, Any]] = {}
    for name, overrides in rows().items():
        if selected(name, wanted) or finished(name) is not None:  # a finished job is read, not run again
            row = run_row(name, overrides)
            print(json.dumps({k: v for k, v in row.items() if k != "results"}), file=sys.stderr, flush=True)
        else:
            row = {"name": name, "command": command(overrides), "status": "to_run"}
        if "results" in row:
            done[name] = row.pop("results")
        out_rows[name] = row
    figures = {**summary(done), "rows": out_rows, "machine_cpus": os.cpu_count()}
    TABLE.parent.mkdir(exist_ok=True)
    TABLE.write_text(render(figures))
    return figures


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
