"""Contamination as in the paper (`+experiment=contamination_planted_mix`, issue 41): the experiment's settings, the
mix builder's token-share bound, the clean arm, what the removal ablation removes, the bench's figures and verdict,
and the task end to end on a tiny model."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import compose_config, model_overrides, write_jsonl
from synbench.contamination import ablation, planted
from synbench.contamination.config import AblationOptions, ContaminationOptions, PlantedOptions
from synbench.core import schema
from synbench.core.corpus import Corpus
from synbench.core.errors import ConfigError
from synbench.generators.dpgen.generator import DPGenTrainingOptions

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "experiments" / "benchmarks"


def bench_module() -> Any:
    sys.path.insert(0, str(BENCH))
    try:
        import bench_contamination_planted
    finally:
        sys.path.remove(str(BENCH))
    return bench_contamination_planted


def private_corpus(n: int = 40) -> Corpus:
    return Corpus.build([f"private review number {i} about a tablet" for i in range(n)], [("a",)] * n, ("a",))


def test_the_mix_experiment_keeps_s_a_small_share_seen_twice_and_the_bench_uses_its_split() -> None:
    cfg = compose_config(["+experiment=contamination_planted_mix"])
    cc = schema.typed(ContaminationOptions, cfg.contamination, "contamination")
    assert cfg.task.name == "contamination" and cc.planted.enabled and cc.planted.arm == "contaminated"
    assert cc.planted.share == 0.2 and cc.planted.max_private_share == 0.05 and cc.planted.public_docs == 420
    settings = DPGenTrainingOptions(**{"label_prior": "uniform", **cc.planted.train})  # what plant_model passes DP-Gen
    assert settings.epochs <= 2 and settings.cache_trunk and settings.lora and settings.lora["top_layers"] == 8
    assert settings.max_seq_len == cc.mink.max_length == cc.exact.max_length == 48  # scored where it was trained
    assert not cc.ablation.enabled and cc.ablation.detector == "exact" and cc.ablation.control  # the bench turns it on
    bench = bench_module()
    assert cfg.eps == bench.EPS == 2 and bench.MAX_PRIVATE_SHARE == cc.planted.max_private_share
    assert bench.DATASET == [f"dataset.max_train={cfg.dataset.max_train}", "dataset.max_eval=null"]
    assert cfg.dataset.max_eval is None and cfg.generator.cache_trunk and cfg.generator.epochs == 3  # pinned
    assert "generator=dpgen_grid" in bench.DPGEN
    assert all(f"generator.{k}={cfg.generator[k]}" in bench.DPGEN for k in bench.DPGEN_PINS)  # the same DP-Gen
    rows = bench.rows()
    assert "contamination.planted.arm=clean" in rows["clean_base"][0]
    assert {"contamination.ablation.enabled=true", "contamination.ablation.reference=false"} <= set(
        rows["mix_seed_1"][0]
    )
    clean, contaminated = rows["dpgen_clean_seed_2"], rows["audit_contaminated_seed_2"]
    assert f"model.pretrained={bench.model_folder('clean_base')}" in clean[0] and clean[1] == ["clean_base"]
    assert f"model.pretrained={bench.model_folder('mix_seed_2')}" in contaminated[0]
    members = bench.job_dir("mix_seed_2") / "planted" / planted.MEMBERS_FILE
    assert f"audit.target_positions={members}" in rows["audit_clean_seed_2"][0]
    assert rows["audit_clean_seed_2"][1] == ["clean_base", "mix_seed_2"]
    with pytest.raises(ConfigError, match="contamination.planted.arm"):
        PlantedOptions(arm="dirty")
    with pytest.raises(ConfigError, match="contamination.planted.max_private_share"):
        PlantedOptions(max_private_share=0)


def test_the_mix_builder_bounds_s_share_of_the_training_tokens() -> None:
    mix = planted.mix_figures([40, 50], [100] * 18)
    assert mix == {
        "private_docs": 2,
        "public_docs": 18,
        "private_tokens": 90,
        "public_tokens": 1800,
        "private_token_share": pytest.approx(90 / 1890),
    }
    planted.check_share(mix, PlantedOptions(max_private_share=0.05))  # 4.8%: within the bound
    with pytest.raises(ConfigError, match=r"max_private_share=0\.04.*public_docs.*about 2160 tokens"):
        planted.check_share(mix, PlantedOptions(max_private_share=0.04))


def test_the_clean_arm_draws_the_same_s_and_leaves_it_out(tmp_path: Path) -> None:
    train = private_corpus()
    pc = PlantedOptions(share=0.2, public_docs=5)
    dirty = planted.plant_corpus(pc, train, seed=3, folder=tmp_path / "dirty")
    clean = planted.plant_corpus(PlantedOptions(share=0.2, public_docs=5, arm="clean"), train, 3, tmp_path / "clean")
    assert (clean.members == dirty.members).all() and clean.members.sum() == 8
    assert sorted(clean.documents) == sorted(planted.public_paragraphs(pc))  # no private text in the clean corpus
    assert not set(train.texts) & set(clean.documents) and len(dirty.documents) == 13


def test_the_ablation_removes_the_flagged_documents_and_as_many_random_ones() -> None:
    train = private_corpus()
    members = np.zeros(len(train), dtype=bool)
    members[[1, 5, 8, 20, 33]] = True  # the exact detector's flags on the mix: S
    cfg = AblationOptions(steps=(0.6, 1.0), reps=2)
    keys = ablation.plan(cfg)
    assert [k.arm for k in keys[:2]] == ["none", "none"] and len(keys) == 2 + 2 * 2 * 2
    no_reference = ablation.plan(AblationOptions(steps=(0.6, 1.0), reps=2, reference=False))
    assert no_reference == keys[2:]  # the same removals, without the unremoved runs
    for key in keys:
        gone = ablation.removed(key, members, len(train), seed=0)
        if key.arm == "none":
            assert gone.size == 0
        elif key.arm == "flagged":
            assert set(gone) <= {1, 5, 8, 20, 33} and gone.size == round(key.step * 5)
        else:
            assert gone.size == round(key.step * 5) and len(set(gone)) == gone.size
    every = ablation.removed(ablation.RunKey("flagged", 1.0, 0), members, len(train), seed=0)
    assert every.tolist() == [1, 5, 8, 20, 33]
    randoms = [ablation.removed(ablation.RunKey("random", 1.0, r), members, len(train), 0) for r in range(2)]
    assert randoms[0].tolist() != randoms[1].tolist()  # a new draw per repetition


def fake_results(seed: int, gain: float, reading: float) -> dict[str, dict[str, Any]]:
    """Finished rows of one seed with the figures the bench reads."""

    def bench_row(f1: float) -> dict[str, Any]:
        utility = {"f1_micro": f1, "f1_macro": f1 - 0.1, "majority_f1_macro": 0.1, "real_f1_macro": 0.6}
        return {"utility": utility, "fidelity": {"mauve": 0.1, "entity_div": 0.3, "length_div": 0.4}}

    def audit_row(read: float) -> dict[str, Any]:
        tpr = float(np.exp(read) * 0.1)
        audit = {"eps_emp_lower": 0.0, "eps_emp": 0.1, "auc": 0.5, "n_targets": 20, "tpr_at_fpr_0.1": tpr}
        return {"task": "audit", "delta": 0.0, "audit": audit}

    mix = {"private_docs": 20, "public_docs": 420, "private_tokens": 900, "public_tokens": 20000}
    runs = [  # the bench's ablation has no unremoved run: its reference is the dpgen_contaminated row
        {"arm": a, "step": 1.0, "rep": 0, "n_removed": 20, "f1_micro": f, "f1_macro": f}
        for a, f in (("flagged", 0.3 + gain - seed / 100), ("random", 0.4 + gain))
    ]
    planted_section = {
        "arm": "contaminated",
        "mix": mix | {"private_token_share": 0.043},
        "n_members": 20,
        "n_unseen": 80,
        "training": {},
        "exact": {"recall_members": 1.0, "flag_rate_unseen": 0.0},
        **{
            n: {"auc_members_vs_unseen": 0.7, "flag_rate_members": 0.3, "flag_rate_unseen": 0.05}
            for n in ("mink", "minkpp")
        },
    }
    ablation_section = {"detector": "exact", "steps": [1.0], "n_flagged": 20, "runs": runs}
    return {
        f"mix_seed_{seed}": {
            "contamination": {"planted": planted_section, "exact": {"index_tokens": 1}, "ablation": ablation_section}
        },
        f"dpgen_clean_seed_{seed}": bench_row(0.4),
        f"dpgen_contaminated_seed_{seed}": bench_row(0.4 + gain),
        f"audit_clean_seed_{seed}": audit_row(0.2),
        f"audit_contaminated_seed_{seed}": audit_row(0.2 + reading),
    }


@pytest.mark.parametrize("gains, reproduced", [((0.1, 0.12, 0.11), True), ((0.05, -0.05, 0.0), False)])
def test_the_bench_pairs_the_arms_over_seeds_and_states_the_verdict(gains: tuple[float, ...], reproduced: bool) -> None:
    bench = bench_module()
    done = {k: v for s, g in enumerate(gains) for k, v in fake_results(s, g, 0.3 + s / 100).items()}
    figures = bench.summary(done)
    gain = figures["comparison"]["summary"]["f1_micro"]["difference"]
    assert gain["n"] == 3 and gain["mean"] == pytest.approx(sum(gains) / 3)
    removal = figures["ablation"]["pooled"]["step_1.f1_micro"]
    assert removal["none"]["mean"] == pytest.approx(gain["mean"] + 0.4)  # the dpgen_contaminated rows
    other = json.loads(json.dumps(done))
    other["dpgen_contaminated_seed_0"]["config"] = {"generator": {"epochs": 4, "model": "x"}}
    for seed in (1, 2):
        other[f"dpgen_contaminated_seed_{seed}"]["config"] = {"generator": {"epochs": 3, "model": "y"}}
    for seed in range(3):
        other[f"mix_seed_{seed}"]["config"] = {"generator": {"epochs": 3, "model": "z"}}
    elsewhere = bench.summary(other)["ablation"]["pooled"]["step_1.f1_micro"]["none"]
    assert elsewhere["n"] == 2  # the row run under other DP-Gen settings is no reference
    assert removal["flagged_minus_none"]["mean"] == pytest.approx(-0.11) and removal["random_minus_none"]["mean"] == 0
    verdict = figures["verdict"]
    assert verdict["private_share_at_most_0.05"] and verdict["removal_of_flagged_costs_more_than_random"]
    assert verdict["audit_paper_reading_higher_when_contaminated"] and not verdict["audit_sound_bound_above_eps"]
    assert verdict["utility_inflated"] is reproduced and verdict["paper_inflation_reproduced"] is reproduced
    rows = {n: {"status": "complete"} for n in bench.rows()}
    text = bench.render({**figures, "rows": rows})
    assert ("is **reproduced**" if reproduced else "is **not reproduced**") in text and "0.0430" in text


def test_docs_quote_the_benchs_rendered_figures() -> None:
    """docs/contamination.md includes the table rendered from bench_contamination_planted.json, never typed; the kept
    results and bench.md's section are the same render."""
    bench = bench_module()
    figures = json.loads(bench.FIGURES.read_text())
    text = bench.render(figures)
    assert bench.TABLE.read_text() == text and bench.SECTION.read_text().endswith(text)
    assert (bench.KEPT / "report.md").read_text().endswith(text)
    assert json.loads((bench.KEPT / "results.json").read_text())["verdict"] == figures["verdict"]
    assert (
        '--8<-- "experiments/benchmarks/results/contamination_planted.md"'
        in (REPO / "docs" / "contamination.md").read_text()
    )


