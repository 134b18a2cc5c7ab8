"""The privacy audit: epsilon estimates and bounds, the design, the n-gram attack, the audit task end to end."""

from __future__ import annotations

import json
import math
import re
from collections import Counter, defaultdict
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from scipy.special import logit

from conftest import compose_config, run_cli, write_jsonl
from synbench.audit import (
    AuditOptions,
    RocCurve,
    empirical_epsilon,
    empirical_epsilon_curve,
    empirical_epsilon_lower_bound,
    make_design,
    one_run_epsilon_lower_bound,
    one_run_guesses,
    one_run_p_value,
)
from synbench.audit.ngram import NgramAttack
from synbench.core.base import Generator
from synbench.core.corpus import Corpus
from synbench.core.errors import ConfigError
from synbench.job.spec import JobConfig
from synbench.text.nlp import tokenize

REQUIRED = (
    "auc",
    "tpr_at_fpr_0.001",
    "tpr_at_fpr_0.01",
    "tpr_at_fpr_0.1",
    "eps_emp",
    "eps_emp_max",
    "eps_emp_lower",
    "eps_emp_lower_holdout",
    "eps_emp_lower_bonferroni",
    "gdp_mu_lower",
    "gdp_eps_lower",
    "n_targets",
    "mode",
    "n_outliers",
    "n_canaries",
    "targets",
)
PER_TYPE = tuple(
    f"{kind}.{key}" for kind in ("outliers", "canaries") for key in ("auc", "eps_emp", "eps_emp_lower", "gdp_mu_lower")
)
WORDS = (
    "patient dose tablet nausea headache insomnia rash dizzy tired anxious relief pain weeks months daily "
    "doctor switched stopped started side effects worse better severe mild sleep weight appetite mood"
).split()


def corpus(texts: list[str]) -> Corpus:
    return Corpus.build(texts, [["x"]] * len(texts), ["x"])


# --- empirical epsilon ---------------------------------------------------------------------------------


def test_empirical_epsilon_paper_example() -> None:
    assert empirical_epsilon(0.1, 0.38, 0) == pytest.approx(math.log(3.8)) == pytest.approx(1.335, abs=1e-3)


def test_empirical_epsilon_guards_zeros_and_vectorises() -> None:
    assert empirical_epsilon(0.0, 0.5, 0.0) == math.inf  # no eps-DP mechanism has this point
    assert empirical_epsilon(0.5, 0.5, 0.0) == 0.0  # chance proves nothing
    assert empirical_epsilon(0.0, 0.0, 0.0) == 0.0  # 0/0 proves nothing either
    assert empirical_epsilon(0.62, 0.9, 0.0) == pytest.approx(math.log(0.38 / 0.1))  # the second inequality binds
    assert empirical_epsilon(0.1, 0.05, 0.1) == 0.0  # TPR below delta: the first inequality says nothing
    many = empirical_epsilon(np.array([0.1, 0.5]), np.array([0.38, 0.5]), 0.0)
    np.testing.assert_allclose(many, [math.log(3.8), 0.0])


def test_curve_epsilon_maximises_over_thresholds_and_respects_min_count() -> None:
    members = np.array([1, 1, 0, 1, 0, 0], dtype=bool)
    roc = RocCurve.from_scores(np.array([6, 5, 4, 3, 2, 1.0]), members)
    assert empirical_epsilon_curve(roc, 0.0, min_count=0) == math.inf  # two members above every non-member
    # ROC (TP, FP): (0,0) (1,0) (2,0) (2,1) (3,1) (3,2) (3,3). With at least one false positive the best
    # TPR/FPR point is (3,1): log(1 / (1/3)); the other inequality needs a false negative, and (2,1) gives log 2.
    assert empirical_epsilon_curve(roc, 0.0, min_count=1) == pytest.approx(math.log(3))
    assert empirical_epsilon_curve(roc, 0.0, min_count=2) == pytest.approx(math.log(1 / (2 / 3)))


def test_roc_ties_and_rates() -> None:
    roc = RocCurve.from_scores(np.zeros(10), np.arange(10) % 2 == 0)
    assert roc.auc() == pytest.approx(0.5) and len(roc.tp) == 2  # a tie is one threshold
    perfect = RocCurve.from_scores(np.arange(10.0), np.arange(10) >= 5)
    assert perfect.auc() == 1.0 and perfect.tpr_at_fpr(0.001) == 1.0 and perfect.precision_at_recall(0.1) == 1.0


