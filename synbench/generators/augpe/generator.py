"""`AugPEGenerator`: Private Evolution for text (AUG-PE) with a local LM or an OpenAI-compatible API.

Per class (a label set of the DP label-set plan, `synbench.dp.label_sets`):

1. RANDOM_API: the LM writes N_c texts from a label-aware prompt, then L-1
   variations of each (population N_c x L). Reads nothing private: free.
2. For t = 1..T: every private document votes for its nearest candidate of
   its class (L2 on encoder embeddings; a candidate's embedding is the mean
   of its `lookahead` variations' when lookahead > 0); Gaussian noise of std
   sigma on the vote histogram; threshold H; selection of N_c survivors
   (`rank`: the top N_c, `sample`: drawn by noisy count); for t < T,
   VARIATION_API writes L-1 variations of each survivor (rephrasing, or
   filling blanks where `blank_share` of the words were blanked, the target
   length drawn around the parent's word count).
3. The release is the survivors of the last vote; `sample(n)` takes them in
   order of noisy count and, when a class needs more, writes further
   variations of them (`fill: vary`) or repeats them (`fill: replace`):
   post-processing, free. `population: auto` sizes the population to the
   run's sample size (`expect_samples`), so nothing is filled.

Labels: `label_prior: auto` is the public uniform prior on single-label data
(nothing spent) and the DP label-set plan on multi-label data. An operator's
benchmark may set `on_iteration` to see the population after RANDOM_API
(iteration 0) and each vote's survivors (a DP output, as the release is).

Accounting (`evolution`): T Gaussian votes of sensitivity 1 plus the label
release's Gaussian steps compose to mu-GDP; epsilon is read at
delta - delta_select. delta is the job's `privacy.delta`; all privacy noise
comes from `privacy.noise` (streams `augpe_votes`, `label_sets`,
`label_histogram`); `seed` drives LM sampling, variation choices and the
`sample` selection draws only. Private embeddings are computed once per fit
and kept in memory only.
"""

from __future__ import annotations

import logging
import math
import time
from collections import Counter
from itertools import groupby
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from synbench.core.base import ChatRequest, EncoderSpec, FitReport, Generator, LMBackend
from synbench.core.corpus import Corpus, Labels
from synbench.core.errors import ConfigError
from synbench.core.privacy import PrivacySpec
from synbench.dp import label_sets as lsets
from synbench.generators.augpe import evolution
from synbench.generators.augpe.settings import AUTO, DEFAULT_POPULATION, VARIATION_KINDS, AugPEOptions
from synbench.lm.backends import make_backend
from synbench.lm.prompts import Prompts, load_prompts
from synbench.text.embeddings import EmbeddingCache

log = logging.getLogger(__name__)

TOKENS_PER_WORD = 1.6  # a variation's token budget: its target words x this + 8, capped at max_new_tokens
BUDGET_STEP = 16  # token budgets are rounded up to multiples of this (fewer, fuller generate batches)
# The per-iteration hook: (t, population) after RANDOM_API (t = 0) and after each vote t's selection (its survivors).
IterationHook = Callable[[int, Corpus], None]


