"""Canaries, repeated audits, and an audit that must catch a generator lying about its epsilon."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import compose_config
from leaky_generator import LeakyGenerator
from synbench.audit import AuditOptions, make_design
from synbench.audit.canaries import make_canaries, public_words
from synbench.core import registry, schema
from synbench.core.base import DatasetLoader, Generator
from synbench.core.corpus import Corpus
from synbench.job.release import violations
from synbench.job.spec import JobConfig
from synbench.tasks.audit import AuditTask
from test_audit import audit_data  # noqa: F401  (the tiny dataset fixture)


def canary_rule(**overrides: Any) -> AuditOptions:
    """Three short canaries (4 prefix words, 6 suffix words) beside the outlier targets."""
    return AuditOptions(**{"n_canaries": 3, "canary_prefix_words": 4, "canary_suffix_words": 6, **overrides})


def test_canary_is_an_aux_prefix_then_public_words_with_a_known_label() -> None:
    aux = Corpus.build([f"review number {i} says the tablet helped a lot" for i in range(5)], [["a"]] * 5, ["a", "b"])
    canaries = make_canaries(aux, canary_rule(canary_repeats=2), seed=1)
    assert len(canaries) == 6 and len(set(canaries.ids)) == 6
    vocabulary = set(public_words())
    for text, labels in zip(canaries.texts[::2], canaries.labels[::2]):
        words = text.split()
        assert len(words) == 10 and " ".join(words[:4]) in {" ".join(t.split()[:4]) for t in aux.texts}
        assert set(words[4:]) <= vocabulary and labels[0] in ("a", "b")
    assert canaries.texts[0::2] == canaries.texts[1::2]  # the copies of one canary are identical
    assert make_canaries(aux, canary_rule(), seed=1).texts == canaries.texts[::2]  # seeded


def test_design_inserts_every_copy_of_a_canary() -> None:
    design = make_design(100, np.arange(5), canary_rule(n_subsets=4, canary_repeats=2), seed=0)
    assert list(design.kinds) == [0] * 5 + [1] * 3 and list(design.targets[5:]) == [100, 102, 104]
    for k in range(4):
        held = set(design.private_set(k).tolist())
        for t, position in enumerate(design.targets[5:], start=5):
            assert ({position, position + 1} <= held) == design.inclusion[k, t]
            assert (position in held) == (position + 1 in held)
    assert design.planned_private_size() == int(design.base[0].sum()) + (5 + 3 * 2) // 2


@pytest.fixture
def leaky(monkeypatch: pytest.MonkeyPatch) -> None:
    """`generator=...` builds the lying generator, whatever the config names."""
    create = registry.create
    monkeypatch.setattr(
        registry,
        "create",
        lambda kind, node, **extra: LeakyGenerator() if kind is Generator else create(kind, node, **extra),
    )


def test_one_run_audit_catches_a_generator_that_leaks_half_its_documents(
    tmp_path: Path, audit_data: tuple[list[str], list[str]], leaky: None
) -> None:
    from synbench.tasks import audit as audit_task

    overrides, _ = audit_data
    cfg = compose_config(
        [*overrides, "generator=copy", "eps=1", "audit.mode=one_run", "audit.targets=canaries", "audit.n_canaries=300"]
    )
    results = audit_task.run(JobConfig.from_config(cfg), tmp_path)
    assert results["status"] == "complete" and results["epsilon_spent"] == 1.0
    assert results["audit"]["eps_emp_lower"] > 1.0  # a 95% bound above the claimed eps: the lie is caught
    assert results["audit"]["gdp_mu_lower"] > 0


@pytest.mark.slow
def test_repeated_k_subset_audit_reports_intervals_and_block_bootstrap(
    tmp_path: Path, audit_data: tuple[list[str], list[str]]
) -> None:
    from synbench.tasks import audit as audit_task

    overrides, _ = audit_data
    cfg = compose_config(
        [*overrides, "generator=copy", "eps=inf", "audit.n_subsets=4", "audit.repeats=2", "audit.bootstrap_samples=50"]
    )
    results = audit_task.run(JobConfig.from_config(cfg), tmp_path)
    audit = results["audit"]
    assert audit["repeats"] == 2 and results["generation"]["n_runs"] == 8
    for key in ("auc", "eps_emp_lower", "gdp_mu_lower"):
        assert audit[f"{key}_ci_low"] <= audit[f"{key}_mean"] <= audit[f"{key}_ci_high"]
    assert audit["auc_block_ci_low"] <= audit["auc"] + 1e-9 and audit["block_to_trial_width"] > 0
    assert (tmp_path / "audit_design_rep1.npz").is_file() and len(
        list((tmp_path / "runs").glob("rep1_run_*.json"))
    ) == 4
    assert not violations(json.loads((tmp_path / "results.json").read_text()), None, AuditTask)


def test_report_detail_table_has_a_row_per_target_kind_and_the_repeats_interval(tmp_path: Path) -> None:
    from synbench.report.audit import audit_detail_table, audit_table
    from synbench.report.load import load_results

    audit = {
        "mode": "one_run",
        "auc": 0.9,
        "eps_emp": 1.25,
        "eps_emp_lower_holdout": 1.5,
        "eps_emp_lower_bonferroni": 1.2,
        "eps_emp_lower": 1.5,
        "gdp_mu_lower": 0.7,
        "canary_repeats": 1,
        "repeats": 3,
        "eps_emp_lower_mean": 1.4,
        "eps_emp_lower_ci_low": 1.1,
        "eps_emp_lower_ci_high": 1.7,
        "outliers.auc": 0.8,
        "outliers.eps_emp": 0.5,
        "outliers.eps_emp_lower": 0.4,
        "outliers.gdp_mu_lower": 0.2,
        "canaries.auc": 0.95,
        "canaries.eps_emp": 1.2,
        "canaries.eps_emp_lower": 1.6,
        "canaries.gdp_mu_lower": 0.8,
    }
    for name, repeats in (("a", 1), ("b", 2)):
        job = tmp_path / "audit" / name
        job.mkdir(parents=True)
        (job / "results.json").write_text(
            json.dumps(
                {
                    "task": "audit",
                    "dataset": "d",
                    "generator": name,
                    "epsilon": 1.0,
                    "seed": 0,
                    "status": "complete",
                    "audit": audit | {"canary_repeats": repeats},
                }
            )
        )
    frame = load_results(tmp_path)
    table = audit_detail_table(frame, 0.95)
    rows = {(r[1].text, r[4].text): [c.text for c in r] for r in table.rows}
    assert rows[("a", "all")][6:] == [
        "0.900",
        "1.250",
        "1.500",
        "1.200",
        "0.700",
        "1.500",
        "– (not measured)",  # eps_ceiling, claim ε, p-value: results written before the audit reported them
        "– (not measured)",
        "– (not measured)",
        "– (not measured)",  # the pooled-ROC bound: k_subsets only
        "1.40 [1.10, 1.70] (3 audits)",
    ]
    lower = table.columns.index("eps_emp_lower")
    assert rows[("a", "canaries")][6:9] == ["0.950", "1.200", "—"] and rows[("a", "canaries")][lower] == "1.600"
    assert rows[("a", "outliers")][lower] == "0.400"
    verdicts = {r[1].text: r[-1].text for r in audit_table(frame, 0.95).rows}
    # canary groups without per-kind p-values (older results) are not tested rather than read as one claim
    assert verdicts["a"].startswith("VIOLATION") and verdicts["b"].startswith("not tested")


def test_memorise_experiment_trains_on_whole_canaries() -> None:
    """`+experiment=audit_memorise` must fit every canary, label prefix and EOS included, in the training window:
    a canary cut at max_seq_len would lose the random suffix words the attacks look for in the synthetic text."""
    from synbench.generators.dpgen.data import control_code
    from synbench.lm.models import load_causal_lm

    cfg = compose_config(["+experiment=audit_memorise"])
    audit, generator = cfg.audit, cfg.generator
    assert (audit.mode, audit.targets, float(cfg.eps)) == ("one_run", "canaries", float("inf"))
    assert set(cfg.attack) == {"ngram", "similarity"}
    splits = registry.create(DatasetLoader, cfg.dataset).load(0)
    canaries = make_canaries(splits.train, schema.typed(AuditOptions, audit, "audit"), seed=0)
    tokenizer = load_causal_lm(cfg.model).tokenizer
    lengths = [
        len(tokenizer(control_code(labels, generator.control_code) + text, add_special_tokens=False)["input_ids"]) + 1
        for text, labels in zip(canaries.texts, canaries.labels)
    ]  # label prefix, canary, EOS: what DP-Gen trains on
    assert max(lengths) <= generator.max_seq_len
