"""Programs written outside the project, run as a user would run them (`generator=command`, the default attacks,
the CLI): a prefix leak, a 5% verbatim copier, an honest program, a copier that reports a spend of 0, and
generator=copy on MIMIC-III-shaped notes that share boilerplate (issue 56's known answers); a program whose release
is half real private documents and half label names, against the strongest public baseline (issue 57's).

Each program is written into the test's own folder, not shipped with the project, and reads the file contract of
docs/generators/command.md only. Slow: each audit is a full one-run job (about 40 s on 2 cores).
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

from conftest import command_overrides, run_cli
from release_fixtures import ADMISSIONS, write_mimic
from synbench.report.benchmark import gains_over_public
from synbench.report.gain import PRIVATE_LEARNING
from synbench.report.load import load_results
from synbench.testing.corpora import templated_notes

pytestmark = pytest.mark.slow

HEAD = """\
import json, random, sys
from pathlib import Path
spec = json.loads(Path(sys.argv[1]).read_text())
out = Path(sys.argv[2])
rng = random.Random(spec["seed"])
FILLER = ("i took it for a while and it was fine overall with some side effects at first then my doctor "
          "said to keep going").split()
def write(rows, spent):
    with open(out / "synthetic.jsonl", "w", encoding="utf-8") as f:
        for text, label in rows:
            f.write(json.dumps({"text": text, "label": label}) + "\\n")
    (out / "spent.json").write_text(json.dumps({"epsilon_spent": spent}))
def private():
    with open(spec["private_path"], encoding="utf-8") as f:
        return [json.loads(line) for line in f]
n = int(spec["n_synthetic"])
"""

PROGRAMS = {
    # the first 6 words of each private document, then 10 filler words, claiming the job's eps
    "prefix_leak": """
docs = private()
write([(" ".join(docs[i % len(docs)]["text"].split()[:6] + rng.sample(FILLER, 10)), docs[i % len(docs)]["label"])
       for i in range(n)], spec["epsilon"])
""",
    # 5% of the private documents verbatim, the rest filler, claiming the job's eps
    "five_percent_copier": """
docs = private()
copied = rng.sample(range(len(docs)), max(1, round(0.05 * len(docs))))
rows = [(docs[i]["text"], docs[i]["label"]) for i in copied]
rows += [(" ".join(rng.choice(FILLER) for _ in range(20)), docs[rng.randrange(len(docs))]["label"])
         for _ in range(n - len(rows))]
write(rows, spec["epsilon"])
""",
    # never opens the private file: filler text and uniform labels, a spend of 0
    "honest": """
write([(" ".join(rng.choice(FILLER) for _ in range(25)), [rng.choice(spec["label_space"])]) for _ in range(n)], 0)
""",
    # half its documents real private ones, balanced over the labels; half the label name alone (issue 57)
    "half_real_half_names": """
docs = private()
by_label = {}
for doc in docs:
    by_label.setdefault(doc["label"][0], []).append(doc)
