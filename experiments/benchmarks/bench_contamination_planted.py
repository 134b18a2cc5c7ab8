"""Contamination as in the paper (`+experiment=contamination_planted_mix`, issue 41): the private domain a small share
of a public continued-pretraining mix, then the paper's comparison and its removal ablation, at 3 seeds.

Each row is one job, `python -m synbench <overrides>`, in its own process
(tracking off, one torch thread), as a user runs it, under
`outputs/bench_contamination_planted/contamination_planted_mix/<row>/`. Two
rows run at a time (`CONTAMINATION_PLANTED_WORKERS`, default 2), each as soon
as the model it starts from is saved. A finished job (complete results.json)
is read, not run again, and the figures are rewritten (temporary file, then
rename) after every row, so an interrupted bench keeps its finished seeds and
resumes; a job killed midway resumes inside itself (S and the mix, the planted
model folder, DP-Gen's checkpoints, the ablation's runs). Rows:
- `clean_base`: the clean base model, SmolLM2 trained further (no DP) on the
  mix's public part alone (420 python_docs paragraphs). It does not depend on
  any private document, so the three seeds share it; its detector figures
  against seed 0's S are a null.
- `mix_seed_<s>`: the contaminated model of seed s: the same public part plus
  S (20% of that seed's 100 private reviews), S <= 5% of the training tokens
  (measured: `mix`); the detectors against S; and the removal ablation (exact
  flags, all of them removed, and as many random removals, the control) with
  DP-Gen at eps=2 from that model. Its unremoved reference is the seed's
  `dpgen_contaminated` row (the same DP-Gen run, not trained twice).
- `dpgen_<clean|contaminated>_seed_<s>`: DP-Gen (the demo grid's, eps=2) on
  the same private split from each model: utility and fidelity.
- `audit_<clean|contaminated>_seed_<s>`: the one-run audit of that DP-Gen,
  targets = S (`audit.target_positions`).

`CONTAMINATION_PLANTED_ROWS` (comma-separated names or prefixes; default all)
picks the rows to run; the others are read when finished and listed as
`to_run` otherwise. Renders (from the figures, never typed):
`results/contamination_planted.md` (docs/contamination.md includes it),
`results/bench_contamination_planted.section.md` (bench.md shows it) and the
kept copy `experiments/results/contamination_planted_mix/` (results.json,
report.md).
"""

from __future__ import annotations

import json
import math
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
ROOT = REPO / "outputs" / "bench_contamination_planted"
SWEEP = "contamination_planted_mix"
FIGURES = HERE / "results" / "bench_contamination_planted.json"
TABLE = HERE / "results" / "contamination_planted.md"
SECTION = HERE / "results" / "bench_contamination_planted.section.md"
KEPT = REPO / "experiments" / "results" / SWEEP
JOB = [sys.executable, "-m", "synbench", "tracking=none", f"output_root={ROOT}", f"sweep={SWEEP}"]
SEEDS = (0, 1, 2)
ARMS = ("clean", "contaminated")
EPS = 2  # conf/experiment/contamination_planted_mix.yaml's eps (a test checks they agree)
MAX_PRIVATE_SHARE = 0.05  # the bound on S's share of the continued-pretraining tokens
EXPERIMENT = [f"+experiment={SWEEP}"]
# the experiment's private split and DP-Gen (a test checks they agree)
DATASET = ["dataset.max_train=100", "dataset.max_eval=null"]
# the experiment pins DP-Gen's size and precision (the demo grid's may change): the rows use the same, so that the
# ablation's runs and its reference, the dpgen_contaminated row, are the same DP-Gen as the kept figures'
DPGEN_PINS = {"epochs": 3, "precision": "32-true", "sample_dtype": "float32"}
DPGEN = ["generator=dpgen_grid", *(f"generator.{k}={v}" for k, v in DPGEN_PINS.items()), *DATASET, f"eps={EPS}"]
THREADS = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
POLL_S = 5.0


def job_dir(name: str) -> Path:
    return ROOT / SWEEP / name


def model_row(arm: str, seed: int) -> str:
    return "clean_base" if arm == "clean" else f"mix_seed_{seed}"


def model_folder(row: str) -> Path:
    return job_dir(row) / "planted" / "model"


