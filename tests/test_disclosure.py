"""The disclosure check (synbench.audit.disclosure): copies of private documents counted against unseen ones."""

from __future__ import annotations

import importlib.util
import json
import math
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import FIXTURES, command_overrides, compose_config, run_cli
from synbench.audit.config import AuditConfig, DisclosureConfig
from synbench.audit.design import make_design
from synbench.audit.disclosure import (
    audit_groups,
    disclosure_counts,
    disclosure_test,
    encode,
    normalised_words,
    reproduced,
    shared_runs,
)
from synbench.core import registry, schema
from synbench.core.base import DatasetLoader, Splits
from synbench.core.errors import ConfigError
from synbench.job.spec import JobConfig
from synbench.testing.corpora import public_corpus

LEAKY = FIXTURES / "command" / "leaky_generator.py"
PARAPHRASER = FIXTURES / "command" / "paraphrasing_copier.py"
HONEST = FIXTURES / "command" / "honest_generator.py"
RULE = DisclosureConfig()


def paraphraser() -> Any:
    """The paraphrasing copier's module (tests/fixtures/command/paraphrasing_copier.py), for its `paraphrase`."""
    spec = importlib.util.spec_from_file_location("paraphrasing_copier", PARAPHRASER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def default_splits() -> Splits:
    """The default dataset's splits (the demo's six-condition drug reviews)."""
    config = JobConfig.from_config(compose_config())
    return registry.create(DatasetLoader, config.dataset).load(0)


def test_counts_are_exact_on_a_hand_built_case() -> None:
    inside = "the tablet made my migraine fade within an hour every single time"  # 13 words
    spread = "after three weeks on this dose my sleep came back and the nightmares stopped completely"  # 15
    private = [
        inside,
        "Works great",  # 2 words: reappears only as a whole run
        spread,
        "nothing of this one is released by the generator at any point",
        "shared text sits in both groups of documents here today",  # also unseen: left out of both
    ]
    unseen = [
        "an unseen review that nobody released at all",
        "the second unseen review shares eight words with the release verbatim here",
        "SHARED text sits in both groups of documents, here today!",
    ]
    swapped = " ".join(w if i % 2 == 0 else "zebra" for i, w in enumerate(spread.split()))
    released = [
        "Ｔｈｅ TABLET made my migraine — fade within an hour, every single time. Wow.",  # NFKC, case, punctuation
        "it works great for me",
        swapped,
        "this line shares eight words with the release verbatim and more",
    ]
    counts = disclosure_counts(private, unseen, released, RULE)
    assert counts == {"private_reappear": 3, "n_private": 4, "unseen_reappear": 1, "n_unseen": 2, "n_shared": 2}
    # the every-other-word copy keeps no two consecutive words: only the in-order rule finds it
    private_docs, _, release = encode(*map(normalised_words, (private, unseen, released)))
    by_run = shared_runs([private_docs, release], RULE.run_words)[0][:, 1]
    assert by_run.tolist() == [True, True, False, False, False]
    assert reproduced(private_docs, release, by_run, RULE).tolist() == [True, True, True, False, False]


def naive_reproduced(query: list[str], others: list[list[str]], rule: DisclosureConfig) -> bool:
    """The rule written out: a run of min(n, run_words) consecutive words inside one other document, or (n at least
    run_words) an LCS of at least min_share times the longer document's length."""

    def runs(doc: list[str], width: int) -> set[tuple[str, ...]]:
        return {tuple(doc[i : i + width]) for i in range(len(doc) - width + 1)}

    def lcs(a: list[str], b: list[str]) -> int:
        table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
        for i, x in enumerate(a):
            for j, y in enumerate(b):
                table[i + 1][j + 1] = table[i][j] + 1 if x == y else max(table[i][j + 1], table[i + 1][j])
        return table[-1][-1]

    if not query:
        return False
    width = min(len(query), rule.run_words)
    if any(runs(query, width) & runs(other, width) for other in others):
        return True
    return len(query) >= rule.run_words and any(
        lcs(query, other) >= max(1, math.ceil(rule.min_share * max(len(query), len(other)) - 1e-9)) for other in others
    )


@pytest.mark.parametrize("rule", [DisclosureConfig(run_words=4, min_share=0.45), DisclosureConfig(run_words=6)])
def test_the_array_rule_matches_the_rule_written_out(rule: DisclosureConfig) -> None:
    """Random documents over six words, so that runs and long common subsequences occur; empty ones included."""
    rng = random.Random(5)
    vocabulary = "a b c d e f".split()
    groups = [[[rng.choice(vocabulary) for _ in range(rng.randrange(0, 16))] for _ in range(40)] for _ in range(3)]
    encoded = encode(*groups)
    runs = shared_runs(encoded, rule.run_words)
    for q in range(3):
        for other in range(3):
            if other == q:
                continue
            got = reproduced(encoded[q], encoded[other], runs[q][:, other], rule)
            expected = [naive_reproduced(doc, groups[other], rule) for doc in groups[q]]
            assert got.tolist() == expected, (q, other)
            assert 0 < sum(expected) < len(expected)  # both answers occur


def test_the_exact_test_is_fishers_one_sided() -> None:
    found = disclosure_test(
        {"private_reappear": 5, "n_private": 5, "unseen_reappear": 0, "n_unseen": 5, "n_shared": 0}, 0.05, RULE
    )
    assert found["p_value"] == pytest.approx(1 / 252) and found["flagged"] is True  # 1 / C(10, 5)
    assert found["rule"] == "8-word run, or LCS >= 0.45 of the longer (NFKC lower-cased words)"
    same = {"private_reappear": 2, "n_private": 40, "unseen_reappear": 2, "n_unseen": 40, "n_shared": 0}
    assert 0.5 < disclosure_test(same, 0.05, RULE)["p_value"] and not disclosure_test(same, 0.05, RULE)["flagged"]
    nothing = {"private_reappear": 0, "n_private": 0, "unseen_reappear": 0, "n_unseen": 3, "n_shared": 4}
    assert disclosure_test(nothing, 0.05, RULE)["p_value"] == 1.0


def test_copiers_are_flagged_and_unrelated_real_text_is_not(default_splits: Splits) -> None:
    private, unseen = list(default_splits.train.texts), list(default_splits.eval.texts)
    rng = random.Random(0)
    paraphrased = [paraphraser().paraphrase(text, rng) for text in private]
    for released in (private, paraphrased):
        found = disclosure_test(disclosure_counts(private, unseen, released, RULE), 0.05, RULE)
        assert found["flagged"] and found["private_reappear"] >= 0.95 * found["n_private"], found
        assert found["unseen_reappear"] <= 0.02 * found["n_unseen"], found
    # the paraphrase leaves no 8-word run of any document of 8 words or more: the in-order rule catches it
    private_docs, release = encode(normalised_words(private), normalised_words(paraphrased))
    long_enough = private_docs.lengths >= RULE.run_words
    assert not shared_runs([private_docs, release], RULE.run_words)[0][long_enough, 1].any()
    # an honest release: real reviews the check's private half never held, and public text
    half = len(private) // 2
    for released in (private[half:], list(public_corpus(per_label=24).texts)):
        found = disclosure_test(disclosure_counts(private[:half], unseen, released, RULE), 0.05, RULE)
        assert not found["flagged"], found
        assert found["private_reappear"] <= 0.05 * found["n_private"], found


def test_the_audit_groups_split_the_pool_and_count_a_canary_once() -> None:
    design = make_design(30, np.array([2, 5, 7]), mode="one_run", seed=3, n_canaries=4, canary_repeats=3)
    pool_size = 30 + 4 * 3
    private, unseen = audit_groups(design, pool_size, 0)
    first_copies = design.targets
    later_copies = {int(t) + c for t, n in zip(design.targets, design.copies) for c in range(1, int(n))}
    assert not set(private) & set(unseen)
    assert set(private) | set(unseen) == set(range(pool_size)) - later_copies
    assert set(private) == set(design.private_set(0)) - later_copies
    assert set(first_copies[design.inclusion[0]]) <= set(private) and set(design.aux) <= set(unseen)


def test_the_rule_is_typed_and_checked_in_both_tasks() -> None:
    benchmark = compose_config(["task.disclosure.run_words=12", "task.disclosure.enabled=no"]).task
    assert benchmark.disclosure.run_words == 12 and benchmark.disclosure.enabled is False
    audit = schema.typed(AuditConfig, compose_config(["task=audit", "audit.disclosure.min_share=0.6"]).audit, "audit")
    assert audit.disclosure == DisclosureConfig(min_share=0.6)
    with pytest.raises(ConfigError, match=r"disclosure.min_share=1.5 must lie in \(0, 1\] \(task.disclosure in"):
        schema.typed(AuditConfig, {"disclosure": {"min_share": 1.5}}, "audit")
    with pytest.raises(ConfigError, match="disclosure.run_words=0 must be a positive whole number"):
        DisclosureConfig(run_words=0)


def sweep_results(tmp_path: Path, task: str) -> dict[float, dict[str, Any]]:
    """Each job's results.json of the sweep under `tmp_path`, by its epsilon."""
    paths = (tmp_path / "out" / "default" / task).glob("*/results.json")
    return {float(r["epsilon"]): r for r in (json.loads(p.read_text()) for p in paths)}


@pytest.mark.parametrize("script", [LEAKY, PARAPHRASER])
def test_a_copier_is_flagged_by_the_benchmark_at_eps_4_and_8(tmp_path: Path, script: Path) -> None:
    """Through the CLI on the default dataset: a program that copies (or paraphrases) its private documents and
    claims eps=4 or 8 is flagged in results.json, which names the section an operator's diagnostic."""
    run_cli(["-m", *command_overrides(script, tmp_path), "metrics=[]", "eps=4,8"], cwd=tmp_path)
    results = sweep_results(tmp_path, "benchmark")
    assert sorted(results) == [4.0, 8.0]
    for found in results.values():
        disclosure = found["disclosure"]
        assert disclosure["flagged"] and disclosure["p_value"] < 1e-20, disclosure
        assert disclosure["private_reappear"] >= 0.95 * disclosure["n_private"] > 0, disclosure
        keys = {f"disclosure.{k}" for k in disclosure}
        assert keys <= set(found["non_dp_outputs"]) and keys <= set(found["diagnostic_outputs"])


def test_an_honest_program_is_not_flagged_and_the_check_can_be_turned_off(tmp_path: Path) -> None:
    from synbench.tasks import benchmark

    overrides = [*command_overrides(HONEST, tmp_path), "metrics=[]", "eps=4"]
    found = benchmark.run(JobConfig.from_config(compose_config(overrides)), tmp_path / "honest")["disclosure"]
    assert not found["flagged"] and found["n_private"] > 200 and found["n_unseen"] > 100, found
    off = compose_config([*overrides, "task.disclosure.enabled=false"])
    results = benchmark.run(JobConfig.from_config(off), tmp_path / "off")
    assert "disclosure" not in results and not results["non_dp_outputs"]


def test_a_copier_is_flagged_by_the_one_run_audit_at_eps_4_and_8(tmp_path: Path) -> None:
    """Whatever the audit's bound can certify (its ceiling lies below eps=4 at this size: inconclusive, never a pass),
    the check flags the copy."""
    small = ["task=audit", "audit.mode=one_run", "audit.targets=canaries", "audit.n_canaries=50"]
    run_cli(["-m", *command_overrides(LEAKY, tmp_path), *small, "eps=4,8"], cwd=tmp_path)
    results = sweep_results(tmp_path, "audit")
    assert sorted(results) == [4.0, 8.0]
    for found in results.values():
        disclosure = found["disclosure"]
        assert disclosure["flagged"] and disclosure["private_reappear"] == disclosure["n_private"] > 50, disclosure
        assert disclosure["unseen_reappear"] == 0 and disclosure["n_shared"] > 0, disclosure  # canaries and sources
        assert found["non_dp_outputs"] == sorted(f"disclosure.{k}" for k in disclosure)
        # the audit itself never passes it: at 50 canaries its ceiling lies below both claims (issue 50)
        audit = found["audit"]
        assert audit["verdict"] == "inconclusive" and audit["eps_ceiling"] <= found["epsilon"], audit
        assert audit["verdict_line"].startswith("inconclusive: ") and "ceiling" in audit["verdict_line"]
