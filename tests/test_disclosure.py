"""The disclosure check (synbench.audit.disclosure): copies of private documents counted against unseen ones."""

from __future__ import annotations

import importlib.util
import itertools
import json
import math
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import FIXTURES, command_overrides, compose_config, run_cli
from synbench.audit.canaries import canary_sources, make_canaries
from synbench.audit.config import AuditOptions, DisclosureOptions
from synbench.audit.design import make_design
from synbench.audit.disclosure import (
    BELOW_ATTRIBUTION,
    FLAGGED,
    NOT_CHECKED,
    NOT_FLAGGED,
    POOL,
    SOURCES,
    TARGETS,
    Documents,
    Strata,
    audit_groups,
    count_tables,
    disclosure_counts,
    disclosure_test,
    encode,
    min_flaggable,
    normalised_words,
    one_stratum,
    reappearing,
    tail_probability,
)
from synbench.core import registry, schema
from synbench.core.base import DatasetLoader, Splits
from synbench.core.corpus import Corpus
from synbench.core.errors import ConfigError
from synbench.job.record import Disclosure
from synbench.job.spec import JobConfig
from synbench.report.summary import disclosure_line
from synbench.testing.corpora import public_corpus, templated_notes

LEAKY = FIXTURES / "command" / "leaky_generator.py"
PARAPHRASER = FIXTURES / "command" / "paraphrasing_copier.py"
HONEST = FIXTURES / "command" / "honest_generator.py"
RULE = DisclosureOptions()


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