def model_overrides(arm: str, seed: int) -> list[str]:
    """The `model` overrides that start a job from the clean base model or from seed `seed`'s contaminated one."""
    folder = model_folder(model_row(arm, seed))
    name = "smollm2_clean" if arm == "clean" else f"smollm2_contaminated_seed{seed}"
    return [f"model.pretrained={folder}", "model.package=null", "model.gguf_file=null", f"model.name={name}"]


def rows() -> dict[str, tuple[list[str], list[str]]]:
    """Every row: its overrides and the rows whose model (or S) it needs first."""
    out: dict[str, tuple[list[str], list[str]]] = {
        "clean_base": ([*EXPERIMENT, "contamination.planted.arm=clean", "seed=0"], [])
    }
    for s in SEEDS:
        ablate = ["contamination.ablation.enabled=true", "contamination.ablation.reference=false"]
        out[f"mix_seed_{s}"] = ([*EXPERIMENT, f"seed={s}", *ablate], [])
    for s in SEEDS:
        for arm in ARMS:
            needs = sorted({model_row(arm, s), f"mix_seed_{s}"})  # the audit's targets are that seed's S
            dpgen = ["task=benchmark", *DPGEN, f"seed={s}", *model_overrides(arm, s)]
            out[f"dpgen_{arm}_seed_{s}"] = (dpgen, [model_row(arm, s)])
            members = job_dir(f"mix_seed_{s}") / "planted" / "members.json"
            audit = ["task=audit", "audit.mode=one_run", "audit.targets=outliers", f"audit.target_positions={members}"]
            out[f"audit_{arm}_seed_{s}"] = ([*audit, *DPGEN, f"seed={s}", *model_overrides(arm, s)], needs)
    return out


def command(overrides: list[str]) -> str:
    """The row's command as a user types it from the repository root (paths relative to it)."""
    return "python -m synbench " + " ".join(overrides).replace(f"{REPO}/", "")


def finished(name: str) -> dict[str, Any] | None:
    try:
        results = json.loads((job_dir(name) / "results.json").read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    return results if results.get("status") == "complete" else None


def ready(name: str) -> bool:
    """A model row is ready for its dependants once its model folder and S are saved (before its detectors and
    ablation finish)."""
    folder = job_dir(name) / "planted"
    return finished(name) is not None or ((folder / "training.json").is_file() and (folder / "model").is_dir())


def selected(name: str, wanted: list[str] | None) -> bool:
    return wanted is None or any(name == w or name.startswith(w) for w in wanted)


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text)
    os.replace(partial, path)


class Pool:
    """Rows as child processes, at most `workers` at a time, each started once the rows it needs are ready."""

    def __init__(self, workers: int, on_done: Callable[[str, dict[str, Any]], None]) -> None:
        self.workers, self.on_done = workers, on_done
        self.running: dict[str, tuple[subprocess.Popen[str], float, float, Any]] = {}

    def start(self, name: str, overrides: list[str]) -> None:
        log_path = job_dir(name).with_name(f"{name}.log")
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log = log_path.open("w")
        proc = subprocess.Popen(
            [*JOB, *overrides, f"hydra.run.dir={job_dir(name)}"],
            cwd=REPO,
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, **THREADS},
        )  # in the bench's process group: stopping the bench (kill -- -<pgid>) stops its jobs
        self.running[name] = (proc, time.perf_counter(), os.getloadavg()[0], log)

    def reap(self) -> None:
        for name, (proc, start, load, log) in list(self.running.items()):
            if proc.poll() is None:
                continue
            log.close()
            del self.running[name]
            row = {"wall_s": round(time.perf_counter() - start, 1), "load_average_at_start": round(load, 2)}
            if proc.returncode != 0 or finished(name) is None:
                tail = job_dir(name).with_name(f"{name}.log").read_text()[-2000:]
                row |= {"status": "failed", "returncode": proc.returncode, "error": tail}
            self.on_done(name, row)

    def run(self, todo: dict[str, tuple[list[str], list[str]]]) -> None:
        pending = dict(todo)
        while pending or self.running:
            self.reap()
            failed = {n for n, (_, needs) in pending.items() if any(d not in todo and not ready(d) for d in needs)}
            for name in failed:  # a row whose model row failed or was not selected cannot start
                pending.pop(name)
                self.on_done(name, {"status": "blocked", "error": "a row it needs has no model"})
            for name, (overrides, needs) in list(pending.items()):
                if len(self.running) < self.workers and all(ready(d) for d in needs):
                    self.start(name, overrides)
                    pending.pop(name)
            if pending and not self.running and not any(all(ready(d) for d in n) for _, n in pending.values()):
                for name in list(pending):  # nothing runs and nothing can start: the rows they need failed
                    pending.pop(name)
                    self.on_done(name, {"status": "blocked", "error": "a row it needs failed"})
            time.sleep(POLL_S if self.running else 0)


