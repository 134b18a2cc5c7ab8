"""Contamination: the infini-gram index and exact exposure, Min-K% / Min-K%++, and the task end to end with the
ablation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import compose_config, model_overrides, write_jsonl
from synbench.contamination import ablation, exact, index, mink, texts
from synbench.contamination.config import AblationOptions, ContaminationOptions, ExactOptions
from synbench.core import schema
from synbench.core.errors import ConfigError
from synbench.job.release import violations
from synbench.job.spec import JobConfig
from synbench.lm.scoring import TokenScores, token_scores
from synbench.tasks.contamination import ContaminationTask

UNRELATED = [
    "Quarterly zinc shipments from Valparaiso fell sharply after the harbour strike ended in March.",
    "My grandmother's orchard produced forty crates of pears, which we pressed into cider.",
]


@pytest.fixture(scope="module")
def tokenizer(tiny_model: dict[str, Any]) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model["pretrained"])


@pytest.fixture(scope="module")
def public_index(tmp_path_factory: pytest.TempPathFactory, tokenizer: Any) -> index.IndexInfo:
    return index.build_index(tmp_path_factory.mktemp("index"), texts.python_docs(), tokenizer)


def test_embedded_corpus_is_the_python_docs_and_files_are_read(tmp_path: Path) -> None:
    docs = texts.python_docs()
    assert len(docs) > 1000 and sum(map(len, docs)) > 300_000
    jsonl = write_jsonl(tmp_path / "a.jsonl", [{"text": "one"}, {"text": "two"}])
    (tmp_path / "b.txt").write_text("first para\nstill first\n\nsecond")
    assert texts.read_documents([str(jsonl), str(tmp_path / "b.txt")]) == [
        "one",
        "two",
        "first para still first",
        "second",
    ]
    (tmp_path / "bad.jsonl").write_text('{"body": 1}\n')
    with pytest.raises(Exception, match="line 1"):
        texts.read_documents([str(tmp_path / "bad.jsonl")])


def test_planted_overlaps_are_found_and_unrelated_text_is_not(public_index: index.IndexInfo, tokenizer: Any) -> None:
    docs = texts.python_docs()
    passage = max(docs, key=len)[100:300]  # 200 characters copied verbatim from the public corpus
    private = [f"Patient note. {passage} End of note.", *UNRELATED, passage[:40]]
    engine = exact.open_engine(public_index, tokenizer.eos_token_id)
    ids = tokenizer(private, add_special_tokens=False)["input_ids"]
    scores = exact.exact_scores(engine, ids, ExactOptions(n=24, flag_share=0.5, flag_longest=120))
    assert scores.longest[0] >= len(passage.encode()) - 1  # byte tokens: the whole passage matches
    assert scores.flagged.tolist() == [True, False, False, True]
    assert scores.ngram_share[1] < 0.2 and scores.ngram_share[3] == 1.0
    lengths = exact.match_lengths(engine, ids[3])
    assert lengths[0] == len(ids[3]) and (np.diff(lengths) == -1).all()  # a found span's suffixes are found


def test_index_build_is_cached_and_resumes_step_by_step(tmp_path: Path, tokenizer: Any) -> None:
    docs = ["alpha beta gamma delta", "epsilon zeta eta theta"]
    info = index.build_index(tmp_path, docs, tokenizer)
    assert info.n_docs == 2 and info.n_tokens == sum(len(d.encode()) for d in docs)
    tokens_mtime = (tmp_path / "tokenized.0").stat().st_mtime_ns
    (tmp_path / "index.json").unlink()
    (tmp_path / "table.0").unlink()  # killed during the suffix array: step 1 is kept, step 2 re-runs
    again = index.build_index(tmp_path, docs, tokenizer)
    assert (tmp_path / "tokenized.0").stat().st_mtime_ns == tokens_mtime and again.n_tokens == info.n_tokens
    engine = exact.open_engine(again, tokenizer.eos_token_id)
    assert engine.count(input_ids=tokenizer("gamma delta", add_special_tokens=False)["input_ids"])["count"] == 1
    with pytest.raises(ConfigError, match="not an infini-gram index"):
        index.open_index(tmp_path / "missing", None)


def test_min_k_floor_count_matches_the_min_k_plus_plus_authors_code() -> None:
    # Transcribed from zjysteven/mink-plus-plus run.py: k_length = int(len(scores) * ratio), the mean of the k_length
    # lowest; Min-K%++ standardises by mu and sigma.sqrt() with sigma the variance over the vocabulary.
    rng = np.random.default_rng(0)
    for n, k in [(7, 0.2), (10, 0.3), (13, 0.5), (30, 0.1)]:
        scores = TokenScores(
            logp=np.log(rng.uniform(0.001, 1, n)), mu=rng.normal(-3, 1, n), sigma=rng.uniform(0.5, 2, n)
        )
        variance = scores.sigma**2
        k_length = int(n * k)
        reference_mink = np.mean(np.sort(scores.logp)[:k_length])
        reference_minkpp = np.mean(np.sort((scores.logp - scores.mu) / np.sqrt(variance))[:k_length])
        assert mink.min_k(scores, k, count="floor") == pytest.approx(reference_mink, rel=1e-12)
        assert mink.min_k_plus_plus(scores, k, count="floor") == pytest.approx(reference_minkpp, rel=1e-12)
    # the default keeps ceil(k n): 2 of 7 tokens at k = 0.2, where the reference keeps 1
    assert (mink.kept_tokens(7, 0.2, "ceil"), mink.kept_tokens(7, 0.2, "floor")) == (2, 1)
    assert mink.kept_tokens(30, 0.1, "ceil") == 3  # 0.1 * 30 is 3.0000000000000004 in floats: still 3 tokens
    assert mink.kept_tokens(3, 0.2, "floor") == 1  # the reference's mean of no tokens (NaN) becomes the lowest one
    with pytest.raises(ConfigError, match="contamination.mink.count"):
        schema.typed(ContaminationOptions, {"mink": {"count": "round"}}, "contamination")


def test_min_k_scores_on_hand_made_tokens() -> None:
    scores = TokenScores(logp=np.log([0.5, 0.1, 0.9, 0.01, 0.2]), mu=np.full(5, -1.0), sigma=np.full(5, 2.0))
    assert mink.min_k(scores, 0.4, "ceil") == pytest.approx(np.mean(np.log([0.01, 0.1])))
    assert mink.min_k_plus_plus(scores, 0.2, "ceil") == pytest.approx((np.log(0.01) + 1) / 2)
    assert mink.threshold(np.arange(101.0), 0.05) == pytest.approx(95.0)
    assert mink.auc(np.array([2.0, 3.0]), np.array([0.0, 1.0])) == 1.0
    assert mink.auc(np.array([]), np.array([0.0])) is None


def test_batched_token_scores_equal_one_text_at_a_time(tiny_model: dict[str, Any]) -> None:
    from synbench.lm.models import load_causal_lm

    loaded = load_causal_lm(tiny_model)
    docs = ["short", "a somewhat longer document about doses", "mid length text"]
    batched = token_scores(loaded.model, loaded.tokenizer, docs, batch_size=3, max_length=64)
    for doc, got in zip(docs, batched):
        [alone] = token_scores(loaded.model, loaded.tokenizer, [doc], batch_size=1, max_length=64)
        assert got.logp.shape == (len(doc.encode()),)
        np.testing.assert_allclose(got.logp, alone.logp, atol=1e-4)
        np.testing.assert_allclose(got.mu, alone.mu, atol=1e-4)
        np.testing.assert_allclose(got.sigma, alone.sigma, atol=1e-4)
        assert (got.logp <= 0).all() and (got.sigma >= 0).all()


@pytest.mark.slow
def test_smollm2_scores_text_it_has_just_seen_above_fresh_text() -> None:
    """A passage repeated in the document (seen in context) against the passage followed by fresh text.

    (SmolLM2-135M in 4-bit does not reliably rank famous web text, e.g. the MIT licence, above a fresh paraphrase
    under Min-K%++: a real limit of the embedded model, measured while writing this test.)
    """
    from omegaconf import OmegaConf

    from synbench.lm.backends import load_shared

    loaded = load_shared(
        json.dumps(OmegaConf.to_container(compose_config([]).model, resolve=True), sort_keys=True), "cpu"
    )
    passage = "Took the tablet at night for six weeks; the cramps eased but my mouth was dry every morning."
    fresh = "Orchard ladders lean against the barn while geese argue loudly about the frozen pond nearby."
    scores = mink.score_texts(
        loaded.model,
        loaded.tokenizer,
        [f"{passage} {passage}", f"{passage} {fresh}"],
        k=0.2,
        count="ceil",
        batch_size=2,
        max_length=96,
        desc="t",
    )
    assert scores.mink[0] > scores.mink[1] and scores.minkpp[0] > scores.minkpp[1]


def test_ablation_plan_removes_the_right_counts() -> None:
    cfg = AblationOptions(steps=(0.5, 1.0), reps=2)
    keys = ablation.plan(cfg)
    assert [k.arm for k in keys[:2]] == ["none", "none"] and len(keys) == 2 + 2 * 2 * 2
    assert len({k.index for k in keys}) == len(keys)
    flagged = np.zeros(20, dtype=bool)
    flagged[[1, 3, 5, 7]] = True
    for key in keys:
        drop = ablation.removed(key, flagged, 20, seed=0)
        assert len(drop) == (0 if key.arm == "none" else round(key.step * 4))
        if key.arm == "flagged":
            assert flagged[drop].all()


def test_config_errors_name_the_field() -> None:
    with pytest.raises(ConfigError, match="contamination.ablation.detector"):
        schema.typed(ContaminationOptions, {"ablation": {"detector": "bloom"}}, "contamination")
    with pytest.raises(ConfigError, match="contamination.mink.fpr"):
        schema.typed(ContaminationOptions, {"mink": {"fpr": 0}}, "contamination")
    with pytest.raises(ConfigError, match="not in .ExactOptions."):
        schema.typed(ContaminationOptions, {"exact": {"ngram": 3}}, "contamination")


# --- the task end to end ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_contamination_task_flags_planted_documents_runs_the_ablation_and_resumes(
    tmp_path: Path, tiny_model: dict[str, Any]
) -> None:
    from synbench.generators.copy import CopyGenerator
    from synbench.tasks import contamination as task

    passage = max(texts.python_docs(), key=len)
    rng = np.random.default_rng(0)
    words = "dose pain sleep nausea tablet week doctor better worse rash".split()
    private = [" ".join(rng.choice(words, 12)) + f" {i}" for i in range(30)]
    planted = [0, 1, 2, 3]
    for i in planted:
        private[i] = passage[100 * i : 100 * i + 200]
    rows = [{"text": t, "label": ["pos" if i % 2 else "neg"]} for i, t in enumerate(private)]
    evals = [{"text": " ".join(rng.choice(words, 12)), "label": ["pos" if i % 2 else "neg"]} for i in range(12)]
    train, test = write_jsonl(tmp_path / "train.jsonl", rows), write_jsonl(tmp_path / "test.jsonl", evals)
    cfg = compose_config(
        [
            "task=contamination",
            "dataset=files",
            f"dataset.train={train}",
            f"dataset.eval={test}",
            "dataset.name=tiny",
            "tracking=none",
            f"output_root={tmp_path}",
            f"cache_dir={tmp_path / 'cache'}",
            "generator=copy",
            "eps=inf",
            "metrics=[utility]",
            "contamination.exact.n=16",
            "contamination.mink.batch_size=4",
            "contamination.ablation.enabled=true",
            "contamination.ablation.detector=exact",
            "contamination.ablation.reps=2",
            "contamination.ablation.steps=[0.5,1.0]",
            *model_overrides(tiny_model),
        ]
    )
    config = JobConfig.from_config(cfg)
    job_dir = tmp_path / "job"
    results = task.run(config, job_dir)
    section = results["contamination"]
    assert section["exact"]["n_flagged"] == len(planted) and section["exact"]["exposed_share"] == pytest.approx(4 / 30)
    assert 0 <= section["mink"]["exposed_share"] <= 1 and section["minkpp"]["auc"] is None  # no known members given
    scores = np.load(job_dir / task.SCORES_FILE)
    assert np.flatnonzero(scores["exact_flagged"]).tolist() == planted and scores["minkpp"].shape == (30,)
    table = {(r["arm"], r["step"]): r for r in section["ablation"]["table"]}
    assert table[("flagged", 1.0)]["n_removed"] == 4 and table[("random", 0.5)]["n_removed"] == 2
    assert all(r["reps"] == 2 and 0 <= r["f1_micro_mean"] <= 1 for r in table.values())
    assert section["ablation"]["n_runs"] == 2 + 2 * 2 * 2 and len(list((job_dir / "ablation").glob("*.json"))) == 10
    assert results["non_dp_outputs"] and not violations(results, CopyGenerator, ContaminationTask)
    written = (job_dir / "results.json").read_text()
    assert not any(p in written for p in private[4:])

    (job_dir / "results.json").unlink()
    (job_dir / "ablation" / "random_1_r01.json").unlink()  # killed before the last run finished
    again = task.run(config, job_dir)
    assert again["contamination"]["ablation"]["runs_resumed"] == 9

    from synbench.report.build import write_report

    markdown, _ = write_report(tmp_path, 0.95)
    text = markdown.read_text()
    assert "Pretraining contamination" in text and "Min-K%++" in text and "Removal ablation" in text
    assert "random removed (control)" in text and "not tabulated" not in text
