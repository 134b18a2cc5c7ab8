"""`check_generator`: the contracts of a `synbench.base.Generator`, checked from outside.

The generator is a black box built by `factory()`: the kit fits it on its own
small public corpus (with sentinel words planted, playing the private set)
under budgets made with `PrivacySpec`, samples from it and inspects what comes
back. What it cannot see (whether the noise is calibrated to the sensitivity
the author claims) the author's own tests must show; what it can see is what
the core relies on when it writes a release:

- the budget: `epsilon_spent` within eps (finite for a private request) and
  `delta` within the job's delta, also for a smaller eps and a delta far below
  the default rule's, so neither can be hard-coded;
- the release: `FitReport.details` keys declared in `public_details`, and no
  private text in `details` or `private_stats`;
- the noise: secret noise (`NoiseSource()`) changes the output of two fits
  with the same `seed`, and a replication noise seed (`NoiseSource(seed=k)`)
  reproduces it, so the noise comes from `privacy.noise` and not from `seed`;
- the output: `sample(n)` is a `Corpus` of n documents labelled from the
  label space, `label_counts` is followed exactly, `eps=inf` works, and
  `sample` before `fit` is a `SynBenchError` the app can print.
"""
from __future__ import annotations

import math
import numbers
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping

import numpy as np

from synbench.base import FitReport, Generator
from synbench.corpus import Corpus, Labels
from synbench.errors import SynBenchError
from synbench.privacy import EPS_TOLERANCE, NoiseSource, PrivacySpec
from synbench.testing.corpora import plant_sentinels, public_corpus
from synbench.testing.checks import Checks, begin
from synbench.testing.values import canonical, is_number

STRICT_DELTA = 1e-9  # far below 1/N^2 of the kit's corpora: a generator that ignores privacy.delta reports more
NOISE_SEED = 1234  # the replication noise seed of the replication check
SAMPLE_SIZES = (1, 17)
FINGERPRINT_DOCS = 24  # documents compared between fits: enough that noise in the model shows in the text
SECRET_TRIES = 3  # fits with secret noise; output identical in all of them means the noise is not secret


@dataclass(frozen=True)
class _Private:
    """The corpus a fit sees as private, and how to recognise its text elsewhere."""

    corpus: Corpus
    sentinels: tuple[str, ...]

    def leaks(self, text: str) -> bool:
        """True if `text` holds a planted sentinel (any case) or a whole private document."""
        low = text.lower()
        return any(s in low for s in self.sentinels) or any(doc in text for doc in self.corpus.texts if len(doc) >= 20)


def check_generator(factory: Callable[[], Generator], *, corpus: Corpus | None = None, epsilon: float = 2.0,
                    multi_label: bool = True, private: bool | None = None, seed: int = 0) -> None:
    """Check that the generators `factory()` builds keep the `Generator` contracts; raise `ConformanceError` if not.

    `factory` returns a fresh, unfitted generator on each call (a class with
    default arguments will do). The kit fits on its own small public corpora:
    single-label and, with `multi_label` (pass False for a generator that only
    supports single-label tasks), multi-label; or on `corpus` instead, when
    given. `epsilon` is the budget of the private fits. `private` defaults to
    the class's declaration (`Generator.private`); a declared non-private
    control such as `copy` is checked only on the contracts that do not
    involve a budget or noise.
    Every contract is checked and all broken ones are reported together.
    """
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon={epsilon} must be a finite positive budget for the private fits")
    first, checks = begin("generator", factory, Generator)
    private = type(first).private if private is None else private
    run = _GeneratorRun(checks, factory, epsilon if private else math.inf, private, seed)
    run.sample_before_fit(first)
    corpora = [corpus] if corpus is not None else [public_corpus()] + ([public_corpus(multi_label=True)] if multi_label else [])
    for data in corpora:
        run.corpus_contracts(data)
    if private:
        run.noise_contracts(corpora[0])
    checks.done()