def test_lower_bound_at_perfect_separation_is_the_sample_size_maximum() -> None:
    n_pos = n_neg = 50
    members = np.arange(n_pos + n_neg) >= n_neg
    scores = np.arange(n_pos + n_neg, dtype=float)  # every member above every non-member, no ties
    thresholds = n_pos + n_neg - 1  # distinct scores minus the flag-everything threshold
    a = 0.05 / (2 * thresholds)
    cap = math.log(a ** (1 / n_pos) / (1 - a ** (1 / n_neg)))
    assert empirical_epsilon_lower_bound(RocCurve.from_scores(scores, members), 0.0, confidence=0.95) == pytest.approx(
        cap, rel=1e-9
    )
    rng = np.random.default_rng(0)
    for _ in range(5):  # any other ranking proves less
        shuffled = rng.permutation(members)
        assert empirical_epsilon_lower_bound(RocCurve.from_scores(scores, shuffled), 0.0, confidence=0.95) < cap


def test_lower_bound_on_random_scores_is_zero_in_95_percent_of_trials() -> None:
    rng = np.random.default_rng(1)
    trials = 200
    zeros = sum(
        empirical_epsilon_lower_bound(
            RocCurve.from_scores(rng.normal(size=200), np.arange(200) < 100), 0.0, confidence=0.95
        )
        == 0.0
        for _ in range(trials)
    )
    assert zeros >= 0.95 * trials


# --- one-run audit ---------------------------------------------------------------------------------------


def test_one_run_bound_all_correct_matches_closed_form() -> None:
    # P[Binomial(r, q) >= r] = q^r < 0.05  <=>  eps > logit(0.05^(1/r)).
    for r in (10, 40):
        assert one_run_epsilon_lower_bound(100, r, r, 0.0, confidence=0.95) == pytest.approx(
            logit(0.05 ** (1 / r)), abs=1e-6
        )
    assert one_run_epsilon_lower_bound(100, 40, 20, 0.0, confidence=0.95) == 0.0  # coin-flip accuracy proves nothing
    assert one_run_p_value(100, 40, 30, 1.0, 1e-5) > one_run_p_value(100, 40, 30, 1.0, 0.0)  # delta weakens the test


def test_one_run_guesses_take_the_extremes() -> None:
    scores = np.array([0.9, 0.1, 0.8, 0.2, 0.5])
    members = np.array([True, False, False, False, True])
    assert one_run_guesses(scores, members, k_pos=2, k_neg=2) == (
        4,
        3,
    )  # 0.9 in (right), 0.8 in (wrong), 0.1 and 0.2 out (right)


# --- design -----------------------------------------------------------------------------------------------


def test_paired_design_is_exactly_balanced_and_reproducible() -> None:
    targets = np.arange(0, 200, 10)
    design = make_design(200, targets, AuditOptions(targets="outliers", n_subsets=10, n_references=4), seed=3)
    inc = design.inclusion
    assert inc.shape == (10, 20)
    assert np.all(inc.mean(axis=0) == 0.5)  # every target in exactly half the subsets
    assert np.all(inc[0::2] ^ inc[1::2])  # each pair: the same subset with and without each target
    assert np.array_equal(design.base[0::2], design.base[1::2])
    assert np.all(design.ref_inclusion.sum(axis=0) == 2)  # exactly 2 of 4 references hold each target
    everything = np.concatenate([design.targets, design.private, design.aux])
    assert sorted(everything) == list(range(200))
    assert len(design.aux) == 2 * len(design.private)
    assert make_design(200, targets, AuditOptions(targets="outliers", n_subsets=10), seed=3).digest() == design.digest()
    assert make_design(200, targets, AuditOptions(targets="outliers", n_subsets=10), seed=4).digest() != design.digest()
    one = make_design(200, targets, AuditOptions(mode="one_run", targets="outliers"), seed=3)
    assert one.inclusion.shape == (1, 20) and one.base.all()


# --- the n-gram attack -------------------------------------------------------------------------------------


def naive_log_prob(n: int, fitted: list[list[str]], queries: list[list[str]]) -> np.ndarray:
    """The authors' dict-of-counters model, token by token."""
    pairs: defaultdict[tuple[str, ...], Counter] = defaultdict(Counter)
    contexts: Counter = Counter()
    vocab = {w for doc in fitted for w in doc}
    for doc in fitted:
        padded = ["<s>"] * (n - 1) + doc + ["</s>"]
        for i in range(len(padded) - n + 1):
            pairs[tuple(padded[i : i + n - 1])][padded[i + n - 1]] += 1
            contexts[tuple(padded[i : i + n - 1])] += 1
    out = []
    for doc in queries:
        padded = ["<s>"] * (n - 1) + doc + ["</s>"]
        out.append(
            sum(
                math.log(
                    (pairs[tuple(padded[i : i + n - 1])][padded[i + n - 1]] + 1)
                    / (contexts[tuple(padded[i : i + n - 1])] + len(vocab) + 1)
                )
                for i in range(len(padded) - n + 1)
            )
        )
    return np.array(out)