def mean_ci(values: list[float]) -> dict[str, Any] | None:
    """Mean and 95% Student-t half-width (None with fewer than two values)."""
    from synbench.report.stats import estimate

    found = estimate([v for v in values if v is not None], 0.95)
    if found is None:
        return None
    half = found.half_width if math.isfinite(found.half_width) else None
    return {"mean": found.mean, "ci95": half, "n": found.n, "values": [round(v, 4) for v in values if v is not None]}


def excludes_zero(est: dict[str, Any] | None, sign: int) -> bool | None:
    """Whether the 95% interval lies wholly above (sign +1) or below (-1) zero; None without an interval."""
    if est is None or est["ci95"] is None:
        return None
    return bool(sign * est["mean"] - est["ci95"] > 0)


def detection(results: dict[str, Any]) -> dict[str, Any]:
    section = results["contamination"]
    planted = section["planted"]
    return {
        "arm": planted["arm"],
        "mix": planted["mix"],
        "n_members": planted["n_members"],
        "n_unseen": planted["n_unseen"],
        "training": planted["training"],
        "exact_recall_members": planted["exact"]["recall_members"],
        "exact_flag_rate_unseen": planted["exact"]["flag_rate_unseen"],
        **{
            f"{name}_{key}": planted[name][key]
            for name in ("mink", "minkpp")
            for key in ("auc_members_vs_unseen", "flag_rate_members", "flag_rate_unseen")
        },
        "index_tokens": section["exact"]["index_tokens"],
    }


FIDELITY = (("mauve", 1), ("entity_div", -1), ("length_div", -1))  # (figure, +1 higher is better / -1 lower)


def arm_figures(done: dict[str, dict[str, Any]], arm: str, seed: int) -> dict[str, Any] | None:
    """One arm at one seed: DP-Gen's utility and fidelity, and its audit (the sound bound and the paper's reading)."""
    import pandas as pd

    from synbench.report.audit import paper_region_epsilon

    bench, audit = done.get(f"dpgen_{arm}_seed_{seed}"), done.get(f"audit_{arm}_seed_{seed}")
    out: dict[str, Any] = {}
    if bench is not None:
        out |= {k: bench["utility"][k] for k in ("f1_micro", "f1_macro", "majority_f1_macro", "real_f1_macro")}
        out |= {k: bench["fidelity"][k] for k, _ in FIDELITY}
    if audit is not None:
        reading = float(paper_region_epsilon(pd.json_normalize(audit, sep=".")).iloc[0])
        out |= {f"audit_{k}": audit["audit"].get(k) for k in ("eps_emp_lower", "eps_emp", "auc", "n_targets")}
        out["audit_paper_reading_eps"] = None if math.isnan(reading) else reading
        out["audit_paper_reading_false_alarm"] = audit["audit"].get("paper_reading_false_alarm")
    return out or None


COMPARED = (
    "f1_micro",
    "f1_macro",
    *(k for k, _ in FIDELITY),
    "audit_eps_emp_lower",
    "audit_eps_emp",
    "audit_auc",
    "audit_paper_reading_eps",
)