class _GeneratorRun:
    """The checks of one `check_generator` call, sharing its factory, budget and seed."""

    def __init__(self, checks: Checks, factory: Callable[[], Generator], epsilon: float, private: bool, seed: int) -> None:
        self.checks, self.factory, self.epsilon, self.private, self.seed = checks, factory, epsilon, private, seed

    def sample_before_fit(self, generator: Generator) -> None:
        fix = ("raise synbench.errors.SynBenchError (or a subclass such as ConfigError) saying that fit() must come "
               "first: the app prints those as a one-line error, anything else as a traceback")
        try:
            generator.sample(3)
        except SynBenchError:
            return
        except Exception as exc:
            self.checks.fail("sample-before-fit", f"sample(3) before fit() raised {type(exc).__name__}, not a "
                             "synbench.errors.SynBenchError", fix)
        else:
            self.checks.fail("sample-before-fit", "sample(3) before fit() returned instead of raising", fix)

    def corpus_contracts(self, corpus: Corpus) -> None:
        """Fit at the budget and sample: sizes, labels, label_counts; then a stricter budget and eps=inf."""
        private = _Private(*plant_sentinels(corpus))
        n = len(corpus)
        name = f"corpus '{corpus.name}'"
        where = f"on {name} at eps={self.epsilon:g}"
        generator, _ = self.fit(private, PrivacySpec.for_private_set(n, self.epsilon), where)
        for size in SAMPLE_SIZES:
            self.sample(generator, corpus, size, where)
        self.label_counts(generator, corpus, where)
        if not self.private:
            return
        # Half the budget and a far smaller delta than the default rule's: a generator that hard-codes either is caught.
        strict = PrivacySpec(self.epsilon / 2, STRICT_DELTA)
        self.fit(private, strict, f"on {name} at eps={strict.epsilon:g}, delta={STRICT_DELTA:g}")
        where = f"on {name} at eps=inf"
        generator, _ = self.fit(private, PrivacySpec.for_private_set(n, math.inf), where, contract="eps-inf")
        self.sample(generator, corpus, n, where, contract="eps-inf")

    def noise_contracts(self, corpus: Corpus) -> None:
        """Replication with a noise seed, then secret noise: it must change what two fits with one `seed` release."""
        private = _Private(*plant_sentinels(corpus))
        where = f"on corpus '{corpus.name}' at eps={self.epsilon:g}"

        def fingerprint(noise: NoiseSource) -> tuple[FitReport, tuple[Any, ...], dict[str, Any]]:
            generator, report = self.fit(private, PrivacySpec.for_private_set(len(corpus), self.epsilon, noise=noise), where)
            out = self.sample(generator, corpus, FINGERPRINT_DOCS, where)
            return report, (out.texts, out.labels), {k: canonical(v) for k, v in report.details.items()}

        report, text, details = fingerprint(NoiseSource(seed=NOISE_SEED))
        _, text_again, details_again = fingerprint(NoiseSource(seed=NOISE_SEED))
        if text != text_again:
            self.checks.fail(
                "replication", f"two fits {where} with seed={self.seed} and the same replication noise "
                f"NoiseSource(seed={NOISE_SEED}) sampled different documents",
                "draw privacy noise only from privacy.noise and every other random choice (sampling, decoding, "
                "subsampling) from `seed`, so that privacy.noise_seed replicates a run")
        if not 0 < report.epsilon_spent < math.inf:
            return  # 0: it reads no private data, so it has no noise to draw; inf: no DP (a budget failure already)
        # Details that a replication seed reproduces (not wall-clock times) show noise when they differ.
        stable = {k for k, v in details.items() if details_again.get(k) == v}
        _, first_text, first_details = fingerprint(NoiseSource())
        for _ in range(SECRET_TRIES - 1):
            _, other_text, other_details = fingerprint(NoiseSource())
            if other_text != first_text or any(other_details.get(k) != first_details.get(k) for k in stable):
                return
        self.checks.fail(
            "noise-source", f"{SECRET_TRIES} fits {where} with seed={self.seed} and secret noise (NoiseSource()) "
            "sampled the same documents and released the same statistics: the privacy noise does not come from "
            "privacy.noise", "draw every bit of privacy noise from privacy.noise (privacy.noise.numpy('<mechanism>') "
            "or privacy.noise.torch('<mechanism>')), never from `seed` or a fixed RNG: noise that the published "
            "seed determines is known to an attacker, and the output is then not DP")

    def fit(self, private: _Private, privacy: PrivacySpec, where: str, contract: str = "fit") -> tuple[Generator, FitReport]:
        """A fresh generator fitted on the private corpus, with its report's budget and release checked."""
        generator = self.factory()
        with self.checks.running(contract, f"fit() {where}"):
            report = generator.fit(private.corpus, privacy, self.seed)
        if not isinstance(report, FitReport):
            self.checks.stop("fit-report", f"fit() {where} returned a {type(report).__name__}, not a synbench.base.FitReport",
                             "return FitReport(epsilon_spent=<what your accountant computed>, delta=privacy.delta, details={...})")
        for key in ("epsilon_spent", "delta"):
            value = getattr(report, key)
            if not is_number(value) or math.isnan(value):
                self.checks.stop("fit-report", f"fit() {where} reported {key}={value!r}, not a number",
                                 "report the epsilon and delta your accountant computed, as floats (inf for no DP)")
        self.budget(report, privacy, where)
        self.release(generator, report, private, where)
        return generator, report

    def budget(self, report: FitReport, privacy: PrivacySpec, where: str) -> None:
        if not (self.private and privacy.is_private):
            return
        eps, delta = report.epsilon_spent, report.delta
        if not math.isfinite(eps) or eps < 0:
            self.checks.fail("budget-epsilon", f"fit() {where} reported epsilon_spent={eps} for a private request",
                             "meet a private request with the finite epsilon your accountant computed; only a declared "
                             "non-private control (class attribute private = False, like `copy`) may report inf")
        elif eps > privacy.epsilon * (1 + EPS_TOLERANCE):
            self.checks.fail("budget-epsilon", f"fit() {where} reported epsilon_spent={eps:.6g}, more than eps={privacy.epsilon:g}",
                             "calibrate the noise so that all mechanisms that read private data together (composition "
                             "included) meet privacy.epsilon; the core fails a job that reports more")
        if delta < 0 or delta > privacy.delta * (1 + EPS_TOLERANCE):
            self.checks.fail("budget-delta", f"fit() {where} reported delta={delta:.3g}, not within the delta="
                             f"{privacy.delta:.3g} it was given", "use privacy.delta as given (the core resolves one "
                             "delta for every generator on a dataset), never a default of your own")

    def release(self, generator: Generator, report: FitReport, private: _Private, where: str) -> None:
        """`details` keys declared public; no private text in details or private_stats; private_stats numeric."""
        declared = type(generator).public_details
        undeclared = sorted(set(report.details) - set(declared))
        if undeclared:
            self.checks.fail("public-details", f"FitReport.details has key(s) {undeclared} that "
                             f"{type(generator).__name__}.public_details does not declare (the core drops them)",
                             "declare in public_details the keys that are public plan values or statistics of DP "
                             "output, and move statistics of private data to FitReport.private_stats")
        for path, text in [*_strings(report.details, "details"), *_strings(report.private_stats, "private_stats")]:
            if private.leaks(text):
                self.checks.fail("private-text", f"FitReport.{path} after fit() {where} holds text of the private "
                                 "corpus (a planted sentinel word or a whole document)",
                                 "details go to results.json and private_stats to trackers: put only numbers and "
                                 "public plan values there, never words or documents read off private data")
                break
        for key, value in report.private_stats.items():
            per_step = isinstance(value, (list, tuple)) and all(is_number(v) for v in value)
            if not (is_number(value) or per_step):
                self.checks.fail("private-stats", f"FitReport.private_stats[{key!r}] is a {type(value).__name__}",
                                 "a private_stats value is a number or a per-step list of numbers")

    def sample(self, generator: Generator, corpus: Corpus, n: int, where: str, label_counts: Mapping[Labels, int] | None = None,
               contract: str = "sample-output") -> Corpus:
        """`sample(n[, label_counts])`: a Corpus of exactly n str documents, labelled from the label space."""
        call = f"sample({n})" if label_counts is None else f"sample({n}, label_counts={_show(label_counts)})"
        with self.checks.running(contract, f"{call} after fit() {where}"):
            out = generator.sample(n) if label_counts is None else generator.sample(n, label_counts)
        fix = "return Corpus.build(texts, labels, corpus.label_space, multi_label=corpus.multi_label) with exactly n documents"
        if not isinstance(out, Corpus):
            self.checks.stop("sample-output", f"{call} {where} returned a {type(out).__name__}, not a synbench.corpus.Corpus", fix)
        if len(out) != n or not all(isinstance(t, str) for t in out.texts):
            self.checks.fail("sample-output", f"{call} {where} returned {len(out)} documents "
                             f"({sum(not isinstance(t, str) for t in out.texts)} of them not str)", fix)
        space = set(corpus.label_space)
        wrong = [ls for ls in out.labels if not ls or not set(ls) <= space or (not corpus.multi_label and len(ls) != 1)]
        if wrong:
            self.checks.fail("labels", f"{call} {where}: {len(wrong)} document(s) labelled {wrong[0]!r}, outside the "
                             f"label space {corpus.label_space}{'' if corpus.multi_label else ' (one label each)'}",
                             "label each synthetic document from the fitted corpus' label_space: one label on a "
                             "single-label task, at least one on a multi-label task")
        return out

    def label_counts(self, generator: Generator, corpus: Corpus, where: str) -> None:
        """`label_counts` followed exactly, asked with the rarest label sets most: the opposite of any histogram."""
        wanted = _label_request(corpus)
        out = self.sample(generator, corpus, sum(wanted.values()), where, wanted, contract="label-counts")
        got = Counter(_ordered(ls, corpus) for ls in out.labels)
        if got != Counter({_ordered(k, corpus): v for k, v in wanted.items()}):
            self.checks.fail("label-counts", f"sample({len(out)}, label_counts={_show(wanted)}) {where} returned the "
                             f"label counts {_show(got)}", "when label_counts is given, write exactly that many documents "
                             "of each label set: the caller, not the generator's label histogram, sets the distribution")