@pytest.mark.parametrize("tokenizer", ["whitespace", "spacy"])
@pytest.mark.parametrize("n", [1, 2, 3])
def test_vectorised_ngram_scores_equal_the_naive_counter_model(n: int, tokenizer: str) -> None:
    synthetic = ["the rash got worse , then better", "  mild nausea daily ", "", "the rash the rash the rash"]
    references = [["the rash", "daily pain, mild"], ["better sleep", ""], ["nausea", "worse"], ["x y z"]]
    targets = ["the rash got better", "unseen words here", "", "mild nausea daily pain"]
    attack = NgramAttack(n=n, tokenizer=tokenizer, normalise="none")  # the sums, not per token
    split = (
        (lambda ts: [t.split() for t in ts])
        if tokenizer == "whitespace"
        else partial(tokenize, model=attack.spacy_model)
    )
    expected_syn = naive_log_prob(n, split(synthetic), split(targets))
    expected = expected_syn - np.mean([naive_log_prob(n, split(r), split(targets)) for r in references], axis=0)
    np.testing.assert_allclose(
        attack.score(targets, corpus(synthetic), [corpus(r) for r in references]), expected, rtol=1e-12
    )
    alone = NgramAttack(n=n, tokenizer=tokenizer, reference=False, normalise="none")
    np.testing.assert_allclose(alone.score(targets, corpus(synthetic), []), expected_syn, rtol=1e-12)


def test_copy_release_is_found_by_the_attack() -> None:
    rng = np.random.default_rng(0)
    docs = [" ".join(rng.choice(WORDS, size=15)) for _ in range(200)]
    design = make_design(len(docs), np.arange(40), AuditOptions(targets="outliers", n_subsets=4), seed=0)
    attack = NgramAttack(tokenizer="whitespace")
    refs = [corpus([docs[i] for i in design.reference_set(m)]) for m in range(4)]
    scores = [attack.score(docs[:40], corpus([docs[i] for i in design.private_set(k)]), refs) for k in range(4)]
    assert RocCurve.from_scores(np.array(scores), design.inclusion).auc() >= 0.95


# --- the task end to end --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def audit_data(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], list[str]]:
    """Overrides for a 60-document dataset of varied short reviews, and its training texts in order."""
    folder = tmp_path_factory.mktemp("audit_data")
    rng = np.random.default_rng(7)
    texts = [" ".join(rng.choice(WORDS, size=int(rng.integers(6, 20)))) + f" {i}" for i in range(70)]
    rows = [{"text": t, "label": ["pos" if i % 2 else "neg"]} for i, t in enumerate(texts)]
    train, test = write_jsonl(folder / "train.jsonl", rows[:60]), write_jsonl(folder / "test.jsonl", rows[60:])
    overrides = [
        "task=audit",
        "dataset=files",
        f"dataset.train={train}",
        f"dataset.eval={test}",
        "dataset.name=tiny",
        "tracking=none",
        f"output_root={folder}",
        "audit.n_targets=12",
        "audit.lof_contamination=0.2",
        "audit.n_canaries=20",
    ]
    return overrides, texts[:60]


@pytest.mark.slow
def test_an_audit_of_a_control_says_what_it_did_not_do(tmp_path: Path, audit_data: tuple[list[str], list[str]]) -> None:
    """As the benchmark does: one warning line that copy does not apply eps=4, and one that 500 synthetic documents
    are more than a run's private set holds, naming audit.n_synthetic."""
    overrides, _ = audit_data
    proc = run_cli(
        [
            *(o for o in overrides if not o.startswith("output_root=")),
            "generator=copy",
            "eps=4",
            "audit.mode=one_run",
            "audit.n_synthetic=500",
            f"output_root={tmp_path}",
        ],
        cwd=tmp_path,
    )
    lines = (proc.stdout + proc.stderr).splitlines()
    assert len([line for line in lines if "'copy' is a control and does not apply eps=4" in line]) == 1, lines
    assert (
        len(
            [
                line
                for line in lines
                if line.startswith("audit.n_synthetic=500 is more than the")
                or "- audit.n_synthetic=500 is more" in line
            ]
        )
        == 1
    ), lines
    assert any(line.startswith("audit copy on tiny: eps=control (4 not applied)") for line in lines), lines