def all_pairs(queries: Documents, release: Documents, which: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every (query, released document) pair: the in-order rule without its MinHash candidate search."""
    released = np.flatnonzero(release.lengths > 0)
    return np.repeat(which, len(released)), np.tile(released, len(which))


def no_pairs(queries: Documents, release: Documents, which: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """No candidate: the run rule alone."""
    return np.zeros(0, np.int64), np.zeros(0, np.int64)


def test_counts_are_exact_on_a_hand_built_case() -> None:
    inside = "the tablet made my migraine fade within an hour every single time"  # 13 words
    spread = "after three weeks on this dose my sleep came back and the nightmares stopped completely"  # 15
    private = [
        inside,
        "Works great",  # 2 words: reappears only as a whole run
        spread,
        "nothing of this one is released by the generator at any point",
        "shared text sits in both groups of documents here today",  # also unseen: no text of its own
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
    assert counts == {
        "private_reappear": 3,
        "n_private": 4,
        "unseen_reappear": 1,
        "n_unseen": 2,
        "private_uncheckable": 1,
        "unseen_uncheckable": 1,
        "strata": {"all": {"private_reappear": 3, "n_private": 4, "unseen_reappear": 1, "n_unseen": 2}},
    }
    # the every-other-word copy keeps no two consecutive words: only the in-order rule finds it
    pool, release = encode(normalised_words(private + unseen), normalised_words(released))
    checkable, by_run = reappearing(pool, release, RULE, no_pairs)
    assert by_run.tolist() == [True, True, False, False, False, False, False, False]  # 7 shared words: in order
    assert reappearing(pool, release, RULE)[1].tolist() == [True, True, True, False, False, False, True, False]
    assert checkable.tolist() == [True, True, True, True, False, True, True, False]


def naive_reappearing(
    pool: list[list[str]], released: list[list[str]], rule: DisclosureOptions
) -> tuple[list[bool], list[bool]]:
    """The rule written out, per pooled document: (checkable, reappears). A run of run_words words is shared when
    two or more pooled documents hold it; a position is the document's own when no shared run covers it. Checkable:
    a run of run_words own positions (a shorter document: its whole text, no other pooled document holding it as
    consecutive words); reappears: a released document holds such a run, or (at least run_words own content words:
    words fewer than max(3, 5% of all documents) hold) one released document's content words outside shared runs
    hold, in order, min_share of the longer of the two."""
    w = rule.run_words

    def runs(doc: list[str], width: int) -> list[tuple[str, ...]]:
        return [tuple(doc[i : i + width]) for i in range(len(doc) - width + 1)]

    def holders(run: tuple[str, ...]) -> int:
        return sum(run in set(runs(other, len(run))) for other in pool)

    def own(doc: list[str]) -> list[bool]:
        keep = [True] * len(doc)
        for i, run in enumerate(runs(doc, w)):
            if holders(run) >= 2:
                keep[i : i + w] = [False] * w
        return keep

    def lcs(a: list[str], b: list[str]) -> int:
        table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
        for i, x in enumerate(a):
            for j, y in enumerate(b):
                table[i + 1][j + 1] = table[i][j] + 1 if x == y else max(table[i][j + 1], table[i + 1][j])
        return table[-1][-1]

    everyone = pool + released
    frequent = {
        word
        for word in set().union(*map(set, everyone))
        if sum(word in doc for doc in everyone) >= max(3, 0.05 * len(everyone))
    }
    shared_runs = {run for doc in pool for run in runs(doc, w) if holders(run) >= 2}

    def released_content(doc: list[str]) -> list[str]:
        keep = [True] * len(doc)
        for i, run in enumerate(runs(doc, w)):
            if run in shared_runs:
                keep[i : i + w] = [False] * w
        return [word for word, k in zip(doc, keep) if k and word not in frequent]

    held = {run for doc in released for width in range(1, w + 1) for run in runs(doc, width)}
    checkable, found = [], []
    for doc in pool:
        if 0 < len(doc) < w:
            mine = [tuple(doc)] if holders(tuple(doc)) == 1 else []
        else:
            keep = own(doc)
            mine = [run for i, run in enumerate(runs(doc, w)) if all(keep[i : i + w])]
        content = [word for word, k in zip(doc, own(doc)) if k and word not in frequent] if len(doc) >= w else []
        in_order = len(content) >= w and any(
            lcs(content, other) >= max(1, math.ceil(rule.min_share * max(len(content), len(other)) - 1e-9))
            for other in map(released_content, released)
        )
        checkable.append(bool(mine))
        found.append(bool(mine) and (any(run in held for run in mine) or in_order))
    return checkable, found


@pytest.mark.parametrize("rule", [DisclosureOptions(run_words=3, min_share=0.3), DisclosureOptions(run_words=4)])
def test_the_array_rule_matches_the_rule_written_out(rule: DisclosureOptions) -> None:
    """Random documents over a few words, so that shared runs, own text and long common subsequences all occur; empty
    ones included. The release holds copies, swapped copies and new text."""
    rng = random.Random(5)
    vocabulary = [f"w{i}" for i in range(14)] + [f"rare{i}" for i in range(60)]

    def document() -> list[str]:
        return [rng.choice(vocabulary[: 14 if rng.random() < 0.5 else None]) for _ in range(rng.randrange(0, 16))]

    pool = [document() for _ in range(50)]
    released = [document() for _ in range(20)]
    released += [list(doc) for doc in pool[:8]] + [[x if i % 2 else "w0" for i, x in enumerate(d)] for d in pool[8:16]]
    expected = naive_reappearing(pool, released, rule)
    checkable, found = reappearing(*encode(pool, released), rule, all_pairs)
    assert (checkable.tolist(), found.tolist()) == expected
    assert 0 < sum(expected[0]) < len(pool) and 0 < sum(expected[1]) < sum(expected[0])  # every answer occurs


def test_the_exact_test_is_fishers_one_sided_and_sums_strata_exactly() -> None:
    found = disclosure_test({"private_reappear": 5, "n_private": 5, "unseen_reappear": 0, "n_unseen": 5}, 0.05, RULE)
    assert found["p_value"] == pytest.approx(1 / 252) and found["flagged"] is True  # 1 / C(10, 5)
    assert found["status"] == FLAGGED and found["test"] == "Fisher's exact test, one-sided"
    same = {"private_reappear": 2, "n_private": 40, "unseen_reappear": 2, "n_unseen": 40}
    assert 0.5 < disclosure_test(same, 0.05, RULE)["p_value"] and not disclosure_test(same, 0.05, RULE)["flagged"]
    # two strata: the sum's tail by enumerating every assignment that keeps each stratum's margins
    tables = [
        {"private_reappear": 2, "n_private": 3, "unseen_reappear": 1, "n_unseen": 4},
        {"private_reappear": 2, "n_private": 2, "unseen_reappear": 1, "n_unseen": 5},
    ]
    draws = []
    for t in tables:
        n, total, reappear = (
            t["n_private"],
            t["n_private"] + t["n_unseen"],
            t["private_reappear"] + t["unseen_reappear"],
        )
        draws.append([sum(c < reappear for c in chosen) for chosen in itertools.combinations(range(total), n)])
    tail = np.mean([a + b >= 4 for a, b in itertools.product(*draws)])
    assert tail_probability(tables) == pytest.approx(tail)
    stratified = disclosure_test(
        {**{k: sum(t[k] for t in tables) for k in tables[0]}, "strata": dict(zip("ab", tables))}, 0.05, RULE
    )
    assert stratified["p_value"] == pytest.approx(tail) and stratified["test"].startswith("exact test stratified")


def test_the_smallest_flaggable_count_and_a_count_below_it_said_in_words() -> None:
    """Issue 56: 6 of 229 private documents verbatim, 0 of 146 unseen, p = 0.0505: the test flags from 7 up."""
    counts = {"private_reappear": 6, "n_private": 229, "unseen_reappear": 0, "n_unseen": 146}
    found = disclosure_test(counts, 0.05, RULE)
    assert found["p_value"] == pytest.approx(0.0505, abs=5e-4) and found["min_flaggable"] == 7
    assert found["status"] == BELOW_ATTRIBUTION and found["flagged"] is False
    line = disclosure_line(Disclosure.of(found))
    assert line is not None and "not flagged" not in line
    assert line.endswith(
        "6 of 229 private documents reappear (near-)verbatim; 0 of 146 unseen ones do: below what "
        "this test can attribute (it flags from 7 documents up)"[-120:]
    )
    assert disclosure_test({**counts, "private_reappear": 7}, 0.05, RULE)["status"] == FLAGGED
    assert disclosure_test({**counts, "private_reappear": 0}, 0.05, RULE)["status"] == NOT_FLAGGED
    # strata: the worst place for the documents decides (all in the stratum whose private share is largest)
    tables = [{"n_private": 50, "n_unseen": 50}, {"n_private": 100, "n_unseen": 200}]
    assert min_flaggable(tables, 0.05) == 5  # (1/2)^4 > 0.05 > (1/2)^5; the 1/3 stratum alone would need 3
    assert min_flaggable([{"n_private": 100, "n_unseen": 200}], 0.05) == 3


@pytest.mark.parametrize("private, unseen", [([], ["an unseen document of nine words in it"]), (["a private one"], [])])
def test_an_empty_group_could_not_be_checked(private: list[str], unseen: list[str]) -> None:
    found = disclosure_test(disclosure_counts(private, unseen, private + unseen, RULE), 0.05, RULE)
    assert found["status"] == NOT_CHECKED and found["flagged"] is False and found["min_flaggable"] is None
    line = disclosure_line(Disclosure.of(found))
    assert line is not None and "could not check" in line and "not flagged" not in line


NOTE_SHAPE = {"sections": 4, "boilerplate_words": 30, "fill_words": 20}  # notes of 200 words, 60% boilerplate


@pytest.fixture(scope="module")
def notes() -> tuple[list[str], list[str], list[str]]:
    """MIMIC-like notes sharing boilerplate: 200 private, 200 unseen, 200 fresh ones of the same templates."""
    private, unseen, fresh = (templated_notes(200, seed, **NOTE_SHAPE) for seed in (1, 2, 3))
    return private, unseen, fresh


def test_boilerplate_never_blinds_the_check(notes: tuple[list[str], list[str], list[str]]) -> None:
    """Every note shares its template's boilerplate: a copy of the private notes is flagged, every note checked
    (never "0 of 0"); an honest release of the same templates with new text, or of boilerplate alone, is not."""
    private, unseen, fresh = notes
    copied = disclosure_test(disclosure_counts(private, unseen, private, RULE), 0.05, RULE)
    assert copied["private_reappear"] == copied["n_private"] == 200 and copied["n_unseen"] == 200, copied
    assert copied["unseen_reappear"] == 0 and copied["status"] == FLAGGED
    boilerplate_only = templated_notes(200, 4, **{**NOTE_SHAPE, "fill_words": 0})
    for honest in (fresh, boilerplate_only):
        found = disclosure_test(disclosure_counts(private, unseen, honest, RULE), 0.05, RULE)
        assert found["private_reappear"] == found["unseen_reappear"] == 0 and found["n_private"] == 200, found
        assert found["status"] == NOT_FLAGGED
    # notes that are boilerplate and nothing else hold no text of their own: uncheckable, counted, not flagged
    bare = disclosure_test(disclosure_counts(boilerplate_only[:50], boilerplate_only[50:], private, RULE), 0.05, RULE)
    assert bare["n_private"] == bare["n_unseen"] == 0 and bare["private_uncheckable"] == 50
    assert bare["status"] == NOT_CHECKED


@pytest.mark.parametrize("share, status", [(0.02, BELOW_ATTRIBUTION), (0.05, FLAGGED), (0.10, FLAGGED)])
def test_planted_verbatim_leaks(notes: tuple[list[str], list[str], list[str]], share: float, status: str) -> None:
    """A release of new notes with `share` of the private notes planted verbatim: 4 of 200 lie below what the test
    can attribute at 200 a side ((1/2)^4 > 0.05), 10 and 20 are flagged."""
    private, unseen, fresh = notes
    planted = round(share * len(private))
    found = disclosure_test(disclosure_counts(private, unseen, private[:planted] + fresh, RULE), 0.05, RULE)
    assert (found["private_reappear"], found["unseen_reappear"], found["min_flaggable"]) == (planted, 0, 5), found
    assert found["status"] == status and found["flagged"] is (status == FLAGGED)


def test_a_prefix_leak_and_a_sentence_leak_are_flagged(
    default_splits: Splits, notes: tuple[list[str], list[str], list[str]]
) -> None:
    """Releases that hold part of each private document: the first 12 words of each review; one note's own
    sentence (a section's 20 words of its own) set in another template's boilerplate."""
    private, unseen = list(default_splits.train.texts), list(default_splits.eval.texts)
    prefixes = [" ".join(text.split()[:12]) for text in private]
    found = disclosure_test(disclosure_counts(private, unseen, prefixes, RULE), 0.05, RULE)
    assert found["status"] == FLAGGED and found["private_reappear"] >= 0.8 * found["n_private"], found
    assert found["unseen_reappear"] <= 0.02 * found["n_unseen"], found
    notes_private, notes_unseen, fresh = notes
    sentences = [
        " ".join(other.split()[:30] + text.split()[30:50]) for text, other in zip(notes_private, reversed(fresh))
    ]
    found = disclosure_test(disclosure_counts(notes_private, notes_unseen, sentences, RULE), 0.05, RULE)
    assert found["private_reappear"] == 200 and found["unseen_reappear"] == 0 and found["status"] == FLAGGED


def test_the_null_flag_rate_is_at_most_alpha_with_unequal_strata() -> None:
    """The audit's assignment: targets by a fair coin, the rest 1:2. A release that does not depend on the split but
    reproduces targets far more often (60% against 10%) flags a pooled Fisher table well above alpha; the stratified
    test, over 1,000 random splits, at most alpha (each document's answer does not depend on the split: computed
    once)."""
    texts = templated_notes(360, 7, **NOTE_SHAPE)
    rng = np.random.default_rng(11)
    targets = np.arange(60)
    copied = np.r_[targets[rng.random(60) < 0.6], 60 + np.flatnonzero(rng.random(300) < 0.1)]
    pool, release = encode(normalised_words(texts), normalised_words([texts[i] for i in copied]))
    checkable, found = reappearing(pool, release, RULE)
    assert checkable.all() and found.sum() == len(copied)
    flags = {"stratified": 0, "pooled": 0}
    for _ in range(1000):
        private = np.r_[rng.random(60) < 0.5, rng.permutation(300) < 100]
        order = np.r_[np.flatnonzero(private), np.flatnonzero(~private)]
        kind = (order >= 60).astype(np.int64)
        strata = Strata((TARGETS, POOL), kind[: private.sum()], kind[private.sum() :])
        for name, split in (("stratified", strata), ("pooled", one_stratum(int(private.sum()), int((~private).sum())))):
            flags[name] += disclosure_test(count_tables(checkable[order], found[order], split), 0.05, RULE)["flagged"]
    assert flags["stratified"] / 1000 <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 1000), flags
    assert flags["pooled"] / 1000 > 0.1, flags


def test_copiers_are_flagged_and_unrelated_real_text_is_not(default_splits: Splits) -> None:
    private, unseen = list(default_splits.train.texts), list(default_splits.eval.texts)
    rng = random.Random(0)
    paraphrased = [paraphraser().paraphrase(text, rng) for text in private]
    # a paraphrase is found through content words: reviews with fewer than run_words of them are out of its reach
    for released, share in ((private, 0.95), (paraphrased, 0.88)):
        found = disclosure_test(disclosure_counts(private, unseen, released, RULE), 0.05, RULE)
        assert found["flagged"] and found["private_reappear"] >= share * found["n_private"], found
        assert found["unseen_reappear"] <= 0.02 * found["n_unseen"], found
    # the paraphrase leaves no 8-word run of any document of 8 words or more: the in-order rule catches it
    pool, release = encode(normalised_words(private + unseen), normalised_words(paraphrased))
    long_enough = pool.lengths >= RULE.run_words
    assert not reappearing(pool, release, RULE, no_pairs)[1][long_enough].any()
    # the MinHash candidates find (nearly) every pair the exhaustive search does
    exhaustive = disclosure_counts(private, unseen, paraphrased, RULE, pairs=all_pairs)["private_reappear"]
    # (199 of 206 on the default task's 224 / 156 split)
    assert disclosure_counts(private, unseen, paraphrased, RULE)["private_reappear"] >= 0.95 * exhaustive
    # an honest release: real reviews the check's private half never held, and public text
    half = len(private) // 2
    for released in (private[half:], list(public_corpus(per_label=24).texts)):
        found = disclosure_test(disclosure_counts(private[:half], unseen, released, RULE), 0.05, RULE)
        assert not found["flagged"], found
        assert found["private_reappear"] <= 0.05 * found["n_private"], found


def test_the_audit_groups_split_the_pool_stratify_it_and_count_a_canary_once() -> None:
    design = make_design(30, np.array([2, 5, 7]), AuditOptions(mode="one_run", n_canaries=4, canary_repeats=3), seed=3)
    pool_size = 30 + 4 * 3
    sources = canary_sources(design.aux, 4, seed=3)
    private, unseen, strata = audit_groups(design, pool_size, 0, sources)
    first_copies = design.targets
    later_copies = {int(t) + c for t, n in zip(design.targets, design.copies) for c in range(1, int(n))}
    assert not set(private) & set(unseen)
    assert set(private) | set(unseen) == set(range(pool_size)) - later_copies
    assert set(private) == set(design.private_set(0)) - later_copies
    assert set(first_copies[design.inclusion[0]]) <= set(private) and set(design.aux) <= set(unseen)
    assert strata.names == (TARGETS, POOL, SOURCES)
    names = np.array(strata.names)
    assert set(private[names[strata.private] == TARGETS]) | set(unseen[names[strata.unseen] == TARGETS]) == set(
        first_copies
    )
    assert set(unseen[names[strata.unseen] == SOURCES]) == set(sources) and SOURCES not in names[strata.private]
    # the sources are the documents make_canaries takes its prefixes from
    train = Corpus.build(
        [f"document {i} " + " ".join(f"w{i}x{j}" for j in range(12)) for i in range(30)], [["a"]] * 30, ["a"]
    )
    canaries = make_canaries(train.subset(design.aux), AuditOptions(n_canaries=4, canary_prefix_words=4), seed=3)
    assert {" ".join(t.split()[:4]) for t in canaries.texts} == {" ".join(train.texts[i].split()[:4]) for i in sources}
    assert audit_groups(design, pool_size, 0)[2].names == (TARGETS, POOL)


def test_the_rule_is_typed_and_checked_in_both_tasks() -> None:
    benchmark = compose_config(["task.disclosure.run_words=12", "task.disclosure.enabled=no"]).task
    assert benchmark.disclosure.run_words == 12 and benchmark.disclosure.enabled is False
    audit = schema.typed(AuditOptions, compose_config(["task=audit", "audit.disclosure.min_share=0.6"]).audit, "audit")
    assert audit.disclosure == DisclosureOptions(min_share=0.6)
    with pytest.raises(ConfigError, match=r"disclosure.min_share=1.5 must lie in \(0, 1\] \(task.disclosure in"):
        schema.typed(AuditOptions, {"disclosure": {"min_share": 1.5}}, "audit")
    with pytest.raises(ConfigError, match="disclosure.run_words=0 must be a positive whole number"):
        DisclosureOptions(run_words=0)


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
        assert disclosure["private_reappear"] >= 0.88 * disclosure["n_private"] > 0, disclosure
        assert disclosure["status"] == FLAGGED and disclosure["min_flaggable"] <= 10, disclosure
        keys = {f"disclosure.{k}" for k in disclosure}
        assert keys <= set(found["non_dp_outputs"]) and keys <= set(found["diagnostic_outputs"])


class MetricsTracker:
    """A tracker that keeps the names of the metrics it is sent and ignores everything else."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def log_metrics(self, metrics: dict[str, Any], **_: Any) -> None:
        self.names |= set(metrics)

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: None


def test_an_honest_program_is_not_flagged_and_the_check_can_be_turned_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from synbench.job import lifecycle
    from synbench.tasks import benchmark

    tracker = MetricsTracker()
    monkeypatch.setattr(lifecycle, "make_tracker", lambda *a, **k: tracker)
    overrides = [*command_overrides(HONEST, tmp_path), "metrics=[]", "eps=4"]
    results = benchmark.run(JobConfig.from_config(compose_config(overrides)), tmp_path / "honest")
    # the check's time depends on the private documents: in results.json, never sent to the tracker
    assert "disclosure_s" in results["timing"] and "timing/disclosure_s" not in tracker.names
    assert "timing/load_s" in tracker.names
    found = results["disclosure"]
    assert not found["flagged"] and found["n_private"] > 200 and found["n_unseen"] > 100, found
    assert found["status"] in (NOT_FLAGGED, BELOW_ATTRIBUTION), found
    off = compose_config([*overrides, "task.disclosure.enabled=false"])
    results = benchmark.run(JobConfig.from_config(off), tmp_path / "off")
    assert "disclosure" not in results and not results["non_dp_outputs"]


@pytest.mark.slow  # two audits through the CLI: about 30 s
def test_a_copier_is_flagged_by_the_one_run_audit_at_eps_4_and_8(tmp_path: Path) -> None:
    """Whatever the audit's bound can certify (its ceiling lies below eps=4 at this size: inconclusive, never a pass),
    the check flags the copy."""
    small = ["task=audit", "audit.mode=one_run", "audit.targets=canaries", "audit.n_canaries=50"]
    run_cli(["-m", *command_overrides(LEAKY, tmp_path), *small, "eps=4,8"], cwd=tmp_path)
    results = sweep_results(tmp_path, "audit")
    assert sorted(results) == [4.0, 8.0]
    for found in results.values():
        disclosure = found["disclosure"]
        # the copier writes audit.n_synthetic documents, the planned size: a private set drawn larger loses its last
        assert disclosure["flagged"] and disclosure["private_reappear"] >= 0.95 * disclosure["n_private"] > 50, (
            disclosure
        )
        assert disclosure["unseen_reappear"] == 0, disclosure
        # the canaries count (their suffix is their own text), in the targets' stratum; their sources are their own
        strata = disclosure["strata"]
        assert set(strata) == {TARGETS, POOL, SOURCES} and strata[SOURCES]["n_private"] == 0, strata
        assert strata[TARGETS]["private_reappear"] >= 0.9 * strata[TARGETS]["n_private"] > 10, strata
        assert disclosure["test"].startswith("exact test stratified"), disclosure
        assert found["non_dp_outputs"] == sorted(f"disclosure.{k}" for k in disclosure)
        # the audit itself never passes it: at 50 canaries its ceiling lies below both claims (issue 50)
        audit = found["audit"]
        assert audit["verdict"] == "inconclusive" and audit["eps_ceiling"] <= found["epsilon"], audit
        assert audit["verdict_line"].startswith("inconclusive: "), audit
