"""The black-box attacks' known answers: n-gram smoothing options, the similarity attack, and a paraphrase leak."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from synbench.audit.canaries import public_words
from synbench.audit.ngram import NgramAttack
from synbench.audit.similarity import SimilarityAttack, jaccard_matrix, top_k_mean
from synbench.core.corpus import Corpus


def corpus(texts: list[str]) -> Corpus:
    return Corpus.build(texts, [["x"]] * len(texts), ["x"])


# --- n-gram order and smoothing ------------------------------------------------------------------------


def naive_kneser_ney(n: int, fitted: list[list[str]], queries: list[list[str]], d: float) -> np.ndarray:
    """Interpolated Kneser-Ney as in the textbook recursion, with dicts, token by token."""
    grams: list[Counter] = [Counter() for _ in range(n + 1)]  # grams[k][tuple of k tokens]: c_k
    vocab = {w for doc in fitted for w in doc}
    full = Counter()
    for doc in fitted:
        padded = ["<s>"] * (n - 1) + doc + ["</s>"]
        full.update(tuple(padded[i : i + n]) for i in range(len(padded) - n + 1))
    grams[n] = full
    for k in range(n - 1, 0, -1):  # continuation counts: distinct (k+1)-gram types ending in the k-gram
        grams[k] = Counter(g[1:] for g in grams[k + 1])

    def prob(k: int, gram: tuple[str, ...]) -> float:
        if k == 0:
            return 1 / (len(vocab) + 1)
        h = gram[:-1]
        following = {g: c for g, c in grams[k].items() if g[:-1] == h}
        total = sum(following.values())
        lower = prob(k - 1, gram[1:])
        if total == 0:
            return lower
        return (max(grams[k].get(gram, 0) - d, 0) + d * len(following) * lower) / total

    out = []
    for doc in queries:
        padded = ["<s>"] * (n - 1) + doc + ["</s>"]
        out.append(sum(math.log(prob(n, tuple(padded[i : i + n]))) for i in range(len(padded) - n + 1)))
    return np.array(out)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_kneser_ney_scores_equal_the_textbook_recursion(n: int) -> None:
    synthetic = ["the rash got worse , then better", "  mild nausea daily ", "", "the rash the rash the rash"]
    references = [["the rash", "daily pain, mild"], ["better sleep", ""]]
    targets = ["the rash got better", "unseen words here", "", "mild nausea daily pain", "rash the"]
    split = [t.split() for t in synthetic]
    expected_syn = naive_kneser_ney(n, split, [t.split() for t in targets], 0.75)
    refs = np.mean(
        [naive_kneser_ney(n, [t.split() for t in r], [t.split() for t in targets], 0.75) for r in references], axis=0
    )
    attack = NgramAttack(n=n, tokenizer="whitespace", smoothing="kneser_ney", normalise="none")
    np.testing.assert_allclose(
        attack.score(targets, corpus(synthetic), [corpus(r) for r in references]), expected_syn - refs, rtol=1e-12
    )


def test_kneser_ney_unigram_known_answer() -> None:
    # corpus "a a b": counts a 2, b 1, </s> 1 (N = 4), 2 distinct words (V = 3), D = 0.5.
    # P(a) = (2 - 0.5 + 0.5 * 3 / 3) / 4 = 0.5; P(</s>) = (1 - 0.5 + 0.5) / 4 = 0.25; target "a": log 0.5 + log 0.25.
    attack = NgramAttack(
        n=1, tokenizer="whitespace", smoothing="kneser_ney", discount=0.5, reference=False, normalise="none"
    )
    assert attack.score(["a"], corpus(["a a b"]), [])[0] == pytest.approx(math.log(0.5) + math.log(0.25))


def test_kneser_ney_keeps_more_mass_for_unseen_bigrams_of_common_words() -> None:
    # "pain relief" never occurs, but both words are frequent: add-one gives it the same mass as any unseen bigram,
    # Kneser-Ney backs off to how many contexts "relief" completes.
    synthetic = corpus(
        ["bad pain today", "pain today again", "great relief now", "some relief now", "quick relief"] * 3
    )
    add_one = NgramAttack(tokenizer="whitespace", reference=False, normalise="none")
    kn = NgramAttack(tokenizer="whitespace", smoothing="kneser_ney", reference=False, normalise="none")
    common, rare = "pain relief", "pain zebra"

    def gap(attack: NgramAttack) -> float:
        return float(attack.score([common], synthetic, [])[0] - attack.score([rare], synthetic, [])[0])

    # Add-one scores p(relief | pain) = p(zebra | pain); only the end terms differ (relief is a context, zebra is not).
    assert gap(kn) > gap(add_one) + 0.5  # measured: 1.54 against 0.74


def test_ngram_options_are_checked() -> None:
    with pytest.raises(Exception, match="attack.ngram.smoothing='witten_bell'"):
        NgramAttack(smoothing="witten_bell")
    with pytest.raises(Exception, match="attack.ngram.discount"):
        NgramAttack(smoothing="kneser_ney", discount=1.5)


# --- the similarity attack --------------------------------------------------------------------------------


def test_jaccard_and_top_k_known_answers() -> None:
    sims = jaccard_matrix(["a b c", "x", ""], ["b c d", "a b c", "", "A, B!"], "word", 1)
    np.testing.assert_allclose(sims, [[0.5, 1.0, 0.0, 2 / 3], [0, 0, 0, 0], [0, 0, 0, 0]])
    bigrams = jaccard_matrix(["a b c"], ["b c d"], "word", 2)  # {ab, bc} and {bc, cd}
    np.testing.assert_allclose(bigrams, [[1 / 3]])
    assert jaccard_matrix(["abc"], ["abd"], "char", 2)[0, 0] == pytest.approx(
        2 / 6
    )  # " a","ab","bc","c " / " a","ab","bd","d "
    np.testing.assert_allclose(top_k_mean(np.array([[0.1, 0.9, 0.5], [0.0, 0.2, 0.4]]), 2), [0.7, 0.3])
    np.testing.assert_allclose(top_k_mean(np.array([[0.3]]), 5), [0.3])
    assert top_k_mean(np.zeros((2, 0)), 1).tolist() == [0.0, 0.0]


def test_similarity_score_is_closest_match_minus_the_references_mean() -> None:
    attack = SimilarityAttack(similarity="jaccard")
    targets = ["a b c", "x y"]
    synthetic = corpus(["a b c", "x q"])
    references = [corpus(["a b", "z"]), corpus(["q", "x y"])]
    # target 1: synthetic 1.0; references 2/3 and 0 -> 1 - 1/3.
    # target 2: synthetic 1/3; references 0 and 1 -> 1/3 - 1/2.
    np.testing.assert_allclose(attack.score(targets, synthetic, references), [2 / 3, 1 / 3 - 1 / 2])
    alone = SimilarityAttack(similarity="jaccard", reference=False)
    np.testing.assert_allclose(alone.score(targets, synthetic, []), [1.0, 1 / 3])
    with pytest.raises(Exception, match="reference corpora"):
        attack.score(targets, synthetic, [])


def test_similarity_options_are_checked() -> None:
    with pytest.raises(Exception, match="attack.similarity.similarity='edit'"):
        SimilarityAttack(similarity="edit")
    with pytest.raises(Exception, match="attack.similarity.k"):
        SimilarityAttack(similarity="jaccard", k=0)
    with pytest.raises(Exception, match="needs an encoder"):
        SimilarityAttack(similarity="embedding")


def paraphrase_game(
    seed: int = 0, n_targets: int = 100, words: int = 21
) -> tuple[list[str], Corpus, list[Corpus], np.ndarray]:
    """A one-run game whose leak no bigram survives: members released with every other word swapped.

    Documents are random words of the public vocabulary. The synthetic corpus
    holds each member with its even-position words replaced (about half the
    words, the first and last among them, and so every bigram of it with the
    `<s>` and `</s>` markers), plus unrelated documents; four reference
    corpora hold each target in exactly two, as the audit design does.
    """
    rng = np.random.default_rng(seed)
    vocab = np.array(public_words(), dtype=object)

    def doc() -> list[str]:
        return list(vocab[rng.integers(0, len(vocab), words)])

    targets = [doc() for _ in range(n_targets)]
    members = rng.random(n_targets) < 0.5
    leaked = [
        [w if i % 2 else vocab[rng.integers(len(vocab))] for i, w in enumerate(t)]
        for t, m in zip(targets, members)
        if m
    ]
    synthetic = corpus([" ".join(d) for d in leaked + [doc() for _ in range(n_targets)]])
    holds = np.array([rng.permutation([True, True, False, False]) for _ in range(n_targets)]).T
    references = [
        corpus([" ".join(t) for t, h in zip(targets, row) if h] + [" ".join(doc()) for _ in range(n_targets)])
        for row in holds
    ]
    return [" ".join(t) for t in targets], synthetic, references, members


@pytest.mark.parametrize(
    "similarity", ["jaccard", pytest.param("embedding", marks=pytest.mark.slow)]
)  # MiniLM: ~1 min on 2 busy cores
def test_paraphrased_leak_is_missed_by_the_ngram_attack_and_caught_by_similarity(similarity: str) -> None:
    from omegaconf import OmegaConf

    from conftest import compose_config
    from synbench.audit import AuditOptions, RocCurve, summarise

    targets, synthetic, references, members = paraphrase_game()
    cfg = AuditOptions(mode="one_run")
    ngram = NgramAttack(tokenizer="whitespace").score(targets, synthetic, references)
    encoder = OmegaConf.to_container(compose_config().encoder, resolve=True)  # the audit's encoder (offline MiniLM)
    sim = SimilarityAttack(similarity=similarity, encoder=encoder).score(targets, synthetic, references)
    assert RocCurve.from_scores(ngram, members).auc() < 0.6  # no bigram of a leaked document is left
    assert summarise(ngram[None], members[None], cfg, 0.0)[0]["eps_emp_lower"] == 0.0
    assert RocCurve.from_scores(sim, members).auc() > 0.9  # measured: jaccard 1.0, embedding 0.92
    both, _, _ = summarise({"ngram": ngram[None], "similarity": sim[None]}, members[None], cfg, 0.0)
    assert both["similarity.eps_emp_lower"] > 1 and both["ngram.eps_emp_lower"] == 0.0
    assert both["eps_emp_lower"] > 1 and both["attack_chosen"] == "similarity"


def test_the_papers_attack_is_the_bigram_add_one_model() -> None:
    """The paper's audit runs the authors' attack alone (task=audit's default runs every shipped attack:
    tests/test_audit_power.py); its settings are the n-gram attack's defaults."""
    from omegaconf import OmegaConf

    from conftest import compose_config

    attack = OmegaConf.to_container(compose_config(["task=audit", "attack=ngram"]).attack, resolve=True)
    assert list(attack) == ["ngram"]
    assert attack["ngram"]["n"] == 2 and attack["ngram"]["smoothing"] == "add_one" and attack["ngram"]["reference"]
    both = OmegaConf.to_container(compose_config(["task=audit", "attack=[ngram,similarity]"]).attack, resolve=True)
    assert list(both) == ["ngram", "similarity"] and both["similarity"]["_plugin_"] == "similarity"