@pytest.mark.slow
def test_one_run_audit_cli_writes_the_keys_and_leaks_no_target(
    tmp_path: Path, audit_data: tuple[list[str], list[str]]
) -> None:
    overrides, texts = audit_data
    proc = run_cli(
        [
            *(o for o in overrides if not o.startswith("output_root=")),  # the command line refuses a key given twice
            "generator=copy",
            "eps=inf",
            "audit.mode=one_run",
            "audit.targets=both",
            f"output_root={tmp_path}",
        ],
        cwd=tmp_path,
    )
    [results_file] = list(tmp_path.rglob("results.json"))
    results = json.loads(results_file.read_text())
    assert results["status"] == "complete" and results["epsilon_spent"] == "inf"
    for key in REQUIRED + PER_TYPE:
        assert key in results["audit"], key
    audit = results["audit"]
    assert (
        audit["mode"] == "one_run"
        and audit["n_outliers"] == 12
        and audit["n_canaries"] == 20
        and audit["n_targets"] == 32
    )
    assert audit["eps_emp_lower"] == max(audit["eps_emp_lower_holdout"], audit["eps_emp_lower_bonferroni"]) > 0
    assert audit["canaries.auc"] == 1.0  # copy releases every canary it holds, and no other text has their suffixes
    assert (results_file.parent / "audit_roc.png").stat().st_size > 0
    targets = np.load(results_file.parent / "audit_design.npz")["targets"]
    released = [
        json.loads(line)["text"] for line in next(tmp_path.rglob("run_000.synthetic.jsonl")).read_text().splitlines()
    ]
    canaries = [t for t in released if t not in texts]
    assert canaries  # the private set held some canaries
    shown = proc.stdout + proc.stderr + results_file.read_text()
    assert not any(texts[i] in shown for i in targets[targets < len(texts)])
    assert not any(" ".join(c.split()[-3:]) in shown for c in canaries)


