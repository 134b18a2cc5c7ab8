"""The black-box attacks' reference options, each against a transcription of the reference formula on fixed inputs.

Each test names the file it transcribes. The transcriptions are written
token by token with dictionaries, independently of the vectorised attacks
(and of rapidfuzz for the InDel ratio).
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from synbench.audit.ngram import MIN_SPREAD, NgramAttack
from synbench.audit.similarity import KS, SimilarityAttack
from synbench.core import registry
from synbench.core.base import Attack
from synbench.core.corpus import Corpus
from synbench.core.errors import ConfigError


def corpus(texts: list[str]) -> Corpus:
    return Corpus.build(texts, [["x"]] * len(texts), ["x"])


SYNTHETIC = ["the rash got worse , then better", "mild nausea daily", "", "the rash the rash the rash", "rash"]
REFERENCES = [
    ["the rash got better", "daily pain , mild", "sleep"],
    ["better sleep", "", "mild nausea daily pain"],
    ["the rash got better", "mild nausea daily pain", "worse"],
    ["rash the", "nausea"],
]
TARGETS = ["the rash got better", "unseen words here", "", "mild nausea daily pain", "rash the"]


class AddOneModel:
    """schlevik/dp-transformers `mia/ngram.py` `NGramModel`: fitted on documents padded with n-1 `<s>` and one
    `</s>`, add-one smoothing (count(c, w) + 1) / (count(c) + V), V = distinct fitted tokens + 1."""

    def __init__(self, n: int, documents: list[str]) -> None:
        self.n, self.counts, self.contexts, self.vocab = n, Counter(), Counter(), set()
        for text in documents:
            tokens = text.split()
            self.vocab.update(tokens)
            padded = ["<s>"] * (n - 1) + tokens + ["</s>"]
            for i in range(len(padded) - n + 1):
                self.counts[tuple(padded[i : i + n])] += 1
                self.contexts[tuple(padded[i : i + n - 1])] += 1

    def log_prob(self, gram: tuple[str, ...]) -> float:
        return math.log((self.counts[gram] + 1) / (self.contexts[gram[:-1]] + len(self.vocab) + 1))

    def grams(self, text: str, pad: bool) -> list[tuple[str, ...]]:
        """Padded as `NGramModel.prob` does; unpadded as the Canary's Echo `generate_ngrams`
        (matthieumeeus/dp-transformers `.../membership_inference/mia_methods.py`): `zip(*[tokens[i:] ...])`."""
        tokens = text.split()
        if pad:
            tokens = ["<s>"] * (self.n - 1) + tokens + ["</s>"]
        return list(zip(*[tokens[i:] for i in range(self.n)]))

    def score(self, text: str, pad: bool) -> float:
        return sum(self.log_prob(g) for g in self.grams(text, pad))


def transcribed_log_probs(n: int, pad: bool) -> tuple[np.ndarray, np.ndarray]:
    """(log P_syn per target, log P_ref_m per reference and target) by the transcribed models."""
    syn = AddOneModel(n, SYNTHETIC)
    refs = [AddOneModel(n, r) for r in REFERENCES]
    return np.array([syn.score(t, pad) for t in TARGETS]), np.array([[m.score(t, pad) for t in TARGETS] for m in refs])


def attack_score(**options: object) -> np.ndarray:
    """The attack's scores on the fixed inputs; `normalise=none` (the sums) unless an option says otherwise."""
    attack = NgramAttack(tokenizer="whitespace", **{"normalise": "none", **options})  # type: ignore[arg-type]
    return attack.score(TARGETS, corpus(SYNTHETIC), [corpus(r) for r in REFERENCES])


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("pad", [True, False])
def test_pad_target_matches_the_authors_and_the_canarys_echo_ngram_scores(n: int, pad: bool) -> None:
    """pad_target=true: schlevik/dp-transformers `mia/ngram.py` (`NGramModel.prob`) and `mia/attack.py`
    (`NGramReferenceAttack.predict_logit`: log P_syn - mean log P_ref). pad_target=false: the target scored on its
    unpadded n-grams, as `ngram_log_likelihood` in matthieumeeus/dp-transformers
    `research/auditing-synthetic-text-generation/components/membership_inference/mia_methods.py` (their models
    are fitted on padded documents, `padded_everygram_pipeline`)."""
    syn, refs = transcribed_log_probs(n, pad)
    np.testing.assert_allclose(attack_score(n=n, pad_target=pad), syn - refs.mean(axis=0), rtol=1e-12, atol=1e-12)
    alone = NgramAttack(n=n, tokenizer="whitespace", pad_target=pad, reference=False, normalise="none")
    np.testing.assert_allclose(alone.score(TARGETS, corpus(SYNTHETIC), []), syn, rtol=1e-12, atol=1e-12)
    if not pad:  # a target shorter than n has no unpadded n-gram: log P = 0, as the reference's empty sum
        assert attack_score(n=n, pad_target=False)[2] == 0.0


