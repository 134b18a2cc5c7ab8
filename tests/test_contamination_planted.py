"""Planted contamination (`+experiment=contamination_planted`, S memorised): the experiment's settings, S and its
corpus, the known-answer figures and the task end to end on a tiny model. The paper-style mix and the bench that
runs it: tests/test_contamination_mix.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import compose_config, model_overrides, write_jsonl
from synbench.contamination import planted
from synbench.contamination.config import ContaminationOptions, PlantedOptions
from synbench.core import schema
from synbench.core.corpus import Corpus
from synbench.generators.dpgen.generator import DPGenTrainingOptions


def test_the_experiment_plants_a_fifth_of_the_private_set_and_trains_dpgen_without_dp() -> None:
    cfg = compose_config(["+experiment=contamination_planted"])
    cc = schema.typed(ContaminationOptions, cfg.contamination, "contamination")
    assert cfg.task.name == "contamination" and cc.planted.enabled and cc.planted.share == 0.2
    assert not cc.ablation.enabled and cc.ablation.detector == "minkpp"  # the bench's ablation row turns it on
    settings = DPGenTrainingOptions(**{"label_prior": "uniform", **cc.planted.train})  # what plant_model passes DP-Gen
    assert settings.epochs == 8 and settings.lora is not None and settings.lora["r"] == 64
    assert settings.max_seq_len == cc.mink.max_length == cc.exact.max_length == 48  # scored where it was trained
    with pytest.raises(Exception, match="contamination.planted.share"):
        PlantedOptions(share=0)


def test_s_is_a_seeded_share_and_is_read_back(tmp_path: Path) -> None:
    texts = [f"private review number {i} about a tablet" for i in range(40)]
    train = Corpus.build(texts, [("a",)] * 40, ("a",))
    pc = PlantedOptions(share=0.2, public_docs=5)
    first = planted.plant_corpus(pc, train, seed=3, folder=tmp_path)
    assert first.members.sum() == 8 and first.n_public == 5 and len(first.documents) == 13
    assert sorted(first.documents) == sorted(
        [texts[i] for i in np.flatnonzero(first.members)] + planted.public_paragraphs(pc)
    )
    again = planted.plant_corpus(PlantedOptions(share=0.5, public_docs=5), train, seed=4, folder=tmp_path)
    assert (again.members == first.members).all() and again.documents == first.documents  # the job's S, kept
    other = planted.plant_corpus(pc, train, seed=4, folder=tmp_path / "other")
    assert not (other.members == first.members).all()


def test_known_answer_figures_compare_each_detector_with_s() -> None:
    members = np.array([True, True, False, False, False])
    arrays = {
        "exact_flagged": np.array([True, False, False, True, False]),
        "minkpp": np.array([3.0, 2.0, 1.0, 2.5, 0.0]),
        "minkpp_flagged": np.array([True, False, False, True, False]),
    }
    figures = planted.known_answer_figures(members, arrays)
    assert figures["exact"] == {"recall_members": 0.5, "flag_rate_unseen": pytest.approx(1 / 3)}
    assert figures["minkpp"]["auc_members_vs_unseen"] == pytest.approx(5 / 6)
    assert figures["minkpp"]["flag_rate_members"] == 0.5 and "mink" not in figures


@pytest.mark.slow  # ~35 s on a loaded 2-core machine
def test_planted_task_end_to_end_on_a_tiny_model(tmp_path: Path, tiny_model: dict[str, Any]) -> None:
    """The whole path: S, the corpus, DP-Gen at eps=inf, the saved folder, the index over the corpus, the
    detectors under the planted model, the figures in results, and a re-run that trains nothing again."""
    from synbench.job.release import violations
    from synbench.job.spec import JobConfig
    from synbench.tasks import contamination as task

    rng = np.random.default_rng(0)
    letters = list("abcdefghijklmnopqrstuvwxyz")
    private = ["".join(rng.choice(letters, 60)) for _ in range(30)]  # no 16-byte span shared by two documents
    rows = [{"text": t, "label": ["pos" if i % 2 else "neg"]} for i, t in enumerate(private)]
    evals = [{"text": "".join(rng.choice(letters, 60)), "label": ["neg"]} for _ in range(10)]
    train, test = write_jsonl(tmp_path / "train.jsonl", rows), write_jsonl(tmp_path / "test.jsonl", evals)
    cfg = compose_config(
        [
            "+experiment=contamination_planted",
            "dataset=files",
            f"dataset.train={train}",
            f"dataset.eval={test}",
            "dataset.name=tiny",
            "dataset.max_train=null",
            "dataset.max_eval=null",
            "tracking=none",
            f"output_root={tmp_path}",
            f"cache_dir={tmp_path / 'cache'}",
            "eps=inf",
            "contamination.exact.n=16",
            "contamination.planted.public_docs=4",
            "contamination.planted.train.epochs=2",
            "contamination.planted.train.max_seq_len=32",
            "contamination.planted.train.lora=null",
            *model_overrides(tiny_model),
        ]
    )
    config = JobConfig.from_config(cfg)
    job_dir = tmp_path / "job"
    results = task.run(config, job_dir)
    section = results["contamination"]
    figures = section["planted"]
    members = json.loads((job_dir / "planted" / planted.MEMBERS_FILE).read_text())["positions"]
    assert figures["n_members"] == len(members) == 6 and figures["n_unseen"] == 24
    assert figures["exact"] == {"recall_members": 1.0, "flag_rate_unseen": 0.0}
    assert section["exact"]["index"] == "files" and section["model"].endswith("_planted")
    for name in ("mink", "minkpp"):
        assert 0 <= figures[name]["auc_members_vs_unseen"] <= 1
    assert figures["training"]["epochs"] == 2 and figures["training"]["fine_tuning"] == "full"
    corpus = (job_dir / "planted" / planted.CORPUS_FILE).read_text()
    assert all(json.dumps(private[i]) in corpus for i in members) and corpus.count("\n") == 6 + 4
    model_file = job_dir / "planted" / "model" / "model.safetensors"
    assert model_file.is_file() and "contamination.planted" in results["non_dp_outputs"]
    assert not violations(results, None, task.ContaminationTask)
    assert not any(p in (job_dir / "results.json").read_text() for p in private)
    trained_at = model_file.stat().st_mtime_ns
    (job_dir / "results.json").unlink()
    again = task.run(config, job_dir)
    assert model_file.stat().st_mtime_ns == trained_at and again["contamination"]["planted"] == figures