def test_k_subset_audit_finds_copy_and_resumes(
    tmp_path: Path, audit_data: tuple[list[str], list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from synbench.generators.copy import CopyGenerator
    from synbench.tasks import audit as audit_task

    overrides, _ = audit_data
    cfg = compose_config([*overrides, "generator=copy", "eps=inf", "audit.n_subsets=4", "attack=ngram"])
    config = JobConfig.from_config(cfg)
    results = audit_task.run(config, tmp_path)
    assert results["audit"]["auc"] >= 0.95 and results["audit"]["n_runs"] == 4
    # 4 runs of 32 targets at this 60-document dataset's delta: even perfect scores certify only about 0.1 once the
    # three target families pay for their choice, so the bound is checked against that, not against 0
    assert 0 <= results["audit"]["eps_emp_lower"] <= results["audit"]["eps_perfect"] < 0.5
    assert results["non_private_control"] is True  # so the report claims no violation for it at any eps
    assert results["noise"] == "n/a"  # a built-in control draws no privacy noise
    for key in REQUIRED:
        assert key in results["audit"], key

    fits = []
    monkeypatch.setattr(
        CopyGenerator, "fit", lambda self, *a: fits.append(1) or pytest.fail("a finished run was re-run")
    )
    (tmp_path / "results.json").unlink()
    again = audit_task.run(config, tmp_path)
    assert again["generation"]["runs_resumed"] == 4 and again["audit"] == results["audit"] and not fits


def test_audit_config_rejects_bad_values() -> None:
    with pytest.raises(Exception, match="guess_fractions"):
        AuditOptions(guess_fractions=(0.8,))
    with pytest.raises(Exception, match="audit.targets='all'"):
        AuditOptions(targets="all")
    with pytest.raises(Exception, match="canary_repeats"):
        AuditOptions(canary_repeats=0)
    with pytest.raises(Exception, match="n_subsets"):
        make_design(100, np.arange(10), AuditOptions(targets="outliers", n_subsets=3), seed=0)


# --- the public control (real model: slow) --------------------------------------------------------------


@pytest.mark.slow
def test_public_generator_writes_labelled_text_without_spending_budget() -> None:
    from synbench.core import registry
    from synbench.core.privacy import PrivacySpec

    cfg = compose_config(["generator=public", "generator.max_new_tokens=8", "generator.batch_size=4"])
    generator = registry.create(Generator, JobConfig.from_config(cfg).generator)
    private = Corpus.build(["secret text one", "secret text two"], [["neg"], ["pos"]], ["neg", "pos"])
    report = generator.fit(private, PrivacySpec(1.0, 1e-4, "prv"), seed=0)
    assert report.epsilon_spent == 0.0 and report.delta == 0.0
    out = generator.sample(6)
    assert len(out) == 6 and sorted(ls[0] for ls in out.labels) == ["neg"] * 3 + ["pos"] * 3
    assert not any("secret" in t for t in out.texts)


def test_two_attacks_and_a_pooled_one_run_game_end_to_end(
    tmp_path: Path, audit_data: tuple[list[str], list[str]]
) -> None:
    from synbench.tasks import audit as audit_task

    overrides, _ = audit_data
    cfg = compose_config(
        [
            *overrides,
            "generator=copy",
            "eps=inf",
            "audit.mode=one_run",
            "audit.repeats=2",
            "attack=[ngram,similarity]",
            "attack.similarity.similarity=jaccard",
            "attack.ngram.tokenizer=whitespace",
        ]
    )
    audit = audit_task.run(JobConfig.from_config(cfg), tmp_path)["audit"]
    for attack in ("ngram", "similarity"):
        assert audit[f"{attack}.eps_emp_lower"] > 0 and f"pooled.{attack}.eps_emp_lower" in audit
    assert audit["attack_chosen"] in ("ngram", "similarity") and audit["pooled.n_targets"] == 2 * audit["n_targets"]
    # run 1's own bound may be 0: its coins put 8 of 32 targets in, and the membership-blind folds (issue 30) do not
    # let its selection quarter (4 of 8 members) predict that share on the rest; the pool still proves more
    assert audit["eps_emp_lower_run_0"] == audit["eps_emp_lower"] and audit["eps_emp_lower_run_1"] >= 0
    assert audit["pooled.eps_emp_lower"] > audit["eps_emp_lower"]  # twice the trials of the same leak prove more
    scores = np.load(tmp_path / "audit_scores.npz")
    assert scores["scores_ngram"].shape == scores["scores_similarity"].shape == scores["members"].shape


@pytest.mark.slow
def test_listed_targets_are_the_audited_outliers(tmp_path: Path, audit_data: tuple[list[str], list[str]]) -> None:
    """`audit.target_positions` (e.g. S of a planted-contamination job) replaces the embedding outliers: the design's
    outlier targets are exactly the listed positions."""
    overrides, _ = audit_data
    listed = [3, 11, 17, 29, 40, 41, 52, 58]
    positions = tmp_path / "members.json"
    positions.write_text(json.dumps({"share": 0.2, "n_train": 60, "positions": listed}))
    run_cli(
        [
            *(o for o in overrides if not o.startswith("output_root=")),
            "generator=copy",
            "eps=inf",
            "audit.mode=one_run",
            "audit.targets=outliers",
            f"audit.target_positions={positions}",
            f"output_root={tmp_path}",
        ],
        cwd=tmp_path,
    )
    [results_file] = list(tmp_path.rglob("results.json"))
    audit = json.loads(results_file.read_text())["audit"]
    assert audit["n_outliers"] == len(listed) and audit["n_canaries"] == 0
    targets = np.load(results_file.parent / "audit_design.npz")["targets"]
    assert sorted(targets.tolist()) == listed


@pytest.mark.parametrize(
    ("content", "field"),
    [
        (None, "no such file"),
        ("{not json", "not a readable JSON file"),
        (json.dumps({"positions": []}), "field 'positions'"),
        (json.dumps({"positions": [1, 1]}), "distinct positions"),
        (json.dumps({"positions": [0, 60]}), "distinct positions in [0, 60)"),
        (json.dumps({"n_train": 100, "positions": [0]}), "field 'n_train' is 100"),
    ],
)
def test_listed_targets_refuse_a_bad_file_in_one_line(tmp_path: Path, content: str | None, field: str) -> None:
    from synbench.audit.targets import listed_targets

    path = tmp_path / "members.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ConfigError, match=re.escape(field)) as caught:
        listed_targets(str(path), 60)
    assert "\n" not in str(caught.value) and str(path) in str(caught.value)


def test_listed_targets_need_outlier_targets() -> None:
    with pytest.raises(ConfigError, match="audit.targets=outliers or both"):
        AuditOptions(targets="canaries", target_positions="members.json")