@pytest.mark.parametrize("pad", [True, False])
def test_kneser_ney_honours_pad_target(pad: bool) -> None:
    """Kneser-Ney scores the same n-grams of the target as add-one does: pad_target=false drops the same terms."""
    kn = NgramAttack(
        n=2, tokenizer="whitespace", smoothing="kneser_ney", pad_target=pad, reference=False, normalise="none"
    )
    scores = kn.score(TARGETS, corpus(SYNTHETIC), [])
    n_grams = [len(AddOneModel(2, []).grams(t, pad)) for t in TARGETS]
    assert (scores[np.array(n_grams) == 0] == 0).all() and (scores[np.array(n_grams) > 0] < 0).all()


def test_rmia_calibration_matches_privacy_estimates_online_rmia() -> None:
    """microsoft/privacy-estimates `privacy_estimates/experiments/attacks/rmia/rmia.py` (`RMIA.compute_score`,
    online, `use_log_column`): mean_in and mean_out are exp(log-mean-exp) of the IN and the OUT references'
    log-probabilities, mean_x = (mean_in + mean_out) / 2, score = P_syn(x) / mean_x. Ours is its log."""
    syn, refs = transcribed_log_probs(2, True)
    holds = np.array([[t in r for t in TARGETS] for r in REFERENCES])
    expected = []
    for j in range(len(TARGETS)):
        means = [
            float(np.exp(np.logaddexp.reduce(refs[side, j]) - np.log(side.sum())))
            for side in (holds[:, j], ~holds[:, j])
            if side.any()
        ]  # a target no reference holds has no IN side: P(x) is the OUT mean
        expected.append(math.exp(syn[j]) / np.mean(means))
    np.testing.assert_allclose(np.exp(attack_score(calibration="rmia")), expected, rtol=1e-10)
    assert holds[:, 0].sum() == 2 and holds[:, 4].sum() == 1 and holds[:, 1].sum() == 0  # balanced, not, no IN
    # With unequal IN and OUT counts it is not the log-mean-exp over all references (nor the authors' log mean).
    overall = syn - (np.logaddexp.reduce(refs, axis=0) - np.log(len(REFERENCES)))
    assert not np.allclose(attack_score(calibration="rmia")[4], overall[4])  # "rash the": 1 IN, 3 OUT


def test_per_token_and_reference_z_normalisations() -> None:
    """per_token: the calibrated score over the number of scored n-grams (ours). reference_z: over the target's
    standard deviation (ddof 1) across the reference corpora, the per-example spread LiRA fits (tensorflow/privacy
    `research/mi_lira_2021/score.py`, offline: (s - mean_out) / std_out per example; ours centres on the
    calibration term; a spread of 0, as the empty unpadded target's, is floored at MIN_SPREAD)."""
    for pad in (True, False):
        syn, refs = transcribed_log_probs(2, pad)
        scored = np.array([max(len(AddOneModel(2, []).grams(t, pad)), 1) for t in TARGETS])
        calibrated = syn - refs.mean(axis=0)
        np.testing.assert_allclose(attack_score(normalise="per_token", pad_target=pad), calibrated / scored, rtol=1e-12)
        np.testing.assert_allclose(
            attack_score(normalise="reference_z", pad_target=pad),
            calibrated / np.maximum(refs.std(axis=0, ddof=1), MIN_SPREAD),
            rtol=1e-12,
        )
    alone = NgramAttack(tokenizer="whitespace", normalise="per_token", reference=False)
    syn, _ = transcribed_log_probs(2, True)
    np.testing.assert_allclose(
        alone.score(TARGETS, corpus(SYNTHETIC), []), syn / [len(t.split()) + 1 for t in TARGETS], rtol=1e-12
    )


def test_ngram_reference_options_are_checked() -> None:
    with pytest.raises(Exception, match="attack.ngram.normalise='length'"):
        NgramAttack(normalise="length")
    with pytest.raises(Exception, match="attack.ngram.calibration='lira'"):
        NgramAttack(calibration="lira")
    with pytest.raises(Exception, match="reference=false"):
        NgramAttack(normalise="reference_z", reference=False)
    with pytest.raises(Exception, match="reference=false"):
        NgramAttack(calibration="rmia", reference=False)
    with pytest.raises(Exception, match="at least 2 reference corpora"):
        NgramAttack(tokenizer="whitespace", normalise="reference_z").score(["a"], corpus(["a"]), [corpus(["b"])])


