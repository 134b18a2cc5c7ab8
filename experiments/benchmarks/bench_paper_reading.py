"""The paper's reading of an audit, calibrated under the null (synbench.audit.paper_reading).

For a mechanism exactly eps-DP (randomised response with a uniform
tie-breaker: its ROC is the eps-DP boundary), the share of 2,000 simulated
audits whose paper reading (the largest point estimate at FPR 0.1 and 0.2)
exceeds eps, at the paper's K = 100 design and ours; and the number of trials
at which the paper's worked example (TPR 0.38 at FPR 0.1) proves eps > 0.5.
Writes `results/bench_paper_reading.json` (through run.py) and the Markdown
table `results/bench_paper_reading.md` that docs/audit.md includes.
"""

from __future__ import annotations

from pathlib import Path

from synbench.audit.config import AuditOptions
from synbench.audit.paper_reading import example_bound, paper_reading_false_alarm, worked_example_sample_size

HERE = Path(__file__).resolve().parent
EPSILONS = (0.5, 1.0, 2.0, 4.0)
GAMES = 2000
CFG = AuditOptions()
TRIALS_PER_RUN = CFG.n_targets + CFG.n_canaries  # our default targets: 50 outliers and 300 canaries
# (name, member trials, non-member trials): half the trials of a design are members
DESIGNS = (
    ("the worked example", 50, 50),
    ("the paper: K = 100 runs x 50 targets", 2500, 2500),
    ("the paper: K = 100 runs x 100 targets", 5000, 5000),
    (f"ours, one_run: {TRIALS_PER_RUN} targets", TRIALS_PER_RUN // 2, TRIALS_PER_RUN // 2),
    (
        f"ours, k_subsets: K = {CFG.n_subsets} x {TRIALS_PER_RUN} targets",
        CFG.n_subsets * TRIALS_PER_RUN // 2,
        CFG.n_subsets * TRIALS_PER_RUN // 2,
    ),
)


def markdown(figures: dict) -> str:
    """The docs' table: one row per design, the false-alarm share (± its standard error) per eps."""
    head = "| design (member + non-member trials) | " + " | ".join(f"ε = {e:g}" for e in EPSILONS) + " |"
    rows = [head, "|---" * (len(EPSILONS) + 1) + "|"]
    for row in figures["false_alarm"]:
        cells = [f"{row[f'eps={e:g}']['rate']:.3f} ± {row[f'eps={e:g}']['se']:.3f}" for e in EPSILONS]
        rows.append(f"| {row['design']} ({row['members']} + {row['nonmembers']}) | " + " | ".join(cells) + " |")
    example = figures["worked_example"]
    rows += [
        "",
        f"The worked example (TPR {example['tpr']} at FPR {example['fpr']}, eps_emp 1.34) at 50 + 50 trials: 95% "
        f"bound {example['bound_50_fixed']:.3f} for a threshold fixed in advance, {example['bound_50_read_off']:.3f} "
        "for the threshold read off the ROC (Bonferroni over its thresholds). It proves eps > "
        f"{example['nominal']:g} from {example['n_fixed']} + {example['n_fixed']} trials (threshold fixed in advance) "
        f"or {example['n_read_off']} + {example['n_read_off']} (read off the ROC).",
    ]
    return "\n".join(rows) + "\n"


def main() -> dict:
    false_alarm = []
    for name, members, nonmembers in DESIGNS:
        row: dict = {"design": name, "members": members, "nonmembers": nonmembers}
        for eps in EPSILONS:
            found = paper_reading_false_alarm(eps, members, nonmembers, games=GAMES, seed=int(eps * 10))
            row[f"eps={eps:g}"] = {"rate": found.rate, "se": round(found.standard_error, 4)}
        false_alarm.append(row)
    example = {
        "tpr": 0.38,
        "fpr": 0.1,
        "nominal": 0.5,
        "confidence": 0.95,
        "bound_50_fixed": round(example_bound(50, 0.38, 0.1, 0.95, chosen_after=False), 4),
        "bound_50_read_off": round(example_bound(50, 0.38, 0.1, 0.95, chosen_after=True), 4),
        "n_fixed": worked_example_sample_size(0.5, confidence=CFG.confidence),
        "n_read_off": worked_example_sample_size(0.5, confidence=CFG.confidence, chosen_after=True),
    }
    figures = {"games": GAMES, "false_alarm": false_alarm, "worked_example": example}
    (HERE / "results" / "bench_paper_reading.md").write_text(markdown(figures))
    return figures