def _label_request(corpus: Corpus) -> dict[Labels, int]:
    """Up to four label sets of `corpus`, the rarer the more documents asked for (1, 2, 4, 8)."""
    order = {label: i for i, label in enumerate(corpus.label_space)}
    freq = Counter(_ordered(ls, corpus) for ls in corpus.labels)
    chosen = sorted(freq, key=lambda s: (freq[s], [order[x] for x in s]))[:4]
    return {s: 2 ** (len(chosen) - 1 - i) for i, s in enumerate(chosen)}


def _ordered(labels: Labels, corpus: Corpus) -> Labels:
    """A label set in label-space order, so ('b', 'a') and ('a', 'b') count as one."""
    order = {label: i for i, label in enumerate(corpus.label_space)}
    return tuple(sorted(labels, key=lambda x: order.get(x, len(order))))


def _show(counts: Mapping[Labels, int]) -> str:
    return "{" + ", ".join(f"{'+'.join(k)}: {v}" for k, v in sorted(counts.items())) + "}"


def _strings(value: object, path: str) -> Iterator[tuple[str, str]]:
    """Every string inside `value`, with where it is: keys, items, string arrays, and the repr of other objects."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, bytes):
        yield path, value.decode("utf-8", "replace")
    elif value is None or isinstance(value, (numbers.Number, np.number, np.bool_)):
        return
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(key, f"{path} (a key)")
            yield from _strings(item, f"{path}[{key!r}]")
    elif isinstance(value, np.ndarray):
        if value.dtype.kind in "OUSV":
            for i, item in enumerate(value.ravel().tolist()):
                yield from _strings(item, f"{path}[{i}]")
    elif isinstance(value, (list, tuple, set, frozenset)):
        for i, item in enumerate(value):
            yield from _strings(item, f"{path}[{i}]")
    else:  # any other object: its repr may carry text (a Corpus's does)
        yield path, repr(value)