@pytest.mark.slow  # 11 s on 2 idle cores, 2-3x that on a loaded machine
def test_mix_task_end_to_end_on_a_tiny_model(tmp_path: Path, tiny_model: dict[str, Any]) -> None:
    """The contaminated arm (mix under the share bound, token counts in results, the ablation on exact flags, which
    are S) and the clean arm (the same S drawn, no private text in its corpus) on a tiny model."""
    from synbench.job.spec import JobConfig
    from synbench.tasks import contamination as task

    rng = np.random.default_rng(0)
    letters = list("abcdefghijklmnopqrstuvwxyz")
    private = ["".join(rng.choice(letters, 60)) for _ in range(30)]  # no 16-byte span shared by two documents
    rows = [{"text": t, "label": ["pos" if i % 2 else "neg"]} for i, t in enumerate(private)]
    evals = [{"text": "".join(rng.choice(letters, 60)), "label": ["neg" if i % 2 else "pos"]} for i in range(10)]
    train, test = write_jsonl(tmp_path / "train.jsonl", rows), write_jsonl(tmp_path / "test.jsonl", evals)
    overrides = [
        "+experiment=contamination_planted_mix",
        "dataset=files",
        f"dataset.train={train}",
        f"dataset.eval={test}",
        "dataset.name=tiny",
        "dataset.max_train=null",
        "tracking=none",
        f"output_root={tmp_path}",
        f"cache_dir={tmp_path / 'cache'}",
        "contamination.exact.n=16",
        "contamination.planted.public_docs=120",  # S: 6 documents of 32 tokens, 4.8% of the tokens
        "contamination.planted.train.epochs=1",
        "contamination.planted.train.max_seq_len=32",
        "contamination.planted.train.lora=null",
        "contamination.planted.train.cache_trunk=false",
        "contamination.ablation.enabled=true",
        "contamination.ablation.n_synthetic=10",
        "generator.lora.top_layers=1",
        "generator.epochs=1",
        "generator.max_seq_len=32",
        "generator.max_new_tokens=8",
        *model_overrides(tiny_model),
    ]
    with pytest.raises(ConfigError, match="max_private_share"):  # 40 public documents: S is 13% of the tokens
        task.run(JobConfig.from_config(compose_config([*overrides, "contamination.planted.public_docs=40"])), tmp_path)
    results = task.run(JobConfig.from_config(compose_config(overrides)), tmp_path / "dirty")
    figures = results["contamination"]["planted"]
    assert figures["mix"] == {
        "private_docs": 6,
        "public_docs": 120,
        "private_tokens": 6 * 32,
        "public_tokens": 120 * 32,
        "private_token_share": pytest.approx(6 / 126),
    }
    assert figures["exact"]["recall_members"] == 1.0 and figures["arm"] == "contaminated"
    section = results["contamination"]["ablation"]
    assert [(r["arm"], r["n_removed"]) for r in section["runs"]] == [("none", 0), ("flagged", 6), ("random", 6)]
    assert not any(p in (tmp_path / "dirty" / "results.json").read_text() for p in private)
    clean = task.run(
        JobConfig.from_config(compose_config([*overrides, "contamination.planted.arm=clean"])), tmp_path / "clean"
    )
    null = clean["contamination"]["planted"]
    assert null["arm"] == "clean" and null["mix"]["private_tokens"] == 0 and null["exact"]["recall_members"] == 0.0
    corpus = (tmp_path / "clean" / "planted" / planted.CORPUS_FILE).read_text()
    assert not any(json.dumps(p) in corpus for p in private) and corpus.count("\n") == 120