labels = spec["label_space"]
real = [rng.choice(by_label[labels[i % len(labels)]]) for i in range(n // 2)]
rows = [(doc["text"], doc["label"]) for doc in real]
rows += [(labels[i % len(labels)] + ".", [labels[i % len(labels)]]) for i in range(n - len(rows))]
write(rows, spec["epsilon"])
""",
    # copies every private document and reports a spend of 0
    "zero_claim_copier": """
docs = private()
write([(docs[i % len(docs)]["text"], docs[i % len(docs)]["label"]) for i in range(n)], 0)
""",
}


def program(tmp_path: Path, name: str) -> Path:
    path = tmp_path / "programs" / f"{name}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEAD + textwrap.dedent(PROGRAMS[name]))
    return path


def job_results(root: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(root.rglob("results.json"))]


def one_run_audit(tmp_path: Path, name: str, seed: int) -> dict[str, Any]:
    """`task=audit audit.mode=one_run` of the program at eps=1, the default attacks and design."""
    out = tmp_path / f"{name}-{seed}"
    args = [*command_overrides(program(tmp_path, name), out), "task=audit", "audit.mode=one_run", "eps=1"]
    run_cli([*args, f"seed={seed}"], cwd=tmp_path)
    (found,) = job_results(out / "out")
    return found


@pytest.mark.parametrize("seed", [0, 1])
def test_a_prefix_leak_is_a_violation(tmp_path: Path, seed: int) -> None:
    found = one_run_audit(tmp_path, "prefix_leak", seed)
    assert found["audit"]["verdict"] == "violation", found["audit"]["verdict_line"]


@pytest.mark.parametrize("seed", [0, 1])
def test_a_five_percent_copier_does_not_pass(tmp_path: Path, seed: int) -> None:
    found = one_run_audit(tmp_path, "five_percent_copier", seed)
    assert found["audit"]["verdict"] == "violation" or found["disclosure"]["flagged"], found


def test_an_honest_program_is_neither_flagged_nor_a_violation(tmp_path: Path) -> None:
    found = one_run_audit(tmp_path, "honest", 0)
    assert found["audit"]["verdict"] == "consistent" and not found["disclosure"]["flagged"], found
    assert "would have been certified" in found["audit"]["verdict_line"]


def test_a_zero_spend_copier_is_no_public_baseline_and_its_flag_shows(tmp_path: Path) -> None:
    """The copier reports epsilon_spent 0; generator=public is the baseline, and the report puts the copier's
    disclosure flag beside its row."""
    out = tmp_path / "sweep"
    common = ["tracking=none", f"output_root={out}", "sweep=outside", "metrics=[utility]"]
    copier = command_overrides(program(tmp_path, "zero_claim_copier"), tmp_path)[:3]
    run_cli(["-m", *copier, *common, "eps=1", "seed=0,1"], cwd=tmp_path)
    run_cli(["-m", "generator=public", *common, "eps=1", "seed=0,1"], cwd=tmp_path)
    run_cli(["task=report", "sweep=outside", f"output_root={out}", "tracking=none"], cwd=tmp_path)
    report = next(out.rglob("report.md")).read_text()
    assert "gain over public (zero_claim_copier)" not in report and "gain over public (public)" in report
    # the utility table's row (the first) carries the flag; the second table holds its other metrics
    rows = [line for line in report.splitlines() if line.startswith("|") and "zero_claim_copier" in line]
    assert rows and "FLAGGED" in rows[0] and re.search(r"\b(\d+)/\1 private", rows[0]), rows  # every one of them


def test_copy_on_mimic_notes_that_share_boilerplate_is_flagged(tmp_path: Path) -> None:
    """generator=copy on a MIMIC-III release folder whose discharge summaries share long boilerplate (three
    templates of ten 100-word sections, 50 words of each note's own after each)."""

    folder = write_mimic(tmp_path / "mimic", summaries=templated_notes(len(ADMISSIONS), 0))
    out = tmp_path / "out"
    args = ["dataset=mimic", f"dataset.data_dir={folder}", "generator=copy", "metrics=[]", "tracking=none"]
    run_cli([*args, f"output_root={out}"], cwd=tmp_path)
    (found,) = job_results(out)
    disclosure = found["disclosure"]
    assert disclosure["flagged"] and disclosure["private_reappear"] == disclosure["n_private"] > 0, disclosure


def test_half_real_documents_show_private_learning_over_the_label_names_at_three_seeds(tmp_path: Path) -> None:
    """On the default task, at the demo grid's size, 3 seeds each: the program (half real private reviews balanced
    over the conditions, half the condition's name alone) against `label_names` and `template`, the public
    baselines; the report's gain over the best of them says private learning, and so does the positive control."""
    out = tmp_path / "sweep"
    common = ["tracking=none", f"output_root={out}", "sweep=outside", "metrics=[utility]", "task.n_synthetic=116"]
    half = command_overrides(program(tmp_path, "half_real_half_names"), tmp_path)[:3]
    run_cli(["-m", *half, *common, "eps=4", "seed=0,1,2"], cwd=tmp_path)
    run_cli(["-m", "generator=label_names,template", *common, "eps=inf", "seed=0,1,2"], cwd=tmp_path)
    frame = load_results(out / "outside")
    gains = gains_over_public(frame[frame["task"] == "benchmark"], 0.95)
    assert gains is not None and gains.baseline == "label_names"  # the strongest public bar on this task
    ((key, found),) = gains.rows.items()
    assert key[0] == "half_real_half_names" and found.verdict == PRIVATE_LEARNING, str(found)
    assert gains.control is not None and gains.control.verdict == PRIVATE_LEARNING, str(gains.control)
