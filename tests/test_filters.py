"""The P(yes) - P(no) post-hoc filter: keeping the top share, scoring with the LM, both rows in one benchmark job."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import compose_config
from synbench.core import schema
from synbench.core.corpus import Corpus
from synbench.core.errors import ConfigError, PluginError
from synbench.filters import apply_filter
from synbench.filters.pyes_pno import keep_top, pyes_pno_scores, single_token_ids
from synbench.filters.settings import PYesPNoOptions
from synbench.job.release import violations
from synbench.tasks.benchmark import BenchmarkTask


def pyes_pno(node: dict) -> PYesPNoOptions:
    """The filter's options as the core builds them: typed on the schema, checked."""
    return schema.typed(PYesPNoOptions, node, "filter")


def test_keep_top_within_each_label_set_and_overall() -> None:
    scores = np.array([0.9, -0.5, 0.1, 0.8, 0.3, -0.9])
    labels = [("a",), ("a",), ("a",), ("b",), ("b",), ("b",)]
    assert keep_top(scores, labels, 0.5, per_label=True).tolist() == [0, 2, 3, 4]  # ceil(1.5) = 2 per label
    assert keep_top(scores, labels, 0.5, per_label=False).tolist() == [0, 3, 4]
    assert keep_top(scores, labels, 1.0, per_label=True).tolist() == list(range(6))


def test_config_is_checked() -> None:
    with pytest.raises(ConfigError, match="keep_share"):
        pyes_pno({"model": {}, "keep_share": 0})
    with pytest.raises(ConfigError, match=r"\{text\}"):
        pyes_pno({"model": {}, "prompt": "Is it good?"})
    with pytest.raises(PluginError, match="unknown filter plugin 'bleach'"):
        apply_filter({"_plugin_": "bleach"}, Corpus.build([], [], []), Path("."), {}, lambda c: [])


DOMAINS = {
    "drugreview": "medical",
    "drugreview_condition": "medical",
    "drugreview_condition6": "medical",
    "drugreview_multilabel": "medical",
    "psytar": "medical",
    "n2c2_2008": "medical",
    "mimic": "medical",
    "hoc": "biomedical",
    "dmsafn": "financial",
    "lc37fnd": "financial",
    "zstfns": "financial",
    "asylax": "legal",
    "eurlex": "legal",
}


@pytest.mark.parametrize("dataset", sorted(DOMAINS))
def test_the_prompt_names_the_dataset_domain(dataset: str) -> None:
    """Each dataset config names its domain and the filter prompt asks about that domain (DMSAFN is not medical)."""
    from omegaconf import OmegaConf

    cfg = compose_config([f"dataset={dataset}", "filter=pyes_pno"])
    node = OmegaConf.to_container(cfg.filter, resolve=True)
    assert cfg.dataset.domain == DOMAINS[dataset] and node["domain"] == DOMAINS[dataset]
    assert pyes_pno({k: v for k, v in node.items() if k != "_plugin_"}).domain == DOMAINS[dataset]


def test_every_dataset_config_but_files_names_its_domain() -> None:
    """A new dataset config must say what its documents are, or the filter would ask a medical question of them."""
    from conftest import REPO

    assert {p.stem for p in (REPO / "conf" / "dataset").glob("*.yaml")} == {*DOMAINS, "files"}


def test_a_dataset_without_a_domain_is_a_clear_error() -> None:
    from omegaconf import OmegaConf

    node = OmegaConf.to_container(compose_config(["dataset=files", "filter=pyes_pno"]).filter, resolve=True)
    node.pop("_plugin_")
    with pytest.raises(ConfigError, match=r"filter.domain is not set.*conf/dataset/<name>.yaml"):
        pyes_pno(node)
    assert pyes_pno({**node, "domain": "legal"}).domain == "legal"