def comparison(done: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per seed both arms, and per figure the clean and contaminated means and their paired difference over seeds."""
    per_seed = {f"seed_{s}": {arm: arm_figures(done, arm, s) for arm in ARMS} for s in SEEDS}
    summary: dict[str, Any] = {}
    for key in COMPARED:
        pairs = [
            (c[key], p[key])
            for seed in per_seed.values()
            if (c := seed["clean"]) and (p := seed["contaminated"]) and c.get(key) is not None
            if p.get(key) is not None
        ]
        summary[key] = {
            "clean": mean_ci([c for c, _ in pairs]),
            "contaminated": mean_ci([p for _, p in pairs]),
            "difference": mean_ci([p - c for c, p in pairs]),
        }
    return {"by_seed": per_seed, "summary": summary}


def same_generator(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two jobs ran DP-Gen with the same settings (the model they start from aside)."""

    def settings(results: dict[str, Any]) -> dict[str, Any] | None:
        node = results.get("config", {}).get("generator")
        return None if node is None else {k: v for k, v in node.items() if k not in ("model", "workdir")}

    return settings(a) == settings(b)


def ablation(done: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """The removal ablation of each seed's mix job (flagged and random removals), its unremoved reference the
    seed's `dpgen_contaminated` row (the same DP-Gen, eps, private set and synthetic size from the same model),
    and over seeds each removal's paired F1 change against it (and flagged against random)."""
    runs = {
        s: done[f"mix_seed_{s}"]["contamination"]["ablation"]
        for s in SEEDS
        if "ablation" in done.get(f"mix_seed_{s}", {}).get("contamination", {})
    }
    if not runs:
        return None
    by_seed: dict[str, Any] = {}
    for s, section in runs.items():
        keys = ("arm", "step", "n_removed", "f1_micro", "f1_macro")
        found = [{k: r[k] for k in keys} for r in section["runs"] if r["rep"] == 0]
        reference = done.get(f"dpgen_contaminated_seed_{s}")
        if reference is not None and not same_generator(reference, done[f"mix_seed_{s}"]):
            reference = None  # a row run under other DP-Gen settings is no reference for these runs
        if reference is not None and not any(r["arm"] == "none" for r in found):
            utility = reference["utility"]
            found.insert(0, {"arm": "none", "step": 0.0, "n_removed": 0} | {k: utility[k] for k in keys[3:]})
        by_seed[f"seed_{s}"] = {"n_flagged": section["n_flagged"], "runs": found}
    steps = sorted({r["step"] for v in by_seed.values() for r in v["runs"] if r["arm"] != "none"})
    pooled = {}
    for step in steps:
        for metric in ("f1_micro", "f1_macro"):

            def value(seed: dict[str, Any], arm: str, step: float = step, metric: str = metric) -> float | None:
                found = [r[metric] for r in seed["runs"] if r["arm"] == arm and (arm == "none" or r["step"] == step)]
                return found[0] if found else None

            triples = [(value(v, "none"), value(v, "flagged"), value(v, "random")) for v in by_seed.values()]
            triples = [t for t in triples if None not in t]
            pooled[f"step_{step:g}.{metric}"] = {
                "none": mean_ci([n for n, _, _ in triples]),
                "flagged_minus_none": mean_ci([f - n for n, f, _ in triples]),
                "random_minus_none": mean_ci([r - n for n, _, r in triples]),
                "flagged_minus_random": mean_ci([f - r for _, f, r in triples]),
            }
    first = next(iter(runs.values()))
    return {"detector": first["detector"], "steps": first["steps"], "by_seed": by_seed, "pooled": pooled}


def verdict(mix: dict[str, Any], compared: dict[str, Any], removal: dict[str, Any] | None) -> dict[str, Any]:
    """The paper's finding, tested: utility inflated (F1 micro, the paper's headline figure, contaminated above
    clean, its 95% interval over seeds above 0; F1 macro beside it), removing the flagged documents costs more
    than removing as many random ones, and audits misfire (the contaminated model's audit reads higher than the
    clean one's, or its sound bound exceeds eps)."""
    summary = compared["summary"]
    gain = summary["f1_micro"]["difference"]
    reading = summary["audit_paper_reading_eps"]["difference"]
    bounds = [
        arm["audit_eps_emp_lower"]
        for seed in compared["by_seed"].values()
        if (arm := seed["contaminated"]) and arm.get("audit_eps_emp_lower") is not None
    ]
    flagged_vs_random = (removal or {}).get("pooled", {}).get("step_1.f1_micro", {}).get("flagged_minus_random")
    shares = [m["private_token_share"] for m in mix.values()]
    out = {
        "private_share_at_most_0.05": bool(shares) and max(shares) <= MAX_PRIVATE_SHARE,
        "seeds_compared": gain["n"] if gain else 0,
        "utility_inflated": excludes_zero(gain, +1),
        "utility_inflated_f1_macro": excludes_zero(summary["f1_macro"]["difference"], +1),
        "fidelity_mauve_inflated": excludes_zero(summary["mauve"]["difference"], +1),  # beside, not in the verdict
        "removal_of_flagged_costs_more_than_random": excludes_zero(flagged_vs_random, -1),
        "audit_sound_bound_above_eps": any(b > EPS for b in bounds) if bounds else None,
        "audit_paper_reading_higher_when_contaminated": excludes_zero(reading, +1),
    }
    misfire = out["audit_sound_bound_above_eps"] or out["audit_paper_reading_higher_when_contaminated"]
    parts = (out["utility_inflated"], misfire)
    out["paper_inflation_reproduced"] = False if False in parts else (None if None in parts else True)
    return out


def summary(done: dict[str, dict[str, Any]]) -> dict[str, Any]:
    detections = {n: detection(r) for n, r in done.items() if n.startswith(("mix_seed_", "clean_base"))}
    mix = {n: d["mix"] for n, d in detections.items() if d["arm"] == "contaminated"}
    compared, removal = comparison(done), ablation(done)
    return {
        "setting": {
            "eps": EPS,
            "private_set": DATASET,
            "generator": "dpgen_grid",
            "public_text": "python_docs (CPython pydoc_data.topics)",
        },
        "mix": mix,
        "detection": detections,
        "comparison": compared,
        "ablation": removal,
        "verdict": verdict(mix, compared, removal),
    }


def timings(out_rows: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Seconds per seed (its rows' own job seconds, the shared clean base model a third to each) and in all."""
    secs = {n: r.get("job_s") for n, r in out_rows.items()}
    shared = (secs.get("clean_base") or 0.0) / len(SEEDS)
    per_seed = {
        f"seed_{s}": round(shared + sum(v or 0.0 for n, v in secs.items() if n.endswith(f"_seed_{s}")), 1)
        for s in SEEDS
    }
    return {"job_s_by_seed": per_seed, "job_s_total": round(sum(v or 0.0 for v in secs.values()), 1)}


def _fmt(est: dict[str, Any] | None, digits: int = 3) -> str:
    if est is None:
        return "-"
    half = f" ± {est['ci95']:.{digits}f}" if est["ci95"] is not None else ""
    return f"{est['mean']:.{digits}f}{half}"


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


EFFECTS = (  # the verdict's checks of an effect of contamination (the rest check the setting)
    "utility_inflated",
    "utility_inflated_f1_macro",
    "fidelity_mauve_inflated",
    "removal_of_flagged_costs_more_than_random",
    "audit_sound_bound_above_eps",
    "audit_paper_reading_higher_when_contaminated",
)


def render(figures: dict[str, Any]) -> str:
    """The Markdown docs/contamination.md includes (and bench.md shows), from the figures only."""
    mix, verdicts = figures["mix"], figures["verdict"]
    if not mix:
        return "Not measured yet: run `make bench BENCH=contamination_planted`.\n"
    reproduced = verdicts["paper_inflation_reproduced"]
    headline = {True: "**reproduced**", False: "**not reproduced**", None: "not decided yet (rows missing)"}[reproduced]
    lines = [
        f"Paper-style contamination (`+experiment={SWEEP}`, eps={EPS}, {len(mix)} seed(s)): the paper's inflation "
        f"(contamination inflates utility and makes audits misfire) is {headline} here.",
    ]
    effects = [k for k in EFFECTS if verdicts.get(k)]
    lines[-1] += (
        " Effects seen (the verdict line's checks that hold): " + ", ".join(f"`{k}`" for k in effects) + "."
        if effects
        else " No effect seen: none of the verdict line's checks holds."
    )
    lines += [
        "",
        "| seed | S (reviews) | S tokens | public tokens | S share of tokens | exact recall on S | Min-K%++ AUC, S vs "
        "unseen |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, d in figures["detection"].items():
        m = d["mix"]
        lines.append(
            f"| `{name}` ({d['arm']}) | {d['n_members']} | {m['private_tokens']} | {m['public_tokens']} "
            f"| {m['private_token_share']:.4f} | {_num(d['exact_recall_members'])} "
            f"| {_num(d['minkpp_auc_members_vs_unseen'])} |"
        )
    lines += [
        "",
        "DP-Gen from the clean and the contaminated base model, mean ± 95% interval over seeds (difference: paired, "
        "contaminated − clean):",
        "",
        "| figure | clean | contaminated | difference |",
        "|---|---|---|---|",
    ]
    for key, est in figures["comparison"]["summary"].items():
        lines.append(f"| {key} | {_fmt(est['clean'])} | {_fmt(est['contaminated'])} | {_fmt(est['difference'])} |")
    removal = figures["ablation"]
    if removal is not None:
        lines += [
            "",
            f"Removal ablation from the contaminated model ({removal['detector']} flags, steps {removal['steps']}, "
            "one repetition a seed, paired over seeds):",
            "",
            "| removal | F1 micro, unremoved | flagged − unremoved | random − unremoved | flagged − random |",
            "|---|---|---|---|---|",
        ]
        for key, est in removal["pooled"].items():
            lines.append(
                f"| {key} | {_fmt(est['none'])} | {_fmt(est['flagged_minus_none'])} "
                f"| {_fmt(est['random_minus_none'])} | {_fmt(est['flagged_minus_random'])} |"
            )
    lines += ["", "Verdict: " + ", ".join(f"`{k}`: {v}" for k, v in verdicts.items()) + "."]
    timing = figures.get("timing")
    if timing:
        lines += ["", f"Seconds of job time per seed: {timing['job_s_by_seed']} (total {timing['job_s_total']})."]
        if timing.get("jobs_cpu_s_this_attempt") is not None:
            lines[-1] += (
                f" The last attempt: {timing['bench_wall_s_this_attempt']} s wall, "
                f"{timing['jobs_cpu_s_this_attempt']} CPU seconds of its jobs."
            )
    to_run = [n for n, row in figures["rows"].items() if row["status"] != "complete"]
    if to_run:
        lines += ["", f"Rows still to run ({len(to_run)}): " + ", ".join(f"`{n}`" for n in to_run) + "."]
    return "\n".join(lines) + "\n"


def publish(figures: dict[str, Any]) -> None:
    """The figures and their renders, each written whole (temporary file, then rename)."""
    text = render(figures)
    write_atomic(FIGURES, json.dumps(figures, indent=2) + "\n")
    write_atomic(TABLE, text)
    write_atomic(SECTION, "## Contamination: the paper-style mix (bench_contamination_planted)\n\n" + text)
    kept = {k: figures[k] for k in ("setting", "mix", "detection", "comparison", "ablation", "verdict", "timing")}
    write_atomic(KEPT / "results.json", json.dumps(kept, indent=2) + "\n")
    write_atomic(KEPT / "report.md", f"# {SWEEP}\n\n" + text)


def main() -> dict[str, Any]:
    env = os.environ.get("CONTAMINATION_PLANTED_ROWS")
    wanted = [w for w in env.split(",") if w] if env else None
    all_rows = rows()
    out_rows: dict[str, dict[str, Any]] = {}
    done: dict[str, dict[str, Any]] = {}
    start = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_before = before.ru_utime + before.ru_stime

    def figures() -> dict[str, Any]:
        found = {**summary(done), "rows": out_rows, "timing": timings(out_rows), "machine_cpus": os.cpu_count()}
        used = resource.getrusage(resource.RUSAGE_CHILDREN)  # the finished jobs' CPU seconds (all at the end)
        found["timing"]["bench_wall_s_this_attempt"] = round(time.perf_counter() - start, 1)
        found["timing"]["jobs_cpu_s_this_attempt"] = round(used.ru_utime + used.ru_stime - cpu_before, 1)
        return found

    def record(name: str, row: dict[str, Any]) -> None:
        overrides = all_rows[name][0]
        out_rows[name] = {"name": name, "command": command(overrides), **out_rows.get(name, {}), **row}
        if (results := finished(name)) is not None:
            done[name] = results
            out_rows[name] |= {"status": "complete", "job_s": round(sum(results["timing"].values()), 1)}
        print(json.dumps({k: v for k, v in out_rows[name].items() if k != "error"}), file=sys.stderr, flush=True)
        publish(figures())

    todo = {}
    for name, (overrides, needs) in all_rows.items():
        if finished(name) is not None:
            record(name, {"resumed": True})
        elif selected(name, wanted):
            todo[name] = (overrides, needs)
        else:
            out_rows[name] = {"name": name, "command": command(overrides), "status": "to_run"}
    Pool(int(os.environ.get("CONTAMINATION_PLANTED_WORKERS", "2")), record).run(todo)
    found = figures()
    publish(found)
    return found


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