FAKE_JOB = """
import json, sys, time
from pathlib import Path
run_dir = Path(next(a for a in sys.argv if a.startswith("hydra.run.dir=")).split("=", 1)[1])
canned = json.loads(Path(sys.argv[1]).read_text())
name = run_dir.name
run_dir.mkdir(parents=True, exist_ok=True)
(Path(sys.argv[1]).parent / "order.txt").open("a").write(name + "\\n")
if name == "clean_base" or name.startswith("mix_seed_"):
    (run_dir / "planted" / "model").mkdir(parents=True, exist_ok=True)
    (run_dir / "planted" / "training.json").write_text("{}")
    time.sleep(0.3)  # its dependants start while it finishes
if name == "audit_clean_seed_1":
    sys.exit(3)
(run_dir / "results.json").write_text(json.dumps({**canned[name], "status": "complete", "timing": {"x_s": 1.0}}))
"""


def test_the_bench_runs_rows_after_their_models_resumes_and_publishes_atomically(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two workers, each row once the model row it needs has saved its model; a failed row reported, the figures
    and their renders written; a second run resumes every finished row and reruns only the failed one."""
    bench = bench_module()
    canned = {k: v for s in bench.SEEDS for k, v in fake_results(s, 0.1, 0.3).items()}
    clean = json.loads(json.dumps(canned["mix_seed_0"]))
    clean["contamination"]["planted"] |= {"arm": "clean", "mix": {**clean["contamination"]["planted"]["mix"]}}
    canned["clean_base"] = clean
    (tmp_path / "canned.json").write_text(json.dumps(canned))
    (tmp_path / "job.py").write_text(FAKE_JOB)
    for name, value in {
        "ROOT": tmp_path / "out",
        "FIGURES": tmp_path / "r" / "figures.json",
        "TABLE": tmp_path / "r" / "table.md",
        "SECTION": tmp_path / "r" / "section.md",
        "KEPT": tmp_path / "kept",
        "JOB": [sys.executable, str(tmp_path / "job.py"), str(tmp_path / "canned.json")],
        "POLL_S": 0.02,
    }.items():
        monkeypatch.setattr(bench, name, value)
    figures = bench.main()
    order = (tmp_path / "order.txt").read_text().split()
    for seed in bench.SEEDS:
        assert order.index(f"mix_seed_{seed}") < order.index(f"dpgen_contaminated_seed_{seed}")
        assert order.index("clean_base") < order.index(f"audit_clean_seed_{seed}")
    assert figures["rows"]["audit_clean_seed_1"]["status"] == "failed"
    assert sum(r["status"] == "complete" for r in figures["rows"].values()) == len(bench.rows()) - 1
    assert (
        figures["verdict"]["utility_inflated"] is True
        and figures["comparison"]["summary"]["f1_micro"]["difference"]["n"] == 3
    )
    saved = json.loads(bench.FIGURES.read_text())
    assert saved["verdict"] == figures["verdict"] and bench.TABLE.read_text() == bench.render(saved)
    assert not list((tmp_path / "r").glob("*.partial")) and (bench.KEPT / "report.md").is_file()
    (tmp_path / "order.txt").unlink()
    again = bench.main()
    assert (tmp_path / "order.txt").read_text().split() == ["audit_clean_seed_1"]  # only the failed row reruns
    assert again["rows"]["mix_seed_0"]["resumed"] is True