def test_scores_are_probability_differences_from_the_lm(tiny_model: dict[str, Any]) -> None:
    from synbench.lm.backends import load_shared
    from synbench.lm.generation import chat_prompt
    from synbench.lm.scoring import next_token_logprobs

    loaded = load_shared(json.dumps(tiny_model, sort_keys=True), "cpu")
    tok = loaded.tokenizer
    assert (
        single_token_ids(tok, ["y", "yes"]) == tok("y", add_special_tokens=False)["input_ids"]
    )  # bytes: only "y" is one token
    synthetic = Corpus.build(
        ["the tablet helped", "zzzz", "my pain eased"], [["pos"], ["neg"], ["pos"]], ["neg", "pos"]
    )
    node = {
        "model": tiny_model,
        "prompt": "{text} Realistic {domain} text about {label}?",
        "batch_size": 2,
        "domain": "medical",
    }
    scores = pyes_pno_scores(pyes_pno({**node, "yes_answers": ["y", "Y"], "no_answers": ["n", "N"]}), synthetic)
    prompt = chat_prompt(tok, "zzzz Realistic medical text about neg?", None)
    ids = tok(["y", "Y", "n", "N"], add_special_tokens=False)["input_ids"]
    [[py, pY, pn, pN]] = np.exp(
        next_token_logprobs(loaded.model, tok, [prompt], [i[0] for i in ids], batch_size=1, max_length=384)
    )
    assert scores[1] == pytest.approx(py + pY - pn - pN, abs=1e-6) and (np.abs(scores) <= 1).all()
    # the byte-level model has no one-token "yes": the filter says so instead of scoring nonsense
    with pytest.raises(ConfigError, match="single-token"):
        pyes_pno_scores(pyes_pno(node), synthetic)


def test_benchmark_with_the_filter_writes_both_rows(
    tmp_path: Path, tiny_dataset: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`filter=pyes_pno` on a real job: utility and utility_filtered, what was kept, no private data used."""
    from synbench.filters import pyes_pno
    from synbench.generators.copy import CopyGenerator
    from synbench.tasks import benchmark

    seen: list[Corpus] = []

    def fake_scores(cfg: PYesPNoOptions, synthetic: Corpus) -> np.ndarray:  # the LM call is tested with SmolLM2 (slow)
        seen.append(synthetic)
        return np.linspace(-1, 1, len(synthetic))

    monkeypatch.setattr(pyes_pno, "pyes_pno_scores", fake_scores)
    cfg = compose_config(
        [
            *tiny_dataset,
            "generator=copy",
            "eps=inf",
            "metrics=[utility,length]",
            "tracking=none",
            "filter=pyes_pno",
            "filter.keep_share=0.5",
            "dataset.domain=legal",
            f"output_root={tmp_path}",
            f"cache_dir={tmp_path / 'cache'}",
        ]
    )
    from synbench.job.spec import JobConfig

    results = benchmark.run(JobConfig.from_config(cfg), tmp_path)
    assert results["filter"] == {
        **results["filter"],
        "name": "pyes_pno",
        "n_before": 30,
        "n_kept": 16,  # ceil(7.5) per label
        "private_data_used": False,
        "domain": "legal",
    }
    assert "f1_micro" in results["utility"] and "f1_micro" in results["utility_filtered"]
    assert set(results["fidelity_filtered"]) == set(results["fidelity"])
    assert results["filter"]["mean_score_kept"] > results["filter"]["mean_score"]
    assert len(seen) == 1 and np.load(tmp_path / "filter_scores.npy").shape == (30,)
    assert not violations(results, CopyGenerator, BenchmarkTask)
    from synbench.report.build import write_report

    text = write_report(tmp_path, 0.95)[0].read_text()
    assert "Post-hoc filter" in text and "pyes_pno (kept 16 of 30)" in text


@pytest.mark.slow
def test_smollm2_scores_are_probability_differences_that_vary() -> None:
    """With SmolLM2 the scores lie in [-1, 1] and differ between documents.

    Measured while writing this test: SmolLM2-135M (4-bit) scored a realistic review (-0.18) BELOW gibberish (-0.08),
    so with the embedded model the filter is no quality judge (docs/filter.md says so); larger `model=` choices are.
    """
    from omegaconf import OmegaConf

    model = OmegaConf.to_container(compose_config([]).model, resolve=True)
    cfg = pyes_pno({"model": model, "domain": "medical"})  # the schema checks the prompt's {domain} when built
    synthetic = Corpus.build(
        ["I took this tablet for my migraines and the pain eased within an hour.", "qz vlorp 7 7 7 ;; xx blenk blenk"],
        [["positive"], ["positive"]],
        ["positive"],
    )
    scores = pyes_pno_scores(cfg, synthetic)
    assert -1 <= scores.min() and scores.max() <= 1 and abs(scores[0] - scores[1]) > 1e-4
