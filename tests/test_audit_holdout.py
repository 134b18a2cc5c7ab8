"""The holdout-only attacks (attack=holdout, Amin et al. 2026; attack=rare_echo, Panda et al. 2025) and rare canaries:
known answers on fixed inputs, the Attack contracts, and audits end to end from `attack=[...]` that catch a leaking
generator and do not catch the example DP plugin at eps = 1."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import REPO, compose_config, install_plugin
from synbench.audit import RocCurve
from synbench.audit.canaries import make_canaries, public_words, ranked_public_words, rare_words
from synbench.audit.config import AuditOptions
from synbench.audit.holdout import HoldoutAttack, RareEchoAttack, holdout_texts
from synbench.audit.similarity import word_set
from synbench.core.corpus import Corpus
from synbench.job.spec import JobConfig
from synbench.testing import check_attack
from test_audit import audit_data  # noqa: F401  (the tiny dataset fixture)
from test_audit_canaries import leaky  # noqa: F401  (generator=... builds the lying LeakyGenerator)

ATTACKS = ("ngram", "holdout", "rare_echo")
ONE_RUN = [
    "eps=1",
    "audit.mode=one_run",
    "audit.targets=both",
    "audit.n_canaries=300",
    "audit.canary_suffix=rare",
    f"attack=[{','.join(ATTACKS)}]",
    "attack.ngram.tokenizer=whitespace",
]


def corpus(texts: list[str]) -> Corpus:
    return Corpus.build(texts, [["x"]] * len(texts), ["x"])


# --- known answers ----------------------------------------------------------------------------------------------


def test_holdout_is_the_references_less_the_targets_in_reference_order() -> None:
    references = [corpus(["a b c", "a b d", "p q"]), corpus(["x y", "p q", "x z"])]
    assert holdout_texts(["x y", "a b c"], references) == ("a b d", "p q", "x z")
    assert holdout_texts(["a b c", "x y"], references) == holdout_texts(["x y", "a b c"], references)


def test_holdout_score_is_the_closest_match_minus_its_comparable_holdout_documents() -> None:
    targets = ["a b c", "x y"]
    references = [corpus(["a b c", "a b d", "p q"]), corpus(["x y", "x z", "a b d"])]  # holdout: a b d, p q, x z
    synthetic = corpus(["a b c", "x q"])
    # "a b c": synthetic 1; its nearest holdout "a b d" (Jaccard 1/2) is matched at 1/2 by "a b c" -> 1 - 1/2.
    # "x y": synthetic 1/3 ("x q"); its nearest holdout "x z" is matched at 1/3 too: a phantom, score 0.
    one = HoldoutAttack(neighbours=1).score(targets, synthetic, references)
    np.testing.assert_allclose(one, [0.5, 0.0], atol=1e-12)
    # two neighbours (ties kept in holdout order): "a b c" -> a b d (1/2), p q (1/3); "x y" -> x z (1/3), a b d (1/2)
    two = HoldoutAttack(neighbours=2).score(targets, synthetic, references)
    np.testing.assert_allclose(two, [1 - 5 / 12, 1 / 3 - 5 / 12], atol=1e-12)


def test_holdout_control_discounts_phantoms_that_a_bare_closest_match_reads_as_disclosures() -> None:
    """Half the targets are typical (common words), half outliers (rare words); the release is typical text that
    never saw a target plus each member with two thirds of its words swapped. A typical non-member resembles the
    typical text as much as a leaked member resembles itself (a phantom): the bare closest match is near chance,
    the holdout's comparable documents are matched just as closely and cancel it."""
    rng = np.random.default_rng(0)
    ranked = np.array(ranked_public_words(), dtype=object)
    common, rare = ranked[:40], ranked[-5000:]

    def doc(vocabulary: np.ndarray) -> str:
        return " ".join(rng.choice(vocabulary, 12))

    def paraphrase(text: str) -> str:
        words = text.split()
        for i in rng.permutation(len(words))[: len(words) * 2 // 3]:
            words[i] = rng.choice(rare)
        return " ".join(words)

    targets = [doc(common) if typical else doc(rare) for typical in rng.random(200) < 0.5]
    members = rng.random(200) < 0.5
    synthetic = corpus([paraphrase(t) for t, m in zip(targets, members) if m] + [doc(common) for _ in range(300)])
    holdout = [corpus([doc(common) for _ in range(200)] + [doc(rare) for _ in range(200)])]
    bare = RocCurve.from_scores(HoldoutAttack().closest(tuple(targets), synthetic.texts), members).auc()
    controlled = RocCurve.from_scores(HoldoutAttack().score(targets, synthetic, holdout), members).auc()
    assert controlled > bare + 0.08  # measured: 0.70 against 0.58 (seeds 1-4: +0.08 to +0.16)


def test_rare_echo_is_the_share_of_a_targets_holdout_surprisal_found_in_the_release() -> None:
    targets = ["a b zeta", "a q r s", "b c x"]
    references = [corpus(["a b c", "a b zeta"]), corpus(["q x"])]  # holdout "a b c", "q x": no target counts
    synthetic = corpus(["Zeta, a thing", "s b"])
    # Words only (n=1): H = 2 holdout documents, each word of them in one: weight log(3/2); a word in none (zeta,
    # r, s): log 3. "a b zeta": all released -> 1. "a q r s": a and s released,
    # (log 1.5 + log 3) / (2 log 1.5 + 2 log 3) = 1/2. "b c x": b of three equal weights -> 1/3.
    np.testing.assert_allclose(RareEchoAttack(n=1).score(targets, synthetic, references), [1.0, 0.5, 1 / 3])
    # With bigrams (n=2): "a b zeta" adds "a b" (in one holdout document: log 1.5, not released) and "b zeta"
    # (log 3, not released): (2 log 1.5 + log 3) / (3 log 1.5 + 2 log 3).
    l1, l3 = np.log(1.5), np.log(3)
    with_bigrams = RareEchoAttack().score(targets, synthetic, references)
    assert with_bigrams[0] == pytest.approx((2 * l1 + l3) / (3 * l1 + 2 * l3))
    everywhere = corpus(["a b c", "a b"])  # as a holdout: a, b and "a b" (in every document) weigh 0; "b a" is
    # in none (log 3) and not released
    np.testing.assert_allclose(RareEchoAttack().score(["a b", "b a"], synthetic, [everywhere]), [0.0, 0.0])


def test_options_and_missing_holdouts_are_refused_naming_the_key() -> None:
    with pytest.raises(Exception, match=r"attack.holdout.neighbours=0"):
        HoldoutAttack(neighbours=0)
    with pytest.raises(Exception, match=r"attack.holdout.similarity='edit'"):
        HoldoutAttack(similarity="edit")
    with pytest.raises(Exception, match=r"attack.holdout.k"):
        HoldoutAttack(k=3)
    with pytest.raises(Exception, match=r"conf/attack/holdout.yaml"):
        HoldoutAttack(similarity="embedding")
    with pytest.raises(Exception, match=r"attack.rare_echo.n=0"):
        RareEchoAttack(n=0)
    secret = "zeta target words"
    with pytest.raises(Exception, match=r"lower attack.holdout.neighbours") as few:
        HoldoutAttack(neighbours=3).score([secret], corpus(["a"]), [corpus(["b c", secret])])
    with pytest.raises(Exception, match=r"attack.rare_echo needs holdout documents") as none:
        RareEchoAttack().score([secret], corpus(["a"]), [corpus([secret])])
    assert secret not in str(few.value) + str(none.value)  # no target text in an error


@pytest.mark.parametrize("factory", [HoldoutAttack, RareEchoAttack])
def test_the_new_attacks_keep_the_attack_contracts(factory: type) -> None:
    check_attack(factory)  # one finite score per target, independent of target order, members score higher


# --- rare canaries ---------------------------------------------------------------------------------------------


def test_rare_canary_suffixes_are_the_rarest_public_words_that_d_aux_never_uses() -> None:
    ranked = ranked_public_words()
    assert ranked[:3] == ("the", "and", "was")  # the vocabulary lists words by public frequency, commonest first
    assert set(ranked) == set(public_words())
    tail = set(ranked[-round(0.25 * len(ranked)) :])
    used = sorted(tail)[:5]  # rare words that D_aux does use: excluded
    aux = Corpus.build(
        [f"review {i} says the tablet helped {' '.join(used)}" for i in range(5)], [["a"]] * 5, ["a", "b"]
    )
    assert set(rare_words(aux, 0.25)) == tail - set(used)
    uniform = make_canaries(aux, short_canaries(), seed=2)
    rare = make_canaries(aux, short_canaries(canary_suffix="rare"), seed=2)
    assert make_canaries(aux, short_canaries(canary_suffix="uniform"), seed=2).texts == uniform.texts
    seen = set().union(*map(word_set, aux.texts))
    for u, r in zip(uniform.texts, rare.texts):
        assert u.split()[:4] == r.split()[:4]  # the same in-distribution prefix
        assert set(r.split()[4:]) <= tail and not set(r.split()[4:]) & seen and len(r.split()) == 10
    assert rare.labels == uniform.labels


def short_canaries(**overrides: Any) -> AuditOptions:
    """Four canaries of 4 prefix and 6 suffix words."""
    return AuditOptions(
        **{"targets": "canaries", "n_canaries": 4, "canary_prefix_words": 4, "canary_suffix_words": 6, **overrides}
    )


def test_rare_canary_options_are_refused_naming_the_key() -> None:
    aux = Corpus.build(["a b c"], [["a"]], ["a"])
    rare = AuditOptions(targets="canaries", n_canaries=2, canary_suffix_words=15, canary_suffix="rare")
    with pytest.raises(Exception, match=r"raise audit.canary_rare_share"):
        make_canaries(aux, replace(rare, canary_rare_share=1e-5), seed=0)
    with pytest.raises(Exception, match=r"audit.canary_suffix='odd'"):
        AuditOptions(canary_suffix="odd")
    with pytest.raises(Exception, match=r"audit.canary_rare_share=0"):
        AuditOptions(canary_rare_share=0.0)


def suffix_first(suffix: str) -> AuditOptions:
    """200 canaries of one prefix word (D_aux's commonest, which weighs nothing) and the default 15 suffix words."""
    return AuditOptions(targets="canaries", n_canaries=200, canary_prefix_words=1, canary_suffix=suffix)


def test_rare_canaries_have_fewer_phantom_echoes_in_fluent_public_text() -> None:
    """A release that never saw the canaries but writes fluent public text (2,000 documents of words drawn by their
    public frequency, Zipf) holds uniform canaries' suffix words by chance more often than rare canaries'; with four
    suffix words of each member leaked, rare canaries separate members better."""
    rng = np.random.default_rng(0)
    ranked = np.array(ranked_public_words(), dtype=object)
    zipf = 1 / np.arange(1, len(ranked) + 1)
    fluent = [" ".join(rng.choice(ranked, size=20, p=zipf / zipf.sum())) for _ in range(2000)]
    aux = Corpus.build([" ".join(ranked[:50])] * 3, [["a"]] * 3, ["a"])  # D_aux: the commonest words
    members = rng.random(200) < 0.5
    auc, phantom = {}, {}
    for suffix in ("uniform", "rare"):
        canaries = make_canaries(aux, suffix_first(suffix), seed=1).texts
        leaked = [" ".join(rng.choice(c.split(), 4, replace=False)) for c, m in zip(canaries, members) if m]
        scores = RareEchoAttack().score(canaries, corpus([*fluent, *leaked]), [aux])
        auc[suffix] = RocCurve.from_scores(scores, members).auc()
        phantom[suffix] = scores[~members].mean()  # the share of a non-member's suffix the release holds anyway
    assert phantom["rare"] < 0.75 * phantom["uniform"]  # measured: 0.13 against 0.21
    assert auc["rare"] > auc["uniform"] + 0.03  # measured: 0.93 against 0.87


# --- audits end to end, from attack=[...] ----------------------------------------------------------------------


def released_or_logged(tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> str:
    captured = capsys.readouterr()
    return captured.out + captured.err + caplog.text + (tmp_path / "results.json").read_text()


def assert_no_released_text(job_dir: Path, shown: str) -> None:
    """No released text (the last three words of each synthetic document: canaries and leaked targets among them)
    in what the job printed, logged or wrote to results."""
    pool = [json.loads(line)["text"] for f in (job_dir / "runs").glob("*.synthetic.jsonl") for line in f.open()]
    suffixes = [" ".join(t.split()[-3:]) for t in pool]
    assert suffixes and not any(s in shown for s in suffixes)


def test_leaking_generator_is_caught_by_each_new_attack_from_the_attack_list(
    tmp_path: Path,
    audit_data: tuple[list[str], list[str]],  # noqa: F811
    leaky: None,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The lying generator (claims eps = 1, releases each private document with probability 1/2, one word dropped
    and two swapped): each attack's one-run bound is above the claimed eps."""
    from synbench.tasks import audit as audit_task

    overrides, _ = audit_data
    cfg = compose_config([*overrides, "generator=copy", *ONE_RUN])
    assert list(cfg.attack) == list(ATTACKS)
    results = audit_task.run(JobConfig.from_config(cfg), tmp_path)
    audit = results["audit"]
    assert results["status"] == "complete" and results["epsilon_spent"] == 1.0
    for name in ("holdout", "rare_echo"):
        # measured: holdout 2.69 (AUC 0.72), rare_echo 2.69 (AUC 0.70); half the members are never released, so
        # the AUC cannot pass 0.75
        assert audit[f"{name}.eps_emp_lower"] > 1.0 and audit[f"{name}.auc"] > 0.65, name
    assert audit["eps_emp_lower"] > 1.0
    assert_no_released_text(tmp_path, released_or_logged(tmp_path, capsys, caplog))


@pytest.fixture(scope="module")
def example_plugin() -> None:
    install_plugin(REPO / "plugins" / "synbench-example-generator")


@pytest.mark.slow
def test_example_dp_plugin_at_eps_1_is_not_caught(
    tmp_path: Path,
    audit_data: tuple[list[str], list[str]],  # noqa: F811
    example_plugin: None,
) -> None:
    """The example plugin (a DP unigram model) at eps = 1: no attack's 95% bound exceeds the nominal eps."""
    from synbench.tasks import audit as audit_task

    overrides, _ = audit_data
    cfg = compose_config([*overrides, "generator=example", *ONE_RUN, "privacy.noise_seed=3"])
    audit = audit_task.run(JobConfig.from_config(cfg), tmp_path)["audit"]
    for name in ATTACKS:  # measured: 0.0 for every attack and combined (AUC 0.46-0.58; noise seeds 3, 4, 5)
        assert audit[f"{name}.eps_emp_lower"] <= 1.0, name
    assert audit["eps_emp_lower"] <= 1.0


def test_rare_echo_catches_the_example_plugin_without_dp_where_ngram_and_similarity_miss(
    tmp_path: Path,
    audit_data: tuple[list[str], list[str]],  # noqa: F811
    example_plugin: None,
) -> None:
    """At eps = inf the example plugin is an exact unigram model of its private set: member canaries' rare words
    come out scattered over the release, in no canary's order. Only the secret-only signal sees them."""
    from synbench.tasks import audit as audit_task

    overrides, _ = audit_data
    cfg = compose_config(
        [
            *overrides,
            "generator=example",
            *ONE_RUN,
            "eps=inf",
            "audit.targets=canaries",
            "attack=[ngram,similarity,rare_echo]",
            "privacy.noise_seed=3",
        ]
    )
    audit = audit_task.run(JobConfig.from_config(cfg), tmp_path)["audit"]
    # measured: rare_echo AUC 0.99, bound 2.38; ngram AUC 0.50, similarity AUC 0.61
    assert audit["rare_echo.auc"] > 0.95 and audit["rare_echo.eps_emp_lower"] > 1.0
    assert audit["ngram.auc"] < 0.6 and audit["similarity.auc"] < 0.7