# --- the similarity attack's reference options -------------------------------------------------------------------


def indel_ratio(a: str, b: str) -> float:
    """Levenshtein's `ratio`: 1 - InDel(a, b) / (|a| + |b|), InDel = |a| + |b| - 2 LCS(a, b); 1 for two empty."""
    if not a and not b:
        return 1.0
    lcs = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            lcs[i + 1][j + 1] = lcs[i][j] + 1 if x == y else max(lcs[i][j + 1], lcs[i + 1][j])
    return 1 - (len(a) + len(b) - 2 * lcs[-1][-1]) / (len(a) + len(b))


def canarys_echo_top_k(similarities: list[float], k: int) -> float:
    """`compute_str_similarity_mia_score`: the similarities sorted high to low, the mean of the first k."""
    return float(np.mean(np.sort(similarities)[::-1][:k]))


SIM_SYNTHETIC = [f"patient {w} reported mild nausea" for w in ("one", "two", "three")] + [
    "the rash got worse then better",
    "",
    "sleep was fine",
    *[f"filler text number {i}" for i in range(26)],
]
SIM_TARGETS = ["The rash got better", "patient two reported nausea", "", "nothing alike at all"]
SIM_REFERENCES = [["the rash got better", "sleep"], ["patient one reported", "", "better sleep"]]


@pytest.mark.parametrize("k", KS)
def test_levenshtein_similarity_matches_the_canarys_echo(k: int) -> None:
    """matthieumeeus/dp-transformers `research/auditing-synthetic-text-generation/components/membership_inference/
    mia_methods.py`: `levenshtein_similarities` (Levenshtein's `ratio` of the lower-cased target and each synthetic
    text; ours lower-cases both, the same on these lower-case synthetic texts) and the top-k mean of
    `compute_str_similarity_mia_score`, for each of their k."""

    def closest(texts: list[str]) -> np.ndarray:
        return np.array([canarys_echo_top_k([indel_ratio(t.lower(), s) for s in texts], k) for t in SIM_TARGETS])

    alone = SimilarityAttack(similarity="levenshtein", k=k, reference=False)
    np.testing.assert_allclose(alone.score(SIM_TARGETS, corpus(SIM_SYNTHETIC), []), closest(SIM_SYNTHETIC), atol=1e-12)
    attack = SimilarityAttack(similarity="levenshtein", k=k)
    expected = closest(SIM_SYNTHETIC) - np.mean([closest(r) for r in SIM_REFERENCES], axis=0)
    got = attack.score(SIM_TARGETS, corpus(SIM_SYNTHETIC), [corpus(r) for r in SIM_REFERENCES])
    np.testing.assert_allclose(got, expected, atol=1e-12)


@pytest.mark.parametrize("k", KS)
def test_jaccard_similarity_matches_the_canarys_echo_where_the_definitions_coincide(k: int) -> None:
    """`jaccard_similarities` in the same file: 1 - nltk.jaccard_distance of whitespace token sets (case and
    punctuation kept). Ours lower-cases and splits at word characters; on lower-case text without punctuation
    (every text below but the first target) the two are the same set."""
    targets = [t.lower() for t in SIM_TARGETS]

    def jaccard(a: str, b: str) -> float:
        x, y = set(a.split()), set(b.split())
        return len(x & y) / len(x | y) if x | y else 0.0  # nltk raises on two empty sets; ours says 0

    expected = [canarys_echo_top_k([jaccard(t, s) for s in SIM_SYNTHETIC], k) for t in targets]
    alone = SimilarityAttack(similarity="jaccard", k=k, reference=False)
    np.testing.assert_allclose(alone.score(targets, corpus(SIM_SYNTHETIC), []), expected, atol=1e-12)


def test_similarity_k_takes_the_canarys_echo_values() -> None:
    for k in (0, 2, 24, 26):
        with pytest.raises(Exception, match="attack.similarity.k=.* must be one of 1, 5, 10, 25"):
            SimilarityAttack(k=k)
    # a bool is no int to the schema, which types the node before the constructor sees it (True == 1 there)
    with pytest.raises(ConfigError, match="attack.k: Value 'True' of type 'bool' could not be converted to Integer"):
        registry.create(Attack, {"_plugin_": "similarity", "k": True})
    for k in KS:
        assert SimilarityAttack(k=k).k == k