class AugPEGenerator(Generator):
    """AUG-PE. Constructor keywords are the keys of conf/generator/augpe.yaml."""

    public_details = frozenset(
        {
            "sigma",
            "mu",
            "iterations",
            "variations",
            "population",
            "classes",
            "threshold",
            "selection",
            "lookahead",
            "vote_mechanisms",
            "mechanisms",
            "votes_per_document",
            "delta_accounted",
            "blank_share",
            "backend",
            "model",
            "encoder",
            "lm_calls",
            "lm_s",
            "embed_s",
            "n_empty_candidates",
            *lsets.PUBLIC_DETAILS,
            "sample_lm_calls",
            "sample_from_population",
            "sample_lm_s",
        }
    )

    options = AugPEOptions

    def __init__(self, **options: Any) -> None:
        o = AugPEOptions(**options)
        self.model, self.encoder = o.model, o.encoder
        self.prompts: Prompts = load_prompts(o.prompts)
        self.backend_node = o.backend if o.backend is not None else {"_plugin_": "local"}
        self.iterations, self.variations, self.population = o.iterations, o.variations, o.population
        self.selection, self.threshold, self.lookahead = o.selection, o.threshold, o.lookahead
        self.blank_share, self.length_jitter, self.min_words = o.blank_share, o.length_jitter, o.min_words
        kinds = o.variation_kinds
        self.kinds = [k for k in VARIATION_KINDS if kinds.get(k, 0) > 0]
        self.kind_p = np.array([kinds[k] for k in self.kinds], dtype=float) / sum(kinds[k] for k in self.kinds)
        self.max_new_tokens, self.temperature, self.top_p = o.max_new_tokens, o.temperature, o.top_p
        self.fill, self.label_prior, self.label_mu_share = o.fill, o.label_prior, o.label_mu_share
        self.label_config, self.embed_max_tokens = o.label_sets, o.embed_max_tokens
        self.on_iteration: IterationHook | None = None  # an operator's diagnostic (bench_augpe.py), not a config key
        self._expected: int | None = None
        self._backend: LMBackend | None = None
        self._embedder: Any = None
        self._state: dict[str, Any] | None = None
        self._lm_calls, self._lm_s, self._seed, self._calls = 0, 0.0, 0, 0

    # ----- components -------------------------------------------------------------------------------------------

    def backend(self) -> LMBackend:
        if self._backend is None:
            self._backend = make_backend(self.backend_node, self.model)
        return self._backend

    def embedder(self) -> Any:
        """An object with `embed(texts) -> (n, dim) array`: the `encoder` node through an in-memory EmbeddingCache."""
        if self._embedder is None:
            if hasattr(self.encoder, "embed"):
                self._embedder = self.encoder
            elif self.encoder is None:
                raise ConfigError("generator 'augpe' needs an encoder (the `encoder` config group)")
            else:
                known = {k: v for k, v in dict(self.encoder).items() if k in EncoderSpec.__dataclass_fields__}
                most = int(known.get("max_seq_length", self.embed_max_tokens))
                known["max_seq_length"] = min(most, self.embed_max_tokens)
                self._embedder = EmbeddingCache(EncoderSpec(**known), folder=None)  # private embeddings: memory only
        return self._embedder

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self.embedder().embed(list(texts)), dtype=np.float32)

    def _complete(self, requests: list[ChatRequest]) -> list[str]:
        """The LM's replies; each call gets its own seed derived from the fit's `seed` (LM sampling only)."""
        self._calls += 1
        start = time.perf_counter()
        out = self.backend().complete(
            requests,
            max_new_tokens=self.max_new_tokens,
            temperature=self.temperature,
            top_p=self.top_p,
            seed=(self._seed * 1_000_003 + self._calls * 7_919) % 2**31,
        )
        self._lm_calls += len(requests)
        self._lm_s += time.perf_counter() - start
        return [clean(t) for t in out]

    # ----- the two APIs -------------------------------------------------------------------------------------------

    def random_api(self, plan: Sequence[Labels]) -> list[str]:
        """One text per label set of `plan`, from the label-aware RANDOM_API prompt."""
        return self._complete([ChatRequest(*self.prompts.render("random", tuple(labels))) for labels in plan])

    def variation_api(
        self, parents: Sequence[str], labels: Sequence[Labels], per_parent: int, rng: np.random.Generator
    ) -> list[str]:
        """`per_parent` variations of each parent (parent-major order): rephrased or blanks filled, length around the
        parent's."""
        requests: list[ChatRequest] = []
        for text, ls in zip(parents, labels):
            for _ in range(per_parent):
                words = evolution.target_words(len(text.split()), self.length_jitter, rng, self.min_words)
                kind = self.kinds[int(rng.choice(len(self.kinds), p=self.kind_p))]
                fields = (
                    {"text": text}
                    if kind == "rephrase"
                    else {"masked": evolution.blank_words(text, self.blank_share, rng)}
                )
                user, system = self.prompts.render(kind, tuple(ls), words=words, **fields)
                budget = min(self.max_new_tokens, BUDGET_STEP * math.ceil((words * TOKENS_PER_WORD + 8) / BUDGET_STEP))
                requests.append(ChatRequest(user, system, budget))
        return self._complete(requests)

    # ----- fit ----------------------------------------------------------------------------------------------------

    def expect_samples(self, n: int) -> None:
        """`population: auto` becomes `n`: the release is then the last vote's survivors, with nothing filled."""
        self._expected = n

    def population_size(self) -> int:
        """N: as configured, or (auto) the run's sample size, else DEFAULT_POPULATION."""
        if self.population != AUTO:
            return int(self.population)
        return self._expected or DEFAULT_POPULATION

    def _report(
        self, t: int, texts: Sequence[str], labels: Sequence[Labels], space: Sequence[str], multi: bool
    ) -> None:
        """The population at iteration t to `on_iteration`, if set (synthetic text and DP-planned labels only)."""
        if self.on_iteration is not None:
            self.on_iteration(t, Corpus.build(list(texts), list(labels), space, multi_label=multi, name=f"augpe-t{t}"))

    def fit(self, corpus: Corpus, privacy: PrivacySpec, seed: int) -> FitReport:
        """Calibrate, plan the classes, then RANDOM_API and T noisy votes with variations between them (the module
        docstring's steps 1-2); keeps the last vote's survivors for `sample`."""
        if len(corpus) == 0:
            raise ConfigError("generator 'augpe': the private corpus is empty")
        multi, space = corpus.multi_label, corpus.label_space
        self._seed, self._calls, self._lm_calls, self._lm_s, self._state = seed, 0, 0, 0.0, None
        rng = np.random.default_rng([seed, 1])  # post-processing and prompting choices (not a privacy mechanism)
        budget = evolution.calibrate(
            privacy.epsilon,
            privacy.delta,
            self.iterations,
            self.label_config if lsets.prior_is_dp(self.label_prior, multi) else None,
            multi,
            self.label_mu_share,
        )
        released = (
            lsets.release(corpus, budget.labels, privacy.noise) if budget.labels is not None else lsets.uniform(space)
        )
        # Classes and N_c: the DP label-set plan for a population of `population` texts (post-processing).
        population = self.population_size()
        class_plan = lsets.plan(population, released, space, multi, rng)
        sizes = Counter(class_plan)
        classes: list[Labels] = list(dict.fromkeys(class_plan))
        keep = [sizes[c] for c in classes]
        index = {c: i for i, c in enumerate(classes)}
        private_class = [index.get(ls, -1) for ls in lsets.label_sets(corpus)]
        start = time.perf_counter()
        private = self._embed(corpus.texts)  # once per fit, memory only
        embed_s = time.perf_counter() - start

        # RANDOM_API (free), then L-1 variations of each: the initial population.
        seeds = self.random_api(class_plan)
        seed_labels = list(class_plan)
        self._report(0, seeds, seed_labels, space, multi)
        texts, labels = self._grow(seeds, seed_labels, rng)
        vote_rng = privacy.noise.numpy("augpe_votes")
        noisy = np.zeros(0)
        for t in range(1, self.iterations + 1):
            cand_class = [index[ls] for ls in labels]
            start = time.perf_counter()
            emb = self._candidate_embeddings(texts, labels, rng)
            embed_s += time.perf_counter() - start
            counts = evolution.vote_histogram(private, private_class, emb, cand_class)
            noisy = evolution.noisy_histogram(counts, budget.sigma, vote_rng, self.threshold)
            del counts  # the exact histogram never leaves this loop
            chosen = evolution.select(noisy, cand_class, keep, self.selection, rng)
            survivors, survivor_labels, noisy = [texts[i] for i in chosen], [labels[i] for i in chosen], noisy[chosen]
            self._report(t, survivors, survivor_labels, space, multi)
            if t < self.iterations:
                texts, labels = self._grow(survivors, survivor_labels, rng)
        # The release: the last vote's survivors with their noisy counts (DP), strongest first per class.
        order = sorted(range(len(survivors)), key=lambda i: (index[survivor_labels[i]], -noisy[i], i))
        self._state = {
            "label_space": space,
            "multi_label": multi,
            "released": released,
            "position": lsets.positions(space),
            "classes": classes,
            "pool": {c: [survivors[i] for i in order if survivor_labels[i] == c] for c in classes},
            "weights": {c: np.array([noisy[i] for i in order if survivor_labels[i] == c]) for c in classes},
        }
        details = self._details(budget, released, population, len(classes), embed_s, survivors)
        return FitReport(
            epsilon_spent=budget.epsilon() if privacy.is_private else math.inf, delta=privacy.delta, details=details
        )

    def _details(
        self,
        budget: evolution.AugPEBudget,
        released: lsets.LabelSetRelease,
        population: int,
        n_classes: int,
        embed_s: float,
        survivors: Sequence[str],
    ) -> dict[str, Any]:
        """The fit's public details (`public_details` lists their keys): the accounting, the settings it ran with
        and its costs, gathered apart from `fit` so the evolution reads as the algorithm's steps alone."""
        return {
            **evolution.describe(budget),
            "iterations": self.iterations,
            "variations": self.variations,
            "population": population,
            "classes": n_classes,
            "threshold": self.threshold,
            "selection": self.selection,
            "lookahead": self.lookahead,
            "blank_share": self.blank_share,
            "backend": getattr(self.backend(), "name", "custom"),
            "model": (self.model or {}).get("name") if isinstance(self.model, Mapping) else None,
            "encoder": dict(self.encoder).get("name")
            if isinstance(self.encoder, Mapping)
            else type(self.encoder).__name__,
            "lm_calls": self._lm_calls,
            "lm_s": round(self._lm_s, 3),
            "embed_s": round(embed_s, 3),
            "n_empty_candidates": sum(1 for t in survivors if not t),
            **(budget.labels.details() if budget.labels is not None else {}),
            **released.details(),
        }

    def _grow(
        self, parents: list[str], labels: list[Labels], rng: np.random.Generator
    ) -> tuple[list[str], list[Labels]]:
        """The parents followed by L-1 variations of each: a population of L x parents."""
        if self.variations == 1:
            return list(parents), list(labels)
        new = self.variation_api(parents, labels, self.variations - 1, rng)
        return list(parents) + new, list(labels) + [ls for ls in labels for _ in range(self.variations - 1)]

    def _candidate_embeddings(self, texts: list[str], labels: list[Labels], rng: np.random.Generator) -> np.ndarray:
        """Embeddings the private documents vote on: the texts', or the mean of `lookahead` variations of each."""
        if not self.lookahead:
            return self._embed(texts)
        ahead = self.variation_api(texts, labels, self.lookahead, rng)
        return self._embed(ahead).reshape(len(texts), self.lookahead, -1).mean(axis=1)

    # ----- sample -------------------------------------------------------------------------------------------------

    def sample(self, n: int, label_counts: Mapping[Labels, int] | None = None) -> Corpus:
        """`n` documents (exactly `label_counts` per set if given), from the evolved population first.

        Label sets come from the DP plan; within a class, survivors go out in
        order of noisy count; a class short of texts gets variations of its
        survivors (`fill: vary`, parents drawn by noisy count) or repeats them
        (`fill: replace`); a set without a class is written by RANDOM_API.
        """
        state = self._state
        if state is None:
            raise ConfigError("generator 'augpe': sample() called before fit()")
        calls, lm_s = self._lm_calls, self._lm_s
        rng = np.random.default_rng([self._seed, 2, self._calls])
        space, multi = state["label_space"], state["multi_label"]
        plan = lsets.plan(n, state["released"], space, multi, rng, label_counts)
        texts: list[str] = []
        labels: list[Labels] = []
        from_population = 0
        for ls, group in groupby(plan):
            k = len(list(group))
            key = lsets.canonical(ls, state["position"])
            pool, weights = state["pool"].get(key, []), state["weights"].get(key, np.zeros(0))
            take = pool[:k]
            from_population += len(take)
            rest = k - len(take)
            if rest and not pool:
                take = take + self.random_api([ls] * rest)
            elif rest and self.fill == "replace":
                take = take + [pool[i] for i in rng.choice(len(pool), size=rest, p=_probs(weights))]
            elif rest:
                parents = [pool[i] for i in rng.choice(len(pool), size=rest, p=_probs(weights))]
                take = take + self.variation_api(parents, [ls] * rest, 1, rng)
            texts.extend(take)
            labels.extend([ls] * k)
        self._sampled = {
            "sample_lm_calls": self._lm_calls - calls,
            "sample_from_population": from_population,
            "sample_lm_s": round(self._lm_s - lm_s, 3),
        }
        return Corpus.synthetic("augpe", texts, labels, space, multi)

    def sampling_details(self) -> Mapping[str, Any]:
        return dict(getattr(self, "_sampled", {}))


def _probs(weights: np.ndarray) -> np.ndarray | None:
    return weights / weights.sum() if len(weights) and weights.sum() > 0 else None


def clean(text: str) -> str:
    """An LM reply as a document: stripped, without wrapping quotes or a leading "Here is ...:" line."""
    text = text.strip()
    first, _, rest = text.partition("\n")
    if rest.strip() and first.rstrip().endswith(":") and len(first.split()) <= 12:
        text = rest.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1].strip()
    return text
